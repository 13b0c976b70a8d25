/**
 * `pmrpc reproduce [--json]` (issue 14): the reproduction table — each published figure of
 * docs/references.md (§8) beside the same figure in modelled time (the real code on the deterministic World
 * with a cost model) and, when a `pmrpc bench` run left its JSON in --out, the measured figure.
 */
import type { Command } from 'commander';
import { COST_PROFILE_NAMES, DEFAULT_COST_PROFILE, costProfile } from '../src/testing/index.js';
import { formatRepro, formatReproMarkdown, reproduce } from '../bench/index.js';
import { DEFAULT_BENCH_OUT } from './bench.js';
import { intOption, log, printJson, progressBar } from './output.js';

export function registerReproduce(program: Command): void {
  program
    .command('reproduce')
    .description('the reproduction table: published vs modelled (virtual time, cost model) vs measured (last bench run in --out), with the deviation, the mapping to pmrpc and an explanation per row')
    .option('--json', 'print {rows: [{name, published, modelled, measured, deviation, maps, explanation}]} on stdout')
    .option('--markdown', 'print the table as Markdown with every row\'s mapping and explanation (docs/benchmarks.md)')
    .option('--model <profile>', `cost-model profile (${COST_PROFILE_NAMES.join(', ')})`, DEFAULT_COST_PROFILE)
    .option('--out <dir>', 'where `pmrpc bench` wrote its JSON (measured values; absent files: measured is null)', DEFAULT_BENCH_OUT)
    .option('--no-measured', 'do not read measured values (every measured is null)')
    .option('--seed <n>', 'seed of the modelled runs (one seed = one exact execution)', intOption('seed'), 1)
    .option('--requests <n>', 'requests / operations per client in each modelled cell', intOption('requests'), 60)
    .action(async (opts: { json?: boolean; markdown?: boolean; model: string; out: string; measured: boolean; seed: number; requests: number }) => {
      costProfile(opts.model); // a bad profile fails before any work
      if (opts.requests < 10 || opts.requests > 100_000) throw new RangeError(`--requests must be in [10, 100000], got ${opts.requests}`);
      const bar = progressBar('reproduce');
      const rep = await reproduce({ profile: opts.model, seed: opts.seed, measuredDir: opts.measured ? opts.out : undefined, requests: opts.requests, progress: (d, t, l) => bar.update(d, t, l) });
      bar.stop();
      if (opts.json) return printJson(rep);
      for (const line of opts.markdown === true ? formatReproMarkdown(rep) : formatRepro(rep)) process.stdout.write(`${line}\n`);
      log(`replay: pmrpc reproduce --model ${opts.model} --seed ${opts.seed} --requests ${opts.requests}`);
    });
}
