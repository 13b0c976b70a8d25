/**
 * The replicated register's layout and codes (the app: app.ts, its node: server.ts, its ABD
 * client: client.ts, its mutants: faults.ts). TEST-ONLY: a replicated register app, to exercise multi-node crash paths of the crash explorer
 * with less machinery than PRISM-RS. It is not PRISM-RS: no ALLOCATE, values are one u64.
 *
 * Each node holds, after a 64-byte header at `base`, one block of `blockBytes(writers)` per register:
 *
 *   +0  cell word u64: bytes 0..1 record index | bytes 2..3 writer id | bytes 4..7 timestamp
 *   +8  (unused: the cell word has its cache line to itself, so no FLUSH of a record persists it)
 *   +64 records: 2 per installer id 1..writers, 16 bytes each: value u64 | the cell word that points at it u64
 *
 * An install is out of place, as PRISM-RS's: the installer (the writer, or a reader writing back)
 * WRITEs ⟨value, word⟩ into one of its own two records, FLUSHes it, then swings the 8-byte cell
 * word with an enhanced CAS `gt` whose compare mask covers bytes 2..7 — the tag ⟨timestamp, writer
 * id⟩, timestamp first (the CAS compares unsigned little-endian, flush/prism.ts casSucceeds). An
 * aligned 8-byte word is failure-atomic (DESIGN §2.1), so no crash tears a cell, and a durable cell
 * only ever points at a durable record. An installer overwrites a record only when a flushed READ
 * of the cell showed it pointing elsewhere (only that installer ever points the cell at it), so a
 * record a cell points at is never overwritten. (The first version CASed a 32-byte ⟨value, check,
 * tag⟩ cell in place: a crash could leave it torn on every node at once, losing an acknowledged
 * write — `crash-test --app register --seed 6`; test/testing/register-torn.test.ts.)
 *
 * Recovery rebuilds nothing (no free lists, no log): it validates the header, and marks a cell
 * whose record does not carry its word (what only a broken install can leave) as LOST_WORD.
 */
import { defineErrorCodes, crc32c, type ErrorCodesOf } from '../../../pmem/index.js';

export const RegisterErrorCodes = defineErrorCodes('testing', {
  /** Fewer than a majority of nodes answered an operation. */
  NO_MAJORITY: 'PMRPC_ERR_REGISTER_NO_MAJORITY',
  /** The region holds no register area at `base` (or a damaged header). */
  NOT_FORMATTED: 'PMRPC_ERR_REGISTER_NOT_FORMATTED',
  /** format() on a region that already holds a register area. */
  ALREADY_FORMATTED: 'PMRPC_ERR_ALREADY_FORMATTED',
  /** The region is smaller than the register area. */
  SIZE_TOO_SMALL: 'PMRPC_ERR_SIZE_TOO_SMALL',
  /** The register app was used after close(). */
  CLOSED: 'PMRPC_ERR_REGISTER_CLOSED',
});

declare module '../../../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof RegisterErrorCodes> {}
}

export const REGISTER_MAGIC = 0x3130474552524d50n; // "PMRREG01"
export const REGISTER_VERSION = 2;
export const REGISTER_HEADER_BYTES = 64;
/** The cell word (the unit the CAS updates) and the padding after it. */
export const CELL_BYTES = 8;
export const RECORD_BYTES = 16;
const RECORDS_AT = 64;
/** Record index of "no record" (the initial cell and LOST_WORD). */
export const NO_RECORD = 0xffff;
/** Installer ids per register, at most. */
export const MAX_WRITERS = 1024;

/** Bytes of one register's block: the cell word's line, two records per installer, to a whole line. */
export function blockBytes(writers: number): number {
  return RECORDS_AT + Math.ceil((2 * writers * RECORD_BYTES) / 64) * 64;
}

/** Offset within a block of installer `writer`'s record `j` (0 or 1). */
export function recordIndex(writer: number, j: number): number {
  return 2 * (writer - 1) + j;
}

export function recordOffset(index: number): number {
  return RECORDS_AT + index * RECORD_BYTES;
}

/** A register's content. */
export interface Cell {
  ts: bigint;
  writer: bigint;
  value: bigint;
}

/** The fields of a cell word. */
export interface CellWord {
  ts: bigint;
  writer: bigint;
  record: number;
}

const MASK64 = (1n << 64n) - 1n;

function u64At(b: Uint8Array, off: number): bigint {
  return new DataView(b.buffer, b.byteOffset, b.byteLength).getBigUint64(off, true);
}

