// CRC-32C (slicing-by-8): known-answer vectors, and the same value as the byte-at-a-time form over
// random ranges, seeds and lengths. The ring entries, redo-log records and app layouts persist
// this checksum: any change to its value would make images written before it unreadable.
import t from 'tap';
import { createPrng, crc32c } from '../../pmem/index.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/pmem/crc32.test.ts)`);

/** The reference: one table, a byte at a time (the implementation before slicing-by-8). */
const REF_TABLE = (() => {
  const tb = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    tb[i] = c >>> 0;
  }
  return tb;
})();
function reference(bytes: Uint8Array, start = 0, end = bytes.length, seed = 0): number {
  let c = ~seed >>> 0;
  for (let i = start; i < end; i++) c = REF_TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

t.test('known-answer vectors (RFC 3720 B.4 and the CRC catalogue check value)', async (t) => {
  t.equal(crc32c(new TextEncoder().encode('123456789')), 0xe3069283);
  t.equal(crc32c(new Uint8Array(0)), 0);
  t.equal(crc32c(new Uint8Array(32)), 0x8a9136aa);
  t.equal(crc32c(new Uint8Array(32).fill(0xff)), 0x62a8ab43);
  t.equal(crc32c(Uint8Array.from({ length: 32 }, (_, i) => i)), 0x46dd794e);
  t.equal(crc32c(Uint8Array.from({ length: 32 }, (_, i) => 31 - i)), 0x113fdb5c);
});

t.test('same value as byte-at-a-time over random ranges and seeds', async (t) => {
  const prng = createPrng(SEED);
  const buf = new Uint8Array(600);
  let bad = 0;
  for (let n = 0; n < 5000; n++) {
    for (let i = 0; i < buf.length; i++) buf[i] = prng.int(0, 255);
    const start = prng.int(0, 40);
    const end = start + prng.int(0, 500);
    const seed = prng.chance(0.5) ? 0 : prng.u32();
    if (crc32c(buf, start, end, seed) !== reference(buf, start, end, seed)) bad++;
  }
  t.equal(bad, 0, `seed ${SEED}: ranges where slicing-by-8 differs from byte-at-a-time`);
  // chaining: a CRC continued from a previous one equals the CRC of the whole
  for (let i = 0; i < 200; i++) buf[i] = prng.int(0, 255);
  t.equal(crc32c(buf, 13, 200, crc32c(buf, 0, 13)), crc32c(buf, 0, 200));
});

t.test('the addon computes long ranges, with the same value as the JS form', async (t) => {
  const { nativeCrc32c, crc32cHardware } = await import('../../pmem/native.js');
  const { crc32cJs, NATIVE_CRC_MIN_BYTES } = await import('../../pmem/crc32.js');
  const native = nativeCrc32c();
  t.ok(native !== undefined, 'the addon of this checkout (source build or prebuilt) exports crc32c');
  t.comment(`addon CRC-32C uses the crc32 instruction: ${crc32cHardware()}`);
  const prng = createPrng(SEED + 1);
  const buf = new Uint8Array(6000);
  for (let i = 0; i < buf.length; i++) buf[i] = prng.int(0, 255);
  let bad = 0;
  for (let n = 0; n < 400; n++) {
    const start = prng.int(0, 100);
    const end = start + prng.int(0, 5800);
    const seed = prng.chance(0.5) ? 0 : prng.u32();
    const want = reference(buf, start, end, seed);
    if (native!(buf, start, end, seed) !== want || crc32c(buf, start, end, seed) !== want || crc32cJs(buf, start, end, seed) !== want) bad++;
  }
  t.equal(bad, 0, `seed ${SEED}: ranges where the addon, crc32c or crc32cJs differ from byte-at-a-time`);
  // chaining across the threshold: a short (JS) CRC continued by a long (addon) one, and back
  const cut = 7;
  const end = cut + NATIVE_CRC_MIN_BYTES + 33;
  t.equal(crc32c(buf, cut, end, crc32c(buf, 0, cut)), crc32c(buf, 0, end));
  t.equal(crc32c(buf, end, end + 5, crc32c(buf, 0, end)), reference(buf, 0, end + 5));
  // a view into a larger buffer: offsets are the view's
  const view = buf.subarray(1000, 3000);
  t.equal(crc32c(view, 10, 1500), reference(buf, 1010, 2500));
  t.equal(crc32c(new TextEncoder().encode('123456789'.repeat(40))), reference(new TextEncoder().encode('123456789'.repeat(40))));
});
