/**
 * PRISM-TX's local recovery of one shard as a decision table of data (docs/tx.md "Recovery of one
 * shard — decision table R"), as src/apps/pilaf/recovery.ts and src/apps/rs/recovery.ts are for
 * their apps and recovery/decision-table.ts for the rings. TxAppServer.recover() calls
 * recoverTxShard(), which walks the shard in four scopes, each row deciding by data:
 *
 * - record (per client slot c, its `H_c` and body): `h` — 'empty' (0), 'final' (COMMITTED,
 *   ABORTED or FENCED) or 'prepared'; `body` — 'ts' (a body of H's txid, crc good, whose write
 *   entries' addresses name T's own items: an item of the arena, whole, of that key and T's ts) or
 *   'ts-values' (a body of H's txid carrying its new values, crc good over them, each value an item
 *   of its entry's key and T's ts) or 'not-ts' (anything else). Rows R2 (fence), R5, R6, R6.values.
 * - entry (per entry on this shard of a PREPARED record kept by R6; write entries first, then read
 *   entries): `kind` — 'write' or 'read'; `ptr` — 'new' (the slot's ptr word is the entry's new
 *   item: T's install landed — for a record carrying values, the slot's item is whole and of the
 *   entry's key and T's ts) or 'old'; `slot` — 'settled' (the slot already holds what the entry
 *   calls for) or 'unsettled'. Rows R1.*, R1'.*.
 * - slot (per slot, after the entries): `lock` — 'none', 'backed' (the txid of the PREPARED record
 *   whose write entry holds it) or 'unbacked'. Rows R3.*.
 * - item (per item of the arena, after the free list is rebuilt): `reach` — 'reached' (a slot or a
 *   PREPARED record's new item names it, and it is whole) or 'unreached'; `mark` — 'dead' or
 *   'clear'. Rows R4.*.
 *
 * Exactly one row of its scope matches every input (test/apps/tx/recovery-table.test.ts enumerates
 * them), and every row is reached by a test that writes its state into PM by hand and reads the
 * outcome back from the bytes. Every store is a value derived from durable state that the store
 * does not change, persisted before the next (the mark clear excepted: a free item's mark is only
 * read under a crc check), so a crash anywhere in recovery recovers the same way.
 */
import { invariant, type PmemRegion } from '../../../pmem/index.js';
import { allCombinations, checkFreeLists, decideRow, matchRows, recoverFreeLists, type ArenaClass, type When } from '../../../recovery/index.js';
import type { TxFaults } from './faults.js';
import {
  checkHEdge,
  checkTxSlotWrite,
  decodeItem,
  encodeSlot,
  ENTRY_WRITE,
  H_ABORTED,
  H_FENCED,
  H_PREPARED,
  hState,
  hTxid,
  hWord,
  ITEM_BYTES,
  ITEM_MARK_WORD,
  recordOffset,
  slotOffset,
  txName,
  type RecordBody,
  type RecordEntry,
  type Slot,
  type TxGeometry,
} from './layout.js';

export type TxRecordHInput = 'empty' | 'final' | 'prepared';
export type TxRecordBodyInput = 'ts' | 'ts-values' | 'not-ts';
export type TxEntryKindInput = 'write' | 'read';
export type TxEntryPtrInput = 'new' | 'old';
export type TxEntrySlotInput = 'settled' | 'unsettled';
export type TxSlotLockInput = 'none' | 'backed' | 'unbacked';
export type TxItemReachInput = 'reached' | 'unreached';
export type TxItemMarkInput = 'dead' | 'clear';

export interface TxRecordInput {
  h: TxRecordHInput;
  body: TxRecordBodyInput;
}
export interface TxEntryInput {
  kind: TxEntryKindInput;
  ptr: TxEntryPtrInput;
  slot: TxEntrySlotInput;
}
export interface TxSlotInput {
  lock: TxSlotLockInput;
}
export interface TxItemInput {
  reach: TxItemReachInput;
  mark: TxItemMarkInput;
}

/**
 * What a row does: `keep` writes nothing; `fence` stores H := FENCED(T) (persisted); `hold-installed`
 * / `hold-not-installed` store the slot locked by T with W := max(W, ts) and CT := ts / oldCT (the
 * ptr word kept); `raise-w` stores W := ts (the rest kept); `release` stores L := 0 (the rest kept);
 * `free` puts the item on the free list; `free-clear-mark` does so and clears its dead mark.
 */
