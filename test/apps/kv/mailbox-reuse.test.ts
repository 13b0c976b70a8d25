// Mailbox receive buffers are reused (availability): a KV node or an RS replica serves any number of
// connections over its lifetime, mailboxBuffers / 2 at once. A closed connection's buffers go back
// only after the fence (its QP destroyed): a late SEND of the old connection gets a coded error and
// cannot land in the next owner's buffer. `unfencedRelease` (fault switch) shows the fence matters.
import t from 'tap';
import { InProcessFabric, QueuePair, Rnic, Wr, type RecvCompletion } from '../../../flush/index.js';
import { createPrng, PmemRegion, seededEntropy, systemClock } from '../../../pmem/index.js';
import { connectKvClient, KvAppServer, kvApp, Mailbox, PrismKvServer } from '../../../src/apps/kv/index.js';
import { RsLocalCluster, type RsServer } from '../../../src/apps/rs/index.js';
import { NodeHost } from '../../../src/node/index.js';
import { TcpLink } from '../../../src/transport/index.js';
import { connectRsCluster } from '../../../src/cluster/index.js';
import { SMALL_LAYOUT, td, te } from './helpers.js';

const CLIENTS = 200;

for (const system of ['prism', 'pilaf'] as const) {
  t.test(`KV (${system}) in-process: ${CLIENTS} clients connect and close one after another on a ${SMALL_LAYOUT.mailboxBuffers}-buffer mailbox`, async (t) => {
    const o = kvApp.resolveOptions({ system, layout: SMALL_LAYOUT });
    const region = PmemRegion.createInMemory(kvApp.minRegionBytes(o), { entropy: seededEntropy(createPrng(1)) });
    kvApp.format(region, o);
    const nic = new Rnic(region, { drain: 'eager', entropy: seededEntropy(createPrng(2)) });
    const fabric = new InProcessFabric(nic);
    const app = kvApp.open({ region, nic, clock: systemClock, schedule: queueMicrotask, entropy: seededEntropy(createPrng(3)) }, o) as KvAppServer;
    app.recover();
    for (let i = 0; i < CLIENTS; i++) {
      const { qp, welcome } = app.accept(new Uint8Array(0));
      const c = await connectKvClient(new QueuePair(fabric.connect(qp)), welcome);
      await c.put(`k${i % 7}`, te.encode(`v${i}`));
      t.equal(td.decode((await c.get(`k${i % 7}`))!), `v${i}`);
      if ('flushReturns' in c) await c.flushReturns();
      c.qp.close();
      app.release(qp.qpn);
    }
    const s = app.kv.mailboxStats;
    t.same(s, { accepted: CLIENTS, released: CLIENTS, live: 0 }, `every one of ${CLIENTS} clients was served on ${SMALL_LAYOUT.mailboxBuffers! / 2} buffer pairs`);
    t.same(app.audit(), []);
    // Still at most mailboxBuffers / 2 at once: reuse is not a bigger table.
    const held = Array.from({ length: SMALL_LAYOUT.mailboxBuffers! / 2 }, () => app.accept(new Uint8Array(0)));
    t.throws(() => app.accept(new Uint8Array(0)), RangeError, 'one more than the mailbox holds at once is refused');
    app.release(held[0]!.qp.qpn);
    t.ok(app.accept(new Uint8Array(0)).qp, 'a released pair is taken by the next connection');
    app.close();
  });
}

t.test(`RS in-process (3 replicas): ${CLIENTS} clients come and go`, async (t) => {
  const c = RsLocalCluster.start({ replicas: 3, app: { layout: { blocks: 8, mailboxBuffers: 8 } } });
  t.teardown(() => c.close());
  for (let i = 0; i < CLIENTS; i++) {
    const cl = c.client({ writerId: i + 1 });
    await cl.write(i % 8, te.encode(`w${i}`));
    t.equal(td.decode((await cl.read(i % 8))!), `w${i}`);
    await cl.close();
  }
  for (let r = 0; r < 3; r++) {
    const s = c.server(r).mailboxStats;
    t.same([s.accepted, s.released, s.live], [CLIENTS, CLIENTS, 0], `replica ${r}: ${CLIENTS} connections through 4 buffer pairs`);
    t.same(c.server(r).audit(), []);
  }
});

