/**
 * Litmus tests of the PM device model (DESIGN §2.1). Each builds a small traced region, runs a
 * few stores / flushes / drains, takes the crash state and enumerates its images (exhaustive
 * engine unless said otherwise), then checks the outcome sets.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  countImages,
  crashImages,
  createPrng,
  materialize,
  PmemRegion,
  seededEntropy,
  writeImageFile,
  type CrashState,
  type PmemOptions,
} from '../../pmem/index.js';
import type { Litmus, LitmusOutcome } from './types.js';

const A = 0; // line 0, word 0
const B = 8; // line 0, word 1
const C = 64; // line 1, word 0

function region(seed: number, opts: Partial<PmemOptions> = {}): PmemRegion {
  return PmemRegion.createInMemory(4096, { tracing: true, seed, entropy: seededEntropy(createPrng(seed)), ...opts });
}

/** The set of outcomes (as strings) over the images of `state`, with counts. */
function outcomes(state: CrashState, read: (r: PmemRegion) => string, engine: 'exhaustive' | 'random' | 'none' = 'exhaustive', seed = 0): Map<string, number> {
  const seen = new Map<string, number>();
  for (const img of crashImages(state, { engine, seed, count: 256 })) {
    const r = PmemRegion.openImage(materialize(state, img));
    const o = read(r);
    seen.set(o, (seen.get(o) ?? 0) + 1);
  }
  return seen;
}

function word(r: PmemRegion, off: number): string {
  return r.loadU64(off).toString(16);
}

function describe(seen: Map<string, number>): string {
  return `{${[...seen.keys()].sort().join(' | ')}}`;
}

function check(seen: Map<string, number>, possible: string[], impossible: (o: string) => boolean): LitmusOutcome {
  const examined = [...seen.values()].reduce((a, b) => a + b, 0);
  const ok = possible.every((p) => seen.has(p)) && ![...seen.keys()].some(impossible);
  return { ok, produced: `${describe(seen)} over ${examined} images`, examined };
}

const onlyIn = (allowed: string[]) => (o: string) => !allowed.includes(o);

