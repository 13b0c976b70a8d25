/**
 * The lock-based replication baseline of PRISM-RS (DESIGN §5, §9): its durable layout on one
 * replica. All integers little-endian.
 *
 * Area at `base` (64-byte aligned):
 *   header  [base, base+64)          magic u64 | version u32 | blocks u32 | blockBytes u32 | crc32c u32 over [0, 20)
 *   locks   blocks × 64 B            one lock word per block, alone on its cache line (SIGMOD'23: a
 *                                    lock never shares a line with data or another lock)
 *   records blocks × 2 × slotBytes   two record slots per block (out-of-place writes), slotBytes =
 *                                    16 + blockBytes rounded up to 64
 * One MR covers locks and records; the header is the server's.
 *
 * Lock line (one per block, 64 B, alone on its cache line — SIGMOD'23: a lock never shares a line
 * with data or another lock): +0 lock word u64 (0 free, else the holder's tag) | +8 publish word
 * u64 = version << 1 | slot — the block's version (the same number on every replica for the same
 * write) and which record slot holds it. A writer CASes the lock word 0 → its tag and, in the same
 * doorbell, reads the publish word with an atomic FAA of 0 (the speculative read: an atomic sees
 * the NIC's view, so it cannot miss a release still in another QP's NIC cache, which a READ
 * could). Its release is one 16-byte WRITE [0 | new publish word] — "write unlatch", legal because
 * the lock is CAS-acquired and exclusive. A reader validates a record by reading the line after
 * it: free, naming the slot read with the record's version. Recovery derives every line from the
 * records (the highest valid slot), so a lock a crash left held is released, and no line needs to
 * be durable.
 *
 * Record slot: +0 version u64 | +8 length u32 | +12 crc32c u32 over [0, 12) ++ data | +16 data.
 * Writes go to the slot the lock word does not name, are FLUSHed, and only then published by the
 * release: a crash mid-write tears at most the unpublished slot, never the block's last value.
 */
import { AREA_MAGIC } from '../index.js';
import { crc32c, defineErrorCodes, PmrpcError, type ErrorCodesOf } from '../../../pmem/index.js';

export const RSLOCK_MAGIC = AREA_MAGIC.rslock; // 'RMSPLK01' little-endian
export const RSLOCK_LAYOUT_VERSION = 1;
export const RSLOCK_HEADER_BYTES = 64;
/** Bytes per lock: one cache line. */
export const LOCK_STRIDE = 64;
export const RECORD_HEADER_BYTES = 16;
export const BLOCK_BYTES_MAX = 1 << 16;
export const BLOCKS_MAX = 1 << 20;

export const RsLockErrorCodes = defineErrorCodes('rslock', {
  /** Fewer than a majority of replicas could be reached for an operation. */
  NO_MAJORITY: 'PMRPC_ERR_RSLOCK_NO_MAJORITY',
  /** A block's locks stayed held past the retry bound (a contended block, or a writer that died holding them). */
  CONTENDED: 'PMRPC_ERR_RSLOCK_CONTENDED',
  /** A value longer than the area's blockBytes. */
  VALUE_TOO_LARGE: 'PMRPC_ERR_RSLOCK_VALUE_TOO_LARGE',
  /** The region holds no lock-based replication area at this offset, or its header is damaged. */
  NOT_FORMATTED: 'PMRPC_ERR_RSLOCK_NOT_FORMATTED',
  /** format() found an area already there: it is never overwritten. */
  ALREADY_FORMATTED: 'PMRPC_ERR_RSLOCK_ALREADY_FORMATTED',
  /** The region is too small for the area with these options. */
  LAYOUT_TOO_LARGE: 'PMRPC_ERR_RSLOCK_LAYOUT_TOO_LARGE',
  /** The client was used after close(). */
  CLOSED: 'PMRPC_ERR_RSLOCK_CLOSED',
});

declare module '../../../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof RsLockErrorCodes> {}
}

export interface RsLockGeometry {
  base: number;
  blocks: number;
  blockBytes: number;
  slotBytes: number;
  locksOffset: number;
  recordsOffset: number;
  /** Bytes from base to the end of the records. */
  totalBytes: number;
}

export function computeRsLockGeometry(base: number, blocks: number, blockBytes: number): RsLockGeometry {
  const slotBytes = Math.ceil((RECORD_HEADER_BYTES + blockBytes) / 64) * 64;
  const locksOffset = base + RSLOCK_HEADER_BYTES;
  const recordsOffset = locksOffset + blocks * LOCK_STRIDE;
  return { base, blocks, blockBytes, slotBytes, locksOffset, recordsOffset, totalBytes: recordsOffset + blocks * 2 * slotBytes - base };
}

export function lockOffset(g: RsLockGeometry, block: number): number {
  return g.locksOffset + block * LOCK_STRIDE;
}

