// Locks taken at read time (docs/tx.md "Locks taken at read time"): a read for update takes the
// key's lock in its read chain, round 1 trusts it without a check — on the connection it was taken
// on (the install raises W with CT). A shard that restarted in between released it (recovery R3):
// round 1 locks the key again, and a transaction that took the lock since wins (trusting a lock on
// any connection prepares T over a key it no longer holds: its install finds another's lock,
// PMRPC_ERR_INVARIANT; mutant check-lock-by-order: a check by order lowers W below CT).
import t from 'tap';
import { crashImages, materialize, PmemRegion } from '../../../pmem/index.js';
import { nicConfigFor, World } from '../../../src/testing/crash/index.js';
import { H_FENCED, hWord, parseTxWelcome, TxClient, TxErrorCodes, TxResolver, txApp, type ShardConn, type TxAppServer, type TxFaults } from '../../../src/apps/tx/index.js';

const SEED = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/apps/tx/read-locks.test.ts)`);
const te = new TextEncoder();
const td = new TextDecoder();
const opts = (faults: Partial<TxFaults>) => txApp.resolveOptions({ shard: 0, shards: 1, keysPerShard: 2, clients: 4, items: 32, faults });

function cluster(faults: Partial<TxFaults> = {}, nic: Partial<ReturnType<typeof nicConfigFor>> = {}) {
  const world = new World({ ...nicConfigFor(SEED, { eviction: 0, ddio: true }), ...nic }, SEED);
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
  /** Crash the shard and restart it from what is durable now (recovery runs). */
  const restart = () => {
    const st = world.nodes[0]!.region.crashState();
    const image = materialize(st, [...crashImages(st, { engine: 'none' })][0]!);
    world.crash(0);
    world.restart(0, PmemRegion.openImage(image, {}), (host) => txApp.open(host, opts(faults))).server!.recover();
  };
  return { world, server, restart, client: (c: number) => new TxClient(source(c), { client: c, incarnation: 1, clock: world.clock, faults }), resolver: () => new TxResolver(source(3), { clock: world.clock, faults }) };
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

t.test('a read for update takes the lock; round 1 trusts it; round 2 installs W = CT = ts and releases it', async (t) => {
  const { world, server, client } = cluster();
  const c = client(0);
  await drive(world, async () => {
    await c.begin();
    await c.read(0, { forUpdate: true });
  });
  const T = c.nextTxid;
  world.nodes[0]!.nic.drainAll();
  t.equal(server().slot(0).lock, T, 'locked by the open transaction, under the txid its commit uses');
  const o = await drive(world, async () => {
    await c.write(0, te.encode('a'));
    const o = await c.commit();
    await c.settled();
    return o;
  });
  t.same(o, { status: 'committed', txid: T });
  t.equal(c.lastRoundTrips, 2);
  world.nodes[0]!.nic.drainAll();
  t.equal(server().slot(0).lock, 0n, 'released by round 2');
  t.equal(td.decode(server().value(0)!.value), 'a');
  t.equal(server().slot(0).w, server().slot(0).ct, 'W raised with CT by the install (round 1 did not touch the key)');
  // A second reader for update of a locked key: no lock for it; its round 1 finds the lock held.
  const b = client(1);
  await drive(world, async () => {
    await c.begin();
    await c.read(0, { forUpdate: true });
    await b.begin();
    await b.write(0, te.encode('b'));
  });
  world.nodes[0]!.nic.drainAll();
  t.equal(server().slot(0).lock, c.nextTxid, "the first reader's lock stands");
  const ob = await drive(world, () => b.commit());
  t.equal(ob.status, 'aborted');
  t.equal(ob.code, TxErrorCodes.CONFLICT);
  // rollback() releases the locks its reads took (before the next begin()).
  c.rollback();
  await drive(world, () => c.begin());
  c.rollback();
  world.nodes[0]!.nic.drainAll();
  t.equal(server().slot(0).lock, 0n, 'released by rollback()');
  t.same(server().audit(), []);
});

/** Client 1 reads key 0 for update; the shard restarts; client 0 takes the key's lock; client 1 commits. */
async function restartBetween(faults: Partial<TxFaults>): Promise<{ released: boolean; first: string; second: string; value: string; broken?: string }> {
  const { world, server, client, restart } = cluster(faults);
  const a = client(1); // the higher client slot: its txid is above b's, so a gt check with L = b's txid swaps
  const b = client(0);
  await drive(world, async () => {
    await a.begin();
    await a.write(0, te.encode('a'));
  });
  world.nodes[0]!.nic.drainAll();
  const held = server().slot(0).lock !== 0n;
  restart();
  const released = held && server().slot(0).lock === 0n;
  await drive(world, async () => {
    await b.begin();
    await b.write(0, te.encode('b'));
  });
  let broken: string | undefined;
  const first = await drive(world, async () => {
    const o = await a.commit();
    await a.settled().catch((e: unknown) => (broken = (e as { code?: string }).code ?? String(e)));
    return o;
  });
  const second = await drive(world, async () => {
    const o = await b.commit();
    await b.settled();
    return o;
  });
  world.nodes[0]!.nic.drainAll();
  return { released, first: `${first.status}${first.code !== undefined ? ` ${first.code}` : ''}`, second: second.status, value: td.decode(server().value(0)!.value), ...(broken !== undefined ? { broken } : {}) };
}

t.test('a lock taken before a restart of the shard is taken again by round 1 (mutant read-lock-any-connection)', async (t) => {
  const ok = await restartBetween({});
  t.same(ok, { released: true, first: `aborted ${TxErrorCodes.CONFLICT}`, second: 'committed', value: 'b' }, 'recovery released the read-time lock (R3); the lock is the later reader\'s: the first aborts, the second commits');
  // With the switch readLockAnyConnection the first transaction trusts the lock the restart
  // released; round 1 no longer checks a read-time lock, so it prepares over the second's lock and
  // reports committed, and its install finds the second's lock: committed but absent — round 2's
  // invariant stops the client (PMRPC_ERR_INVARIANT). The connection rule is a safety rule.
  const bad = await restartBetween({ readLockAnyConnection: true });
  t.equal(bad.first, 'committed', 'switch readLockAnyConnection: the first prepares over a lock it no longer holds…');
  t.equal(bad.broken, 'PMRPC_ERR_INVARIANT', '…and its install finds another lock: the client stops');
});

/** A resolver finds T (read-time locks, no record: D6) in doubt, fences T and decides abort; then T's client commits it. */
async function fencedWhileReading(faults: Partial<TxFaults>): Promise<{ resolver: string; fenced: boolean; outcome: string; value: string; lock: bigint }> {
  const { world, server, client, resolver } = cluster(faults);
  const c = client(0);
  await drive(world, async () => {
    await c.begin();
    await c.read(0, { forUpdate: true });
  });
  const T = c.nextTxid;
  const r = await drive(world, () => resolver().resolve(T));
  world.nodes[0]!.nic.drainAll();
  const fenced = server().record(0).h === hWord(T, H_FENCED);
  const o = await drive(world, async () => {
    await c.write(0, te.encode('a'));
    const o = await c.commit();
    await c.settled();
    return o;
  });
  world.nodes[0]!.nic.drainAll();
  return { resolver: r, fenced, outcome: `${o.status}${o.code !== undefined ? ` ${o.code}` : ''}`, value: td.decode(server().value(0)!.value), lock: server().slot(0).lock };
}

t.test('a transaction a resolver fenced while it held read-time locks (D6) aborts, its client having re-learnt that fence as its H', async (t) => {
  // The explorer's race (test/deep/tx-mutants.test.ts, resolver-trusts-visible's settings, seed 1,
  // crash run 33) also has the fence released T's lock before T's round 1, so that T prepared over
  // it and its install found no lock: committed but absent (mutant prepare-over-own-fence). Here the
  // resolver's view may miss the lock (its READ runs beside the CAS), so only the outcome is checked.
  const ok = await fencedWhileReading({});
  t.same(ok, { resolver: 'aborted', fenced: true, outcome: `aborted ${TxErrorCodes.CONFLICT}`, value: '', lock: 0n }, 'the resolver fenced T and decided abort; the commit aborts too and releases the lock');
});

/**
 * A (client 0) locks key 0 at read time; a resolver fences A and releases the lock (D6); B (client
 * 1) then locks, writes and commits key 0 (CT = W = B's ts, L = 0); A then commits its write. A's
 * check must fail (L is not A's), leaving W ≥ CT; the mutant check-lock-by-order compares by order,
 * so L = 0 below A's txid passes it and W drops to A's ts, below CT (found by the swarm, seed 325; the shard's drain check reports it in audit(): the next test).
 */
async function checkAfterRelease(faults: Partial<TxFaults>, after?: (c: ReturnType<typeof cluster>) => Promise<void>): Promise<{ outcome: string; w: bigint; ct: bigint; end: { w: bigint; ct: bigint }; audit: string[] }> {
  const cl = cluster(faults);
  const r = await checkAfterReleaseOn(cl);
  if (after !== undefined) await after(cl);
  const s = cl.server().slot(0);
  return { ...r, end: { w: s.w, ct: s.ct }, audit: cl.server().audit().map((p) => `${p.kind}: ${p.detail}`) };
}

async function checkAfterReleaseOn(cl: ReturnType<typeof cluster>): Promise<{ outcome: string; w: bigint; ct: bigint }> {
  const { world, server, client, resolver } = cl;
  const a = client(0);
  const b = client(1);
  await drive(world, async () => {
    await a.begin();
    await a.read(0, { forUpdate: true });
  });
  world.nodes[0]!.nic.drainAll();
  await drive(world, () => resolver().resolve(a.nextTxid));
  await drive(world, async () => {
    await b.begin();
    await b.read(0, { forUpdate: true });
    await b.write(0, te.encode('b'));
    await b.commit();
    await b.settled();
  });
  const o = await drive(world, async () => {
    await a.write(0, te.encode('a'));
    return a.commit();
  });
  world.nodes[0]!.nic.drainAll();
  const s = server().slot(0);
  return { outcome: `${o.status}${o.code !== undefined ? ` ${o.code}` : ''}`, w: s.w, ct: s.ct };
}

t.test("round 1's check of a read-time lock compares L = T: a lock released and gone since fails it, W never drops (mutant check-lock-by-order)", async (t) => {
  const ok = await checkAfterRelease({});
  t.match(ok.outcome, /^aborted/, 'A aborts');
  t.ok(ok.w >= ok.ct, `W ${ok.w} ≥ CT ${ok.ct}`);
  const bad = await checkAfterRelease({ checkLockByOrder: true });
  t.match(bad.outcome, /^aborted/, 'the mutant aborts A too (its H CAS meets the fence)…');
  t.ok(bad.w < bad.ct, `…but its check swapped with L = 0 below A's txid: W ${bad.w} dropped below CT ${bad.ct}`);
});

