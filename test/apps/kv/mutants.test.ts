// Each mutant removes one persistence step of the PUT chain or of allocator recovery; the crash
// explorer must report violations for each (DESIGN §8: "the suite must have teeth"). The
// linearizability checker must reject a real buggy history (from the blind-CAS mutant).
import { readFileSync } from 'node:fs';
import t from 'tap';
import { KV_MUTANTS, faultsFor, listKvMutants, type KvFaultName } from '../../../src/apps/kv/index.js';
import { explore, kvExplorerApp } from '../../../src/testing/crash/index.js';

const seed = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${seed} (replay: PMRPC_SEED=${seed} npx tap test/apps/kv/mutants.test.ts)`);

const EXPECTED: Record<KvFaultName, string[]> = {
  dropHeapFlush: ['lost', 'linearizability', 'index', 'read-error'],
  dropIndexFlush: ['lost', 'linearizability'],
  unconditionalCas: ['live-index', 'live-allocator', 'index', 'allocator', 'lost', 'linearizability'],
  blindCas: ['lost', 'linearizability', 'live-index', 'index', 'allocator'],
  skipPointerValidation: ['index', 'read-error', 'recovery'],
  skipReclaim: ['allocator'],
  acceptStaleEpoch: ['allocator', 'invariant'],
  allowAllocateBeforeRebuild: ['spurious-full'],
  // Caught by the step-driven tests named in the mutant's `caughtBy` (see KvMutant.caughtBy).
  getWithoutFlush: [],
  narrowIndexFlush: [],
  finalGroupIndexFlush: [],
  deleteNoopWithoutFlush: [],
  skipDeadItemPersist: [],
  skipRejectedSlotPersist: [],
  dropUnansweredReturns: [],
  retryUncertainPut: [],
  noReconnect: [],
};

t.test('mutants are data: a name and the persistence step each removes', async (t) => {
  t.equal(KV_MUTANTS.length, 17);
  t.same(new Set(KV_MUTANTS.map((m) => m.layer)), new Set(['put-chain', 'get-chain', 'allocator-recovery', 'drops']));
  for (const m of KV_MUTANTS) t.match(m, { name: String, step: String });
  t.same(Object.keys(EXPECTED).sort(), KV_MUTANTS.map((m) => m.fault).sort());
  for (const m of KV_MUTANTS) t.same([m.name, m.aliases], [m.fault.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`), [m.fault]], `${m.fault}: a kebab-case name, the former name an alias`);
  t.equal(faultsFor('dropHeapFlush').dropHeapFlush, true, 'by its former name (an alias)');
  t.equal(faultsFor('drop-heap-flush').dropHeapFlush, true, 'by its name');
  t.throws(() => faultsFor('nope' as never), TypeError);
  t.equal(listKvMutants().split('\n')[0], 'drop-heap-flush\tprism-kv');
  t.equal(listKvMutants().split('\n').length, 17);
});

for (const m of KV_MUTANTS) {
  if (m.caughtBy !== undefined) {
    t.test(`mutant ${m.name} (${m.step}) is caught by ${m.caughtBy}`, async (t) => {
      const src = readFileSync(new URL(`../../../${m.caughtBy!}`, import.meta.url), 'utf8');
      t.match(src, new RegExp(`\\{ ${m.fault}: true \\}`), `${m.caughtBy} runs its scenarios with the mutant`);
      t.match(src, new RegExp(`mutant ${m.fault} caught`), `${m.caughtBy} asserts it is caught`);
    });
    continue;
  }
  t.test(`mutant ${m.name} (${m.step}) produces violations`, async (t) => {
    let found = false;
    for (let s = seed; s < seed + 6 && !found; s++) {
      const r = await explore(kvExplorerApp({ mutant: m.name }), { seed: s, imagesPerPoint: m.fault === 'skipPointerValidation' ? 6 : 2, violationsMax: 10, pins: m.fault === 'skipPointerValidation' ? { ddio: false, placement: 'any' } : { ddio: s % 2 === 0 ? false : true } });
      if (r.violations.length > 0) {
        found = true;
        const kinds = [...new Set(r.violations.map((v) => v.kind))];
        t.comment(`${m.name} seed ${s}: ${kinds.join(', ')} — ${r.violations[0]!.detail.slice(0, 160)} — ${r.violations[0]!.replay}`);
        t.ok(kinds.some((k) => EXPECTED[m.fault].includes(k)), `violation kinds ${kinds.join(', ')} include one of ${EXPECTED[m.fault].join(', ')}`);
      }
    }
    t.ok(found, `${m.name}: violations within 6 seeds from ${seed}`);
  });
}
