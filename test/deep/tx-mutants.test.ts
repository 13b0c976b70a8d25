// A PRISM-TX mutant's pins (TxMutant.pins: its workload; .explore: its NIC pins and adversarial
// schedule, what `pmrpc crash-test --app tx --mutant NAME --seed 1` runs it with) are adversity, not
// a bug: the correct protocol under the same settings at seed 1 reports nothing. The run is built by
// the CLI's own function (txCrashSpec) and explored by the CLI's own path (exploreSeed). That every
// mutant is caught is test/deep/mutants-all-tx.test.ts: the plain sweep, nothing pinned.
import t from 'tap';
import { TX_MUTANTS } from '../../src/apps/tx/index.js';
import { exploreSeed, txCrashSpec } from '../../src/testing/crash/index.js';

t.setTimeout(1_800_000);

t.test("a mutant's pins and schedule do not make the correct protocol fail: its settings, no mutant, seed 1", async (t) => {
  const pinned = TX_MUTANTS.filter((m) => m.pins !== undefined || m.explore !== undefined);
  t.ok(pinned.length > 0, `${pinned.length} mutants carry pins: ${pinned.map((m) => m.name).join(', ')}`);
  for (const m of pinned) {
    const spec = txCrashSpec({ ...(m.pins ?? {}) }, { pins: { ddio: true, ...(m.explore?.pins ?? {}) }, schedule: m.explore?.schedule, imagesPerPoint: 4, violationsMax: 1 });
    const r = await exploreSeed(spec, 1);
    t.ok(r.imagesChecked > 0 && (r.crashRunsChecked ?? 0) > 0, `settings of ${m.name}: ${r.imagesChecked} images, ${r.crashRunsChecked ?? 0} crash runs`);
    t.equal(r.violations.length, 0, `settings of ${m.name} (${JSON.stringify({ ...m.pins, ...m.explore })}): ${r.violations[0] === undefined ? '0 violations' : `${r.violations[0].kind}: ${r.violations[0].detail.slice(0, 160)} — ${r.violations[0].replay}`}`);
  }
});
