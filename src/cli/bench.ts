import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { randomSeed } from '../../pmem/index.js';
import { benchSuites } from '../../bench/index.js';
import { intOption, log, printJson, progressBar } from './output.js';

export function registerBench(program: Command): void {
  const bench = program.command('bench').description('run a benchmark suite; every comparison is a ratio measured in the same run');
  for (const suite of benchSuites) {
    bench
      .command(suite.name)
      .description(suite.description)
      .option('--quick', 'a small matrix (well under a minute)')
      .option('--json', 'print one JSON document on stdout')
      .option('--out <dir>', 'also write the report as JSON into this directory')
      .option('--seed <n>', 'workload seed (default random, printed)', intOption('seed'))
      .action(async (opts: { quick?: boolean; json?: boolean; out?: string; seed?: number }) => {
        const seed = opts.seed ?? randomSeed();
        const bar = progressBar(`bench ${suite.name}`);
        const report = await suite.run({ quick: opts.quick === true, seed, progress: (d, t, l) => bar.update(d, t, l) });
        bar.stop();
        const doc = { ...report, seed, command: `pmrpc bench ${suite.name}${opts.quick ? ' --quick' : ''} --seed ${seed}` };
        if (opts.out !== undefined) {
          mkdirSync(opts.out, { recursive: true });
          writeFileSync(join(opts.out, `${suite.name}.json`), `${JSON.stringify(doc, null, 2)}\n`);
        }
        if (opts.json) printJson(doc);
        else {
          for (const line of report.summary) process.stdout.write(`${line}\n`);
          log(`seed ${seed}; replay: ${doc.command}`);
        }
      });
  }
}
