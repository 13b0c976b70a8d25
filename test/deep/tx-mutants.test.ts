// Every PRISM-TX mutant is caught (DESIGN §8 "the suite must have teeth") by the crash explorer at
// seed 1 exactly as `pmrpc crash-test --app tx --mutant NAME --seed 1` runs it: the run is built by
// the CLI's own function (txCrashSpec: DDIO on, the CLI's images per point and crash runs, the
// workload pins, NIC pins and adversarial schedule of the mutant's table entry) and explored by the
// CLI's own path (exploreSeed, what its sweep runs per seed), stopped at the first violation.
import t from 'tap';
import { TX_MUTANTS } from '../../src/apps/tx/index.js';
import { exploreSeed, txCrashSpec } from '../../src/testing/crash/index.js';

t.setTimeout(1_800_000); // wall clock: 6.5 min on a 2-core machine at load average 33 (every mutant caught at seed 1 in 285 s)

t.test('at least 8 mutants, each caught at seed 1 as the CLI runs it', async (t) => {
  t.ok(TX_MUTANTS.length >= 8, `${TX_MUTANTS.length} mutants`);
  for (const m of TX_MUTANTS) {
    const r = await exploreSeed(txCrashSpec({ mutant: m.name }, { violationsMax: 1 }), 1);
    t.ok(r.violations.length > 0, `${m.name} (${r.schedule ?? 'random'}): ${r.violations[0] === undefined ? 'NOT CAUGHT' : `${r.violations[0].kind}: ${r.violations[0].detail.slice(0, 160)} — ${r.violations[0].replay}`}`);
  }
});

t.test("a mutant's pins and schedule do not make the correct protocol fail: its settings, no mutant, seed 1", async (t) => {
  for (const m of TX_MUTANTS) {
    if (m.pins === undefined && m.explore === undefined) continue;
    const spec = txCrashSpec({ ...(m.pins ?? {}) }, { pins: { ddio: true, ...(m.explore?.pins ?? {}) }, schedule: m.explore?.schedule, imagesPerPoint: 4, violationsMax: 1 });
    const r = await exploreSeed(spec, 1);
    t.equal(r.violations.length, 0, `settings of ${m.name} (${JSON.stringify({ ...m.pins, ...m.explore })}): ${r.violations[0] === undefined ? '0 violations' : `${r.violations[0].kind}: ${r.violations[0].detail.slice(0, 160)} — ${r.violations[0].replay}`}`);
  }
});
