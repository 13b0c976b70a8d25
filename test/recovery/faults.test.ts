// Teeth (DESIGN §8): with each fault switch one persistence or validation step is removed, and
// the crash test must report a violation.
import t from 'tap';
import { FAULT_NAMES } from '../../recovery/index.js';
import { CrashHarness, SEED } from './harness.js';

for (const fault of FAULT_NAMES) {
  t.test(`fault ${fault} is caught`, async (t) => {
    const h = new CrashHarness({ seed: SEED, faults: { [fault]: true }, maxViolations: 1 });
    const r = h.run();
    t.comment(`seed ${r.seed}: ${r.crashPoints} crash points, ${r.imagesChecked} images, ${r.seconds.toFixed(1)} s; first violation: ${r.violations[0] ?? 'none'}`);
    t.ok(r.violations.length > 0, `${fault}: the crash test reports a violation`);
  });
}

t.test('harness fault ackBeforePersist is caught', async (t) => {
  const h = new CrashHarness({ seed: SEED, harnessFaults: { ackBeforePersist: true }, maxViolations: 1 });
  const r = h.run();
  t.comment(`first violation: ${r.violations[0] ?? 'none'}`);
  t.ok(r.violations.length > 0);
});
