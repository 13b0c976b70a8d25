// Every bad input to layer 1 gets its exact coded error (docs/errors.md) or its exact
// TypeError/RangeError message (DESIGN §10), and a bad file is never modified.
import t, { type Test } from 'tap';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  crashImages,
  crc32c,
  createPrng,
  HEADER_BYTES,
  materialize,
  PmemReadView,
  PmemRegion,
  PmrpcError,
  writeImageFile,
  type PmemOptions,
} from '../../pmem/index.js';
import { bytes, caught, eq, tempDir } from './fixtures/helpers.js';

const SIZE = 1024;
const OOB = 'PMRPC_ERR_OUT_OF_BOUNDS';

function oobMessage(offset: number, len: number, size = SIZE): string {
  return `${OOB}: access [${offset}, ${offset + len}) is outside the region [0, ${size})`;
}

/** A valid region file's bytes (header + SIZE data bytes with a pattern). */
function validRegionBytes(dir: string): Uint8Array {
  const p = join(dir, `valid-${Math.random().toString(36).slice(2)}.pm`);
  const r = PmemRegion.create(p, SIZE);
  r.store(0, bytes(SIZE, 0x3c));
  r.close();
  return new Uint8Array(readFileSync(p));
}

function withFixedCrc(b: Uint8Array): Uint8Array {
  new DataView(b.buffer, b.byteOffset).setUint32(60, crc32c(b, 0, 60), true);
  return b;
}

/** Asserts that open(path) fails with `code` and leaves the file byte-identical. */
function refusesUntouched(t: Test, path: string, code: string, what: string): Error & { code?: string } {
  const before = new Uint8Array(readFileSync(path));
  const e = caught(() => PmemRegion.open(path));
  t.equal(e.code, code, `${what}: open → ${code}`);
  t.ok(eq(new Uint8Array(readFileSync(path)), before), `${what}: the file is byte-identical`);
  if (before.length > 0) {
    const c = caught(() => PmemRegion.create(path, SIZE));
    t.equal(c.code, 'PMRPC_ERR_REGION_EXISTS', `${what}: create over it → REGION_EXISTS`);
    t.ok(eq(new Uint8Array(readFileSync(path)), before), `${what}: still byte-identical after create`);
  }
  return e;
}

