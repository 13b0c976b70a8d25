// PRISM-TX's invariants on persistent state (docs/tx.md "Invariants", DESIGN §10.1): each is driven
// into its bad state here — memory corrupted under the code, or a fault switch that skips a step —
// and must stop the code with PMRPC_ERR_INVARIANT instead of letting it write (or report) bad
// state; the legitimate neighbour of each (a resolver that rolled T forward first) must not trip it.
import t from 'tap';
import { crashImages, materialize, PmemRegion } from '../../../pmem/index.js';
import { H_ABORTED, H_COMMITTED, H_FENCED, H_PREPARED, hWord, makeTxid, parseTxWelcome, slotOffset, TxClient, TxResolver, txApp, type ShardConn, type TxAppServer, type TxFaults } from '../../../src/apps/tx/index.js';
import { checkHEdge, hEdgeOk } from '../../../src/apps/tx/layout.js';
import { exploreSeed, nicConfigFor, txCrashSpec, World } from '../../../src/testing/crash/index.js';

const SEED = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/apps/tx/invariants.test.ts)`);
const te = new TextEncoder();
const td = new TextDecoder();
const INVARIANT = { code: 'PMRPC_ERR_INVARIANT' };
const opts = (faults: Partial<TxFaults>) => txApp.resolveOptions({ shard: 0, shards: 1, keysPerShard: 2, clients: 4, items: 32, faults });

function cluster(faults: Partial<TxFaults> = {}) {
  const world = new World(nicConfigFor(SEED, { eviction: 0, ddio: true }), SEED);
  const region = PmemRegion.createInMemory(txApp.minRegionBytes(opts(faults)) + 64, { tracing: true });
  txApp.format(region, opts(faults));
  world.addNode(region, (host) => txApp.open(host, opts(faults))).server!.recover();
  const source = (c: number) => {
    let conn: ShardConn | undefined;
    return (): ShardConn | undefined => {
      if (world.nodes[0]!.crashed) return undefined;
      if (conn === undefined || conn.qp.link.closed === true) {
        const { qp, welcome } = world.connect(0, new Uint8Array(0), c);
        conn = parseTxWelcome(qp, welcome);
      }
      return conn;
    };
  };
  const server = () => world.nodes[0]!.server as TxAppServer;
  /** Crash the shard and reopen it on what is durable now; recovery runs when `recover` is called. */
  const restart = () => {
    const st = world.nodes[0]!.region.crashState();
    const image = materialize(st, [...crashImages(st, { engine: 'none' })][0]!);
    world.crash(0);
    return world.restart(0, PmemRegion.openImage(image, {}), (host) => txApp.open(host, opts(faults))).server as TxAppServer;
  };
  const client = (c: number, afterPrepare?: (txid: bigint) => Promise<void>) => new TxClient(source(c), { client: c, incarnation: 1, clock: world.clock, faults, ...(afterPrepare !== undefined ? { afterPrepare } : {}) });
  return { world, server, restart, client, resolver: () => new TxResolver(source(3), { clock: world.clock, faults }) };
}

async function drive<T>(world: World, fn: () => Promise<T>): Promise<T> {
  let done = false;
  let out: T | undefined;
  let err: unknown;
  void fn().then((v) => ((out = v), (done = true)), (e: unknown) => ((err = e), (done = true)));
  const r = await world.run(() => done, 200_000);
  if (r.status !== 'done') throw new Error(`the world ${r.status}`);
  if (err !== undefined) throw err;
  return out as T;
}

t.test('H moves only along the protocol\'s edges (hEdgeOk, checkHEdge)', async (t) => {
  const T = makeTxid(1, 1, 5);
  const later = makeTxid(1, 1, 6);
  const ok: Array<[bigint, bigint, string]> = [
    [0n, hWord(T, H_PREPARED), 'an unused record → PREPARED'],
    [hWord(T, H_PREPARED), hWord(T, H_COMMITTED), 'PREPARED → COMMITTED'],
    [hWord(T, H_PREPARED), hWord(T, H_ABORTED), 'PREPARED → ABORTED'],
    [hWord(T, H_PREPARED), hWord(T, H_FENCED), 'PREPARED → FENCED (recovery R2)'],
    [hWord(T, H_COMMITTED), hWord(later, H_PREPARED), 'the next transaction prepares over COMMITTED'],
    [hWord(T, H_ABORTED), hWord(later, H_FENCED), 'a resolver fences a later transaction'],
  ];
  for (const [from, to, what] of ok) t.ok(hEdgeOk(from, to), what);
  const bad: Array<[bigint, bigint, string]> = [
    [hWord(T, H_COMMITTED), hWord(T, H_ABORTED), 'COMMITTED → ABORTED'],
    [hWord(T, H_ABORTED), hWord(T, H_COMMITTED), 'ABORTED → COMMITTED'],
    [hWord(T, H_FENCED), hWord(T, H_PREPARED), 'FENCED → PREPARED of the same txid'],
    [hWord(T, H_COMMITTED), hWord(T, H_PREPARED), 'COMMITTED → PREPARED'],
    [hWord(later, H_COMMITTED), hWord(T, H_PREPARED), 'an earlier txid over a later one'],
  ];
  for (const [from, to, what] of bad) {
    t.notOk(hEdgeOk(from, to), what);
    t.throws(() => checkHEdge(from, to, 'test'), INVARIANT, `${what}: PMRPC_ERR_INVARIANT`);
  }
});

t.test('a committed transaction whose install finds neither its lock nor its value stops the client', async (t) => {
  const { world, server, client } = cluster();
  const g = server().geometry;
  // Memory corrupted under the protocol: T's lock on key 0 vanishes between the commit point and round 2.
  const c = client(0, async () => {
    server().region.storeU64(slotOffset(g, 0) + 16, 0n);
  });
  const o = await drive(world, async () => {
    await c.begin();
    await c.read(0, { forUpdate: true });
    await c.write(0, te.encode('a'));
    return c.commit();
  });
  t.equal(o.status, 'committed', 'the commit point was reached: commit() reports committed');
  await t.rejects(drive(world, () => c.settled()), INVARIANT, 'round 2 found the install absent: settled() throws PMRPC_ERR_INVARIANT');
  t.match(c.broken?.message ?? '', /install of key 0 .*no lock/, 'the client keeps the broken invariant');
  await t.rejects(drive(world, () => c.begin()), INVARIANT, 'and begins nothing more');
  world.nodes[0]!.nic.drainAll();
  t.not(td.decode(server().value(0)!.value), 'a', 'the value is indeed absent (what the invariant reports)');
});

t.test('a committed transaction a resolver rolled forward before its round 2 does not trip the install invariant', async (t) => {
  const { world, server, client, resolver } = cluster();
  let resolved = '';
  // Between the commit point and round 2, a resolver finds every participant PREPARED (D4) and rolls T
  // forward: installs, COMMITTED, release. Round 2's install then finds T's value, its H CAS COMMITTED(T).
  const c = client(0, async (txid) => {
    resolved = await resolver().resolve(txid);
  });
  const o = await drive(world, async () => {
    await c.begin();
    await c.read(0, { forUpdate: true });
    await c.write(0, te.encode('a'));
    const o = await c.commit();
    await c.settled();
    return o;
  });
  t.equal(resolved, 'committed', 'the resolver rolled T forward');
  t.equal(o.status, 'committed');
  t.equal(c.broken, undefined, 'no invariant broken');
  world.nodes[0]!.nic.drainAll();
  t.equal(td.decode(server().value(0)!.value), 'a');
  t.same(server().audit(), []);
});

/** A shard with one committed write on key 0, its slot then corrupted durably by `corrupt`, restarted: recovery runs. */
async function recoverCorrupted(corrupt: (s: TxAppServer) => void): Promise<{ recover: () => void; before: Uint8Array; after: () => Uint8Array }> {
  const { world, server, client, restart } = cluster();
  const c = client(0);
  await drive(world, async () => {
    await c.begin();
    await c.read(0, { forUpdate: true });
    await c.write(0, te.encode('a'));
    await c.commit();
    await c.settled();
  });
  world.nodes[0]!.nic.drainAll();
  const g = server().geometry;
  corrupt(server());
  server().region.persist(slotOffset(g, 0), 64);
  const before = server().region.load(slotOffset(g, 0), 64);
  const s = restart();
  return { recover: () => void s.recover(), before, after: () => s.region.load(slotOffset(g, 0), 64) };
}

t.test('recovery never stores a slot whose pointer is not an item boundary of the arena', async (t) => {
  const r = await recoverCorrupted(
    (s) => {
      const at = slotOffset(s.geometry, 0);
      s.region.storeU64(at + 16, makeTxid(2, 1, 9)); // a lock no record backs: R3 rewrites the slot
      s.region.storeU64(at + 24, BigInt(s.slot(0).ptr + 8));
    },
  );
  t.throws(r.recover, { code: 'PMRPC_ERR_INVARIANT', message: /not an item boundary/ }, 'recovery stops with PMRPC_ERR_INVARIANT');
  t.same(r.after(), r.before, 'the slot is unchanged (nothing was written)');
});

t.test('recovery never stores a slot whose item does not describe itself as the slot\'s value', async (t) => {
  const r = await recoverCorrupted(
    (s) => {
      const at = slotOffset(s.geometry, 0);
      const sl = s.slot(0);
      s.region.storeU64(at + 16, makeTxid(2, 1, 9));
      s.region.storeU64(at + 8, sl.ct - 1n); // CT no longer the item's ts
    },
  );
  t.throws(r.recover, { code: 'PMRPC_ERR_INVARIANT', message: /which holds key 0, ts/ }, 'recovery stops with PMRPC_ERR_INVARIANT');
  t.same(r.after(), r.before, 'the slot is unchanged (nothing was written)');
});

t.test("the explorer reports a client a broken invariant stopped as a violation of kind 'invariant' (mutant read-lock-any-connection)", async (t) => {
  // The replay `crash-test --app tx --mutant read-lock-any-connection --seeds 1..12` prints (seed 1,
  // DDIO on, on main after round 2's one redirected FLUSH of the new items; before, seed 2 on branch
  // txprep33, and the plain sweep's plan; re-pinned whenever the schedule moves: on
  // branch txcpu32 the sweep moved to the CPU poller's pass end, on txhint32 a read of a client's own
  // write takes one chain less, on txprep33 the values ride in the record; `pmrpc crash-test --app tx --mutant read-lock-any-connection
  // --seeds 1..12` prints the current one): a shard restarts (releasing a read-time
  // lock, R3) while a client holds it; the client (mutant) trusts the lock on its new connection, round 1
  // does not check it, T commits and its install finds no lock: round 2's invariant stops the
  // client (checkInstalls); the workload does not swallow it. (Until branch txmodel31 this test
  // replayed prepare-over-own-fence, whose pinned schedule no longer reaches its race with round 1's
  // shorter chain.)
  const plan = { imagesPerPoint: 16, engine: 'random' as const, pins: { ddio: true }, crashPlan: 'p314:n1@2/r4', violationsMax: 1 };
  const r = await exploreSeed(txCrashSpec({ mutant: 'read-lock-any-connection' }, plan), 1);
  t.equal(r.violations[0]?.kind, 'invariant', r.violations[0]?.detail ?? 'no violation');
  t.match(r.violations[0]?.detail ?? '', /client \d+ stopped: PMRPC_ERR_INVARIANT.*is committed, but its install of key \d+ on shard \d+ found no lock/);
  const ok = await exploreSeed(txCrashSpec({}, plan), 1);
  t.equal(ok.violations.length, 0, `the correct protocol on the same plan: ${ok.violations[0]?.detail ?? '0 violations'}`);
});
