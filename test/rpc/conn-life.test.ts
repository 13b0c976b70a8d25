// A client's connection life on the server as named states (issue 26 item 5, src/rpc/conn-life.ts):
// the transition table refuses every step it does not list with PMRPC_ERR_CONN_STATE, and a
// server walks its clients through none → open → closing → none, none → dormant → open after a
// restart, open → error when a client breaks the protocol, error → open when it reconnects; a
// client that crashed stays open until it reconnects or its lease runs out; after a machine crash
// (a crash image of the region) the clients still in the table are dormant.
import t from 'tap';
import { crashImages, createPrng, materialize, PmemRegion, seededEntropy, VirtualClock } from '../../pmem/index.js';
import { InProcessFabric, QueuePair, Rnic, Wr } from '../../flush/index.js';
import { encodeEntry, layoutBytes, RecoveryStore, type LayoutOptions } from '../../recovery/index.js';
import { CONN_TRANSITIONS, CONNST, connTransition, connectInProcess, DurableRpcServer, methodId, reconnectInProcess, type ConnState, type RpcServerOptions } from '../../src/rpc/index.js';
import { SEED, settle } from './fixtures/rig.js';

const STATES = Object.values(CONNST) as ConnState[];
const GEOMETRY: Partial<LayoutOptions> = Object.freeze({ maxClients: 8, ringSlots: 4, slotBytes: 128, logRecords: 16, recordBytes: 128, appBytes: 256 });

t.test('the transition table: each listed step is taken, every other is PMRPC_ERR_CONN_STATE', async (t) => {
  let legal = 0;
  let illegal = 0;
  for (const from of STATES) {
    for (const to of STATES) {
      if (CONN_TRANSITIONS[from].includes(to)) {
        t.equal(connTransition(from, to, 7), to, `${from} → ${to}`);
        legal++;
      } else {
        t.throws(() => connTransition(from, to, 7), { code: 'PMRPC_ERR_CONN_STATE', message: `client 7: its connection cannot go from ${from} to ${to}` }, `${from} → ${to} refused`);
        illegal++;
      }
    }
  }
  t.equal(legal + illegal, STATES.length ** 2);
  t.same(CONN_TRANSITIONS.closing, ['none'], 'after a goodbye only the release');
  t.notOk(STATES.some((s) => s !== 'none' && CONN_TRANSITIONS[s].includes('dormant')), 'dormant only from none (a restart)');
});

function rig(clock: VirtualClock, format: boolean, region: PmemRegion, opts: Partial<RpcServerOptions> = {}) {
  const store = format ? RecoveryStore.format(region, GEOMETRY) : RecoveryStore.open(region);
  const nic = new Rnic(region, { entropy: seededEntropy(createPrng(SEED + 1)) });
  const fabric = new InProcessFabric(nic, { delivery: 'seeded', seed: SEED + 2 });
  const server = new DurableRpcServer(nic, store, { entropy: seededEntropy(createPrng(SEED + 3)), clock, ...opts });
  server.register('noop', () => ({ images: [] }));
  return { store, nic, fabric, server };
}

