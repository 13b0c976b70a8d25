/**
 * Per-connection rings in PM (DESIGN §3). The entry of sequence `seq` (from 1) lives in slot
 * (seq - 1) mod ringSlots and carries lap floor((seq - 1) / ringSlots) + 1, so an entry of an
 * earlier lap is never mistaken for a new one and no producer clears a slot.
 *
 * Entry (in a slot of `slotBytes`; all little-endian):
 *    0  commit word u64 = lap (high u32) ‖ CRC-32C(lap, header, payload) (low u32)
 *    8  client id   u32
 *   12  method id   u32
 *   16  sequence    u64
 *   24  payload length u32
 *   28  reserved    u32 (0)
 *   32  payload     (up to slotBytes - 32 bytes)
 *
 * Placement order within a message is not guaranteed, so the checksum is verified wherever an
 * entry is consumed: at poll a mismatch means "not fully arrived yet" (bounded number of polls,
 * then PMRPC_ERR_ENTRY_TORN), at recovery it means "torn".
 */
import { crc32c, invariant, PmrpcError, positiveInt, resolveOptions, type PmemRegion } from '../pmem/index.js';
import { ByteSlab } from '../flush/index.js';
import { checkFaults, type RecoveryFaults } from './faults.js';
import { COUNTER_MAX, RecoveryErrorCodes, type Geometry, type Layout } from './layout.js';

export const ENTRY_HEADER_BYTES = 32;
const TWO_32 = 0x1_0000_0000;
/** CRC-32C of each lap's 4 little-endian bytes is computed into this scratch (owner thread only; no allocation per entry). */
const LAP_BYTES = new Uint8Array(4);
const LAP_DV = new DataView(LAP_BYTES.buffer);
/** A polled entry's header words are re-encoded into this scratch for its checksum (owner thread only). */
const HEAD_BYTES = new Uint8Array(32);
const HEAD_DV = new DataView(HEAD_BYTES.buffer);

/**
 * The polled payloads' bytes (ByteSlab: a payload over 64 bytes copied by region.load would be an
 * ArrayBuffer outside the heap per request, ≈ 1 µs to allocate and finalize — bench sqlite's 1 KiB
 * requests). One per thread: the owner thread polls.
 */
const PAYLOADS = new ByteSlab();

export interface RequestHeader {
  clientId: number;
  seq: number;
  methodId: number;
}

export interface RingEntry extends RequestHeader {
  payload: Uint8Array;
}

export type LapRelation = 'expected' | 'previous' | 'other';

/** What a slot holds, judged against the entry expected there. */
export interface SlotInspection {
  /** Commit word and header are all zero: nothing was ever placed (or it was invalidated and nothing since). */
  blank: boolean;
  /** The commit word is zero (invalidated or never written). */
  commitZero: boolean;
  /** The checksum matches and the header names this ring's client with a sane length. */
  checksumValid: boolean;
  /** The checksum matches but the header names another client (a former occupant of the slot). */
  foreign: boolean;
  /** Lap and header sequence against the expected entry (meaningful when the checksum is valid). */
  lap: LapRelation;
  /** The entry, when checksumValid and lap === 'expected'. */
  entry?: RingEntry;
}

export function maxPayloadBytes(slotBytes: number): number {
  return slotBytes - ENTRY_HEADER_BYTES;
}

export function lapOf(seq: number, ringSlots: number): number {
  return Math.floor((seq - 1) / ringSlots) + 1;
}

export function checkSeq(seq: unknown, ringSlots: number, name = 'seq'): number {
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq)) throw new TypeError(`${name} must be an integer, got ${String(seq)}`);
  const max = Math.min(Number.MAX_SAFE_INTEGER, ringSlots * COUNTER_MAX);
  if (seq < 1 || seq > max) throw new RangeError(`${name} must be in [1, ${max}], got ${seq}`);
  return seq;
}

function checkU32(name: string, v: unknown, min = 0): number {
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new TypeError(`${name} must be an integer, got ${String(v)}`);
  if (v < min || v > 0xffff_ffff) throw new RangeError(`${name} must be in [${min}, 4294967295], got ${v}`);
  return v;
}

function entryChecksum(lap: number, bytes: Uint8Array, payloadLength: number): number {
  LAP_DV.setUint32(0, lap, true);
  const c = crc32c(LAP_BYTES);
  return crc32c(bytes, 8, ENTRY_HEADER_BYTES + payloadLength, c);
}

