// Handlers in a piscina worker pool (DESIGN §4): workers compute effects on read-only views of the
// shared visible memory; the owner commits them through the redo log in one total order, FIFO per
// client; requests run side by side only with disjoint keys (checked before apply), so the final
// state equals a serial execution.
import t from 'tap';
import { Piscina } from 'piscina';
import { connectInProcess, type RpcHandler } from '../../src/rpc/index.js';
import { readU64, rig, SEED } from './fixtures/rig.js';
// @ts-expect-error -- a plain .mjs fixture shared with the worker
import { handlers } from './fixtures/handlers.mjs';

const h = handlers as Record<string, RpcHandler>;
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/rpc/pool.test.ts)`);

const pool = new Piscina({ filename: new URL('./fixtures/pool-worker.mjs', import.meta.url).href, minThreads: 2, maxThreads: 2 });
t.teardown(() => pool.destroy());

function server(strategy: 'wflush' | 'srflush' | 'farm') {
  const r = rig({ strategy, pool });
  r.server.register('bump', h.bump!, { pooled: true, keys: (req) => [`client:${req.clientId}`] });
  r.server.register('total', h.total!, { pooled: true });
  r.server.register('liar', h.liar!, { pooled: true, keys: (req) => [`client:${req.clientId}`] });
  r.server.register('fail', h.fail!, { pooled: true, keys: () => ['x'] });
  r.server.register('shape', h.shape!, { pooled: true, keys: (req) => [`client:${req.clientId}`] });
  r.server.start();
  return r;
}

for (const strategy of ['wflush', 'srflush', 'farm'] as const) {
  t.test(`${strategy}: pooled keyed requests of 3 clients: FIFO per client, each applied once`, async (t) => {
    const { server: s, fabric, store } = server(strategy);
    const clients = [0, 1, 2].map(() => connectInProcess(s, fabric));
    const calls = clients.map((c) => Array.from({ length: 8 }, () => c.call('bump', new Uint8Array(8))));
    for (const [k, cs] of calls.entries()) {
      const v = (await Promise.all(cs.map((x) => x.result))).map((r) => Number(readU64(r)));
      t.same(v, [1, 2, 3, 4, 5, 6, 7, 8], `client ${k}: its own counter, in order`);
    }
    for (const c of clients) t.equal(Number(store.appView.loadU64(512 + 8 * c.clientId)), 8);
    t.ok(s.poolInFlightPeak > 1, `requests with disjoint keys ran side by side (peak ${s.poolInFlightPeak})`);
    s.close();
  });
}

t.test('a pooled payload reaches its worker with a buffer of its own, not the ring\'s shared slab of payloads', async (t) => {
  const { server: s, fabric } = server('wflush');
  const c = connectInProcess(s, fabric);
  const payloads = [1, 8, 40, 64].map((n, k) => Uint8Array.from({ length: n }, (_, i) => (i * 7 + k) & 0xff));
  const results = await Promise.all(payloads.map((p) => c.call('shape', p).result));
  for (const [k, r] of results.entries()) {
    const dv = new DataView(r.buffer, r.byteOffset, 16);
    t.equal(Number(dv.getBigUint64(0, true)), payloads[k]!.length, `payload ${k}: the worker's buffer holds its ${payloads[k]!.length} bytes only (a view posted whole would carry its slab)`);
    t.equal(Number(dv.getBigUint64(8, true)), payloads[k]!.reduce((a, b) => a + b, 0), `payload ${k}: its bytes`);
  }
  s.close();
});

t.test('requests without keys run alone; mixed with inline and keyed ones the total order holds', async (t) => {
  const { server: s, fabric, store } = server('wflush');
  const clients = [0, 1, 2].map(() => connectInProcess(s, fabric));
  const all = clients.flatMap((c) => Array.from({ length: 6 }, (_, i) => c.call(i % 3 === 0 ? 'inc' : i % 3 === 1 ? 'total' : 'bump', new Uint8Array(8))));
  await Promise.all(all.map((x) => x.result));
  t.equal(Number(store.appView.loadU64(0)), 6 + 6, 'the global counter counts inc (inline) and total (pooled) exactly once each');
  for (const c of clients) t.equal(Number(store.appView.loadU64(512 + 8 * c.clientId)), 2, 'and bump twice per client');
});

t.test('keys that lie are caught before apply: the later request is recomputed serially', async (t) => {
  const { server: s, fabric, store } = server('wflush');
  const clients = [0, 1, 2].map(() => connectInProcess(s, fabric));
  const all = clients.flatMap((c) => Array.from({ length: 5 }, () => c.call('liar', new Uint8Array(8))));
  const values = (await Promise.all(all.map((x) => x.result))).map((r) => Number(readU64(r)));
  t.equal(Number(store.appView.loadU64(8)), 15, 'the shared counter equals a serial execution');
  t.same([...values].sort((a, b) => a - b), Array.from({ length: 15 }, (_, i) => i + 1), 'every result distinct, as serially');
  t.ok(s.poolClashes > 0, `${s.poolClashes} clashes detected`);
});

t.test('a worker handler that throws gives a coded error result; the others are served', async (t) => {
  const { server: s, fabric } = server('wflush');
  const c = connectInProcess(s, fabric);
  const bad = c.call('fail', new Uint8Array(1));
  const good = c.call('bump', new Uint8Array(1));
  await t.rejects(bad.result, { code: 'PMRPC_ERR_APP_NO', message: /worker says no/ });
  t.equal(Number(readU64(await good.result)), 1);
  t.throws(() => rig().server.register('p', h.bump!, { pooled: true }), new TypeError('method p is pooled but the server has no pool'));
});
