// bench tx on a tiny plan: the report's shape — the three systems in every cell, every system
// committed transactions and passed the list-append (Elle-style) and bank checks, commit round
// trips counted, the ratios named as documented (per cell and geometric mean), a history row per
// cell, non-empty SVG charts. Shapes only, never timings.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderSvg } from '../../bench/charts.js';
import { readHistory, recordRun } from '../../bench/history.js';
import { runTxBench, TX_FULL_PLAN, TX_QUICK_PLAN, txCellName, type TxCheckVerdict, type TxPlan } from '../../bench/tx.js';
import { TX_FACTORIES } from '../../bench/tx-systems.js';

const dir = mkdtempSync(join(tmpdir(), 'pmrpc-bench-tx-test-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const TINY: TxPlan = {
  cellMs: 80,
  windows: 1,
  ycsbKeys: 64,
  accounts: 50,
  itemsPerShard: 4000,
  checkTxPerClient: 12,
  cells: [
    { workload: 'ycsb-low', shards: 2, clients: 2 },
    { workload: 'smallbank', shards: 2, clients: 2 },
  ],
};

t.test('the plans: YCSB-T low and high contention and SmallBank; the three systems', async (t) => {
  for (const plan of [TX_QUICK_PLAN, TX_FULL_PLAN]) t.same(new Set(plan.cells.map((c) => c.workload)), new Set(['ycsb-low', 'ycsb-high', 'smallbank']));
  t.same(TX_FACTORIES.map((f) => f.name), ['prism-tx', 'farm', 'ford']);
});

t.test('a tiny run: every system commits and passes the checks; ratios, history and charts', async (t) => {
  const progress: number[] = [];
  const report = await runTxBench({ quick: true, seed: 5, progress: (d) => progress.push(d) }, TINY);
  t.equal(report.suite, 'tx');
  t.ok(progress.length >= 3, 'progress reported');
  const checks = report.config.checks as TxCheckVerdict[];
  t.equal(checks.length, 6, 'list-append and bank for each system');
  for (const c of checks) {
    t.same(c.problems, [], `${c.system} ${c.workload}: no anomaly`);
    t.ok(c.committed > 0, `${c.system} ${c.workload}: ${c.committed} committed`);
  }
  t.equal(report.rows.length, TINY.cells.length * 3, 'one row per system per cell');
  for (const r of report.rows) {
    const name = `${String(r.system)} ${String(r.cell)}`;
    t.ok(Number(r.commits) > 0, `${name}: ${String(r.commits)} commits`);
    t.equal(r.errors, 0, `${name}: no errors`);
    t.ok(Number(r.commitRoundTrips) >= 1, `${name}: ${String(r.commitRoundTrips)} commit round trips`);
    t.ok(Number(r.abortRate) >= 0 && Number(r.abortRate) < 1, `${name}: abort rate ${String(r.abortRate)}`);
    t.ok(Number(r.wrsPerCommit) > 0, `${name}: work requests per commit counted`);
  }
  const keys = ['throughputVsFarm', 'latencyVsFarm', 'p99VsFarm', 'throughputVsFord', 'latencyVsFord', 'cpuThroughputVsFarm'];
  for (const c of TINY.cells) keys.push(`throughputVsFarm_${txCellName(c)}`, `latencyVsFarm_${txCellName(c)}`, `throughputVsFord_${txCellName(c)}`);
  for (const k of keys) t.ok(Number.isFinite(report.ratios[k]) && report.ratios[k]! > 0, `${k} = ${report.ratios[k]}`);
  t.match(report.summary.join('\n'), /throughputVsFarm = .*PRISM-TX paper on hardware: 1\.2/);

  const db = join(dir, 'history.sqlite');
  const id = recordRun(db, report, { startedAt: new Date(0).toISOString(), seed: 5, quick: true, command: 'test' });
  const [run] = readHistory(db, { suite: 'tx' });
  t.equal(run?.id, id);
  t.equal(run?.cells, report.rows.length, 'one history row per cell');
  t.equal(run?.ratios.throughputVsFarm, report.ratios.throughputVsFarm);

  t.same(report.charts?.map((c) => c.name), ['throughput', 'latency-p50', 'latency-p99', 'abort-rate', 'round-trips']);
  for (const c of report.charts ?? []) {
    const svg = await renderSvg(c.spec);
    t.match(svg, /^<svg/, `${c.name}: an SVG`);
    t.ok(svg.length > 1000, `${c.name}: not empty`);
  }
});
