// Coverage of the decision tables of docs/tx.md: every row of D (resolution, TxResolver;
// TX_RESOLVER_TABLE, src/apps/tx/resolution.ts) and R (local recovery of a shard; TX_RECOVERY_TABLE,
// whose own coverage test is recovery-table.test.ts) is constructed directly in PM — records,
// slots, items written by hand — and the row's outcome is asserted. Every input of table D matches
// exactly one row, and the last test fails if a row of D decided no resolution here. Two shards,
// keys 0 (shard 0) and 1 (shard 1), one transaction T of client slot 0 writing both.
import t from 'tap';
import { crashImages, materialize, PmemRegion } from '../../../pmem/index.js';
import { Rnic } from '../../../flush/index.js';
import { nicConfigFor, World } from '../../../src/testing/crash/index.js';
import {
  bodyPtrsOffset, encodeBody, encodeItem, encodeSlot, ENTRY_READ, ENTRY_WRITE, H_ABORTED, H_COMMITTED, H_FENCED, H_PREPARED, hWord, ITEM_BYTES, makeTxid, parseTxWelcome,
  RECORD_BODY, recordOffset, slotOffset, TxResolver, txApp, txName, type RecordEntry, type ShardConn, type TxAppServer, type TxFaults,
} from '../../../src/apps/tx/index.js';
import { allTxResolutionInputs, matchingTxResolutionRows, TX_RESOLVER_TABLE } from '../../../src/apps/tx/resolution.js';