/**
 * The bytes a client WRITEs for a request (header, payload and commit word; padded to 8 bytes),
 * to be placed at entryOffset(). The producer must hold a credit (checkCredit) for `seq`.
 * `alloc(n)` supplies the n zeroed bytes written (default a fresh Uint8Array; the RPC client
 * carves them from a slab, as a fresh array over 64 bytes lives off the V8 heap).
 */
export function encodeEntry(req: RingEntry, geometry: Pick<Geometry, 'slotBytes' | 'ringSlots'>, alloc: (n: number) => Uint8Array = newBytes): Uint8Array {
  if (req === null || typeof req !== 'object') throw new TypeError(`request must be an object, got ${String(req)}`);
  const clientId = checkU32('clientId', req.clientId, 1);
  const methodId = checkU32('methodId', req.methodId);
  const seq = checkSeq(req.seq, geometry.ringSlots);
  if (!(req.payload instanceof Uint8Array)) throw new TypeError('payload must be a Uint8Array');
  const max = maxPayloadBytes(geometry.slotBytes);
  if (req.payload.length > max) {
    throw new PmrpcError(RecoveryErrorCodes.TOO_LARGE, `payload of ${req.payload.length} bytes exceeds the ring slot's ${max} bytes`);
  }
  const len = (ENTRY_HEADER_BYTES + req.payload.length + 7) & ~7;
  const b = alloc(len);
  const plen = req.payload.length;
  const lap = lapOf(seq, geometry.ringSlots);
  putU32(b, 4, lap);
  putU32(b, 8, clientId);
  putU32(b, 12, methodId);
  putU32(b, 16, seq >>> 0);
  putU32(b, 20, Math.floor(seq / TWO_32));
  putU32(b, 24, plen);
  b.set(req.payload, ENTRY_HEADER_BYTES);
  // The lap word sits at +4, little-endian, just before +8: the CRC over [4, end) is the same value
  // as entryChecksum(lap, b, plen) (the lap's 4 bytes, then [8, end)), without a second pass.
  putU32(b, 0, crc32c(b, 4, ENTRY_HEADER_BYTES + plen));
  return b;
}

function newBytes(n: number): Uint8Array {
  return new Uint8Array(n);
}

/** Little-endian u32 store into a fresh buffer (no DataView per entry). */
function putU32(b: Uint8Array, off: number, v: number): void {
  b[off] = v & 0xff;
  b[off + 1] = (v >>> 8) & 0xff;
  b[off + 2] = (v >>> 16) & 0xff;
  b[off + 3] = v >>> 24;
}

/** Offset in the region of the slot that holds `seq` of the ring of `connSlot`. */
export function entryOffset(layout: Layout, connSlot: number, seq: number): number {
  const g = layout.geometry;
  checkSeq(seq, g.ringSlots);
  return layout.ringOffset(connSlot) + ((seq - 1) % g.ringSlots) * g.slotBytes;
}

/**
 * Producer-side credit check: `seq` may be placed only when every entry of the previous lap in its
 * slot is durably applied, i.e. seq <= creditSeq + ringSlots, where creditSeq is the value of the
 * client's credit word (ConnTable.creditOffset). Otherwise PMRPC_ERR_RING_FULL.
 */
export function checkCredit(seq: number, creditSeq: number, ringSlots: number): void {
  if (seq > creditSeq + ringSlots) {
    throw new PmrpcError(RecoveryErrorCodes.RING_FULL, `ring full: sequence ${seq} needs sequence ${seq - ringSlots} applied; applied up to ${creditSeq}`);
  }
}

let INSPECT_SCRATCH = new Uint8Array(256);

/** A copy of [offset, offset + len) of visible memory in a scratch reused by inspectSlot (owner thread only). */
function inspectScratch(region: PmemRegion, offset: number, len: number): Uint8Array {
  if (INSPECT_SCRATCH.length < len) INSPECT_SCRATCH = new Uint8Array(Math.max(len, 2 * INSPECT_SCRATCH.length));
  const b = INSPECT_SCRATCH.subarray(0, len);
  region.loadInto(offset, b);
  return b;
}

