// The mutant sweep (src/testing/crash/mutants.ts, `crash-test --mutants`): the plain sweep of each
// mutant — nothing pinned for it — stops at its first violation and names the command that
// reproduces it; rpc mutants run once per strategy they list; an equivalent mutant is reported, not run.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { allCaught, mixedSchedule, appOf, mutantTargets, plainSpec, resolveExploreOptions, runMutants, withAppDefaults, MUTANTS, RECOVERY_MUTANTS, type ExplorerApp } from '../../src/testing/crash/index.js';

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
t.setTimeout(240_000);

t.test('targets: rpc once per listed strategy, equivalent mutants marked, unknown names refused', async (t) => {
  const rpc = mutantTargets('rpc', 'all');
  t.equal(rpc.length, MUTANTS.reduce((a, m) => a + Math.max(1, m.strategies.length), 0));
  t.same(rpc.filter((x) => x.name === 'skip-flush').map((x) => x.strategy), ['wflush', 'sflush']);
  const eq = rpc.find((x) => x.name === 'skip-flag-persist')!;
  t.ok(eq.equivalent !== undefined && eq.strategy === null, 'skip-flag-persist is equivalent in the rpc app');
  t.same(mutantTargets('recovery', 'all').map((x) => x.name), RECOVERY_MUTANTS.map((m) => m.name), "recovery: every fault switch of recovery/faults.ts and ack-before-persist");
  t.same(mutantTargets('rs', 'dropItemFlush,minority-write').map((x) => x.name), ['drop-item-flush', 'minority-write'], 'rs: an old (camelCase) name resolves to its kebab-case name');
  t.throws(() => mutantTargets('rs', 'noSuchMutant'), /unknown mutant 'noSuchMutant'/);
  t.throws(() => mutantTargets('pilaf', 'all'), TypeError);
});

t.test('a plain spec pins nothing for its mutant', async (t) => {
  const rs = plainSpec({ app: 'rs', name: 'count-failed-cas', strategy: null });
  const app = appOf(rs);
  t.ok(app.exploreDefaults !== undefined, 'the mutant has its own pins and schedule');
  const o = withAppDefaults(app, resolveExploreOptions(rs.explore));
  t.same(o.pins, {}, 'no NIC pin');
  t.same(o.schedule, mixedSchedule(o.seed), "the sweep's mixed schedule, not the mutant's");
  t.equal(o.crashPlan, undefined, 'no crash plan');
  const tx = plainSpec({ app: 'tx', name: 'skip-validation', strategy: null });
  t.same(tx.explore.pins, {}, 'tx: no DDIO pin');
  t.match(tx.workload, { keys: 4, clients: 3, mutant: 'skip-validation' }, "tx: the default workload, not the mutant's");
  t.match((appOf(tx) as ExplorerApp<unknown>).replayArgs(), /--clients 3 --keys 4 --mutant skip-validation/, 'the replay names the workload the mutant does not pin');
});

t.test('runMutants stops each mutant at its first violation; the CLI reports it and its replay reproduces it', async (t) => {
  const r = await runMutants('register', 'skip-install-flush', [1, 2, 3, 4]);
  const m = r.mutants[0]!;
  t.comment(`register skip-install-flush: ${JSON.stringify(m)}`);
  t.ok(m.caught, 'caught');
  t.equal(m.seedsRun, m.seed, 'no seed after the catching one ran');
  t.ok(allCaught(r));
  t.match(m.replay, /^pmrpc crash-test --app register --mutant skip-install-flush --seed \d+ .*--plain/);

  const cli = spawnSync(process.execPath, [CLI, 'crash-test', '--app', 'register', '--mutants', 'skip-install-flush', '--seeds', `1..${m.seed}`, '--json'], { encoding: 'utf8', timeout: 200_000 });
  t.equal(cli.status, 0, cli.stderr);
  const doc = JSON.parse(cli.stdout) as { app: string; mutants: Array<Record<string, unknown>> };
  t.equal(doc.app, 'register');
  t.match(doc.mutants, [{ name: 'skip-install-flush', strategy: null, caught: true, seed: m.seed, images: m.images, replay: m.replay, equivalent: false }]);

  const replay = spawnSync(process.execPath, [CLI, ...m.replay!.replace(/^pmrpc /, '').split(' ')], { encoding: 'utf8', timeout: 200_000 });
  t.equal(replay.status, 1, 'the replay command finds the violation again');
});

t.test('recovery: a fault switch is a mutant the plain sweep catches; its replay names it; even seeds draw churn', async (t) => {
  // One by its old (camelCase) name, one by its name: both run, and report, under the kebab-case name.
  const r = await runMutants('recovery', 'ackBeforePersist,skip-checksum-at-recovery', [1, 2, 3]);
  t.same(r.mutants.map((m) => m.name), ['ack-before-persist', 'skip-checksum-at-recovery']);
  for (const m of r.mutants) {
    t.ok(m.caught, `${m.name}: caught at seed ${String(m.seed)} — ${String(m.replay)}`);
    t.match(m.replay, new RegExp(`^pmrpc crash-test --app recovery .*--mutant ${m.name} --seed \\d+ .*--plain`));
  }
  const list = spawnSync(process.execPath, [CLI, 'crash-test', '--app', 'recovery', '--list-mutants'], { encoding: 'utf8', timeout: 240_000 });
  t.same(list.stdout.trim().split('\n').map((l) => l.split('\t')[0]), RECOVERY_MUTANTS.map((m) => m.name), '--list-mutants lists them');
  const bad = spawnSync(process.execPath, [CLI, 'crash-test', '--app', 'recovery', '--mutant', 'nope'], { encoding: 'utf8', timeout: 240_000 });
  t.equal(bad.status, 1, 'a bad option: exit 1 (crash-test --help)');
  t.match(bad.stderr, /PMRPC_ERR_BAD_OPTION.*--mutant must be one of skip-persist-record-before-apply/);
  const even = appOf(plainSpec({ app: 'recovery', name: 'ack-before-persist', strategy: null }, 2));
  t.match((even as ExplorerApp<unknown>).replayArgs(), /--clients 4 --requests 4 --churn 6 --batch 2 --mutant ack-before-persist/, 'even seeds: the churn shape');
});

t.test('the exit status: every mutant caught or equivalent', async (t) => {
  const m = { name: 'x', strategy: null, caught: false, seed: null, images: 10, replay: null, equivalent: false, seedsRun: 2 };
  t.notOk(allCaught({ app: 'kv', seeds: [1, 2], mutants: [m] }), 'a mutant not caught fails the sweep');
  t.ok(allCaught({ app: 'kv', seeds: [1, 2], mutants: [{ ...m, equivalent: true }] }), 'an equivalent one does not');
  t.ok(allCaught({ app: 'kv', seeds: [1, 2], mutants: [{ ...m, caught: true, seed: 2 }] }));
});