export function slotOffset(g: RsLockGeometry, block: number, slot: number): number {
  return g.recordsOffset + (block * 2 + slot) * g.slotBytes;
}

export function encodeRsLockHeader(g: RsLockGeometry): Uint8Array {
  const b = new Uint8Array(RSLOCK_HEADER_BYTES);
  const dv = new DataView(b.buffer);
  dv.setBigUint64(0, RSLOCK_MAGIC, true);
  dv.setUint32(8, RSLOCK_LAYOUT_VERSION, true);
  dv.setUint32(12, g.blocks, true);
  dv.setUint32(16, g.blockBytes, true);
  dv.setUint32(20, crc32c(b.subarray(0, 20)), true);
  return b;
}

/** The geometry a header describes; NOT_FORMATTED for anything but a valid header. */
export function decodeRsLockHeader(b: Uint8Array, base: number): RsLockGeometry {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (b.length < RSLOCK_HEADER_BYTES || dv.getBigUint64(0, true) !== RSLOCK_MAGIC) throw new PmrpcError(RsLockErrorCodes.NOT_FORMATTED, `no lock-based replication area at offset ${base}`);
  if (dv.getUint32(20, true) !== crc32c(b.subarray(0, 20))) throw new PmrpcError(RsLockErrorCodes.NOT_FORMATTED, `the rslock header at offset ${base} fails its checksum`);
  if (dv.getUint32(8, true) !== RSLOCK_LAYOUT_VERSION) throw new PmrpcError(RsLockErrorCodes.NOT_FORMATTED, `rslock layout version ${dv.getUint32(8, true)} is not supported`);
  const blocks = dv.getUint32(12, true);
  const blockBytes = dv.getUint32(16, true);
  if (blocks < 1 || blocks > BLOCKS_MAX || blockBytes < 1 || blockBytes > BLOCK_BYTES_MAX) throw new PmrpcError(RsLockErrorCodes.NOT_FORMATTED, `the rslock header at offset ${base} names an impossible geometry`);
  return computeRsLockGeometry(base, blocks, blockBytes);
}

// ------------------------------------------------------------------ lock words

/** A lock line as read: `locked` = the lock word is not 0; version and slot from the publish word. */
export interface LockWord {
  version: bigint;
  slot: 0 | 1;
  locked: boolean;
}

/** Bytes of a lock line a client reads or writes: lock word + publish word. */
export const LOCK_LINE_BYTES = 16;

export function publishWord(version: bigint, slot: 0 | 1): bigint {
  return (version << 1n) | BigInt(slot);
}

export function decodePublish(v: bigint): { version: bigint; slot: 0 | 1 } {
  return { version: v >> 1n, slot: Number(v & 1n) as 0 | 1 };
}

/** The 16 bytes of a lock line. */
export function encodeLockLine(w: LockWord, holder = 1n): Uint8Array {
  const b = new Uint8Array(LOCK_LINE_BYTES);
  const dv = new DataView(b.buffer);
  dv.setBigUint64(0, w.locked ? holder : 0n, true);
  dv.setBigUint64(8, publishWord(w.version, w.slot), true);
  return b;
}

export function decodeLockLine(b: Uint8Array): LockWord {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  return { ...decodePublish(dv.getBigUint64(8, true)), locked: dv.getBigUint64(0, true) !== 0n };
}

export function u64At(b: Uint8Array, off = 0): bigint {
  return new DataView(b.buffer, b.byteOffset, b.byteLength).getBigUint64(off, true);
}

// ------------------------------------------------------------------ records

export interface BlockRecord {
  version: bigint;
  data: Uint8Array;
}

export function encodeRecord(r: BlockRecord): Uint8Array {
  const b = new Uint8Array(RECORD_HEADER_BYTES + r.data.length);
  const dv = new DataView(b.buffer);
  dv.setBigUint64(0, r.version, true);
  dv.setUint32(8, r.data.length, true);
  b.set(r.data, RECORD_HEADER_BYTES);
  dv.setUint32(12, recordCrc(b, r.data.length), true);
  return b;
}

function recordCrc(b: Uint8Array, len: number): number {
  return crc32c(b, RECORD_HEADER_BYTES, RECORD_HEADER_BYTES + len, crc32c(b, 0, 12));
}

/** The record in `b` (a slot as read), or undefined when it is torn or was never written. */
export function decodeRecord(b: Uint8Array, blockBytes: number): BlockRecord | undefined {
  if (b.length < RECORD_HEADER_BYTES) return undefined;
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const len = dv.getUint32(8, true);
  if (len > blockBytes || RECORD_HEADER_BYTES + len > b.length) return undefined;
  if (dv.getUint32(12, true) !== recordCrc(b, len)) return undefined;
  return { version: dv.getBigUint64(0, true), data: b.slice(RECORD_HEADER_BYTES, RECORD_HEADER_BYTES + len) };
}
