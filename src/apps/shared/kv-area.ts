/**
 * The KV area's durable layout in server PM (DESIGN §2.4, §5), shared by PRISM-KV (src/apps/kv) and
 * the Pilaf-style baseline (src/apps/pilaf): header, index geometry and probing, size-class arena,
 * item format. PRISM-KV's slot word is in kv/layout.ts, Pilaf's entry in pilaf/layout.ts. All
 * integers little-endian.
 *
 * KV area at `base` (64-byte aligned), registered as one MR:
 *   header   [base, base+256)       line 0–1: config (magic, version, geometry, crc); line 2: epoch word
 *   index    slotCount × 32 B        slot = ptr u64 | bound u64 | version u64 | reserved u64
 *   arena    one sub-arena per size class, buffers of 2^k bytes, sizeBytes-aligned offsets from base
 *   mailbox  recv buffers for the buffer-return RPC (SEND payloads)
 *
 * The slot's ptr word is the one aligned 8-byte word readers follow and the single durable truth:
 * the emulated NIC dereferences the whole word as an address, so size class and version cannot
 * be packed into it; the bound word (for bounded READs) and the version word (for the CAS) are
 * derived from the item ptr points at, and recovery rewrites them after a crash that tore the
 * 24-byte CAS (DESIGN §2.4: "or recovery must repair what a torn wider slot leaves").
 * An empty slot holds ptr = base (the KV header: always inside the MR, so a bounded READ of
 * min(len, 0) = 0 bytes never faults), bound 0, version 0.
 *
 * Item (self-describing, in one ALLOCATEd buffer):
 *   +0 crc32c u32 over [4, 24 + keyLen + valueLen)   +4 flags u8 (1 = tombstone, 2 = dead)   +5 keyLen u8
 *   +6 reserved u16   +8 valueLen u32   +12 reserved u32   +16 version u64   +24 key   then value
 */
import { AREA_MAGIC } from '../index.js';
import { MAILBOX_BUFFER_BYTES } from './mailbox.js';
import { sizeClassesCheck, type SizeClass } from './size-classes.js';
import { crc32c, intIn, must, PmrpcError, resolveOptions, defineErrorCodes, type ErrorCodesOf, type OptionCheck, type OptionChecks } from '../../../pmem/index.js';

export const KV_MAGIC = AREA_MAGIC.kv; // 'RMSPVK01' little-endian
/**
 * Layout version of new KV areas. 2: a key's probe sequence is groups of `groupSlots` contiguous
 * slots at hashed positions (header field at +96). 1: one contiguous window of `probeSlots` slots
 * (a version-1 area keeps it: its groupSlots is its probeSlots).
 */
export const KV_LAYOUT_VERSION = 2;
/** Versions decodeKvHeader accepts. */
export const KV_LAYOUT_VERSIONS: readonly number[] = Object.freeze([1, 2]);
/** Slots per probe group in a new area (fewer when probeSlots or slotCount is smaller). */
export const KV_GROUP_SLOTS = 4;
/** Largest probeSlots (a key's probe sequence, all groups together). */
export const KV_PROBE_SLOTS_MAX = 256;
/** RangeError unless a non-negative multiple of 64 (the offset of a KV area). */
export const kvBase: OptionCheck = must((v) => Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) % 64 === 0, (v) => `must be a non-negative multiple of 64, got ${String(v)}`, RangeError);
export const KV_HEADER_BYTES = 256;
export const KV_EPOCH_OFFSET = 128;
export const SLOT_BYTES = 32;
export const ITEM_HEADER_BYTES = 24;
export const FLAG_TOMBSTONE = 1;
/** A dead item (no key): recovery puts one where it rejected a slot's pointer, so probing goes on past the slot. */
export const FLAG_DEAD = 2;
export const MAX_CLASSES = 8;
/** Pointers one return batch carries: (MAILBOX_BUFFER_BYTES - 16) / 8. */
export const RETURN_BATCH_MAX = (MAILBOX_BUFFER_BYTES - 16) / 8;

