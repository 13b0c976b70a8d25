// The RPC app's crash sweep over every strategy that claims durability, one seed each (the NIC
// configuration its seed draws), every crash point; every other strategy also crashes each image
// once more during its recovery. Small in test/crash/crash.test.ts (npm test), at scale (at least
// 10,000 distinct (crash point, image) pairs) in test/deep/rpc-crash-scale.test.ts.
import type { Test } from 'tap';
import { explore, nicConfigFor, configName, rpcExplorerApp, withDistinctImages } from '../../src/testing/crash/index.js';
import { ALWAYS_CORRECT } from '../../src/rpc/index.js';

export function rpcStrategySweep(t: Test, o: { seed: number; imagesPerPoint: number; minDistinct: number }): void {
  const SEED = o.seed;
  let distinct = 0;
  let images = 0;
  let cpuMs = 0;
  ALWAYS_CORRECT.forEach((strategy, i) => {
    t.test(`${strategy}: no violation at any crash point (seed ${SEED + i}: ${configName(nicConfigFor(SEED + i))})`, async (t) => {
      const app = withDistinctImages(rpcExplorerApp({ strategy, requests: 24, resumeEvery: 2 }));
      const c0 = process.cpuUsage();
      const r = await explore(app, { seed: SEED + i, imagesPerPoint: o.imagesPerPoint, nested: i % 2 === 0 });
      const cpu = process.cpuUsage(c0);
      cpuMs += (cpu.user + cpu.system) / 1000;
      distinct += app.distinct;
      images += r.imagesChecked;
      t.comment(`${strategy}: ${r.crashPoints} crash points (${r.deliveryPoints} deliveries), ${r.imagesChecked} images (${app.distinct} distinct), ${r.nestedImagesChecked} nested`);
      t.same(r.violations, [], 'no violations');
      const inner = app.inner as ReturnType<typeof rpcExplorerApp>;
      t.equal(inner.applied, 24, 'every request applied in the run');
      t.equal(inner.acknowledged(), 24, 'every request acknowledged durable');
      t.ok(r.deliveryPoints > 0, 'deliveries were crash points');
      if (i % 2 === 0) t.ok(r.nestedImagesChecked > 0, 'recoveries were crashed');
    });
  });
  t.test(`at least ${o.minDistinct} distinct (crash point, image) pairs over the strategies`, async (t) => {
    t.comment(`rpc: ${distinct} distinct (crash point, image) pairs of ${images} images over ${ALWAYS_CORRECT.length} seeds, ${Math.round(distinct / (cpuMs / 1000))} distinct images per CPU second`);
    t.ok(distinct >= o.minDistinct, `${distinct} distinct pairs`);
  });
}
