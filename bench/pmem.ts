/**
 * bench pmem: what the emulated PM device costs (layer 1).
 *
 * - Persist throughput: store + persist of 64 B … 4 KiB ranges on a file-backed region (fast
 *   path, and with tracing), against a plain memcpy (Uint8Array.set) of the same bytes to the same
 *   offsets of an ordinary buffer, measured alternately in the same run: the ratio is the price of
 *   the cache model. With `strict` (msync on every drain) at 64 B and 4 KiB (all sizes in the full
 *   run): the price of durability across a machine crash, which depends on the file system.
 * - Crash images per second: a traced 64 KiB region with a few dozen dirty lines; an image is
 *   materialize() + PmemRegion.openImage(); also crashState() captures per second and the
 *   exhaustive engine's enumeration rate (choice vectors, and materialised images).
 */
import { mkdtempSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crashImages, countImages, createPrng, LINE_BYTES, materialize, PmemRegion, type CrashState, type ImageChoice } from '../pmem/index.js';
import { opsBySizeChart } from './charts.js';
import { fmtRate, machineDescription, measureOps, median } from './measure.js';
import type { BenchOptions, BenchReport, BenchSuite } from './types.js';

const SIZES = [64, 256, 1024, 4096];
const REGION_BYTES = 4 * 1024 * 1024; // ranges cycle through 4 MiB
const IMAGE_REGION_BYTES = 64 * 1024;
const IMAGE_DIRTY_LINES = 48;

const FS_TYPES: Record<number, string> = { 0xef53: 'ext4', 0x01021994: 'tmpfs', 0x58465342: 'xfs', 0x9123683e: 'btrfs', 0x794c7630: 'overlayfs', 0x6969: 'nfs', 0x65735546: 'fuse' };

function fsType(dir: string): string {
  try {
    const t = Number(statfsSync(dir).type);
    return FS_TYPES[t] ?? `0x${t.toString(16)}`;
  } catch {
    return 'unknown';
  }
}

interface Plan {
  repeats: number;
  minMs: number;
  strictSizes: number[];
}

