import { spawnSync } from 'node:child_process';
import { cpus, totalmem } from 'node:os';
import { performance } from 'node:perf_hooks';

export interface Throughput {
  /** Median operations per second over the repeats. */
  opsPerSecond: number;
  /** Every repeat's operations per second, in run order. */
  samples: number[];
}

/**
 * Runs `op` in batches for about `minMs` per repeat, `repeats` times, and returns the median rate.
 * `op(i)` runs one operation; the batch loop is kept tight so the timer is read rarely.
 */
export function measureOps(op: (i: number) => void, options: { minMs?: number; repeats?: number; batch?: number } = {}): Throughput {
  const minMs = options.minMs ?? 200;
  const repeats = options.repeats ?? 5;
  const batch = options.batch ?? 256;
  // Warm-up: let the JIT settle on this op.
  const warmEnd = performance.now() + Math.min(50, minMs / 2);
  let w = 0;
  while (performance.now() < warmEnd) for (let k = 0; k < batch; k++) op(w++);
  const samples: number[] = [];
  for (let r = 0; r < repeats; r++) {
    let n = 0;
    const t0 = performance.now();
    let t = t0;
    while (t - t0 < minMs) {
      for (let k = 0; k < batch; k++) op(n++);
      t = performance.now();
    }
    samples.push((n * 1000) / (t - t0));
  }
  return { opsPerSecond: median(samples), samples };
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function machineDescription(): Record<string, unknown> {
  const c = cpus();
  return { node: process.version, platform: process.platform, arch: process.arch, cpus: c.length, cpuModel: c[0]?.model ?? 'unknown', memoryBytes: totalmem() };
}

/** The filesystem holding `dir` (the disk a benchmark's files are on): device, type and mount point, from `df -PT` ('unknown' fields when df is absent). */
export function filesystemOf(dir: string): { device: string; type: string; mountedOn: string } {
  const r = spawnSync('df', ['-PT', dir], { encoding: 'utf8' });
  const line = r.status === 0 ? r.stdout.trim().split('\n')[1] : undefined;
  const f = line?.split(/\s+/) ?? [];
  return { device: f[0] ?? 'unknown', type: f[1] ?? 'unknown', mountedOn: f[6] ?? 'unknown' };
}

export function fmtRate(x: number): string {
  if (x >= 1e6) return `${(x / 1e6).toFixed(2)} M/s`;
  if (x >= 1e3) return `${(x / 1e3).toFixed(1)} k/s`;
  return `${x.toFixed(1)} /s`;
}

/**
 * Drops every ratio that is not a finite number (a cell that saw no request in its window — a
 * short window on a loaded machine — gives a zero denominator) and returns their names, for the
 * report to list as not measured. A ratio is never reported as Infinity or NaN.
 */
export function dropUnmeasured(ratios: Record<string, number>): string[] {
  const gone: string[] = [];
  for (const [k, v] of Object.entries(ratios)) {
    if (!Number.isFinite(v)) {
      delete ratios[k];
      gone.push(k);
    }
  }
  return gone;
}
