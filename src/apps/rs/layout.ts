/**
 * PRISM-RS's durable layout on one replica (DESIGN §2.4, §5; docs/rs.md). All integers little-endian.
 *
 * RS area at `base` (64-byte aligned), one MR up to the mailbox:
 *   header   [base, base+256)   line 0–1: config (magic, version, geometry, crc); line 2: epoch word
 *   slots    blocks × 32 B       slot = ptr u64 | bound u64 | writer u64 | ts u64
 *   arena    one sub-arena per size class, buffers of 2^k bytes, sizeBytes-aligned offsets
 *   mailbox  receive buffers of the buffer-return RPC (KV's mailbox)
 *
 * The slot fits one enhanced CAS (32 B). ⟨ptr, bound⟩ lie side by side at +0 for the bounded
 * indirect READ; the tag ⟨ts, writer⟩ takes +16..+32 with the timestamp in the highest 8 bytes,
 * so the CAS's unsigned little-endian compare under a mask of bytes 16..31 orders tags by
 * timestamp, then writer id: one CAS `gt` installs a newer ⟨ptr, bound, tag⟩ whole.
 *
 * The ptr word is the one aligned 8-byte word (failure-atomic) and the durable truth: bound and tag
 * are derived from the item it points at, so recovery repairs a slot that a crash tore (a CAS
 * result whose 8-byte pieces persisted only in part) from that item. Empty slot: ptr = base (the
 * header: inside the MR, so a bounded READ of min(len, 0) = 0 bytes never faults), bound 0, tag
 * ⟨0, 0⟩. A slot whose pointer recovery rejected becomes LOST: ptr = base, bound 0, tag
 * ⟨0, 2^64-1⟩ — this replica lost its copy and does not answer for the block until a write or a
 * reader's write-back installs a value (any real tag, ts ≥ 1, is greater).
 *
 * Item (self-describing, in one ALLOCATEd buffer; bytes 16..32 laid out as the slot's tag):
 *   +0 crc32c u32 over [4, 32 + len)   +4 len u32   +8 block u64   +16 writer u64   +24 ts u64   +32 value
 */
import { crc32c, defineErrorCodes, intIn, PmrpcError, resolveOptions, type ErrorCodesOf, type OptionChecks } from '../../../pmem/index.js';
import { MAILBOX_BUFFER_BYTES, sizeClassesCheck, type SizeClass } from '../shared/index.js';
import { AREA_MAGIC } from '../index.js';

export const RS_MAGIC = AREA_MAGIC.rs; // 'RMSPRS01' little-endian
export const RS_LAYOUT_VERSION = 1;
export const RS_HEADER_BYTES = 256;
export const RS_EPOCH_OFFSET = 128;
export const RS_SLOT_BYTES = 32;
export const RS_ITEM_HEADER_BYTES = 32;
export const RS_MAX_CLASSES = 8;
/** Mailbox buffers are the shared mailbox's (1 KiB each, src/apps/shared): a return batch (idempotent: a 32-byte header, shared/returns.ts) carries (1024 - 32) / 8 pointers. */
export const RS_MAILBOX_BUFFER_BYTES = MAILBOX_BUFFER_BYTES;
export const RS_RETURN_BATCH_MAX = (RS_MAILBOX_BUFFER_BYTES - 32) / 8;
/** Receipts in one receipt return batch (16 bytes each: qpn u32 | slot u32 | serial u64). */
export const RS_RECEIPT_BATCH_MAX = (RS_MAILBOX_BUFFER_BYTES - 32) / 16;
/** Bytes of one install chain's receipt in the connection's scratch (client.ts: serial | ptr | bound | writer | ts | old slot). */
export const RS_RECEIPT_BYTES = 72;
/** Receipt slots per connection: install chains in flight at once on one QP (3 × 72 B fit the NIC's default 256-byte scratch). */
export const RS_INSTALL_RECEIPTS = 3;
/** The bound a receipt's old-slot value holds until the chain's CAS overwrites it (no slot has it: bounds are 0 or a class size). */
export const RS_RECEIPT_NO_CAS = 1n;