t.test('out-of-range accesses: offset past end, len past end, negative, non-integer', async (t) => {
  const r = PmemRegion.createInMemory(SIZE, { tracing: true });
  const ranged: Array<[string, (o: number, l: number) => unknown]> = [
    ['load', (o, l) => r.load(o, l)],
    ['view', (o, l) => r.view(o, l)],
    ['fill', (o, l) => r.fill(o, l, 1)],
    ['flush', (o, l) => r.flush(o, l)],
    ['persist', (o, l) => r.persist(o, l)],
  ];
  const cases: Array<[number, number]> = [
    [SIZE, 1], // offset at the end
    [SIZE + 64, 0], // empty access past the end
    [SIZE - 8, 9], // len past the end
    [0, SIZE + 1],
    [-1, 1], // negative offset
    [0, -1], // negative len
    [1.5, 1], // non-integer offset
    [0, 2.5], // non-integer len
    [NaN, 1],
    [0, NaN],
    [Infinity, 1],
    [0, Number.MAX_SAFE_INTEGER],
    [Number.MAX_SAFE_INTEGER, 1],
  ];
  for (const [name, op] of ranged) {
    for (const [o, l] of cases) {
      const e = caught(() => op(o, l));
      t.equal(e.code, OOB, `${name}(${o}, ${l}) → ${OOB}`);
      t.equal(e.message, oobMessage(o, l), `${name}(${o}, ${l}) message`);
    }
  }
  // stores of a byte array: every length constructible as a Uint8Array
  for (const [name, op] of [
    ['store', (o: number, b: Uint8Array) => r.store(o, b)],
    ['storeNonTemporal', (o: number, b: Uint8Array) => r.storeNonTemporal(o, b)],
  ] as const) {
    for (const [o, l] of [[SIZE, 1], [SIZE - 8, 9], [-1, 1], [0.5, 1], [NaN, 1], [0, SIZE + 1]] as Array<[number, number]>) {
      const e = caught(() => op(o, new Uint8Array(l)));
      t.equal(e.code, OOB, `${name}(${o}, ${l} bytes)`);
      t.equal(e.message, oobMessage(o, l));
    }
  }
  const typed: Array<[string, number, (o: number) => unknown]> = [
    ['loadU8', 1, (o) => r.loadU8(o)],
    ['loadU16', 2, (o) => r.loadU16(o)],
    ['loadU32', 4, (o) => r.loadU32(o)],
    ['loadU64', 8, (o) => r.loadU64(o)],
    ['storeU8', 1, (o) => r.storeU8(o, 1)],
    ['storeU16', 2, (o) => r.storeU16(o, 1)],
    ['storeU32', 4, (o) => r.storeU32(o, 1)],
    ['storeU64', 8, (o) => r.storeU64(o, 1n)],
    ['loadU64Atomic', 8, (o) => r.loadU64Atomic(o)],
    ['storeU64Atomic', 8, (o) => r.storeU64Atomic(o, 1n)],
    ['cas64', 8, (o) => r.cas64(o, 0n, 1n)],
  ];
  for (const [name, width, op] of typed) {
    for (const o of [SIZE, SIZE - width + 1, -width, -1, 0.5, NaN]) {
      if (name.includes('Atomic') || name === 'cas64') {
        if (o === SIZE - width + 1) continue; // misaligned AND out of range: range is checked first, below
      }
      const e = caught(() => op(o));
      t.equal(e.code, OOB, `${name}(${o})`);
      t.equal(e.message, oobMessage(o, width), `${name}(${o}) message`);
    }
  }
  t.equal(caught(() => r.storeU64Atomic(SIZE - 4, 1n)).code, OOB, 'an atomic both misaligned and out of range: range first');
  t.same(r.stats, { stores: 0, bytesStored: 0, flushes: 0, drains: 0, linesWrittenBack: 0, evictions: 0, ntStores: 0, msyncs: 0 }, 'no refused access counted anything');
  t.equal(r.dirtyLines, 0, 'no refused store dirtied a line');
  t.equal(r.crashState().components.length, 0, 'no refused store left a piece');
  t.ok(eq(r.load(0, SIZE), new Uint8Array(SIZE)), 'no refused store changed visible memory');
  // boundaries that are in range
  r.load(0, SIZE);
  r.load(SIZE, 0);
  r.storeU64(SIZE - 8, 1n);
  r.storeU64Atomic(SIZE - 8, 2n);
  r.flush(SIZE - 1, 1);
  r.persist(0, SIZE);
  t.equal(r.loadU64Atomic(SIZE - 8), 2n);
});

t.test('misaligned atomics → PMRPC_ERR_MISALIGNED', async (t) => {
  const r = PmemRegion.createInMemory(SIZE);
  for (const o of [1, 4, 7, 12, SIZE - 9]) {
    for (const [name, op] of [
      ['storeU64Atomic', () => r.storeU64Atomic(o, 5n)],
      ['loadU64Atomic', () => r.loadU64Atomic(o)],
      ['cas64', () => r.cas64(o, 0n, 5n)],
    ] as const) {
      const e = caught(op);
      t.equal(e.code, 'PMRPC_ERR_MISALIGNED', `${name}(${o})`);
      t.equal(e.message, `PMRPC_ERR_MISALIGNED: 8-byte atomic access at offset ${o} is not 8-byte aligned`);
    }
  }
  t.equal(r.stats.stores, 0);
  t.ok(eq(r.load(0, SIZE), new Uint8Array(SIZE)), 'nothing stored');
  const v = new PmemReadView(r.shared());
  t.equal(caught(() => v.loadU64Atomic(4)).code, 'PMRPC_ERR_MISALIGNED', 'read view: misaligned');
  t.equal(caught(() => v.loadU64Atomic(SIZE)).code, OOB, 'read view: out of range');
  t.equal(caught(() => v.load(SIZE - 1, 2)).code, OOB);
  t.equal(caught(() => v.loadU32(-4)).code, OOB);
  t.equal(caught(() => v.loadU64(SIZE - 7)).code, OOB);
});

