/**
 * PRISM-TX's durable layout on one shard (docs/tx.md has the picture and the decision table). All
 * integers little-endian. One shard's TX area at `base` (64-byte aligned), registered as one MR:
 *
 *   header   [base, base+64)           magic, version, shard, shards, keys, clients, crc
 *   slots    keys × 64 B               one line per object: W | CT | L | ptr | bound
 *   records  clients × 512 B           one prepare record per client slot: H line, then the body
 *   arena    items × ITEM_BYTES        ALLOCATEd values (one size class)
 *
 * Object slot (one cache line):
 *   +0  W   u64  the highest timestamp any validated reader or prepared writer used (max(RT, CT))
 *   +8  CT  u64  commit timestamp of the installed value (= the item's ts)
 *   +16 L   u64  locker txid (0: free)
 *   +24 ptr u64  the installed item   +32 bound u64 (ITEM_BYTES)   (⟨ptr, bound⟩ for bounded READs)
 * The CASes the protocol needs each fit one window: validation `lt` over [W CT L] (24 B: L = 0,
 * CT = seen, W < ts — one ordered number, L most significant), prepare = 8-byte CAS L 0 → T then
 * `lt` over [W CT] (16 B), install `eq` L = T swapping CT and ptr (32 B window [W CT L ptr]).
 *
 * Record of client slot c (512 B): +0 H u64 = txid·4 + state (state 1 PREPARED, 2 COMMITTED,
 * 3 ABORTED, 0 FENCED — a txid with state 0 is a fence; H = 0: never used), then on the next line
 * the body: +64 crc32c u32 over [68, 96 + 16·n) | +68 n u32 | +72 txid u64 | +80 ts u64 |
 * +88 participants u64 (bit mask of shards) | +96 n entries of 16 B: key u32, kind u32 (1 write,
 * 2 read), oldCT u64 | then one newPtr u64 per write entry, in entry order (the new items'
 * addresses: the NIC writes them from its scratch, where the prepare chain's ALLOCATEs put them,
 * so the crc does not cover them; the chain FLUSHes them with the body, before H). Or, with the
 * flag BODY_VALUES in the n word (bit 31: "values carried"), the new values themselves: after the
 * entries, each write entry's item (its encodeItem bytes: crc u32, len u32, ts, key, mark, value),
 * in entry order, and the crc covers them too — the whole body comes from the client (docs/tx.md
 * "New values in the record"); round 2 ALLOCATEs them.
 *
 * Item (ITEM_BYTES): +0 crc32c u32 over [4, 24 + len) | +4 len u32 | +8 ts u64 | +16 key u32 |
 * +20 mark u32 (0; ITEM_DEAD once its transaction's abort is decided and durable: the shard CPU's
 * sweep returns it to the free list; the crc covers it, so a dead item never decodes) | +24 value.
 */
import { AREA_MAGIC } from '../index.js';
import { crc32c, defineErrorCodes, invariant, PmrpcError, type ErrorCodesOf } from '../../../pmem/index.js';
import type { TxFaults } from './faults.js';

export const TX_MAGIC = AREA_MAGIC.tx; // 'RMSPTX01'
export const TX_LAYOUT_VERSION = 2;
export const TX_HEADER_BYTES = 64;
export const SLOT_BYTES = 64;
export const RECORD_BYTES = 512;
export const RECORD_BODY = 64;
export const ENTRY_BYTES = 16;
/** Bytes of a write entry's new-item pointer (the pointer array after the entries). */
export const ENTRY_PTR_BYTES = 8;
export const ENTRIES_MAX = Math.floor((RECORD_BYTES - RECORD_BODY - 32) / (ENTRY_BYTES + ENTRY_PTR_BYTES));
export const ITEM_BYTES = 128;
export const ITEM_HEADER_BYTES = 24;
export const VALUE_BYTES_MAX = ITEM_BYTES - ITEM_HEADER_BYTES;
/** The item word the dead mark lives in: key u32 | mark u32 (docs/tx.md, "Reclamation"). */
export const ITEM_MARK_WORD = 16;
/** The mark of an item whose transaction aborted (decided and durable): the sweep may return it. */
export const ITEM_DEAD = 0xdeadn;
export const SHARDS_MAX = 32;
export const CLIENTS_MAX = 255;