t.test('a drained NIC write that leaves W below CT is reported by the audit even after W was raised again', async (t) => {
  // After A's bad check the slot's W is raised back to CT (as a later install's W := ts would do),
  // so the slot looks sound at the end; the shard's CPU saw the bad write as it drained.
  const raise = async ({ server }: ReturnType<typeof cluster>): Promise<void> => {
    const s = server();
    const at = s.geometry.slotsOffset; // key 0 is the shard's slot 0
    s.region.store(at, s.region.load(at + 8, 8));
  };
  const ok = await checkAfterRelease({}, raise);
  t.same(ok.audit, [], 'the protocol: nothing to report');
  const bad = await checkAfterRelease({ checkLockByOrder: true }, raise);
  t.ok(bad.w < bad.ct && bad.end.w >= bad.end.ct, `W ${bad.w} below CT ${bad.ct} after the check, W ${bad.end.w} ≥ CT ${bad.end.ct} at the end`);
  t.match(bad.audit.join('\n'), /slot: key 0: a drained NIC write left W \d+ below CT \d+/, 'the audit reports the write as it drained');
});

t.test("the read chain's lock is placed before the chain answers: a resolver's scan (READs) sees it with the NIC's cache undrained", async (t) => {
  // The lock is a PRISM CAS on L's txid tag that returns [W CT L ptr]; the chain ends with a READ
  // (of scratch: no DMA) because a READ does not pass the QP's earlier writes. Without it the lock
  // can stay in the NIC's cache, seen by atomics but not by a scan's READs: the key stays locked
  // for ever once the client is gone (swarm seed 563, "prepared-forever").
  const { world, server, client, resolver } = cluster({}, { drain: 'lazy-large', cacheEntriesMax: 4096, idleDrain: false });
  const c = client(0);
  const r = resolver();
  const seen = await drive(world, async () => {
    await c.begin();
    await c.read(0, { forUpdate: true });
    // Still inside the run (the world has not gone idle, so nothing drained the NIC's cache).
    return { visible: server().slot(0).lock, scanned: (await r.scan()).inDoubt };
  });
  const T = c.nextTxid;
  t.equal(seen.visible, T, 'the lock is in visible memory when the read returns');
  t.same(seen.scanned, [T], "a resolver's scan finds the lock");
  t.equal(c.readChains.direct + c.readChains.indirect, 1, 'one read chain');
});
