// bench/stalls.ts (probe-tcp.ts): the gaps between consecutive completions of a closed loop that count as stalls.
import t from 'tap';
import { STALLS_LISTED, stalls } from '../../bench/stalls.js';

t.test('gaps of at least the bound are stalls; the span, total, share and longest gap follow', async (t) => {
  // Completions every 10 µs, then a 3,000 µs gap, every 10 µs again, a 1,999 µs gap (not a stall), a 2,000 µs one (a stall).
  const times = [0, 10, 20, 3020, 3030, 5029, 7029, 7039];
  const s = stalls(times, 2000);
  t.equal(s.completions, 8);
  t.equal(s.spanUs, 7039);
  t.equal(s.count, 2);
  t.equal(s.totalUs, 5000);
  t.equal(s.maxGapUs, 3000);
  t.equal(s.share, 5000 / 7039);
  t.same(s.list, [[20, 3000], [5029, 2000]], 'each stall from the completion before it');
});

t.test('the list stops at STALLS_LISTED; the count and total go on', async (t) => {
  const times = Float64Array.from({ length: STALLS_LISTED + 51 }, (_, i) => i * 3000);
  const s = stalls(times, 2000);
  t.equal(s.count, STALLS_LISTED + 50);
  t.equal(s.totalUs, (STALLS_LISTED + 50) * 3000);
  t.equal(s.list.length, STALLS_LISTED);
});

t.test('no stall in a steady stream, whatever its length; fewer than two completions have no span', async (t) => {
  const steady = Float64Array.from({ length: 10_000 }, (_, i) => i * 5);
  const s = stalls(steady, 2000);
  t.same([s.count, s.totalUs, s.maxGapUs, s.share], [0, 0, 5, 0]);
  t.same(stalls([], 2000), { completions: 0, spanUs: 0, count: 0, totalUs: 0, maxGapUs: 0, share: 0, list: [] });
  t.same(stalls([42], 2000), { completions: 1, spanUs: 0, count: 0, totalUs: 0, maxGapUs: 0, share: 0, list: [] });
});

t.test('a time earlier than the one before it is no gap', async (t) => {
  const s = stalls([0, 5000, 4000, 4010], 2000);
  t.equal(s.count, 1);
  t.equal(s.totalUs, 5000);
  t.equal(s.maxGapUs, 5000);
});
