// PRISM-TX on the crash explorer at CI scale (issue 13, deliverable 6): image tuples of every shard
// at every crash point, at least 10,000 distinct (crash point, image) pairs, zero violations. The
// nested crashes, crash runs and both workloads at small scale are test/crash/tx.test.ts (npm test).
import t from 'tap';
import { explore, txExplorerApp, withDistinctImages, type TxExplorerApp } from '../../src/testing/crash/index.js';

const seed = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${seed} (replay: PMRPC_SEED=${seed} npx tap test/deep/tx-crash-scale.test.ts; a violation prints its pmrpc crash-test command)`);
// A loaded machine may take minutes; a timeout is not an assertion.
t.setTimeout(900_000);

t.test('scale: at least 10,000 distinct (crash point, image) pairs, no violation', async (t) => {
  let distinct = 0;
  let images = 0;
  let cpuMs = 0;
  // Seeds from `seed` on until the pairs reach 10,000 (seed 1 alone does: 11,081), at most four.
  for (let s = seed; s < seed + 4 && distinct < 10_000; s++) {
    const app = withDistinctImages(txExplorerApp({}));
    const c0 = process.cpuUsage();
    const r = await explore(app, { seed: s, imagesPerPoint: 160, nested: false });
    const cpu = process.cpuUsage(c0);
    cpuMs += (cpu.user + cpu.system) / 1000;
    distinct += app.distinct;
    images += r.imagesChecked;
    const inner = app.inner as TxExplorerApp;
    t.same(r.violations.map((v) => `${v.kind}: ${v.detail} (${v.replay})`), [], `seed ${s} (${r.configs[0]}): ${app.distinct} distinct pairs, outcomes ${JSON.stringify(inner.outcomes())}, no violation`);
    t.ok((inner.outcomes().committed ?? 0) > 0, 'transactions committed');
  }
  t.comment(`tx: ${distinct} distinct (crash point, image) pairs of ${images} images, ${Math.round(distinct / (cpuMs / 1000))} distinct images per CPU second`);
  t.ok(distinct >= 10_000, `${distinct} distinct pairs`);
});
