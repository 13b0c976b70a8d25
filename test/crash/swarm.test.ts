// Swarm simulation (`pmrpc swarm`, src/testing/crash/swarm.ts): a small range passes, a mutant build
// fails with a replay command that reproduces the same violation, the JSON shape, determinism, the
// BUGGIFY registry, the crash-during-recovery plan suffix, and bad options.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readHistory } from '../../bench/index.js';
import { buggify, FAULT_SITE_NAMES, setBuggifyHook, type FaultSite } from '../../pmem/index.js';
import { explore, formatPlan, kvExplorerApp, parsePlan, paramsFor, resolveSwarmOptions, swarm, swarmReplay, swarmRun, SWARM_APPS, SWARM_DEFAULT_SECONDS, nsOfSeconds } from '../../src/testing/crash/index.js';

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
t.setTimeout(900_000); // a bound for a hung run, not a speed assertion
const run = (...args: string[]) => spawnSync(process.execPath, [CLI, 'swarm', '--no-history', ...args], { encoding: 'utf8', timeout: 400_000 });
/** A mutant the swarm catches at most seeds (a conditional CAS made unconditional: the index tears). */
const MUTANT = 'kv:unconditionalCas';

t.test('a small swarm range over every app passes', async (t) => {
  const r = await swarm([1, 2, 3], {});
  t.same(r.apps, [...SWARM_APPS]);
  t.same(r.seeds, [1, 2, 3]);
  t.same(r.failures, [], r.failures.map((f) => `${f.replay}: ${f.violation}`).join('\n'));
  t.equal(r.results.length, 3);
  for (const s of r.results) t.equal(s.apps.length, SWARM_APPS.length);
  t.ok(r.steps > 1000 && r.crashPoints > 0, `${r.steps} steps, ${r.crashPoints} crash points`);
  // The seeds do inject faults: crashes and restarts happened.
  t.ok(r.events > 0, `${r.events} crash/restart events`);
});

t.test('CLI --json: {seeds, failures: [{seed, replay, violation}]}, exit 0 when every seed passes; the run enters the SQLite history', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-swarm-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const r = spawnSync(process.execPath, [CLI, 'swarm', '--seeds', '4..5', '--app', 'kv,rs', '--json', '--out', dir], { encoding: 'utf8', timeout: 400_000 });
  t.equal(r.status, 0, r.stderr);
  const doc = JSON.parse(r.stdout) as { seeds: number[]; failures: unknown[]; apps: string[]; seconds: number; steps: number; virtualSeconds: number };
  t.same(doc.seeds, [4, 5]);
  t.same(doc.failures, []);
  t.same(doc.apps, ['kv', 'rs']);
  t.type(doc.seconds, 'number');
  t.ok(doc.steps > 0);
  t.ok(doc.virtualSeconds > 0, 'modelled seconds are reported (virtualSeconds)');
  const runs = readHistory(join(dir, 'history.sqlite'), { suite: 'swarm' });
  t.equal(runs.length, 1);
  t.equal(runs[0]!.cells, 4, 'one row per (seed, app)');
  t.equal(runs[0]!.ratios.failures, 0);
  t.equal(runs[0]!.ratios.seeds, 2);
});

t.test('a mutant build fails with a seed whose printed replay command reproduces the same violation', async (t) => {
  // Every app runs (the done-when command with a broken build); the kv mutant shows in kv's runs.
  const r = run('--seeds', '1..3', '--mutant', MUTANT, '--json');
  t.equal(r.status, 1, r.stderr);
  const doc = JSON.parse(r.stdout) as { failures: Array<{ seed: number; app: string; replay: string; violation: string }> };
  t.ok(doc.failures.length > 0, 'the broken build is caught');
  const f = doc.failures[0]!;
  t.match(f.replay, new RegExp(`^pmrpc swarm --seeds ${f.seed}\\.\\.${f.seed} --app kv .*--mutant ${MUTANT}$`));
  // The one-line command, as printed, replays it: the same violations, printed with the same command.
  const args = f.replay.split(' ').slice(2);
  const again = run(...args);
  t.equal(again.status, 1, again.stderr);
  for (const x of doc.failures.filter((y) => y.seed === f.seed)) t.match(again.stdout, `FAILED seed ${f.seed} (kv): ${x.violation}\n  replay: ${f.replay}`);
  t.equal((again.stdout.match(/^FAILED /gm) ?? []).length, doc.failures.filter((y) => y.seed === f.seed).length);
});

