import type { ChartSpec } from './charts.js';

/**
 * Benchmark suites: `pmrpc bench <suite>` (and `npm run bench -- <suite>`). Every comparison is a
 * ratio measured in one run; every figure is a median over repeats. Benchmarks may read real time.
 */
export interface BenchOptions {
  /** A small matrix that finishes in well under a minute. */
  quick: boolean;
  /** Seed for any randomness in the workload. */
  seed: number;
  /** Progress callback (the CLI draws it on stderr when stderr is a terminal). */
  progress: (done: number, total: number, label: string) => void;
  /** A cost-model profile (`--model`): the suite also runs its cells in modelled time, beside the measured ones (bench/model-bench.ts). */
  model?: string;
}

export interface BenchReport {
  suite: string;
  /** Machine and configuration the figures come from. */
  config: Record<string, unknown>;
  /** One row per measured cell. */
  rows: Array<Record<string, unknown>>;
  /** Headline ratios, each measured in this run. */
  ratios: Record<string, number>;
  /** Ratios this run could not measure (a cell saw no request in its window), by name; never reported as Infinity or NaN. */
  unmeasured?: string[];
  /** Human-readable lines (printed without --json). */
  summary: string[];
  /** Charts to render as SVG into the output directory. */
  charts?: ChartSpec[];
}

export interface BenchSuite {
  name: string;
  description: string;
  run(options: BenchOptions): Promise<BenchReport>;
}
