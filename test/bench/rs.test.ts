// bench rs on a tiny plan (the base cell, N = 5, and the base cell over TCP): the report's shape —
// both systems in every cell, round trips per operation counted, the ratios named as documented,
// a history row per cell, non-empty SVG charts — and, without the PRISM-RS factory, a report that
// says so and carries no ratio. Shapes only, never timings. Bounded: well under 60 s.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderSvg } from '../../bench/charts.js';
import { readHistory, recordRun } from '../../bench/history.js';
import { atMix, RS_BASE_CELL, RS_FULL_PLAN, RS_QUICK_PLAN, runRsBench, type RsPlan } from '../../bench/rs.js';
import { lockBasedFactory, RS_FACTORIES } from '../../bench/rs-systems.js';

const dir = mkdtempSync(join(tmpdir(), 'pmrpc-bench-rs-test-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const TINY: RsPlan = {
  cellMs: 60,
  tcpCellMs: 100,
  windows: 2,
  blocks: 16,
  cells: [RS_BASE_CELL, { ...RS_BASE_CELL, nodes: 5 }, { ...RS_BASE_CELL, link: 'tcp', clients: 1 }],
};

t.test('the plans cover the matrix: N = 3 / 5, 1–8 clients, 64 B – 4 KiB, 50 / 95 % reads, uniform / Zipf, in-process and TCP', async (t) => {
  for (const plan of [RS_QUICK_PLAN, RS_FULL_PLAN]) {
    const c = plan.cells;
    t.same(new Set(c.map((x) => x.nodes)), new Set([3, 5]));
    t.ok(c.some((x) => x.clients === 1) && c.some((x) => x.clients === 8));
    t.ok(c.some((x) => x.blockBytes === 64) && c.some((x) => x.blockBytes === 4096));
    t.same(new Set(c.map((x) => x.readPct)), new Set([50, 95]));
    t.same(new Set(c.map((x) => x.dist)), new Set(['uniform', 'zipf']));
    t.same(new Set(c.map((x) => x.link)), new Set(['in-process', 'tcp']));
  }
  t.ok(RS_FULL_PLAN.cells.length > 90, 'the full plan is the cross product');
  t.same(RS_FACTORIES.map((f) => f.name), ['prism-rs', 'lock-based', 'lock-paper'], "PRISM-RS, the SIGMOD'23-guided baseline and the paper's lock → access → unlock one, in one run");
});

t.test('a tiny run: both systems per cell, round trips counted, ratios, history and charts', async (t) => {
  const progress: number[] = [];
  const report = await runRsBench({ quick: true, seed: 3, progress: (d) => progress.push(d) }, TINY);
  t.equal(report.suite, 'rs');
  t.ok(progress.length >= 4, 'progress reported');
  t.equal(report.rows.length, TINY.cells.length * 3, 'one row per system per cell');
  for (const system of ['prism-rs', 'lock-based', 'lock-paper']) {
    const rows = report.rows.filter((r) => r.system === system);
    t.equal(rows.length, TINY.cells.length, `${system}: every cell`);
    for (const r of rows) {
      const name = `${system} ${String(r.link)} n${String(r.nodes)}`;
      t.equal(r.errors, 0, `${name}: no errors`);
      t.ok(Number(r.reads) + Number(r.writes) > 0, `${name}: operations measured`);
      t.ok(Number(r.roundTripsPerOp) >= 1, `${name}: ${String(r.roundTripsPerOp)} round trips per op`);
      t.ok([r.opsPerSecond, r.p50Ns, r.p99Ns].every((v) => Number.isFinite(Number(v)) && Number(v) >= 0), `${name}: finite figures`);
      if (r.link === 'tcp') t.equal(r.opsPerCpuSecond, null, `${name}: no CPU figure over TCP (the replicas run in another process)`);
      else t.ok(Number(r.opsPerCpuSecond) > 0, `${name}: operations per CPU second`);
      // NIC work requests per operation: counted in-process (the replicas' NICs are this process's), null over TCP.
      if (r.link === 'tcp') t.equal(r.workRequestsPerOp, null, `${name}: no NIC count over TCP`);
      else t.ok(Number(r.workRequestsPerOp) >= 2, `${name}: ${String(r.workRequestsPerOp)} NIC work requests per op`);
      if (system === 'lock-paper') t.ok(Number(r.roundTripsPerOp) >= 3, `${name}: lock → access → unlock, ≥ 3 round trips per op`);
    }
  }
  for (const k of ['throughputVsLockBased', 'p50VsLockBased', 'p99VsLockBased', 'readP50VsLockBased', 'roundTripsPerOpVsLockBased', 'throughputVsLockBased_n5', 'throughputVsLockBased_geomean', 'cpuThroughputVsLockBased', 'cpuThroughputVsLockBased_geomean', 'workRequestsPerOpVsLockBased', 'throughputVsPaperLockBased', 'roundTripsPerOpVsPaperLockBased']) {
    t.ok(Number.isFinite(report.ratios[k]) && report.ratios[k]! > 0, `${k} = ${report.ratios[k]}`);
  }
  t.match(report.summary.join('\n'), /throughputVsLockBased = .*PRISM paper on hardware: ≈ 1\.5/);
  t.equal(report.config.timing, 'measured wall clock');

  const db = join(dir, 'history.sqlite');
  const id = recordRun(db, report, { startedAt: new Date(0).toISOString(), seed: 3, quick: true, command: 'test' });
  const [run] = readHistory(db, { suite: 'rs' });
  t.equal(run?.id, id);
  t.equal(run?.cells, report.rows.length, 'one history row per cell');
  t.equal(run?.ratios.throughputVsLockBased, report.ratios.throughputVsLockBased);

  t.same(report.charts?.map((c) => c.name), ['throughput', 'latency-p50', 'latency-p99', 'cpu-throughput', 'round-trips']);
  for (const c of report.charts ?? []) {
    const svg = await renderSvg(c.spec);
    t.match(svg, /^<svg/, `${c.name}: an SVG`);
    t.ok(svg.length > 1000, `${c.name}: not empty`);
  }
});

t.test('without the PRISM-RS factory: the baseline alone, said plainly, no ratio', async (t) => {
  const report = await runRsBench({ quick: true, seed: 4, progress: () => {} }, { ...TINY, cells: [RS_BASE_CELL] }, [lockBasedFactory]);
  t.same(report.ratios, {});
  t.match(report.summary[0], /PRISM-RS is not built yet/);
  t.same(report.rows.map((r) => r.system), ['lock-based']);
});

t.test('round trips per operation are taken at the cell\'s mix, not the window\'s draw', async (t) => {
  t.equal(atMix(95, 1, 2), 0.95 + 0.1);
  t.equal(atMix(50, 1, 3), 2);
  t.equal(atMix(100, 1.5, undefined), 1.5, 'no writes in the mix: none needed');
  t.equal(atMix(0, undefined, 2), 2);
  t.equal(atMix(95, 1, undefined), undefined, 'a kind of the mix not measured: no figure');
  t.equal(atMix(95, undefined, 2), undefined);
});
