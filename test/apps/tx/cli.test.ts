// `pmrpc crash-test --app tx` through the compiled CLI: the mutant listing, a mutant caught at seed
// 1 (exit 1, a replay command), bad options refused.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { TX_MUTANTS } from '../../../src/apps/tx/index.js';
import { resolveTxWorkload } from '../../../src/testing/crash/index.js';

const CLI = fileURLToPath(new URL('../../../dist/cli/main.js', import.meta.url));
const run = (...args: string[]) => spawnSync(process.execPath, [CLI, 'crash-test', '--app', 'tx', ...args], { encoding: 'utf8', timeout: 240_000, maxBuffer: 64 * 1024 * 1024 });

t.test('--list-mutants prints name<TAB>step for every TX mutant', async (t) => {
  const r = run('--list-mutants');
  t.equal(r.status, 0);
  t.same(r.stdout.trim().split('\n'), TX_MUTANTS.map((m) => `${m.name}\t${m.step}`));
});

t.test('--mutant skip-install-flush --seed 1 --json: violations, exit 1, replayable', async (t) => {
  const r = run('--mutant', 'skip-install-flush', '--seed', '1', '--json', '--images-per-point', '4', '--crash-runs', '0');
  t.equal(r.status, 1, r.stderr);
  const d = JSON.parse(r.stdout) as { app: string; mutant: string; violations: Array<{ kind: string; replay: string }> };
  t.equal(d.app, 'tx');
  t.equal(d.mutant, 'skip-install-flush');
  t.ok(d.violations.length > 0);
  t.match(d.violations[0]!.replay, /^pmrpc crash-test --app tx --mutant skip-install-flush --seed 1 .*--ddio on/);
});

t.test('bad workload options: exact messages', async (t) => {
  t.throws(() => resolveTxWorkload({ shards: 0 }), new RangeError('shards must be an integer in [1, 8], got 0'));
  t.throws(() => resolveTxWorkload({ workload: 'x' as never }), new TypeError("workload must be 'append' or 'bank', got x"));
  t.throws(() => resolveTxWorkload({ agent: 1 as never }), new TypeError('agent must be a boolean, got 1'));
  t.throws(() => resolveTxWorkload({ mutant: 'nope' }), /^mutant must be one of skip-prepare-flush, /);
  const r = run('--mutant', 'nope');
  t.equal(r.status, 1);
  t.match(r.stderr, /mutant must be one of/);
});
