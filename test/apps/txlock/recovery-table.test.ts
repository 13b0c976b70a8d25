// The lock-based baselines' recovery as data (TXLOCK_RECOVERY_TABLE, src/apps/txlock/recovery.ts;
// docs/tx.md "Baselines"): every input of every scope matches exactly one row; every row is built in
// PM by hand (H words, log bodies, lock and version words) on a txfarm and a txford shard, recovered,
// and its outcome read back from the bytes — in the cache and in what a crash keeps — with every
// other byte of the region unchanged; a second recovery of the recovered image writes nothing. The
// last test fails if some row was never exercised.
import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import { createPrng, PmemRegion, seededEntropy, VirtualClock } from '../../../pmem/index.js';
import { decideRow } from '../../../recovery/index.js';
import { Rnic } from '../../../flush/index.js';
import { makeTxid, txName } from '../../../src/apps/tx/index.js';
import {
  allTxLockRecoveryInputs,
  checkTxLockRedoRecords,
  decideTxLockRecovery,
  matchingTxLockRecoveryRows,
  TXLOCK_RECOVERY_TABLE,
  txfarmApp,
  txfordApp,
  txLockRecoveryRows,
  type TxLockAppServer,
  type TxLockProtocol,
  type TxLockRecoveryScope,
} from '../../../src/apps/txlock/index.js';
import { decodeLockItem, encodeLockItem, encodeLogBody, ITEM_BYTES, L_ABORTED, L_COMMITTED, L_LOGGED, LOG_BODY, logAt, lWord, OBJ_ITEM, objAt, type LogEntry } from '../../../src/apps/txlock/layout.js';

const te = new TextEncoder();
const SCOPES: TxLockRecoveryScope[] = ['log', 'entry', 'object'];
const INVARIANT = { code: 'PMRPC_ERR_INVARIANT' };

t.test('every input of every scope matches exactly one row; every row matches some input; ids unique, each with a why', async (t) => {
  const ids = new Set<string>();
  for (const r of TXLOCK_RECOVERY_TABLE) {
    t.notOk(ids.has(r.id), `id ${r.id} once`);
    ids.add(r.id);
    t.ok(r.why.length > 20, `${r.id} says why`);
  }
  t.ok(Object.isFrozen(TXLOCK_RECOVERY_TABLE));
  for (const scope of SCOPES) {
    const used = new Set<string>();
    for (const input of allTxLockRecoveryInputs(scope)) {
      const rows = matchingTxLockRecoveryRows(scope, input as never);
      t.equal(rows.length, 1, `${scope} ${JSON.stringify(input)}: ${rows.map((r) => r.id).join(', ') || 'no row'}`);
      for (const r of rows) used.add(r.id);
    }
    t.same([...used].sort(), txLockRecoveryRows(scope).map((r) => r.id).sort(), `${scope}: no row unreachable by its inputs`);
  }
  t.equal(allTxLockRecoveryInputs('log').length, 4 * 2 * 2);
  t.equal(allTxLockRecoveryInputs('entry').length, 2 * 2);
  t.equal(allTxLockRecoveryInputs('object').length, 3);
  t.same(new Set(TXLOCK_RECOVERY_TABLE.map((r) => r.action)), new Set(['keep', 'hold', 'redo', 'apply', 'release']), 'every action is used');
  // Only a COMMITTED record reads the protocol.
  for (const input of allTxLockRecoveryInputs('log')) {
    if (input.h === 'committed' && input.body === 'whole') continue;
    t.equal(decideTxLockRecovery('log', input), decideTxLockRecovery('log', { ...input, protocol: input.protocol === 'farm' ? 'ford' : 'farm' }), `${JSON.stringify(input)}: the protocol does not matter`);
  }
});

t.test('a hole in the table is an assertion, not a silent choice', async (t) => {
  const holed = TXLOCK_RECOVERY_TABLE.filter((r) => r.id !== 'release');
  t.same(matchingTxLockRecoveryRows('object', { lock: 'unbacked' }, holed), [], 'no row for an unbacked lock');
  t.throws(() => decideRow('holed object table', holed.filter((r) => r.scope === 'object'), { lock: 'unbacked' }), { ...INVARIANT, message: /0 rows match/ });
  t.equal(decideTxLockRecovery('object', { lock: 'unbacked' }).id, 'release', 'the real table has its row');
  t.equal(matchingTxLockRecoveryRows('object', { lock: 'free' }, [...TXLOCK_RECOVERY_TABLE, TXLOCK_RECOVERY_TABLE.find((r) => r.id === 'free')!]).length, 2, 'an overlap is seen');
});

