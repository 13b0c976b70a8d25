// PRISM-RS on the crash explorer at CI scale (issue 12 item 5): seeds from PMRPC_SEED, each its own
// NIC configuration, until at least 10,000 distinct (crash point, image) pairs are checked (at most
// 8 seeds), zero violations, no undecided linearizability search. (Nested crashes: crash.test.ts.)
import t from 'tap';
import { explore, rsExplorerApp, withDistinctImages } from '../../src/testing/crash/index.js';

const seed = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${seed} (replay: PMRPC_SEED=${seed} npx tap test/deep/rs-crash-scale.test.ts; a violation prints its pmrpc crash-test command)`);
t.setTimeout(900_000);

t.test('scale: at least 10,000 distinct (crash point, image) pairs across NIC configurations, no violation', async (t) => {
  let distinct = 0;
  let images = 0;
  const configs = new Set<string>();
  for (let s = seed; s < seed + 8 && distinct < 10_000; s++) {
    const app = withDistinctImages(rsExplorerApp({ opsPerClient: 12 }));
    const r = await explore(app, { seed: s, imagesPerPoint: 10, nested: false });
    distinct += app.distinct;
    images += r.imagesChecked;
    configs.add(r.configs[0]!);
    t.same(r.violations.map((v) => `${v.kind}: ${v.detail.slice(0, 400)} (${v.replay})`), [], `seed ${s} (${r.configs[0]}): ${app.distinct} distinct pairs, no violation`);
    t.equal((app.inner as ReturnType<typeof rsExplorerApp>).undecided, 0, 'no undecided search');
  }
  t.comment(`rs: ${distinct} distinct (crash point, image) pairs of ${images} images over ${configs.size} NIC configurations`);
  t.ok(distinct >= 10_000, `${distinct} distinct pairs`);
  t.ok(configs.size >= 3, `${configs.size} NIC configurations`);
});