t.test(`over TCP (node host, default layouts): ${CLIENTS} sequential clients of one KV node and of one RS replica`, async (t) => {
  const kv = await NodeHost.start<KvAppServer>({ app: 'kv', pmPath: undefined, sizeBytes: 1 << 20, nodeId: 'kv', entropy: seededEntropy(createPrng(5)) });
  const rs = await NodeHost.start<RsServer>({ app: 'rs', pmPath: undefined, sizeBytes: 4 << 20, nodeId: 'r0', appOptions: { layout: { blocks: 16 } }, entropy: seededEntropy(createPrng(6)) });
  t.teardown(async () => {
    await kv.close();
    await rs.close();
  });
  const spec = { version: 1, nodes: [{ id: 'r0', app: 'rs', host: '127.0.0.1', port: rs.address().port, pm: 'r0.pm' }] };
  let disconnects = 0;
  for (let i = 0; i < CLIENTS; i++) {
    const { link, welcome } = await TcpLink.connect({ port: kv.address().port });
    const c = await connectKvClient(new QueuePair(link), welcome);
    await c.put('k', te.encode(`v${i}`));
    t.equal(td.decode((await c.get('k'))!), `v${i}`);
    c.qp.close();
    const r = await connectRsCluster(spec, { client: { writerId: i + 1 } });
    await r.write(i % 16, te.encode(`w${i}`));
    t.equal(td.decode((await r.read(i % 16))!), `w${i}`);
    await r.close();
    // Bounded wait for the server to see both disconnects (an event, not a timing).
    for (let n = 0; n < 2000 && (kv.server.kv.mailboxStats.released + rs.server.mailboxStats.released) < 2 * (i + 1); n++) await new Promise((res) => setImmediate(res));
    disconnects = kv.server.kv.mailboxStats.released + rs.server.mailboxStats.released;
  }
  t.equal(disconnects, 2 * CLIENTS, 'every closed connection gave its buffers back');
  t.ok(CLIENTS > 64, 'more clients than the default KV mailbox (64 buffers = 32 connections) and RS mailbox (128 = 64) hold at once');
});

/** A bare mailbox on a region: conn A, release, conn B on the same pair; A's late SEND. */
async function staleSend(unfencedRelease: boolean): Promise<{ err: unknown; bRecv: string[]; pairBytes: string; sameAddr: boolean }> {
  const region = PmemRegion.createInMemory(1 << 16, { entropy: seededEntropy(createPrng(9)) });
  const nic = new Rnic(region, { drain: 'eager', entropy: seededEntropy(createPrng(10)) });
  const fabric = new InProcessFabric(nic);
  const mb = new Mailbox(nic, { mailboxOffset: 1 << 15, mailboxBuffers: 2 }, undefined, { unfencedRelease });
  const pd = nic.allocPd();
  const seen: Array<{ who: string; c: RecvCompletion; addr: number }> = [];
  const qa = mb.accept(pd, (_q, bufs, c) => seen.push({ who: 'A', c, addr: bufs[c.recvId]!.addr }));
  const a = new QueuePair(fabric.connect(qa));
  await a.postChain([Wr.send(te.encode('A-1'), 7)]);
  mb.release(qa.qpn); // the server saw A disconnect; A's client does not know yet
  const qb = mb.accept(pd, (_q, bufs, c) => seen.push({ who: 'B', c, addr: bufs[c.recvId]!.addr }));
  const b = new QueuePair(fabric.connect(qb));
  await b.postChain([Wr.send(te.encode('B-1'), 7)]);
  await new Promise((res) => setImmediate(res));
  const addrB = seen.find((s) => s.who === 'B')!.addr;
  let err: unknown;
  try {
    const [c] = await a.postChain([Wr.send(te.encode('STALE'), 7)]);
    if (c?.status === 'error') err = { code: c.code };
  } catch (e) {
    err = e;
  }
  await new Promise((res) => setImmediate(res));
  const bRecv = seen.filter((s) => s.who === 'B').map((s) => td.decode(region.load(s.c.addr, s.c.byteLen)));
  const pairBytes = td.decode(region.load(1 << 15, 5)) + '|' + td.decode(region.load((1 << 15) + 1024, 5));
  mb.close();
  return { err, bRecv, pairBytes, sameAddr: addrB === seen.find((s) => s.who === 'A')!.addr || addrB === (1 << 15) + 1024 };
}

t.test('a late SEND from a released connection gets PMRPC_ERR_NO_SUCH_QP and cannot reach the new owner’s buffers', async (t) => {
  const ok = await staleSend(false);
  t.ok(ok.sameAddr, 'B was given the pair A had');
  t.match(ok.err, { code: 'PMRPC_ERR_NO_SUCH_QP' }, 'the stale writer gets a coded error');
  t.notOk(ok.pairBytes.includes('STALE'), `nothing of A's late SEND is in the mailbox (${ok.pairBytes})`);
  t.same(ok.bRecv, ['B-1'], 'B is served its own message only');
  const bad = await staleSend(true);
  t.ok(bad.err === undefined && bad.pairBytes.includes('STALE'), `fault switch unfencedRelease: A's late SEND lands in B's buffer (${bad.pairBytes}) — the fence is what prevents it`);
});

t.test('release is idempotent and names only QPs of this mailbox', async (t) => {
  const region = PmemRegion.createInMemory(1 << 16, { entropy: seededEntropy(createPrng(11)) });
  PrismKvServer.format(region, SMALL_LAYOUT);
  const nic = new Rnic(region, { drain: 'eager', entropy: seededEntropy(createPrng(12)) });
  const kv = PrismKvServer.open(region, nic);
  const qp = kv.accept();
  t.equal(kv.release(qp.qpn), true);
  t.equal(kv.release(qp.qpn), false, 'twice: nothing more');
  t.equal(kv.release(9999), false, 'unknown QP: nothing');
  t.same(kv.mailboxStats, { accepted: 1, released: 1, live: 0 });
  kv.close();
});