const MASK64 = (1n << 64n) - 1n;

export const RsErrorCodes = defineErrorCodes('rs', {
  /** Fewer than a majority of replicas answered within the bounded wait: the operation may or may not have happened. */
  NO_MAJORITY: 'PMRPC_ERR_RS_NO_MAJORITY',
  /** The block number is outside [0, blocks). */
  BAD_BLOCK: 'PMRPC_ERR_RS_BAD_BLOCK',
  /** The value (plus the 32-byte item header) exceeds the largest size class. */
  VALUE_TOO_LARGE: 'PMRPC_ERR_RS_VALUE_TOO_LARGE',
  /** The region holds no RS area at this offset, or its header is damaged; or a welcome is not an RS address. */
  NOT_FORMATTED: 'PMRPC_ERR_RS_NOT_FORMATTED',
  /** format() found an RS area already there: it is never overwritten. */
  ALREADY_FORMATTED: 'PMRPC_ERR_RS_ALREADY_FORMATTED',
  /** The RS layout does not fit the region. */
  LAYOUT_TOO_LARGE: 'PMRPC_ERR_RS_LAYOUT_TOO_LARGE',
  /** The replicas of one client disagree on the geometry (blocks, size classes). */
  GEOMETRY_MISMATCH: 'PMRPC_ERR_RS_GEOMETRY_MISMATCH',
  /** The client was used after close(). */
  CLOSED: 'PMRPC_ERR_RS_CLOSED',
});

declare module '../../../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof RsErrorCodes> {}
}

/** A size class of the RS arena (the shared apps module's). */
export type RsSizeClass = SizeClass;

export interface RsLayoutOptions {
  /** Blocks (registers) per replica. */
  blocks: number;
  /** Size classes of the item arena, increasing powers of two in [64, 2^20]. */
  classes: readonly RsSizeClass[];
  /** Receive buffers of the return RPC (two per connection). */
  mailboxBuffers: number;
}

export const RS_LAYOUT_DEFAULTS: Readonly<RsLayoutOptions> = Object.freeze({
  blocks: 256,
  classes: Object.freeze([
    Object.freeze({ sizeBytes: 64, count: 512 }),
    Object.freeze({ sizeBytes: 128, count: 512 }),
    Object.freeze({ sizeBytes: 256, count: 256 }),
    Object.freeze({ sizeBytes: 512, count: 256 }),
    Object.freeze({ sizeBytes: 1024, count: 128 }),
    Object.freeze({ sizeBytes: 2048, count: 128 }),
    Object.freeze({ sizeBytes: 4096, count: 64 }),
    Object.freeze({ sizeBytes: 8192, count: 64 }),
  ]),
  mailboxBuffers: 128,
});

const RS_LAYOUT_CHECKS: OptionChecks<RsLayoutOptions> = {
  blocks: intIn(1, 1 << 20),
  classes: sizeClassesCheck(RS_MAX_CLASSES),
  mailboxBuffers: intIn(2, 4096),
};

export function validateRsLayout(options: Partial<RsLayoutOptions>): RsLayoutOptions {
  return resolveOptions(RS_LAYOUT_DEFAULTS, options, RS_LAYOUT_CHECKS);
}

export interface RsGeometry {
  base: number;
  blocks: number;
  classes: Array<RsSizeClass & { offset: number }>;
  slotsOffset: number;
  arenaOffset: number;
  arenaEnd: number;
  mailboxOffset: number;
  mailboxBuffers: number;
  /** Bytes from base to the end of the mailbox. */
  totalBytes: number;
}

