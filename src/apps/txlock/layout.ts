/**
 * The durable layout of one shard of the lock-based transaction baselines (FaRM-style and
 * FORD-style, docs/tx.md "Baselines"). All integers little-endian. The area at `base` (64-byte
 * aligned):
 *
 *   header    [base, base+64)      magic, version, protocol, shard, shards, keys, clients, crc
 *   objects   keys × 192 B         line 0: lock u64 (txid, 0: free) | version u64 — the lock word on
 *                                  a line of its own, away from the data (SIGMOD'23: no false
 *                                  sharing of lock words with the data other clients READ);
 *                                  lines 1–2: the item, updated in place (crc32c u32 over
 *                                  [4, 24 + len) | len u32 | version u64 | key u32 | pad | value)
 *   logs      clients × 2048 B     one log slot per client slot: H u64 = txid·4 + state on line 0
 *                                  (1 LOGGED — FaRM: LOCK record, redo; FORD: undo log —,
 *                                  2 COMMITTED, 3 ABORTED), the body from +64: crc32c u32 over
 *                                  [68, 96 + 128·n) | n u32 | txid u64 | participants u64 | pad,
 *                                  then n entries of 128 B: key u32 | len u32 | version u64 |
 *                                  value (≤ 104 B) — FaRM: the new value and the version it
 *                                  expects; FORD: the old value and its version (undo)
 *   mailbox   mailboxes × 2048 B   FaRM: receive buffers of the LOCK requests (server CPU)
 *
 * An item is self-checking (crc), so a READ that races an in-place update is detected, never
 * trusted. A transaction touches at most ENTRIES_MAX keys of one shard.
 */
import { crc32c, PmrpcError } from '../../../pmem/index.js';
import { AREA_MAGIC } from '../index.js';
import { decodeItem, encodeItem, ITEM_HEADER_BYTES, TxErrorCodes, VALUE_BYTES_MAX, type TxValueKind } from '../tx/index.js';

export const TXLOCK_MAGIC = AREA_MAGIC.txlock; // 'RTXLOC01'
export const TXLOCK_LAYOUT_VERSION = 1;
export const HEADER_BYTES = 64;
export const OBJ_BYTES = 192;
export const OBJ_ITEM = 64;
export const ITEM_BYTES = 128;
export const ITEM_HEADER = ITEM_HEADER_BYTES;
export const LOG_BYTES = 2048;
export const LOG_BODY = 64;
export const LOG_ENTRY_BYTES = 128;
export const ENTRIES_MAX = Math.floor((LOG_BYTES - LOG_BODY - 32) / LOG_ENTRY_BYTES);
export const MAIL_BYTES = 2048;
export { VALUE_BYTES_MAX };

export const L_LOGGED = 1n;
export const L_COMMITTED = 2n;
export const L_ABORTED = 3n;

export type TxLockProtocol = 'farm' | 'ford';
const PROTOCOLS: readonly TxLockProtocol[] = ['farm', 'ford'];

export interface TxLockGeometry {
  base: number;
  protocol: TxLockProtocol;
  shard: number;
  shards: number;
  keys: number;
  clients: number;
  mailboxes: number;
  objects: number;
  logs: number;
  mailbox: number;
  totalBytes: number;
}

export function computeGeometry(base: number, protocol: TxLockProtocol, shard: number, shards: number, keys: number, clients: number, mailboxes: number): TxLockGeometry {
  const objects = base + HEADER_BYTES;
  const logs = objects + keys * OBJ_BYTES;
  const mailbox = logs + clients * LOG_BYTES;
  const end = mailbox + mailboxes * MAIL_BYTES;
  return { base, protocol, shard, shards, keys, clients, mailboxes, objects, logs, mailbox, totalBytes: end - base };
}

export function encodeHeader(g: TxLockGeometry): Uint8Array {
  const b = new Uint8Array(HEADER_BYTES);
  const dv = new DataView(b.buffer);
  dv.setBigUint64(0, TXLOCK_MAGIC, true);
  dv.setUint32(8, TXLOCK_LAYOUT_VERSION, true);
  dv.setUint32(12, PROTOCOLS.indexOf(g.protocol), true);
  dv.setUint32(16, g.shard, true);
  dv.setUint32(20, g.shards, true);
  dv.setUint32(24, g.keys, true);
  dv.setUint32(28, g.clients, true);
  dv.setUint32(32, g.mailboxes, true);
  dv.setUint32(36, crc32c(b.subarray(0, 36)), true);
  return b;
}

