// Each PRISM-RS mutant removes one step of the protocol or of replica recovery; the crash explorer
// must report violations for each at seed 1, as `pmrpc crash-test --app rs --mutant NAME --seed 1`
// runs it (DESIGN §8 "the suite must have teeth"), of a kind that names what broke.
// Mutants carry the settings their race needs (RsMutant.explore): countFailedCas an undrained
// NIC-cache entry at a chosen moment (an adversarial schedule, src/testing/crash/pct.ts;
// failed-cas.test.ts also drives it op by op); readWithoutWriteBack and readWithoutFlush a CAS
// result visible to READs but not durable (DDIO on, eager drains) when every replica crashes.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { RS_MUTANTS, rsFaultsFor, listRsMutants, type RsFaultName } from '../../src/apps/rs/index.js';
import { explore, rsExplorerApp } from '../../src/testing/crash/index.js';
import { RS_IMAGES_PER_POINT } from '../../cli/crash-test.js';

const seed = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${seed} (replay: PMRPC_SEED=${seed} npx tap test/deep/rs-mutants.test.ts)`);
t.setTimeout(1_800_000);

const EXPECTED: Record<RsFaultName, string[]> = {
  dropItemFlush: ['lost', 'linearizability', 'diverged', 'slot', 'unavailable'],
  flushItemHeadOnly: ['lost', 'linearizability', 'diverged', 'slot', 'unavailable'],
  dropSlotFlush: ['lost', 'linearizability'],
  noWriterId: ['linearizability', 'lost', 'diverged'],
  readWithoutWriteBack: ['linearizability'],
  minorityWrite: ['lost', 'linearizability'],
  readWithoutFlush: ['linearizability', 'lost'],
  trustLocationHint: ['linearizability'],
  skipSlotRepair: ['slot', 'diverged', 'linearizability', 'lost'],
  skipReclaim: ['allocator'],
  acceptStaleEpoch: ['allocator', 'invariant'],
  allowAllocateBeforeRebuild: ['early-allocate'],
  countFailedCas: ['lost', 'linearizability'],
  reuseOwnTag: ['diverged', 'linearizability'],
  dropUnansweredReturns: ['allocator'],
  freeUncertainBlindly: ['allocator', 'lost', 'invariant'],
};

t.test('mutants are data: name and step; at least 8; the listing', async (t) => {
  t.ok(RS_MUTANTS.length >= 8);
  t.same(Object.keys(EXPECTED).sort(), RS_MUTANTS.map((m) => m.name).sort());
  t.equal(rsFaultsFor('dropSlotFlush').dropSlotFlush, true);
  t.throws(() => rsFaultsFor('nope'), TypeError);
  t.equal(listRsMutants().split('\n').length, RS_MUTANTS.length);
  t.match(listRsMutants().split('\n')[0], /^dropItemFlush\t/);
});

// The path of `pmrpc crash-test --app rs --mutant NAME --seed 1`: the same app and the same live
// run (the mutant's own NIC pins and schedule: its exploreDefaults), so the same crash points;
// fewer images per point (2, not the CLI's RS_IMAGES_PER_POINT: noWriterId takes > 60 s with 14)
// except where 2 do not reach the torn state (skipSlotRepair: image 8 of point 15); no nested
// crash (time), stopped at the first violation.
const IMAGES: Partial<Record<RsFaultName, number>> = { skipSlotRepair: RS_IMAGES_PER_POINT };
for (const m of RS_MUTANTS) {
  // Caught by a dedicated test (op by op and a swarm seed), not (yet) by the explorer at seed 1.
  if (m.caughtBy !== undefined) {
    t.test(`mutant ${m.name} is caught by ${m.caughtBy}`, async (t) => {
      const src = readFileSync(new URL(`../../${m.caughtBy!}`, import.meta.url), 'utf8');
      t.match(src, new RegExp(`${m.name}: true`), `${m.caughtBy} runs its scenario with the mutant`);
      t.match(src, new RegExp(`mutant ${m.name} caught`), `${m.caughtBy} asserts it is caught`);
    });
    continue;
  }
  t.test(`mutant ${m.name} (${m.step}): violations at seed ${seed}, on the CLI's path`, async (t) => {
    const r = await explore(rsExplorerApp({ mutant: m.name }), { seed, imagesPerPoint: IMAGES[m.name] ?? 2, nested: false, violationsMax: 1 });
    const kinds = [...new Set(r.violations.map((v) => v.kind))];
    t.comment(`${m.name}: ${r.configs.join(' ')} ${r.schedule ?? 'random'}, ${r.imagesChecked} images: ${kinds.join(', ')} — ${r.violations[0]?.detail.slice(0, 200) ?? 'none'} — ${r.violations[0]?.replay ?? ''}`);
    t.ok(r.violations.length > 0, `${m.name}: caught`);
    t.ok(kinds.some((k) => EXPECTED[m.name].includes(k)), `violation kinds ${kinds.join(', ')} include one of ${EXPECTED[m.name].join(', ')}`);
  });
}

// The settings mutants carry (NIC pins, adversarial schedules) must not make the correct protocol
// fail: each distinct one once (seed 1, 1 image per point, 2 crash runs).
t.test('the settings mutants carry do not make the correct protocol fail', async (t) => {
  const seen = new Set<string>();
  for (const m of RS_MUTANTS) {
    if (m.explore === undefined) continue;
    const key = JSON.stringify(m.explore);
    if (seen.has(key)) continue;
    seen.add(key);
    // A mutant's crash plan is replayed on the correct build as it is (instead of 2 seeded crash runs).
    const runs = m.explore.crashPlan !== undefined ? { crashPlan: m.explore.crashPlan } : { crashRuns: 2 };
    const r = await explore(rsExplorerApp({}), { seed, imagesPerPoint: 1, nested: false, ...runs, violationsMax: 1, pins: m.explore.pins ?? {}, schedule: m.explore.schedule });
    t.same(r.violations.map((v) => `${v.kind}: ${v.detail.slice(0, 200)} — ${v.replay}`), [], `settings of ${m.name}: ${r.configs.join(' ')} ${r.schedule}`);
  }
});