t.test('a foreign file is refused with NOT_A_REGION and left byte-identical', async (t) => {
  const dir = tempDir(t);
  const prng = createPrng(1234);
  const random = new Uint8Array(8192).map(() => prng.int(0, 255));
  const files: Array<[string, Uint8Array]> = [
    ['random bytes', random],
    ['text', new TextEncoder().encode('hello, this is not a pmrpc region\n'.repeat(200))],
    ['zeros', new Uint8Array(HEADER_BYTES + SIZE)],
    ['3 bytes', new Uint8Array([0x50, 0x4d, 0x52])],
  ];
  for (const [what, content] of files) {
    const p = join(dir, `${what.replace(/ /g, '-')}.bin`);
    writeFileSync(p, content);
    const e = refusesUntouched(t, p, 'PMRPC_ERR_NOT_A_REGION', what);
    t.equal(e.message, `PMRPC_ERR_NOT_A_REGION: ${p} is not a pmrpc region (no pmrpc magic); it is left untouched`);
    t.equal(caught(() => PmemRegion.openImage(content)).code, 'PMRPC_ERR_NOT_A_REGION', `${what}: openImage`);
  }
  // an empty file is "not formatted" (what serve and inspect say too), not a foreign file
  {
    const p = join(dir, 'empty-file.bin');
    writeFileSync(p, new Uint8Array(0));
    const e = refusesUntouched(t, p, 'PMRPC_ERR_NOT_FORMATTED', 'empty');
    t.equal(e.message, `PMRPC_ERR_NOT_FORMATTED: ${p} is empty (0 bytes): not a formatted pmrpc region; create it with \`pmrpc format\``);
    t.equal(caught(() => PmemRegion.openImage(new Uint8Array(0))).code, 'PMRPC_ERR_NOT_FORMATTED', 'empty: openImage');
  }
  // an empty file is not "existing": create may use it
  const empty = join(dir, 'empty.bin');
  const r = PmemRegion.create(empty, SIZE);
  r.close();
  t.equal(readFileSync(empty).length, HEADER_BYTES + SIZE, 'create over an empty file makes a region');
});

t.test('a truncated file is refused with REGION_TRUNCATED and left byte-identical', async (t) => {
  const dir = tempDir(t);
  const valid = validRegionBytes(dir);
  const cuts: Array<[string, number, string]> = [
    ['data cut in half', HEADER_BYTES + SIZE / 2, `${HEADER_BYTES + SIZE / 2} bytes, the header says ${HEADER_BYTES + SIZE}`],
    ['one byte short', HEADER_BYTES + SIZE - 1, `${HEADER_BYTES + SIZE - 1} bytes, the header says ${HEADER_BYTES + SIZE}`],
    ['header only', HEADER_BYTES, `${HEADER_BYTES} bytes, the header says ${HEADER_BYTES + SIZE}`],
    ['checked header bytes only', 64, `64 bytes, the header says ${HEADER_BYTES + SIZE}`],
    ['shorter than a header', 30, '30 bytes, shorter than a region header'],
    ['magic only', 8, '8 bytes, shorter than a region header'],
  ];
  for (const [what, len, tail] of cuts) {
    const p = join(dir, `cut-${len}.pm`);
    writeFileSync(p, valid.subarray(0, len));
    const e = refusesUntouched(t, p, 'PMRPC_ERR_REGION_TRUNCATED', what);
    t.equal(e.message, `PMRPC_ERR_REGION_TRUNCATED: ${p} is truncated: ${tail}`);
    t.equal(caught(() => PmemRegion.openImage(valid.slice(0, len))).code, 'PMRPC_ERR_REGION_TRUNCATED', `${what}: openImage`);
  }
  // a longer file than the header says is accepted (the tail is ignored)
  const p = join(dir, 'longer.pm');
  writeFileSync(p, new Uint8Array([...valid, 1, 2, 3]));
  const r = PmemRegion.open(p);
  t.equal(r.sizeBytes, SIZE);
  r.close();
});

