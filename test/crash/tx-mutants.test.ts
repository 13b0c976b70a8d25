// Every PRISM-TX mutant is caught (DESIGN §8 "the suite must have teeth"): by the crash explorer at
// seed 1 with DDIO on and the workload pins of its table entry (what `pmrpc crash-test --app tx --mutant NAME --seed 1` runs), or, for the
// few whose race the seeded workload does not reach, by the targeted test its `caughtBy` names.
import t from 'tap';
import { existsSync } from 'node:fs';
import { TX_MUTANTS } from '../../src/apps/tx/index.js';
import { explore, txExplorerApp } from '../../src/testing/crash/index.js';

t.setTimeout(900_000);

t.test('at least 8 mutants; each caught by the explorer or names the test that catches it', async (t) => {
  t.ok(TX_MUTANTS.length >= 8, `${TX_MUTANTS.length} mutants`);
  t.ok(TX_MUTANTS.filter((m) => m.caughtBy === undefined).length >= 9, 'at least 9 caught by the explorer itself (skip-validation with its pins: 2 hot keys, 4 clients)');
  for (const m of TX_MUTANTS) {
    if (m.caughtBy !== undefined) {
      t.ok(existsSync(new URL(`../../${m.caughtBy}`, import.meta.url)), `${m.name}: caught by ${m.caughtBy}`);
      continue;
    }
    const r = await explore(txExplorerApp({ mutant: m.name }), { seed: 1, pins: { ddio: true }, imagesPerPoint: 4, crashRuns: 8, violationsMax: 1 });
    t.ok(r.violations.length > 0, `${m.name}: ${r.violations[0] === undefined ? 'NOT CAUGHT' : `${r.violations[0].kind}: ${r.violations[0].detail.slice(0, 160)} — ${r.violations[0].replay}`}`);
  }
});

t.test("a mutant's pins do not make the correct protocol fail: its workload, no mutant, seed 1", async (t) => {
  for (const m of TX_MUTANTS) {
    if (m.pins === undefined) continue;
    const r = await explore(txExplorerApp(m.pins), { seed: 1, pins: { ddio: true }, imagesPerPoint: 4, crashRuns: 8, violationsMax: 1 });
    t.equal(r.violations.length, 0, `pins of ${m.name} (${JSON.stringify(m.pins)}): ${r.violations[0] === undefined ? '0 violations' : `${r.violations[0].kind}: ${r.violations[0].detail.slice(0, 160)} — ${r.violations[0].replay}`}`);
  }
});