t.test('determinism: same seed, same outcome (plan, faults, steps, crash points, verdict)', async (t) => {
  for (const app of SWARM_APPS) {
    const a = await swarmRun(7, app);
    const b = await swarmRun(7, app);
    t.same(a, b, app);
  }
  const m1 = await swarmRun(2, 'kv', { mutant: MUTANT });
  const m2 = await swarmRun(2, 'kv', { mutant: MUTANT });
  t.same(m1, m2);
  // Different seeds draw different fault schedules.
  const o = resolveSwarmOptions({});
  t.not(JSON.stringify(paramsFor(1, 'kv', o)), JSON.stringify(paramsFor(2, 'kv', o)));
  // --no-crashes: no node or client crash, and the replay command says so.
  const nc = resolveSwarmOptions({ crashes: false });
  t.match(paramsFor(1, 'rs', nc), { nodeCrashRate: 0, clientCrashRate: 0 });
  t.equal(swarmReplay(1, 'rs', nc), 'pmrpc swarm --seeds 1..1 --app rs --no-crashes');
  t.equal((await swarmRun(1, 'rs', nc)).plan, '');
});

t.test('the pool (--jobs 2, the sweep\'s piscina workers) gives the in-process result', async (t) => {
  const a = await swarm([8, 9], { apps: ['kv'] });
  const r = run('--seeds', '8..9', '--app', 'kv', '--jobs', '2', '--json');
  t.equal(r.status, 0, r.stderr);
  const doc = JSON.parse(r.stdout) as { steps: number; crashPoints: number; events: number; failures: unknown[] };
  t.same({ steps: doc.steps, crashPoints: doc.crashPoints, events: doc.events, failures: doc.failures }, { steps: a.steps, crashPoints: a.crashPoints, events: a.events, failures: [] });
});

t.test('BUGGIFY fault sites: off by default; a hook decides; the swarm switches them per seed', async (t) => {
  for (const s of FAULT_SITE_NAMES) t.equal(buggify(s), false, `${s} is off without a hook`);
  const asked: FaultSite[] = [];
  const prev = setBuggifyHook((s) => {
    asked.push(s);
    return true;
  });
  t.equal(buggify('nic.drain-early'), true);
  setBuggifyHook(prev);
  t.same(asked, ['nic.drain-early']);
  t.equal(buggify('nic.drain-early'), false);
  const o = resolveSwarmOptions({});
  const siteSets = new Set(Array.from({ length: 20 }, (_, s) => paramsFor(s + 1, 'kv', o).sites.join(',')));
  t.ok(siteSets.size > 1, `different seeds switch different sites on (${[...siteSets].join(' | ')})`);
  // Library code consults the sites (a counting hook, never firing, over a short crash-test run).
  const counts = new Map<string, number>();
  const counter = (s: FaultSite): boolean => {
    counts.set(s, (counts.get(s) ?? 0) + 1);
    return false;
  };
  const prev2 = setBuggifyHook(counter);
  try {
    await explore(kvExplorerApp({ opsPerClient: 3 }), { seed: 1, pointsMax: 1, imagesPerPoint: 1, nested: false });
    // swarmRun installs its own hook per run and puts the one before it back.
    await swarmRun(3, 'kv', { overrides: { sites: [...FAULT_SITE_NAMES], siteFireRate: 0.5 } });
    t.equal(setBuggifyHook(counter), counter, 'the counting hook is back after swarmRun');
  } finally {
    setBuggifyHook(prev2);
  }
  t.ok((counts.get('nic.drain-early') ?? 0) > 0 && (counts.get('pmem.evict-store') ?? 0) > 0, `sites consulted: ${JSON.stringify([...counts])}`);
});

