// Adversarial schedules of the one explorer (src/testing/crash/pct.ts): PCT priorities and stalls
// are seeded and replayable, a stall holds its unit back for at most its bound and never blocks a
// run, options are checked; and the stall schedule found a real PRISM-RS client bug (a retry after
// a replica restart used the old incarnation's rkey) — its crash run is replayed here on the fixed
// client.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { applySchedule, explore, nicConfigFor, replayCommand, resolveExploreOptions, resolveSchedule, rsExplorerApp, scheduleArgs, scheduleChooser, scheduleName, World, type StepChoice } from '../../src/testing/crash/index.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/crash/pct.test.ts)`);
t.setTimeout(300_000);

const agents = (n: number, clients = n): StepChoice[] => Array.from({ length: n }, (_, i) => ({ node: 0, qpn: i + 1, client: i % clients, key: `0.0/${i + 1}` }));

/** Drives `steps` picks of a chooser over a fixed set of always-runnable agents; the keys picked. */
function trace(choose: (c: readonly StepChoice[]) => number, choices: StepChoice[], steps: number): string[] {
  return Array.from({ length: steps }, () => choices[choose(choices)]!.key);
}

t.test('options: defaults, checked values, the flags a replay names', async (t) => {
  const d = resolveSchedule();
  t.same(d, { mode: 'random', depth: 3, horizon: 20_000, stalls: 0, stallSteps: 200, stallUnit: 'client', stallOn: 'any' });
  t.equal(scheduleArgs(d), '', 'the plain random schedule needs no flag');
  t.equal(scheduleChooser(d, SEED), undefined, "the plain random schedule is the World's own chooser");
  t.throws(() => resolveSchedule({ mode: 'dfs' as never }), TypeError);
  t.throws(() => resolveSchedule({ depth: -1 }), RangeError);
  t.throws(() => resolveSchedule({ stallUnit: 'node' as never }), TypeError);
  t.throws(() => resolveExploreOptions({ schedule: { stalls: 1.5 } }), RangeError);
  const s = resolveSchedule({ mode: 'pct', depth: 2, stalls: 3, stallSteps: 9, stallUnit: 'qp', stallOn: 'atomic', horizon: 50 });
  t.equal(scheduleArgs(s), '--schedule pct --pct-depth 2 --schedule-horizon 50 --stalls 3 --stall-steps 9 --stall-unit qp --stall-on atomic');
  t.equal(scheduleName(s), 'pct(d=2)+stalls(3x<=9 qp atomic)');
  const app = rsExplorerApp({});
  t.match(replayCommand(app, resolveExploreOptions({ schedule: s })), / --schedule pct --pct-depth 2 .*--stall-on atomic/);
});

t.test('pct: the highest-priority runnable agent runs until a change point lowers it; seeded', async (t) => {
  const s = resolveSchedule({ mode: 'pct', depth: 2, horizon: 40 });
  const a = trace(scheduleChooser(s, SEED)!, agents(4), 60);
  const b = trace(scheduleChooser(s, SEED)!, agents(4), 60);
  t.same(a, b, 'same seed, same schedule');
  // Strict priorities: the agent picked changes only at the (at most 2) change points.
  const switches = a.filter((k, i) => i > 0 && k !== a[i - 1]).length;
  t.ok(switches >= 1 && switches <= 2, `${switches} switches of the running agent: ${a.join(' ')}`);
  const others = [SEED + 1, SEED + 2, SEED + 3].map((x) => trace(scheduleChooser(s, x)!, agents(4), 60).join(' '));
  t.ok(others.some((o) => o !== a.join(' ')), 'another seed, another schedule');
});

t.test('stalls: the held unit runs only when nothing else can, and only for its bound', async (t) => {
  const s = resolveSchedule({ stalls: 1, stallSteps: 30, horizon: 1, stallUnit: 'client' });
  // Two QPs of client 0 and two of client 1 always runnable; a stall at step 0 holds one client.
  const choices = agents(4, 2);
  const picks = trace(scheduleChooser(s, SEED)!, choices, 80).map((k) => choices.find((c) => c.key === k)!.client);
  const held = picks[0] === 0 ? 1 : 0;
  const firstHeld = picks.indexOf(held);
  t.ok(firstHeld > 0 && firstHeld <= 30, `client ${held} held for ${firstHeld} steps (bound 30)`);
  t.ok(picks.slice(firstHeld).includes(1 - held), 'then both run again');
  // Only the held client can run: it runs (a stall never blocks the run).
  const alone = agents(2, 1);
  const c = scheduleChooser(s, SEED)!;
  t.equal(c(alone) >= 0, true);
  t.same(trace(c, alone, 5).length, 5);
});

