// Each KV mutant removes one persistence step of the PUT chain or of allocator recovery; the
// explorer must report violations for each (DESIGN §8: "the suite must have teeth").
import t from 'tap';
import { KV_MUTANTS, type KvFaultName } from '../../../src/apps/kv/index.js';
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
  acceptStaleEpoch: ['allocator'],
  allowAllocateBeforeRebuild: ['spurious-full'],
};

for (const m of KV_MUTANTS) {
  t.test(`mutant ${m.name} (${m.step}) produces violations`, async (t) => {
    let found = false;
    for (let s = seed; s < seed + 6 && !found; s++) {
      const r = await explore(kvExplorerApp({ mutant: m.name }), { seed: s, imagesPerPoint: m.name === 'skipPointerValidation' ? 6 : 2, violationsMax: 10, pins: m.name === 'skipPointerValidation' ? { ddio: false, placement: 'any' } : { ddio: s % 2 === 0 ? false : true } });
      if (r.violations.length > 0) {
        found = true;
        const kinds = [...new Set(r.violations.map((v) => v.kind))];
        t.comment(`${m.name} seed ${s}: ${kinds.join(', ')} — ${r.violations[0]!.detail.slice(0, 160)} — ${r.violations[0]!.replay}`);
        t.ok(kinds.some((k) => EXPECTED[m.name].includes(k)), `violation kinds ${kinds.join(', ')} include one of ${EXPECTED[m.name].join(', ')}`);
      }
    }
    t.ok(found, `${m.name}: violations within 6 seeds from ${seed}`);
  });
}