export const H_FENCED = 0n;
export const H_PREPARED = 1n;
export const H_COMMITTED = 2n;
export const H_ABORTED = 3n;

export const TxErrorCodes = defineErrorCodes('tx', {
  /** The region holds no TX area at this offset, or its header is damaged. */
  NOT_FORMATTED: 'PMRPC_ERR_TX_NOT_FORMATTED',
  /** format() found a TX area already there: it is never overwritten. */
  ALREADY_FORMATTED: 'PMRPC_ERR_TX_ALREADY_FORMATTED',
  /** The TX layout does not fit in the region. */
  LAYOUT_TOO_LARGE: 'PMRPC_ERR_TX_LAYOUT_TOO_LARGE',
  /** A transaction lost a conflict (a prepare or validation CAS did not swap, or a fence won): aborted. */
  CONFLICT: 'PMRPC_ERR_TX_CONFLICT',
  /** A participant shard did not answer (link closed or QP error): the transaction was aborted or is left to resolution. */
  SHARD_UNAVAILABLE: 'PMRPC_ERR_TX_SHARD_UNAVAILABLE',
  /**
   * A participant's arena had no free item for the transaction's new values (the prepare chain's
   * ALLOCATE found the free list empty; the rest of that chain is skipped): aborted before the
   * commit point, rolled back where it prepared. Live reclamation refills it as commits supersede
   * values and aborted transactions' items come back; retry, or give the shard more items (txItems).
   */
  ARENA_FULL: 'PMRPC_ERR_TX_ARENA_FULL',
  /** A key that is not an integer in [0, shards × keysPerShard): no shard holds it (TxClient.read / write). */
  BAD_KEY: 'PMRPC_ERR_TX_BAD_KEY',
  /** A value longer than the item holds, or a transaction touching more keys on one shard than a record lists. */
  TOO_LARGE: 'PMRPC_ERR_TX_TOO_LARGE',
  /** An item failed its checksum (or names another key) where an installed value should be. */
  CORRUPT: 'PMRPC_ERR_TX_CORRUPT',
  /** A TxClient call out of order (read after commit, commit twice, begin while a transaction is open). */
  BAD_STATE: 'PMRPC_ERR_TX_BAD_STATE',
  /** The outcome of a transaction could not be settled within the resolver's bound (a shard stayed down). */
  UNRESOLVED: 'PMRPC_ERR_TX_UNRESOLVED',
  /**
   * A client slot's incarnation is in use or was used already: a shard's record of the slot holds
   * a transaction of this incarnation (or a later one) that this client did not run — two clients
   * on one slot, or an incarnation reused by hand. Connect again (connectTxCluster allocates the
   * next incarnation), or use another client slot.
   */
  STALE_INCARNATION: 'PMRPC_ERR_TX_STALE_INCARNATION',
  /** open() of a shard file whose header names another shard index or shard count than the options (a cluster file that disagrees with its PM files). */
  SHARD_MISMATCH: 'PMRPC_ERR_TX_SHARD_MISMATCH',
});

declare module '../../../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof TxErrorCodes> {}
}

export interface TxGeometry {
  base: number;
  shard: number;
  shards: number;
  keys: number;
  clients: number;
  items: number;
  slotsOffset: number;
  recordsOffset: number;
  arenaOffset: number;
  totalBytes: number;
}

export function computeTxGeometry(base: number, shard: number, shards: number, keys: number, clients: number, items: number): TxGeometry {
  const slotsOffset = base + TX_HEADER_BYTES;
  const recordsOffset = slotsOffset + keys * SLOT_BYTES;
  const arenaOffset = recordsOffset + clients * RECORD_BYTES;
  const end = arenaOffset + items * ITEM_BYTES;
  return { base, shard, shards, keys, clients, items, slotsOffset, recordsOffset, arenaOffset, totalBytes: end - base };
}

export function encodeTxHeader(g: TxGeometry): Uint8Array {
  const b = new Uint8Array(TX_HEADER_BYTES);
  const dv = new DataView(b.buffer);
  dv.setBigUint64(0, TX_MAGIC, true);
  dv.setUint32(8, TX_LAYOUT_VERSION, true);
  dv.setUint32(12, g.shard, true);
  dv.setUint32(16, g.shards, true);
  dv.setUint32(20, g.keys, true);
  dv.setUint32(24, g.clients, true);
  dv.setUint32(28, g.items, true);
  dv.setUint32(32, crc32c(b.subarray(0, 32)), true);
  return b;
}

