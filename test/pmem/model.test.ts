// Property tests of the PM device model (DESIGN §2.1): random programs of stores, flushes, drains,
// persists and non-temporal stores on a small region, against a plain reference model that keeps
// the durable bytes and each line's ordered pending 8-byte pieces.
//
// Replay a failure: PMRPC_SEED=<printed seed> npx tap test/pmem/model.test.ts
import t from 'tap';
import fc from 'fast-check';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { unlinkSync } from 'node:fs';
import { countImages, crashImages, HEADER_BYTES, LINE_BYTES, materialize, PmemRegion, type CrashState } from '../../pmem/index.js';
import { fileMedia, tempDir } from './fixtures/helpers.js';

const seed = Number(process.env.PMRPC_SEED ?? Date.now() % 2 ** 31);
t.comment(`model seed ${seed} (replay: PMRPC_SEED=${seed} npx tap test/pmem/model.test.ts)`);

type Op =
  | { kind: 'store'; off: number; data: Uint8Array }
  | { kind: 'u64'; word: number; value: bigint }
  | { kind: 'flush'; off: number; len: number }
  | { kind: 'drain' }
  | { kind: 'persist'; off: number; len: number }
  | { kind: 'nt'; off: number; data: Uint8Array };

function opArb(size: number, storeWeight = 4): fc.Arbitrary<Op> {
  const off = fc.nat({ max: size - 1 });
  return fc.oneof(
    { weight: storeWeight, arbitrary: fc.record({ kind: fc.constant('store' as const), off, data: fc.uint8Array({ minLength: 1, maxLength: 24 }) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('u64' as const), word: fc.nat({ max: size / 8 - 1 }), value: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('flush' as const), off, len: fc.nat({ max: 3 * LINE_BYTES }) }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'drain' as const }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('persist' as const), off, len: fc.nat({ max: 3 * LINE_BYTES }) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('nt' as const), off, data: fc.uint8Array({ minLength: 1, maxLength: 16 }) }) },
  );
}

/** Clamps an op into the region (so every generated op is valid). */
function clamp(op: Op, size: number): Op {
  switch (op.kind) {
    case 'store':
    case 'nt':
      return { ...op, data: op.data.subarray(0, size - op.off) };
    case 'flush':
    case 'persist':
      return { ...op, len: Math.min(op.len, size - op.off) };
    default:
      return op;
  }
}

interface Piece {
  offset: number;
  bytes: Uint8Array;
}

/** The reference: DESIGN §2.1 written as plainly as possible. */
class Reference {
  visible: Uint8Array;
  durable: Uint8Array;
  pending = new Map<number, Piece[]>(); // line → pieces since its last write-back, in store order
  flushed = new Map<number, number>(); // line → pieces covered by a flush, not yet drained

  constructor(readonly size: number) {
    this.visible = new Uint8Array(size);
    this.durable = new Uint8Array(size);
  }

  store(off: number, data: Uint8Array): void {
    this.visible.set(data, off);
    if (data.length === 0) return;
    for (let w = off - (off % 8); w < off + data.length; w += 8) {
      const line = Math.floor(w / LINE_BYTES);
      const list = this.pending.get(line) ?? [];
      list.push({ offset: w, bytes: this.visible.slice(w, w + 8) });
      this.pending.set(line, list);
    }
  }

  flush(off: number, len: number): void {
    if (len === 0) return;
    for (let line = Math.floor(off / LINE_BYTES); line <= Math.floor((off + len - 1) / LINE_BYTES); line++) {
      const n = this.pending.get(line)?.length ?? 0;
      if (n > 0) this.flushed.set(line, n);
    }
  }

  drain(): void {
    for (const [line, n] of this.flushed) {
      const list = this.pending.get(line)!;
      for (const p of list.splice(0, n)) this.durable.set(p.bytes, p.offset);
      if (list.length === 0) this.pending.delete(line);
    }
    this.flushed.clear();
  }

  nt(off: number, data: Uint8Array): void {
    if (data.length === 0) return;
    for (let line = Math.floor(off / LINE_BYTES); line <= Math.floor((off + data.length - 1) / LINE_BYTES); line++) {
      for (const p of this.pending.get(line) ?? []) this.durable.set(p.bytes, p.offset);
      this.pending.delete(line);
      this.flushed.delete(line);
    }
    this.visible.set(data, off);
    this.durable.set(data, off);
  }

  apply(op: Op): void {
    switch (op.kind) {
      case 'store':
        return this.store(op.off, op.data);
      case 'u64': {
        const b = new Uint8Array(8);
        new DataView(b.buffer).setBigUint64(0, op.value, true);
        return this.store(op.word * 8, b);
      }
      case 'flush':
        return this.flush(op.off, op.len);
      case 'drain':
        return this.drain();
      case 'persist':
        this.flush(op.off, op.len);
        return this.drain();
      case 'nt':
        return this.nt(op.off, op.data);
    }
  }

