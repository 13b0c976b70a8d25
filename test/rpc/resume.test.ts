// Reconnect with resume (live, and after a server crash): the client learns its resume point and
// resends from there; nothing is applied twice; results of durable requests are delivered when
// kept in effect records, else PMRPC_ERR_RESULT_LOST; `durable` never lies.
import t from 'tap';
import { crashImages, materialize, PmemRegion } from '../../pmem/index.js';
import { connectInProcess, reconnectInProcess } from '../../src/rpc/index.js';
import { readU64, rig, SEED, settle } from './fixtures/rig.js';

t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/rpc/resume.test.ts)`);

for (const strategy of ['wflush', 'sflush', 'wrflush', 'srflush', 'gpspm', 'farm', 'darpc'] as const) {
  t.test(`${strategy}: a live reconnect with requests in flight resends from the resume point; nothing applied twice`, async (t) => {
    const { server, fabric, store } = rig({ strategy });
    server.start();
    const c = connectInProcess(server, fabric);
    const first = [0, 1].map((i) => c.call('inc', new Uint8Array(8).fill(i)));
    await Promise.all(first.map((x) => x.result));
    const calls = Array.from({ length: 6 }, (_, i) => c.call('inc', new Uint8Array(8).fill(10 + i)));
    // Reconnect before the fabric delivered anything of the new calls: the old QP's queued messages are dropped.
    reconnectInProcess(server, fabric, c);
    const values = (await Promise.all(calls.map((x) => x.result))).map((r) => Number(readU64(r)));
    t.same(values, [3, 4, 5, 6, 7, 8], 'each request applied once, in order');
    await Promise.all(calls.map((x) => x.durable));
    t.equal(store.conn.appliedSeq(c.clientId), 8);
    // Once more, after some progress, with a partly processed stream.
    const more = Array.from({ length: 5 }, (_, i) => c.call('inc', new Uint8Array(4).fill(i)));
    await settle(40);
    reconnectInProcess(server, fabric, c);
    const v2 = (await Promise.all(more.map((x) => x.result))).map((r) => Number(readU64(r)));
    t.same(v2, [9, 10, 11, 12, 13]);
    server.close();
  });
}

/** Crashes the server with requests durable but not processed (its CPU never ran), restarts it from media alone. */
async function crashAndRestart(keepResults: boolean) {
  const held: Array<() => void> = [];
  const a = rig({ strategy: 'wflush', keepResults, schedule: (fn) => held.push(fn) });
  a.server.start();
  const c = connectInProcess(a.server, a.fabric);
  const calls = [0, 1, 2].map((i) => c.call('inc', new Uint8Array(16).fill(i)));
  await Promise.all(calls.map((x) => x.durable));
  const st = a.region.crashState();
  const image = materialize(st, [...crashImages(st, { engine: 'none' })][0]!);
  const b = rig({ strategy: 'wflush', keepResults, region: PmemRegion.openImage(image, { tracing: true }) });
  const report = b.server.start();
  reconnectInProcess(b.server, b.fabric, c);
  return { c, calls, report, b };
}

t.test('after a server crash, kept results of durable requests are delivered (keepResults)', async (t) => {
  const { c, calls, report, b } = await crashAndRestart(true);
  t.ok(report !== undefined, 'the opened store was recovered at start()');
  t.equal(b.store.conn.appliedSeq(c.clientId), 3, 'recovery re-executed the three durable requests');
  const values = (await Promise.all(calls.map((x) => x.result))).map((r) => Number(readU64(r)));
  t.same(values, [1, 2, 3], 'the re-executed requests deliver their kept results');
  const next = c.call('inc', new Uint8Array(8));
  t.equal(next.seq, 4, 'the sequence continues');
  t.equal(Number(readU64(await next.result)), 4, 'applied once each');
  b.server.close();
});

t.test('after a server crash, results not kept reject with PMRPC_ERR_RESULT_LOST; durable stays true', async (t) => {
  const { c, calls, b } = await crashAndRestart(false);
  for (const x of calls) await t.rejects(x.result, { code: 'PMRPC_ERR_RESULT_LOST' });
  for (const x of calls) await t.resolves(x.durable);
  const next = c.call('inc', new Uint8Array(8));
  t.equal(Number(readU64(await next.result)), 4, 'the three lost-result requests were applied exactly once');
  b.server.close();
});

t.test('after a crash, requests that were not durable are resent and applied once', async (t) => {
  // The server CPU never runs, wrflush needs it for durability: nothing is durable at the crash.
  // (No idle drain either: a NIC run's end, after its idle drain, is where the CPU ACKs what arrived.)
  const held: Array<() => void> = [];
  const a = rig({ strategy: 'wrflush', schedule: (fn) => held.push(fn), idleDrain: false });
  a.server.start();
  const c = connectInProcess(a.server, a.fabric);
  const calls = [0, 1, 2].map((i) => c.call('inc', new Uint8Array(16).fill(i)));
  await settle();
  t.equal(c.durableUpTo, 0, 'nothing durable before the server CPU ran');
  const st = a.region.crashState();
  const image = materialize(st, [...crashImages(st, { engine: 'none' })][0]!);
  const b = rig({ strategy: 'wrflush', region: PmemRegion.openImage(image, { tracing: true }) });
  b.server.start();
  reconnectInProcess(b.server, b.fabric, c);
  const values = (await Promise.all(calls.map((x) => x.result))).map((r) => Number(readU64(r)));
  t.same(values, [1, 2, 3]);
  await Promise.all(calls.map((x) => x.durable));
  b.server.close();
});