export function computeRsGeometry(base: number, o: RsLayoutOptions): RsGeometry {
  if (!Number.isSafeInteger(base) || base < 0 || base % 64 !== 0) throw new RangeError(`base must be a non-negative multiple of 64, got ${String(base)}`);
  const slotsOffset = base + RS_HEADER_BYTES;
  let at = slotsOffset + o.blocks * RS_SLOT_BYTES;
  const classes = o.classes.map((c) => {
    at = Math.ceil(at / c.sizeBytes) * c.sizeBytes;
    const offset = at;
    at += c.sizeBytes * c.count;
    return { sizeBytes: c.sizeBytes, count: c.count, offset };
  });
  const mailboxOffset = Math.ceil(at / 64) * 64;
  const end = mailboxOffset + o.mailboxBuffers * RS_MAILBOX_BUFFER_BYTES;
  return { base, blocks: o.blocks, classes, slotsOffset, arenaOffset: classes[0]!.offset, arenaEnd: at, mailboxOffset, mailboxBuffers: o.mailboxBuffers, totalBytes: end - base };
}

export function encodeRsHeader(g: RsGeometry): Uint8Array {
  const b = new Uint8Array(128);
  const dv = new DataView(b.buffer);
  dv.setBigUint64(0, RS_MAGIC, true);
  dv.setUint32(8, RS_LAYOUT_VERSION, true);
  dv.setUint32(12, g.blocks, true);
  dv.setUint32(16, g.classes.length, true);
  dv.setUint32(20, g.mailboxBuffers, true);
  g.classes.forEach((c, i) => {
    dv.setUint32(32 + i * 8, c.sizeBytes, true);
    dv.setUint32(36 + i * 8, c.count, true);
  });
  dv.setUint32(124, crc32c(b.subarray(0, 124)), true);
  return b;
}

/** The geometry an RS header describes; NOT_FORMATTED for anything but a valid header. */
export function decodeRsHeader(b: Uint8Array, base: number): RsGeometry {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (b.length < 128 || dv.getBigUint64(0, true) !== RS_MAGIC) throw new PmrpcError(RsErrorCodes.NOT_FORMATTED, `no RS area at offset ${base}`);
  if (dv.getUint32(124, true) !== crc32c(b.subarray(0, 124))) throw new PmrpcError(RsErrorCodes.NOT_FORMATTED, `the RS header at offset ${base} fails its checksum`);
  if (dv.getUint32(8, true) !== RS_LAYOUT_VERSION) throw new PmrpcError(RsErrorCodes.NOT_FORMATTED, `RS layout version ${dv.getUint32(8, true)} is not supported`);
  const n = Math.min(dv.getUint32(16, true), RS_MAX_CLASSES);
  const classes: RsSizeClass[] = [];
  for (let i = 0; i < n; i++) classes.push({ sizeBytes: dv.getUint32(32 + i * 8, true), count: dv.getUint32(36 + i * 8, true) });
  return computeRsGeometry(base, validateRsLayout({ blocks: dv.getUint32(12, true), classes, mailboxBuffers: dv.getUint32(20, true) }));
}

// ------------------------------------------------------------------ tags and slots

/** A tag: timestamp first, then writer id. */
export interface Tag {
  ts: bigint;
  writer: bigint;
}

export const ZERO_TAG: Readonly<Tag> = Object.freeze({ ts: 0n, writer: 0n });
/** The tag of a LOST slot (this replica lost its copy): below every real tag (ts ≥ 1). */
export const LOST_TAG: Readonly<Tag> = Object.freeze({ ts: 0n, writer: MASK64 });

export function compareTags(a: Tag, b: Tag): number {
  return a.ts !== b.ts ? (a.ts < b.ts ? -1 : 1) : a.writer !== b.writer ? (a.writer < b.writer ? -1 : 1) : 0;
}

export function isLostTag(t: Tag): boolean {
  return t.ts === 0n && t.writer === MASK64;
}

export interface RsSlot {
  ptr: number;
  bound: number;
  tag: Tag;
}

export function rsSlotOffset(g: RsGeometry, block: number): number {
  return g.slotsOffset + block * RS_SLOT_BYTES;
}