t.test('docs/tx.md "Baselines" names every row, in the table\'s order', async (t) => {
  const all = readFileSync(new URL('../../../docs/tx.md', import.meta.url), 'utf8');
  const from = all.indexOf('\n## Baselines');
  t.ok(from >= 0, 'the Baselines section');
  const doc = all.slice(from, all.indexOf('\n## ', from + 1));
  const ids = [...doc.matchAll(/^\| (log|entry|object) \| `([a-z-]+)` \|/gm)].map((m) => `${m[1]}:${m[2]}`);
  t.same(ids, TXLOCK_RECOVERY_TABLE.map((r) => `${r.scope}:${r.id}`));
});

// ---- Every row built in PM -------------------------------------------------------------------

// Two shards; shard 0 holds keys 0, 2, 4, 6 (objects 0–3); six client log slots.
const OPTS = { shard: 0, shards: 2, keysPerShard: 4, clients: 6, value: 'balance' as const };
const T1 = makeTxid(1, 1, 1);
const T2 = makeTxid(2, 1, 1);
const T3 = makeTxid(3, 1, 1);
const T4 = makeTxid(4, 1, 1);
const T5 = makeTxid(5, 1, 1);
const OLD = makeTxid(3, 1, 0);

const nics: Rnic[] = [];
const servers: TxLockAppServer[] = [];
t.teardown(() => {
  for (const s of servers) s.close();
  for (const n of nics) n.close();
});
const appOf = (p: TxLockProtocol) => (p === 'farm' ? txfarmApp : txfordApp);
function open(region: PmemRegion, protocol: TxLockProtocol): TxLockAppServer {
  const nic = new Rnic(region, { entropy: seededEntropy(createPrng(4)) });
  nics.push(nic);
  const s = appOf(protocol).open({ region, nic, clock: new VirtualClock(), schedule: queueMicrotask, entropy: seededEntropy(createPrng(5)) }, appOf(protocol).resolveOptions(OPTS)) as TxLockAppServer;
  servers.push(s);
  return s;
}
/** Durable stores, as a crash image holds them. */
function put(region: PmemRegion, at: number, b: Uint8Array): void {
  region.store(at, b);
  region.persist(at, b.length);
}
function putU64(region: PmemRegion, at: number, v: bigint): void {
  region.storeU64(at, v);
  region.persist(at, 8);
}
const val = (s: string): Uint8Array => te.encode(s);

interface Built {
  region: PmemRegion;
  before: Uint8Array;
  /** key → object offset. */
  obj: (key: number) => number;
}

/**
 * One state per row, written by hand into shard 0 (client slot / key: state → row):
 *   log 0    H = 0                                                        → no-record
 *   log 1    LOGGED(T1), whole, writes key 0 (locked by T1)              → logged;   key 0 → in-doubt
 *   log 2    COMMITTED(T2), whole, writes keys 2, 4, 6:                   → farm-committed / ford-committed
 *              key 2 locked by T2 at the version expected (FaRM: not      → (farm) apply;          key 2 → free (farm) / release (ford)
 *                applied; FORD: T2's value in place, version + 1)
 *              key 4 locked by T2, T2's value and version in place        → (farm) applied-locked; key 4 → release
 *              key 6 free, T2's value and version in place                → (farm) applied;        key 6 → free
 *   log 3    LOGGED(T3) over the body of the slot's earlier transaction   → torn-record
 *   log 4    ABORTED(T4), whole, writes key 6                             → aborted
 *   log 5    H = T5·4 + 0 (no state) over T5's whole body                → no-record
 */