t.test("crash plans: the 'x' suffix (a crash during the restart's recovery) and 'd' targets (dropped connections) round-trip", async (t) => {
  const plan = parsePlan('p40:n1@2/r12x;p95:c1;p120:n0,n2@0/r0;p130:d7');
  t.equal(plan[0]!.recoveryCrash, true);
  t.equal(plan[2]!.recoveryCrash, undefined);
  t.same(plan[3]!.drops, [7], "'d': a dropped connection");
  t.equal(formatPlan(plan), 'p40:n1@2/r12x;p95:c1;p120:n0,n2@0/r0;p130:d7');
  // tx draws dropped connections (both ends live; its clients reconnect): seed 1's plan has some, and the run passes.
  const tx = await swarmRun(1, 'tx');
  t.match(tx.plan, /:d\d+/);
  t.same(tx.failures, []);
});

t.test('virtual time: --seconds bounds the fault phase on the modelled clock', async (t) => {
  t.equal(nsOfSeconds(0.01), 10_000_000);
  // Seed 1 of kv: its workload outlasts the fault phase, so the virtual clock ends the phase.
  const short = await swarmRun(1, 'kv', { seconds: 0.002 });
  t.same(short.failures, []);
  t.ok(short.faultUs >= 2000 && short.virtualUs >= short.faultUs, `fault phase ${short.faultUs} virtual µs of 2000, run ${short.virtualUs}`);
  // The default: the fault phase ends on the clock (>= --seconds) or with the workload (< --seconds); modelled time moves.
  const r = await swarm([1, 2, 3], { apps: ['kv'] });
  t.ok(r.virtualUs > 0);
  for (const x of r.results.flatMap((s) => s.apps)) t.ok(x.faultUs > 0 && x.faultUs <= x.virtualUs, `seed ${x.seed}: fault phase ${x.faultUs} µs, run ${x.virtualUs} µs (default ${SWARM_DEFAULT_SECONDS * 1e6})`);
});

t.test('bad options are refused with an exact message', async (t) => {
  t.throws(() => resolveSwarmOptions({ seconds: 0 }), { name: 'RangeError', message: 'seconds must be a number in (0, 10], got 0' });
  t.throws(() => resolveSwarmOptions({ mutant: 'kv' }), { name: 'TypeError', message: 'mutant must be APP:NAME with APP one of rpc, kv, rs, tx, got kv' });
  t.throws(() => resolveSwarmOptions({ apps: ['rs'], mutant: 'kv:unconditionalCas' }), { name: 'TypeError', message: 'mutant kv:unconditionalCas: app kv is not among the apps run (rs)' });
  t.throws(() => resolveSwarmOptions({ mutant: 'kv:noSuchMutant' }), /mutant must be one of/);
});

// The swarm's finding (rpc, seeds 214, 386, 427, 896 of 1..1000, with or without drops): a node
// crashed after a registration was durable but before its welcome reached the client, which
// registered again; the final check then tried to resume the orphan slot with no secret
// (PMRPC_ERR_CLIENT_AUTH). No client knows such a slot: the check skips it (nothing of it may be applied).
// Since restart delays are virtual time, seeds 214 and 386 of 1..400 still fail without the skip.
t.test('rpc: a registration whose welcome a crash lost is not resumed by the final check (seed 214)', async (t) => {
  const seed = 214;
  t.comment(`seed ${seed} (replay: pmrpc swarm --seeds ${seed}..${seed} --app rpc)`);
  const r = await swarmRun(seed, 'rpc', { overrides: { dropRate: 0 } });
  t.match(r.plan, /^p\d+:n0,n1@/, `every node crashes early: ${r.plan}`);
  t.same(r.failures.map((f) => f.violation), [], 'no violation');
});
