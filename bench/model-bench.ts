/**
 * `pmrpc bench <suite> --model PROFILE`: the suite's cells also in MODELLED time (the same code on
 * the World with the cost model), printed beside the MEASURED figures and charted with them.
 * Every column and series says which it is: `modelled…` (virtual time from the cost model) or the
 * suite's own (wall clock). Suites without a modelled counterpart yet leave their report as is and
 * say so.
 */
import type { RpcStrategy } from '../src/rpc/index.js';
import { costProfile } from '../src/testing/index.js';
import type { ChartSpec } from './charts.js';
import { modelKvCell, modelRsCell } from './model-apps.js';
import { modelFlushCell } from './model-flush.js';
import { modelTxCell } from './model-tx.js';
import type { TxSystemName } from './tx-systems.js';
import type { TxWorkloadName } from './tx-workloads.js';
import type { BenchOptions, BenchReport } from './types.js';

const r3 = (x: number): number => Math.round(x * 1000) / 1000;

/** Requests per client of a modelled cell. */
const requestsFor = (o: BenchOptions): number => (o.quick ? 60 : 200);

/** A grouped bar chart of one metric, measured beside modelled, per cell label. */
function measuredVsModelledChart(name: string, title: string, yTitle: string, rows: Array<{ cell: string; measured: number; modelled: number }>): ChartSpec {
  return {
    name,
    spec: {
      title,
      width: 560,
      height: 300,
      data: { values: rows.flatMap((r) => [{ cell: r.cell, time: 'measured (wall clock)', value: r.measured }, { cell: r.cell, time: 'modelled (cost model)', value: r.modelled }]) },
      mark: 'bar',
      encoding: {
        x: { field: 'cell', type: 'nominal', sort: null, title: null },
        xOffset: { field: 'time' },
        y: { field: 'value', type: 'quantitative', scale: { type: 'symlog' }, title: yTitle },
        color: { field: 'time', type: 'nominal', title: null },
      },
    },
  };
}

