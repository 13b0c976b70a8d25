// `pmrpc soak` (src/testing/soak.ts): small-arena soaks — PRISM-TX, 3 shards of 40 items, 20 × their
// capacity in transactions, ≥ 20 % aborts; PRISM-KV, 64 items per class, 10 × — err nowhere, keep
// PRISM-RS, 3 replicas, 64 items per class, 10 × — err nowhere, keep their high water mark, leak
// nothing; the bad options get their codes.
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

t.test('kv: 10 × a small arena (64 items per class), no error, every GET the last write, nothing leaked', async (t) => {
  const r = await runSoak({ app: 'kv', multiple: 10, items: 64, seed: SEED });
  t.comment(JSON.stringify(r));
  t.equal(r.operations, 10 * r.capacityItems, 'operations = multiple × capacity');
  t.equal(r.errors, 0, `no operation errored (${r.firstErrors.join('; ') || 'none'})`);
  t.same(r.violations, [], 'no violation (GETs, audit, leaks, high water)');
  t.ok(r.highWaterItems < r.capacityItems, `high water ${r.highWaterItems} of ${r.capacityItems}`);
  t.ok(r.reclaimed.returned > r.capacityItems, `${r.reclaimed.returned} buffers returned live`);
});

t.test('rs: 10 × a small arena (64 items per class), no error, every read the last write, nothing leaked', async (t) => {
  const r = await runSoak({ app: 'rs', multiple: 10, items: 64, clients: 2, seed: SEED });
  t.comment(JSON.stringify(r));
  t.equal(r.operations, 10 * r.capacityItems, 'operations = multiple × capacity');
  t.equal(r.capacityItems, 3 * 64 * 8, 'capacity: 3 replicas × 64 items per class');
  t.equal(r.errors, 0, `no operation errored (${r.firstErrors.join('; ') || 'none'})`);
  t.same(r.violations, [], 'no violation (reads, audits, leaks, high water)');
  t.ok(r.highWaterItems < r.capacityItems, `high water ${r.highWaterItems} of ${r.capacityItems}`);
  t.ok(r.reclaimed.returned > r.capacityItems, `${r.reclaimed.returned} superseded buffers returned live`);
});

t.test('bad options are coded errors', async (t) => {
  await t.rejects(runSoak({ app: 'rpc' }), { name: 'PmrpcError', code: SoakErrorCodes.APP });
  await t.rejects(runSoak({ app: 'kv', items: 8 }), { name: 'PmrpcError', code: SoakErrorCodes.BAD_OPTION });
  await t.rejects(runSoak({ app: 'tx', multiple: 0 }), { name: 'PmrpcError', code: SoakErrorCodes.BAD_OPTION });
  await t.rejects(runSoak({ app: 'tx', items: 3 }), { name: 'PmrpcError', code: SoakErrorCodes.BAD_OPTION });
  await t.rejects(runSoak({ app: 'tx', clients: 9 }), { name: 'PmrpcError', code: SoakErrorCodes.BAD_OPTION });
});
