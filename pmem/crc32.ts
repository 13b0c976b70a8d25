/**
 * CRC-32C (Castagnoli), table-driven. Written by hand: it is a dozen lines and no maintained
 * pure-JS package gives CRC-32C over a byte range without copying on Node 20.
 */
const TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[i] = c >>> 0;
  }
  return t;
})();

/** CRC-32C of `bytes[start, end)`, continuing from `seed` (a previous result) if given. */
export function crc32c(bytes: Uint8Array, start = 0, end = bytes.length, seed = 0): number {
  let c = ~seed >>> 0;
  for (let i = start; i < end; i++) c = TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}
