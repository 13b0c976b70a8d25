// (In test:deep: a sweep.) Wider crash runs of recovery/ on the explorer (src/testing/crash/recovery.ts): exhaustive images
// where a state has up to 256, eviction (lines written back unasked), a crash at every crash point
// of a recovery, the kill model (any subset of a line's dirty words survives), client churn and
// registration, more clients with larger batches. Zero violations each.
import t from 'tap';
import { explore, recoveryExplorerApp, type ExploreOptions, type RecoveryWorkloadOptions } from '../../src/testing/crash/index.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/deep/recovery-crash-wide.test.ts)`);

const runs: Array<[string, Partial<RecoveryWorkloadOptions>, Partial<ExploreOptions>]> = [
  ['exhaustive up to 256 images per state', { requestsPerClient: 4 }, { seed: SEED, engine: 'exhaustive', exhaustiveMax: 256, imagesPerPoint: 16, pins: { lineModel: 'prefix' } }],
  ['eviction 20%', {}, { seed: SEED + 1, pins: { eviction: 0.2 }, imagesPerPoint: 4 }],
  ["any subset of a line's pending words survives (kill model)", {}, { seed: SEED, pins: { lineModel: 'subset' }, imagesPerPoint: 8 }],
  ['client churn: finished clients release their slot to new ones (registration under crashes)', { churn: 3 }, { seed: SEED, imagesPerPoint: 4, pins: { lineModel: 'subset' } }],
  ['4 clients x 12 requests, batches up to 4', { clients: 4, batchMax: 4 }, { seed: SEED + 2, imagesPerPoint: 4 }],
];

for (const [name, workload, o] of runs) {
  t.test(name, async (t) => {
    const app = recoveryExplorerApp(workload);
    const r = await explore(app, o);
    t.comment(`${name}: seed ${r.seed} (${r.configs[0]}), ${r.crashPoints} crash points, ${r.imagesChecked} images + ${r.nestedImagesChecked} crashed during recovery`);
    t.same(r.violations, [], 'no violations');
    t.equal(app.applied, app.total, 'every request processed');
    t.equal(app.churned, workload.churn ?? 0, 'clients churned');
    if (o.engine === 'exhaustive') t.ok(r.imagesChecked > r.crashPoints * 2, 'several images per crash point');
  });
}

t.test('a crash at every crash point of a recovery (the node restarts in place at the end of the run)', async (t) => {
  // The server stops polling halfway: the restart's recovery re-executes what was acknowledged but
  // not applied, and each of its crash points is expanded into images, recovered and crashed again.
  const app = recoveryExplorerApp({ requestsPerClient: 4, restartAtEnd: true });
  const r = await explore(app, { seed: SEED, imagesPerPoint: 2 });
  t.comment(`restart: ${r.crashPoints} crash points (${app.restartCrashPoints} in the restart's recovery, which re-executed ${app.restartReexecuted}), ${r.imagesChecked} images`);
  t.same(r.violations, []);
  t.ok(app.restartReexecuted > 0, 'the restart re-executed acknowledged requests');
  t.ok(app.restartCrashPoints > 0 && r.crashPoints === r.crashPointsTotal, "every crash point of the restart's recovery was checked");
});
