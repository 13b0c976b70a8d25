// The plain mutant sweep of one app, as `pmrpc crash-test --app APP --mutants all --seeds 1..24
// --jobs 2` runs it (src/testing/crash/mutants.ts): every mutant is caught by the plain sweep —
// nothing pinned for it — at some seed of 1..24, or argued equivalent in the docs. One file per app
// (test/deep/mutants-all-<app>.test.ts) so that tap runs them side by side, each with its own bound.
import t from 'tap';
// The compiled explorer: its --jobs pool runs the compiled sweep worker (dist/), as the CLI does.
import { parseSeedRange, runMutants, formatMutants, type MutantApp } from '../../dist/src/testing/crash/index.js';

/** `system`: kv's system whose mutants run (`--system pilaf`; undefined: the app's default). */
export function mutantsAll(app: MutantApp, system?: string): void {
  const range = process.env.PMRPC_MUTANT_SEEDS ?? '1..24';
  const seeds = parseSeedRange(range);
  const flags = `--app ${app}${system !== undefined ? ` --system ${system}` : ''}`;
  t.comment(`${app}${system !== undefined ? ` (${system})` : ''}: every mutant by the plain sweep, seeds ${range} (replay: pmrpc crash-test ${flags} --mutants all --seeds ${range} --jobs 2; one mutant: the replay line it prints)`);
  t.setTimeout(2_700_000); // a hang guard, not a speed bound: a mutant sweep beside the other deep files on a loaded 2-core machine took over 30 min once (rs, session 15)
  t.test(`crash-test ${flags} --mutants all --seeds ${range}: every mutant caught or argued equivalent`, async (t) => {
    const started = Date.now();
    const r = await runMutants(app, 'all', seeds, { jobs: 2, ...(system !== undefined ? { system } : {}) });
    t.comment(`${r.mutants.length} mutants in ${((Date.now() - started) / 1000).toFixed(0)} s wall`);
    for (const line of formatMutants(r)) t.comment(line.split('\n')[0]!);
    t.ok(r.mutants.length > 0, 'the app lists mutants');
    for (const m of r.mutants) {
      const name = `${m.name}${m.strategy === null ? '' : ` (${m.strategy})`}`;
      if (m.equivalent) t.pass(`${name}: equivalent (argued in the docs)`);
      else t.ok(m.caught, `${name}: ${m.caught ? `caught at seed ${String(m.seed)} after ${m.images} images — ${String(m.replay)}` : `NOT caught in ${m.seedsRun} seeds`}`);
    }
  });
}
