// PRISM-KV simulated crash tests (DESIGN §8): every crash point of a concurrent workload, seeded
// images of each, recovery in a fresh region, a second crash during recovery; checkers for the
// index, the allocator, lost acknowledged writes and linearizability. PMRPC_SEED replays a run.
import t from 'tap';
import { runKvCrashTest, type KvCrashTestResult } from '../../../src/apps/kv/index.js';

const seed = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;

function report(t: Tap.Test, label: string, r: KvCrashTestResult, seconds: number): void {
  t.comment(
    `${label}: seed ${r.seed}, engine ${r.engine}, ${r.operations} operations (${r.acknowledged} acknowledged), crash points ${r.crashPoints}/${r.crashPointsTotal}, ` +
      `images ${r.imagesChecked} (${r.recoveryImagesChecked} from a crash during recovery, ${r.exhaustiveImages} enumerated exhaustively), ` +
      `violations ${r.violations.length}, undecided ${r.undecided}, ${seconds.toFixed(1)} s — replay: ${r.replay}`,
  );
  for (const v of r.violations.slice(0, 5)) t.comment(`  ${v.kind} at crash point ${v.crashPoint} image ${v.image} (${v.phase}): ${v.detail}`);
}

t.test(`the real protocol: >= 1,000 images, zero violations (seed ${seed}, random engine)`, async (t) => {
  const t0 = process.hrtime.bigint();
  const r = await runKvCrashTest({ seed, engine: 'random' });
  report(t, 'random', r, Number(process.hrtime.bigint() - t0) / 1e9);
  t.ok(r.imagesChecked >= 1000, `${r.imagesChecked} images checked`);
  t.ok(r.recoveryImagesChecked > 0, 'crashes during recovery were checked');
  t.equal(r.crashPoints, r.crashPointsTotal, 'every crash point of the workload');
  t.same(r.violations, [], 'no violation');
  t.equal(r.undecided, 0);
});

t.test(`the real protocol, exhaustive engine where a crash point has <= 64 images (seed ${seed + 1})`, async (t) => {
  const t0 = process.hrtime.bigint();
  const r = await runKvCrashTest({ seed: seed + 1, engine: 'exhaustive', exhaustiveMaxImages: 64, imagesPerPoint: 2, clients: 2, opsPerClient: 10 });
  report(t, 'exhaustive', r, Number(process.hrtime.bigint() - t0) / 1e9);
  t.ok(r.exhaustiveImages > 0, `${r.exhaustiveImages} images enumerated exhaustively`);
  t.same(r.violations, []);
});

t.test('more seeds, more clients', async (t) => {
  for (const s of [seed + 2, seed + 3]) {
    const t0 = process.hrtime.bigint();
    const r = await runKvCrashTest({ seed: s, clients: 4, opsPerClient: 10, imagesPerPoint: 2 });
    report(t, `seed ${s}`, r, Number(process.hrtime.bigint() - t0) / 1e9);
    t.same(r.violations, [], `seed ${s}`);
  }
});

t.test('DDIO off: NIC writes go straight to media, a crash mid-drain leaves any subset of a message\'s words (torn slots), recovery repairs them', async (t) => {
  const t0 = process.hrtime.bigint();
  const r = await runKvCrashTest({ seed, ddio: false, imagesPerPoint: 4 });
  report(t, 'ddio off', r, Number(process.hrtime.bigint() - t0) / 1e9);
  t.same(r.violations, []);
  const m = await runKvCrashTest({ seed, ddio: false, imagesPerPoint: 4, mutant: 'skipPointerValidation', stopAfterViolations: 10 });
  t.ok(m.violations.length > 0, 'without slot repair, torn slots show');
});

t.test('options are validated', async (t) => {
  await t.rejects(runKvCrashTest({ engine: 'all' as never }), new TypeError("engine must be 'random' or 'exhaustive', got all"));
  await t.rejects(runKvCrashTest({ mutant: 'nope' as never }), TypeError);
  await t.rejects(runKvCrashTest({ imagesPerPoint: 0 }), new RangeError('imagesPerPoint must be an integer in [1, 100000], got 0'));
  await t.rejects(runKvCrashTest({ clients: 9 }), new RangeError('clients must be an integer in [1, 6], got 9'));
});