export const KvErrorCodes = defineErrorCodes('kv', {
  /** The key is longer than keyBytesMax (or empty). */
  KEY_TOO_LONG: 'PMRPC_ERR_KV_KEY_TOO_LONG',
  /** Item (24 B header + key + value) larger than the largest size class. */
  VALUE_TOO_LARGE: 'PMRPC_ERR_KV_VALUE_TOO_LARGE',
  /** Every slot of the key's probe window is claimed by other keys. */
  INDEX_FULL: 'PMRPC_ERR_KV_INDEX_FULL',
  /** The free list of the item's size class stayed empty after returning the client's buffers. */
  FULL: 'PMRPC_ERR_KV_FULL',
  /** ALLOCATE refused: the server is rebuilding its free lists after a crash (retry later). */
  RECOVERING: 'PMRPC_ERR_KV_RECOVERING',
  /** Concurrent writers kept winning the slot past the retry bound. */
  CONTENDED: 'PMRPC_ERR_KV_CONTENDED',
  /** An item failed its checksum on every retry (a torn read that did not go away, or damage). */
  CORRUPT: 'PMRPC_ERR_KV_CORRUPT',
  /** The region holds no KV area at this offset, or its header is damaged. */
  NOT_FORMATTED: 'PMRPC_ERR_KV_NOT_FORMATTED',
  /** The connection dropped before a PUT / DELETE was answered, and the slot moved on since: it may or may not have happened. */
  INDETERMINATE: 'PMRPC_ERR_KV_INDETERMINATE',
  /** The server refused a buffer return (stale epoch, bad pointer, buffer still reachable). */
  RETURN_REFUSED: 'PMRPC_ERR_KV_RETURN_REFUSED',
  /** format() found a KV area already there: it is never overwritten. */
  ALREADY_FORMATTED: 'PMRPC_ERR_KV_ALREADY_FORMATTED',
  /** The KV layout does not fit where it was asked to go. */
  LAYOUT_TOO_LARGE: 'PMRPC_ERR_KV_LAYOUT_TOO_LARGE',
});

declare module '../../../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof KvErrorCodes> {}
}

export interface KvGeometry {
  base: number;
  slotCount: number;
  /** Slots of a key's probe sequence (all groups; fewer distinct ones when groups overlap). */
  probeSlots: number;
  /** Contiguous slots per probe group: the sequence is ceil(probeSlots / groupSlots) groups (version 1: one group, the window). */
  groupSlots: number;
  /** The header's layout version (1: contiguous window; 2: groups at hashed positions). */
  layoutVersion: number;
  keyBytesMax: number;
  classes: Array<SizeClass & { offset: number }>;
  indexOffset: number;
  arenaOffset: number;
  arenaEnd: number;
  mailboxOffset: number;
  mailboxBuffers: number;
  /** Bytes from base to the end of the mailbox. */
  totalBytes: number;
}

export interface KvLayoutOptions {
  slotCount: number;
  probeSlots: number;
  keyBytesMax: number;
  classes: readonly SizeClass[];
  mailboxBuffers: number;
}

export const KV_LAYOUT_DEFAULTS: Readonly<KvLayoutOptions> = Object.freeze({
  slotCount: 1024,
  probeSlots: 96,
  keyBytesMax: 64,
  classes: Object.freeze([
    Object.freeze({ sizeBytes: 64, count: 1024 }),
    Object.freeze({ sizeBytes: 128, count: 1024 }),
    Object.freeze({ sizeBytes: 256, count: 512 }),
    Object.freeze({ sizeBytes: 1024, count: 256 }),
  ]),
  mailboxBuffers: 64,
});

const KV_LAYOUT_CHECKS: OptionChecks<KvLayoutOptions> = {
  slotCount: intIn(1, 1 << 24, '[1, 2^24]'),
  probeSlots: intIn(1, KV_PROBE_SLOTS_MAX),
  keyBytesMax: intIn(1, 255),
  classes: sizeClassesCheck(MAX_CLASSES),
  mailboxBuffers: intIn(1, 4096),
};

