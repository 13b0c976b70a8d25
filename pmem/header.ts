/**
 * The region file header: the first HEADER_BYTES of the file. Region addresses start after it,
 * so no store through the region API can clobber it.
 *
 *   0  magic "PMRPC\0PM"        8 bytes
 *   8  layout version           u32
 *  12  header bytes             u32 (4096)
 *  16  data size in bytes       u64
 *  24  UUID                     16 bytes
 *  40  line bytes               u32 (64)
 *  44  reserved                 16 bytes (zero)
 *  60  CRC-32C of bytes [0, 60) u32
 */
import { crc32c } from './crc32.js';
import { ErrorCodes, invariant, PmrpcError } from './errors.js';

export const MAGIC = new Uint8Array([0x50, 0x4d, 0x52, 0x50, 0x43, 0x00, 0x50, 0x4d]); // "PMRPC\0PM"
export const LAYOUT_VERSION = 1;
export const HEADER_BYTES = 4096;
export const LINE_BYTES = 64;
const CHECKED_BYTES = 60;
/**
 * Largest data area: 4 GiB minus the header, so that the whole file (header + data) maps as one
 * buffer of at most 2^32 bytes, the largest external ArrayBuffer Node 20 accepts.
 */
export const MAX_REGION_BYTES = 2 ** 32 - HEADER_BYTES;

export interface RegionHeader {
  layoutVersion: number;
  headerBytes: number;
  sizeBytes: number;
  uuid: string;
  lineBytes: number;
}

export function formatUuid(b: Uint8Array): string {
  const h = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** Writes a fresh header into `out` (at least HEADER_BYTES long). `uuidBytes` is 16 random bytes. */
export function encodeHeader(out: Uint8Array, sizeBytes: number, uuidBytes: Uint8Array): void {
  // Only a header decodeHeader accepts is ever written: a size the callers checked (a positive
  // multiple of the line size, at most MAX_REGION_BYTES), 16 uuid bytes, room for the header.
  invariant(Number.isSafeInteger(sizeBytes) && sizeBytes > 0 && sizeBytes % LINE_BYTES === 0 && sizeBytes <= MAX_REGION_BYTES, () => `a region header for ${sizeBytes} bytes`);
  invariant(uuidBytes.length >= 16 && out.length >= HEADER_BYTES, () => `a region header from ${uuidBytes.length} uuid bytes into ${out.length} bytes`);
  const uuid = uuidBytes.slice(0, 16);
  uuid[6] = (uuid[6]! & 0x0f) | 0x40; // RFC 4122 version 4
  uuid[8] = (uuid[8]! & 0x3f) | 0x80;
  out.fill(0, 0, HEADER_BYTES);
  out.set(MAGIC, 0);
  const dv = new DataView(out.buffer, out.byteOffset, HEADER_BYTES);
  dv.setUint32(8, LAYOUT_VERSION, true);
  dv.setUint32(12, HEADER_BYTES, true);
  dv.setBigUint64(16, BigInt(sizeBytes), true);
  out.set(uuid, 24);
  dv.setUint32(40, LINE_BYTES, true);
  dv.setUint32(CHECKED_BYTES, crc32c(out, 0, CHECKED_BYTES), true);
}

/**
 * Validates the header at the start of `bytes` (the first bytes of a file of `fileBytes` bytes)
 * and returns it; a foreign, corrupted or truncated file gets a coded PmrpcError.
 */
export function decodeHeader(bytes: Uint8Array, fileBytes: number, where: string): RegionHeader {
  if (fileBytes === 0) {
    throw new PmrpcError(ErrorCodes.NOT_FORMATTED, `${where} is empty (0 bytes): not a formatted pmrpc region; create it with \`pmrpc format\``);
  }
  if (fileBytes < MAGIC.length || bytes.length < MAGIC.length || !MAGIC.every((b, i) => bytes[i] === b)) {
    throw new PmrpcError(ErrorCodes.NOT_A_REGION, `${where} is not a pmrpc region (no pmrpc magic); it is left untouched`);
  }
  if (fileBytes < CHECKED_BYTES + 4 || bytes.length < CHECKED_BYTES + 4) {
    throw new PmrpcError(ErrorCodes.REGION_TRUNCATED, `${where} is truncated: ${fileBytes} bytes, shorter than a region header`);
  }
  const dv = new DataView(bytes.buffer, bytes.byteOffset, CHECKED_BYTES + 4);
  const want = dv.getUint32(CHECKED_BYTES, true);
  const got = crc32c(bytes, 0, CHECKED_BYTES);
  if (want !== got) {
    throw new PmrpcError(ErrorCodes.REGION_CORRUPT, `${where}: header checksum mismatch (stored ${hex(want)}, computed ${hex(got)})`);
  }
  const layoutVersion = dv.getUint32(8, true);
  if (layoutVersion !== LAYOUT_VERSION) {
    throw new PmrpcError(ErrorCodes.LAYOUT_VERSION, `${where}: layout version ${layoutVersion}, this pmrpc reads version ${LAYOUT_VERSION}`);
  }
  const headerBytes = dv.getUint32(12, true);
  const size = dv.getBigUint64(16, true);
  const lineBytes = dv.getUint32(40, true);
  if (headerBytes !== HEADER_BYTES || lineBytes !== LINE_BYTES || size === 0n || size % BigInt(LINE_BYTES) !== 0n || size > BigInt(MAX_REGION_BYTES)) {
    throw new PmrpcError(ErrorCodes.REGION_CORRUPT, `${where}: impossible header values (header ${headerBytes} B, line ${lineBytes} B, size ${size} B)`);
  }
  const sizeBytes = Number(size);
  if (fileBytes < headerBytes + sizeBytes) {
    throw new PmrpcError(ErrorCodes.REGION_TRUNCATED, `${where} is truncated: ${fileBytes} bytes, the header says ${headerBytes + sizeBytes}`);
  }
  return { layoutVersion, headerBytes, sizeBytes, uuid: formatUuid(bytes.subarray(24, 40)), lineBytes };
}

function hex(n: number): string {
  return `0x${n.toString(16).padStart(8, '0')}`;
}
