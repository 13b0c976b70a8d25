// Teeth (DESIGN §8): each fault switch removes one persistence or validation step, and the crash
// test must report a violation of the guarantees themselves (a lost, duplicated, foreign or
// out-of-order request). A fault is tried on up to 12 seeds from PMRPC_SEED (each run stops after
// 40 violations); without faults the same runs report none (crash.test.ts).
import t from 'tap';
import { FAULT_NAMES, type RecoveryFaults } from '../../recovery/index.js';
import { CrashHarness, SEED, type HarnessFaults } from './fixtures/harness.js';

// A violation of the guarantees themselves (not only "recovery failed" or "reopen differs").
const SEMANTIC = /acknowledged request lost|applied again|never sent|not the one sent|FIFO hole|effects of two requests mixed/;

function caught(t: Tap.Test, name: string, faults: RecoveryFaults, harnessFaults: HarnessFaults = {}): void {
  let any = false;
  for (let seed = SEED; seed < SEED + 12; seed++) {
    const r = new CrashHarness({ seed, faults, harnessFaults, maxViolations: 40 }).run();
    any ||= r.violations.length > 0;
    const semantic = r.violations.find((v) => SEMANTIC.test(v));
    if (semantic !== undefined) {
      t.comment(`${name}: seed ${seed}, ${r.violations.length} violations in ${r.crashPoints} crash points / ${r.imagesChecked} images; first: ${r.violations[0]}`);
      t.comment(`${name}: e.g. ${semantic}`);
      t.pass(`${name}: the crash test reports a lost, duplicated, foreign or out-of-order request`);
      return;
    }
    t.comment(`${name}: seed ${seed}: ${r.violations.length} violations, none semantic, in ${r.imagesChecked} images`);
  }
  t.fail(`${name}: no ${any ? 'semantic ' : ''}violation on seeds ${SEED}..${SEED + 11}`);
}

declare namespace Tap {
  type Test = Parameters<Parameters<typeof t.test>[1]>[0];
}

for (const fault of FAULT_NAMES) {
  t.test(`fault ${fault} is caught`, async (t) => caught(t, fault, { [fault]: true }));
}

t.test('harness fault ackBeforePersist (acknowledge before the entry is durable) is caught', async (t) => caught(t, 'ackBeforePersist', {}, { ackBeforePersist: true }));
