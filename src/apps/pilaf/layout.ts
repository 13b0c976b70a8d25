/**
 * The Pilaf-style baseline's durable layout (DESIGN §5): the KV area of the shared apps module
 * (src/apps/shared/kv-area.ts: header, index geometry and probing, size-class arena, item format)
 * under its own magic, PILAF_MAGIC ('RMSPLP01'); a slot is an entry
 *   +0 ptr u64 (0: never used)  +8 itemLen u32  +12 version u32  +16 crc32c u32 over [0, 16)
 * A deleted key leaves ptr 0 with a non-zero version (a tombstone: probing goes on past it).
 * Items use PRISM-KV's item format. Also here: the wire format of the PUT/DELETE RPC.
 */
import { AREA_MAGIC } from '../index.js';
import { computeKvGeometry, SLOT_BYTES, validateLayoutOptions, type KvGeometry, type KvLayoutOptions } from '../shared/index.js';
import { crc32c } from '../../../pmem/index.js';

/** The Pilaf-style baseline's area: the KV area's header with its own magic ('RMSPLP01'). */
export const PILAF_MAGIC = AREA_MAGIC.pilaf;

/** The geometry of a Pilaf area at `base`: the KV area's (the same header, index, arena and mailbox). */
export function computePilafGeometry(base: number, layout: Partial<KvLayoutOptions>): KvGeometry {
  return computeKvGeometry(base, validateLayoutOptions(layout));
}

/** The immediates of a PUT/DELETE request SEND and of the server CPU's reply. */
export const PILAF_REQUEST_IMM = 0x504c_0001;
export const PILAF_REPLY_IMM = 0x504c_0002;
/** Request opcodes and reply statuses of the PUT/DELETE RPC. */
export const OP_PUT = 1;
export const OP_DELETE = 2;
export const STATUS_OK = 0;
export const STATUS_FULL = 1;
export const STATUS_INDEX_FULL = 2;
export const STATUS_BAD = 3;

/** An index entry of the Pilaf area (one 32-byte slot). */
export interface PilafEntry {
  ptr: number;
  len: number;
  version: number;
}

export function encodePilafEntry(e: PilafEntry): Uint8Array {
  const b = new Uint8Array(SLOT_BYTES);
  const dv = new DataView(b.buffer);
  dv.setBigUint64(0, BigInt(e.ptr), true);
  dv.setUint32(8, e.len, true);
  dv.setUint32(12, e.version, true);
  dv.setUint32(16, crc32c(b.subarray(0, 16)), true);
  return b;
}

/** The entry, 'empty' (never used), or undefined when its checksum fails (torn by a concurrent write). */
export function decodePilafEntry(b: Uint8Array, off = 0): PilafEntry | 'empty' | undefined {
  const dv = new DataView(b.buffer, b.byteOffset + off, SLOT_BYTES);
  const ptr = dv.getBigUint64(0, true);
  const len = dv.getUint32(8, true);
  const version = dv.getUint32(12, true);
  if (ptr === 0n && len === 0 && version === 0 && dv.getUint32(16, true) === 0) return 'empty';
  if (dv.getUint32(16, true) !== crc32c(b, off, off + 16)) return undefined;
  return { ptr: Number(ptr), len, version };
}
