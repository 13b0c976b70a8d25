/**
 * CRC-32C (Castagnoli). A range of at least NATIVE_CRC_MIN_BYTES goes to the mmap addon
 * (native/mmap.cc: the SSE4.2 crc32 instruction, ≈ 0.1 ns a byte, against ≈ 3–8 ns a byte here —
 * one call costs ≈ 0.3–0.8 µs, so short ranges stay in JS); shorter ranges, and every range where
 * the addon does not load, use the table-driven form below, slicing-by-8 (eight bytes per step
 * through eight 256-entry tables; the tail byte at a time through the first). Both give the same
 * value: test/pmem/crc32.test.ts holds known-answer vectors and compares each with the
 * byte-at-a-time form.
 */
import { nativeCrc32c } from './native.js';

/** Ranges at least this long are checksummed by the addon (when it loads). */
export const NATIVE_CRC_MIN_BYTES = 256;

/** The addon's CRC-32C: unresolved until the first long range, null where the addon does not load. */
let native: ((bytes: Uint8Array, start: number, end: number, seed: number) => number) | null | undefined;

const TABLES = (() => {
  const t = new Uint32Array(8 * 256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[i] = c >>> 0;
  }
  for (let i = 0; i < 256; i++) {
    for (let s = 1; s < 8; s++) {
      const prev = t[(s - 1) * 256 + i]!;
      t[s * 256 + i] = (t[prev & 0xff]! ^ (prev >>> 8)) >>> 0;
    }
  }
  return t;
})();

/** CRC-32C of `bytes[start, end)`, continuing from `seed` (a previous result) if given. */
export function crc32c(bytes: Uint8Array, start = 0, end = bytes.length, seed = 0): number {
  if (end - start >= NATIVE_CRC_MIN_BYTES) {
    if (native === undefined) native = nativeCrc32c() ?? null;
    if (native !== null && start >= 0 && end <= bytes.length) return native(bytes, start, end, seed >>> 0);
  }
  return crc32cJs(bytes, start, end, seed);
}

/** The table-driven CRC-32C (slicing-by-8), every length: what crc32c uses below NATIVE_CRC_MIN_BYTES or without the addon. */
export function crc32cJs(bytes: Uint8Array, start = 0, end = bytes.length, seed = 0): number {
  const t = TABLES;
  let c = ~seed >>> 0;
  let i = start;
  for (const last8 = end - 8; i <= last8; i += 8) {
    const lo = c ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24));
    const hi = bytes[i + 4]! | (bytes[i + 5]! << 8) | (bytes[i + 6]! << 16) | (bytes[i + 7]! << 24);
    c =
      t[1792 + (lo & 0xff)]! ^
      t[1536 + ((lo >>> 8) & 0xff)]! ^
      t[1280 + ((lo >>> 16) & 0xff)]! ^
      t[1024 + (lo >>> 24)]! ^
      t[768 + (hi & 0xff)]! ^
      t[512 + ((hi >>> 8) & 0xff)]! ^
      t[256 + ((hi >>> 16) & 0xff)]! ^
      t[hi >>> 24]!;
  }
  for (; i < end; i++) c = t[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}