export type TxRecoveryAction = 'keep' | 'fence' | 'hold-installed' | 'hold-not-installed' | 'raise-w' | 'release' | 'free' | 'free-clear-mark';

interface RowBase {
  /** Stable name (docs/tx.md, the recovery report's row counts). */
  id: string;
  action: TxRecoveryAction;
  why: string;
}
export type TxRecordRow = RowBase & { scope: 'record'; when: When<TxRecordInput> };
export type TxEntryRow = RowBase & { scope: 'entry'; when: When<TxEntryInput> };
export type TxSlotRow = RowBase & { scope: 'slot'; when: When<TxSlotInput> };
export type TxItemRow = RowBase & { scope: 'item'; when: When<TxItemInput> };
export type TxRecoveryRow = TxRecordRow | TxEntryRow | TxSlotRow | TxItemRow;
export type TxRecoveryScope = TxRecoveryRow['scope'];

export const TX_RECORD_H_VALUES: readonly TxRecordHInput[] = Object.freeze(['empty', 'final', 'prepared']);
export const TX_RECORD_BODY_VALUES: readonly TxRecordBodyInput[] = Object.freeze(['ts', 'ts-values', 'not-ts']);
export const TX_ENTRY_KIND_VALUES: readonly TxEntryKindInput[] = Object.freeze(['write', 'read']);
export const TX_ENTRY_PTR_VALUES: readonly TxEntryPtrInput[] = Object.freeze(['new', 'old']);
export const TX_ENTRY_SLOT_VALUES: readonly TxEntrySlotInput[] = Object.freeze(['settled', 'unsettled']);
export const TX_SLOT_LOCK_VALUES: readonly TxSlotLockInput[] = Object.freeze(['none', 'backed', 'unbacked']);
export const TX_ITEM_REACH_VALUES: readonly TxItemReachInput[] = Object.freeze(['reached', 'unreached']);
export const TX_ITEM_MARK_VALUES: readonly TxItemMarkInput[] = Object.freeze(['dead', 'clear']);