/** Adds modelled columns, summary lines and charts to a flush report (its in-process payload cells). */
export async function addModelledFlush(rep: BenchReport, o: BenchOptions & { model: string }): Promise<BenchReport> {
  const m = costProfile(o.model);
  const cells = rep.rows.filter((r) => r.group === 'payload' && r.link === 'in-process');
  let done = 0;
  const lines: string[] = [`MODELLED time (profile ${m.name}, virtual µs from the cost model — not measured; docs/model.md) beside MEASURED (wall clock), headline configuration:`];
  lines.push(`  ${'strategy'.padEnd(8)} ${'payload'.padStart(7)}  ${'measured req/s'.padStart(14)} ${'modelled req/s'.padStart(14)}  ${'measured ack p50/p99 µs'.padStart(24)} ${'modelled ack p50/p99 µs'.padStart(24)}`);
  const chartT: Array<{ cell: string; measured: number; modelled: number }> = [];
  const chartL: Array<{ cell: string; measured: number; modelled: number }> = [];
  for (const r of cells) {
    o.progress(done++, cells.length, `modelled ${String(r.strategy)} ${String(r.payloadBytes)} B`);
    const res = await modelFlushCell(
      { strategy: r.strategy as RpcStrategy, payloadBytes: Number(r.payloadBytes), clients: Number(r.clients), outstanding: Number(r.outstanding), handlerUs: Number(r.handlerUs), placement: r.placement === 'pool' ? 'pool' : 'inline', ddio: r.ddio === true, ringSlots: Number(r.ringSlots) || 16 },
      m, o.seed, requestsFor(o),
    );
    Object.assign(r, {
      modelProfile: m.name,
      modelledThroughputPerSecond: res.throughputPerSecond,
      modelledDurableP50Us: res.durableP50Us,
      modelledDurableP99Us: res.durableP99Us,
      modelledResultP50Us: res.resultP50Us,
      modelledResultP99Us: res.resultP99Us,
    });
    lines.push(`  ${String(r.strategy).padEnd(8)} ${`${String(r.payloadBytes)} B`.padStart(7)}  ${String(r.throughputPerSecond).padStart(14)} ${String(res.throughputPerSecond).padStart(14)}  ${`${String(r.durableP50Us)}/${String(r.durableP99Us)}`.padStart(24)} ${`${res.durableP50Us}/${res.durableP99Us}`.padStart(24)}`);
    const label = `${String(r.strategy)} ${String(r.payloadBytes)} B`;
    chartT.push({ cell: label, measured: Number(r.throughputPerSecond), modelled: res.throughputPerSecond });
    chartL.push({ cell: label, measured: Number(r.durableP50Us), modelled: res.durableP50Us });
  }
  // Modelled decoupled vs coupled, per payload, as the measured ratios are taken.
  const sizes = [...new Set(cells.map((r) => Number(r.payloadBytes)))];
  const decoupled = ['wflush', 'sflush', 'wrflush', 'srflush', 'raw', 'gpspm'];
  for (const size of sizes) {
    const at = cells.filter((r) => Number(r.payloadBytes) === size);
    const best = (set: string[]): Record<string, unknown> | undefined => at.filter((r) => set.includes(String(r.strategy))).sort((a, b) => Number(b.modelledThroughputPerSecond) - Number(a.modelledThroughputPerSecond))[0];
    const d = best(decoupled);
    const c = best(['farm', 'darpc']);
    if (d === undefined || c === undefined) continue;
    const t = r3(Number(d.modelledThroughputPerSecond) / Number(c.modelledThroughputPerSecond));
    const p = r3(Number(d.modelledDurableP99Us) / Number(c.modelledDurableP99Us));
    rep.ratios[`modelled_decoupledVsCoupledThroughput_${size}B`] = t;
    rep.ratios[`modelled_decoupledVsCoupledP99_${size}B`] = p;
    lines.push(`  modelled decoupled vs coupled at ${size} B: throughput ×${t} (${String(d.strategy)} vs ${String(c.strategy)}), p99 ×${p}; measured: ×${rep.ratios[`decoupledVsCoupledThroughput_${size}B`] ?? '-'}`);
  }
  o.progress(cells.length, cells.length, 'modelled cells done');
  rep.summary.push(...lines);
  rep.config.model = { profile: m.name, parameters: m, requestsPerClient: requestsFor(o), note: 'modelled figures are virtual time from the cost model (docs/model.md), columns modelled*; every other figure is wall clock' };
  rep.charts = [
    ...(rep.charts ?? []),
    measuredVsModelledChart('measured-vs-modelled-throughput', `requests/s per cell: measured (wall clock) vs modelled (${m.name})`, 'requests per second (symlog)', chartT),
    measuredVsModelledChart('measured-vs-modelled-latency', `acknowledgement p50 per cell: measured (wall clock) vs modelled (${m.name})`, 'µs (symlog)', chartL),
  ];
  return rep;
}

