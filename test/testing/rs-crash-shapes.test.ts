// PRISM-RS's crash shapes (issue 28 items 2, 3; multi.ts planFor with ExplorerApp.crashShapes): the
// rs plain sweep's crash runs of kind 0 crash a majority of the replicas (two of three) again and
// again while writes are in flight, runs of kind 3 drop connections all through the run (the
// swarm's draw at geometric gaps, atGeometricGaps); the other apps' plans stay what they were. And
// the rs judge watches that a tag names one value (a writer that reuses the tag of its own
// indeterminate write is seen as soon as its second install lands: 'diverged: one tag, two values').
import t from 'tap';
import { createPrng } from '../../pmem/index.js';
import { atGeometricGaps, DROP_STORM, MAJORITY_STORM, nicConfigFor, parsePlan, planFor, resolveExploreOptions, rsExplorerApp, runCrashPlan } from '../../src/testing/crash/index.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (PMRPC_SEED=<n> to replay another)`);
t.setTimeout(120_000);

t.test('atGeometricGaps: increasing points, at most max, one event per draw, seeded', async (t) => {
  const draw = (seed: number): number[] => {
    const out: number[] = [];
    atGeometricGaps(createPrng(seed), 0.05, 12, (at) => out.push(at));
    return out;
  };
  const a = draw(SEED);
  t.equal(a.length, 12);
  t.ok(a.every((x, k) => x >= 1 && (k === 0 || x > a[k - 1]!)), `increasing: ${a.join(' ')}`);
  t.same(draw(SEED), a, 'the same seed draws the same points');
});

t.test('planFor with crash shapes: kind 0 storms majorities, kind 3 storms drops; other kinds and apps unchanged', async (t) => {
  const shapes = { majorities: true, dropStorms: true };
  for (let i = 0; i < 12; i++) {
    const plain = planFor(SEED, i, 1200, 3, 3, true);
    const shaped = planFor(SEED, i, 1200, 3, 3, true, shapes);
    if (i % 4 === 0) {
      t.ok(shaped.length >= 2 && shaped.length <= MAJORITY_STORM, `run ${i}: ${shaped.length} majority crashes`);
      t.ok(shaped.every((e) => e.nodes.length === 2 && new Set(e.nodes).size === 2 && e.drops === undefined && e.clients.length === 0 && e.restartAfter <= 10), `run ${i}: two of three replicas each time, restarted within 10 steps`);
    } else if (i % 4 === 3) {
      t.ok(shaped.length >= 8 && shaped.length <= DROP_STORM, `run ${i}: ${shaped.length} drops`);
      t.ok(shaped.every((e) => e.nodes.length === 0 && e.clients.length === 0 && e.drops?.length === 1), `run ${i}: drops only, the replicas stay up`);
    } else t.same(shaped, plain, `run ${i}: the plan without shapes`);
    t.same(shaped.map((e) => e.point), [...new Set(shaped.map((e) => e.point))].sort((a, b) => a - b), `run ${i}: one event per point, in point order`);
  }
  // One node (kv): no majority to crash; without drops no drop storm.
  t.same(planFor(SEED, 0, 1200, 1, 3, true, shapes), planFor(SEED, 0, 1200, 1, 3, true), 'one node: kind 0 as it was');
  t.same(planFor(SEED, 3, 1200, 3, 3, false, shapes), planFor(SEED, 3, 1200, 3, 3, false), 'no drops: kind 3 as it was');
  t.same(rsExplorerApp({}).crashShapes, shapes, 'the rs app draws both shapes');
});

// Seed 1, replicas 1 and 2 down together at crash point 12 (restarted at once): the first writes
// land on replica 0 only and end indeterminate; a writer's next write queries {1, 2}.
const PLAN = 'p12:n1,n2@0/r0';

t.test('one tag, one value: mutant reuse-own-tag is seen as a tag naming two values; the correct build passes the same run', async (t) => {
  const o = resolveExploreOptions({ seed: 1 });
  const bad = await runCrashPlan(rsExplorerApp({ mutant: 'reuse-own-tag' }), o, nicConfigFor(1), parsePlan(PLAN));
  const seen = bad.problems.find((p) => p.kind === 'diverged' && /one tag, two values/.test(p.detail));
  t.ok(seen !== undefined, `mutant reuse-own-tag caught: ${seen?.detail ?? bad.problems.map((p) => `${p.kind}: ${p.detail.slice(0, 200)}`).join(' | ')}`);
  const ok = await runCrashPlan(rsExplorerApp({}), o, nicConfigFor(1), parsePlan(PLAN));
  t.same(ok.problems, [], `correct build, plan ${PLAN}: ${ok.events.join('; ')}`);
});
