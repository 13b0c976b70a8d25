/**
 * The TCP server of `bench kv`, run as a child process from the compiled code
 * (`node dist/bench/kv-server.js '<json {system, seed}>'`): the node host (src/node) with the kv app
 * on an in-memory region with the bench's KV area (PRISM-KV or Pilaf-style), an eager-drain NIC
 * (as the in-process rows), on a free loopback port. Prints one JSON line {port, address} once listening;
 * SIGTERM closes everything and exits 0.
 */
import { createPrng, seededEntropy } from '../pmem/index.js';
import { NodeHost } from '../src/node/index.js';
import type { KvAppServer } from '../src/apps/kv/index.js';
import { KV_BENCH_LAYOUT, KV_BENCH_REGION_BYTES, type KvSystem } from './kv-common.js';
import { exitWithParent } from './child.js';

exitWithParent();

const { system, seed } = JSON.parse(process.argv[2] ?? '{}') as { system: KvSystem; seed: number };
// The one node host, on an in-memory region: the bench compares links and systems, not file I/O,
// and the in-process rows it is compared with run on in-memory regions too (a file would add page
// faults and write-back that only the TCP rows pay).
const node = await NodeHost.start<KvAppServer>({
  app: 'kv',
  appOptions: { system, layout: KV_BENCH_LAYOUT },
  pmPath: undefined,
  sizeBytes: KV_BENCH_REGION_BYTES,
  nodeId: `bench-kv-${system}`,
  region: { entropy: seededEntropy(createPrng(seed)) },
  nic: { drain: 'eager' },
  entropy: seededEntropy(createPrng(seed + 1)),
});
const { port } = node.address();
// The handler before the ready line: a SIGTERM sent on reading it must find it (until a listener
// exists the kernel's default action kills the process).
process.on('SIGTERM', () => {
  void node.close().then(() => process.exit(0));
});
process.stdout.write(`${JSON.stringify({ port, address: node.server.kv.address })}\n`);