/** Adds modelled GET / PUT latency and throughput to the kv report's in-process cells. */
export async function addModelledKv(rep: BenchReport, o: BenchOptions & { model: string }): Promise<BenchReport> {
  const m = costProfile(o.model);
  const cells = rep.rows.filter((r) => r.link === 'in-process' && (r.system === 'prism' || r.system === 'pilaf') && typeof r.readPct === 'number' && typeof r.clients === 'number' && r.region === 'memory' && r.dist === 'uniform');
  const lines: string[] = [`MODELLED time (profile ${m.name}; virtual µs — not measured) beside MEASURED, in-process uniform cells:`];
  const chart: Array<{ cell: string; measured: number; modelled: number }> = [];
  let done = 0;
  for (const r of cells) {
    o.progress(done++, cells.length, `modelled kv ${String(r.system)}`);
    const res = await modelKvCell({ system: r.system as 'prism' | 'pilaf', clients: Number(r.clients), readPct: Number(r.readPct), keys: 1000, valueBytes: 24 }, m, o.seed, requestsFor(o));
    Object.assign(r, { modelProfile: m.name, modelledOpsPerSecond: res.opsPerSecond, modelledP50Us: res.p50Us, modelledP99Us: res.p99Us, modelledGetMeanUs: res.readMeanUs, modelledPutMeanUs: res.writeMeanUs });
    const label = `${String(r.system)} ${String(r.readPct)}%r ${String(r.clients)}c`;
    lines.push(`  ${label.padEnd(22)} measured ${String(r.opsPerSecond ?? r.throughputPerSecond ?? '?').padStart(9)} ops/s | modelled ${String(res.opsPerSecond).padStart(9)} ops/s, p50 ${res.p50Us} µs, p99 ${res.p99Us} µs`);
    chart.push({ cell: label, measured: Number(r.opsPerSecond ?? r.throughputPerSecond ?? 0), modelled: res.opsPerSecond });
  }
  const get = (sys: string): Record<string, unknown> | undefined => cells.find((r) => r.system === sys && r.readPct === 100 && r.clients === 1);
  const p = get('prism');
  const q = get('pilaf');
  if (p !== undefined && q !== undefined) {
    rep.ratios.modelled_getLatencyVsPilaf = r3(Number(p.modelledP50Us) / Number(q.modelledP50Us));
    lines.push(`  modelled getLatencyVsPilaf = ${rep.ratios.modelled_getLatencyVsPilaf} (p50, 1 client, 100% GETs, both on ${m.name}); measured ${rep.ratios.getLatencyVsPilaf ?? '-'}; PRISM paper 0.72–0.75 (PRISM on a software NIC: see pmrpc reproduce)`);
  }
  rep.summary.push(...lines);
  rep.config.model = { profile: m.name, parameters: m, note: 'modelled* columns are virtual time from the cost model; every other figure is wall clock' };
  rep.charts = [...(rep.charts ?? []), measuredVsModelledChart('measured-vs-modelled-throughput', `kv ops/s: measured (wall clock) vs modelled (${m.name})`, 'operations per second (symlog)', chart)];
  return rep;
}

/** Adds modelled throughput and latency to the rs report's in-process cells. */
export async function addModelledRs(rep: BenchReport, o: BenchOptions & { model: string }): Promise<BenchReport> {
  const m = costProfile(o.model);
  const cells = rep.rows.filter((r) => r.link === 'in-process' && (r.system === 'prism-rs' || r.system === 'lock-based') && r.dist === 'uniform');
  const lines: string[] = [`MODELLED time (profile ${m.name}; virtual µs — not measured) beside MEASURED, in-process uniform cells:`];
  const chart: Array<{ cell: string; measured: number; modelled: number }> = [];
  let done = 0;
  for (const r of cells) {
    o.progress(done++, cells.length, `modelled rs ${String(r.system)}`);
    const res = await modelRsCell({ system: r.system as 'prism-rs' | 'lock-based', nodes: Number(r.nodes), clients: Number(r.clients), readPct: Number(r.readPct), blocks: 128, blockBytes: Number(r.blockBytes) }, m, o.seed, requestsFor(o));
    Object.assign(r, { modelProfile: m.name, modelledOpsPerSecond: res.opsPerSecond, modelledP50Us: res.p50Us, modelledP99Us: res.p99Us });
    const label = `${String(r.system)} n${String(r.nodes)} ${String(r.clients)}c ${String(r.blockBytes)}B ${String(r.readPct)}%r`;
    lines.push(`  ${label.padEnd(36)} measured ${String(r.opsPerSecond ?? '?').padStart(9)} ops/s | modelled ${String(res.opsPerSecond).padStart(9)} ops/s, p50 ${res.p50Us} µs, p99 ${res.p99Us} µs`);
    chart.push({ cell: label, measured: Number(r.opsPerSecond ?? 0), modelled: res.opsPerSecond });
  }
  // The base cell's ratio (bench rs: 3 replicas, 4 clients, 512 B, 95% reads, uniform), as the measured throughputVsLockBased.
  const base = (sys: string): Record<string, unknown> | undefined => cells.find((r) => r.system === sys && r.nodes === 3 && r.clients === 4 && r.blockBytes === 512 && r.readPct === 95);
  const bp = base('prism-rs');
  const bl = base('lock-based');
  if (bp !== undefined && bl !== undefined) {
    rep.ratios.modelled_throughputVsLockBased = r3(Number(bp.modelledOpsPerSecond) / Number(bl.modelledOpsPerSecond));
    lines.push(`  modelled throughputVsLockBased = ${rep.ratios.modelled_throughputVsLockBased} (base cell, ${m.name}); measured ${rep.ratios.throughputVsLockBased ?? '-'}; PRISM paper ≈ 1.5`);
  }
  rep.summary.push(...lines);
  rep.config.model = { profile: m.name, parameters: m, note: 'modelled* columns are virtual time from the cost model; every other figure is wall clock' };
  rep.charts = [...(rep.charts ?? []), measuredVsModelledChart('measured-vs-modelled-throughput', `rs ops/s: measured (wall clock) vs modelled (${m.name})`, 'operations per second (symlog)', chart)];
  return rep;
}

