/**
 * The recovery layer's region layout (DESIGN §3): a superblock, the connection table, one ring
 * per connection slot, the redo log of effects and the application area, laid out from a base
 * offset of a PmemRegion. See docs/recovery.md for the byte offsets.
 *
 * Superblock line 0 is written once, at format, and checksummed; its magic word is stored last so
 * that an interrupted format reads as "not formatted". Line 1 holds the two mutable counters
 * (epoch, next client id), each one aligned 8-byte word (failure-atomic) carrying its value and
 * its complement, so a damaged word is detected rather than trusted.
 */
import { crc32c, ErrorCodes, invariant, LINE_BYTES, PmrpcError, resolveOptions, type OptionCheck, type OptionChecks, type PmemRegion, defineErrorCodes, type ErrorCodesOf } from '../pmem/index.js';

/** "PMRPCRCV": this layer's magic, as the little-endian u64 stored at offset 0. */
export const RECOVERY_MAGIC = 0x5643524350524d50n;
/**
 * 2: connection-table lines hold a release word and the client's secret hash (issue 15). A version-1
 * file is refused with PMRPC_ERR_LAYOUT_VERSION rather than misread.
 */
export const RECOVERY_LAYOUT_VERSION = 2;
export const SUPERBLOCK_BYTES = 2 * LINE_BYTES;
export const CONN_ENTRY_BYTES = LINE_BYTES;
const SB_CHECKED_BYTES = 60;
const EPOCH_WORD = LINE_BYTES;
const NEXT_CLIENT_WORD = LINE_BYTES + 8;
/** Largest value of a counter word (u32, 0 excluded where it means "none"). */
export const COUNTER_MAX = 0xffff_ffff;

export const RecoveryErrorCodes = defineErrorCodes('recovery', {
  /** The region holds no recovery layout at this offset (never formatted, or format interrupted). */
  NOT_FORMATTED: 'PMRPC_ERR_NOT_FORMATTED',
  /** format() found a layout already there: it is never overwritten. */
  ALREADY_FORMATTED: 'PMRPC_ERR_ALREADY_FORMATTED',
  /** The region holds some other layout's magic at this offset. */
  FOREIGN_LAYOUT: 'PMRPC_ERR_FOREIGN_LAYOUT',
  /** The superblock fails its checksum, holds impossible values or a damaged counter word. */
  SUPERBLOCK_CORRUPT: 'PMRPC_ERR_SUPERBLOCK_CORRUPT',
  /** The layout was written by an unsupported layout version. */
  LAYOUT_VERSION: ErrorCodes.LAYOUT_VERSION,
  /** The layout does not fit in the region. */
  LAYOUT_TOO_LARGE: 'PMRPC_ERR_LAYOUT_TOO_LARGE',
  /** A connection-table entry is damaged. */
  TABLE_CORRUPT: 'PMRPC_ERR_TABLE_CORRUPT',
  /** Every connection slot is taken. */
  TABLE_FULL: 'PMRPC_ERR_TABLE_FULL',
  /** The client id was never issued. */
  UNKNOWN_CLIENT: 'PMRPC_ERR_UNKNOWN_CLIENT',
  /** The client id was issued but its slot was released (goodbye or lease expiry): register anew. */
  CLIENT_RELEASED: 'PMRPC_ERR_CLIENT_RELEASED',
  /** A reconnect or resume presented a secret that is not the client's (or none). Nothing changed. */
  CLIENT_AUTH: 'PMRPC_ERR_CLIENT_AUTH',
  /** A release asked while the client still has entries not applied (or unresolved state). Nothing changed. */
  CLIENT_BUSY: 'PMRPC_ERR_CLIENT_BUSY',
  /** Client ids or the epoch are exhausted (2^32 - 1 issued). */
  COUNTER_EXHAUSTED: 'PMRPC_ERR_COUNTER_EXHAUSTED',
  /** The producer has no credit: the slot still holds an entry whose effects are not durably applied. */
  RING_FULL: 'PMRPC_ERR_RING_FULL',
  /** A request does not fit in a ring slot (or its effects in a log record). */
  TOO_LARGE: 'PMRPC_ERR_TOO_LARGE',
  /** An entry stayed partially arrived (checksum mismatch) past the poll bound. */
  ENTRY_TORN: 'PMRPC_ERR_ENTRY_TORN',
  /** A checksum-valid entry of this client that is not the expected one (written beyond its credits). */
  RING_OVERRUN: 'PMRPC_ERR_RING_OVERRUN',
  /** A log record slot still holds a record that is not durably applied. */
  LOG_FULL: 'PMRPC_ERR_LOG_FULL',
  /** An effect writes outside the application area. */
  EFFECT_OUT_OF_BOUNDS: 'PMRPC_ERR_EFFECT_OUT_OF_BOUNDS',
  /** Recovery met a state the protocol cannot produce (a 'refuse' row of the decision table). */
  RECOVERY_REFUSED: 'PMRPC_ERR_RECOVERY_REFUSED',
  /** A request was executed out of FIFO order (its predecessor is not applied). */
  OUT_OF_ORDER: 'PMRPC_ERR_OUT_OF_ORDER',
  /** The store is not ready: recover() must run after open() before requests are served. */
  NOT_RECOVERED: 'PMRPC_ERR_NOT_RECOVERED',
});