/** Reads a slot and judges it against the entry expected there (client, seq). Reads only. */
export function inspectSlot(
  region: PmemRegion,
  slotOffset: number,
  g: Pick<Geometry, 'slotBytes' | 'ringSlots'>,
  expect: { clientId: number; seq: number },
  verifyChecksum = true,
): SlotInspection {
  // Header words read in place (no view, no BigInt): this runs on every poll that finds no new entry.
  const crc = region.loadU32(slotOffset);
  const lap = region.loadU32(slotOffset + 4);
  const clientId = region.loadU32(slotOffset + 8);
  const methodId = region.loadU32(slotOffset + 12);
  const seqLo = region.loadU32(slotOffset + 16);
  const seqHi = region.loadU32(slotOffset + 20);
  const payloadLength = region.loadU32(slotOffset + 24);
  const reserved = region.loadU32(slotOffset + 28);
  const commitZero = crc === 0 && lap === 0;
  const blank = commitZero && clientId === 0 && methodId === 0 && seqLo === 0 && seqHi === 0 && payloadLength === 0 && reserved === 0;
  const sane = lap >= 1 && clientId >= 1 && reserved === 0 && payloadLength <= maxPayloadBytes(g.slotBytes);
  const seq = seqHi <= 0x1f_ffff ? seqHi * TWO_32 + seqLo : -1;
  const expLap = lapOf(expect.seq, g.ringSlots);
  let rel: LapRelation = 'other';
  if (lap === expLap && seq === expect.seq) rel = 'expected';
  else if (lap === expLap - 1 && seq === expect.seq - g.ringSlots) rel = 'previous';
  let crcOk = false;
  let bytes: Uint8Array | undefined;
  if (sane) {
    // The entry a caller gets is a copy, validated itself (what was checked is what the caller
    // gets); any other verdict needs only the checksum, computed in place.
    const keep = rel === 'expected' && clientId === expect.clientId;
    // (The checksum-only case copies into a reused scratch: a CRC over a view of the region's
    // SharedArrayBuffer reads each byte several times slower. It runs on every poll that ends a pass.)
    bytes = keep ? region.load(slotOffset, ENTRY_HEADER_BYTES + payloadLength) : inspectScratch(region, slotOffset, ENTRY_HEADER_BYTES + payloadLength);
    crcOk = !verifyChecksum || entryChecksum(lap, bytes, payloadLength) === crc;
  }
  const checksumValid = crcOk && clientId === expect.clientId;
  const foreign = crcOk && clientId !== expect.clientId;
  const out: SlotInspection = { blank, commitZero, checksumValid, foreign, lap: rel };
  if (checksumValid && rel === 'expected') {
    invariant(bytes !== undefined && bytes.byteOffset === 0 && new DataView(bytes.buffer).getUint32(8, true) === expect.clientId, () => `slot at ${slotOffset} decoded for another client than ${expect.clientId}`);
    out.entry = { clientId, seq, methodId, payload: bytes.subarray(ENTRY_HEADER_BYTES) };
  }
  return out;
}

/** Durably invalidates a slot (ring slot or receive slot): its commit word becomes zero. */
export function invalidateSlot(region: PmemRegion, slotOffset: number): void {
  region.storeU64Atomic(slotOffset, 0n);
  region.persist(slotOffset, 8);
}

export type PollResult =
  | { kind: 'empty' }
  | { kind: 'partial'; seq: number; polls: number }
  | { kind: 'entry'; entry: RingEntry; slotOffset: number };

export interface RingOptions {
  /** Consecutive polls that may see the next entry partially arrived before PMRPC_ERR_ENTRY_TORN. */
  partialPollsMax: number;
  faults: RecoveryFaults | undefined;
}

export const RING_DEFAULTS: Readonly<RingOptions> = Object.freeze({ partialPollsMax: 1000, faults: undefined });

/** The consumer side of one client's ring: polls entries in sequence order. */
export class Ring {
  readonly layout: Layout;
  readonly connSlot: number;
  readonly clientId: number;
  readonly options: Readonly<RingOptions>;
  #nextSeq: number;
  #partialPolls = 0;
  #faults: RecoveryFaults;

  constructor(layout: Layout, connSlot: number, clientId: number, nextSeq: number, options: Partial<RingOptions> = {}) {
    const o = resolveOptions(RING_DEFAULTS, options, { partialPollsMax: positiveInt });
    this.#faults = checkFaults(o.faults);
    this.layout = layout;
    this.connSlot = connSlot;
    this.clientId = checkU32('clientId', clientId, 1);
    this.#nextSeq = checkSeq(nextSeq, layout.geometry.ringSlots, 'nextSeq');
    this.options = Object.freeze(o);
  }

  /** The sequence the next poll looks for. */
  get nextSeq(): number {
    return this.#nextSeq;
  }

  slotOffset(seq: number): number {
    return entryOffset(this.layout, this.connSlot, seq);
  }