/**
 * Adds modelled commit throughput, latency and abort rate to the tx report's cells (PRISM-TX,
 * FaRM-style, FORD-style on the cell's shards, DDIO on as `bench tx` runs them), and the modelled
 * ratios beside the measured ones (per cell and the geometric mean over the cells).
 */
export async function addModelledTx(rep: BenchReport, o: BenchOptions & { model: string }): Promise<BenchReport> {
  const m = costProfile(o.model);
  const cfg = rep.config as { ycsbKeys?: number; smallbankAccounts?: number };
  const keysOf = (w: string): number => (w === 'smallbank' ? 2 * (cfg.smallbankAccounts ?? 1000) : (cfg.ycsbKeys ?? 2048));
  const cells = rep.rows.filter((r) => (r.system === 'prism-tx' || r.system === 'farm' || r.system === 'ford') && typeof r.workload === 'string' && typeof r.clients === 'number' && typeof r.shards === 'number');
  const lines: string[] = [`MODELLED time (profile ${m.name}; virtual µs — not measured) beside MEASURED (wall clock), every tx cell (DDIO on, as measured):`];
  const chartT: Array<{ cell: string; measured: number; modelled: number }> = [];
  const chartL: Array<{ cell: string; measured: number; modelled: number }> = [];
  let done = 0;
  for (const r of cells) {
    o.progress(done++, cells.length, `modelled tx ${String(r.system)} ${String(r.cell)}`);
    const res = await modelTxCell({ system: r.system as TxSystemName, workload: r.workload as TxWorkloadName, shards: Number(r.shards), clients: Number(r.clients), keys: keysOf(String(r.workload)), ddio: true }, m, o.seed, requestsFor(o));
    Object.assign(r, { modelProfile: m.name, modelledCommitsPerSecond: res.commitsPerSecond, modelledP50Us: res.p50Us, modelledP99Us: res.p99Us, modelledAbortRate: res.abortRate });
    const label = `${String(r.system)} ${String(r.cell)}`;
    lines.push(`  ${label.padEnd(30)} measured ${String(r.commitsPerSecond ?? '?').padStart(8)} tx/s, p50 ${(Number(r.p50Ns) / 1000).toFixed(1)} µs | modelled ${String(res.commitsPerSecond).padStart(8)} tx/s, p50 ${res.p50Us} µs, p99 ${res.p99Us} µs, aborts ${(res.abortRate * 100).toFixed(1)}%`);
    chartT.push({ cell: label, measured: Number(r.commitsPerSecond ?? 0), modelled: res.commitsPerSecond });
    chartL.push({ cell: label, measured: Number(r.p50Ns ?? 0) / 1000, modelled: res.p50Us });
  }
  const geo = (xs: number[]): number => Math.exp(xs.reduce((a, b) => a + Math.log(b), 0) / xs.length);
  for (const [other, suffix] of [['farm', 'Farm'], ['ford', 'Ford']] as const) {
    const tput: number[] = [];
    const lat: number[] = [];
    for (const p of cells.filter((r) => r.system === 'prism-tx')) {
      const b = cells.find((r) => r.system === other && r.cell === p.cell);
      if (b === undefined || !(Number(b.modelledCommitsPerSecond) > 0) || !(Number(b.modelledP50Us) > 0) || !(Number(p.modelledCommitsPerSecond) > 0)) continue;
      const t = r3(Number(p.modelledCommitsPerSecond) / Number(b.modelledCommitsPerSecond));
      const l = r3(Number(p.modelledP50Us) / Number(b.modelledP50Us));
      rep.ratios[`modelled_throughputVs${suffix}_${String(p.cell)}`] = t;
      rep.ratios[`modelled_latencyVs${suffix}_${String(p.cell)}`] = l;
      tput.push(t);
      lat.push(l);
    }
    if (tput.length === 0) continue;
    rep.ratios[`modelled_throughputVs${suffix}`] = r3(geo(tput));
    rep.ratios[`modelled_latencyVs${suffix}`] = r3(geo(lat));
    lines.push(`  modelled throughputVs${suffix} = ${rep.ratios[`modelled_throughputVs${suffix}`]}, latencyVs${suffix} = ${rep.ratios[`modelled_latencyVs${suffix}`]} (p50; geometric mean over the cells, ${m.name}); measured ${rep.ratios[`throughputVs${suffix}`] ?? '-'} / ${rep.ratios[`latencyVs${suffix}`] ?? '-'}${other === 'farm' ? '; PRISM paper 1.2 / 0.82 (see pmrpc reproduce)' : ''}`);
  }
  o.progress(cells.length, cells.length, 'modelled cells done');
  rep.summary.push(...lines);
  rep.config.model = { profile: m.name, parameters: m, transactionsPerClient: requestsFor(o), ddio: true, note: 'modelled* columns are virtual time from the cost model; every other figure is wall clock' };
  rep.charts = [
    ...(rep.charts ?? []),
    measuredVsModelledChart('measured-vs-modelled-throughput', `tx commits/s: measured (wall clock) vs modelled (${m.name})`, 'committed transactions per second (symlog)', chartT),
    measuredVsModelledChart('measured-vs-modelled-latency', `tx p50 latency: measured (wall clock) vs modelled (${m.name})`, 'µs (symlog)', chartL),
  ];
  return rep;
}

/** The modelled half of a suite, by suite name (a suite without one: `withModel` says so). */
export const MODELLED_SUITES: Readonly<Record<string, (rep: BenchReport, o: BenchOptions & { model: string }) => Promise<BenchReport>>> = Object.freeze({
  flush: addModelledFlush,
  kv: addModelledKv,
  rs: addModelledRs,
  tx: addModelledTx,
});

/** Runs the modelled half of `suite` when `o.model` is set; a suite without one says so in its summary. */
export async function withModel(suite: string, rep: BenchReport, o: BenchOptions): Promise<BenchReport> {
  if (o.model === undefined) return rep;
  const add = MODELLED_SUITES[suite];
  if (add === undefined) {
    rep.summary.push(`--model ${o.model}: the ${suite} suite has no modelled counterpart yet (modelled suites: ${Object.keys(MODELLED_SUITES).join(', ')})`);
    return rep;
  }
  return add(rep, { ...o, model: o.model });
}