export const pmemBench: BenchSuite = {
  name: 'pmem',
  description: 'persist throughput (64 B … 4 KiB, also strict msync) vs memcpy in the same run; crash images per second',
  async run(o: BenchOptions): Promise<BenchReport> {
    const plan: Plan = o.quick ? { repeats: 3, minMs: 120, strictSizes: [64, 4096] } : { repeats: 7, minMs: 300, strictSizes: SIZES };
    const dir = mkdtempSync(join(tmpdir(), 'pmrpc-bench-pmem-'));
    const rows: Array<Record<string, unknown>> = [];
    const ratios: Record<string, number> = {};
    const summary: string[] = [];
    const total = SIZES.length + plan.strictSizes.length + 4;
    let done = 0;
    const step = (label: string) => o.progress(done++, total, label);
    try {
      summary.push(`pmrpc bench pmem${o.quick ? ' --quick' : ''} — medians of ${plan.repeats} repeats (crash images: ${Math.max(plan.repeats, 5)}); memcpy and persist measured alternately in this run`);
      summary.push(`region file on ${fsType(dir)} (${dir}); ${machineDescription().cpus} CPUs, Node ${process.version}`);
      summary.push('');
      summary.push('persist throughput (store + persist of one range) vs memcpy of the same bytes:');

      // ------------------------------------------------------------ persist vs memcpy
      const fast = PmemRegion.create(join(dir, 'fast.pm'), REGION_BYTES, { seed: o.seed });
      const traced = PmemRegion.create(join(dir, 'traced.pm'), REGION_BYTES, { tracing: true, seed: o.seed });
      const plain = new Uint8Array(REGION_BYTES);
      for (const size of SIZES) {
        step(`persist ${size} B`);
        const payload = patterned(size, o.seed);
        const slots = REGION_BYTES / size;
        const memcpy = (i: number) => plain.set(payload, (i % slots) * size);
        const persistOn = (r: PmemRegion) => (i: number) => {
          const off = (i % slots) * size;
          r.store(off, payload);
          r.persist(off, size);
        };
        const m = alternate(plan, { memcpy, fast: persistOn(fast), tracing: persistOn(traced) }, 256);
        const medianRatio = median(m.memcpy.samples.map((x, k) => x / m.fast.samples[k]!));
        ratios[`memcpy_over_persist_${size}B`] = round(medianRatio);
        ratios[`memcpy_over_persist_tracing_${size}B`] = round(median(m.memcpy.samples.map((x, k) => x / m.tracing.samples[k]!)));
        for (const [mode, r] of Object.entries(m)) {
          rows.push({ cell: 'persist', sizeBytes: size, mode, opsPerSecond: Math.round(r.ops), mbPerSecond: round((r.ops * size) / 1e6), samples: r.samples.map(Math.round) });
        }
        summary.push(
          `  ${pad(`${size} B`, 7)} memcpy ${pad(fmtRate(m.memcpy.ops), 11)} persist ${pad(fmtRate(m.fast.ops), 11)} (×${fmt(medianRatio)} slower; ${fmt((m.fast.ops * size) / 1e6)} MB/s)` +
            `   tracing ${pad(fmtRate(m.tracing.ops), 11)} (×${fmt(ratios[`memcpy_over_persist_tracing_${size}B`]!)})`,
        );
      }
      fast.close();
      traced.close();

      // ------------------------------------------------------------ strict: msync on every drain
      summary.push('');
      summary.push('strict (msync of the drained lines on every persist), file-backed, vs non-strict persist in the same run:');
      const strict = PmemRegion.create(join(dir, 'strict.pm'), REGION_BYTES, { strict: true, seed: o.seed });
      const loose = PmemRegion.create(join(dir, 'loose.pm'), REGION_BYTES, { seed: o.seed });
      for (const size of plan.strictSizes) {
        step(`strict ${size} B`);
        const payload = patterned(size, o.seed + 1);
        const slots = REGION_BYTES / size;
        const on = (r: PmemRegion) => (i: number) => {
          const off = (i % slots) * size;
          r.store(off, payload);
          r.persist(off, size);
        };
        const memcpyStrict = (i: number) => plain.set(payload, (i % slots) * size);
        const m = alternate(plan, { memcpy: memcpyStrict, persist: on(loose), strict: on(strict) }, 8);
        const overMemcpy = median(m.memcpy.samples.map((x, k) => x / m.strict.samples[k]!));
        const overPersist = median(m.persist.samples.map((x, k) => x / m.strict.samples[k]!));
        ratios[`memcpy_over_strict_${size}B`] = round(overMemcpy);
        ratios[`persist_over_strict_${size}B`] = round(overPersist);
        for (const [mode, r] of Object.entries(m)) {
          rows.push({ cell: 'strict', sizeBytes: size, mode, opsPerSecond: Math.round(r.ops), samples: r.samples.map(Math.round) });
        }
        summary.push(
          `  ${pad(`${size} B`, 7)} strict ${pad(fmtRate(m.strict.ops), 11)} (${fmt(1e6 / m.strict.ops)} µs each; ×${fmt(overPersist)} slower than non-strict ${fmtRate(m.persist.ops)}, ×${fmt(overMemcpy)} slower than memcpy)`,
        );
      }
      strict.close();
      loose.close();

      // ------------------------------------------------------------ crash images
      summary.push('');
      summary.push(`crash images (traced ${IMAGE_REGION_BYTES / 1024} KiB region, ${IMAGE_DIRTY_LINES} dirty lines):`);
      const { region: src, state } = imageState(o.seed);
      // These cells allocate a region per image (GC-heavy) and are short: more repeats for a steadier median.
      const imagePlan = { minMs: plan.minMs, repeats: Math.max(plan.repeats, 5) };
      const pieces = state.components.reduce((n, c) => n + c.pieces.length, 0);
      const choices: ImageChoice[][] = [];
      for (const img of crashImages(state, { engine: 'random', count: 512, seed: o.seed })) choices.push(img.choices);

      step('crash images: materialize + openImage');
      const img = measureOps(
        (i) => {
          const r = PmemRegion.openImage(materialize(state, choices[i % choices.length]!));
          r.close();
        },
        { ...imagePlan, batch: 16 },
      );
      rows.push({ cell: 'crash-image', what: 'materialize + openImage (random engine choices)', regionBytes: IMAGE_REGION_BYTES, dirtyLines: state.components.length, pieces, opsPerSecond: Math.round(img.opsPerSecond), samples: img.samples.map(Math.round) });
      summary.push(`  materialize + openImage          ${pad(fmtCount(img.opsPerSecond), 8)} images/s (${state.components.length} lines, ${pieces} pending pieces, ${countImages(state)} possible images)`);

      step('crash images: random engine end to end');
      const rnd = measureOps(
        (i) => {
          for (const c of crashImages(state, { engine: 'random', count: 16, seed: o.seed + i })) PmemRegion.openImage(materialize(state, c)).close();
        },
        { ...imagePlan, batch: 1 },
      );
      rows.push({ cell: 'crash-image', what: 'random engine: generate + materialize + openImage', opsPerSecond: Math.round(rnd.opsPerSecond * 16), samples: rnd.samples.map((x) => Math.round(x * 16)) });
      summary.push(`  random engine, end to end        ${pad(fmtCount(rnd.opsPerSecond * 16), 8)} images/s`);

      step('crash state capture');
      const cap = measureOps(() => void src.crashState(), { ...imagePlan, batch: 16 });
      rows.push({ cell: 'crash-state', what: 'crashState() capture', opsPerSecond: Math.round(cap.opsPerSecond), samples: cap.samples.map(Math.round) });
      summary.push(`  crashState() capture             ${pad(fmtCount(cap.opsPerSecond), 8)} captures/s`);
      src.close();

      step('exhaustive enumeration');
      // 10 lines × 2 pieces: 3^10 = 59,049 images.
      const ex = PmemRegion.createInMemory(IMAGE_REGION_BYTES, { tracing: true });
      for (let l = 0; l < 10; l++) {
        ex.storeU64(l * 3 * LINE_BYTES, BigInt(l + 1));
        ex.storeU64(l * 3 * LINE_BYTES + 8, BigInt(l + 100));
      }
      const exState = ex.crashState();
      const exCount = Number(countImages(exState));
      const en = measureOps(
        () => {
          let n = 0;
          for (const _ of crashImages(exState, { engine: 'exhaustive' })) n++;
          if (n !== exCount) throw new Error(`exhaustive engine yielded ${n} images, expected ${exCount}`);
        },
        { ...imagePlan, batch: 1 },
      );
      const enMat = measureOps(
        () => {
          let n = 0;
          for (const c of crashImages(exState, { engine: 'exhaustive' })) {
            if (n++ >= 2048) break;
            PmemRegion.openImage(materialize(exState, c)).close();
          }
        },
        { ...imagePlan, batch: 1 },
      );
      ex.close();
      rows.push({ cell: 'exhaustive', what: 'enumerate choice vectors', images: exCount, opsPerSecond: Math.round(en.opsPerSecond * exCount), samples: en.samples.map((x) => Math.round(x * exCount)) });
      rows.push({ cell: 'exhaustive', what: 'enumerate + materialize + openImage (first 2048)', opsPerSecond: Math.round(enMat.opsPerSecond * 2048), samples: enMat.samples.map((x) => Math.round(x * 2048)) });
      summary.push(`  exhaustive: enumerate            ${pad(fmtCount(en.opsPerSecond * exCount), 8)} choice vectors/s (${exCount} images in ${fmt(1000 / en.opsPerSecond)} ms)`);
      summary.push(`  exhaustive: + materialize + open ${pad(fmtCount(enMat.opsPerSecond * 2048), 8)} images/s`);
      ratios.crash_images_per_second = Math.round(img.opsPerSecond);
      ratios.exhaustive_choice_vectors_per_second = Math.round(en.opsPerSecond * exCount);
      o.progress(total, total, 'done');

      const persistRows = rows
        .filter((r) => r.cell === 'persist')
        .map((r) => ({ series: String(r.mode), sizeBytes: Number(r.sizeBytes), opsPerSecond: Number(r.opsPerSecond) }));
      return {
        charts: [opsBySizeChart('persist', 'store + persist vs memcpy of the same bytes', persistRows)],
        suite: 'pmem',
        config: {
          machine: machineDescription(),
          quick: o.quick,
          repeats: plan.repeats,
          minMsPerRepeat: plan.minMs,
          regionBytes: REGION_BYTES,
          regionFileSystem: fsType(dir),
          sizes: SIZES,
          strictSizes: plan.strictSizes,
          imageRegionBytes: IMAGE_REGION_BYTES,
          imageDirtyLines: IMAGE_DIRTY_LINES,
          ratioMeaning: 'memcpy_over_X = memcpy ops/s ÷ X ops/s for the same bytes (median of per-repeat ratios): how many times slower X is; the other two are rates',
        },
        rows,
        ratios,
        summary,
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

interface Measured {
  ops: number;
  samples: number[];
}

/** Measures each op once per repeat, interleaved, so that drift hits every op alike. */
function alternate<K extends string>(plan: Plan, ops: Record<K, (i: number) => void>, batch: number): Record<K, Measured> {
  const keys = Object.keys(ops) as K[];
  const samples = Object.fromEntries(keys.map((k) => [k, [] as number[]])) as Record<K, number[]>;
  for (let r = 0; r < plan.repeats; r++) {
    for (const k of keys) samples[k].push(measureOps(ops[k], { minMs: plan.minMs, repeats: 1, batch }).opsPerSecond);
  }
  return Object.fromEntries(keys.map((k) => [k, { ops: median(samples[k]), samples: samples[k] }])) as Record<K, Measured>;
}

/** A traced region with IMAGE_DIRTY_LINES dirty lines of 1–4 pending pieces, some persisted data under them. */
function imageState(seed: number): { region: PmemRegion; state: CrashState } {
  const prng = createPrng(seed);
  const r = PmemRegion.createInMemory(IMAGE_REGION_BYTES, { tracing: true, seed });
  const lines = IMAGE_REGION_BYTES / LINE_BYTES;
  r.store(0, patterned(IMAGE_REGION_BYTES, seed));
  r.persist(0, IMAGE_REGION_BYTES);
  const chosen = new Set<number>();
  while (chosen.size < IMAGE_DIRTY_LINES) chosen.add(prng.int(0, lines - 1));
  for (const line of chosen) {
    const n = prng.int(1, 4);
    for (let k = 0; k < n; k++) r.storeU64(line * LINE_BYTES + prng.int(0, 7) * 8, BigInt(prng.u32()));
  }
  return { region: r, state: r.crashState() };
}

function patterned(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed) & 0xff;
  return b;
}

/** A rate without its unit, to put a noun after it ("51.7 k images/s"). */
function fmtCount(x: number): string {
  return fmtRate(x).replace(/ ?\/s$/, '');
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}

function fmt(x: number): string {
  return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
}

function pad(s: string, n: number): string {
  return s.padEnd(n);
}