export const TX_RECOVERY_TABLE: readonly TxRecoveryRow[] = Object.freeze([
  // Per record (client slot c), first: R2's fences are durable before any other row reads the records.
  {
    scope: 'record',
    id: 'R2',
    when: { h: ['prepared'], body: ['not-ts'] },
    action: 'fence',
    why: "T's prepare here never completed: its one FLUSH of H and the body did not (a crash let H's line reach PM before the body's or the address array's), so nobody counted this record — the client counts it once that FLUSH completes, a resolver once its own FLUSH of what it read does. H := FENCED(T), persisted: T can never prepare here (D3 aborts it); its locks go by R3, its item by R4",
  },
  {
    scope: 'record',
    id: 'R5',
    when: { h: ['empty', 'final'] },
    action: 'keep',
    why: "no record, or a final one (COMMITTED / ABORTED / FENCED: written only after a decision): nothing is in doubt here; the locks it left go by R3 and it reaches no item",
  },
  {
    scope: 'record',
    id: 'R6',
    when: { h: ['prepared'], body: ['ts'] },
    action: 'keep',
    why: "a whole PREPARED record of T (body of T's txid, crc good, every address naming T's own item): counted, maybe T's commit point; kept for the resolver (D) — its entries go by R1 / R1', its new items are reached (R4)",
  },
  {
    scope: 'record',
    id: 'R6.values',
    when: { h: ['prepared'], body: ['ts-values'] },
    action: 'keep',
    why: "a whole PREPARED record of T carrying its new values (crc good over them, each an item of its key and T's ts): counted, maybe T's commit point; kept for the resolver, which rolls T forward by ALLOCATEing the values from the record's bytes (D10). Its entries go by R1 / R1' (an install landed iff the slot's item is T's: its key and T's ts); it names no item, so an item round 2 ALLOCATEd and never installed is unreached (R4 frees it)",
  },
  // Per entry on this shard of a record R6 kept: write entries first, then read entries.
  {
    scope: 'entry',
    id: 'R1.installed',
    when: { kind: ['write'], ptr: ['new'], slot: ['unsettled'] },
    action: 'hold-installed',
    why: "the ptr word (one 8-byte store) is T's new item: T's install reached PM, perhaps torn (CT not with it); T passed its commit point before any install, so the slot is T's value — CT := ts, L := T (the resolver's roll forward finds its lock), W := max(W, ts)",
  },
  {
    scope: 'entry',
    id: 'R1.not-installed',
    when: { kind: ['write'], ptr: ['old'], slot: ['unsettled'] },
    action: 'hold-not-installed',
    why: "the ptr word is not T's item: T's install did not reach PM (a torn CT of it is undone), so CT := oldCT, the value T's prepare found; L := T, and W := max(W, ts) (a key T's read locked had no check in round 1 to raise it)",
  },
  {
    scope: 'entry',
    id: 'R1.kept',
    when: { kind: ['write'], slot: ['settled'] },
    action: 'keep',
    why: 'the slot already holds what the write entry calls for (locked by T, W ≥ ts, CT settled by the ptr word, bound 128): nothing to write',
  },
  {
    scope: 'entry',
    id: "R1'",
    when: { kind: ['read'], slot: ['unsettled'] },
    action: 'raise-w',
    why: "W below T's ts under a read entry: T's validation raised W to ts in round 1 and a crash lost it (or a write entry's repair came first); raise it again so that T's validation stays in force (a later writer must not commit under it)",
  },
  {
    scope: 'entry',
    id: "R1'.kept",
    when: { kind: ['read'], slot: ['settled'] },
    action: 'keep',
    why: "W ≥ T's ts under a read entry: T's validation is in force; nothing to write",
  },
  // Per slot, after every entry.
  {
    scope: 'slot',
    id: 'R3',
    when: { lock: ['unbacked'] },
    action: 'release',
    why: 'a lock no PREPARED record on this shard backs: T never reached a record here (its prepare did not land, or R2 fenced it), or T is decided here (COMMITTED / ABORTED are written before any of its locks is released): nothing needs it, L := 0',
  },
  {
    scope: 'slot',
    id: 'R3.kept',
    when: { lock: ['none', 'backed'] },
    action: 'keep',
    why: 'no lock, or the lock of the PREPARED record whose write entry holds the slot (R1 set it): the resolver needs that lock to roll T forward or back; nothing to write',
  },
  // Per item of the arena, once the free list is rebuilt (ALLOCATE refused until it is posted).
  {
    scope: 'item',
    id: 'R4',
    when: { reach: ['unreached'], mark: ['clear'] },
    action: 'free',
    why: 'neither a slot nor a PREPARED record names it (whole): nothing can read it, so it goes on the free list — an aborted or superseded value, an ALLOCATEd item never recorded, or one a round 2 ALLOCATEd from a carried value and never installed',
  },
  {
    scope: 'item',
    id: 'R4.marked',
    when: { reach: ['unreached'], mark: ['dead'] },
    action: 'free-clear-mark',
    why: "unreached and marked dead (an aborted transaction's item the sweep had not returned): free, and its mark cleared — a later owner's partly drained item must never show a dead mark",
  },
  {
    scope: 'item',
    id: 'R4.kept',
    when: { reach: ['reached'] },
    action: 'keep',
    why: "a slot's value or a PREPARED record's new item (whole): in use, on no free list",
  },
] satisfies TxRecoveryRow[]);

type RowOf<S extends TxRecoveryScope> = Extract<TxRecoveryRow, { scope: S }>;
type InputOf<S extends TxRecoveryScope> = S extends 'record' ? TxRecordInput : S extends 'entry' ? TxEntryInput : S extends 'slot' ? TxSlotInput : TxItemInput;
type Matchable<S extends TxRecoveryScope> = RowOf<S> & { readonly when: When<InputOf<S>> };

/** The rows of one scope. */
export function txRecoveryRows<S extends TxRecoveryScope>(scope: S, table: readonly TxRecoveryRow[] = TX_RECOVERY_TABLE): RowOf<S>[] {
  return table.filter((r): r is RowOf<S> => r.scope === scope);
}

/** Every row of `scope` matching `input` (the table test asserts there is exactly one for every input). */
export function matchingTxRecoveryRows<S extends TxRecoveryScope>(scope: S, input: InputOf<S>, table: readonly TxRecoveryRow[] = TX_RECOVERY_TABLE): RowOf<S>[] {
  return matchRows<InputOf<S>, Matchable<S>>(txRecoveryRows(scope, table) as Matchable<S>[], input);
}

