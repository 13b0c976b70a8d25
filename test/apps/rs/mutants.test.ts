// Each PRISM-RS mutant removes one step of the protocol or of replica recovery; the crash explorer
// (image tuples + crash runs) must report violations for each (DESIGN §8 "the suite must have
// teeth"), of a kind that names what broke. countFailedCas needs an undrained NIC-cache entry at
// a chosen moment: failed-cas.test.ts drives it op by op.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { RS_MUTANTS, rsFaultsFor, listRsMutants, type RsFaultName } from '../../../src/apps/rs/index.js';
import { explore, rsExplorerApp } from '../../../src/testing/crash/index.js';

const seed = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${seed} (replay: PMRPC_SEED=${seed} npx tap test/apps/rs/mutants.test.ts)`);
t.setTimeout(900_000);

const EXPECTED: Record<RsFaultName, string[]> = {
  dropItemFlush: ['lost', 'linearizability', 'diverged', 'slot', 'unavailable'],
  dropSlotFlush: ['lost', 'linearizability'],
  noWriterId: ['linearizability', 'lost', 'diverged'],
  readWithoutWriteBack: ['linearizability'],
  minorityWrite: ['lost', 'linearizability'],
  readWithoutFlush: ['linearizability', 'lost'],
  skipSlotRepair: ['slot', 'diverged', 'linearizability', 'lost'],
  skipReclaim: ['allocator'],
  acceptStaleEpoch: ['allocator'],
  allowAllocateBeforeRebuild: ['early-allocate'],
  countFailedCas: [],
  reuseOwnTag: [],
};

// The first seed that catches each mutant at PMRPC_SEED=1 (measured: the explorer is deterministic
// per seed). Starting there, not at 1, skips whole explorations known to find nothing — about 60 s
// of a CI run; the search still goes on for 6 seeds if a change moves the catch. Another PMRPC_SEED
// searches from that seed.
const FIRST_SEED: Partial<Record<RsFaultName, number>> = { dropItemFlush: 2, dropSlotFlush: 2, minorityWrite: 2, readWithoutWriteBack: 5, readWithoutFlush: 5 };

t.test('mutants are data: name and step; at least 8; the listing', async (t) => {
  t.ok(RS_MUTANTS.length >= 8);
  t.same(Object.keys(EXPECTED).sort(), RS_MUTANTS.map((m) => m.name).sort());
  t.equal(rsFaultsFor('dropSlotFlush').dropSlotFlush, true);
  t.throws(() => rsFaultsFor('nope'), TypeError);
  t.equal(listRsMutants().split('\n').length, RS_MUTANTS.length);
  t.match(listRsMutants().split('\n')[0], /^dropItemFlush\t/);
});

for (const m of RS_MUTANTS) {
  if (m.caughtBy !== undefined) {
    t.test(`mutant ${m.name} is caught by ${m.caughtBy}`, async (t) => {
      const src = readFileSync(new URL(`../../../${m.caughtBy!}`, import.meta.url), 'utf8');
      t.match(src, new RegExp(`${m.name}: true`), `${m.caughtBy} runs its scenario with the mutant`);
      t.match(src, new RegExp(`mutant ${m.name} caught`), `${m.caughtBy} asserts it is caught`);
    });
    continue;
  }
  t.test(`mutant ${m.name} (${m.step}) produces violations`, async (t) => {
    let found = false;
    const from = seed === 1 ? (FIRST_SEED[m.name] ?? 1) : seed;
    for (let s = from; s < from + 6 && !found; s++) {
      // minorityWrite: image tuples alone (a crash of every replica just after a write returned) show the loss.
      const crashRuns = m.name === 'minorityWrite' ? 0 : 8;
      const r = await explore(rsExplorerApp({ mutant: m.name, opsPerClient: 6 }), { seed: s, imagesPerPoint: 2, nested: false, violationsMax: 5, crashRuns });
      if (r.violations.length === 0) continue;
      found = true;
      const kinds = [...new Set(r.violations.map((v) => v.kind))];
      t.comment(`${m.name} seed ${s}: ${kinds.join(', ')} — ${r.violations[0]!.detail.slice(0, 200)} — ${r.violations[0]!.replay}`);
      t.ok(kinds.some((k) => EXPECTED[m.name].includes(k)), `violation kinds ${kinds.join(', ')} include one of ${EXPECTED[m.name].join(', ')}`);
    }
    t.ok(found, `${m.name}: violations within 6 seeds from ${from}`);
  });
}
