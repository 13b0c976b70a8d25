/**
 * PRISM-KV's durable layout in server PM (DESIGN §2.4, §5): the KV area (header, index geometry
 * and probing, size-class arena, item format) is the shared apps module's (src/apps/shared/kv-area.ts),
 * as the Pilaf-style baseline (src/apps/pilaf) uses the same area; what is PRISM-KV's own is the slot
 * word its CAS swaps (ptr | bound | version, see kv-area.ts' header for its meaning).
 */
import { type KvGeometry } from '../shared/index.js';

/** The area, the arena's size classes and the mailbox's buffer size are the shared apps module's (src/apps/shared). */
export { MAILBOX_BUFFER_BYTES, sizeClassesCheck, type SizeClass } from '../shared/index.js';
export { KV_MAGIC, KV_LAYOUT_VERSION, KV_LAYOUT_VERSIONS, KV_GROUP_SLOTS, KV_PROBE_SLOTS_MAX, KV_HEADER_BYTES, KV_EPOCH_OFFSET, SLOT_BYTES, ITEM_HEADER_BYTES, FLAG_TOMBSTONE, FLAG_DEAD, MAX_CLASSES, RETURN_BATCH_MAX, KvErrorCodes, type KvGeometry, type KvLayoutOptions, KV_LAYOUT_DEFAULTS, validateLayoutOptions, computeKvGeometry, encodeKvHeader, decodeKvHeader, slotOffset, hashKey, homeSlot, probeSequence, inProbeSequence, slotRuns, probeStages, PROBE_STAGE_SLOTS, classOf, classFor, type Item, itemBytes, encodeItem, decodeItem, bytesEqual } from '../shared/index.js';

/** Bytes of the slot a PUT's CAS swaps: ptr, bound, version. */
export const SLOT_CAS_BYTES = 24;

export interface SlotWord {
  ptr: number;
  bound: number;
  version: bigint;
}

export function encodeSlot(s: SlotWord): Uint8Array {
  const b = new Uint8Array(SLOT_CAS_BYTES);
  const dv = new DataView(b.buffer);
  dv.setBigUint64(0, BigInt(s.ptr), true);
  dv.setBigUint64(8, BigInt(s.bound), true);
  dv.setBigUint64(16, s.version, true);
  return b;
}

export function decodeSlot(b: Uint8Array, off = 0): SlotWord {
  const dv = new DataView(b.buffer, b.byteOffset + off, SLOT_CAS_BYTES);
  const p = dv.getBigUint64(0, true);
  const bd = dv.getBigUint64(8, true);
  return { ptr: p > BigInt(Number.MAX_SAFE_INTEGER) ? -1 : Number(p), bound: bd > BigInt(Number.MAX_SAFE_INTEGER) ? -1 : Number(bd), version: dv.getBigUint64(16, true) };
}

export function emptySlot(g: KvGeometry): SlotWord {
  return { ptr: g.base, bound: 0, version: 0n };
}