export function decodeTxHeader(b: Uint8Array, base: number): TxGeometry {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (dv.getBigUint64(0, true) !== TX_MAGIC || dv.getUint32(32, true) !== crc32c(b.subarray(0, 32)) || dv.getUint32(8, true) !== TX_LAYOUT_VERSION) {
    throw new PmrpcError(TxErrorCodes.NOT_FORMATTED, `no valid TX header at ${base}`);
  }
  return computeTxGeometry(base, dv.getUint32(12, true), dv.getUint32(16, true), dv.getUint32(20, true), dv.getUint32(24, true), dv.getUint32(28, true));
}

export interface Slot {
  w: bigint;
  ct: bigint;
  lock: bigint;
  ptr: number;
  bound: number;
}

export function decodeSlot(b: Uint8Array): Slot {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  return { w: dv.getBigUint64(0, true), ct: dv.getBigUint64(8, true), lock: dv.getBigUint64(16, true), ptr: Number(dv.getBigUint64(24, true)), bound: Number(dv.getBigUint64(32, true)) };
}

export function encodeSlot(s: Slot): Uint8Array {
  const b = new Uint8Array(SLOT_BYTES);
  const dv = new DataView(b.buffer);
  dv.setBigUint64(0, s.w, true);
  dv.setBigUint64(8, s.ct, true);
  dv.setBigUint64(16, s.lock, true);
  dv.setBigUint64(24, BigInt(s.ptr), true);
  dv.setBigUint64(32, BigInt(s.bound), true);
  return b;
}

export function slotOffset(g: TxGeometry, index: number): number {
  return g.slotsOffset + index * SLOT_BYTES;
}

export function recordOffset(g: TxGeometry, client: number): number {
  return g.recordsOffset + client * RECORD_BYTES;
}

export interface Item {
  ts: bigint;
  key: number;
  value: Uint8Array;
}

export function encodeItem(it: Item): Uint8Array {
  if (it.value.length > VALUE_BYTES_MAX) throw new PmrpcError(TxErrorCodes.TOO_LARGE, `a value holds at most ${VALUE_BYTES_MAX} bytes, got ${it.value.length}`);
  const b = new Uint8Array(ITEM_HEADER_BYTES + it.value.length);
  const dv = new DataView(b.buffer);
  dv.setUint32(4, it.value.length, true);
  dv.setBigUint64(8, it.ts, true);
  dv.setUint32(16, it.key, true);
  b.set(it.value, ITEM_HEADER_BYTES);
  dv.setUint32(0, crc32c(b.subarray(4)), true);
  return b;
}

/** The item in `b` (at least its header and value), or undefined when torn or garbage. */
export function decodeItem(b: Uint8Array): Item | undefined {
  if (b.length < ITEM_HEADER_BYTES) return undefined;
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const len = dv.getUint32(4, true);
  if (len > VALUE_BYTES_MAX || ITEM_HEADER_BYTES + len > b.length) return undefined;
  if (dv.getUint32(0, true) !== crc32c(b.subarray(4, ITEM_HEADER_BYTES + len))) return undefined;
  return { ts: dv.getBigUint64(8, true), key: dv.getUint32(16, true), value: b.slice(ITEM_HEADER_BYTES, ITEM_HEADER_BYTES + len) };
}

// ------------------------------------------------------------------ transaction ids and H words

/**
 * Bit 56 of every txid (`TXID_TAG`): a slot's `L` holds 0 or a txid, so a PRISM CAS that compares
 * only this bit (`gt`, data T) swaps iff `L` = 0 — the read chain's lock, which returns the slot's
 * `[W CT L ptr]` as it locked it (docs/tx.md "Locks taken at read time"). H = txid·4 + state
 * still fits in 64 bits.
 */
export const TXID_TAG = 1n << 56n;

/** txid = tag (bit 56) | client slot (8 bits) | incarnation (16 bits) | sequence (32 bits), never 0. */
export function makeTxid(client: number, incarnation: number, seq: number): bigint {
  return TXID_TAG | (BigInt(client & 0xff) << 48n) | (BigInt(incarnation & 0xffff) << 32n) | BigInt(seq >>> 0);
}

