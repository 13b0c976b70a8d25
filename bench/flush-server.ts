/**
 * The TCP server of `bench flush`, run as a child process from the compiled code
 * (`node dist/bench/flush-server.js '<json {cell, seed}>'`): the node host (src/node) with the rpc
 * app — the cell's recovery layout and strategy, the bench handler (inline, or in a pool of one
 * worker thread) — on an in-memory region, on a free loopback port; the handshake is the rpc app's.
 * In memory because the cell compares persistence methods on the emulated PM, as the in-process
 * rows do; a file would add page-cache write-back that only the TCP rows pay (a `strict` cell runs
 * in-process on a file). Prints one JSON line {port} once listening; SIGTERM closes everything and
 * exits 0.
 */
import { Piscina } from 'piscina';
import { createPrng, seededEntropy } from '../pmem/index.js';
import { layoutBytes } from '../recovery/index.js';
import { rpcApp, type RpcAppServer } from '../src/apps/rpc/index.js';
import { NodeHost } from '../src/node/index.js';
import { compiledBenchFile, geometryFor, type CellConfig } from './flush-cell.js';
import { APP_BYTES, handlers, keysOf, METHOD } from './flush-handlers.js';
import { exitWithParent } from './child.js';

exitWithParent();

const { cell, seed } = JSON.parse(process.argv[2] ?? '{}') as { cell: CellConfig; seed: number };
const { appBytes: _appBytes, baseOffset: _baseOffset, ...layout } = geometryFor(cell);
const pool = cell.placement === 'pool' ? new Piscina({ filename: compiledBenchFile('flush-worker.js'), minThreads: 1, maxThreads: 1, atomics: 'disabled', concurrentTasksPerWorker: 16 }) : undefined;
const node = await NodeHost.start<RpcAppServer>({
  app: rpcApp,
  appOptions: {
    strategy: cell.strategy,
    layout,
    handlers: { [METHOD]: handlers[METHOD]! },
    methods: pool === undefined ? {} : { [METHOD]: { pooled: true, keys: keysOf } },
    pool,
    appBytesMin: APP_BYTES,
  },
  pmPath: undefined,
  sizeBytes: layoutBytes(geometryFor(cell)),
  ddio: cell.ddio,
  nodeId: 'bench-flush',
  region: { seed, entropy: seededEntropy(createPrng(seed)) },
  entropy: seededEntropy(createPrng(seed + 1)),
});
// The handler before the ready line: a SIGTERM sent on reading it must find it (until a listener
// exists the kernel's default action kills the process).
process.on('SIGTERM', () => {
  void node.close().then(async () => {
    await pool?.destroy();
    process.exit(0);
  });
});
process.stdout.write(`${JSON.stringify({ port: node.address().port })}\n`);
