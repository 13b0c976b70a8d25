// bench tcp's alternated passes (bench/tcp.ts): each figure of a cell is its median over the
// passes (medianOf), so one pass in a slow streak of the host moves no figure and no ratio.
import t from 'tap';
import { medianOf } from '../../bench/tcp.js';

t.test('each numeric field is its own median; a null in any pass stays null; other fields come from the first pass', async (t) => {
  const passes = [
    { opsPerSecond: 280_000, p50us: 190, serverCpuUsPerOp: 3.3 as number | null, name: 'wflush' },
    { opsPerSecond: 140_000, p50us: 400, serverCpuUsPerOp: null, name: 'wflush' }, // a slow streak
    { opsPerSecond: 290_000, p50us: 185, serverCpuUsPerOp: 3.2, name: 'wflush' },
  ];
  const m = medianOf(passes);
  t.equal(m.opsPerSecond, 280_000, 'the slow pass does not move the rate');
  t.equal(m.p50us, 190);
  t.equal(m.serverCpuUsPerOp, null, 'unknown in one pass: unknown');
  t.equal(m.name, 'wflush');
  t.equal(medianOf(passes.slice(0, 2)).opsPerSecond, 210_000, 'an even count: the mean of the middle two');
  t.equal(medianOf([passes[1]!]), passes[1], 'one pass: itself');
  t.throws(() => medianOf([]), RangeError);
});

t.test('a ratio of medians resists one slow cell on either side', async (t) => {
  // Echo and wflush of three passes; the echo's second and wflush's third in a slow streak.
  const echo = medianOf([{ opsPerSecond: 1_200_000 }, { opsPerSecond: 600_000 }, { opsPerSecond: 1_250_000 }]);
  const wflush = medianOf([{ opsPerSecond: 285_000 }, { opsPerSecond: 280_000 }, { opsPerSecond: 150_000 }]);
  t.equal(Math.round((wflush.opsPerSecond / echo.opsPerSecond) * 1000) / 1000, 0.233, '280 k ÷ 1.2 M');
});