export function encodeWord(w: CellWord): bigint {
  if (typeof w.ts !== 'bigint' || w.ts < 0n || w.ts > 0xffffffffn) throw new RangeError(`timestamp must be a u32 bigint, got ${String(w.ts)}`);
  if (typeof w.writer !== 'bigint' || w.writer < 0n || w.writer > 0xffffn) throw new RangeError(`writer must be a u16 bigint, got ${String(w.writer)}`);
  if (!Number.isSafeInteger(w.record) || w.record < 0 || w.record > NO_RECORD) throw new RangeError(`record must be an integer in [0, ${NO_RECORD}], got ${String(w.record)}`);
  return (w.ts << 32n) | (w.writer << 16n) | BigInt(w.record);
}

export function decodeWord(x: bigint): CellWord {
  return { ts: x >> 32n, writer: (x >> 16n) & 0xffffn, record: Number(x & 0xffffn) };
}

export function wordBytes(x: bigint): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, x & MASK64, true);
  return b;
}

/** The cell word of a fresh register: tag ⟨0, 0⟩, value 0, no record. */
export const INITIAL_WORD = encodeWord({ ts: 0n, writer: 0n, record: NO_RECORD });
/**
 * The word recovery leaves where a cell's record does not carry its word: tag ⟨0, 2^16-1⟩, no
 * record. This node lost its copy of the register: clients treat it as a node that did not answer
 * (so it never answers with a state older than one it acknowledged), and any write (timestamp >= 1)
 * installs over it.
 */
export const LOST_WORD = encodeWord({ ts: 0n, writer: 0xffffn, record: NO_RECORD });

export function isLostWord(x: bigint): boolean {
  return x === LOST_WORD;
}

/** A record's 16 bytes: the value and the word of the cell that will point at it. */
export function encodeRecord(value: bigint, word: bigint): Uint8Array {
  if (typeof value !== 'bigint' || value < 0n || value > MASK64) throw new RangeError(`value must be a u64 bigint, got ${String(value)}`);
  const b = new Uint8Array(RECORD_BYTES);
  const dv = new DataView(b.buffer);
  dv.setBigUint64(0, value, true);
  dv.setBigUint64(8, word, true);
  return b;
}

/**
 * The register in a block `b` (at least its cell word and, when the word names one, its record):
 * 'lost' when the word is LOST_WORD, or names a record out of `writers` or one that does not
 * carry the word (a torn or overwritten record); else the cell.
 */
export function decodeBlock(b: Uint8Array, writers: number): Cell | 'lost' {
  const x = u64At(b, 0);
  if (isLostWord(x)) return 'lost';
  const w = decodeWord(x);
  if (w.ts === 0n && w.writer === 0n) return { ts: 0n, writer: 0n, value: 0n };
  if (w.record >= 2 * writers) return 'lost';
  const at = recordOffset(w.record);
  if (b.length < at + RECORD_BYTES || u64At(b, at + 8) !== x) return 'lost';
  return { ts: w.ts, writer: w.writer, value: u64At(b, at) };
}

/** Tag order: timestamp, then writer id. */
export function compareTags(a: { ts: bigint; writer: bigint }, b: { ts: bigint; writer: bigint }): number {
  return a.ts !== b.ts ? (a.ts < b.ts ? -1 : 1) : a.writer !== b.writer ? (a.writer < b.writer ? -1 : 1) : 0;
}

/** Compare mask of the enhanced CAS on a cell word: bytes 2..7 (the tag). A fresh copy each call (typed arrays cannot be frozen). */
export function tagCompareMask(): Uint8Array {
  return Uint8Array.from({ length: CELL_BYTES }, (_, i) => (i >= 2 ? 0xff : 0));
}

export function encodeRegisterHeader(registers: number, writers: number): Uint8Array {
  const b = new Uint8Array(REGISTER_HEADER_BYTES);
  const dv = new DataView(b.buffer);
  dv.setBigUint64(0, REGISTER_MAGIC, true);
  dv.setUint32(8, REGISTER_VERSION, true);
  dv.setUint32(12, registers, true);
  dv.setUint32(16, writers, true);
  dv.setUint32(20, crc32c(b.subarray(0, 20)), true);
  return b;
}

/** The register and writer counts of the header at `b`, or undefined when there is no valid header. */
export function decodeRegisterHeader(b: Uint8Array): { registers: number; writers: number } | undefined {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (dv.getBigUint64(0, true) !== REGISTER_MAGIC) return undefined;
  if (dv.getUint32(20, true) !== crc32c(b.subarray(0, 20))) return undefined;
  if (dv.getUint32(8, true) !== REGISTER_VERSION) return undefined;
  const registers = dv.getUint32(12, true);
  const writers = dv.getUint32(16, true);
  return registers >= 1 && registers <= 4096 && writers >= 1 && writers <= MAX_WRITERS ? { registers, writers } : undefined;
}