export const pmemLitmus: Litmus[] = [
  {
    name: 'pmem-unpersisted-store-may-or-may-not-survive',
    layer: 'pmem',
    rule: 'a store that was never flushed may or may not reach media: it sits in a volatile cache line',
    mustBePossible: 'A=0 (lost) and A=1 (written back) both appear',
    mustBeImpossible: 'any other value of A',
    run(seed) {
      const r = region(seed);
      r.storeU64(A, 1n);
      return check(outcomes(r.crashState(), (i) => `A=${word(i, A)}`), ['A=0', 'A=1'], onlyIn(['A=0', 'A=1']));
    },
  },
  {
    name: 'pmem-flushed-not-drained-may-or-may-not-survive',
    layer: 'pmem',
    rule: 'flush (clwb) without drain (sfence) starts a write-back but does not wait for it',
    mustBePossible: 'A=0 and A=1 both appear',
    mustBeImpossible: 'any other value of A',
    run(seed) {
      const r = region(seed);
      r.storeU64(A, 1n);
      r.flush(A, 8);
      return check(outcomes(r.crashState(), (i) => `A=${word(i, A)}`), ['A=0', 'A=1'], onlyIn(['A=0', 'A=1']));
    },
  },
  {
    name: 'pmem-persisted-always-survives',
    layer: 'pmem',
    rule: 'flush + drain (persist) makes a store durable: it is in every crash image',
    mustBePossible: 'A=1',
    mustBeImpossible: 'A=0 in any image',
    run(seed) {
      const r = region(seed);
      r.storeU64(A, 1n);
      r.persist(A, 8);
      r.storeU64(C, 7n); // unrelated pending line, so there is more than one image
      return check(outcomes(r.crashState(), (i) => `A=${word(i, A)}`), ['A=1'], (o) => o !== 'A=1');
    },
  },
  {
    name: 'pmem-store-after-flush-before-drain-may-or-may-not-survive',
    layer: 'pmem',
    rule: 'drain makes durable only what the flush snapshotted; a later store to the line stays pending',
    mustBePossible: 'A=1 (snapshot only) and A=2 (later store too)',
    mustBeImpossible: 'A=0 (the snapshot was drained)',
    run(seed) {
      const r = region(seed);
      r.storeU64(A, 1n);
      r.flush(A, 8);
      r.storeU64(A, 2n);
      r.drain();
      return check(outcomes(r.crashState(), (i) => `A=${word(i, A)}`), ['A=1', 'A=2'], onlyIn(['A=1', 'A=2']));
    },
  },
  {
    name: 'pmem-drain-without-flush-persists-nothing',
    layer: 'pmem',
    rule: 'a drain (sfence) orders flushes; with no flush before it, nothing becomes durable',
    mustBePossible: 'A=0',
    mustBeImpossible: '',
    run(seed) {
      const r = region(seed);
      r.storeU64(A, 1n);
      r.drain();
      return check(outcomes(r.crashState(), (i) => `A=${word(i, A)}`), ['A=0', 'A=1'], onlyIn(['A=0', 'A=1']));
    },
  },
  {
    name: 'pmem-same-line-stores-persist-in-order',
    layer: 'pmem',
    rule: 'stores to one cache line persist in store order (an in-order prefix of the line)',
    mustBePossible: 'A=1,B=0 (first store only)',
    mustBeImpossible: 'A=0,B=1 (second store without the first)',
    run(seed) {
      const r = region(seed);
      r.storeU64(A, 1n);
      r.storeU64(B, 1n);
      return check(outcomes(r.crashState(), (i) => `A=${word(i, A)},B=${word(i, B)}`), ['A=1,B=0', 'A=0,B=0', 'A=1,B=1'], (o) => o === 'A=0,B=1');
    },
  },
  {
    name: 'pmem-different-lines-unordered-without-drain',
    layer: 'pmem',
    rule: 'stores to different lines have no persistence order unless a flush + drain separates them',
    mustBePossible: 'A=0,C=1 (the later store survived, the earlier did not)',
    mustBeImpossible: '',
    run(seed) {
      const r = region(seed);
      r.storeU64(A, 1n);
      r.storeU64(C, 1n);
      return check(outcomes(r.crashState(), (i) => `A=${word(i, A)},C=${word(i, C)}`), ['A=0,C=1', 'A=1,C=0', 'A=1,C=1', 'A=0,C=0'], () => false);
    },
  },
  {
    name: 'pmem-persist-orders-different-lines',
    layer: 'pmem',
    rule: 'persist(A) before storing C makes "C durable, A not" impossible',
    mustBePossible: 'A=1,C=0',
    mustBeImpossible: 'A=0,C=1',
    run(seed) {
      const r = region(seed);
      r.storeU64(A, 1n);
      r.persist(A, 8);
      r.storeU64(C, 1n);
      return check(outcomes(r.crashState(), (i) => `A=${word(i, A)},C=${word(i, C)}`), ['A=1,C=0', 'A=1,C=1'], (o) => o.startsWith('A=0'));
    },
  },
  {
    name: 'pmem-aligned-8-byte-store-never-torn',
    layer: 'pmem',
    rule: 'an aligned 8-byte store is failure-atomic',
    mustBePossible: 'old and new value',
    mustBeImpossible: 'a mix of old and new bytes',
    run(seed) {
      const r = region(seed);
      r.storeU64(A, 0x1111111111111111n);
      r.persist(A, 8);
      r.storeU64(A, 0x2222222222222222n);
      const seen = outcomes(r.crashState(), (i) => word(i, A));
      return check(seen, ['1111111111111111', '2222222222222222'], onlyIn(['1111111111111111', '2222222222222222']));
    },
  },
  {
    name: 'pmem-16-byte-store-may-tear',
    layer: 'pmem',
    rule: 'a store wider than 8 bytes is a sequence of 8-byte pieces: a crash can keep the first half only',
    mustBePossible: 'first word new, second word old (torn)',
    mustBeImpossible: 'second word new, first old (same-line order)',
    run(seed) {
      const r = region(seed);
      r.store(A, new Uint8Array(16).fill(0xab));
      const seen = outcomes(r.crashState(), (i) => `${i.loadU8(A).toString(16)}/${i.loadU8(B).toString(16)}`);
      return check(seen, ['ab/0', '0/0', 'ab/ab'], (o) => o === '0/ab');
    },
  },
  {
    name: 'pmem-eadr-keeps-every-visible-store',
    layer: 'pmem',
    rule: "with domain 'eadr' the CPU caches are persistent: every visible store is in every image",
    mustBePossible: 'A=1,C=1',
    mustBeImpossible: 'A=0 or C=0',
    run(seed) {
      const r = region(seed, { domain: 'eadr' });
      r.storeU64(A, 1n);
      r.storeU64(C, 1n);
      return check(outcomes(r.crashState(), (i) => `A=${word(i, A)},C=${word(i, C)}`), ['A=1,C=1'], (o) => o !== 'A=1,C=1');
    },
  },
  {
    name: 'pmem-eviction-can-persist-early',
    layer: 'pmem',
    rule: 'a dirty line may be written back unasked (seeded eviction): code must not rely on data staying volatile',
    mustBePossible: 'A=1 on media with no flush (eviction on)',
    mustBeImpossible: 'A=1 on media with no flush when eviction is 0',
    run(seed) {
      const mediaOnly = (eviction: number): Map<string, number> => {
        const seen = new Map<string, number>();
        for (let k = 0; k < 64; k++) {
          const r = region(seed + k, { eviction });
          r.storeU64(A, 1n);
          r.storeU64(A, 1n);
          for (const o of outcomes(r.crashState(), (i) => `A=${word(i, A)}`, 'none').keys()) {
            const key = `eviction ${eviction}: ${o}`;
            seen.set(key, (seen.get(key) ?? 0) + 1);
          }
        }
        return seen;
      };
      const seen = new Map([...mediaOnly(0.5), ...mediaOnly(0)]);
      return check(seen, ['eviction 0.5: A=1', 'eviction 0: A=0'], (o) => o === 'eviction 0: A=1');
    },
  },
  {
    name: 'pmem-nt-store-is-durable',
    layer: 'pmem',
    rule: 'a non-temporal store bypasses the cache: it is in every image, and a dirty line it touches is written back first',
    mustBePossible: 'A=1,B=2',
    mustBeImpossible: 'A=0 or B=0',
    run(seed) {
      const r = region(seed);
      r.storeU64(A, 1n); // dirty in the cache
      const b = new Uint8Array(8);
      b[0] = 2;
      r.storeNonTemporal(B, b);
      return check(outcomes(r.crashState(), (i) => `A=${word(i, A)},B=${word(i, B)}`), ['A=1,B=2'], (o) => o !== 'A=1,B=2');
    },
  },
  {
    name: 'pmem-cas-is-one-failure-atomic-piece',
    layer: 'pmem',
    rule: 'a successful 8-byte CAS is one store: old or new value, never torn; a failed CAS stores nothing',
    mustBePossible: 'old and new',
    mustBeImpossible: 'a torn value, or the failed CAS value',
    run(seed) {
      const r = region(seed);
      r.cas64(A, 0n, 0xffff0000ffff0000n);
      r.cas64(A, 0n, 5n); // fails: A is no longer 0
      return check(outcomes(r.crashState(), (i) => word(i, A)), ['0', 'ffff0000ffff0000'], onlyIn(['0', 'ffff0000ffff0000']));
    },
  },
  {
    name: 'pmem-exhaustive-count-equals-analytic-count',
    layer: 'pmem',
    rule: 'the exhaustive engine yields Π(nᵢ+1) images over lines with nᵢ pending pieces, every one distinct',
    mustBePossible: 'images = analytic count = distinct choice vectors',
    mustBeImpossible: 'a missing or repeated image',
    run(seed) {
      const prng = createPrng(seed);
      let examined = 0;
      const mismatches: string[] = [];
      for (let trial = 0; trial < 8; trial++) {
        const r = region(seed + trial);
        const lines = prng.int(1, 4);
        const counts: number[] = [];
        for (let l = 0; l < lines; l++) {
          const n = prng.int(0, 3);
          counts.push(n);
          for (let k = 0; k < n; k++) r.storeU64(l * 64 + 8 * prng.int(0, 7), BigInt(k + 1));
        }
        const state = r.crashState();
        const analytic = counts.reduce((a, n) => a * (n + 1), 1);
        const keys = new Set<string>();
        let n = 0;
        for (const img of crashImages(state, { engine: 'exhaustive' })) {
          keys.add(JSON.stringify(img.choices));
          n++;
        }
        examined += n;
        if (n !== analytic || keys.size !== analytic || countImages(state) !== BigInt(analytic)) mismatches.push(`pieces ${counts.join(',')}: analytic ${analytic}, engine ${n}, distinct ${keys.size}`);
      }
      return { ok: mismatches.length === 0, produced: mismatches.length === 0 ? `8 random states, ${examined} images, all counts equal` : mismatches.join('; '), examined };
    },
  },
  {
    name: 'pmem-random-engine-stays-inside-the-model',
    layer: 'pmem',
    rule: 'the seeded random engine only produces images the exhaustive engine produces, and replays from its seed',
    mustBePossible: 'same images for the same seed',
    mustBeImpossible: 'an image outside the exhaustive set',
    run(seed) {
      const r = region(seed);
      r.store(A, new Uint8Array(24).fill(1));
      r.storeU64(C, 3n);
      r.flush(C, 8);
      r.storeU64(C + 8, 4n);
      const state = r.crashState();
      const read = (i: PmemRegion): string => [A, B, 16, C, C + 8].map((o) => word(i, o)).join(',');
      const all = outcomes(state, read, 'exhaustive');
      const a = outcomes(state, read, 'random', seed);
      const b = outcomes(state, read, 'random', seed);
      const same = JSON.stringify([...a]) === JSON.stringify([...b]);
      const outside = [...a.keys()].filter((k) => !all.has(k));
      const examined = [...a.values()].reduce((x, y) => x + y, 0);
      return { ok: same && outside.length === 0, produced: `${a.size} distinct of ${all.size} possible; replay ${same ? 'identical' : 'differs'}; ${outside.length} outside`, examined };
    },
  },
  {
    name: 'pmem-crash-image-reopens-as-a-region-file',
    layer: 'pmem',
    rule: 'a crash image materialised as a file opens as a region with exactly the image contents',
    mustBePossible: 'the reopened file shows the persisted store',
    mustBeImpossible: 'a refused or different file',
    run(seed) {
      const dir = mkdtempSync(join(tmpdir(), 'pmrpc-litmus-'));
      try {
        const r = region(seed);
        r.storeU64(A, 42n);
        r.persist(A, 8);
        r.storeU64(C, 9n);
        const state = r.crashState();
        const seen = new Map<string, number>();
        for (const img of crashImages(state, { engine: 'exhaustive' })) {
          const path = join(dir, `img-${img.index}.pm`);
          writeImageFile(path, materialize(state, img));
          const f = PmemRegion.open(path);
          const o = `A=${f.loadU64(A)},C=${f.loadU64(C)},uuid ${f.uuid === r.uuid ? 'same' : 'differs'}`;
          seen.set(o, (seen.get(o) ?? 0) + 1);
          f.close();
        }
        return check(seen, ['A=42,C=0,uuid same', 'A=42,C=9,uuid same'], (o) => !o.startsWith('A=42') || !o.endsWith('uuid same'));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  },
];