export function decodeHeader(b: Uint8Array, base: number, protocol: TxLockProtocol): TxLockGeometry {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (dv.getBigUint64(0, true) !== TXLOCK_MAGIC || dv.getUint32(36, true) !== crc32c(b.subarray(0, 36)) || dv.getUint32(8, true) !== TXLOCK_LAYOUT_VERSION) {
    throw new PmrpcError(TxErrorCodes.NOT_FORMATTED, `no valid ${protocol} TX header at ${base}`);
  }
  const p = PROTOCOLS[dv.getUint32(12, true)];
  if (p !== protocol) throw new PmrpcError(TxErrorCodes.NOT_FORMATTED, `the area at ${base} is formatted for ${String(p)}, not ${protocol}`);
  return computeGeometry(base, protocol, dv.getUint32(16, true), dv.getUint32(20, true), dv.getUint32(24, true), dv.getUint32(28, true), dv.getUint32(32, true));
}

export interface LockItem {
  version: bigint;
  key: number;
  value: Uint8Array;
}

/** The item is PRISM-TX's self-checking item (src/apps/tx/layout.ts), its timestamp field holding the version. */
export function encodeLockItem(it: LockItem): Uint8Array {
  return encodeItem({ ts: it.version, key: it.key, value: it.value });
}

export function decodeLockItem(b: Uint8Array): LockItem | undefined {
  const it = decodeItem(b);
  return it === undefined ? undefined : { version: it.ts, key: it.key, value: it.value };
}

/** One object as a READ of its 192 bytes shows it (item undefined: torn by a racing in-place update). */
export interface ObjView {
  lock: bigint;
  version: bigint;
  item: LockItem | undefined;
}

export function decodeObj(b: Uint8Array): ObjView {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  return { lock: dv.getBigUint64(0, true), version: dv.getBigUint64(8, true), item: b.length >= OBJ_BYTES ? decodeLockItem(b.subarray(OBJ_ITEM, OBJ_BYTES)) : undefined };
}

export interface LogEntry {
  key: number;
  version: bigint;
  value: Uint8Array;
}

export interface LogBody {
  txid: bigint;
  participants: bigint;
  entries: LogEntry[];
}

export function encodeLogBody(r: LogBody): Uint8Array {
  if (r.entries.length > ENTRIES_MAX) throw new PmrpcError(TxErrorCodes.TOO_LARGE, `a transaction touches at most ${ENTRIES_MAX} keys per shard, got ${r.entries.length}`);
  const b = new Uint8Array(32 + r.entries.length * LOG_ENTRY_BYTES);
  const dv = new DataView(b.buffer);
  dv.setUint32(4, r.entries.length, true);
  dv.setBigUint64(8, r.txid, true);
  dv.setBigUint64(16, r.participants, true);
  r.entries.forEach((e, i) => {
    const o = 32 + i * LOG_ENTRY_BYTES;
    if (e.value.length > VALUE_BYTES_MAX) throw new PmrpcError(TxErrorCodes.TOO_LARGE, `a value holds at most ${VALUE_BYTES_MAX} bytes, got ${e.value.length}`);
    dv.setUint32(o, e.key, true);
    dv.setUint32(o + 4, e.value.length, true);
    dv.setBigUint64(o + 8, e.version, true);
    b.set(e.value, o + 16);
  });
  dv.setUint32(0, crc32c(b.subarray(4)), true);
  return b;
}

export function decodeLogBody(b: Uint8Array): LogBody | undefined {
  if (b.length < 32) return undefined;
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const n = dv.getUint32(4, true);
  if (n > ENTRIES_MAX || 32 + n * LOG_ENTRY_BYTES > b.length) return undefined;
  if (dv.getUint32(0, true) !== crc32c(b.subarray(4, 32 + n * LOG_ENTRY_BYTES))) return undefined;
  const entries: LogEntry[] = [];
  for (let i = 0; i < n; i++) {
    const o = 32 + i * LOG_ENTRY_BYTES;
    const len = dv.getUint32(o + 4, true);
    if (len > VALUE_BYTES_MAX) return undefined;
    entries.push({ key: dv.getUint32(o, true), version: dv.getBigUint64(o + 8, true), value: b.slice(o + 16, o + 16 + len) });
  }
  return { txid: dv.getBigUint64(8, true), participants: dv.getBigUint64(16, true), entries };
}

export const objAt = (g: Pick<TxLockGeometry, 'objects' | 'shards'>, key: number): number => g.objects + Math.floor(key / g.shards) * OBJ_BYTES;
export const logAt = (g: Pick<TxLockGeometry, 'logs'>, client: number): number => g.logs + client * LOG_BYTES;
export const lWord = (txid: bigint, state: bigint): bigint => txid * 4n + state;

/** The options of one shard of a baseline (app.ts resolves them: defaults and checks). */
export interface TxLockAppOptions {
  base: number;
  shard: number;
  shards: number;
  keysPerShard: number;
  /** Client log slots (one transaction in flight per client slot). */
  clients: number;
  /** FaRM: receive buffers for LOCK requests, one per connection (default: two per client slot). */
  mailboxes: number;
  value: TxValueKind;
  initialBalance: number;
}