export function validateLayoutOptions(options: Partial<KvLayoutOptions>): KvLayoutOptions {
  return resolveOptions(KV_LAYOUT_DEFAULTS, options, KV_LAYOUT_CHECKS);
}

/** Where everything lies, for a KV area at `base` (a new area: layout version 2, groups of KV_GROUP_SLOTS; `window` gives a version-1 area's geometry). */
export function computeKvGeometry(base: number, o: KvLayoutOptions, window = false): KvGeometry {
  if (!Number.isSafeInteger(base) || base < 0 || base % 64 !== 0) throw new RangeError(`base must be a non-negative multiple of 64, got ${String(base)}`);
  const indexOffset = base + KV_HEADER_BYTES;
  let at = indexOffset + o.slotCount * SLOT_BYTES;
  const classes = o.classes.map((c) => {
    at = Math.ceil(at / c.sizeBytes) * c.sizeBytes;
    const offset = at;
    at += c.sizeBytes * c.count;
    return { sizeBytes: c.sizeBytes, count: c.count, offset };
  });
  const arenaOffset = classes[0]!.offset;
  const arenaEnd = at;
  const mailboxOffset = Math.ceil(at / 64) * 64;
  const end = mailboxOffset + o.mailboxBuffers * MAILBOX_BUFFER_BYTES;
  return {
    base,
    slotCount: o.slotCount,
    probeSlots: o.probeSlots,
    groupSlots: window ? o.probeSlots : Math.min(KV_GROUP_SLOTS, o.probeSlots, o.slotCount),
    layoutVersion: window ? 1 : KV_LAYOUT_VERSION,
    keyBytesMax: o.keyBytesMax,
    classes,
    indexOffset,
    arenaOffset,
    arenaEnd,
    mailboxOffset,
    mailboxBuffers: o.mailboxBuffers,
    totalBytes: end - base,
  };
}

export function encodeKvHeader(g: KvGeometry, magic: bigint = KV_MAGIC): Uint8Array {
  const b = new Uint8Array(128);
  const dv = new DataView(b.buffer);
  dv.setBigUint64(0, magic, true);
  dv.setUint32(8, g.layoutVersion, true);
  dv.setUint32(12, g.slotCount, true);
  dv.setUint32(16, g.probeSlots, true);
  dv.setUint32(20, g.classes.length, true);
  dv.setUint32(24, g.keyBytesMax, true);
  dv.setUint32(28, g.mailboxBuffers, true);
  g.classes.forEach((c, i) => {
    dv.setUint32(32 + i * 8, c.sizeBytes, true);
    dv.setUint32(36 + i * 8, c.count, true);
  });
  if (g.layoutVersion >= 2) dv.setUint32(96, g.groupSlots, true);
  dv.setUint32(124, crc32c(b.subarray(0, 124)), true);
  return b;
}

/** The geometry a KV header describes; NOT_FORMATTED for anything but a valid header. */
export function decodeKvHeader(b: Uint8Array, base: number, magic: bigint = KV_MAGIC): KvGeometry {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (b.length < 128 || dv.getBigUint64(0, true) !== magic) throw new PmrpcError(KvErrorCodes.NOT_FORMATTED, `no KV area at offset ${base}`);
  if (dv.getUint32(124, true) !== crc32c(b.subarray(0, 124))) throw new PmrpcError(KvErrorCodes.NOT_FORMATTED, `the KV header at offset ${base} fails its checksum`);
  const version = dv.getUint32(8, true);
  if (!KV_LAYOUT_VERSIONS.includes(version)) throw new PmrpcError(KvErrorCodes.NOT_FORMATTED, `KV layout version ${version} is not supported`);
  const n = dv.getUint32(20, true);
  const classes: SizeClass[] = [];
  for (let i = 0; i < n && i < MAX_CLASSES; i++) classes.push({ sizeBytes: dv.getUint32(32 + i * 8, true), count: dv.getUint32(36 + i * 8, true) });
  const o = validateLayoutOptions({ slotCount: dv.getUint32(12, true), probeSlots: dv.getUint32(16, true), keyBytesMax: dv.getUint32(24, true), classes, mailboxBuffers: dv.getUint32(28, true) });
  // Version 1: one contiguous window of probeSlots (at most 16) from the home slot.
  if (version === 1 && o.probeSlots > Math.min(16, o.slotCount)) throw new PmrpcError(KvErrorCodes.NOT_FORMATTED, `the version-1 KV header at offset ${base} has a ${o.probeSlots}-slot window for ${o.slotCount} slots`);
  const g = computeKvGeometry(base, o, version === 1);
  if (version >= 2 && dv.getUint32(96, true) !== g.groupSlots) throw new PmrpcError(KvErrorCodes.NOT_FORMATTED, `the KV header at offset ${base} records ${dv.getUint32(96, true)} slots per probe group, not ${g.groupSlots}`);
  return g;
}