  /** Lines with pending pieces, ascending: what crashState() must report. */
  lines(): Array<[number, Piece[]]> {
    return [...this.pending].filter(([, l]) => l.length > 0).sort((a, b) => a[0] - b[0]);
  }

  /** Π (nᵢ + 1) over lines with pending pieces. */
  imageCount(): bigint {
    return this.lines().reduce((n, [, l]) => n * BigInt(l.length + 1), 1n);
  }
}

function run(r: PmemRegion, op: Op): void {
  switch (op.kind) {
    case 'store':
      return r.store(op.off, op.data);
    case 'u64':
      return r.storeU64(op.word * 8, op.value);
    case 'flush':
      return r.flush(op.off, op.len);
    case 'drain':
      return r.drain();
    case 'persist':
      return r.persist(op.off, op.len);
    case 'nt':
      return r.storeNonTemporal(op.off, op.data);
  }
}

function data(image: Uint8Array, size: number): Uint8Array {
  return image.subarray(HEADER_BYTES, HEADER_BYTES + size);
}

function only(state: CrashState, engine: 'none' | 'all'): Uint8Array {
  const imgs = [...crashImages(state, { engine })];
  assert.equal(imgs.length, 1);
  return materialize(state, imgs[0]!);
}

const NUM_RUNS = Number(process.env.PMRPC_MODEL_RUNS ?? 300);

t.test("'none' image = reference durable memory; 'all' image = visible memory; pending pieces match", async (t) => {
  const SIZE = 512;
  fc.assert(
    fc.property(fc.array(opArb(SIZE), { minLength: 1, maxLength: 40 }), (ops) => {
      const r = PmemRegion.createInMemory(SIZE, { tracing: true });
      const ref = new Reference(SIZE);
      for (const [i, raw] of ops.entries()) {
        const op = clamp(raw, SIZE);
        run(r, op);
        ref.apply(op);
        const st = r.crashState();
        assert.deepEqual(data(only(st, 'none'), SIZE), ref.durable, `after op ${i} (${op.kind}): 'none' image ≠ reference durable bytes`);
        assert.deepEqual(data(only(st, 'all'), SIZE), ref.visible, `after op ${i}: 'all' image ≠ reference visible bytes`);
        assert.deepEqual(r.load(0, SIZE), ref.visible, `after op ${i}: region visible ≠ reference visible`);
        assert.deepEqual(
          st.components.map((c) => [c.kind, c.source, c.pieces.map((p) => [p.offset, [...p.bytes]])]),
          ref.lines().map(([line, l]) => ['prefix', `line ${line}`, l.map((p) => [p.offset, [...p.bytes]])]),
          `after op ${i}: pending pieces differ`,
        );
        assert.equal(countImages(st), ref.imageCount());
        assert.equal(r.dirtyLines, ref.lines().length, 'tracing: a line is dirty iff it has pending pieces');
      }
      r.close();
    }),
    { seed, numRuns: NUM_RUNS },
  );
  t.pass(`held for ${NUM_RUNS} random programs`);
});

t.test('a range persisted (and not overwritten since) is identical in every random image, with or without eviction', async (t) => {
  const SIZE = 512;
  let checkedBytes = 0;
  fc.assert(
    fc.property(
      fc.array(opArb(SIZE), { minLength: 1, maxLength: 40 }),
      fc.constantFrom(0, 0.1, 0.5),
      fc.integer({ min: 0, max: 2 ** 31 - 1 }),
      (ops, eviction, s) => {
        const r = PmemRegion.createInMemory(SIZE, { tracing: true, eviction, seed: s });
        const pinned = new Map<number, number>(); // byte offset → value that must be in every image
        for (const raw of ops) {
          const op = clamp(raw, SIZE);
          run(r, op);
          if (op.kind === 'persist') {
            const v = r.load(op.off, op.len);
            for (let i = 0; i < op.len; i++) pinned.set(op.off + i, v[i]!);
          } else if (op.kind === 'store' || op.kind === 'nt') {
            for (let i = 0; i < op.data.length; i++) pinned.delete(op.off + i);
          } else if (op.kind === 'u64') {
            for (let i = 0; i < 8; i++) pinned.delete(op.word * 8 + i);
          }
        }
        const st = r.crashState();
        for (const img of crashImages(st, { engine: 'random', count: 24, seed: s })) {
          const d = data(materialize(st, img), SIZE);
          for (const [off, v] of pinned) assert.equal(d[off], v, `image ${img.index}: persisted byte ${off} is ${d[off]}, want ${v}`);
        }
        checkedBytes += pinned.size;
        r.close();
      },
    ),
    { seed, numRuns: NUM_RUNS },
  );
  t.ok(checkedBytes > 0, `the property was not vacuous: ${checkedBytes} persisted bytes checked in total`);
});

