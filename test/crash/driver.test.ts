// The explorer's one driver (src/testing/crash/driver.ts): every kind of run — random and PCT
// sweeps, small-scope exhaustive mode, crash plans and the swarm — builds its regions in one place
// with the drawn NIC configuration. Each line model reaches every driver: every region a driver
// builds (fresh, restarted, checked, crashed during recovery) carries the configuration's model.
import t from 'tap';
import {
  explore, exploreExhaustive, nicConfigFor, registerExplorerApp, runCrashPlan, parsePlan, resolveExploreOptions, swarmRun,
  setRegionProbe, type RegionProbeEvent, type RegionUse,
} from '../../src/testing/crash/index.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/crash/driver.test.ts)`);
t.setTimeout(300_000);

const small = () => registerExplorerApp({ nodes: 3, clients: 2, opsPerClient: 2, pattern: 'mixed' });

/** Runs `fn` with the probe on: the regions it built. */
async function probe(fn: () => Promise<unknown>): Promise<RegionProbeEvent[]> {
  const seen: RegionProbeEvent[] = [];
  const prev = setRegionProbe((e) => seen.push(e));
  try {
    await fn();
  } finally {
    setRegionProbe(prev);
  }
  return seen;
}

const uses = (seen: RegionProbeEvent[]): Set<RegionUse> => new Set(seen.map((e) => e.use));

for (const lineModel of ['prefix', 'subset'] as const) {
  t.test(`line model ${lineModel} reaches every driver`, async (t) => {
    const pins = { lineModel };
    const drivers: Array<{ name: string; run: () => Promise<unknown>; expect: RegionUse[] }> = [
      { name: 'random sweep', run: () => explore(small(), { seed: SEED, pins, pointsMax: 20, imagesPerPoint: 2 }), expect: ['explore', 'check'] },
      { name: 'pct sweep', run: () => explore(small(), { seed: SEED, pins, pointsMax: 20, imagesPerPoint: 2, schedule: { mode: 'pct' } }), expect: ['explore', 'check'] },
      { name: 'crash runs', run: () => explore(small(), { seed: SEED, pins, pointsMax: 1, imagesPerPoint: 1, crashRuns: 4 }), expect: ['explore', 'crash-run', 'restart'] },
      {
        name: 'crash plan (with a crash during recovery)',
        run: () => runCrashPlan(small(), resolveExploreOptions({ seed: SEED }), nicConfigFor(SEED, pins), parsePlan('p10:n1@1/r3x;p30:n0,n2/r0')),
        expect: ['crash-run', 'restart', 'recovery-crash'],
      },
      { name: 'exhaustive', run: () => exploreExhaustive(() => registerExplorerApp({ nodes: 1, clients: 2, opsPerClient: 1, pattern: 'writer-reader' }), { seed: SEED, pins }), expect: ['exhaustive', 'check'] },
      {
        name: 'swarm',
        run: () => swarmRun(SEED, 'kv', { overrides: { config: nicConfigFor(SEED, pins), nodeCrashRate: 1 / 60, allNodesRate: 0 } }),
        expect: ['crash-run', 'restart'],
      },
    ];
    for (const d of drivers) {
      const seen = await probe(d.run);
      t.ok(seen.length > 0, `${d.name}: built regions`);
      t.same([...new Set(seen.map((e) => e.lineModel))], [lineModel], `${d.name}: every region (${seen.length}) has line model ${lineModel}`);
      for (const u of d.expect) t.ok(uses(seen).has(u), `${d.name}: built '${u}' regions`);
    }
  });
}

t.test('a restarted node of a crash run runs with the configuration eviction; a checked image without', async (t) => {
  const config = { ...nicConfigFor(SEED), eviction: 0.05 };
  const seen = await probe(() => runCrashPlan(small(), resolveExploreOptions({ seed: SEED }), config, parsePlan('p10:n1@0/r2')));
  t.ok(seen.filter((e) => e.use === 'crash-run' || e.use === 'restart').every((e) => e.eviction === 0.05), 'fresh and restarted regions evict');
  const checked = await probe(() => explore(small(), { seed: SEED, pins: { eviction: 0.05 }, pointsMax: 5, imagesPerPoint: 1 }));
  t.ok(checked.some((e) => e.use === 'check'), 'images were checked');
  t.ok(checked.filter((e) => e.use === 'check').every((e) => e.eviction === 0), 'a checked image recovers without eviction');
});