const SEED = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${SEED}`);
const te = new TextEncoder();
const td = new TextDecoder();
const T = makeTxid(0, 1, 7);
const LATER = makeTxid(0, 1, 8);
const TS = (1000n << 8n) | 0n;
const BOTH = 0b11n;
const opts = (shard: number) => txApp.resolveOptions({ shard, shards: 2, keysPerShard: 2, clients: 4, items: 32 });

/** Durable stores on a shard's region (what a crash image holds). */
function put(srv: TxAppServer, at: number, b: Uint8Array): void {
  srv.region.store(at, b);
  srv.region.persist(at, b.length);
}
function setH(srv: TxAppServer, h: bigint): void {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, h, true);
  put(srv, recordOffset(srv.geometry, 0), b);
}
/** T's prepared write of `key` on its shard: a new item, the slot locked by T with W = ts; returns the record entry. */
function prepareWrite(srv: TxAppServer, key: number, value: string, opt: { installed?: boolean; ctTorn?: boolean; wBelow?: boolean } = {}): RecordEntry {
  const g = srv.geometry;
  const newPtr = g.arenaOffset + (g.items - 1) * ITEM_BYTES;
  put(srv, newPtr, encodeItem({ ts: TS, key, value: te.encode(value) }));
  const s = srv.slot(0);
  const installed = opt.installed === true;
  // wBelow: a key T's read locked — round 1 does not touch it, so W is still the W T's lock saw (below ts).
  put(srv, slotOffset(g, 0), encodeSlot({ w: opt.wBelow === true ? s.w : TS, ct: installed && opt.ctTorn !== true ? TS : s.ct, lock: T, ptr: installed ? newPtr : s.ptr, bound: ITEM_BYTES }).subarray(0, 40));
  return { key, kind: ENTRY_WRITE, newPtr, oldCt: s.ct };
}
function record(srv: TxAppServer, state: bigint, entries: RecordEntry[], torn = false): void {
  const body = encodeBody({ txid: T, ts: TS, participants: BOTH, entries });
  if (torn) body[bodyPtrsOffset(entries.length) - 1]! ^= 0xff; // a crc-covered byte (the last entry's oldCT)
  put(srv, recordOffset(srv.geometry, 0) + RECORD_BODY, body);
  setH(srv, hWord(T, state));
}
const valueOf = (srv: TxAppServer): string => td.decode(srv.value(0)!.value);

function cluster(): { world: World; srv: (s: number) => TxAppServer; resolver: (faults?: Partial<TxFaults>) => TxResolver } {
  const world = new World(nicConfigFor(SEED, { eviction: 0, ddio: true }), SEED);
  for (let n = 0; n < 2; n++) {
    const region = PmemRegion.createInMemory(txApp.minRegionBytes(opts(n)) + 64, { tracing: true });
    txApp.format(region, opts(n));
    world.addNode(region, (host) => txApp.open(host, opts(n))).server!.recover();
  }
  const conns: ShardConn[] = [];
  const source = (s: number): ShardConn | undefined => {
    if (world.nodes[s]!.crashed) return undefined;
    if (conns[s] === undefined || conns[s]!.qp.link.closed === true) {
      const { qp, welcome } = world.connect(s, new Uint8Array(0), 3);
      conns[s] = parseTxWelcome(qp, welcome);
    }
    return conns[s];
  };
  return { world, srv: (s) => world.nodes[s]!.server as TxAppServer, resolver: (faults) => trackResolver(new TxResolver(source, { clock: world.clock, ...(faults !== undefined ? { faults } : {}) }), faults) };
}

/** Every resolver of the correct protocol the D tests ran, for the row coverage at the end. */
const resolvers: TxResolver[] = [];
function trackResolver(r: TxResolver, faults: Partial<TxFaults> | undefined): TxResolver {
  if (faults === undefined || Object.keys(faults).length === 0) resolvers.push(r);
  return r;
}

t.test('table D: every input matches exactly one row; every row matches some input', async (t) => {
  const used = new Set<string>();
  for (const input of allTxResolutionInputs()) {
    const rows = matchingTxResolutionRows(input);
    t.equal(rows.length, 1, `${JSON.stringify(input)}: ${rows.map((r) => r.id).join(', ') || 'no row'}`);
    for (const r of rows) used.add(r.id);
  }
  t.same([...used].sort(), TX_RESOLVER_TABLE.map((r) => r.id).sort());
  for (const r of TX_RESOLVER_TABLE) t.ok(r.why.length > 40, `${r.id} says why`);
});

async function resolveIn(world: World, r: TxResolver, participants?: bigint, txid = T): Promise<string> {
  let out: string | undefined;
  let err: unknown;
  void r.resolve(txid, participants).then((v) => (out = v), (e: unknown) => (err = e ?? 'error'));
  const run = await world.run(() => out !== undefined || err !== undefined, 400_000);
  if (err !== undefined) throw err;
  if (run.status !== 'done') throw new Error(`the world ${run.status}`);
  for (const n of world.nodes) if (!n.crashed) n.nic.drainAll();
  return out!;
}

const h = (srv: TxAppServer): bigint => srv.record(0).h;

t.test('D1: a later txid of the slot on some participant — T is final: only its stale locks are released', async (t) => {
  const { world, srv, resolver } = cluster();
  setH(srv(0), hWord(LATER, H_COMMITTED));
  prepareWrite(srv(1), 1, 'x');
  setH(srv(1), hWord(T, H_COMMITTED)); // T finished here; a lock naming T left behind
  t.equal(await resolveIn(world, resolver(), BOTH), 'finished');
  t.equal(srv(1).slot(0).lock, 0n, 'the stale lock released');
  t.equal(h(srv(0)), hWord(LATER, H_COMMITTED), 'nothing else written');
});

t.test('D2: some participant COMMITTED(T) — roll forward everywhere', async (t) => {
  const { world, srv, resolver } = cluster();
  setH(srv(0), hWord(T, H_COMMITTED));
  const e = prepareWrite(srv(1), 1, 'new1');
  record(srv(1), H_PREPARED, [e]);
  t.equal(await resolveIn(world, resolver(), BOTH), 'committed');
  t.equal(valueOf(srv(1)), 'new1', 'installed on the participant that was still prepared');
  t.equal(h(srv(1)), hWord(T, H_COMMITTED));
  t.equal(srv(1).slot(0).lock, 0n);
});

for (const st of [H_ABORTED, H_FENCED]) {
  t.test(`D3: some participant ${st === H_ABORTED ? 'ABORTED' : 'FENCED'}(T) — roll back everywhere`, async (t) => {
    const { world, srv, resolver } = cluster();
    setH(srv(0), hWord(T, st));
    const e = prepareWrite(srv(1), 1, 'new1');
    record(srv(1), H_PREPARED, [e]);
    t.equal(await resolveIn(world, resolver(), BOTH), 'aborted');
    t.equal(valueOf(srv(1)), '', 'the old value stays');
    t.equal(h(srv(1)), hWord(T, H_ABORTED));
    t.equal(srv(1).slot(0).lock, 0n);
  });
}

t.test('D4: every participant PREPARED(T) (the commit point) — roll forward, idempotently', async (t) => {
  const { world, srv, resolver } = cluster();
  for (const s of [0, 1]) record(srv(s), H_PREPARED, [prepareWrite(srv(s), s, `new${s}`)]);
  t.equal(await resolveIn(world, resolver()), 'committed', 'found from the records alone (no hint)');
  t.equal(await resolveIn(world, resolver(), BOTH), 'committed', 'a second resolver: the same decision');
  for (const s of [0, 1]) {
    t.equal(valueOf(srv(s)), `new${s}`);
    t.equal(h(srv(s)), hWord(T, H_COMMITTED));
    t.equal(srv(s).slot(0).lock, 0n);
  }
});

t.test('D5: a record of T, one participant without one — fence it there, then roll back', async (t) => {
  const { world, srv, resolver } = cluster();
  record(srv(0), H_PREPARED, [prepareWrite(srv(0), 0, 'new0')]);
  prepareWrite(srv(1), 1, 'new1'); // locked by T, no record: the prepare's H CAS never landed
  t.equal(await resolveIn(world, resolver()), 'aborted');
  t.equal(h(srv(1)), hWord(T, H_FENCED), 'fenced: a late prepare of T fails there');
  t.equal(h(srv(0)), hWord(T, H_ABORTED));
  for (const s of [0, 1]) {
    t.equal(valueOf(srv(s)), '');
    t.equal(srv(s).slot(0).lock, 0n);
  }
});

t.test('D6: no record of T anywhere, only its locks — fence where it touched, roll back', async (t) => {
  const { world, srv, resolver } = cluster();
  prepareWrite(srv(0), 0, 'new0');
  t.equal(await resolveIn(world, resolver()), 'aborted');
  t.equal(h(srv(0)), hWord(T, H_FENCED));
  t.equal(srv(0).slot(0).lock, 0n);
  t.equal(valueOf(srv(0)), '');
});

t.test('D7: a participant down and nothing decides — wait (bounded): unknown, nothing changed', async (t) => {
  const { world, srv, resolver } = cluster();
  record(srv(0), H_PREPARED, [prepareWrite(srv(0), 0, 'new0')]);
  world.crash(1);
  t.equal(await resolveIn(world, resolver(), BOTH), 'unknown');
  t.equal(h(srv(0)), hWord(T, H_PREPARED), 'still PREPARED: its record may be durable on the shard that is down');
  t.equal(srv(0).slot(0).lock, T);
});

t.test('D4 over keys locked at read time (round 1 did not raise W): the roll forward installs W := ts with CT — mutant install-keeps-w leaves W below CT', async (t) => {
  for (const keepW of [false, true]) {
    const { world, srv, resolver } = cluster();
    for (const s of [0, 1]) record(srv(s), H_PREPARED, [prepareWrite(srv(s), s, `new${s}`, { wBelow: true })]);
    t.ok(srv(0).slot(0).w < TS, 'set up: W below ts');
    t.equal(await resolveIn(world, keepW ? resolver({ installKeepsW: true }) : resolver()), 'committed');
    for (const s of [0, 1]) {
      t.equal(valueOf(srv(s)), `new${s}`);
      t.equal(srv(s).slot(0).ct, TS);
      if (!keepW) {
        t.equal(srv(s).slot(0).w, TS, 'W := ts with the install');
        // (slots only: the hand-made item was not taken from the free list this world's recovery built)
        t.same(srv(s).audit().filter((p) => p.kind === 'slot'), []);
      } else t.match(srv(s).audit().filter((p) => p.kind === 'slot'), [{ kind: 'slot', detail: /W \d+ below CT/ }], 'mutant: W below CT');
    }
  }
});

/**
 * Row D9. T (still executing) holds a read-time lock of key 0 on shard 0, whose H is the client's
 * earlier value; shard 1 holds FENCED(T) (a resolver fenced it there, D6). A resolver decides abort
 * (D3) and releases T's lock on shard 0 — only after fencing T there: round 1 trusts a lock its read
 * took on the same connection without checking it, so T's prepare on shard 0 must fail once that
 * lock is gone. The mutant release-without-fence releases it and leaves shard 0's H as it was: T's
 * late prepare there would write a PREPARED record over a key it no longer holds.
 */
/** T's prepared write of `key` carrying its value in the record (docs/tx.md "New values in the record"): the slot locked by T, W = ts; nothing ALLOCATEd. */
function prepareCarried(srv: TxAppServer, key: number, value: string): void {
  const g = srv.geometry;
  const s = srv.slot(0);
  put(srv, slotOffset(g, 0), encodeSlot({ w: TS, ct: s.ct, lock: T, ptr: s.ptr, bound: ITEM_BYTES }).subarray(0, 40));
  const item = encodeItem({ ts: TS, key, value: te.encode(value) });
  put(srv, recordOffset(g, 0) + RECORD_BODY, encodeBody({ txid: T, ts: TS, participants: BOTH, values: true, entries: [{ key, kind: ENTRY_WRITE, newPtr: 0, oldCt: s.ct, item }] }));
  setH(srv, hWord(T, H_PREPARED));
}

t.test('D4 over records carrying values (D10): the roll forward ALLOCATEs each value from the record, two resolvers at once install one value per key and leak no item — mutant roll-forward-ignores-record-values commits without them', async (t) => {
  {
    const { world, srv, resolver } = cluster();
    const free0 = [0, 1].map((s) => srv(s).freeItems().length);
    for (const s of [0, 1]) prepareCarried(srv(s), s, `new${s}`);
    // Two resolvers at once (each its own connections): both roll T forward.
    const a = resolver();
    const b = resolver();
    const outs: string[] = [];
    void a.resolve(T, BOTH).then((v) => outs.push(v));
    void b.resolve(T, BOTH).then((v) => outs.push(v));
    const run = await world.run(() => outs.length === 2, 400_000);
    t.equal(run.status, 'done');
    t.same(outs.sort(), ['committed', 'committed'], 'both decide commit');
    for (const n of world.nodes) n.nic.drainAll();
    await world.run(() => world.nodes.every((n) => n.cpu.length === 0), 10_000);
    for (const s of [0, 1]) {
      t.equal(valueOf(srv(s)), `new${s}`, `shard ${s}: T's value installed from the record`);
      t.equal(h(srv(s)), hWord(T, H_COMMITTED));
      t.equal(srv(s).slot(0).lock, 0n);
      srv(s).sweep();
      // One item more in use than before (T's value; the old value retired and back once swept): no duplicate kept.
      t.equal(srv(s).freeItems().length, free0[s]!, `shard ${s}: every item not installed is back on the free list (${srv(s).freeItems().length} of ${free0[s]} free)`);
      t.same(srv(s).audit(), [], `shard ${s} audits clean`);
    }
  }
  {
    const { world, srv, resolver } = cluster();
    for (const s of [0, 1]) prepareCarried(srv(s), s, `new${s}`);
    t.equal(await resolveIn(world, resolver({ rollForwardIgnoresValues: true }), BOTH), 'committed');
    for (const s of [0, 1]) {
      t.equal(h(srv(s)), hWord(T, H_COMMITTED), 'mutant: COMMITTED');
      t.equal(valueOf(srv(s)), '', 'mutant: the committed value is absent');
    }
  }
});