export function txClient(txid: bigint): number {
  return Number((txid >> 48n) & 0xffn);
}

export function hWord(txid: bigint, state: bigint): bigint {
  return txid * 4n + state;
}

export function hTxid(h: bigint): bigint {
  return h / 4n;
}

export function hState(h: bigint): bigint {
  return h % 4n;
}

export function describeH(h: bigint): string {
  if (h === 0n) return 'empty';
  const s = ['FENCED', 'PREPARED', 'COMMITTED', 'ABORTED'][Number(hState(h))]!;
  return `${s}(${txName(hTxid(h))})`;
}

export function txName(txid: bigint): string {
  return `T${txClient(txid)}.${Number((txid >> 32n) & 0xffffn)}.${Number(txid & 0xffffffffn)}`;
}

// ------------------------------------------------------------------ invariants (DESIGN §10.1)

/**
 * Whether H may go from `from` to `to` (docs/tx.md "Invariants"): of one txid only PREPARED →
 * COMMITTED | ABORTED | FENCED (a decision, or recovery's fence of a prepare that never completed,
 * R2) — never out of COMMITTED, ABORTED or FENCED, never back to PREPARED; to another txid only a
 * later one of the slot (the next transaction's prepare, a resolver's fence of T over an earlier
 * transaction's H). The same word is no move.
 */
export function hEdgeOk(from: bigint, to: bigint): boolean {
  if (from === to) return true;
  const f = hTxid(from);
  const t = hTxid(to);
  if (t === f) return hState(from) === H_PREPARED && hState(to) !== H_PREPARED;
  return t > f && (from === 0n || hState(from) !== H_PREPARED);
}

/** PMRPC_ERR_INVARIANT unless H may go from `from` to `to` (hEdgeOk): checked before every write or CAS of H. */
export function checkHEdge(from: bigint, to: bigint, where: string): void {
  invariant(hEdgeOk(from, to), () => `${where}: H would go from ${describeH(from)} to ${describeH(to)}, not an edge of the protocol`);
}

/**
 * PMRPC_ERR_INVARIANT unless slot `index` of shard `g` may hold `s` (checked before recovery
 * stores it): its pointer names an item of the arena at an item boundary, with bound ITEM_BYTES,
 * and that item (read by `load`, 128 bytes) describes itself as the slot's value — its key, and
 * ts = CT; W ≥ CT. O(1): one item decoded.
 */
export function checkTxSlotWrite(g: TxGeometry, index: number, s: Slot, load: (ptr: number, len: number) => Uint8Array): void {
  const key = index * g.shards + g.shard;
  invariant(Number.isInteger(index) && index >= 0 && index < g.keys, () => `slot ${index} is outside the slot table (${g.keys} slots)`);
  const off = s.ptr - g.arenaOffset;
  invariant(Number.isSafeInteger(s.ptr) && off >= 0 && off < g.items * ITEM_BYTES && off % ITEM_BYTES === 0, () => `key ${key}: the slot would point at ${s.ptr}, not an item boundary of the arena`);
  invariant(s.bound === ITEM_BYTES, () => `key ${key}: the slot would hold bound ${s.bound}, not ${ITEM_BYTES}`);
  invariant(s.w >= s.ct, () => `key ${key}: the slot would hold W ${s.w} below CT ${s.ct}`);
  const it = decodeItem(load(s.ptr, ITEM_BYTES));
  invariant(it !== undefined && it.key === key && it.ts === s.ct, () => `key ${key}: the slot would hold CT ${s.ct} over item ${s.ptr}, which holds ${it === undefined ? 'no valid item' : `key ${it.key}, ts ${it.ts}`}`);
}

export const ENTRY_WRITE = 1;
export const ENTRY_READ = 2;

export interface RecordEntry {
  key: number;
  kind: number;
  /** The new item's address (a record of pointers; 0 in a record carrying values). */
  newPtr: number;
  oldCt: bigint;
  /** The new item's bytes (encodeItem), in a record carrying values (BODY_VALUES). */
  item?: Uint8Array;
}

