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

  // The work per commit (bench/nic-work.ts): round trips, NIC work requests, CPU by role.
  const rowOf = (system: string, cell: string): Record<string, unknown> => report.rows.find((r) => r.system === system && r.cell === cell)!;
  for (const r of report.rows) {
    const name = `${String(r.system)} ${String(r.cell)}`;
    for (const k of ['roundTripsPerCommit', 'workRequestsPerCommit', 'cpuUsPerCommit', 'nicCpuUsPerCommit']) t.ok(Number.isFinite(r[k]) && Number(r[k]) > 0, `${name}: ${k} = ${String(r[k])}`);
    // The client's share is the remainder of the process's CPU after the NIC's and the host's wall-timed
    // sections, clamped at 0 (bench/tx.ts): on a loaded machine a preempted section can cover it all.
    t.ok(Number.isFinite(r.clientCpuUsPerCommit) && Number(r.clientCpuUsPerCommit) >= 0, `${name}: clientCpuUsPerCommit = ${String(r.clientCpuUsPerCommit)}`);
    t.ok(Number.isFinite(r.hostCpuUsPerCommit) && Number(r.hostCpuUsPerCommit) >= 0, `${name}: hostCpuUsPerCommit = ${String(r.hostCpuUsPerCommit)}`);
    t.ok(Number.isFinite(r.hostPassesPerCommit) && (r.system === 'ford' ? Number(r.hostPassesPerCommit) === 0 : Number(r.hostPassesPerCommit) >= 0), `${name}: hostPassesPerCommit = ${String(r.hostPassesPerCommit)}`);
    t.equal(r.roundTripsPerCommit, r.commitRoundTrips, `${name}: roundTripsPerCommit is the commit round trips`);
    t.equal(r.workRequestsPerCommit, r.wrsPerCommit, `${name}: workRequestsPerCommit is the work requests per commit`);
    t.ok(Number.isFinite(r.accountingCpuUsPerCommit) && Number(r.accountingCpuUsPerCommit) >= 0, `${name}: accountingCpuUsPerCommit = ${String(r.accountingCpuUsPerCommit)}`);
    const parts = Number(r.clientCpuUsPerCommit) + Number(r.nicCpuUsPerCommit) + Number(r.hostCpuUsPerCommit) + Number(r.accountingCpuUsPerCommit);
    t.ok(Math.abs(parts - Number(r.cpuUsPerCommit)) <= 0.01 || parts >= Number(r.cpuUsPerCommit), `${name}: the roles cover the process's CPU (${parts} vs ${String(r.cpuUsPerCommit)})`);
  }
  for (const c of TINY.cells) {
    const n = txCellName(c);
    // FaRM-style locks, applies and unlocks through the shard's CPU: its host CPU is never 0.
    t.ok(Number(rowOf('farm', n).hostCpuUsPerCommit) > 0, `farm ${n}: the shard CPU worked`);
  }
  for (const [ratio, field] of [['roundTripsPerCommitVsFarm', 'roundTripsPerCommit'], ['hostCpuPerCommitVsFarm', 'hostCpuUsPerCommit'], ['workRequestsPerCommitVsFarm', 'workRequestsPerCommit']] as const) {
    const qs: number[] = [];
    for (const c of TINY.cells) {
      const n = txCellName(c);
      const q = Number(rowOf('prism-tx', n)[field]) / Number(rowOf('farm', n)[field]);
      qs.push(q);
      const v = report.ratios[`${ratio}_${n}`];
      t.ok(Number.isFinite(v) && v! >= 0, `${ratio}_${n} = ${v}`);
      t.ok(Math.abs(v! - q) <= 0.0005 + 1e-9, `${ratio}_${n} = ${v} is the rows' quotient ${q}`);
    }
    const geo = qs.some((q) => q === 0) ? 0 : Math.exp(qs.reduce((a, q) => a + Math.log(q), 0) / qs.length);
    const v = report.ratios[ratio];
    t.ok(Number.isFinite(v) && v! >= 0, `${ratio} = ${v}`);
    t.ok(Math.abs(v! - geo) <= 0.0005 + 1e-9, `${ratio} = ${v} is the geometric mean of the cells' quotients ${geo}`);
  }
  t.ok(report.ratios.roundTripsPerCommitVsFarm! > 0, 'roundTripsPerCommitVsFarm > 0');

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
