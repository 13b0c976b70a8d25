// Leases after a restart (availability): a restart gives every pre-crash client a full lease to come
// back, but a restarted full table does not refuse new clients for leaseMs: a pre-crash client that
// has not come back restartGraceMs after the restart counts as expired when a new client needs its
// slot. A slot with unresolved state stays (canRelease says no — PRISM-TX's undecided transactions —
// as the slot decision table and docs/rpc.md require); a client that came back keeps its slot;
// releaseExpired() still waits the full lease.
import t from 'tap';
import { createPrng, crashImages, materialize, PmemRegion, seededEntropy, VirtualClock } from '../../pmem/index.js';
import { InProcessFabric, Rnic } from '../../flush/index.js';
import { layoutBytes, RecoveryStore, type LayoutOptions } from '../../recovery/index.js';
import { connectInProcess, DurableRpcServer, reconnectInProcess, type DurableRpcClient, type RpcHandler, type RpcServerOptions } from '../../src/rpc/index.js';
import { SEED } from './fixtures/rig.js';

t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/rpc/restart-lease.test.ts)`);

const GEOMETRY: Partial<LayoutOptions> = Object.freeze({ maxClients: 8, ringSlots: 4, slotBytes: 128, logRecords: 16, recordBytes: 128, appBytes: 4096 });
const LEASE_MS = 60_000;
const GRACE_MS = 2_000;

const mark: RpcHandler = (req, view) => {
  const i = req.payload[0]!;
  return { images: [{ offset: i, bytes: new Uint8Array([view.load(i, 1)[0]! + 1]) }] };
};

function server(region: PmemRegion, clock: VirtualClock, seed: number, format: boolean, opts: Partial<RpcServerOptions> = {}) {
  const store = format ? RecoveryStore.format(region, GEOMETRY) : RecoveryStore.open(region);
  const nic = new Rnic(region, { entropy: seededEntropy(createPrng(seed + 1)) });
  const fabric = new InProcessFabric(nic, { delivery: 'seeded', seed: seed + 2 });
  const s = new DurableRpcServer(nic, store, { entropy: seededEntropy(createPrng(seed + 3)), clock, leaseMs: LEASE_MS, restartGraceMs: GRACE_MS, ...opts });
  s.register('mark', mark);
  return { store, nic, fabric, server: s };
}

const codeOf = async (fn: () => unknown): Promise<string | undefined> => {
  try {
    await fn();
  } catch (e) {
    return (e as { code?: string }).code ?? `not coded: ${(e as Error).message}`;
  }
  return undefined;
};

/** A full table (8 clients, each with one applied request), then a crash image, restarted. */
async function fullThenRestart(seed: number, opts: Partial<RpcServerOptions> = {}) {
  const clock = new VirtualClock();
  const region = PmemRegion.createInMemory(layoutBytes(GEOMETRY), { tracing: true, entropy: seededEntropy(createPrng(seed)) });
  const first = server(region, clock, seed, true);
  first.server.start();
  const old: DurableRpcClient[] = [];
  for (let i = 0; i < 8; i++) old.push(connectInProcess(first.server, first.fabric));
  await Promise.all(old.map((c, i) => c.call('mark', new Uint8Array([i])).durable));
  first.server.close();
  const st = region.crashState();
  const img = PmemRegion.openImage(materialize(st, [...crashImages(st, { engine: 'none' })][0]!), { tracing: true });
  clock.advanceMs(10 * LEASE_MS); // the server was down for a while: the leases it had would have expired
  const again = server(img, clock, seed + 100, false, opts);
  again.server.start();
  return { clock, old, ...again };
}

t.test('a restarted full table admits new clients restartGraceMs after the restart, not leaseMs', async (t) => {
  const { clock, old, server: s, fabric, store } = await fullThenRestart(SEED);
  t.equal(store.conn.entries().length, 8, 'restarted with a full table');
  t.equal(await codeOf(() => s.accept()), 'PMRPC_ERR_TABLE_FULL', 'within the grace, pre-crash clients keep their slots');
  reconnectInProcess(s, fabric, old[0]!); // came back within the grace
  clock.advanceMs(GRACE_MS);
  const fresh = connectInProcess(s, fabric);
  await fresh.call('mark', new Uint8Array([20])).result;
  t.pass(`a new client is accepted ${GRACE_MS} ms after the restart (lease ${LEASE_MS} ms)`);
  t.ok(store.conn.has(old[0]!.clientId), 'the client that came back keeps its slot');
  t.notOk(store.conn.has(old[1]!.clientId), 'the lowest-id client that did not come back gave its slot');
  t.equal(await codeOf(() => reconnectInProcess(s, fabric, old[1]!)), 'PMRPC_ERR_CLIENT_RELEASED', 'and is told so when it comes back');
  t.same(s.releases, { goodbye: 0, lease: 1 });
  t.same(s.releaseExpired(), [], 'releaseExpired() still waits the full lease: nobody else is released');
  for (let i = 0; i < 6; i++) connectInProcess(s, fabric);
  t.same(
    old.map((c) => store.conn.has(c.clientId)),
    [true, false, false, false, false, false, false, false],
    'each new client took the slot of a client that did not come back; the one that came back is kept',
  );
  t.equal(await codeOf(() => s.accept()), 'PMRPC_ERR_TABLE_FULL', 'every slot is held by a live client now');
  clock.advanceMs(LEASE_MS);
  t.ok(s.releaseExpired().length > 0, 'leases still expire');
  s.close();
});

t.test('a pre-crash slot with unresolved state stays (canRelease says no)', async (t) => {
  const unresolved = new Set<number>();
  const { clock, old, server: s, fabric, store } = await fullThenRestart(SEED + 7, { canRelease: (id) => !unresolved.has(id) });
  for (const c of old.slice(0, 7)) unresolved.add(c.clientId);
  clock.advanceMs(GRACE_MS);
  connectInProcess(s, fabric);
  t.same(old.map((c) => store.conn.has(c.clientId)), [true, true, true, true, true, true, true, false], 'only the resolved client gave its slot');
  t.equal(await codeOf(() => s.accept()), 'PMRPC_ERR_TABLE_FULL', 'the unresolved ones are kept: a full table refuses');
  unresolved.delete(old[3]!.clientId);
  connectInProcess(s, fabric);
  t.notOk(store.conn.has(old[3]!.clientId), 'once resolved, its slot goes to a new client');
  s.close();
});

t.test('restartGraceMs: checked; 0 admits at once; a fresh format has no dormant clients', async (t) => {
  const clock = new VirtualClock();
  const region = PmemRegion.createInMemory(layoutBytes(GEOMETRY), { entropy: seededEntropy(createPrng(SEED)) });
  const store = RecoveryStore.format(region, GEOMETRY);
  const nic = new Rnic(region, { entropy: seededEntropy(createPrng(SEED + 1)) });
  for (const bad of [-1, Number.NaN, '5']) {
    t.throws(() => new DurableRpcServer(nic, store, { clock, restartGraceMs: bad as number }), { name: /TypeError|RangeError/ }, `restartGraceMs ${String(bad)} refused`);
  }
  const r = await fullThenRestart(SEED + 13, { restartGraceMs: 0 });
  t.equal(await codeOf(() => r.server.accept()), undefined, 'restartGraceMs 0: a new client takes a pre-crash slot at once');
  r.server.close();
  const fresh = await fullThenRestart(SEED + 17);
  // Clients registered after the restart are not pre-crash: they keep their lease.
  fresh.clock.advanceMs(GRACE_MS);
  const n = connectInProcess(fresh.server, fresh.fabric);
  for (let i = 0; i < 7; i++) connectInProcess(fresh.server, fresh.fabric);
  t.ok(fresh.store.conn.has(n.clientId), 'a client registered after the restart is never taken as dormant');
  t.equal(await codeOf(() => fresh.server.accept()), 'PMRPC_ERR_TABLE_FULL');
  fresh.server.close();
});