declare module '../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof RecoveryErrorCodes> {}
}

export interface LayoutOptions {
  /** Where the layout starts in the region (line-aligned). */
  baseOffset: number;
  /** Connection slots (one ring each). */
  maxClients: number;
  /** Slots per ring (the per-client credit window). */
  ringSlots: number;
  /** Bytes per ring slot (a multiple of 64, at least 64): header + payload + commit word. */
  slotBytes: number;
  /** Record slots of the redo log. */
  logRecords: number;
  /** Bytes per log record (a multiple of 64, at least 128). */
  recordBytes: number;
  /** Bytes of the application area (a multiple of 64). */
  appBytes: number;
}

export const LAYOUT_DEFAULTS: Readonly<LayoutOptions> = Object.freeze({
  baseOffset: 0,
  maxClients: 8,
  ringSlots: 16,
  slotBytes: 256,
  logRecords: 16,
  recordBytes: 512,
  appBytes: 4096,
});

/** The resolved layout: options plus absolute offsets of every area. */
export interface Geometry extends Readonly<LayoutOptions> {
  readonly superblockOffset: number;
  readonly connTableOffset: number;
  readonly ringsOffset: number;
  readonly logOffset: number;
  readonly appOffset: number;
  /** Bytes from baseOffset to the end of the application area. */
  readonly totalBytes: number;
}

const MAX_U32 = 0xffff_ffff;

/** TypeError if not an integer; RangeError outside [min, max] or not a multiple of `multipleOf`. */
function layoutInt(min: number, max: number, multipleOf = 1): OptionCheck {
  return (name, v) => {
    if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new TypeError(`${name} must be an integer, got ${String(v)}`);
    if (v < min || v > max || v % multipleOf !== 0) {
      throw new RangeError(`${name} must be ${multipleOf > 1 ? `a multiple of ${multipleOf} ` : ''}in [${min}, ${max}], got ${v}`);
    }
  };
}

const LAYOUT_CHECKS: OptionChecks<LayoutOptions> = {
  baseOffset: layoutInt(0, MAX_U32, LINE_BYTES),
  maxClients: layoutInt(1, 4096),
  ringSlots: layoutInt(1, 65536),
  slotBytes: layoutInt(LINE_BYTES, 1 << 20, LINE_BYTES),
  logRecords: layoutInt(1, 65536),
  recordBytes: layoutInt(2 * LINE_BYTES, 1 << 20, LINE_BYTES),
  appBytes: layoutInt(LINE_BYTES, MAX_U32 - LINE_BYTES + 1, LINE_BYTES),
};

/** Validates layout options and computes the offsets (pure). */
export function computeGeometry(options: Partial<LayoutOptions> = {}): Geometry {
  const { baseOffset, maxClients, ringSlots, slotBytes, logRecords, recordBytes, appBytes } = resolveOptions(LAYOUT_DEFAULTS, options, LAYOUT_CHECKS);
  const superblockOffset = baseOffset;
  const connTableOffset = superblockOffset + SUPERBLOCK_BYTES;
  const ringsOffset = connTableOffset + maxClients * CONN_ENTRY_BYTES;
  const logOffset = ringsOffset + maxClients * ringSlots * slotBytes;
  const appOffset = logOffset + logRecords * recordBytes;
  const end = appOffset + appBytes;
  if (end > MAX_U32 + 1) throw new RangeError(`the layout needs ${end - baseOffset} bytes from offset ${baseOffset}, past 2^32`);
  return Object.freeze({
    baseOffset, maxClients, ringSlots, slotBytes, logRecords, recordBytes, appBytes,
    superblockOffset, connTableOffset, ringsOffset, logOffset, appOffset, totalBytes: end - baseOffset,
  });
}

/** Bytes a region needs (data area) to hold a layout with these options. */
export function layoutBytes(options: Partial<LayoutOptions> = {}): number {
  const g = computeGeometry(options);
  return g.baseOffset + g.totalBytes;
}

/** A u32 counter with its complement in one aligned 8-byte word. */
export function encodeCounterWord(v: number): bigint {
  invariant(Number.isInteger(v) && v >= 0 && v <= MAX_U32, () => `counter ${v} out of range`);
  return BigInt(v) | (BigInt(~v >>> 0) << 32n);
}

