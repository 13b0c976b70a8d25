import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { PmrpcError, isPmrpcError, randomSeed, wallClockMs } from '../pmem/index.js';
import { benchSuites, readHistory, recordRun, renderSvg, withModel } from '../bench/index.js';
import { COST_PROFILE_NAMES, costProfile } from '../src/testing/index.js';
import { CliErrorCodes, intOption, log, printJson, progressBar, report as reportLine } from './output.js';

/** Where results go unless --out says otherwise (relative to the working directory). */
export const DEFAULT_BENCH_OUT = 'bench-results';
const HISTORY_FILE = 'history.sqlite';

export function registerBench(program: Command): void {
  const bench = program
    .command('bench')
    .description(`run a benchmark suite; every comparison is a ratio measured in the same run. Results (JSON, SQLite history, SVG charts) go to --out (default ./${DEFAULT_BENCH_OUT})`);
  for (const suite of benchSuites) {
    bench
      .command(suite.name)
      .description(suite.description)
      .option('--quick', 'a small matrix: fewer, shorter cells (bench tcp --quick: about 3 minutes)')
      .option('--json', 'print one JSON document on stdout')
      .option('--out <dir>', `write <suite>.json, ${HISTORY_FILE} and SVG charts here`, DEFAULT_BENCH_OUT)
      .option('--no-history', 'do not append this run to the SQLite history')
      .option('--seed <n>', 'workload seed (default random, printed)', intOption('seed'))
      .option('--model <profile>', `also run the cells in modelled time with this cost-model profile (${COST_PROFILE_NAMES.join(', ')}), printed and charted beside the measured figures`)
      .action(async (opts: { quick?: boolean; json?: boolean; out: string; history: boolean; seed?: number; model?: string }) => {
        if (opts.model !== undefined) costProfile(opts.model); // a bad profile fails before the run
        const seed = opts.seed ?? randomSeed();
        const startedAt = new Date(wallClockMs()).toISOString();
        const bar = progressBar(`bench ${suite.name}`);
        const bo = { quick: opts.quick === true, seed, progress: (d: number, t: number, l: string) => bar.update(d, t, l), ...(opts.model !== undefined ? { model: opts.model } : {}) };
        const report = await withModel(suite.name, await suite.run(bo), bo);
        bar.stop();
        const command = `pmrpc bench ${suite.name}${opts.quick ? ' --quick' : ''}${opts.model !== undefined ? ` --model ${opts.model}` : ''} --seed ${seed}`;
        mkdirSync(opts.out, { recursive: true });
        const files: string[] = [];
        for (const chart of report.charts ?? []) {
          const file = join(opts.out, `${suite.name}-${chart.name}.svg`);
          writeFileSync(file, await renderSvg(chart.spec));
          files.push(file);
        }
        let runId: number | undefined;
        if (opts.history) {
          runId = recordRun(join(opts.out, HISTORY_FILE), report, { startedAt, seed, quick: opts.quick === true, command });
          files.push(join(opts.out, HISTORY_FILE));
        }
        const { charts: _charts, ...rest } = report;
        const doc = { ...rest, seed, startedAt, command, runId, files: [join(opts.out, `${suite.name}.json`), ...files] };
        writeFileSync(join(opts.out, `${suite.name}.json`), `${JSON.stringify(doc, null, 2)}\n`);
        if (opts.json) printJson(doc);
        else {
          for (const line of report.summary) process.stdout.write(`${line}\n`);
          log(`wrote ${doc.files.join(', ')}`);
          reportLine(`seed ${seed}; replay: ${command}`);
        }
      });
  }
  bench
    .command('history')
    .description(`list recorded runs (newest first) with their ratios, from <out>/${HISTORY_FILE}`)
    .option('--out <dir>', 'results directory', DEFAULT_BENCH_OUT)
    .option('--suite <name>', 'only this suite')
    .option('--limit <n>', 'at most this many runs', intOption('limit'), 20)
    .option('--json', 'print one JSON document on stdout')
    .action((opts: { out: string; suite?: string; limit: number; json?: boolean }) => {
      const file = join(opts.out, HISTORY_FILE);
      if (!existsSync(file)) throw new PmrpcError(CliErrorCodes.NO_HISTORY, `no bench history at ${file}: run a suite first (pmrpc bench SUITE --out ${opts.out}), or point --out at its results`);
      let runs;
      try {
        runs = readHistory(file, { suite: opts.suite, limit: opts.limit });
      } catch (e) {
        if (isPmrpcError(e)) throw e; // PMRPC_ERR_SQLITE_UNAVAILABLE and the like
        throw new PmrpcError(CliErrorCodes.NO_HISTORY, `${file} is not a bench history pmrpc wrote: ${(e as Error).message}`, { cause: e });
      }
      if (opts.json) return printJson(runs);
      for (const r of runs) {
        const ratios = Object.entries(r.ratios).map(([k, v]) => `${k}=${v.toFixed(3)}`).join(' ');
        reportLine(`#${r.id} ${r.startedAt} ${r.suite}${r.quick ? ' (quick)' : ''} git ${r.gitCommit} node ${r.nodeVersion} cells ${r.cells}  ${ratios}`);
      }
    });
}
