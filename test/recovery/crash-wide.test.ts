// Wider crash runs of recovery/: exhaustive images where a state has up to 256, eviction (lines
// written back unasked), and a crash at every crash point of recovery (not one sampled point).
import t from 'tap';
import { CrashHarness, SEED, type HarnessConfig } from './fixtures/harness.js';

const runs: [string, Partial<HarnessConfig>][] = [
  ['exhaustive up to 256 images per state', { seed: SEED, exhaustiveMax: 256, imagesPerPoint: 16 }],
  ['eviction 5%', { seed: SEED, eviction: 0.05 }],
  ['eviction 20%', { seed: SEED + 1, eviction: 0.2 }],
  ['crash at every crash point of recovery', { seed: SEED, nestedAll: true, pointStride: 2, imagesPerPoint: 2 }],
  ['any subset of a line\'s pending words survives (kill model)', { seed: SEED, lineModel: 'subset', imagesPerPoint: 8 }],
  ['client churn: finished clients release their slot to new ones', { seed: SEED, churn: 3, imagesPerPoint: 4 }],
  ['4 clients x 12 requests, batches up to 4', { seed: SEED + 2, clients: 4, requestsPerClient: 12, batchMax: 4, imagesPerPoint: 6 }],
];

for (const [name, cfg] of runs) {
  t.test(name, async (t) => {
    const r = new CrashHarness(cfg).run();
    t.comment(`${name}: seed ${r.seed} (replay: PMRPC_SEED=${SEED}), ${r.crashPoints} crash points, ${r.imagesChecked} images + ${r.nestedImagesChecked} crashed during recovery, ${r.seconds.toFixed(1)} s`);
    t.same(r.violations, [], 'no violations');
    t.equal(r.finalApplied, ((cfg.clients ?? 3) + (cfg.churn ?? 0)) * (cfg.requestsPerClient ?? 12), 'every request processed');
  });
}
