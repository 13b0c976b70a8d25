// Teeth (DESIGN §8): each fault switch removes one persistence or validation step, and the crash
// test must report a violation. A fault is tried on up to 8 seeds from PMRPC_SEED (each run
// stops at its first violation); without faults the same runs report none (crash.test.ts).
import t from 'tap';
import { FAULT_NAMES, type RecoveryFaults } from '../../recovery/index.js';
import { CrashHarness, SEED, type HarnessFaults } from './fixtures/harness.js';

function caught(t: Tap.Test, name: string, faults: RecoveryFaults, harnessFaults: HarnessFaults = {}): void {
  for (let seed = SEED; seed < SEED + 8; seed++) {
    const r = new CrashHarness({ seed, faults, harnessFaults, maxViolations: 1 }).run();
    if (r.violations.length > 0) {
      t.comment(`${name}: seed ${seed}, after ${r.crashPoints} crash points / ${r.imagesChecked} images: ${r.violations[0]}`);
      t.pass(`${name}: the crash test reports a violation`);
      return;
    }
    t.comment(`${name}: seed ${seed}: no violation in ${r.imagesChecked} images`);
  }
  t.fail(`${name}: no violation on seeds ${SEED}..${SEED + 7}`);
}

declare namespace Tap {
  type Test = Parameters<Parameters<typeof t.test>[1]>[0];
}

for (const fault of FAULT_NAMES) {
  t.test(`fault ${fault} is caught`, async (t) => caught(t, fault, { [fault]: true }));
}

t.test('harness fault ackBeforePersist (acknowledge before the entry is durable) is caught', async (t) => caught(t, 'ackBeforePersist', {}, { ackBeforePersist: true }));