t.test('a corrupted header is refused with REGION_CORRUPT; a bad magic with NOT_A_REGION', async (t) => {
  const dir = tempDir(t);
  const valid = validRegionBytes(dir);
  for (let i = 0; i < 64; i++) {
    const b = valid.slice();
    b[i]! ^= 0x01;
    const p = join(dir, `flip-${i}.pm`);
    writeFileSync(p, b);
    const want = i < 8 ? 'PMRPC_ERR_NOT_A_REGION' : 'PMRPC_ERR_REGION_CORRUPT';
    const e = refusesUntouched(t, p, want, `byte ${i} flipped`);
    if (i >= 8) t.match(e.message, /header checksum mismatch \(stored 0x[0-9a-f]{8}, computed 0x[0-9a-f]{8}\)$/);
  }
  // checksum right, values impossible
  const impossible: Array<[string, (dv: DataView) => void]> = [
    ['size 0', (dv) => dv.setBigUint64(16, 0n, true)],
    ['size not a multiple of 64', (dv) => dv.setBigUint64(16, 100n, true)],
    ['size past the maximum', (dv) => dv.setBigUint64(16, 2n ** 33n, true)],
    ['header bytes 8192', (dv) => dv.setUint32(12, 8192, true)],
    ['line bytes 128', (dv) => dv.setUint32(40, 128, true)],
  ];
  for (const [what, edit] of impossible) {
    const b = valid.slice();
    edit(new DataView(b.buffer));
    withFixedCrc(b);
    const p = join(dir, `impossible-${what.replace(/ /g, '-')}.pm`);
    writeFileSync(p, b);
    const e = refusesUntouched(t, p, 'PMRPC_ERR_REGION_CORRUPT', what);
    t.match(e.message, /impossible header values/);
    t.equal(caught(() => PmemRegion.openImage(b)).code, 'PMRPC_ERR_REGION_CORRUPT', `${what}: openImage`);
  }
});

t.test('a wrong layout version (checksum fixed) is refused with LAYOUT_VERSION', async (t) => {
  const dir = tempDir(t);
  const valid = validRegionBytes(dir);
  for (const version of [0, 2, 0xffffffff]) {
    const b = valid.slice();
    new DataView(b.buffer).setUint32(8, version, true);
    withFixedCrc(b);
    const p = join(dir, `v${version}.pm`);
    writeFileSync(p, b);
    const e = refusesUntouched(t, p, 'PMRPC_ERR_LAYOUT_VERSION', `version ${version}`);
    t.equal(e.message, `PMRPC_ERR_LAYOUT_VERSION: ${p}: layout version ${version}, this pmrpc reads version 1`);
    t.equal(caught(() => PmemRegion.openImage(b)).code, 'PMRPC_ERR_LAYOUT_VERSION');
  }
  // and the unmodified bytes open fine, through both paths
  const p = join(dir, 'ok.pm');
  writeFileSync(p, valid);
  const r = PmemRegion.open(p);
  t.ok(eq(r.load(0, 8), bytes(8, 0x3c)));
  r.close();
  t.ok(eq(PmemRegion.openImage(valid).load(0, 8), bytes(8, 0x3c)));
});

t.test('create over an existing non-empty file → REGION_EXISTS, file unchanged', async (t) => {
  const dir = tempDir(t);
  const p = join(dir, 'exists.pm');
  const r = PmemRegion.create(p, SIZE);
  r.storeU64(0, 77n);
  r.close();
  const before = new Uint8Array(readFileSync(p));
  const e = caught(() => PmemRegion.create(p, SIZE));
  t.equal(e.code, 'PMRPC_ERR_REGION_EXISTS');
  t.equal(e.message, `PMRPC_ERR_REGION_EXISTS: ${p} already exists (${HEADER_BYTES + SIZE} bytes); pmrpc never overwrites a file`);
  t.equal(caught(() => PmemRegion.create(p, 2 * SIZE)).code, 'PMRPC_ERR_REGION_EXISTS', 'even with another size');
  t.ok(eq(new Uint8Array(readFileSync(p)), before), 'the region file is unchanged');
  const q = join(dir, 'note.txt');
  writeFileSync(q, 'x');
  t.equal(caught(() => PmemRegion.create(q, SIZE)).message, `PMRPC_ERR_REGION_EXISTS: ${q} already exists (1 bytes); pmrpc never overwrites a file`);
  t.equal(readFileSync(q, 'utf8'), 'x');
});