t.test('D9: D3 releases a lock of T where H does not name T only after fencing T there (mutant release-without-fence)', async (t) => {
  for (const mutant of [false, true]) {
    const { world, srv, resolver } = cluster();
    const EARLIER = hWord(makeTxid(0, 1, 6), H_COMMITTED);
    setH(srv(0), EARLIER);
    const g = srv(0).geometry;
    put(srv(0), slotOffset(g, 0), encodeSlot({ ...srv(0).slot(0), lock: T }).subarray(0, 40));
    setH(srv(1), hWord(T, H_FENCED));
    t.equal(await resolveIn(world, mutant ? resolver({ releaseWithoutFence: true }) : resolver(), BOTH), 'aborted');
    t.equal(srv(0).slot(0).lock, 0n, "T's lock released");
    t.equal(h(srv(0)), mutant ? EARLIER : hWord(T, H_FENCED), mutant ? 'mutant: not fenced — a late prepare of T would land here' : 'fenced first: a late prepare of T fails here');
  }
});

/** T committed at its commit point (PREPARED on both shards, round 2 not landed); LATER, the slot's next transaction, holds a read-time lock of key 2 (shard 0, slot 1) and no record. */
function laterOverPrepared(srv: (s: number) => TxAppServer): void {
  const e0 = prepareWrite(srv(0), 0, 'new0');
  const e1 = prepareWrite(srv(1), 1, 'new1');
  record(srv(0), H_PREPARED, [e0, e1]);
  record(srv(1), H_PREPARED, [e0, e1]);
  const g = srv(0).geometry;
  put(srv(0), slotOffset(g, 1), encodeSlot({ ...srv(0).slot(1), lock: LATER }).subarray(0, 40));
}