t.test('stalls on atomics: a QP is held from the step after its next CAS', async (t) => {
  const s = resolveSchedule({ stalls: 1, stallSteps: 1_000_000, horizon: 1, stallUnit: 'qp', stallOn: 'atomic' });
  const choices = agents(2);
  // Every agent's 3rd step is a CAS.
  const ops = new Map<string, number>();
  const c = scheduleChooser(s, SEED, (ch) => ((ops.get(ch.key) ?? 0) === 2 ? 'prismCas' : 'read'))!;
  const seq: string[] = [];
  for (let n = 0; n < 60; n++) {
    const k = choices[c(choices)]!.key;
    ops.set(k, (ops.get(k) ?? 0) + 1);
    seq.push(k);
  }
  // The stalled QP ran its CAS (its 3rd step) and not again; the other one ran on.
  const stalled = choices.filter((x) => seq.filter((k) => k === x.key).length === 3);
  t.equal(stalled.length, 1, `one QP held after its CAS: ${seq.join(' ')}`);
  t.ok(seq.lastIndexOf(stalled[0]!.key) < seq.length - 1, 'the other ran after it');
});

t.test('a World under pct + stalls runs the rs workload to its end, deterministically', async (t) => {
  const s = resolveSchedule({ mode: 'pct', depth: 3, horizon: 1500, stalls: 10, stallSteps: 100, stallOn: 'atomic' });
  const once = async (): Promise<{ steps: number; history: string }> => {
    const app = rsExplorerApp({ opsPerClient: 4 });
    const world = new World(nicConfigFor(SEED, { drain: 'onFlush' }), SEED);
    applySchedule(world, s);
    t.ok(world.chooser !== undefined);
    for (let n = 0; n < app.nodes; n++) {
      const { PmemRegion } = await import('../../pmem/index.js');
      const region = PmemRegion.createInMemory(app.regionBytes, { tracing: false });
      app.format(region, n);
      world.addNode(region, (host) => app.open(host, n)).server!.recover();
    }
    const { createPrng } = await import('../../pmem/index.js');
    let done = false;
    void app.workload(world, createPrng(SEED)).then(() => void (done = true));
    const r = await world.run(() => done, 500_000);
    t.equal(r.status, 'done');
    world.close();
    return { steps: r.steps, history: JSON.stringify(app.history().map((o) => [o.client, o.input, o.output, o.call, o.ret])) };
  };
  const a = await once();
  const b = await once();
  t.same(a, b, `same seed, same run (${a.steps} steps)`);
});

t.test('found by the stall schedule: an RS retry after a replica restart used the old rkey (fixed)', async (t) => {
  // Before the fix: "allocator: crash run p1112:n0@0/r18 ...: replica 0: 1 buffers leaked" — a count
  // retry READ addressed with the crashed incarnation's rkey failed and put the new QP in the error
  // state, stranding the buffers the client had to return.
  const r = await explore(rsExplorerApp({}), {
    seed: 1,
    pins: { drain: 'onFlush', ddio: true },
    schedule: { stalls: 40, stallSteps: 300, stallUnit: 'client', stallOn: 'atomic', horizon: 3000 },
    crashPlan: 'p1112:n0@0/r18',
    nested: false,
  });
  t.equal(r.crashRunsChecked, 1);
  t.same(r.violations.map((v) => `${v.kind}: ${v.detail.slice(0, 200)}`), [], 'no violation on the fixed client');
});

t.test('the CLI: --schedule pct --pct-depth --stalls on the register app (0 violations, named in the report); bad values refused', async (t) => {
  const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
  const run = (...args: string[]) => spawnSync(process.execPath, [CLI, 'crash-test', ...args], { encoding: 'utf8', timeout: 120_000 });
  const ok = run('--app', 'register', '--seed', String(SEED), '--schedule', 'pct', '--pct-depth', '2', '--stalls', '3', '--stall-steps', '20', '--schedule-horizon', '300', '--json');
  t.equal(ok.status, 0, ok.stderr);
  const d = JSON.parse(ok.stdout) as { schedule: string; violations: unknown[]; imagesChecked: number };
  t.equal(d.schedule, 'pct(d=2)+stalls(3x<=20 client)');
  t.same(d.violations, []);
  t.ok(d.imagesChecked > 0);
  const bad = run('--app', 'register', '--schedule', 'dfs');
  t.equal(bad.status, 1);
  t.match(bad.stderr, /--schedule must be mixed, random or pct/);
  const unit = run('--app', 'register', '--stalls', '2', '--stall-unit', 'node');
  t.equal(unit.status, 1);
  t.match(unit.stderr, /--stall-unit must be qp or client/);
});