/** The row of `scope` for `input`. Broken coverage is a pmrpc bug: an assertion. */
export function decideTxRecovery<S extends TxRecoveryScope>(scope: S, input: InputOf<S>): RowOf<S> {
  return decideRow<InputOf<S>, Matchable<S>>(`tx recovery table (${scope})`, txRecoveryRows(scope) as Matchable<S>[], input);
}

/** Every input combination of `scope` (record 3 × 3, entry 2 × 2 × 2, slot 3, item 2 × 2). */
export function allTxRecoveryInputs<S extends TxRecoveryScope>(scope: S): InputOf<S>[] {
  switch (scope) {
    case 'record':
      return allCombinations<TxRecordInput>({ h: TX_RECORD_H_VALUES, body: TX_RECORD_BODY_VALUES }) as InputOf<S>[];
    case 'entry':
      return allCombinations<TxEntryInput>({ kind: TX_ENTRY_KIND_VALUES, ptr: TX_ENTRY_PTR_VALUES, slot: TX_ENTRY_SLOT_VALUES }) as InputOf<S>[];
    case 'slot':
      return allCombinations<TxSlotInput>({ lock: TX_SLOT_LOCK_VALUES }) as InputOf<S>[];
    default:
      return allCombinations<TxItemInput>({ reach: TX_ITEM_REACH_VALUES, mark: TX_ITEM_MARK_VALUES }) as InputOf<S>[];
  }
}

/** What recovery needs of the shard (TxAppServer). */
export interface TxRecoveryHost {
  readonly region: PmemRegion;
  readonly geometry: TxGeometry;
  readonly faults: Readonly<TxFaults>;
  readonly arenaClasses: ArenaClass[];
  /** H of client slot c, and its body when H is PREPARED and the body is of H's txid. */
  record(c: number): { h: bigint; body: RecordBody | undefined };
  slot(index: number): Slot;
  /** The PREPARED records R6 keeps (txid → body), read again after R2's fences. */
  prepared(): Map<bigint, RecordBody>;
  /** The first write entry of `body` whose address does not name T's own item, or undefined. */
  badItem(body: RecordBody): unknown;
}

export interface TxRecoveryResult {
  prepared: string[];
  recordsFenced: string[];
  slotsRepaired: number;
  locksReleased: number;
  reachable: number;
  reclaimed: number;
  /** How many times each row decided (row id → count). */
  rows: Record<string, number>;
  /** The rebuilt free list (item size → items), checked (checkFreeLists), to be posted. */
  free: Map<number, number[]>;
}

/**
 * PMRPC_ERR_INVARIANT unless the PREPARED records R6 keeps can be repaired from (checked before any
 * slot is stored): every entry on this shard names a key of the slot table; a write entry's oldCT is
 * below T's ts (T's prepare found a CT its OCC ts is above: the hold's CT := oldCT never moves CT to
 * a later value than T's); and no slot is held by the write entries of two transactions (the lock of
 * one would be stored over the other's, leaving a PREPARED record whose lock is gone).
 */
export function checkTxPreparedRecords(g: TxGeometry, prepared: ReadonlyMap<bigint, RecordBody>): void {
  const holder = new Map<number, bigint>();
  for (const [txid, body] of prepared) {
    for (const e of body.entries) {
      if (e.key % g.shards !== g.shard) continue;
      const index = Math.floor(e.key / g.shards);
      invariant(Number.isSafeInteger(e.key) && e.key >= 0 && index < g.keys, () => `${txName(txid)}'s PREPARED record names key ${e.key}, outside shard ${g.shard}'s slot table (${g.keys} slots)`);
      if (e.kind !== ENTRY_WRITE) continue;
      invariant(e.oldCt < body.ts, () => `${txName(txid)}'s PREPARED record writes key ${e.key} over CT ${e.oldCt}, not below its ts ${body.ts}`);
      const other = holder.get(index);
      invariant(other === undefined || other === txid, () => `key ${e.key} is held by the PREPARED records of both ${txName(other!)} and ${txName(txid)}`);
      holder.set(index, txid);
    }
  }
}