t.test("D8: T to fence over an earlier transaction's PREPARED record of the slot — that one is resolved first (rolled forward), then T is fenced", async (t) => {
  const { world, srv, resolver } = cluster();
  laterOverPrepared(srv);
  t.equal(await resolveIn(world, resolver(), undefined, LATER), 'aborted');
  t.equal(valueOf(srv(0)), 'new0', "the earlier transaction's install is kept (it reached its commit point)");
  t.equal(valueOf(srv(1)), 'new1');
  t.equal(h(srv(0)), hWord(LATER, H_FENCED), 'LATER fenced where it held a lock, over COMMITTED(T)');
  t.equal(h(srv(1)), hWord(T, H_COMMITTED));
  t.equal(srv(0).slot(1).lock, 0n, "LATER's read-time lock released");
  for (const s of [0, 1]) t.equal(srv(s).slot(0).lock, 0n, "T's locks released by its roll forward");
});

t.test('D8, mutant fence-over-prepared: the fence would replace a PREPARED record of another transaction — PMRPC_ERR_INVARIANT, nothing written', async (t) => {
  const { world, srv, resolver } = cluster();
  laterOverPrepared(srv);
  const r = resolver({ fenceOverPrepared: true });
  await t.rejects(resolveIn(world, r, undefined, LATER), { code: 'PMRPC_ERR_INVARIANT' });
  t.equal(h(srv(0)), hWord(T, H_PREPARED), "T's record stays");
});