export function encodeRsSlot(s: RsSlot): Uint8Array {
  const b = new Uint8Array(RS_SLOT_BYTES);
  const dv = new DataView(b.buffer);
  dv.setBigUint64(0, BigInt(s.ptr), true);
  dv.setBigUint64(8, BigInt(s.bound), true);
  dv.setBigUint64(16, s.tag.writer, true);
  dv.setBigUint64(24, s.tag.ts, true);
  return b;
}

export function decodeRsSlot(b: Uint8Array, off = 0): RsSlot {
  const dv = new DataView(b.buffer, b.byteOffset + off, RS_SLOT_BYTES);
  const p = dv.getBigUint64(0, true);
  const bd = dv.getBigUint64(8, true);
  const safe = (x: bigint): number => (x > BigInt(Number.MAX_SAFE_INTEGER) ? -1 : Number(x));
  return { ptr: safe(p), bound: safe(bd), tag: { writer: dv.getBigUint64(16, true), ts: dv.getBigUint64(24, true) } };
}

export function emptyRsSlot(g: RsGeometry): RsSlot {
  return { ptr: g.base, bound: 0, tag: { ...ZERO_TAG } };
}

export function lostRsSlot(g: RsGeometry): RsSlot {
  return { ptr: g.base, bound: 0, tag: { ...LOST_TAG } };
}

/** Compare mask of the install CAS: bytes 16..31 (the tag). A fresh copy each call (typed arrays cannot be frozen). */
export function rsTagMask(): Uint8Array {
  return Uint8Array.from({ length: RS_SLOT_BYTES }, (_, i) => (i >= 16 ? 0xff : 0));
}

/** The size class whose buffers hold `ptr` (inside its sub-arena, aligned to its size), or undefined. */
export function rsClassOf(g: RsGeometry, ptr: number): (RsSizeClass & { offset: number }) | undefined {
  for (const c of g.classes) {
    if (ptr >= c.offset && ptr < c.offset + c.sizeBytes * c.count) return (ptr - c.offset) % c.sizeBytes === 0 ? c : undefined;
  }
  return undefined;
}

/** The smallest class that holds an item of a `valueLen`-byte value. */
export function rsClassFor(g: RsGeometry, valueLen: number): (RsSizeClass & { offset: number }) | undefined {
  return g.classes.find((c) => c.sizeBytes >= RS_ITEM_HEADER_BYTES + valueLen);
}

// ------------------------------------------------------------------ items

export interface RsItem {
  block: number;
  tag: Tag;
  value: Uint8Array;
}

export function encodeRsItem(it: RsItem): Uint8Array {
  const b = new Uint8Array(RS_ITEM_HEADER_BYTES + it.value.length);
  const dv = new DataView(b.buffer);
  dv.setUint32(4, it.value.length, true);
  dv.setBigUint64(8, BigInt(it.block), true);
  dv.setBigUint64(16, it.tag.writer, true);
  dv.setBigUint64(24, it.tag.ts, true);
  b.set(it.value, RS_ITEM_HEADER_BYTES);
  dv.setUint32(0, crc32c(b.subarray(4)), true);
  return b;
}

/** The item in `b` (a buffer or the prefix a READ returned), or undefined when it does not check out. */
export function decodeRsItem(b: Uint8Array): RsItem | undefined {
  if (b.length < RS_ITEM_HEADER_BYTES) return undefined;
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const len = dv.getUint32(4, true);
  const n = RS_ITEM_HEADER_BYTES + len;
  if (n > b.length) return undefined;
  if (dv.getUint32(0, true) !== crc32c(b, 4, n)) return undefined;
  const block = dv.getBigUint64(8, true);
  if (block > 0xffff_ffffn) return undefined;
  const tag = { writer: dv.getBigUint64(16, true), ts: dv.getBigUint64(24, true) };
  if (tag.ts === 0n) return undefined; // every written value has ts >= 1
  return { block: Number(block), tag, value: b.slice(RS_ITEM_HEADER_BYTES, n) };
}
