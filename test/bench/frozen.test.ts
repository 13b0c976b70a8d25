// bench/frozen.ts: the canary for time the machine takes from every thread (late wake-ups of a thread sleeping SLEEP_MS).
import t from 'tap';
import { FROZEN_MIN_MS, SLEEP_MS, frozenFrom, startCanary } from '../../bench/frozen.js';

t.test('a wake-up at least FROZEN_MIN_MS later than asked is frozen time; its lateness counts, not its sleep', async (t) => {
  // Wake-ups every SLEEP_MS, then one 12 ms after the one before (10 ms late), one FROZEN_MIN_MS - 0.5 late (not counted), one exactly FROZEN_MIN_MS late.
  const w = [0, SLEEP_MS, 2 * SLEEP_MS];
  w.push(w[2]! + SLEEP_MS + 10);
  w.push(w[3]! + SLEEP_MS + FROZEN_MIN_MS - 0.5);
  w.push(w[4]! + SLEEP_MS + FROZEN_MIN_MS);
  const s = frozenFrom(w);
  t.equal(s.events, 2);
  t.equal(s.frozenMs, 10 + FROZEN_MIN_MS);
  t.equal(s.spanMs, Math.round(w[5]!));
  t.equal(s.frozenMsPerSecond, Math.round(((10 + FROZEN_MIN_MS) / w[5]!) * 10_000) / 10);
  t.same(frozenFrom([]), { events: 0, frozenMs: 0, spanMs: 0, frozenMsPerSecond: 0 });
});

t.test('the canary thread runs until stopped and reports the span it watched', async (t) => {
  const canary = await startCanary();
  await new Promise((r) => setTimeout(r, 150));
  const s = await canary.stop();
  // By order, not speed: it ran before the 150 ms began and woke after stop().
  t.ok(s.spanMs >= 150 - 2, `span ${s.spanMs} ms`);
  t.ok(s.events >= 0 && s.frozenMs >= 0 && s.frozenMsPerSecond >= 0 && s.frozenMsPerSecond <= 1000);
  t.ok(s.events === 0 || s.frozenMs >= FROZEN_MIN_MS * s.events, 'each event at least FROZEN_MIN_MS');
});
