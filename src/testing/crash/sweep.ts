/**
 * A sweep: one app spec over many seeds (each seed its own NIC configuration), in-process or spread
 * over worker threads with piscina (`jobs`). Reports merge by seed, so shards (`--seeds A..B` on
 * several machines) merge the same way.
 */
import { Piscina } from 'piscina';
import type { Clock } from '../../../pmem/index.js';
import { explore, mergeReports, type ExploreOptions, type ExploreReport } from './explorer.js';
import { withDistinctImages } from './distinct.js';
import type { PicturedViolation } from './picture.js';
import { appOf, type SweepSpec } from './apps.js';

/** A report with the distinct (crash point, image) pairs checked (distinct.ts). */
export type CountedReport = ExploreReport & { distinctImages: number; violations: PicturedViolation[] };

/** Explores one seed of a spec (the worker's task). */
export async function exploreSeed(spec: SweepSpec, seed: number, extra: Partial<ExploreOptions> = {}): Promise<CountedReport> {
  const app = withDistinctImages(appOf(spec));
  const r = app.attachTimelines(await explore(app, { ...spec.explore, ...extra, seed }));
  return { ...r, distinctImages: app.distinct };
}

export interface SweepOptions {
  jobs: number;
  clock: Clock | undefined;
  onSeed: ((r: CountedReport, done: number, total: number) => void) | undefined;
  /** Per crash point of the seed being explored (in-process runs, jobs 1, only: workers report per seed). */
  onProgress: ((seed: number, p: { imagesChecked: number; points: number; pointsDone: number }) => void) | undefined;
}

export async function sweep(spec: SweepSpec, seeds: readonly number[], options: Partial<SweepOptions> = {}): Promise<CountedReport & { seeds: number[] }> {
  const jobs = options.jobs ?? 1;
  if (!Number.isSafeInteger(jobs) || jobs < 1 || jobs > 64) throw new RangeError(`jobs must be an integer in [1, 64], got ${String(jobs)}`);
  if (seeds.length === 0) throw new RangeError('seeds must not be empty');
  const t0 = options.clock?.nowMs();
  const reports: CountedReport[] = [];
  let done = 0;
  const finish = (r: CountedReport): void => {
    reports.push(r);
    options.onSeed?.(r, ++done, seeds.length);
  };
  const onProgress = options.onProgress;
  await runPooled(seeds, jobs, (seed) => ({ spec, seed }), (seed) => exploreSeed(spec, seed, onProgress !== undefined ? { onProgress: (p) => onProgress(seed, p) } : {}), finish);
  const merged = { ...mergeReports(reports), violations: reports.sort((a, b) => a.seed - b.seed).flatMap((r) => r.violations), distinctImages: reports.reduce((a, r) => a + r.distinctImages, 0) };
  if (options.clock !== undefined && t0 !== undefined) {
    merged.seconds = Math.max(1e-9, (options.clock.nowMs() - t0) / 1000);
    merged.imagesPerSecond = Math.round(merged.imagesChecked / merged.seconds);
  }
  return merged;
}

/**
 * Runs one task per item: in-process when `jobs` is 1, else on a piscina pool of `jobs` threads
 * running sweep-worker.js (which dispatches on the task: a sweep's seed, or a swarm seed). `onDone`
 * sees each result as it arrives (in completion order).
 */
export async function runPooled<T, R>(items: readonly T[], jobs: number, task: (item: T) => unknown, inProcess: (item: T) => Promise<R>, onDone: (r: R) => void): Promise<void> {
  if (jobs === 1 || items.length === 1) {
    for (const it of items) onDone(await inProcess(it));
    return;
  }
  const pool = new Piscina({ filename: new URL('./sweep-worker.js', import.meta.url).href, minThreads: 1, maxThreads: jobs });
  try {
    await Promise.all(items.map(async (it) => onDone((await pool.run(task(it))) as R)));
  } finally {
    await pool.destroy();
  }
}