  /**
   * Looks at the slot of the next sequence. 'entry' consumes it (the caller must process it);
   * 'empty': the commit word is zero, still the previous lap's, or a former occupant's (another
   * client id: a reused connection slot needs no clearing). 'partial': a commit word or
   * bytes are there but the checksum does not match yet (still arriving).
   */
  poll(): PollResult {
    const seq = this.#nextSeq;
    const off = this.slotOffset(seq);
    const fast = this.#pollExpected(seq, off);
    if (fast !== undefined) return fast;
    const s = inspectSlot(this.layout.region, off, this.layout.geometry, { clientId: this.clientId, seq }, !this.#faults.skipChecksumAtPoll);
    if (s.entry !== undefined) {
      this.#partialPolls = 0;
      this.#nextSeq = seq + 1;
      return { kind: 'entry', entry: s.entry, slotOffset: off };
    }
    if (s.commitZero || s.foreign || (s.checksumValid && s.lap === 'previous')) {
      this.#partialPolls = 0;
      return { kind: 'empty' };
    }
    if (s.checksumValid) {
      throw new PmrpcError(RecoveryErrorCodes.RING_OVERRUN, `client ${this.clientId}: the slot of sequence ${seq} holds another valid entry (written beyond its credits)`);
    }
    this.#partialPolls++;
    if (this.#partialPolls > this.options.partialPollsMax) {
      throw new PmrpcError(RecoveryErrorCodes.ENTRY_TORN, `client ${this.clientId}: entry ${seq} still incomplete after ${this.options.partialPollsMax} polls`);
    }
    return { kind: 'partial', seq, polls: this.#partialPolls };
  }

  /**
   * The common case of poll, judged on the header words in place: the slot's header names the
   * expected entry (lap, client, sequence, sane length), so its bytes are copied once and the
   * checksum verified on that copy (what was checked is what the caller gets) — the same verdict
   * inspectSlot gives such a slot. Anything else (empty, earlier lap, foreign, a checksum that does
   * not match yet) returns undefined: inspectSlot classifies it.
   */
  #pollExpected(seq: number, off: number): PollResult | undefined {
    const r = this.layout.region;
    const g = this.layout.geometry;
    // The header words, read once in place (the common "nothing new" case stops at the first: a
    // slot of the previous lap); the entry is made of these values and a copy of the payload.
    const lap = lapOf(seq, g.ringSlots);
    if (r.loadU32(off + 4) !== lap) return undefined;
    const clientId = r.loadU32(off + 8);
    const methodId = r.loadU32(off + 12);
    const seqLo = r.loadU32(off + 16);
    const seqHi = r.loadU32(off + 20);
    const payloadLength = r.loadU32(off + 24);
    const reserved = r.loadU32(off + 28);
    if (clientId !== this.clientId || seqLo !== seq >>> 0 || seqHi !== Math.floor(seq / TWO_32) || reserved !== 0 || payloadLength > maxPayloadBytes(g.slotBytes)) return undefined;
    const crc = r.loadU32(off);
    // The payload alone is copied (into a slab view, PAYLOADS: no buffer outside the heap per
    // request). The checksum is verified over what the caller gets: the header values read above
    // (re-encoded into a scratch; [4, 32) is the lap then the header, as entryChecksum) and the copy.
    const payload = PAYLOADS.alloc(payloadLength);
    r.loadInto(off + ENTRY_HEADER_BYTES, payload);
    if (!this.#faults.skipChecksumAtPoll) {
      const h = HEAD_DV;
      h.setUint32(4, lap, true);
      h.setUint32(8, clientId, true);
      h.setUint32(12, methodId, true);
      h.setUint32(16, seqLo, true);
      h.setUint32(20, seqHi, true);
      h.setUint32(24, payloadLength, true);
      h.setUint32(28, 0, true);
      if (crc32c(payload, 0, payloadLength, crc32c(HEAD_BYTES, 4, ENTRY_HEADER_BYTES)) !== crc) return undefined;
    }
    this.#partialPolls = 0;
    this.#nextSeq = seq + 1;
    return { kind: 'entry', entry: { clientId, seq, methodId, payload }, slotOffset: off };
  }

  /**
   * Receiver-persist strategies: make a consumed entry durable before acknowledging it. Ring
   * positions: only an entry already consumed (1 <= seq < nextSeq) — never the slot of one the
   * client may still be writing. (How far behind the poll position is the client's to keep: a
   * client that writes past its credits overwrites consumed entries' slots — its own fault, which
   * must not stop the server.)
   */
  persistEntry(seq: number): void {
    invariant(Number.isSafeInteger(seq) && seq >= 1 && seq < this.#nextSeq, () => `client ${this.clientId}: entry ${seq} persisted, the ring polls at ${this.#nextSeq}`);
    this.layout.region.persist(this.slotOffset(seq), this.layout.geometry.slotBytes);
  }
}
