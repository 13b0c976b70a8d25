// Crash runs (src/testing/crash/multi.ts): subsets of nodes crash at a crash point while the rest
// of the cluster goes on, restart from one of their images in the same World, clients reconnect,
// the workload runs to its end, and the whole history is judged. Exercised on the test-only
// register app on 3 nodes (2 clients): f = 1 node, all nodes at once, a client crash, and a mutant.
import t from 'tap';
import { explore, formatPlan, nicConfigFor, parsePlan, planFor, registerExplorerApp, resolveExploreOptions, runCrashPlan } from '../../src/testing/crash/index.js';

const SEED = Number(process.env.PMRPC_SEED ?? 2);
t.comment(`seed ${SEED} (PMRPC_SEED=<n> to replay another)`);

t.test('plans: the syntax round-trips; a bad plan is refused', async (t) => {
  const plan = parsePlan('p40:n1@2/r12;p95:n0,n1,n2/r0;p120:c1');
  t.same(plan[0], { point: 40, nodes: [1], clients: [], image: 2, restartAfter: 12 });
  t.same(plan[2], { point: 120, nodes: [], clients: [1], image: 0, restartAfter: 0 });
  t.equal(formatPlan(parsePlan(formatPlan(plan))), formatPlan(plan));
  t.throws(() => parsePlan('p4:x1'), TypeError);
  t.throws(() => resolveExploreOptions({ crashPlan: 'nonsense' }), TypeError);
  const kinds = [0, 1, 2, 3].map((i) => planFor(SEED, i, 100, 3, 2)[0]!);
  t.equal(kinds[0]!.nodes.length, 1, 'f = 1');
  t.same(kinds[1]!.nodes, [0, 1, 2], 'every node at once');
  t.equal(kinds[2]!.clients.length, 1, 'a node and a client');
});

t.test('one node crashes and restarts while the others go on: clients reconnect, history linearizable', async (t) => {
  const app = registerExplorerApp({ clients: 2, opsPerClient: 6 });
  const o = resolveExploreOptions({ seed: SEED });
  const plan = parsePlan('p30:n1@1/r20');
  const r = await runCrashPlan(app, o, nicConfigFor(SEED), plan);
  t.comment(`seed ${SEED} plan ${formatPlan(plan)}: ${r.events.join('; ')}`);
  t.same(r.problems, [], 'no violation');
  t.match(r.events.join('\n'), /node 1 crashed[\s\S]*node 1 restarted/, 'the node crashed, then restarted');
  const h = app.history();
  t.equal(h.length, 12, 'the workload ran to its end');
  t.ok(h.filter((x) => x.ret !== undefined).length >= 10, 'most operations completed with a node down and after its restart');
});

t.test('every node at once, then one again; a client crash: no violation', async (t) => {
  for (const text of ['p40:n0,n1,n2@0/r30;p90:n2@2/r5', 'p35:n0,c1@3/r10']) {
    const app = registerExplorerApp({ clients: 2, opsPerClient: 6 });
    const o = resolveExploreOptions({ seed: SEED });
    const r = await runCrashPlan(app, o, nicConfigFor(SEED), parsePlan(text));
    t.comment(`seed ${SEED} plan ${text}: ${r.events.join('; ')}`);
    t.same(r.problems, [], `plan ${text}: no violation`);
    t.ok(r.events.some((e) => e.includes('crashed')), 'something crashed');
    if (text.includes('c1')) {
      const ops = app.history().filter((x) => x.client === 1);
      t.ok(ops.length < 6, 'the crashed client never resumed');
    }
  }
});

t.test('explore with crash runs: seeded plans, the correct protocol passes', async (t) => {
  for (const seed of [SEED, SEED + 1, SEED + 2]) {
    const r = await explore(registerExplorerApp({ clients: 2, opsPerClient: 5 }), { seed, nested: false, pointsMax: 20, crashRuns: 8 });
    t.comment(`seed ${seed}: ${r.configs[0]}, ${r.crashRunsChecked} crash runs, ${r.imagesChecked} images`);
    t.equal(r.crashRunsChecked, 8);
    t.same(r.violations.map((v) => `${v.kind}: ${v.detail}`), [], `seed ${seed}`);
  }
});

t.test('mutant skip-install-flush (acknowledged before durable): a crash run catches it; its plan replays it', async (t) => {
  const app = (): ReturnType<typeof registerExplorerApp> => registerExplorerApp({ clients: 2, opsPerClient: 6, mutant: 'skip-install-flush' });
  // Seed 18 (eager drain, DDIO on): an every-node crash run loses an acknowledged write (the next
  // operation's phase-1 FLUSH of the block persists the cell word, so the window is that short).
  const r = await explore(app(), { seed: 18, nested: false, pointsMax: 1, crashRuns: 16 });
  const v = r.violations.find((x) => x.phase === 'crash-run' && x.kind === 'lost');
  t.ok(v !== undefined, `a crash run reports a lost write (${r.violations.length} violations)`);
  if (v === undefined) return;
  t.comment(`seed 18: ${v.detail}\n  reproduce: ${v.replay}`);
  t.match(v.replay, /--crash-plan '/);
  const again = await explore(app(), { seed: 18, nested: false, crashPlan: v.plan });
  t.equal(again.crashRunsChecked, 1);
  t.equal(again.imagesChecked, 0, 'a plan replay skips the image tuples');
  t.ok(again.violations.some((x) => x.kind === 'lost' && x.detail === v.detail), 'the plan reproduces the same violation');
});