/**
 * Step 1 of the resolution (FLUSH what was read before acting on it). T is PREPARED on both shards,
 * but shard 1's H is only visible (its prepare chain's FLUSH has not run): the resolver decides
 * commit (D4) and rolls forward shard 0 first; shard 1 crashes right after shard 0's COMMITTED(T)
 * and restarts from what is durable. The correct resolver FLUSHed shard 1's record with its view,
 * so shard 1 still holds PREPARED(T) and the roll forward completes; the mutant
 * resolver-trusts-visible acted on the visible H alone: shard 1 comes back without T's record, T is
 * installed on shard 0 only, and the resolver reports PMRPC_ERR_TX_UNRESOLVED.
 */
async function visibleRecordThenCrash(faults: Partial<TxFaults>): Promise<{ outcome: string; values: string[] }> {
  const { world, srv, resolver } = cluster();
  const e0 = prepareWrite(srv(0), 0, 'new0');
  const e1 = prepareWrite(srv(1), 1, 'new1');
  record(srv(0), H_PREPARED, [e0, e1]);
  record(srv(1), H_PREPARED, [e0, e1]);
  // Shard 1's H back to empty in PM, PREPARED(T) only visible (a store not yet written back).
  const at = recordOffset(srv(1).geometry, 0);
  srv(1).region.store(at, new Uint8Array(8));
  srv(1).region.persist(at, 8);
  const hb = new Uint8Array(8);
  new DataView(hb.buffer).setBigUint64(0, hWord(T, H_PREPARED), true);
  srv(1).region.store(at, hb);
  let outcome: string | undefined;
  void resolver(faults).resolve(T, BOTH).then((v) => (outcome = v), (e: unknown) => (outcome = (e as { code?: string }).code ?? String(e)));
  const first = await world.run(() => outcome !== undefined || h(srv(0)) === hWord(T, H_COMMITTED), 400_000);
  if (first.status !== 'done' || outcome !== undefined) throw new Error(`setup: the resolver did not reach shard 0's COMMITTED(T) first (${first.status}, ${String(outcome)})`);
  const st = world.nodes[1]!.region.crashState();
  const image = materialize(st, [...crashImages(st, { engine: 'none' })][0]!);
  world.crash(1);
  world.restart(1, PmemRegion.openImage(image, {}), (host) => txApp.open(host, opts(1))).server!.recover();
  const run = await world.run(() => outcome !== undefined, 400_000);
  if (run.status !== 'done') throw new Error(`the world ${run.status}`);
  for (const n of world.nodes) n.nic.drainAll();
  return { outcome: outcome!, values: [valueOf(srv(0)), valueOf(srv(1))] };
}

