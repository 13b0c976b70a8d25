// `pmrpc soak` (src/testing/soak.ts): a small-arena soak of PRISM-TX — 3 shards of 40 items, 20 ×
// their capacity in transactions, ≥ 20 % aborts — errs nowhere, keeps its high water mark, leaks
// nothing; the CLI's bad options get their codes.
import t from 'tap';
import { runSoak, soakPassed, SoakErrorCodes } from '../../src/testing/index.js';

const SEED = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/testing/soak.test.ts)`);

t.test('tx: 20 × a small arena, no error, bounded high water, nothing leaked', async (t) => {
  const r = await runSoak({ app: 'tx', multiple: 20, items: 40, seed: SEED });
  t.comment(JSON.stringify(r));
  t.equal(r.operations, 20 * r.capacityItems, 'operations = multiple × capacity');
  t.equal(r.capacityItems, 3 * 40, 'capacity: 3 shards × 40 items');
  t.equal(r.errors, 0, `no operation errored (${r.firstErrors.join('; ') || 'none'})`);
  t.same(r.violations, [], 'no violation (conservation, audits, leaks, aborts ≥ 20 %, high water)');
  t.ok(r.aborts >= 0.2 * r.operations, `${r.aborts} aborts of ${r.operations}`);
  t.ok(r.highWaterItems <= r.highWaterAt5x + Math.ceil(0.01 * r.capacityItems), `high water ${r.highWaterItems}, ${r.highWaterAt5x} at 5 ×`);
  t.ok(r.highWaterItems < r.capacityItems, 'the arena never filled');
  t.ok(r.reclaimed.superseded >= 2 * r.commits, `${r.reclaimed.superseded} superseded values reclaimed live (two per commit)`);
  t.ok(soakPassed(r), 'passed');
});

t.test('bad options are coded errors', async (t) => {
  await t.rejects(runSoak({ app: 'kv' }), { name: 'PmrpcError', code: SoakErrorCodes.APP });
  await t.rejects(runSoak({ app: 'tx', multiple: 0 }), { name: 'PmrpcError', code: SoakErrorCodes.BAD_OPTION });
  await t.rejects(runSoak({ app: 'tx', items: 3 }), { name: 'PmrpcError', code: SoakErrorCodes.BAD_OPTION });
  await t.rejects(runSoak({ app: 'tx', clients: 9 }), { name: 'PmrpcError', code: SoakErrorCodes.BAD_OPTION });
});