t.test('a server walks its clients through the states', async (t) => {
  const clock = new VirtualClock();
  const region = PmemRegion.createInMemory(layoutBytes(GEOMETRY), { entropy: seededEntropy(createPrng(SEED)) });
  const keep = new Set<number>();
  const { server: s, fabric, nic } = rig(clock, true, region, { canRelease: (id) => !keep.has(id) });
  s.start();
  t.equal(s.connState(1), 'none', 'a client the server never saw');
  const a = connectInProcess(s, fabric);
  const b = connectInProcess(s, fabric);
  await a.call('noop', new Uint8Array(0)).result;
  t.equal(s.connState(a.clientId), 'open');
  reconnectInProcess(s, fabric, a);
  t.equal(s.connState(a.clientId), 'open', 'a reconnect replaces the connection: open again');
  await a.call('noop', new Uint8Array(0)).result;
  keep.add(a.clientId);
  await a.goodbye();
  t.equal(s.connState(a.clientId), 'closing', 'goodbye, the slot kept by canRelease');
  keep.delete(a.clientId);
  t.same(s.releaseExpired(), [a.clientId]);
  t.equal(s.connState(a.clientId), 'none', 'released');
  // A raw client breaks the protocol: sequence 5 (lap 2) into the slot of sequence 1 cuts its connection.
  const { sqp, info } = s.accept();
  t.equal(s.connState(info.clientId), 'open');
  const qp = new QueuePair(fabric.connect(sqp));
  await qp.postChain([Wr.write({ rkey: info.rkey, addr: info.ringOffset }, encodeEntry({ clientId: info.clientId, seq: 5, methodId: methodId('noop'), payload: new Uint8Array(8) }, info))]);
  await settle();
  t.equal((s.connectionErrors.at(-1)?.error as { code?: string } | undefined)?.code, 'PMRPC_ERR_RING_OVERRUN');
  t.equal(s.connState(info.clientId), 'error', 'a connection cut for breaking the protocol');
  s.accept({ clientId: info.clientId, secret: info.secret! });
  t.equal(s.connState(info.clientId), 'open', 'a reconnect after the cut');
  s.close();
  // A restart: the clients in the table are dormant until they come back.
  nic.detach();
  const r = rig(clock, false, region);
  r.server.start();
  t.equal(r.server.connState(b.clientId), 'dormant', 'after a restart, before it reconnects');
  t.equal(r.server.connState(info.clientId), 'dormant');
  r.server.accept({ clientId: b.clientId, secret: b.secret! });
  t.equal(r.server.connState(b.clientId), 'open', 'back');
  r.server.close();
});

t.test('crashes: a client that crashed stays open (the server is not told) until it reconnects or its lease runs out; after a machine crash the clients in the table are dormant', async (t) => {
  const clock = new VirtualClock();
  const region = PmemRegion.createInMemory(layoutBytes(GEOMETRY), { tracing: true, entropy: seededEntropy(createPrng(SEED)) });
  const { server: s, fabric } = rig(clock, true, region, { leaseMs: 1_000 });
  s.start();
  const a = connectInProcess(s, fabric);
  const b = connectInProcess(s, fabric);
  const c = connectInProcess(s, fabric);
  await Promise.all([a, b, c].map((x) => x.call('noop', new Uint8Array(0)).durable));
  // b's process dies (no goodbye, nothing on the wire): the server still holds its connection.
  t.equal(s.connState(b.clientId), 'open', 'a crashed client: open, as far as the server knows');
  // It restarts and reconnects with its id and secret: the old connection is replaced.
  s.accept({ clientId: b.clientId, secret: b.secret! });
  t.equal(s.connState(b.clientId), 'open', 'reconnected after its crash: open → open');
  // c crashes for good: once its lease runs out releaseExpired gives its slot back.
  clock.advanceMs(600);
  await a.call('noop', new Uint8Array(0)).result; // a sign of life of a (b reconnected at 0)
  s.accept({ clientId: b.clientId, secret: b.secret! }); // and of b
  clock.advanceMs(600);
  t.same(s.releaseExpired(), [c.clientId], 'only c was silent for its lease');
  t.equal(s.connState(c.clientId), 'none', 'c released: open → none');
  // The machine crashes: the region as a crash leaves it, a new server on it.
  const st = region.crashState();
  const after = PmemRegion.openImage(materialize(st, [...crashImages(st, { engine: 'none' })][0]!), { tracing: true });
  const r = rig(clock, false, after);
  r.server.start();
  t.equal(r.server.connState(a.clientId), 'dormant', 'a: dormant after the crash');
  t.equal(r.server.connState(b.clientId), 'dormant', 'b: dormant after the crash');
  t.equal(r.server.connState(c.clientId), 'none', 'c: released before the crash, none after');
  r.server.accept({ clientId: a.clientId, secret: a.secret! });
  t.equal(r.server.connState(a.clientId), 'open', 'a back: dormant → open');
  r.server.close();
  s.close();
});
