// Each mutant removes one persistence step of the PUT chain or of allocator recovery; the crash
// suite must report violations for each (DESIGN §8: "the suite must have teeth"). The
// linearizability checker must reject a real buggy history (from the blind-CAS mutant).
import { readFileSync } from 'node:fs';
import t from 'tap';
import { checkLinearizable, kvModel } from '../../../src/check/linearizability.js';
import { KV_MUTANTS, faultsFor, listKvMutants, runKvCrashTest, type KvFaultName } from '../../../src/apps/kv/index.js';

const seed = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;

/** The violation kinds each mutant is expected to produce (at least one of them). */
const EXPECTED: Record<KvFaultName, string[]> = {
  dropHeapFlush: ['lost', 'linearizability'],
  dropIndexFlush: ['lost', 'linearizability'],
  unconditionalCas: ['live-index', 'live-allocator', 'index', 'lost', 'linearizability'],
  blindCas: ['lost', 'linearizability', 'live-index', 'index'],
  skipPointerValidation: ['index', 'read-error'],
  skipReclaim: ['allocator'],
  acceptStaleEpoch: ['allocator'],
  allowAllocateBeforeRebuild: ['spurious-full'],
  // Caught by the step-driven tests named in the mutant's `caughtBy` (see KvMutant.caughtBy).
  getWithoutFlush: [],
  narrowIndexFlush: [],
  deleteNoopWithoutFlush: [],
};

t.test('mutants are data: a name and the persistence step each removes', async (t) => {
  t.equal(KV_MUTANTS.length, 11);
  t.same(new Set(KV_MUTANTS.map((m) => m.layer)), new Set(['put-chain', 'get-chain', 'allocator-recovery']));
  for (const m of KV_MUTANTS) t.match(m, { name: String, step: String });
  t.same(Object.keys(EXPECTED).sort(), KV_MUTANTS.map((m) => m.name).sort());
  t.equal(faultsFor('dropHeapFlush').dropHeapFlush, true);
  t.throws(() => faultsFor('nope' as never), TypeError);
  t.equal(listKvMutants().split('\n')[0], 'dropHeapFlush\tprism-kv');
  t.equal(listKvMutants().split('\n').length, 11);
});

for (const m of KV_MUTANTS) {
  if (m.caughtBy !== undefined) {
    t.test(`mutant ${m.name} (${m.step}) is caught by ${m.caughtBy}`, async (t) => {
      const src = readFileSync(new URL(`../../../${m.caughtBy!}`, import.meta.url), 'utf8');
      t.match(src, new RegExp(`\\{ ${m.name}: true \\}`), `${m.caughtBy} runs its scenarios with the mutant`);
      t.match(src, new RegExp(`mutant ${m.name} caught`), `${m.caughtBy} asserts it is caught`);
    });
    continue;
  }
  t.test(`mutant ${m.name} (${m.step}) produces violations`, async (t) => {
    let found = false;
    for (let s = seed; s < seed + 4 && !found; s++) {
      const r = await runKvCrashTest({ seed: s, mutant: m.name, imagesPerPoint: 4, stopAfterViolations: 25 });
      const kinds = Object.keys(r.violationCounts);
      t.comment(`${m.name} seed ${s}: ${r.imagesChecked} images, crash points ${r.crashPoints}/${r.crashPointsTotal}, violations ${JSON.stringify(r.violationCounts)}${r.violations[0] ? ` — first: ${r.violations[0].kind}: ${r.violations[0].detail.slice(0, 240)}` : ''} — replay: ${r.replay}`);
      if (r.violations.length > 0) {
        found = true;
        t.ok(kinds.some((k) => EXPECTED[m.name].includes(k)), `violation kinds ${kinds.join(', ')} include one of ${EXPECTED[m.name].join(', ')}`);
      }
    }
    t.ok(found, `${m.name}: violations within 4 seeds from ${seed}`);
  });
}

t.test('the linearizability checker rejects a real buggy KV history (blind CAS) and accepts the real protocol\'s', async (t) => {
  let rejected = false;
  for (let s = seed; s < seed + 6 && !rejected; s++) {
    const bad = await runKvCrashTest({ seed: s, mutant: 'blindCas', imagesPerPoint: 1, crashPointsMax: 1 });
    const v = checkLinearizable(kvModel, bad.history);
    if (v.ok === false) {
      rejected = true;
      t.comment(`seed ${s}: ${v.reason}: ${v.operations.map((o) => kvModel.describe!(o)).join('; ')}`);
    }
  }
  t.ok(rejected, 'some blind-CAS history is not linearizable');
  const good = await runKvCrashTest({ seed, imagesPerPoint: 1, crashPointsMax: 1 });
  t.equal(checkLinearizable(kvModel, good.history).ok, true);
});
