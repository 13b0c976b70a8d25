// PRISM-RS on the crash explorer (issue 12 item 5): image tuples (every replica crashes at once at
// a crash point — PM survives), each crashed once more during its recovery (nested); an
// all-replicas crash under the onFlush drain; crash runs (1..f replicas, all, clients mid-write,
// a second crash later), and the CLI (`--list-mutants`, a clean run, a mutant caught).
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { RS_MUTANTS } from '../../../src/apps/rs/index.js';
import { explore, rsExplorerApp } from '../../../src/testing/crash/index.js';

const seed = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${seed} (replay: PMRPC_SEED=${seed} npx tap test/apps/rs/crash.test.ts; a violation prints its pmrpc crash-test command)`);
t.setTimeout(600_000);

const show = (r: { violations: Array<{ kind: string; detail: string; replay: string }> }): string[] => r.violations.map((v) => `${v.kind}: ${v.detail.slice(0, 400)} (${v.replay})`);

t.test('image tuples with nested crashes during recovery: no violation', async (t) => {
  const r = await explore(rsExplorerApp({ opsPerClient: 4 }), { seed, imagesPerPoint: 2 });
  t.comment(`${r.configs[0]}: ${r.crashPoints} crash points (${r.deliveryPoints} deliveries), ${r.imagesChecked} images + ${r.nestedImagesChecked} nested`);
  t.same(show(r), []);
  t.ok(r.nestedImagesChecked > 0, 'crashed again during recovery');
  t.ok(r.deliveryPoints > 0, 'crash points at deliveries');
});

t.test('all replicas crash at once under the onFlush drain (DDIO on and off): acknowledged writes survive', async (t) => {
  for (const ddio of [true, false]) {
    const r = await explore(rsExplorerApp({ opsPerClient: 4 }), { seed: seed + 1, imagesPerPoint: 2, nested: false, pins: { drain: 'onFlush', ddio } });
    t.match(r.configs[0], /^onFlush\//);
    t.same(show(r), [], `${r.configs[0]}: ${r.imagesChecked} images`);
  }
});

t.test('5 replicas: image tuples, no violation', async (t) => {
  const r = await explore(rsExplorerApp({ replicas: 5, clients: 2, opsPerClient: 4 }), { seed: seed + 2, imagesPerPoint: 2, nested: false, pointsMax: 150 });
  t.same(show(r), [], `${r.configs[0]}: ${r.imagesChecked} images`);
});

t.test('crash runs: 1..f replicas, all replicas, clients mid-operation, nested later crashes; the whole history judged', async (t) => {
  for (const s of [seed, seed + 1, seed + 2]) {
    const r = await explore(rsExplorerApp({ opsPerClient: 6 }), { seed: s, pointsMax: 1, imagesPerPoint: 1, nested: false, crashRuns: 12 });
    t.equal(r.crashRunsChecked, 12);
    t.same(show(r), [], `seed ${s} (${r.configs[0]}): 12 crash runs`);
  }
  const r5 = await explore(rsExplorerApp({ replicas: 5, opsPerClient: 5 }), { seed, pointsMax: 1, imagesPerPoint: 1, nested: false, crashRuns: 8 });
  t.same(show(r5), [], '5 replicas: 8 crash runs');
});

const CLI = fileURLToPath(new URL('../../../dist/cli/main.js', import.meta.url));
const run = (...args: string[]) => spawnSync(process.execPath, [CLI, 'crash-test', '--app', 'rs', ...args], { encoding: 'utf8', timeout: 300_000, maxBuffer: 64 * 1024 * 1024 });

t.test('CLI: --list-mutants prints name<TAB>step; a mutant reports violations with their replay and exits 1', async (t) => {
  const l = run('--list-mutants');
  t.equal(l.status, 0, l.stderr);
  t.same(l.stdout.trim().split('\n'), RS_MUTANTS.map((m) => `${m.name}\t${m.step}`));
  t.ok(RS_MUTANTS.length >= 8, `${RS_MUTANTS.length} mutants`);
  // The cheapest mutant to catch (at crash point 0): the mutants themselves are mutants.test.ts's.
  const m = run('--seed', '1', '--requests', '6', '--images-per-point', '2', '--mutant', 'allowAllocateBeforeRebuild', '--json');
  t.equal(m.status, 1, m.stderr);
  const d = JSON.parse(m.stdout) as { app: string; mutant: string; violations: Array<{ replay: string }> };
  t.equal(d.app, 'rs');
  t.equal(d.mutant, 'allowAllocateBeforeRebuild');
  t.ok(d.violations.length > 0);
  t.match(d.violations[0]!.replay, /pmrpc crash-test --app rs .*--mutant allowAllocateBeforeRebuild --seed 1/);
  const bad = run('--mutant', 'nope');
  t.equal(bad.status, 1);
  t.match(bad.stderr, /--mutant must be one of dropItemFlush, .*, got nope \(unknown mutant nope of --app rs\)/);
});