t.test('system-call failures → PMRPC_ERR_IO with errno and syscall', async (t) => {
  const dir = tempDir(t);
  const missing = join(dir, 'missing.pm');
  let e = caught(() => PmemRegion.open(missing));
  t.equal(e.code, 'PMRPC_ERR_IO');
  t.equal(e.name, 'PmrpcIoError');
  t.equal(e.errno, 'ENOENT');
  t.equal(e.syscall, 'open');
  t.notOk(existsSync(missing), 'open never creates');

  const sub = join(dir, 'a-directory');
  mkdirSync(sub);
  e = caught(() => PmemRegion.open(sub));
  t.equal(e.code, 'PMRPC_ERR_IO', 'open of a directory');
  t.equal(e.errno, 'EISDIR');
  e = caught(() => PmemRegion.create(sub, SIZE));
  t.equal(e.code, 'PMRPC_ERR_IO', 'create (map) of a directory');
  t.equal(e.errno, 'EISDIR');
  t.equal(e.syscall, 'open');

  e = caught(() => PmemRegion.create(join(dir, 'no-such-dir', 'r.pm'), SIZE));
  t.equal(e.code, 'PMRPC_ERR_IO', 'create in a missing directory');
  t.equal(e.errno, 'ENOENT');

  // a read-only region file: map(O_RDWR) fails unless we are root (root bypasses file modes)
  const ro = join(dir, 'ro.pm');
  PmemRegion.create(ro, SIZE).close();
  chmodSync(ro, 0o444);
  if (process.getuid?.() === 0) {
    const r = PmemRegion.open(ro);
    t.equal(r.sizeBytes, SIZE, 'as root a 0444 file still maps read-write');
    r.close();
  } else {
    e = caught(() => PmemRegion.open(ro));
    t.equal(e.code, 'PMRPC_ERR_IO', 'open of a read-only file');
    t.equal(e.errno, 'EACCES');
  }
  chmodSync(ro, 0o644);
});

t.test('use after close → REGION_CLOSED', async (t) => {
  const dir = tempDir(t);
  for (const backing of ['file', 'memory'] as const) {
    const r = backing === 'file' ? PmemRegion.create(join(dir, 'closed.pm'), SIZE, { tracing: true }) : PmemRegion.createInMemory(SIZE, { tracing: true });
    r.storeU64(0, 1n);
    r.close();
    const ops: Array<[string, () => unknown]> = [
      ['load', () => r.load(0, 8)],
      ['view', () => r.view(0, 8)],
      ['loadU8', () => r.loadU8(0)],
      ['loadU64', () => r.loadU64(0)],
      ['loadU64Atomic', () => r.loadU64Atomic(0)],
      ['store', () => r.store(0, bytes(8, 1))],
      ['fill', () => r.fill(0, 8)],
      ['storeU32', () => r.storeU32(0, 1)],
      ['storeU64', () => r.storeU64(0, 1n)],
      ['storeU64Atomic', () => r.storeU64Atomic(0, 1n)],
      ['cas64', () => r.cas64(0, 1n, 2n)],
      ['storeNonTemporal', () => r.storeNonTemporal(0, bytes(8, 1))],
      ['flush', () => r.flush(0, 8)],
      ['drain', () => r.drain()],
      ['persist', () => r.persist(0, 8)],
      ['crashState', () => r.crashState()],
      ['misaligned atomic', () => r.storeU64Atomic(3, 1n)],
      ['out-of-range load', () => r.load(SIZE, 8)],
    ];
    for (const [name, op] of ops) {
      const e = caught(op);
      t.equal(e.code, 'PMRPC_ERR_REGION_CLOSED', `${backing}: ${name}`);
      t.equal(e.message, 'PMRPC_ERR_REGION_CLOSED: the region is closed');
    }
    t.doesNotThrow(() => r.close(), 'close twice is a no-op');
    t.doesNotThrow(() => r.close({ writeBack: false }));
  }
});

