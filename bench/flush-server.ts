/**
 * The TCP server of `bench flush`, run as a child process from the compiled code
 * (`node dist/bench/flush-server.js '<json {cell, seed}>'`): an in-memory region with the cell's
 * recovery layout, an Rnic, a DurableRpcServer with the bench handler (inline, or in a pool of one
 * worker thread) and a TcpNicServer on a free loopback port whose accept() is the RPC handshake
 * (the welcome carries the ConnectionInfo as JSON). Prints one JSON line {port} once listening;
 * SIGTERM closes everything and exits 0.
 */
import { Piscina } from 'piscina';
import { Rnic } from '../flush/index.js';
import { createPrng, PmemRegion, seededEntropy } from '../pmem/index.js';
import { layoutBytes, RecoveryStore } from '../recovery/index.js';
import { TcpNicServer } from '../src/transport/index.js';
import { compiledBenchFile, geometryFor, makeServer, type CellConfig } from './flush-cell.js';

const { cell, seed } = JSON.parse(process.argv[2] ?? '{}') as { cell: CellConfig; seed: number };
const g = geometryFor(cell);
const region = PmemRegion.createInMemory(layoutBytes(g), { seed, entropy: seededEntropy(createPrng(seed)) });
const store = RecoveryStore.format(region, g);
const nic = new Rnic(region, { ddio: cell.ddio, entropy: seededEntropy(createPrng(seed + 1)) });
const pool = cell.placement === 'pool' ? new Piscina({ filename: compiledBenchFile('flush-worker.js'), minThreads: 1, maxThreads: 1, atomics: 'disabled', concurrentTasksPerWorker: 16 }) : undefined;
const server = makeServer(nic, store, cell, pool);
const tcp = new TcpNicServer(nic, {
  accept: () => {
    const { sqp, info } = server.accept();
    return { qp: sqp, welcome: new TextEncoder().encode(JSON.stringify(info)) };
  },
});
const { port } = await tcp.listen();
process.stdout.write(`${JSON.stringify({ port })}\n`);
process.on('SIGTERM', () => {
  void tcp.close().then(async () => {
    server.close();
    nic.close();
    region.close();
    await pool?.destroy();
    process.exit(0);
  });
});