export interface RecordBody {
  txid: bigint;
  ts: bigint;
  participants: bigint;
  entries: RecordEntry[];
  /** The body carries the new values (BODY_VALUES), not the new items' addresses. */
  values?: boolean;
}

/** Bit of the body's n word: the body carries its write entries' new values, not their addresses. */
export const BODY_VALUES = 0x8000_0000;

/**
 * Whether a body of `entries` entries carrying `items` (the write entries' encodeItem bytes) fits
 * the record: header, entries and the items in RECORD_BYTES − RECORD_BODY, and at most
 * VALUES_WRITES_MAX writes (round 2's chain keeps 32 scratch bytes per write).
 */
export function bodyValuesFit(entries: number, items: readonly Uint8Array[]): boolean {
  return items.length <= VALUES_WRITES_MAX && bodyPtrsOffset(entries) + items.reduce((a, b) => a + b.length, 0) <= RECORD_BYTES - RECORD_BODY;
}

/** Writes on one shard a record carrying values may hold (round 2's chain: 32 scratch bytes each, 256 B of scratch). */
export const VALUES_WRITES_MAX = 8;

/** Offset, in the body, of the new-item pointer array of a body with `n` entries (what the crc covers ends here). */
export function bodyPtrsOffset(n: number): number {
  return 32 + n * ENTRY_BYTES;
}

/**
 * The body's bytes: the crc-covered part (header and entries, `bodyPtrsOffset(n)` bytes) then the
 * pointer array (each write entry's newPtr). A prepare chain WRITEs only the first part; the
 * pointers come from the NIC's scratch.
 */
export function encodeBody(r: RecordBody): Uint8Array {
  if (r.entries.length > ENTRIES_MAX) throw new PmrpcError(TxErrorCodes.TOO_LARGE, `a transaction touches at most ${ENTRIES_MAX} keys per shard, got ${r.entries.length}`);
  const n = r.entries.length;
  const writes = r.entries.filter((e) => e.kind === ENTRY_WRITE);
  if (r.values === true) {
    const items = writes.map((e) => e.item!);
    invariant(bodyValuesFit(n, items), () => `a body of ${n} entries carrying ${items.length} values does not fit the record`);
    const b = new Uint8Array(bodyPtrsOffset(n) + items.reduce((a, x) => a + x.length, 0));
    const dv = new DataView(b.buffer);
    dv.setUint32(4, (n | BODY_VALUES) >>> 0, true);
    dv.setBigUint64(8, r.txid, true);
    dv.setBigUint64(16, r.ts, true);
    dv.setBigUint64(24, r.participants, true);
    r.entries.forEach((e, i) => {
      const o = 32 + i * ENTRY_BYTES;
      dv.setUint32(o, e.key, true);
      dv.setUint32(o + 4, e.kind, true);
      dv.setBigUint64(o + 8, e.oldCt, true);
    });
    let o = bodyPtrsOffset(n);
    for (const it of items) {
      b.set(it, o);
      o += it.length;
    }
    dv.setUint32(0, crc32c(b.subarray(4)), true);
    return b;
  }
  const b = new Uint8Array(bodyPtrsOffset(n) + writes.length * ENTRY_PTR_BYTES);
  const dv = new DataView(b.buffer);
  dv.setUint32(4, n, true);
  dv.setBigUint64(8, r.txid, true);
  dv.setBigUint64(16, r.ts, true);
  dv.setBigUint64(24, r.participants, true);
  r.entries.forEach((e, i) => {
    const o = 32 + i * ENTRY_BYTES;
    dv.setUint32(o, e.key, true);
    dv.setUint32(o + 4, e.kind, true);
    dv.setBigUint64(o + 8, e.oldCt, true);
  });
  writes.forEach((e, i) => dv.setBigUint64(bodyPtrsOffset(n) + i * ENTRY_PTR_BYTES, BigInt(e.newPtr), true));
  dv.setUint32(0, crc32c(b.subarray(4, bodyPtrsOffset(n))), true);
  return b;
}

