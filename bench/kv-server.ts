/**
 * The TCP server of `bench kv`, run as a child process from the compiled code
 * (`node dist/bench/kv-server.js '<json {system, seed}>'`): an in-memory region with the bench's
 * KV area (PRISM-KV or Pilaf-style), an Rnic (eager drain, as the in-process rows), and a
 * TcpNicServer on a free loopback port. Prints one JSON line {port, address} once listening;
 * SIGTERM closes everything and exits 0.
 */
import { Rnic } from '../flush/index.js';
import { createPrng, PmemRegion, seededEntropy } from '../pmem/index.js';
import { PilafServer, PrismKvServer } from '../src/apps/kv/index.js';
import { TcpNicServer } from '../src/transport/index.js';
import { KV_BENCH_LAYOUT, KV_BENCH_REGION_BYTES, type KvSystem } from './kv-common.js';

const { system, seed } = JSON.parse(process.argv[2] ?? '{}') as { system: KvSystem; seed: number };
const region = PmemRegion.createInMemory(KV_BENCH_REGION_BYTES, { entropy: seededEntropy(createPrng(seed)) });
const nic = new Rnic(region, { drain: 'eager', entropy: seededEntropy(createPrng(seed + 1)) });
let kv: PrismKvServer | PilafServer;
if (system === 'prism') {
  PrismKvServer.format(region, KV_BENCH_LAYOUT);
  kv = PrismKvServer.open(region, nic);
} else {
  PilafServer.format(region, KV_BENCH_LAYOUT);
  kv = PilafServer.open(region, nic);
}
const server = new TcpNicServer(nic, { accept: () => ({ qp: kv.accept(), welcome: new Uint8Array(0) }) });
const { port } = await server.listen();
process.stdout.write(`${JSON.stringify({ port, address: kv.address })}\n`);
process.on('SIGTERM', () => {
  void server.close().then(() => {
    kv.close();
    nic.close();
    region.close();
    process.exit(0);
  });
});