/** Whether `ptr` is an item of the arena, whole, of `key` and timestamp `ts`: T's own value (a record carrying values names no address). */
function isTxItem(host: Pick<TxRecoveryHost, 'region' | 'geometry'>, ptr: number, key: number, ts: bigint): boolean {
  const g = host.geometry;
  const off = ptr - g.arenaOffset;
  if (!Number.isSafeInteger(ptr) || off < 0 || off >= g.items * ITEM_BYTES || off % ITEM_BYTES !== 0) return false;
  const it = decodeItem(host.region.load(ptr, ITEM_BYTES));
  return it !== undefined && it.key === key && it.ts === ts;
}

/** The slot an entry row stores (undefined: `keep`). */
function entryTarget(action: TxRecoveryAction, s: Slot, txid: bigint, ts: bigint, e: RecordEntry): Slot | undefined {
  const w = s.w > ts ? s.w : ts;
  switch (action) {
    case 'hold-installed':
      return { w, ct: ts, lock: txid, ptr: s.ptr, bound: ITEM_BYTES };
    case 'hold-not-installed':
      return { w, ct: e.oldCt, lock: txid, ptr: s.ptr, bound: ITEM_BYTES };
    case 'raise-w':
      return { ...s, w };
    default:
      return undefined;
  }
}

/**
 * Recovery's store of slot `index`, which held `old`: checked first — checkTxSlotWrite (a pointer at
 * an item of the arena that describes itself as the slot's value), and a repair never moves the ptr
 * word (only an install does: it is the truth R1 reads) nor lowers W (a validation raised it).
 */
export function storeRecoverySlot(host: Pick<TxRecoveryHost, 'region' | 'geometry'>, index: number, old: Slot, s: Slot): void {
  const key = index * host.geometry.shards + host.geometry.shard;
  invariant(s.ptr === old.ptr, () => `key ${key}: recovery would move the slot's pointer from ${old.ptr} to ${s.ptr}`);
  invariant(s.w >= old.w, () => `key ${key}: recovery would lower W from ${old.w} to ${s.w}`);
  checkTxSlotWrite(host.geometry, index, s, (p, len) => host.region.load(p, len));
  const at = slotOffset(host.geometry, index);
  host.region.store(at, encodeSlot(s).subarray(0, 40));
  host.region.persist(at, 40);
}

/**
 * Local recovery (rows R1–R6): idempotent, and a crash anywhere in it leaves an image that recovers
 * the same way. ALLOCATE is refused by the caller; the caller posts `free`.
 */