t.test('resolution step 1: a record the resolver only saw visible is FLUSHed before it acts — a crash after a partial roll forward loses nothing (mutant resolver-trusts-visible)', async (t) => {
  t.same(await visibleRecordThenCrash({}), { outcome: 'committed', values: ['new0', 'new1'] }, 'shard 1 kept PREPARED(T) (the view FLUSHed it): T installed on both');
  t.same(await visibleRecordThenCrash({ resolverTrustsVisible: true }), { outcome: 'PMRPC_ERR_TX_UNRESOLVED', values: ['new0', ''] }, 'mutant: shard 1 lost the record it acted on — T installed on shard 0 only');
});

const nics: Rnic[] = [];
const track = (n: Rnic): Rnic => (nics.push(n), n);
t.teardown(() => {
  for (const n of nics) n.detach();
});

/** A standalone shard 0 (format, hand-made state, then open + recover as after a crash). */
function recovered(build: (srv: TxAppServer) => void, faults: Partial<TxFaults> = {}): TxAppServer {
  const region = PmemRegion.createInMemory(txApp.minRegionBytes(opts(0)) + 64);
  txApp.format(region, opts(0));
  const host = () => ({ region, nic: track(new Rnic(region)), clock: { nowMs: () => 0, nowNs: () => 0n, setTimer: () => ({ cancel() {} }) }, schedule: queueMicrotask, entropy: { fill: (b: Uint8Array) => b.fill(1) } });
  build(txApp.open(host() as never, opts(0)) as TxAppServer);
  const srv = txApp.open(host() as never, { ...opts(0), faults }) as TxAppServer;
  srv.recover();
  return srv;
}