/** The body in `b` (RECORD_BYTES - RECORD_BODY bytes), or undefined when torn (the pointer array is not crc-covered: see encodeBody). */
export function decodeBody(b: Uint8Array): RecordBody | undefined {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if ((dv.getUint32(4, true) & BODY_VALUES) !== 0) return decodeValuesBody(b);
  const n = dv.getUint32(4, true);
  if (n > ENTRIES_MAX || bodyPtrsOffset(n) > b.length) return undefined;
  if (dv.getUint32(0, true) !== crc32c(b.subarray(4, bodyPtrsOffset(n)))) return undefined;
  const entries: RecordEntry[] = [];
  let w = 0;
  for (let i = 0; i < n; i++) {
    const o = 32 + i * ENTRY_BYTES;
    const kind = dv.getUint32(o + 4, true);
    let newPtr = 0;
    if (kind === ENTRY_WRITE) {
      const p = bodyPtrsOffset(n) + w++ * ENTRY_PTR_BYTES;
      if (p + ENTRY_PTR_BYTES > b.length) return undefined;
      newPtr = Number(dv.getBigUint64(p, true));
    }
    entries.push({ key: dv.getUint32(o, true), kind, newPtr, oldCt: dv.getBigUint64(o + 8, true) });
  }
  return { txid: dv.getBigUint64(8, true), ts: dv.getBigUint64(16, true), participants: dv.getBigUint64(24, true), entries };
}

/**
 * A body carrying values (BODY_VALUES): undefined when torn (the crc covers everything), or when an
 * item is not whole or not of its entry's key and the body's ts.
 */
function decodeValuesBody(b: Uint8Array): RecordBody | undefined {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const n = dv.getUint32(4, true) & ~BODY_VALUES;
  if (n > ENTRIES_MAX || bodyPtrsOffset(n) > b.length) return undefined;
  const ts = dv.getBigUint64(16, true);
  const entries: RecordEntry[] = [];
  let o = bodyPtrsOffset(n);
  for (let i = 0; i < n; i++) {
    const e = 32 + i * ENTRY_BYTES;
    const key = dv.getUint32(e, true);
    const kind = dv.getUint32(e + 4, true);
    const entry: RecordEntry = { key, kind, newPtr: 0, oldCt: dv.getBigUint64(e + 8, true) };
    if (kind === ENTRY_WRITE) {
      if (o + ITEM_HEADER_BYTES > b.length) return undefined;
      const len = ITEM_HEADER_BYTES + dv.getUint32(o + 4, true);
      if (len > ITEM_BYTES || o + len > b.length) return undefined;
      entry.item = b.slice(o, o + len);
      o += len;
    }
    entries.push(entry);
  }
  if (dv.getUint32(0, true) !== crc32c(b.subarray(4, o))) return undefined;
  for (const e of entries) {
    if (e.item === undefined) continue;
    const it = decodeItem(e.item);
    if (it === undefined || it.key !== e.key || it.ts !== ts) return undefined;
  }
  return { txid: dv.getBigUint64(8, true), ts, participants: dv.getBigUint64(24, true), entries, values: true };
}

export function u64(v: bigint): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, v, true);
  return b;
}

export function words(...vs: bigint[]): Uint8Array {
  const b = new Uint8Array(vs.length * 8);
  const dv = new DataView(b.buffer);
  vs.forEach((v, i) => dv.setBigUint64(i * 8, v, true));
  return b;
}

export const ONES = 0xffffffffffffffffn;

/** Global key → (shard, slot index): keys are spread round-robin. */
export function shardOf(key: number, shards: number): number {
  return key % shards;
}

export function indexOf(key: number, shards: number): number {
  return Math.floor(key / shards);
}

/** The options of one PRISM-TX shard (app.ts resolves and checks them; the geometry derives from them). */
export type TxValueKind = 'list' | 'balance';

export interface TxAppOptions {
  /** Offset of the TX area in the region (a multiple of 64). */
  base: number;
  /** This shard's index, and the number of shards (keys are spread round-robin: key % shards). */
  shard: number;
  shards: number;
  /** Objects this shard holds. */
  keysPerShard: number;
  /** Client record slots (one transaction in flight per client slot). */
  clients: number;
  /** Items in the arena (the initial values take keysPerShard of them). */
  items: number;
  /** Initial values: 'list' (empty lists of u32, the list-append workload) or 'balance' (an i64 each). */
  value: TxValueKind;
  initialBalance: number;
  /** Test-only fault switches (mutants) of recovery. */
  faults: Partial<TxFaults>;
}
