import type { Command } from 'commander';
import { randomSeed } from '../pmem/index.js';
import { LITMUS_LAYERS, runLitmus, selectLitmus, type LitmusResult } from '../src/litmus/index.js';
import { intOption, log, printJson, report } from './output.js';

export function registerLitmus(program: Command): void {
  program
    .command('litmus')
    .description('run the hardware-model litmus catalogue (pmem and NIC rules of DESIGN §2) and report each rule as ok or FAIL')
    .option('--json', 'print one JSON array of {name, layer, ok, ...} on stdout')
    .option('--seed <n>', 'seed of the randomised litmus (printed; default random)', intOption('seed'))
    .option('--layer <layer>', `run only one layer: ${LITMUS_LAYERS.join(' | ')}`)
    .option('--filter <text>', 'run only litmus whose name contains this text')
    .addHelpText('after', '\nExit status: 0 when every litmus is ok, 1 when one FAILs or when --layer / --filter selects none (PMRPC_ERR_NOTHING_SELECTED).\nThe report (each litmus, then the summary and the replay line) is on stdout.')
    .action(async (opts: { json?: boolean; seed?: number; layer?: string; filter?: string }) => {
      const seed = opts.seed ?? randomSeed();
      const catalogue = selectLitmus({ layer: opts.layer, filter: opts.filter });
      if (!opts.json) log(`pmrpc litmus: ${catalogue.length} litmus, seed ${seed}`);
      const results: LitmusResult[] = [];
      for (const l of catalogue) {
        const r = await runLitmus(l, seed);
        results.push(r);
        if (!opts.json) printHuman(r);
      }
      const failed = results.filter((r) => !r.ok);
      if (opts.json) printJson(results);
      else report(`${results.length - failed.length} ok, ${failed.length} FAIL (seed ${seed}; replay with --seed ${seed})`);
      if (failed.length > 0) process.exitCode = 1;
    });
}

function printHuman(r: LitmusResult): void {
  const lines = [`${r.ok ? 'ok  ' : 'FAIL'} [${r.layer}] ${r.name}`, `       rule: ${r.rule}`];
  if (r.mustBePossible) lines.push(`       must be possible:   ${r.mustBePossible}`);
  if (r.mustBeImpossible) lines.push(`       must be impossible: ${r.mustBeImpossible}`);
  lines.push(`       produced: ${r.produced} (${r.examined} examined)${r.error ? ` — ${r.error}` : ''}`);
  report(lines.join('\n'));
}