t.test('R1: PREPARED(T) with a write entry — locked by T; a torn install is settled by the ptr word', async (t) => {
  for (const [installed, ctTorn, want] of [[false, false, 0n], [true, true, TS], [true, false, TS]] as const) {
    let e!: RecordEntry;
    const srv = recovered((s) => record(s, H_PREPARED, [(e = prepareWrite(s, 0, 'new0', { installed, ctTorn }))]));
    t.equal(srv.slot(0).lock, T, 'T keeps its lock for the resolver');
    t.equal(srv.slot(0).ct, want, `ptr ${installed ? 'is' : 'is not'} T's item${ctTorn ? ' (CT torn)' : ''}: CT ${want === TS ? ':= ts' : '= oldCT'}`);
    t.equal(srv.slot(0).ptr === e.newPtr, installed);
    t.same(srv.audit(), []);
  }
});

t.test('R1 over a key locked at read time (round 1 did not raise W) — T keeps its lock, W := max(W, ts)', async (t) => {
  const srv = recovered((s) => record(s, H_PREPARED, [prepareWrite(s, 0, 'new0', { wBelow: true })]));
  t.equal(srv.slot(0).lock, T);
  t.equal(srv.slot(0).w, TS, 'W raised from the record');
  t.equal(srv.slot(0).ct, 0n, 'nothing installed');
  t.same(srv.audit(), []);
});

t.test("R1': PREPARED(T) with a read entry — W := max(W, ts)", async (t) => {
  const srv = recovered((s) => record(s, H_PREPARED, [{ key: 0, kind: ENTRY_READ, newPtr: 0, oldCt: 0n }]));
  t.equal(srv.slot(0).w, TS);
  t.equal(srv.slot(0).lock, 0n);
});

t.test("R2: PREPARED(T) over a torn body (its prepare's one FLUSH of H and body did not complete) — fenced; its lock released, its item reclaimed", async (t) => {
  const g = opts(0);
  const srv = recovered((s) => record(s, H_PREPARED, [prepareWrite(s, 0, 'new0')], true));
  t.equal(srv.record(0).h, hWord(T, H_FENCED), 'H := FENCED(T): T can never prepare here');
  t.same(srv.lastRecovery!.recordsFenced, [txName(T)]);
  t.same(srv.lastRecovery!.prepared, []);
  t.equal(srv.slot(0).lock, 0n, 'its lock released (R3)');
  t.equal(srv.slot(0).ct, 0n, 'nothing installed');
  t.equal(srv.lastRecovery!.reclaimed, g.items - g.keysPerShard, "T's new item back on the free list (R4)");
  t.same(srv.audit(), []);
  // An earlier transaction's body under T's H (the body's lines older than H's): not T's either.
  const earlier = recovered((s) => {
    const e = prepareWrite(s, 0, 'new0');
    put(s, recordOffset(s.geometry, 0) + RECORD_BODY, encodeBody({ txid: makeTxid(0, 1, 6), ts: TS - 256n, participants: BOTH, entries: [e] }));
    setH(s, hWord(T, H_PREPARED));
  });
  t.equal(earlier.record(0).h, hWord(T, H_FENCED), "another txid's body: fenced");
  // Mutant recovery-trusts-record: the H stays PREPARED over the torn body (the audit reports it).
  const mutant = recovered((s) => record(s, H_PREPARED, [prepareWrite(s, 0, 'new0')], true), { recoveryTrustsRecord: true });
  t.equal(mutant.record(0).h, hWord(T, H_PREPARED));
  t.match(mutant.audit(), [{ kind: 'record' }]);
});