/** The counter of a word, or undefined when the complement does not match (damaged word). */
export function decodeCounterWord(w: bigint): number | undefined {
  const v = Number(w & 0xffff_ffffn);
  const c = Number(w >> 32n);
  return c === (~v >>> 0) ? v : undefined;
}

function encodeSuperblock(g: Geometry): Uint8Array {
  const b = new Uint8Array(LINE_BYTES);
  const dv = new DataView(b.buffer);
  dv.setBigUint64(0, RECOVERY_MAGIC, true);
  dv.setUint32(8, RECOVERY_LAYOUT_VERSION, true);
  dv.setUint32(12, g.maxClients, true);
  dv.setUint32(16, g.ringSlots, true);
  dv.setUint32(20, g.slotBytes, true);
  dv.setUint32(24, g.logRecords, true);
  dv.setUint32(28, g.recordBytes, true);
  dv.setUint32(32, g.connTableOffset - g.baseOffset, true);
  dv.setUint32(36, g.ringsOffset - g.baseOffset, true);
  dv.setUint32(40, g.logOffset - g.baseOffset, true);
  dv.setUint32(44, g.appOffset - g.baseOffset, true);
  dv.setUint32(48, g.appBytes, true);
  dv.setUint32(52, g.totalBytes >>> 0, true);
  dv.setUint32(56, Math.floor(g.totalBytes / 2 ** 32), true);
  dv.setUint32(SB_CHECKED_BYTES, crc32c(b, 0, SB_CHECKED_BYTES), true);
  return b;
}

function corrupt(msg: string): PmrpcError {
  return new PmrpcError(RecoveryErrorCodes.SUPERBLOCK_CORRUPT, msg);
}

/** Reads and validates a superblock at `baseOffset`; coded errors for everything but a valid layout. */
function decodeSuperblock(region: PmemRegion, baseOffset: number): Geometry {
  if (baseOffset + SUPERBLOCK_BYTES > region.sizeBytes) {
    throw new PmrpcError(RecoveryErrorCodes.NOT_FORMATTED, `no recovery layout at offset ${baseOffset}: the region has ${region.sizeBytes} bytes`);
  }
  const b = region.load(baseOffset, LINE_BYTES);
  const dv = new DataView(b.buffer);
  const magic = dv.getBigUint64(0, true);
  if (magic === 0n) {
    throw new PmrpcError(RecoveryErrorCodes.NOT_FORMATTED, `no recovery layout at offset ${baseOffset} (no magic: never formatted, or format was interrupted)`);
  }
  if (magic !== RECOVERY_MAGIC) {
    throw new PmrpcError(RecoveryErrorCodes.FOREIGN_LAYOUT, `offset ${baseOffset} holds a foreign layout (magic 0x${magic.toString(16)}); it is left untouched`);
  }
  const want = dv.getUint32(SB_CHECKED_BYTES, true);
  const got = crc32c(b, 0, SB_CHECKED_BYTES);
  if (want !== got) throw corrupt(`superblock checksum mismatch at offset ${baseOffset} (stored ${want.toString(16)}, computed ${got.toString(16)})`);
  const version = dv.getUint32(8, true);
  if (version !== RECOVERY_LAYOUT_VERSION) {
    throw new PmrpcError(RecoveryErrorCodes.LAYOUT_VERSION, `recovery layout version ${version}, this pmrpc reads version ${RECOVERY_LAYOUT_VERSION}`);
  }
  let g: Geometry;
  try {
    g = computeGeometry({
      baseOffset,
      maxClients: dv.getUint32(12, true),
      ringSlots: dv.getUint32(16, true),
      slotBytes: dv.getUint32(20, true),
      logRecords: dv.getUint32(24, true),
      recordBytes: dv.getUint32(28, true),
      appBytes: dv.getUint32(48, true),
    });
  } catch (e) {
    throw corrupt(`superblock holds impossible geometry: ${(e as Error).message}`);
  }
  const stored = encodeSuperblock(g);
  if (!stored.every((x, i) => x === b[i])) throw corrupt('superblock offsets disagree with its geometry');
  if (baseOffset + g.totalBytes > region.sizeBytes) {
    throw corrupt(`the layout needs ${g.totalBytes} bytes from offset ${baseOffset}; the region has ${region.sizeBytes}`);
  }
  return g;
}

/** An open layout: geometry plus the two mutable counters of superblock line 1. */
export class Layout {
  readonly region: PmemRegion;
  readonly geometry: Geometry;

  private constructor(region: PmemRegion, geometry: Geometry) {
    this.region = region;
    this.geometry = geometry;
  }

