// Worker threads read a region's visible memory through PmemReadView; only the owning thread
// stores (DESIGN §2.1).
//
// About the foreign-store assertion (#assertOwner in pmem/region.ts): it cannot be triggered from
// a test, because a PmemRegion cannot reach another thread at all. Its state lives in private
// fields and its options hold functions, so postMessage refuses it (DataCloneError, asserted
// below); a worker that opens the same file gets its own region, owned by the worker. What a
// worker can get is shared() — a SharedArrayBuffer — and PmemReadView over it has no store method
// (asserted below). The assertion stays as a guard for future code paths that might hand a region
// across threads.
import t from 'tap';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { PmemRegion } from '../../pmem/index.js';
import { tempDir } from './fixtures/helpers.js';

const PMEM_URL = new URL('../../dist/pmem/index.js', import.meta.url);
const FIXTURE = new URL('./fixtures/read-view-worker.mjs', import.meta.url);

// The worker imports the compiled package: `npm test` builds it first (pretest: tsc).
if (!existsSync(fileURLToPath(PMEM_URL))) throw new Error(`${fileURLToPath(PMEM_URL)} is missing: run \`npx tsc -p tsconfig.json\` (npm test does) first`);

interface Peer {
  ask<T>(msg: unknown): Promise<T>;
  worker: Worker;
  done(): Promise<void>;
}

async function startWorker(region: PmemRegion): Promise<Peer> {
  const worker = new Worker(FIXTURE, { workerData: { pmemUrl: PMEM_URL.href, shared: region.shared() } });
  const queue: Array<(v: unknown) => void> = [];
  const failed = new Promise<never>((_, reject) => worker.once('error', reject));
  worker.on('message', (m) => queue.shift()?.(m));
  const next = <T>() => Promise.race([new Promise<T>((resolve) => queue.push(resolve as (v: unknown) => void)), failed]);
  await next();
  return {
    worker,
    ask<T>(msg: unknown) {
      const p = next<T>();
      worker.postMessage(msg);
      return p;
    },
    async done() {
      worker.postMessage({ op: 'exit' });
      await new Promise((resolve) => worker.once('exit', resolve));
    },
  };
}

interface ReadReply {
  u64: bigint;
  u64Atomic: bigint;
  u32: number;
  bytes: Uint8Array;
  sizeBytes: number;
}

t.test('a worker reads through PmemReadView what the owner stored, live', async (t) => {
  const dir = tempDir(t);
  for (const backing of ['memory', 'file'] as const) {
    const r = backing === 'memory' ? PmemRegion.createInMemory(4096) : PmemRegion.create(join(dir, 'w.pm'), 4096);
    r.storeU64(256, 0x0123456789abcdefn);
    r.storeU32(264, 0xcafef00d);
    r.store(272, new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]));
    const w = await startWorker(r);
    let got = await w.ask<ReadReply>({ op: 'read', off: 256 });
    t.equal(got.sizeBytes, 4096, `${backing}: the view has the region's size`);
    t.equal(got.u64, 0x0123456789abcdefn, `${backing}: a stored (unpersisted) u64 is visible to the worker`);
    t.equal(got.u64Atomic, 0x0123456789abcdefn);
    t.equal(got.u32, 0xcafef00d);
    t.same([...got.bytes], [1, 2, 3, 4, 5, 6, 7, 8]);

    r.storeU64Atomic(256, 42n);
    r.storeNonTemporal(272, new Uint8Array(8).fill(9));
    got = await w.ask<ReadReply>({ op: 'read', off: 256 });
    t.equal(got.u64, 42n, `${backing}: a later store is seen: the view is shared memory, not a copy`);
    t.same([...got.bytes], [9, 9, 9, 9, 9, 9, 9, 9], 'a non-temporal store is seen too');
    await w.done();
    r.close();
  }
});

t.test('the read view has no store method and checks its accesses', async (t) => {
  const r = PmemRegion.createInMemory(1024);
  const w = await startWorker(r);
  const api = await w.ask<{ methods: string[]; oob: string; misaligned: string }>({ op: 'api' });
  t.same(api.methods, ['load', 'loadU32', 'loadU64', 'loadU64Atomic'], 'loads only');
  t.equal(api.oob, 'PMRPC_ERR_OUT_OF_BOUNDS');
  t.equal(api.misaligned, 'PMRPC_ERR_MISALIGNED');
  await w.done();
  r.close();
});

t.test('a region cannot be posted to a worker (so stores stay on the owning thread)', async (t) => {
  const r = PmemRegion.createInMemory(1024);
  const w = await startWorker(r);
  let err: unknown;
  try {
    w.worker.postMessage(r);
  } catch (e) {
    err = e;
  }
  t.equal((err as Error | undefined)?.name, 'DataCloneError', 'postMessage(region) throws DataCloneError');
  await w.done();
  r.close();
});

t.test('8-byte atomic stores are never torn for a concurrent reader in a worker', async (t) => {
  const r = PmemRegion.createInMemory(4096);
  const w = await startWorker(r);
  const flag = new SharedArrayBuffer(4);
  const LAST = 200_000;
  const reply = w.ask<{ reads: number; torn: number; backwards: number; distinct: number; last: bigint }>({ op: 'watch', off: 1024, flag, last: LAST });
  // wait (bounded) until the worker spins, then store patterned values hi == lo == i
  // 'not-equal': the worker had already set the flag before this thread began to wait (it started
  // too); only a timeout means it never did. (CI once saw 'not-equal' here.)
  t.not(Atomics.wait(new Int32Array(flag), 0, 0, 5000), 'timed-out', 'the worker started watching');
  t.equal(Atomics.load(new Int32Array(flag), 0), 1, 'the worker set its flag');
  for (let i = 1; i <= LAST; i++) r.storeU64Atomic(1024, (BigInt(i) << 32n) | BigInt(i));
  const got = await reply;
  t.comment(`worker made ${got.reads} reads, saw ${got.distinct} distinct values`);
  t.equal(got.last, BigInt(LAST), 'the worker saw the last value');
  t.equal(got.torn, 0, 'no torn 8-byte value');
  t.equal(got.backwards, 0, 'values never went backwards');
  t.ok(got.distinct >= 1);
  await w.done();
  r.close();
});
