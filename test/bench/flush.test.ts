// bench flush on a tiny matrix (every strategy, 64 B, in-process and TCP, strict vs better-sqlite3):
// the report's structure and sanity — every strategy present, processed == acknowledged == issued,
// finite ratios, a history row per cell, non-empty SVG charts. Bounded: well under 60 s.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RPC_STRATEGIES } from '../../src/rpc/index.js';
import { renderSvg } from '../../bench/charts.js';
import { FULL_PLAN, planCells, QUICK_PLAN, runFlushBench, type FlushPlan } from '../../bench/flush.js';
import { readHistory, recordRun } from '../../bench/history.js';

const dir = mkdtempSync(join(tmpdir(), 'pmrpc-bench-flush-test-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const TINY: FlushPlan = {
  cell: { warmupMs: 20, measureMs: 120, drainMsMax: 10_000 },
  headlineRepeats: 1,
  payloadSizes: [64],
  clients: [],
  outstanding: [],
  tcp: { payloadSizes: [64], clients: [1] },
  sqliteSizes: [64],
  sqliteGroup: 4,
};

t.test('the quick and full plans cover every strategy, in-process and over TCP; the full one sweeps every dimension', async (t) => {
  for (const plan of [QUICK_PLAN, FULL_PLAN]) {
    const cells = planCells(plan);
    for (const link of ['in-process', 'tcp']) t.same(new Set(cells.filter((c) => c.config.link === link).map((c) => c.config.strategy)), new Set(RPC_STRATEGIES), `${link}: all 9`);
  }
  const full = planCells(FULL_PLAN).map((c) => c.config);
  t.same([...new Set(full.filter((c) => !c.strict).map((c) => c.payloadBytes))].sort((a, b) => a - b), [64, 256, 1024, 4096, 16384, 65536]);
  t.ok(new Set(full.map((c) => c.clients)).size > 1 && new Set(full.map((c) => c.outstanding)).size > 1 && new Set(full.map((c) => c.handlerUs)).size > 1);
});

t.test('a tiny run: every strategy, sane counts, finite ratios, history and charts', async (t) => {
  const progress: number[] = [];
  const started = Date.now();
  const report = await runFlushBench({ quick: true, seed: 5, progress: (d) => progress.push(d) }, TINY);
  t.comment(`tiny run: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  t.equal(report.suite, 'flush');
  t.ok(progress.length > 10 && progress.at(-1)! > 0, 'progress reported');
  const cells = report.rows.filter((r) => r.group !== 'sqlite');
  for (const link of ['in-process', 'tcp']) {
    t.same(new Set(cells.filter((r) => r.link === link && r.group !== 'strict').map((r) => r.strategy)), new Set(RPC_STRATEGIES), `${link}: every strategy has a row`);
  }
  for (const r of cells) {
    const name = `${String(r.link)} ${String(r.strategy)}${r.strict ? ' strict' : ''}`;
    t.equal(r.errors, 0, `${name}: no errors`);
    t.ok(Number(r.issued) > 0, `${name}: requests issued`);
    t.equal(r.processed, r.acknowledged, `${name}: processed == acknowledged`);
    t.equal(r.acknowledged, r.issued, `${name}: every request acknowledged`);
    // A cell of this tiny plan may see no result inside its short window on a loaded machine (a
    // strict cell msyncs): figures are finite and non-negative, and most cells measure something.
    t.ok([r.throughputPerSecond, r.durableP99Us, r.resultP99Us].every((v) => Number.isFinite(Number(v)) && Number(v) >= 0), `${name}: throughput and latencies are finite`);
  }
  const measured = cells.filter((r) => r.link === 'in-process' && Number(r.throughputPerSecond) > 0);
  t.ok(measured.length > cells.filter((r) => r.link === 'in-process').length / 2, `${measured.length} in-process cells measured a throughput`);
  // Every ratio is measured (finite, non-negative) or named as not measured — a cell of this tiny
  // plan may see no request in its 120 ms window on a loaded machine — never Infinity or NaN.
  for (const [k, v] of Object.entries(report.ratios)) t.ok(Number.isFinite(v) && v >= 0, `${k} = ${v}`);
  const unmeasured = report.unmeasured ?? [];
  for (const k of ['decoupledVsCoupledThroughput', 'decoupledVsCoupledP99', 'rawVsWflush', 'noneVsBestDecoupled', 'pmrpcStrictVsSqliteTxn_64B_Throughput', 'pmrpcStrictVsSqliteGroup_64B_Throughput', 'pmrpcVsSqliteSyncOff_64B_Throughput', 'decoupledVsCoupledThroughputTcp', 'decoupledVsCoupledP99Tcp', 'tcpOneOutstandingP50OverEchoRtt']) {
    t.ok(k in report.ratios !== unmeasured.includes(k), `${k}: ${k in report.ratios ? `= ${report.ratios[k]}` : 'named as not measured'}`);
  }
  if (unmeasured.length > 0) t.match(report.summary.join('\n'), /not measured \(a cell of the ratio saw no request/, 'the summary names what was not measured');
  t.ok(Object.keys(report.ratios).length > unmeasured.length, `most ratios measured (${unmeasured.length} not)`);
  t.ok(report.rows.some((r) => r.group === 'sqlite' && r.mode === 'txn') && report.rows.some((r) => r.group === 'sqlite' && r.mode === 'group'), 'better-sqlite3 rows');
  t.match(report.summary.join('\n'), /decoupledVsCoupledThroughput = .*SC'21: ×1\.9/);
  t.match(report.summary.join('\n'), /decoupledVsCoupledP99 += .*SC'21: ×0\.51/);

  const db = join(dir, 'history.sqlite');
  const id = recordRun(db, report, { startedAt: new Date(0).toISOString(), seed: 5, quick: true, command: 'test' });
  const [run] = readHistory(db, { suite: 'flush' });
  t.equal(run?.id, id);
  t.equal(run?.cells, report.rows.length, 'one history row per cell');
  t.equal(run?.ratios.decoupledVsCoupledThroughput, report.ratios.decoupledVsCoupledThroughput);

  t.same(report.charts?.map((c) => c.name), ['throughput-by-payload', 'latency-by-strategy', 'decoupled-vs-coupled', 'vs-sqlite']);
  for (const c of report.charts ?? []) {
    const svg = await renderSvg(c.spec);
    t.match(svg, /^<svg/, `${c.name}: an SVG`);
    t.ok(svg.length > 1000, `${c.name}: not empty (${svg.length} chars)`);
  }
});