t.test('invalid options and sizes → TypeError / RangeError with exact messages, before touching a file', async (t) => {
  const dir = tempDir(t);
  const bad: Array<[Partial<PmemOptions> | Record<string, unknown>, ErrorConstructor, string]> = [
    [{ domain: 'nvdimm' }, TypeError, "domain must be 'adr' or 'eadr', got nvdimm"],
    [{ domain: 1 }, TypeError, "domain must be 'adr' or 'eadr', got 1"],
    [{ eviction: -0.1 }, RangeError, 'eviction must be a probability in [0, 1], got -0.1'],
    [{ eviction: 1.5 }, RangeError, 'eviction must be a probability in [0, 1], got 1.5'],
    [{ eviction: NaN }, RangeError, 'eviction must be a probability in [0, 1], got NaN'],
    [{ eviction: '0.5' }, RangeError, 'eviction must be a probability in [0, 1], got 0.5'],
    [{ strict: 'yes' }, TypeError, 'strict must be a boolean, got yes'],
    [{ strict: 1 }, TypeError, 'strict must be a boolean, got 1'],
    [{ tracing: 'on' }, TypeError, 'tracing must be a boolean, got on'],
    [{ seed: 1.5 }, TypeError, 'seed must be an integer, got 1.5'],
    [{ seed: '7' }, TypeError, 'seed must be an integer, got 7'],
    [{ seed: 2 ** 53 }, TypeError, `seed must be an integer, got ${2 ** 53}`],
  ];
  let n = 0;
  for (const [opts, ctor, message] of bad) {
    const o = opts as Partial<PmemOptions>;
    const p = join(dir, `opt-${n++}.pm`);
    for (const [how, fn] of [
      ['createInMemory', () => PmemRegion.createInMemory(SIZE, o)],
      ['create', () => PmemRegion.create(p, SIZE, o)],
      ['open', () => PmemRegion.open(p, o)],
    ] as const) {
      const e = caught(fn);
      t.type(e, ctor, `${how} ${JSON.stringify(opts)}: ${ctor.name}`);
      t.equal(e.message, message, `${how} ${JSON.stringify(opts)}: message`);
    }
    t.notOk(existsSync(p), 'create refused the options before creating the file');
  }
  t.doesNotThrow(() => PmemRegion.createInMemory(SIZE, { eviction: undefined, domain: undefined }).close(), 'undefined options take the defaults');

  for (const size of [0, -64, 100, 63, 64.5, NaN, Infinity, 2 ** 32 - 4096 + 64, 2 ** 32, 2 ** 32 + 64, 2 ** 53]) {
    const e = caught(() => PmemRegion.createInMemory(size));
    t.type(e, PmrpcError, `sizeBytes ${size}`);
    t.equal((e as PmrpcError).code, 'PMRPC_ERR_REGION_SIZE');
    t.equal(e.message, `PMRPC_ERR_REGION_SIZE: sizeBytes must be a positive multiple of 64 up to 4294963200 (4 GiB minus the 4096-byte header), got ${size}`);
    const p = join(dir, `size-${n++}.pm`);
    t.equal(caught(() => PmemRegion.create(p, size)).message, e.message);
    t.notOk(existsSync(p), `sizeBytes ${size}: no file created`);
  }
});

