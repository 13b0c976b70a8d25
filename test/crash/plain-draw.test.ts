// The plain sweep's own adversity (issue 28 items 2, 3): crash runs of an app whose clients
// reconnect a live node drop connections while the server is up (multi.ts planFor with drops), the
// kv plain sweep runs with a media error in every image (damageTombstone), and its crash runs find
// a client that does not reconnect after a drop. Without drops a plan is what it always was.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { appOf, explore, kvExplorerApp, nicConfigFor, plainSpec, planFor, resolveExploreOptions, runCrashPlan, PLAIN_CRASH_RUNS } from '../../src/testing/crash/index.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
t.comment(`seed ${SEED} (PMRPC_SEED=<n> to replay another)`);
t.setTimeout(120_000);

t.test('planFor: drops only where asked; the crashes stay what they were; every fourth run drops instead of crashing a client', async (t) => {
  for (let i = 0; i < 8; i++) {
    const plain = planFor(SEED, i, 300, 1, 3);
    const dropping = planFor(SEED, i, 300, 1, 3, true);
    t.notOk(plain.some((e) => e.drops !== undefined), `run ${i}: no drop without drops`);
    const drops = dropping.filter((e) => e.drops !== undefined);
    t.ok(drops.length >= 1, `run ${i}: ${drops.length} connection(s) dropped`);
    const crashes = dropping.filter((e) => e.drops === undefined);
    if (i % 4 === 3) t.same(crashes, [], `run ${i}: drops only`);
    else t.same(crashes, plain.filter((e) => crashes.some((c) => c.point === e.point)), `run ${i}: the crashes of the plan without drops`);
    t.same(dropping.map((e) => e.point), [...dropping.map((e) => e.point)].sort((a, b) => a - b), 'in point order');
  }
});

t.test('kv: crash runs with dropped connections report nothing on the correct app; a client that does not reconnect is caught', async (t) => {
  const o = resolveExploreOptions({ seed: SEED });
  const total = (await explore(kvExplorerApp({}), { seed: SEED, imagesPerPoint: 1, pointsMax: 1, nested: false })).crashPointsTotal;
  // Drops alone (kind 3): the server never goes down.
  const plans = [3, 7, 11].map((i) => planFor(SEED, i, total, 1, 3, true));
  let dropped = 0;
  for (const plan of plans) {
    const r = await runCrashPlan(kvExplorerApp({}), o, nicConfigFor(SEED), plan);
    dropped += r.events.filter((e) => /connection dropped/.test(e)).length;
    t.same(r.problems, [], `correct: ${r.events.join('; ')}`);
  }
  t.ok(dropped > 0, `${dropped} connections dropped`);
  let caught: string | undefined;
  for (const plan of plans) {
    const r = await runCrashPlan(kvExplorerApp({ mutant: 'noReconnect' }), o, nicConfigFor(SEED), plan);
    caught ??= r.problems.find((p) => p.kind === 'drop')?.detail;
  }
  t.match(caught, /failed after a dropped connection while node 0 was up/, `mutant noReconnect caught: ${caught ?? 'no'}`);
});

t.test('the kv plain sweep: crash runs with drops, a media error in every image, named in its replay', async (t) => {
  const spec = plainSpec({ app: 'kv', name: 'noReconnect', strategy: null });
  t.equal(spec.explore.crashRuns, PLAIN_CRASH_RUNS.kv);
  t.match(spec.workload, { damageTombstone: true });
  const app = appOf(spec);
  t.equal(app.drops, true, 'its clients reconnect: its crash runs drop connections');
  t.match(app.replayArgs(), /--mutant noReconnect --damage-tombstone$/);
  const bad = spawnSync(process.execPath, [CLI, 'crash-test', '--app', 'register', '--damage-tombstone'], { encoding: 'utf8', timeout: 240_000 });
  t.equal(bad.status, 1);
  t.match(bad.stderr, /PMRPC_ERR_BAD_OPTION.*--damage-tombstone needs --app kv/);
});

t.test('the tx plain sweep: even seeds run hot keys (2 keys, 4 clients), the others the default; the replay names the shape', async (t) => {
  const hot = plainSpec({ app: 'tx', name: 'skip-prepare-flush', strategy: null }, 2);
  const cool = plainSpec({ app: 'tx', name: 'skip-prepare-flush', strategy: null }, 3);
  t.match(hot.workload, { keys: 2, clients: 4, mutant: 'skip-prepare-flush' });
  t.match(cool.workload, { keys: 4, clients: 3, mutant: 'skip-prepare-flush' });
  t.match(appOf(hot).replayArgs(), /--clients 4 --keys 2 --mutant skip-prepare-flush/);
  t.notMatch(appOf(cool).replayArgs(), /--keys/);
  // skip-validation pins the hot shape itself: its replay at an even seed needs no flag, at an odd one names the default.
  t.notMatch(appOf(plainSpec({ app: 'tx', name: 'skip-validation', strategy: null }, 2)).replayArgs(), /--keys/);
  t.match(appOf(plainSpec({ app: 'tx', name: 'skip-validation', strategy: null }, 3)).replayArgs(), /--clients 3 --keys 4/);
});
