// PRISM-TX on the one crash explorer (issue 13, deliverable 6): image tuples of every shard at every
// crash point (recovered, crashed again during recovery, resolved, checked) and crash runs (single
// shards, all shards and clients crash while the rest goes on), list-append and bank workloads, zero
// violations. The sweep to at least 10,000 distinct (crash point, image) pairs is in
// test/deep/tx-crash-scale.test.ts (npm run test:deep).
import t from 'tap';
import { explore, txExplorerApp } from '../../src/testing/crash/index.js';

const seed = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${seed} (replay: PMRPC_SEED=${seed} npx tap test/crash/tx.test.ts; a violation prints its pmrpc crash-test command)`);
// A loaded machine may take minutes; a timeout is not an assertion.
t.setTimeout(900_000);

t.test('nested crashes during recovery, crash runs of shards and clients, both workloads: no violation', async (t) => {
  for (const [s, workload] of [[seed + 2, 'append'], [seed + 3, 'bank'], [seed + 4, 'bank']] as const) {
    const app = txExplorerApp({ workload, txPerClient: 6 });
    const r = await explore(app, { seed: s, imagesPerPoint: 2, crashRuns: 8 });
    t.same(r.violations.map((v) => `${v.kind}: ${v.detail} (${v.replay})`), [], `seed ${s} ${workload} (${r.configs[0]}): ${r.imagesChecked} images, ${r.nestedImagesChecked} crashed again in recovery, ${r.crashRunsChecked} crash runs, outcomes ${JSON.stringify(app.outcomes())}`);
    t.ok(r.nestedImagesChecked > 0, 'recoveries were crashed');
    t.equal(r.crashRunsChecked, 8);
  }
});
