// `pmrpc crash-test --app kv` through the compiled CLI: the listing format, a clean run, a mutant caught.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { KV_MUTANTS } from '../../../src/apps/kv/index.js';
import { PILAF_MUTANTS } from '../../../src/apps/pilaf/index.js';

const CLI = fileURLToPath(new URL('../../../dist/cli/main.js', import.meta.url));
const run = (...args: string[]) => spawnSync(process.execPath, [CLI, 'crash-test', '--app', 'kv', ...args], { encoding: 'utf8', timeout: 120_000, maxBuffer: 64 * 1024 * 1024 });

t.test('--list-mutants prints name<TAB>strategies for every KV mutant, then name<TAB>pilaf for the Pilaf baseline\'s (run with --system pilaf)', async (t) => {
  const r = run('--list-mutants');
  t.equal(r.status, 0);
  const lines = r.stdout.trim().split('\n');
  t.same(lines, [...KV_MUTANTS.map((m) => `${m.name}\t${m.strategies.join(',')}`), ...PILAF_MUTANTS.map((m) => `${m.name}\tpilaf`)]);
});

// The CLI's plumbing, on part of seed 1: the whole of seed 1 (every point, nested crashes) is
// crash.test.ts's run, not repeated here.
t.test('--seed 1 --json: one JSON document, >= 300 images, no violation, exit 0', async (t) => {
  const r = run('--seed', '1', '--json', '--no-nested', '--points-max', '200');
  t.equal(r.status, 0, r.stderr);
  const d = JSON.parse(r.stdout) as { app: string; seed: number; crashPoints: number; imagesChecked: number; imagesPerSecond: number; violations: unknown[] };
  t.equal(d.app, 'kv');
  t.equal(d.seed, 1);
  t.ok(d.imagesChecked >= 300, `${d.imagesChecked} images`);
  t.ok(d.crashPoints > 0);
  t.same(d.violations, []);
});

t.test('a mutant shows violations, each with the command that reproduces it, and exits 1', async (t) => {
  // By its former name (an alias): the run and its replay name it by its name.
  const r = run('--seed', '1', '--ddio', 'on', '--mutant', 'dropIndexFlush', '--json');
  t.equal(r.status, 1);
  const d = JSON.parse(r.stdout) as { violations: Array<{ replay: string }> };
  t.ok(d.violations.length > 0 && d.violations.length <= 20, `${d.violations.length} violations (the run stops at 20)`);
  t.match(d.violations[0]!.replay, /^pmrpc crash-test --app kv .*--mutant drop-index-flush /);
});

t.test('bad options are refused with a message', async (t) => {
  const r = run('--mutant', 'nope');
  t.equal(r.status, 1);
  t.match(r.stderr, /--mutant must be one of drop-heap-flush, /);
});
