// Teeth (DESIGN §8): each fault switch of recovery/faults.ts removes one persistence or validation
// step, and the explorer (with the recovery app, src/testing/crash/recovery.ts) must report a
// violation of the guarantees themselves (a lost, duplicated, foreign or out-of-order request). A
// fault is tried on up to 8 seeds from PMRPC_SEED; without faults the same runs report none
// (crash.test.ts).
import t from 'tap';
import { FAULT_NAMES } from '../../recovery/index.js';
import { explore, recoveryExplorerApp, type RecoveryWorkloadOptions } from '../../src/testing/crash/index.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/recovery/faults.test.ts)`);

// A violation of the guarantees themselves (not only "recovery failed" or "reopen differs").
const SEMANTIC = /acknowledged request lost|applied again|never sent|not the one sent|FIFO hole|effects of two requests mixed|release undone/;

const cases: Array<[string, Partial<RecoveryWorkloadOptions>]> = [
  // skipPersistRegisterReset matters only when a slot is reused (churn) under the kill model (below).
  // The release's switches need releases (churn) too.
  ...FAULT_NAMES.map((f): [string, Partial<RecoveryWorkloadOptions>] => [
    f,
    { faults: { [f]: true }, ...(f === 'skipPersistRegisterReset' ? { churn: 3, requestsPerClient: 4 } : f === 'skipPersistReleaseMark' || f === 'skipPersistReleaseClear' || f === 'skipReleaseDrainCheck' || f === 'skipPersistAppliedFlag' ? { clients: 4, churn: 6, requestsPerClient: 4, batchMax: 2 } : {}) },
  ]),
  ['ackBeforePersist (acknowledge before the entry is durable)', { ackBeforePersist: true }],
];

for (const [name, workload] of cases) {
  t.test(`fault ${name} is caught`, async (t) => {
    for (let seed = SEED; seed < SEED + 8; seed++) {
      const pins = workload.faults?.skipPersistRegisterReset || workload.faults?.skipPersistReleaseClear ? ({ lineModel: 'subset' } as const) : {};
      // With subset lines a line of two pending words has 4 images: 4 per point enumerates them.
      // skipInvalidateBeyondGap shows in few images of a point (a registration's line holds more
      // pending words since the table keeps a secret hash): 4 per point find it on most seeds.
      const r = await explore(recoveryExplorerApp(workload), { seed, imagesPerPoint: workload.faults?.skipPersistRegisterReset || workload.faults?.skipPersistReleaseClear || workload.faults?.skipInvalidateBeyondGap ? 4 : 2, violationsMax: 40, pins });
      // Since lazy flags (docs/recovery.md, "Group commit") recovery replays every complete record,
      // so a lost applied flag no longer loses or repeats a request: what it breaks is a released
      // client's records, which recovery refuses to replay (their client is not in the table).
      const pattern = workload.faults?.skipPersistAppliedFlag ? /not in the connection table/ : SEMANTIC;
      const v = r.violations.find((x) => pattern.test(x.detail));
      if (v !== undefined) {
        t.pass(`${name}: seed ${seed}, ${r.violations.length} violations in ${r.imagesChecked} images; e.g. ${v.kind} (${v.phase}): ${v.detail} — ${v.replay}`);
        return;
      }
      t.comment(`${name}: seed ${seed}: ${r.violations.length} violations, none semantic, in ${r.imagesChecked} images`);
    }
    t.fail(`${name}: no semantic violation on seeds ${SEED}..${SEED + 7}`);
  });
}

// The registration's persist of the slot's reset applied word shares its line with the id word:
// under the prefix model it is redundant (the id's persist carries both), under the kill model it
// is not — the same fault with prefix lines shows nothing.
t.test('skipPersistRegisterReset is invisible under the prefix model (the step exists for the kill model)', async (t) => {
  const r = await explore(recoveryExplorerApp({ faults: { skipPersistRegisterReset: true }, churn: 3, requestsPerClient: 4 }), { seed: SEED, imagesPerPoint: 4, pins: { lineModel: 'prefix' } });
  t.same(r.violations, [], `no violation in ${r.imagesChecked} images with prefix lines`);
});
