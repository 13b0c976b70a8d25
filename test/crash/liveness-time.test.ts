// The swarm's liveness bound is modelled (virtual) time, not scheduler steps (multi.ts, CrashRunHooks):
// once faults are off, a workload that needs more virtual time than the bound fails with a
// 'liveness' problem naming the modelled time it waited — however few steps it takes — and one
// that needs less passes; the step bound is only a safety net, reported as a different kind
// ('steps'). Restart delays are virtual ns too (plan suffix '/r<N>ns', World.afterNs).
import t from 'tap';
import { formatPlan, nicConfigFor, parsePlan, registerExplorerApp, resolveExploreOptions, runCrashPlan, swarmRun, World, LIVENESS_VIRTUAL_US, type CrashRunHooks } from '../../src/testing/crash/index.js';
import { costProfile } from '../../src/testing/model/index.js';

const SEED = Number(process.env.PMRPC_SEED ?? 2);
t.comment(`seed ${SEED} (PMRPC_SEED=<n> to replay another)`);
const MODEL = costProfile('cx4-optane');
/** The liveness bound of these runs: 500 virtual µs. */
const BOUND_US = 500;

/** The register app whose workload, once done, waits `tailUs` virtual µs on the World's clock (one timer: a handful of steps). */
function tailed(tailUs: number, opsPerClient = 4): ReturnType<typeof registerExplorerApp> {
  const inner = registerExplorerApp({ opsPerClient });
  return {
    ...inner,
    async workload(world, prng) {
      await inner.workload(world, prng);
      await new Promise<void>((resolve) => void world.clock.setTimer(tailUs / 1000, resolve));
    },
  };
}

const hooks = (over: Partial<CrashRunHooks> = {}): CrashRunHooks => ({ model: MODEL, faultStepsMax: 1_000_000, faultNsMax: 1_000, livenessNsMax: BOUND_US * 1000, livenessStepsMax: 1_000_000, ...over });

t.test('a workload that needs more virtual time than the bound fails (liveness, modelled time named), one that needs less passes', async (t) => {
  const o = resolveExploreOptions({ seed: SEED });
  const pass = await runCrashPlan(tailed(BOUND_US / 2), o, nicConfigFor(SEED), [], hooks());
  t.same(pass.problems, [], 'half the bound: passes');
  t.ok(pass.livenessNs! >= (BOUND_US / 2) * 1000 && pass.livenessNs! <= BOUND_US * 1000, `the liveness phase took ${pass.livenessNs} virtual ns`);
  const late = await runCrashPlan(tailed(BOUND_US * 2), o, nicConfigFor(SEED), [], hooks());
  t.same(late.problems.map((p) => p.kind), ['liveness'], JSON.stringify(late.problems));
  t.match(late.problems[0]!.detail, `within the liveness bound of ${BOUND_US.toFixed(3)} virtual µs of modelled time`);
  t.match(late.problems[0]!.detail, /(still running|it finished only) \d+\.\d{3} virtual µs \(modelled time, not measured\) after faults went off/);
  // Not a step count: the late run took no more steps than the passing one (the tail is one timer).
  const steps = Number(/, (\d+) steps$/.exec(late.problems[0]!.detail)?.[1]);
  t.ok(steps < 1000, `the failing liveness phase took only ${steps} steps`);
  // The same late workload with a bound above its need passes.
  const roomy = await runCrashPlan(tailed(BOUND_US * 2), o, nicConfigFor(SEED), [], hooks({ livenessNsMax: BOUND_US * 4 * 1000 }));
  t.same(roomy.problems, []);
});

t.test('the step bound is a safety net only: hitting it is a steps problem, not a liveness one', async (t) => {
  const o = resolveExploreOptions({ seed: SEED });
  // A liveness phase allowed 3 steps (far fewer than the workload needs) within a roomy virtual bound.
  const r = await runCrashPlan(tailed(0, 8), o, nicConfigFor(SEED), [], hooks({ livenessStepsMax: 3 }));
  t.same(r.problems.map((p) => p.kind), ['steps'], JSON.stringify(r.problems));
  t.match(r.problems[0]!.detail, /safety bound of 3 scheduler steps after only \d+\.\d{3} of its 500\.000 virtual µs \(modelled time\)/);
});

t.test('restart delays in virtual ns: the node is down for that modelled time, whatever the step count', async (t) => {
  const plan = parsePlan('p30:n1@1/r250000ns');
  t.same(plan[0], { point: 30, nodes: [1], clients: [], image: 1, restartAfter: 0, restartAfterNs: 250_000 });
  t.equal(formatPlan(plan), 'p30:n1@1/r250000ns');
  const o = resolveExploreOptions({ seed: SEED });
  // A virtual-time delay needs modelled time.
  await t.rejects(runCrashPlan(registerExplorerApp({ opsPerClient: 4 }), o, nicConfigFor(SEED), plan), { name: 'RangeError', message: /needs modelled time/ });
  // The workload outlives the delay (its clients then wait 1 virtual ms), so the restart is the delay's, not the end's.
  const r = await runCrashPlan(tailed(1000), o, nicConfigFor(SEED), plan, hooks({ faultNsMax: 10_000_000 }));
  t.same(r.problems, []);
  const crashed = r.events.find((e) => e.includes('node 1 crashed'));
  const restarted = r.events.find((e) => e.includes('node 1 restarted'));
  t.ok(crashed !== undefined && restarted !== undefined, r.events.join('; '));
  const us = (e: string | undefined): number => Number(/at (\d+\.\d{3}) virtual µs/.exec(e ?? '')?.[1]);
  t.equal(Math.round((us(restarted) - us(crashed)) * 1000), 250_000, `down from ${us(crashed)} to ${us(restarted)} virtual µs: 250 µs of modelled time`);
  // World.afterNs: an event on the virtual clock runs when the clock reaches it.
  const w = new World(nicConfigFor(SEED), SEED, { model: MODEL });
  const at: number[] = [];
  w.afterNs(7_000, () => at.push(w.time!.nowNs));
  t.equal(w.pendingEvents, 1);
  const run = await w.run(() => at.length > 0, 10);
  t.same([run.status, at], ['done', [7_000]]);
  t.throws(() => new World(nicConfigFor(SEED), SEED).afterNs(1, () => {}), /needs modelled time/);
});

t.test('the swarm: restart delays are drawn in virtual time; a run reports the virtual µs of its liveness phase', async (t) => {
  const r = await swarmRun(1, 'kv');
  t.same(r.failures, []);
  t.ok(r.livenessUs >= 0 && r.livenessUs <= LIVENESS_VIRTUAL_US, `liveness phase ${r.livenessUs} virtual µs of ${LIVENESS_VIRTUAL_US}`);
  t.match(r.plan, /^p\d+:n\d+@\d+\/r\d+ns/, `node restarts carry virtual-ns delays: ${r.plan}`);
  t.notMatch(r.plan, /\/r\d+(?!\d|ns)/, 'no restart delay in steps');
});
