// The lock-based replication baseline on the one crash explorer (src/testing/crash/rslock.ts):
// every replica crashed at once at every crash point of a seeded workload (PM survives), each
// recovered from its images: acknowledged writes survive, histories stay durably linearizable,
// audits are clean. Each mutant of the persistence path (no FLUSH before the release; writes in
// place) is caught. Bounded: a few seeds, capped crash points.
import t from 'tap';
import { explore } from '../../src/testing/crash/index.js';
import { rslockExplorerApp } from '../../src/testing/crash/rslock.js';
import { RSLOCK_MUTANTS } from '../../src/apps/rslock/index.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (PMRPC_SEED=<n> to replay another)`);

t.test('the correct protocol: every replica crashed at once, no violation', async (t) => {
  for (const seed of [SEED, SEED + 1, SEED + 2, SEED + 3]) {
    const r = await explore(rslockExplorerApp({ opsPerClient: 4 }), { seed, pointsMax: 150, imagesPerPoint: 6, nested: seed === SEED });
    t.comment(`seed ${seed}: ${r.configs[0]}, ${r.crashPoints} crash points, ${r.imagesChecked} images`);
    t.ok(r.imagesChecked > 50, `seed ${seed}: ${r.imagesChecked} images checked`);
    t.same(r.violations.map((v) => `${v.kind}: ${v.detail} (${v.replay})`), [], `seed ${seed}: no violation`);
  }
});

t.test('5 replicas, 3 clients, 2 blocks: no violation', async (t) => {
  const r = await explore(rslockExplorerApp({ nodes: 5, clients: 3, registers: 2, opsPerClient: 3 }), { seed: SEED, pointsMax: 40, imagesPerPoint: 3, nested: false });
  t.comment(`seed ${SEED}: ${r.configs[0]}, ${r.imagesChecked} images`);
  t.same(r.violations.map((v) => `${v.kind}: ${v.detail}`), []);
});

t.test('every mutant of the persistence path is caught', async (t) => {
  for (const m of RSLOCK_MUTANTS) {
    let caught: string | undefined;
    for (let seed = 1; seed <= 6 && caught === undefined; seed++) {
      const r = await explore(rslockExplorerApp({ opsPerClient: 4, mutant: m.name }), { seed, pointsMax: 80, imagesPerPoint: 6, nested: false, violationsMax: 1 });
      const v = r.violations[0];
      if (v !== undefined) caught = `seed ${seed} (${r.configs[0]}): ${v.kind}: ${v.detail}\n  reproduce: ${v.replay}`;
    }
    t.ok(caught !== undefined, `mutant ${m.name} (${m.step}) caught`);
    if (caught !== undefined) t.comment(`${m.name}: ${caught}`);
  }
});