// ------------------------------------------------------------------ slots

export function slotOffset(g: KvGeometry, index: number): number {
  return g.indexOffset + index * SLOT_BYTES;
}

/** FNV-1a 32 of the key. */
export function hashKey(key: Uint8Array): number {
  let h = 0x811c9dc5;
  for (const x of key) h = Math.imul(h ^ x, 0x01000193) >>> 0;
  return h >>> 0;
}

/** First slot of the key's probe sequence: group 0 is [home, home + groupSlots), never wrapping. */
export function homeSlot(g: KvGeometry, key: Uint8Array): number {
  return hashKey(key) % (g.slotCount - g.groupSlots + 1);
}

/** A murmur3-style 32-bit finalizer: the positions of groups 1, 2, … from the key's hash. */
function mix32(x: number): number {
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

const GROUP_SALT = 0x9e3779b9;

/**
 * The key's probe sequence: the slots a key may occupy, in the order every client probes them.
 * ceil(probeSlots / groupSlots) groups of groupSlots contiguous slots (the last one shorter when
 * groupSlots does not divide probeSlots); group 0 starts at homeSlot, group g > 0 at
 * mix32(hash ^ (GROUP_SALT + g)) mod (slotCount − groupSlots + 1); a slot already in the sequence
 * is skipped (groups may overlap). A version-1 area has one group: its window. Deterministic from
 * the key and the header alone, so every client, recovery and the audits agree on it.
 */
export function probeSequence(g: KvGeometry, key: Uint8Array): number[] {
  const h = hashKey(key);
  const w = g.groupSlots;
  const positions = g.slotCount - w + 1;
  const groups = Math.ceil(g.probeSlots / w);
  const out: number[] = [];
  const starts: number[] = [];
  for (let i = 0; i < groups; i++) {
    const at = i === 0 ? h % positions : mix32((h ^ ((GROUP_SALT + i) >>> 0)) >>> 0) % positions;
    const width = Math.min(w, g.probeSlots - i * w);
    // Slots are checked one by one only when this group overlaps an earlier one (|at − start| < w).
    let overlaps = false;
    for (let x = 0; x < i && !overlaps; x++) overlaps = starts[x]! > at - w && starts[x]! < at + w;
    starts[i] = at;
    for (let j = 0; j < width; j++) if (!overlaps || out.indexOf(at + j) < 0) out.push(at + j);
  }
  return out;
}

/** Whether `slot` is in the key's probe sequence. */
export function inProbeSequence(g: KvGeometry, key: Uint8Array, slot: number): boolean {
  return probeSequence(g, key).includes(slot);
}

/**
 * The runs of contiguous slots that cover `slots` exactly (sorted, adjacent slots merged): the
 * ranges of the FLUSHes over a set of probed slots. For a version-1 window, or a key in its group
 * 0, that is one run: [home … slot].
 */
export function slotRuns(slots: readonly number[]): Array<{ first: number; count: number }> {
  if (slots.length === 1) return [{ first: slots[0]!, count: 1 }];
  const s = [...slots].sort((a, b) => a - b);
  const runs: Array<{ first: number; count: number }> = [];
  for (const x of s) {
    const last = runs[runs.length - 1];
    if (last !== undefined && x <= last.first + last.count) last.count = Math.max(last.count, x - last.first + 1);
    else runs.push({ first: x, count: 1 });
  }
  return runs;
}

/**
 * The probe stages, as [from, to) ranges of sequence positions, one message each, until the key or
 * an empty slot. A GET (`firstStage` 1): the home slot alone (one READ: most keys sit there), then
 * the rest of group 0 with group 1, then 16 slots at a time. A PUT / DELETE that locates its key
 * (`firstStage` = groupSlots): group 0 whole (the window READ of a version-1 area), then 16 at a time.
 */
export function probeStages(length: number, groupSlots: number, firstStage = 1): Array<[number, number]> {
  const stages: Array<[number, number]> = [];
  let at = 0;
  const add = (to: number): void => {
    to = Math.min(to, length);
    if (to <= at) return;
    stages.push([at, to]);
    at = to;
  };
  add(firstStage);
  if (firstStage === 1) add(2 * groupSlots);
  while (at < length) add(at + PROBE_STAGE_SLOTS);
  return stages;
}

/** Slots READ by each later probe stage. */
export const PROBE_STAGE_SLOTS = 16;

/** The size class whose buffers hold `ptr` (inside its sub-arena, aligned to its size), or undefined. */
export function classOf(g: KvGeometry, ptr: number): (SizeClass & { offset: number }) | undefined {
  for (const c of g.classes) {
    if (ptr >= c.offset && ptr < c.offset + c.sizeBytes * c.count) return (ptr - c.offset) % c.sizeBytes === 0 ? c : undefined;
  }
  return undefined;
}

/** The smallest class that holds an item of `itemBytes`. */
export function classFor(g: KvGeometry, itemBytes: number): (SizeClass & { offset: number }) | undefined {
  return g.classes.find((c) => c.sizeBytes >= itemBytes);
}

// ------------------------------------------------------------------ items

export interface Item {
  key: Uint8Array;
  value: Uint8Array;
  version: bigint;
  tombstone: boolean;
  /** Present (true) only on the dead items recovery writes: no key, never matched, never replaced. */
  dead?: true;
}

export function itemBytes(keyLen: number, valueLen: number): number {
  return ITEM_HEADER_BYTES + keyLen + valueLen;
}

export function encodeItem(it: Item): Uint8Array {
  const b = new Uint8Array(itemBytes(it.key.length, it.value.length));
  const dv = new DataView(b.buffer);
  dv.setUint8(4, it.dead === true ? FLAG_DEAD : it.tombstone ? FLAG_TOMBSTONE : 0);
  dv.setUint8(5, it.key.length);
  dv.setUint32(8, it.value.length, true);
  dv.setBigUint64(16, it.version, true);
  b.set(it.key, ITEM_HEADER_BYTES);
  b.set(it.value, ITEM_HEADER_BYTES + it.key.length);
  dv.setUint32(0, crc32c(b.subarray(4)), true);
  return b;
}

/** The item in `b` (a buffer or the prefix a READ returned), or undefined when it does not check out. */
export function decodeItem(b: Uint8Array): Item | undefined {
  if (b.length < ITEM_HEADER_BYTES) return undefined;
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const flags = dv.getUint8(4);
  const keyLen = dv.getUint8(5);
  const valueLen = dv.getUint32(8, true);
  const dead = flags === FLAG_DEAD;
  if (dead ? keyLen !== 0 : (flags & ~FLAG_TOMBSTONE) !== 0 || keyLen === 0) return undefined;
  const n = itemBytes(keyLen, valueLen);
  if (n > b.length) return undefined;
  if (dv.getUint32(0, true) !== crc32c(b, 4, n)) return undefined;
  return {
    key: b.slice(ITEM_HEADER_BYTES, ITEM_HEADER_BYTES + keyLen),
    value: b.slice(ITEM_HEADER_BYTES + keyLen, n),
    version: dv.getBigUint64(16, true),
    tombstone: (flags & FLAG_TOMBSTONE) !== 0,
    ...(dead ? { dead: true as const } : {}),
  };
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