  /**
   * Formats a fresh layout: zeroes every area, persists, writes the superblock body, persists,
   * then the magic word, persists. A region holding any magic at that offset is refused.
   */
  static format(region: PmemRegion, options: Partial<LayoutOptions> = {}): Layout {
    const g = computeGeometry(options);
    if (g.baseOffset + g.totalBytes > region.sizeBytes) {
      throw new PmrpcError(RecoveryErrorCodes.LAYOUT_TOO_LARGE, `the layout needs ${g.baseOffset + g.totalBytes} bytes; the region has ${region.sizeBytes}`);
    }
    const magic = region.loadU64(g.baseOffset);
    if (magic === RECOVERY_MAGIC) throw new PmrpcError(RecoveryErrorCodes.ALREADY_FORMATTED, `offset ${g.baseOffset} already holds a recovery layout; it is never overwritten`);
    if (magic !== 0n) throw new PmrpcError(RecoveryErrorCodes.FOREIGN_LAYOUT, `offset ${g.baseOffset} holds a foreign layout (magic 0x${magic.toString(16)}); it is left untouched`);
    region.fill(g.baseOffset, g.totalBytes, 0);
    region.persist(g.baseOffset, g.totalBytes);
    region.storeU64Atomic(g.baseOffset + EPOCH_WORD, encodeCounterWord(1));
    region.storeU64Atomic(g.baseOffset + NEXT_CLIENT_WORD, encodeCounterWord(1));
    const sb = encodeSuperblock(g);
    region.store(g.baseOffset + 8, sb.subarray(8));
    region.persist(g.baseOffset, SUPERBLOCK_BYTES);
    region.storeU64Atomic(g.baseOffset, RECOVERY_MAGIC);
    region.persist(g.baseOffset, 8);
    return new Layout(region, decodeSuperblock(region, g.baseOffset));
  }

  /** Opens and validates an existing layout. Nothing is written. */
  static open(region: PmemRegion, options: { baseOffset?: number } = {}): Layout {
    const { baseOffset } = resolveOptions<{ baseOffset: number }>({ baseOffset: 0 }, options, { baseOffset: LAYOUT_CHECKS.baseOffset });
    const g = decodeSuperblock(region, baseOffset);
    const layout = new Layout(region, g);
    layout.epoch; // validates both counter words now
    layout.nextClientId;
    return layout;
  }

  /** Server incarnation: bumped durably by every recovery. */
  get epoch(): number {
    return this.#readCounter(EPOCH_WORD, 'epoch');
  }

  /** The next client id to issue (ids are never reused). */
  get nextClientId(): number {
    return this.#readCounter(NEXT_CLIENT_WORD, 'next client id');
  }

  /** Durably sets the epoch (one failure-atomic word). */
  setEpoch(v: number): void {
    // Epochs only grow: a return or a lease stamped with an old epoch must never match again.
    invariant(Number.isInteger(v) && v > this.epoch, () => `the epoch would go from ${this.epoch} to ${v}`);
    this.#writeCounter(EPOCH_WORD, v, 'epoch');
  }

  /** Durably sets the next client id (one failure-atomic word). */
  setNextClientId(v: number): void {
    // Client ids are never reused.
    invariant(Number.isInteger(v) && v > this.nextClientId, () => `the next client id would go from ${this.nextClientId} to ${v}`);
    this.#writeCounter(NEXT_CLIENT_WORD, v, 'client ids');
  }

  connOffset(connSlot: number): number {
    invariant(Number.isInteger(connSlot) && connSlot >= 0 && connSlot < this.geometry.maxClients, () => `conn slot ${connSlot}`);
    return this.geometry.connTableOffset + connSlot * CONN_ENTRY_BYTES;
  }

  ringOffset(connSlot: number): number {
    invariant(Number.isInteger(connSlot) && connSlot >= 0 && connSlot < this.geometry.maxClients, () => `conn slot ${connSlot}`);
    return this.geometry.ringsOffset + connSlot * this.geometry.ringSlots * this.geometry.slotBytes;
  }

  recordOffset(index: number): number {
    // (The message is built only on failure: this runs several times per request.)
    invariant(Number.isInteger(index) && index >= 0 && index < this.geometry.logRecords, () => `record index ${index}`);
    return this.geometry.logOffset + index * this.geometry.recordBytes;
  }

  #readCounter(word: number, what: string): number {
    const v = decodeCounterWord(this.region.loadU64Atomic(this.geometry.baseOffset + word));
    if (v === undefined || v === 0) throw corrupt(`the ${what} word of the superblock is damaged`);
    return v;
  }

  #writeCounter(word: number, v: number, what: string): void {
    if (v > COUNTER_MAX) throw new PmrpcError(RecoveryErrorCodes.COUNTER_EXHAUSTED, `${what} exhausted`);
    const off = this.geometry.baseOffset + word;
    this.region.storeU64Atomic(off, encodeCounterWord(v));
    this.region.persist(off, 8);
    invariant(decodeCounterWord(this.region.loadU64Atomic(off)) === v, () => `counter at ${off} does not read back as ${v}`);
  }
}
