// bench tcp's warm-up (bench/tcp.ts): a cell is counted only once the rate stopped climbing — the
// decision (rateSteady) over given readings, and the loop's bounds (warmUp).
import t from 'tap';
import { rateSteady, warmUp, WARM_REQUESTS, type WarmMark } from '../../bench/tcp.js';

/** Readings every 250 ms of a count that completed `rates[i]` k requests a second in step i. */
function marks(ratesK: number[]): WarmMark[] {
  const out: WarmMark[] = [{ at: 0, done: 0 }];
  for (const r of ratesK) out.push({ at: out.length * 250, done: out[out.length - 1]!.done + r * 250 });
  return out;
}

t.test('a climbing rate is not steady; a flat one is', async (t) => {
  // A fresh serve --strict, as measured (k requests/s every 250 ms): still climbing after its pause at 55.
  const strict = [11, 37, 52, 58, 55, 55, 70, 73, 79, 66, 78, 78, 77, 67];
  t.notOk(rateSteady(marks(strict.slice(0, 8))), 'the first two seconds climb');
  t.notOk(rateSteady(marks(strict.slice(0, 10))), 'the pause at 55 is not a steady state (second-long windows)');
  t.ok(rateSteady(marks(strict)), 'steady once the last second is within 5 % of the one before');
  t.ok(rateSteady(marks([80, 80, 80, 80, 80, 80, 80, 80])), 'flat');
  t.ok(rateSteady(marks([80, 80, 80, 80, 70, 70, 70, 70])), 'falling is not climbing');
  t.notOk(rateSteady(marks([80, 80, 80, 80, 85, 85, 85, 85])), '6 % up: still climbing');
});

t.test('fewer readings than two windows: not steady; the window and the margin are parameters', async (t) => {
  t.notOk(rateSteady(marks([80, 80, 80, 80, 80, 80, 80])), 'seven steps of 250 ms: under two windows of four');
  t.ok(rateSteady(marks([80, 80]), 1), 'windows of one step');
  t.notOk(rateSteady(marks([80, 100]), 1, 1.2), '25 % up with a 20 % margin');
  t.ok(rateSteady(marks([80, 90]), 1, 1.2), '12.5 % up with a 20 % margin');
});

t.test('warmUp: at least warmMs and WARM_REQUESTS; at most 10 × warmMs when the rate never settles', async (t) => {
  const t0 = performance.now();
  // Always climbing (the count grows with the square of the time): the warm-up ends at its cap.
  const climbing = (): number => WARM_REQUESTS + Math.round(((performance.now() - t0) / 10) ** 2);
  const capped = await warmUp({ warmMs: 20 }, climbing);
  t.ok(capped >= 200, `a climbing rate runs to the cap (${capped.toFixed(0)} ms ≥ 10 × 20 ms)`);
  // A steady rate but fewer than WARM_REQUESTS requests: not done either.
  let calls = 0;
  const few = (): number => {
    calls++;
    return 10;
  };
  const short = await warmUp({ warmMs: 20 }, few);
  t.ok(short >= 200, `under ${WARM_REQUESTS} requests it runs to the cap (${short.toFixed(0)} ms)`);
  t.ok(calls >= 2, 'the count was read along the way');
  // Steady and past WARM_REQUESTS from the start: it ends after two windows of readings, never before warmMs.
  const t1 = performance.now();
  let reads = 0;
  const steady = (): number => {
    reads++;
    return WARM_REQUESTS + Math.round(performance.now() - t1) * 100;
  };
  const took = await warmUp({ warmMs: 20 }, steady);
  t.ok(took >= 20, `at least warmMs (${took.toFixed(0)} ms)`);
  t.ok(reads >= 9 || took >= 200, `two windows of four readings after the first, or the cap on a loaded machine (${reads} readings, ${took.toFixed(0)} ms)`);
});