function build(protocol: TxLockProtocol): Built {
  const app = appOf(protocol);
  const o = app.resolveOptions(OPTS);
  const region = PmemRegion.createInMemory(app.minRegionBytes(o) + 4096, { tracing: true, entropy: seededEntropy(createPrng(3)) });
  app.format(region, o);
  const probe = open(region, protocol);
  const g = probe.geometry;
  probe.close();
  const obj = (key: number): number => objAt(g, key);
  const log = (c: number, txid: bigint, bodyTxid: bigint, state: bigint, entries: LogEntry[]): void => {
    put(region, logAt(g, c) + LOG_BODY, encodeLogBody({ txid: bodyTxid, participants: 0b11n, entries }));
    putU64(region, logAt(g, c), lWord(txid, state));
  };
  const lock = (key: number, txid: bigint): void => putU64(region, obj(key), txid);
  const version = (key: number, v: bigint): void => putU64(region, obj(key) + 8, v);
  log(1, T1, T1, L_LOGGED, [{ key: 0, version: 0n, value: val('t1') }]);
  lock(0, T1);
  log(2, T2, T2, L_COMMITTED, [
    { key: 2, version: 0n, value: val('t2-key2') },
    { key: 4, version: 0n, value: val('t2-key4') },
    { key: 6, version: 0n, value: val('t2-key6') },
  ]);
  /** T2's new value of `key` in place (FaRM: the CPU's apply; FORD: R2's WRITEs, FLUSHed before COMMITTED). */
  const inPlace = (key: number): void => {
    put(region, obj(key) + OBJ_ITEM, encodeLockItem({ version: 1n, key, value: val(`t2-key${key}`) }));
    version(key, 1n);
  };
  lock(2, T2);
  if (protocol === 'ford') inPlace(2);
  lock(4, T2);
  inPlace(4);
  inPlace(6);
  log(3, T3, OLD, L_LOGGED, [{ key: 2, version: 0n, value: val('t3') }]);
  log(4, T4, T4, L_ABORTED, [{ key: 6, version: 0n, value: val('t4') }]);
  log(5, T5, T5, 0n, [{ key: 6, version: 0n, value: val('t5') }]);
  return { region, before: region.load(0, region.sizeBytes), obj };
}

/** Every byte of `now` outside `ranges` ([at, len]) equals `before`. */
function unchangedBut(t: Test, before: Uint8Array, now: Uint8Array, ranges: Array<[number, number]>, what: string): void {
  const diff: number[] = [];
  for (let i = 0; i < now.length; i++) if (now[i] !== before[i] && !ranges.some(([at, len]) => i >= at && i < at + len)) diff.push(i);
  t.same(diff.slice(0, 8), [], `${what}: no other byte changed`);
}

const seen = new Map<string, number>();

for (const protocol of ['farm', 'ford'] as const) {
  t.test(`tx${protocol}: every row built in PM — recovery writes what its row says, reports it, and a second recovery writes nothing`, async (t) => {
    const { region, before, obj } = build(protocol);
    const s = open(region, protocol);
    const r = s.recover();
    for (const [id, n] of Object.entries(r.rows)) {
      const key = `${TXLOCK_RECOVERY_TABLE.find((x) => x.id === id)!.scope}:${id}`;
      seen.set(key, (seen.get(key) ?? 0) + n);
    }
    const media = PmemRegion.openImage(region.crashState().media, { tracing: false });
    const lockOf = (p: PmemRegion, key: number): bigint => p.loadU64(obj(key));
    const versionOf = (p: PmemRegion, key: number): bigint => p.loadU64(obj(key) + 8);
    const item = (p: PmemRegion, key: number) => decodeLockItem(p.load(obj(key) + OBJ_ITEM, ITEM_BYTES));
    if (protocol === 'farm') {
      t.same(r.rows, { 'no-record': 2, logged: 1, 'farm-committed': 1, apply: 1, 'applied-locked': 1, applied: 1, 'torn-record': 1, aborted: 1, 'in-doubt': 1, free: 2, release: 1 });
      t.match(r, { app: 'txfarm', shard: 0, redone: 1, locksReleased: 1, inDoubt: [txName(T1)] });
      for (const p of [region, media]) {
        const where = p === region ? 'cache' : 'media';
        t.same([lockOf(p, 2), versionOf(p, 2), item(p, 2)], [0n, 1n, { version: 1n, key: 2, value: val('t2-key2') }], `${where}: key 2 applied (item, version + 1, unlocked)`);
        t.same([lockOf(p, 4), versionOf(p, 4)], [0n, 1n], `${where}: key 4 released, its version kept`);
        t.equal(lockOf(p, 0), T1, `${where}: key 0 stays locked by the in-doubt T1`);
      }
      unchangedBut(t, before, region.load(0, region.sizeBytes), [[obj(2), 192], [obj(4), 8]], 'farm');
    } else {
      t.same(r.rows, { 'no-record': 2, logged: 1, 'ford-committed': 1, 'torn-record': 1, aborted: 1, 'in-doubt': 1, free: 1, release: 2 });
      t.match(r, { app: 'txford', shard: 0, redone: 0, locksReleased: 2, inDoubt: [txName(T1)] });
      for (const p of [region, media]) {
        const where = p === region ? 'cache' : 'media';
        t.same([lockOf(p, 2), versionOf(p, 2), item(p, 2)], [0n, 1n, { version: 1n, key: 2, value: val('t2-key2') }], `${where}: key 2 released, nothing applied (FORD's data is in place already)`);
        t.same([lockOf(p, 4), versionOf(p, 4)], [0n, 1n], `${where}: key 4 released`);
        t.equal(lockOf(p, 0), T1, `${where}: key 0 stays locked by the in-doubt T1`);
      }
      unchangedBut(t, before, region.load(0, region.sizeBytes), [[obj(2), 8], [obj(4), 8]], 'ford');
    }
    t.same(s.audit(), [], 'every object sound');
    t.same(s.recover(), r, 'a second recover() returns the first report');
    s.close();

    // Recovery of the recovered image: every lock it released stays free, nothing is written.
    const after = region.load(0, region.sizeBytes);
    const again = open(region, protocol).recover();
    t.same(again.rows, protocol === 'farm' ? { 'no-record': 2, logged: 1, 'farm-committed': 1, applied: 3, 'torn-record': 1, aborted: 1, 'in-doubt': 1, free: 3 } : { 'no-record': 2, logged: 1, 'ford-committed': 1, 'torn-record': 1, aborted: 1, 'in-doubt': 1, free: 3 });
    t.match(again, { redone: 0, locksReleased: 0, inDoubt: [txName(T1)] });
    t.same(region.load(0, region.sizeBytes), after, 'the region is unchanged');
  });
}

