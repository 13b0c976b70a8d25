// The App contract (src/apps/app.ts) for the two built-in apps: format → open → recover → accept →
// one operation → close; a second format is refused; reopening the media recovers the same state.
import t from 'tap';
import { createPrng, crashImages, materialize, PmemRegion, seededEntropy, systemClock } from '../../pmem/index.js';
import { InProcessFabric, QueuePair, Rnic } from '../../flush/index.js';
import type { App, AppHost } from '../../src/apps/index.js';
import { rpcApp, RpcAppServer, decodeWelcomePayload, encodeHelloPayload, METHOD, readDigestLog } from '../../src/apps/rpc/index.js';
import { connectKvClient, kvApp, KvAppServer } from '../../src/apps/kv/index.js';
import { DurableRpcClient } from '../../src/rpc/index.js';

const seed = 7;
t.comment(`seed ${seed}`);

function host(region: PmemRegion): AppHost {
  const nic = new Rnic(region, { entropy: seededEntropy(createPrng(seed)) });
  return { region, nic, clock: systemClock, schedule: queueMicrotask, entropy: seededEntropy(createPrng(seed + 1)) };
}

function reopen(region: PmemRegion): PmemRegion {
  const media = region.crashState();
  return PmemRegion.openImage(materialize(media, [...crashImages(media, { engine: 'none' })][0]!));
}

async function settle(done: () => boolean): Promise<void> {
  for (let i = 0; i < 10_000 && !done(); i++) await new Promise((r) => setImmediate(r));
}

t.test('rpc app: a durable call is applied, survives a reopen, and a second format is refused', async (t) => {
  const app: App<typeof rpcApp.defaults> = rpcApp;
  const o = app.resolveOptions({ layout: { maxClients: 2, ringSlots: 4, slotBytes: 128, logRecords: 4, recordBytes: 256 } });
  const region = PmemRegion.createInMemory(app.minRegionBytes(o), { tracing: true });
  app.format(region, o);
  t.throws(() => app.format(region, o), { code: 'PMRPC_ERR_ALREADY_FORMATTED' }, 'a formatted region is never formatted again');
  const h = host(region);
  const s = app.open(h, o) as RpcAppServer;
  t.same(s.recover().replayed, 0);
  const fabric = new InProcessFabric(h.nic);
  const { qp, welcome } = s.accept(encodeHelloPayload({}));
  const client = new DurableRpcClient(new QueuePair(fabric.connect(qp)), decodeWelcomePayload(welcome));
  const call = client.call(METHOD, new Uint8Array([1, 2, 3]));
  await call.durable;
  await call.result;
  await settle(() => readDigestLog(s.store.appView).entries.length === 1);
  t.equal(readDigestLog(s.store.appView).entries.length, 1, 'the digest handler applied the call');
  t.same(s.audit(), []);
  client.close();
  s.close();
  const again = reopen(region);
  const s2 = app.open(host(again), o) as RpcAppServer;
  s2.recover();
  t.equal(readDigestLog(s2.store.appView).entries.length, 1, 'the applied call is on media');
  t.equal((s2.inspect().clients as unknown[]).length, 1);
  s2.close();
});

t.test('rpc app: a region too small is refused with a coded error', async (t) => {
  const o = rpcApp.resolveOptions({});
  const region = PmemRegion.createInMemory(rpcApp.minRegionBytes(o) - 64);
  t.throws(() => rpcApp.format(region, o), { code: 'PMRPC_ERR_SIZE_TOO_SMALL' });
  t.throws(() => rpcApp.resolveOptions({ strategy: 'nope' as never }), TypeError);
  t.throws(() => rpcApp.resolveOptions({ appBytesMin: 100 }), new RangeError('appBytesMin must be a positive multiple of 64, got 100'));
  t.throws(() => rpcApp.resolveOptions({ methods: { nope: { pooled: true } } }), new TypeError('methods names nope, which has no handler'));
  t.throws(() => rpcApp.resolveOptions({ partialPollsMax: 0 }), new RangeError('partialPollsMax must be a positive integer, got 0'));
  t.throws(() => kvApp.resolveOptions({ system: 'redis' as never }), new TypeError("system must be 'prism' or 'pilaf', got redis"));
});

for (const system of ['prism', 'pilaf'] as const) {
  t.test(`kv app (${system}): put, get, reopen, get`, async (t) => {
    const o = kvApp.resolveOptions({ system, layout: { slotCount: 16, probeSlots: 4, keyBytesMax: 16, classes: [{ sizeBytes: 64, count: 8 }], mailboxBuffers: 4 } });
    const region = PmemRegion.createInMemory(kvApp.minRegionBytes(o) + 4096, { tracing: true });
    kvApp.format(region, o);
    const h = host(region);
    const s = kvApp.open(h, o) as KvAppServer;
    s.recover();
    const fabric = new InProcessFabric(h.nic);
    const { qp, welcome } = s.accept(new Uint8Array(0));
    const c = await connectKvClient(new QueuePair(fabric.connect(qp)), welcome);
    await c.put('a', new TextEncoder().encode('one'));
    t.equal(new TextDecoder().decode((await c.get('a'))!), 'one');
    t.same(s.audit(), [], 'index and allocator are sound');
    s.close();
    const again = reopen(region);
    const h2 = host(again);
    const s2 = kvApp.open(h2, o);
    s2.recover();
    const a2 = s2.accept(new Uint8Array(0));
    const c2 = await connectKvClient(new QueuePair(new InProcessFabric(h2.nic).connect(a2.qp)), a2.welcome);
    t.equal(new TextDecoder().decode((await c2.get('a'))!), 'one', 'the acknowledged PUT is on media');
    s2.close();
  });
}

t.test('kv app: a welcome that is not a KV address is refused', async (t) => {
  const region = PmemRegion.createInMemory(1 << 16);
  const h = host(region);
  const qp = new QueuePair(new InProcessFabric(h.nic).connect(h.nic.createQp(h.nic.allocPd())));
  await t.rejects(connectKvClient(qp, new TextEncoder().encode('{"system":"x"}')), { code: 'PMRPC_ERR_KV_NOT_FORMATTED' });
});
