// bench sqlite on a tiny plan: both systems measured in one run, the disk they sync to named, the
// msync's placement stated, and the headline ratio is the best strategy's.
import t from 'tap';
import { runStrictBench, STRICT_QUICK, type StrictPlan } from '../../bench/sqlite-strict.js';
import { closeBenchPool } from '../../bench/flush-cell.js';

t.teardown(() => closeBenchPool());

t.test('bench sqlite: rows for SQLite and each strategy, the disk named, the best ratio the headline', async (t) => {
  const plan: StrictPlan = { ...STRICT_QUICK, cell: { warmupMs: 20, measureMs: 150, drainMsMax: 10_000 }, passes: 1, strategies: ['wrflush', 'gpspm'] };
  const report = await runStrictBench({ quick: true, seed: 5, progress: () => undefined }, plan);
  t.equal(report.rows.length, 3, 'SQLite and two strategies');
  const config = report.config as { disk: { device: string; type: string; mountedOn: string }; pmrpc: string };
  t.not(config.disk.device, 'unknown', `the disk is named (${config.disk.device}, ${config.disk.type})`);
  t.match(config.pmrpc, /msync on the JS thread/, 'the msync placement is stated (msyncInline)');
  t.match(report.summary.join('\n'), /disk: \S+ \(/, 'the summary names the disk');
  const r = report.ratios;
  const each = [r.strictGroupCommitVsSqliteThroughput_wrflush!, r.strictGroupCommitVsSqliteThroughput_gpspm!];
  for (const x of each) t.ok(Number.isFinite(x) && x > 0, `a ratio measured: ${x}`);
  t.equal(r.strictGroupCommitVsSqliteThroughput_best, Math.max(...each), 'the headline is the best strategy\'s ratio');
});