t.test('a COMMITTED redo record naming a key outside the object table stops recovery (PMRPC_ERR_INVARIANT), nothing written', async (t) => {
  const app = txfarmApp;
  const o = app.resolveOptions(OPTS);
  const region = PmemRegion.createInMemory(app.minRegionBytes(o) + 4096);
  app.format(region, o);
  const probe = open(region, 'farm');
  const g = probe.geometry;
  probe.close();
  // Client slot 0: a whole COMMITTED record applying key 2 (in the table) first; slot 1: one naming
  // key 8 (shard 0's object index 4 of 4: past the table, over the logs).
  put(region, logAt(g, 0) + LOG_BODY, encodeLogBody({ txid: T1, participants: 1n, entries: [{ key: 2, version: 0n, value: val('ok') }] }));
  putU64(region, logAt(g, 0), lWord(T1, L_COMMITTED));
  putU64(region, objAt(g, 2), T1);
  put(region, logAt(g, 1) + LOG_BODY, encodeLogBody({ txid: T2, participants: 1n, entries: [{ key: 8, version: 0n, value: val('bad') }] }));
  putU64(region, logAt(g, 1), lWord(T2, L_COMMITTED));
  const before = region.load(0, region.sizeBytes);
  t.throws(() => open(region, 'farm').recover(), { ...INVARIANT, message: /T2\.1\.1's COMMITTED redo record names key 8, outside shard 0's object table \(4 objects\)/ });
  t.same(region.load(0, region.sizeBytes), before, 'every byte unchanged: not even the sound record was applied');
  t.throws(() => checkTxLockRedoRecords({ shard: 1, shards: 2, keys: 4 }, [{ txid: T1, participants: 1n, entries: [{ key: 9, version: 0n, value: val('x') }] }]), INVARIANT, 'shard 1: key 9 is index 4');
  t.doesNotThrow(() => checkTxLockRedoRecords({ shard: 1, shards: 2, keys: 4 }, [{ txid: T1, participants: 1n, entries: [{ key: 7, version: 0n, value: val('x') }, { key: 8, version: 0n, value: val('x') }] }]), "index 3, and another shard's key");
});

t.test('coverage: every row of TXLOCK_RECOVERY_TABLE was decided by a state built in PM', async (t) => {
  for (const r of TXLOCK_RECOVERY_TABLE) t.ok((seen.get(`${r.scope}:${r.id}`) ?? 0) > 0, `${r.scope} row ${r.id} exercised`);
});