t.test('the exhaustive engine enumerates exactly Π(nᵢ+1) distinct images, each a per-line prefix', async (t) => {
  const SIZE = 256;
  const MAX = 20_000;
  let enumerated = 0;
  let refused = 0;
  fc.assert(
    fc.property(fc.array(opArb(SIZE, 8), { minLength: 1, maxLength: 10 }), (ops) => {
      const r = PmemRegion.createInMemory(SIZE, { tracing: true });
      const ref = new Reference(SIZE);
      for (const raw of ops) {
        const op = clamp(raw, SIZE);
        run(r, op);
        ref.apply(op);
      }
      const st = r.crashState();
      const want = ref.imageCount();
      if (want > BigInt(MAX)) {
        assert.throws(() => [...crashImages(st, { engine: 'exhaustive', maxImages: MAX })], { code: 'PMRPC_ERR_TOO_MANY_IMAGES' });
        refused++;
        return;
      }
      const lines = ref.lines();
      const seen = new Set<string>();
      let n = 0;
      for (const img of crashImages(st, { engine: 'exhaustive', maxImages: MAX })) {
        assert.equal(img.index, n++);
        const key = JSON.stringify(img.choices);
        assert.ok(!seen.has(key), `duplicate image ${key}`);
        seen.add(key);
        // check the bytes of a sample of images (all of them for small states) against the reference
        if (want <= 64n || img.index % 97 === 0) {
          const expect = ref.durable.slice();
          img.choices.forEach((c, k) => {
            for (const p of lines[k]![1].slice(0, c as number)) expect.set(p.bytes, p.offset);
          });
          assert.deepEqual(data(materialize(st, img), SIZE), expect, `image ${key}`);
        }
      }
      assert.equal(BigInt(n), want, `exhaustive count ${n} ≠ Π(nᵢ+1) = ${want}`);
      assert.equal(countImages(st), want);
      enumerated++;
      r.close();
    }),
    { seed, numRuns: NUM_RUNS },
  );
  t.ok(enumerated > NUM_RUNS / 2, `most states were small enough to enumerate (${enumerated} enumerated, ${refused} refused past ${MAX})`);
});

t.test('the fast path and tracing mode leave identical media and stats after the same program', async (t) => {
  const dir = tempDir(t);
  const SIZE = 512;
  let k = 0;
  fc.assert(
    fc.property(
      fc.array(opArb(SIZE), { minLength: 1, maxLength: 40 }),
      fc.constantFrom(0, 0, 0.2, 1),
      fc.integer({ min: 0, max: 2 ** 31 - 1 }),
      (ops, eviction, s) => {
        const path = join(dir, `fast-${k++}.pm`);
        const fast = PmemRegion.create(path, SIZE, { eviction, seed: s });
        const traced = PmemRegion.createInMemory(SIZE, { eviction, seed: s, tracing: true });
        try {
          for (const raw of ops) {
            const op = clamp(raw, SIZE);
            run(fast, op);
            run(traced, op);
          }
          assert.deepEqual(fast.load(0, SIZE), traced.load(0, SIZE), 'visible memory differs');
          assert.deepEqual(fast.stats, traced.stats, 'stats differ');
          const tracedMedia = traced.crashState().media.subarray(HEADER_BYTES);
          fast.close({ writeBack: false });
          assert.deepEqual(fileMedia(path), tracedMedia, 'media differ');
          // an orderly close of both writes everything back: media = visible on both
          traced.close();
        } finally {
          fast.close({ writeBack: false });
          unlinkSync(path);
        }
      },
    ),
    { seed, numRuns: NUM_RUNS },
  );
  t.pass(`held for ${NUM_RUNS} random programs`);
});

t.test("lineModel 'subset' (the kill model): any subset of a line's pending words, not only a prefix", async (t) => {
  const r = PmemRegion.createInMemory(4096, { tracing: true, lineModel: 'subset' });
  r.storeU64(0, 1n);
  r.storeU64(8, 2n);
  const st = r.crashState();
  t.same(st.components.map((c) => c.kind), ['subset']);
  t.equal(countImages(st), 4n, '2 words: 4 subsets (a prefix model has 3)');
  const seen = new Set([...crashImages(st, { engine: 'exhaustive' })].map((img) => {
    const b = materialize(st, img);
    const dv = new DataView(b.buffer, b.byteOffset + HEADER_BYTES);
    return `${dv.getBigUint64(0, true)},${dv.getBigUint64(8, true)}`;
  }));
  t.ok(seen.has('0,2'), 'the second word without the first: reachable only under the subset model');
  const p = PmemRegion.createInMemory(4096, { tracing: true });
  p.storeU64(0, 1n);
  p.storeU64(8, 2n);
  t.equal(countImages(p.crashState()), 3n, "the default 'prefix' model");
  t.throws(() => PmemRegion.createInMemory(4096, { lineModel: 'any' as never }), new TypeError("lineModel must be 'prefix' or 'subset', got any"));
});
