/**
 * CRC-32C (Castagnoli), table-driven, slicing-by-8 (eight bytes per step through eight 256-entry
 * tables; the tail byte at a time through the first). Written by hand: it is a few dozen lines and
 * no maintained pure-JS package gives CRC-32C over a byte range without copying on Node 20.
 * test/pmem/crc32.test.ts holds known-answer vectors and compares it with the byte-at-a-time form.
 */
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
