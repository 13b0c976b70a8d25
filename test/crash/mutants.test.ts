// Teeth (DESIGN §8): every mutant — one persistence or validation step removed through a test-only
// fault switch — makes the explorer report violations under every strategy it lists.
import t from 'tap';
import { explore, MUTANTS, rpcExplorerApp } from '../../src/testing/crash/index.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
const SEEDS = [SEED, SEED + 1, SEED + 2, SEED + 3];
t.comment(`seeds ${SEEDS.join(', ')} (replay: PMRPC_SEED=${SEED} npx tap test/crash/mutants.test.ts)`);

t.test('mutant names and lists', async (t) => {
  t.ok(MUTANTS.length >= 6, `${MUTANTS.length} mutants`);
  for (const m of MUTANTS) {
    t.match(m.name, /^[a-z][a-z0-9-]*$/);
    t.ok((m.recoveryFaults === undefined) !== (m.rpcFaults === undefined), `${m.name} sets exactly one kind of fault switch`);
  }
  t.equal(new Set(MUTANTS.map((m) => m.name)).size, MUTANTS.length, 'names are unique');
});

for (const m of MUTANTS.filter((x) => x.equivalent !== undefined)) {
  t.test(`${m.name}: equivalent in the rpc app (${m.equivalent!.slice(0, 60)}…)`, async (t) => {
    t.same(m.strategies, [], 'no strategy must catch it');
    for (const strategy of ['wrflush', 'wflush'] as const) {
      const r = await explore(rpcExplorerApp({ strategy, mutant: m.name, requests: 32, resumeEvery: 2 }), { seed: SEED, pins: { ddio: true }, imagesPerPoint: 2, violationsMax: 1, nested: true });
      t.same(r.violations.map((v) => `${v.detail.slice(0, 100)} — ${v.replay}`), [], `${m.name} under ${strategy}, seed ${SEED}, 32 requests: no violation`);
    }
  });
}

for (const m of MUTANTS.filter((x) => x.equivalent === undefined)) {
  t.test(`${m.name}: caught under ${m.strategies.join(', ')}`, async (t) => {
    for (const strategy of m.strategies) {
      let caught: string | undefined;
      // DDIO on: the configuration in which a missing persistence step shows (the rest drawn per seed).
      // The smallest workload known to catch it first (early-credit needs the rings to wrap: 32 requests;
      // with the redo log group-committed per poll batch, wflush needs 64), then the rest.
      const first: Array<[number, number]> = m.name === 'early-credit' ? [[SEED + 1, 32], [SEED + 1, 64]] : [];
      for (const [seed, requests] of [...first, ...SEEDS.map((s) => [s, 12]), ...SEEDS.map((s) => [s, 32])] as Array<[number, number]>) {
        const r = await explore(rpcExplorerApp({ strategy, mutant: m.name, requests, resumeEvery: 2 }), { seed, pins: { ddio: true }, imagesPerPoint: 2, violationsMax: 1, nested: m.recoveryFaults !== undefined });
        if (r.violations.length > 0) {
          caught = `seed ${seed}, ${requests} requests: ${r.violations[0]!.kind}: ${r.violations[0]!.detail.slice(0, 100)} — ${r.violations[0]!.replay}`;
          break;
        }
      }
      t.ok(caught !== undefined, `${m.name} under ${strategy}: ${caught ?? 'not caught'}`);
    }
  });
}
