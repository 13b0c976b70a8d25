// The crash-test engine at a bounded size (DESIGN §8): every durable strategy shows no violation
// over every crash point of a seeded workload; raw loses acknowledged requests with DDIO and keeps
// them without (the point of the flush primitives, DESIGN §2.3).
import t from 'tap';
import { MUTANTS, runCrashTest, resolveCrashTestOptions, reproduceCommand } from '../../src/crash/index.js';
import { ALWAYS_CORRECT } from '../../src/rpc/index.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
const SIZE = { requests: 18, imagesPerPoint: 3 } as const;
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/crash/crash.test.ts, or the pmrpc crash-test command printed with a violation)`);

for (const strategy of ALWAYS_CORRECT) {
  t.test(`${strategy}: no violation at any crash point`, async (t) => {
    const r = await runCrashTest({ strategy, seed: SEED, ...SIZE });
    t.comment(`${strategy} seed ${SEED}: ${r.crashPoints} crash points, ${r.imagesChecked} images, ${r.nestedImagesChecked} crashed again during recovery, ${r.resumesChecked} resumed`);
    t.same(r.violations, [], 'no violations');
    t.equal(r.applied, SIZE.requests, 'every request applied in the run');
    t.equal(r.acknowledged, SIZE.requests, 'every request acknowledged durable');
    t.ok(r.crashPoints >= 50, 'crash points of the RPC stack were visited');
    t.equal(r.crashPoints, r.crashPointsTotal, 'all of them (no sampling at this size)');
    t.ok(r.nestedImagesChecked > 0 && r.resumesChecked > 0, 'recoveries were crashed and clients resumed');
    t.ok(r.keptResultsChecked > 0, `${r.keptResultsChecked} kept results delivered after recovery were the requests' own`);
  });
}

t.test('with unasked write-backs (eviction crash points) and 4 clients: no violation', async (t) => {
  for (const strategy of ['wflush', 'srflush', 'darpc'] as const) {
    const r = await runCrashTest({ strategy, seed: SEED, requests: 16, clients: 4, imagesPerPoint: 2, eviction: 0.2 });
    t.same(r.violations, [], `${strategy}: no violations over ${r.imagesChecked} images`);
    t.equal(r.applied, 16);
  }
  t.throws(() => resolveCrashTestOptions({ eviction: 2 }), new RangeError('eviction must be a probability in [0, 1], got 2'));
});

t.test('raw: violations with DDIO, none without', async (t) => {
  const on = await runCrashTest({ strategy: 'raw', ddio: true, seed: SEED, ...SIZE, violationsMax: 3 });
  t.ok(on.violations.length > 0, `ddio on: ${on.violations.length} violations`);
  t.match(on.violations[0]!.message, /acknowledged request lost/);
  t.match(on.violations[0]!.command, /^pmrpc crash-test --strategy raw --ddio on --seed \d+ .* --point \d+$/);
  const off = await runCrashTest({ strategy: 'raw', ddio: false, seed: SEED, ...SIZE });
  t.same(off.violations, [], 'ddio off: no violations');
  t.ok(off.imagesChecked > 0);
});

t.test('a violation reproduces from its crash point alone', async (t) => {
  const full = await runCrashTest({ strategy: 'raw', ddio: true, seed: SEED, ...SIZE, violationsMax: 1 });
  const v = full.violations[0]!;
  const one = await runCrashTest({ strategy: 'raw', ddio: true, seed: SEED, ...SIZE, violationsMax: 1, point: v.point });
  t.equal(one.crashPoints, 1, 'only that crash point');
  t.same(one.violations.map((x) => x.message), [v.message], 'the same violation');
});

t.test('the exhaustive engine checks every image of small states', async (t) => {
  const r = await runCrashTest({ strategy: 'wflush', seed: SEED, requests: 6, engine: 'exhaustive', exhaustiveMax: 64, resumeEvery: 8 });
  t.same(r.violations, []);
  t.ok(r.imagesChecked > r.crashPoints, `${r.imagesChecked} images over ${r.crashPoints} crash points`);
});

t.test('crash-test options are validated with exact messages', async (t) => {
  t.throws(() => resolveCrashTestOptions({ strategy: 'x' as never }), new TypeError('strategy must be one of wflush, sflush, wrflush, srflush, raw, gpspm, farm, darpc, none, got x'));
  t.throws(() => resolveCrashTestOptions({ requests: 0 }), new RangeError('requests must be an integer in [1, 100000], got 0'));
  t.throws(() => resolveCrashTestOptions({ engine: 'all' as never }), new TypeError("engine must be 'random' or 'exhaustive', got all"));
  t.throws(() => resolveCrashTestOptions({ mutant: 'nope' }), new TypeError(`unknown mutant nope; one of ${MUTANTS.map((m) => m.name).join(', ')}`));
  t.throws(() => resolveCrashTestOptions({ point: -1 }), new RangeError('point must be a non-negative integer, got -1'));
  t.equal(reproduceCommand(resolveCrashTestOptions({ strategy: 'farm', seed: 7, mutant: 'reply-before-apply' }), 3), 'pmrpc crash-test --strategy farm --ddio on --seed 7 --requests 64 --images-per-point 4 --engine random --mutant reply-before-apply --point 3');
});