export function recoverTxShard(host: TxRecoveryHost): TxRecoveryResult {
  const g = host.geometry;
  const region = host.region;
  const rows: Record<string, number> = {};
  const count = (id: string): void => {
    rows[id] = (rows[id] ?? 0) + 1;
  };
  let repaired = 0;
  let released = 0;
  // Mutant recovery-ignores-records: PREPARED records are dropped here (their locks go by R3).
  if (host.faults.recoveryIgnoresRecords) {
    for (let c = 0; c < g.clients; c++) {
      const at = recordOffset(g, c);
      const h = region.loadU64(at);
      if (h !== 0n && hState(h) === H_PREPARED) {
        checkHEdge(h, hWord(hTxid(h), H_ABORTED), `recovery, client ${c}`);
        region.storeU64(at, hWord(hTxid(h), H_ABORTED));
        region.persist(at, 8);
      }
    }
  }
  // Records (R2, R5, R6): R2's fences are durable before anything below reads the records.
  const fenced: string[] = [];
  for (let c = 0; c < g.clients; c++) {
    const r = host.record(c);
    const h: TxRecordHInput = r.h === 0n ? 'empty' : hState(r.h) === H_PREPARED ? 'prepared' : 'final';
    // Mutant recovery-trusts-record: a PREPARED H over a body of its txid is taken as whole (its addresses unchecked), a torn one is left PREPARED.
    const whole = r.body !== undefined && (host.faults.recoveryTrustsRecord || host.badItem(r.body) === undefined);
    const row = decideTxRecovery('record', { h, body: h === 'prepared' && whole ? (r.body!.values === true ? 'ts-values' : 'ts') : 'not-ts' });
    count(row.id);
    if (row.action !== 'fence' || host.faults.recoveryTrustsRecord) continue;
    const at = recordOffset(g, c);
    checkHEdge(r.h, hWord(hTxid(r.h), H_FENCED), `recovery (R2), client ${c}`);
    region.storeU64(at, hWord(hTxid(r.h), H_FENCED));
    region.persist(at, 8);
    fenced.push(txName(hTxid(r.h)));
  }
  const prepared = host.prepared();
  checkTxPreparedRecords(g, prepared);
  // Entries (R1, R1'): write entries first, read entries after. A reader's record and a later
  // writer's (its ts above the W the read raised) may both be PREPARED on one key, the writer's
  // install torn; the read entry's store (W raised) keeps CT and ptr, so it waits for the write
  // entry's repair.
  const held = new Map<number, bigint>();
  for (const pass of ['write', 'read'] as const) {
    for (const [txid, body] of prepared) {
      for (const e of body.entries) {
        const kind = e.kind === ENTRY_WRITE ? 'write' : 'read';
        if (e.key % g.shards !== g.shard || kind !== pass) continue;
        const index = Math.floor(e.key / g.shards);
        const s = host.slot(index);
        // 'new': the slot's ptr word is T's item — the record's address, or (a record carrying values)
        // an item of the arena, whole, of the entry's key and T's ts (one (key, ts) names one value).
        const ptr = kind === 'write' && (body.values === true ? isTxItem(host, s.ptr, e.key, body.ts) : s.ptr === e.newPtr) ? 'new' : 'old';
        if (kind === 'write') held.set(index, txid);
        // What the entry calls for, compared with the slot (settled: nothing to write).
        const want = entryTarget(kind === 'read' ? 'raise-w' : ptr === 'new' ? 'hold-installed' : 'hold-not-installed', s, txid, body.ts, e)!;
        const settled = kind === 'read' ? s.w >= body.ts : want.w === s.w && want.ct === s.ct && want.lock === s.lock && s.bound === ITEM_BYTES;
        const row = decideTxRecovery('entry', { kind, ptr, slot: settled ? 'settled' : 'unsettled' });
        count(row.id);
        const next = entryTarget(row.action, s, txid, body.ts, e);
        if (next === undefined) continue;
        storeRecoverySlot(host, index, s, next);
        repaired++;
      }
    }
  }
  // Slots (R3).
  for (let i = 0; i < g.keys; i++) {
    const s = host.slot(i);
    const row = decideTxRecovery('slot', { lock: s.lock === 0n ? 'none' : held.get(i) === s.lock ? 'backed' : 'unbacked' });
    count(row.id);
    if (row.action !== 'release') continue;
    storeRecoverySlot(host, i, s, { ...s, lock: 0n });
    released++;
  }
  // Items (R4): the free list is everything that neither a slot nor a PREPARED record reaches.
  const result = recoverFreeLists({
    classes: host.arenaClasses,
    reach: (visit) => {
      for (let i = 0; i < g.keys; i++) visit(host.slot(i).ptr);
      for (const body of prepared.values()) if (body.values !== true) for (const e of body.entries) if (e.kind === ENTRY_WRITE && e.key % g.shards === g.shard) visit(e.newPtr);
    },
    checkObject: (ptr) => decodeItem(region.load(ptr, ITEM_BYTES)) !== undefined,
  });
  // Nothing a slot or a PREPARED record reaches goes on the free list (O(items), once per
  // recovery): checked before any store the list decides (the mark clears) and before it is posted.
  checkFreeLists(host.arenaClasses, result.free, (p) => result.reachable.has(p));
  const onList = new Set(result.free.get(ITEM_BYTES) ?? []);
  for (let i = 0; i < g.items; i++) {
    const ptr = g.arenaOffset + i * ITEM_BYTES;
    const word = region.loadU64(ptr + ITEM_MARK_WORD);
    const row = decideTxRecovery('item', { reach: result.reachable.has(ptr) ? 'reached' : 'unreached', mark: word >> 32n !== 0n ? 'dead' : 'clear' });
    count(row.id);
    // The row and the rebuilt list agree on every item (the list is what gets posted).
    invariant((row.action !== 'keep') === onList.has(ptr), () => `item ${ptr}: row ${row.id} (${row.action}) but the rebuilt free list ${onList.has(ptr) ? 'holds' : 'does not hold'} it`);
    if (row.action === 'free-clear-mark') region.storeU64(ptr + ITEM_MARK_WORD, word & 0xffffffffn);
  }
  return {
    prepared: [...prepared.keys()].map(txName),
    recordsFenced: fenced,
    slotsRepaired: repaired,
    locksReleased: released,
    reachable: result.reachable.size,
    reclaimed: result.reclaimed,
    rows,
    free: result.free,
  };
}