t.test("R2': PREPARED(T) whose address array does not name T's durable new item — fenced (the array's line older than H's)", async (t) => {
  // The prepare chain WRITEs the addresses from the QP's scratch before its H CAS and FLUSHes them
  // with H: a crash before that FLUSH completes may leave H durable over a stale address array.
  const stale = recovered((s) => record(s, H_PREPARED, [{ ...prepareWrite(s, 0, 'new0'), newPtr: s.slot(0).ptr }]));
  t.equal(stale.record(0).h, hWord(T, H_FENCED), 'a stale address (the slot\'s old item, key 0 ts 0): fenced');
  t.equal(stale.slot(0).lock, 0n);
  t.same(stale.audit(), []);
  const torn = recovered((s) => {
    const e = prepareWrite(s, 0, 'new0');
    put(s, e.newPtr + 24, te.encode('XXXX')); // the item's value torn
    record(s, H_PREPARED, [e]);
  });
  t.equal(torn.record(0).h, hWord(T, H_FENCED), 'an address naming garbage: fenced');
  const good = recovered((s) => record(s, H_PREPARED, [prepareWrite(s, 0, 'new0')]));
  t.equal(good.record(0).h, hWord(T, H_PREPARED), 'the same record over its durable item is kept');
  t.same(good.lastRecovery!.recordsFenced, []);
  t.same(good.audit(), [], 'and audits clean');
  // Mutant recovery-trusts-record: the stale address is kept — it is the slot's own item, so R1 takes
  // it for T's install and would store CT = T's ts over an item of ts 0: recovery's slot invariant
  // stops it (docs/tx.md "Invariants").
  t.throws(() => recovered((s) => record(s, H_PREPARED, [{ ...prepareWrite(s, 0, 'new0'), newPtr: s.slot(0).ptr }]), { recoveryTrustsRecord: true }), { code: 'PMRPC_ERR_INVARIANT', message: /key 0: the slot would hold CT \d+ over item \d+, which holds key 0, ts 0/ }, 'mutant: recovery stops on the invariant');
});

t.test('R3: a lock no PREPARED record backs — released (never recorded, or decided here)', async (t) => {
  for (const st of [undefined, H_COMMITTED, H_ABORTED]) {
    const srv = recovered((s) => {
      const e = prepareWrite(s, 0, 'new0');
      if (st !== undefined) record(s, st, [e]);
    });
    t.equal(srv.slot(0).lock, 0n);
    t.equal(srv.lastRecovery!.locksReleased, 1);
  }
});

t.test('R4: the free list — arena minus slot pointers and PREPARED newPtrs', async (t) => {
  const g = opts(0);
  const orphan = recovered((s) => prepareWrite(s, 0, 'new0')); // T's item reached by nothing once its lock goes
  t.equal(orphan.lastRecovery!.reclaimed, g.items - g.keysPerShard, "every item but the installed ones, T's orphan included");
  const kept = recovered((s) => record(s, H_PREPARED, [prepareWrite(s, 0, 'new0')]));
  t.equal(kept.lastRecovery!.reachable, g.keysPerShard + 1, "the PREPARED record's newPtr is kept");
  t.equal(kept.lastRecovery!.reclaimed, g.items - g.keysPerShard - 1);
});

t.test('R5: H COMMITTED / ABORTED / FENCED / empty — final: nothing repaired', async (t) => {
  for (const st of [H_COMMITTED, H_ABORTED, H_FENCED, undefined]) {
    const srv = recovered((s) => (st === undefined ? undefined : setH(s, hWord(T, st))));
    t.equal(srv.lastRecovery!.slotsRepaired, 0);
    t.equal(srv.lastRecovery!.locksReleased, 0);
    t.equal(srv.record(0).h, st === undefined ? 0n : hWord(T, st));
  }
});

t.test('every row of TX_RESOLVER_TABLE decided a resolution in the D tests above (the correct protocol)', async (t) => {
  const seen: Record<string, number> = {};
  for (const r of resolvers) for (const [id, n] of Object.entries(r.rows)) seen[id] = (seen[id] ?? 0) + n;
  for (const r of TX_RESOLVER_TABLE) t.ok((seen[r.id] ?? 0) > 0, `row ${r.id} (${r.action}) decided ${seen[r.id] ?? 0} rounds`);
  t.same(Object.keys(seen).filter((id) => !TX_RESOLVER_TABLE.some((r) => r.id === id)), []);
});