t.test('crash-image engines: bounds and arguments', async (t) => {
  const r = PmemRegion.createInMemory(64 * 64, { tracing: true });
  r.storeU64(0, 1n);
  r.storeU64(8, 2n);
  r.storeU64(16, 3n); // line 0: 3 pieces
  r.storeU64(64, 4n);
  r.storeU64(72, 5n); // line 1: 2 pieces → 4 × 3 = 12 images
  let st = r.crashState();
  let e = caught(() => [...crashImages(st, { engine: 'exhaustive', maxImages: 11 })]);
  t.equal(e.code, 'PMRPC_ERR_TOO_MANY_IMAGES');
  t.equal(e.message, 'PMRPC_ERR_TOO_MANY_IMAGES: exhaustive engine: 12 images exceed the bound of 11; use the random engine or raise maxImages');
  t.equal([...crashImages(st, { engine: 'exhaustive', maxImages: 12 })].length, 12, 'at the bound: enumerated');
  for (let line = 2; line < 64; line++) r.storeU8(line * 64, 1); // 62 more single-piece lines: 12 · 2^62
  st = r.crashState();
  e = caught(() => [...crashImages(st, { engine: 'exhaustive' })]);
  t.equal(e.code, 'PMRPC_ERR_TOO_MANY_IMAGES', 'the default bound (100,000) refuses 12 · 2^62');
  t.match(e.message, /exhaustive engine: 55340232221128654848 images exceed the bound of 100000/);
  t.equal([...crashImages(st, { engine: 'random', count: 50, seed: 1 })].length, 50, 'random stays count-bounded on a huge state');

  for (const maxImages of [0, -1, 1.5, NaN, 2 ** 31 + 1]) {
    // Refused at the call, before any iteration.
    const m = caught(() => crashImages(st, { engine: 'exhaustive', maxImages }));
    t.type(m, RangeError);
    t.equal(m.message, `maxImages must be an integer in [1, 2^31], got ${maxImages}`);
  }
  t.equal(caught(() => crashImages(st, { engine: 'exhaustive' })).code, 'PMRPC_ERR_TOO_MANY_IMAGES', 'the bound is checked at the call');
  for (const count of [0, -3, 2.5]) {
    const m = caught(() => [...crashImages(st, { engine: 'random', count })]);
    t.type(m, RangeError);
    t.equal(m.message, `count must be a positive integer, got ${count}`);
  }
  const m = caught(() => [...crashImages(st, { engine: 'bogus' as never })]);
  t.type(m, TypeError);
  t.equal(m.message, 'engine must be one of none, all, random, exhaustive, got bogus');

  const small = PmemRegion.createInMemory(256, { tracing: true });
  small.storeU64(0, 1n);
  small.storeU64(64, 2n);
  const ss = small.crashState();
  let me = caught(() => materialize(ss, [1]));
  t.type(me, RangeError);
  t.equal(me.message, 'image has 1 choices for 2 components');
  for (const [choices, k] of [[[2, 0], 0], [[0, -1], 1], [[0, 0.5], 1], [[[0], 0], 0]] as Array<[Array<number | number[]>, number]>) {
    me = caught(() => materialize(ss, choices));
    t.type(me, RangeError, `choices ${JSON.stringify(choices)}`);
    t.equal(me.message, `image choice ${k} (${JSON.stringify(choices[k])}) does not fit prefix component line ${k} of 1 pieces`);
  }
  t.equal(materialize(ss, [1, 0]).length, HEADER_BYTES + 256);
});

t.test('writeImageFile refuses to overwrite (REGION_EXISTS) and reports IO errors', async (t) => {
  const dir = tempDir(t);
  const r = PmemRegion.createInMemory(SIZE, { tracing: true });
  r.storeU64(0, 9n);
  const st = r.crashState();
  const img = materialize(st, [1]);
  const p = join(dir, 'img.pm');
  writeImageFile(p, img);
  const o = PmemRegion.open(p);
  t.equal(o.loadU64(0), 9n, 'the image file opens as a region');
  o.close({ writeBack: false });
  const before = new Uint8Array(readFileSync(p));
  const e = caught(() => writeImageFile(p, materialize(st, [0])));
  t.equal(e.code, 'PMRPC_ERR_REGION_EXISTS');
  t.equal(e.message, `PMRPC_ERR_REGION_EXISTS: ${p} already exists; pmrpc never overwrites a file`);
  t.ok(eq(new Uint8Array(readFileSync(p)), before), 'unchanged');
  const io = caught(() => writeImageFile(join(dir, 'nope', 'img.pm'), img));
  t.equal(io.code, 'PMRPC_ERR_IO');
  t.equal(io.errno, 'ENOENT');
});
