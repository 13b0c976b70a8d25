/**
 * bench flush: the remote-persistence strategies of DESIGN §2.3 side by side, through the durable
 * RPC framework (src/rpc), in one run (DESIGN §9).
 *
 * Matrix (cells are flush-cell.ts's): every strategy × payload size × clients × outstanding
 * requests per client × handler cost and placement, over the in-process link and over TCP (server
 * in a child process). Headline: the best decoupled strategy against the better of farm and darpc
 * in the same cell configuration (same handler placement, clients and outstanding requests), as
 * medians over interleaved repeats, beside the SC'21 figures. Beside it: pmrpc durable RPC with
 * `strict` msync against better-sqlite3 (WAL, synchronous = FULL), same payloads, same run.
 */
import { RPC_STRATEGIES, type RpcStrategy } from '../src/rpc/index.js';
import type { ChartSpec } from './charts.js';
import { opsBySizeChart } from './charts.js';
import { calibrate, closeBenchPool, runCell, wallClock, type BenchClock, type CellConfig, type CellPlan, type CellResult } from './flush-cell.js';
import { dropUnmeasured, fmtRate, machineDescription, median } from './measure.js';
import { runSqlite, type SqliteResult } from './sqlite-baseline.js';
import { echoRoundTrip } from './tcp.js';
import type { BenchOptions, BenchReport, BenchSuite } from './types.js';

export const DECOUPLED: readonly RpcStrategy[] = ['wflush', 'sflush', 'wrflush', 'srflush', 'raw', 'gpspm'];
export const COUPLED: readonly RpcStrategy[] = ['farm', 'darpc'];
/** SC'21 (Duan et al.): durable RPC on flush primitives vs FaRM / DaRPC, on Optane + InfiniBand. */
export const SC21 = Object.freeze({ throughput: 1.9, p99: 0.51 });

/**
 * The configuration that shows the decoupling best on this machine (docs/benchmarks.md): the
 * handler in a piscina worker (the second core), one client with one outstanding request, and a
 * handler whose CPU time is of the order of the owner's per-request persistence work.
 */
export const HEADLINE = Object.freeze({ link: 'in-process', payloadBytes: 64, clients: 1, outstanding: 1, handlerUs: 30, placement: 'pool', ringSlots: 16, ddio: false } as const);

export interface FlushPlan {
  cell: CellPlan;
  /** Repeats of the headline cells (interleaved; figures are medians). */
  headlineRepeats: number;
  payloadSizes: number[];
  /** Concurrency sweep at 1 KiB: clients × outstanding × (inline handler 0 µs | pooled HEADLINE.handlerUs). */
  clients: number[];
  outstanding: number[];
  tcp: { payloadSizes: number[]; clients: number[] };
  sqliteSizes: number[];
  sqliteGroup: number;
  /** TCP cells: warm the fresh server child up with at least `requests` processed requests (at most `msMax`) before the cell's own warm-up. */
  tcpWarm?: { requests: number; msMax: number };
}

export const QUICK_PLAN: FlushPlan = {
  cell: { warmupMs: 100, measureMs: 250, drainMsMax: 10_000 },
  headlineRepeats: 3,
  payloadSizes: [64, 1024, 16384],
  clients: [],
  outstanding: [],
  tcp: { payloadSizes: [64], clients: [1] },
  sqliteSizes: [1024],
  sqliteGroup: 16,
  tcpWarm: { requests: 3000, msMax: 4000 },
};

export const FULL_PLAN: FlushPlan = {
  cell: { warmupMs: 200, measureMs: 500, drainMsMax: 20_000 },
  headlineRepeats: 5,
  payloadSizes: [64, 256, 1024, 4096, 16384, 65536],
  clients: [1, 4],
  outstanding: [1, 8],
  tcp: { payloadSizes: [64, 4096], clients: [1, 4] },
  sqliteSizes: [64, 1024, 16384],
  sqliteGroup: 16,
  tcpWarm: { requests: 3000, msMax: 4000 },
};

/** Extra warm-up of a TCP cell (its server child starts cold). */
export const TCP_EXTRA_WARMUP_MS = 300;

type Group = 'payload' | 'concurrency' | 'tcp' | 'strict';

interface PlannedCell {
  key: string;
  group: Group;
  config: CellConfig;
  repeats: number;
  results: CellResult[];
}

export function kindOf(s: RpcStrategy): 'decoupled' | 'coupled' | 'none' {
  return s === 'none' ? 'none' : COUPLED.includes(s) ? 'coupled' : 'decoupled';
}

function keyOf(c: CellConfig): string {
  return `${c.link}/${c.strategy}/${c.payloadBytes}B/${c.clients}c/${c.outstanding}o/${c.handlerUs}us/${c.placement}/ddio-${c.ddio ? 'on' : 'off'}${c.strict ? `/strict${c.msync === 'inline' ? '-inline' : ''}` : ''}`;
}

/** The cells of a plan, in run order (one pass per repeat; a cell with fewer repeats drops out). */
export function planCells(p: FlushPlan): PlannedCell[] {
  const cells = new Map<string, PlannedCell>();
  const add = (group: Group, config: CellConfig, repeats = 1): void => {
    const key = keyOf(config);
    const had = cells.get(key);
    if (had !== undefined) had.repeats = Math.max(had.repeats, repeats);
    else cells.set(key, { key, group, config, repeats, results: [] });
  };
  const base = { ...HEADLINE };
  for (const size of p.payloadSizes)
    for (const strategy of RPC_STRATEGIES) add('payload', { ...base, strategy, payloadBytes: size }, size === HEADLINE.payloadBytes ? p.headlineRepeats : 1);
  for (const clients of p.clients)
    for (const outstanding of p.outstanding)
      for (const placement of ['inline', 'pool'] as const)
        for (const strategy of RPC_STRATEGIES)
          add('concurrency', { ...base, strategy, payloadBytes: 1024, clients, outstanding, placement, handlerUs: placement === 'pool' ? HEADLINE.handlerUs : 0 });
  for (const size of p.tcp.payloadSizes)
    for (const clients of p.tcp.clients) for (const strategy of RPC_STRATEGIES) add('tcp', { ...base, link: 'tcp', strategy, payloadBytes: size, clients });
  for (const size of p.sqliteSizes) {
    for (const outstanding of [1, p.sqliteGroup])
      add('strict', { ...base, strategy: 'wflush', payloadBytes: size, clients: 1, outstanding, placement: 'inline', handlerUs: 0, ddio: true, strict: true, msync: 'inline' });
    // Without strict: durable against a process crash only (as better-sqlite3 with synchronous = OFF).
    add('strict', { ...base, strategy: 'wflush', payloadBytes: size, clients: 1, outstanding: 1, placement: 'inline', handlerUs: 0, ddio: true, strict: false });
  }
  return [...cells.values()];
}

export interface Summary {
  strategy: RpcStrategy;
  throughputPerSecond: number;
  durableP50Us: number;
  durableP99Us: number;
  resultP50Us: number;
  resultP99Us: number;
}

const us = (ns: number): number => Math.round(ns / 100) / 10;
const r3 = (x: number): number => Math.round(x * 1000) / 1000;

function summarise(cell: PlannedCell): Record<string, unknown> & Summary {
  const rs = cell.results;
  const m = (f: (r: CellResult) => number): number => median(rs.map(f));
  const sum = (f: (r: CellResult) => number): number => rs.reduce((a, r) => a + f(r), 0);
  const c = cell.config;
  return {
    group: cell.group,
    link: c.link,
    strategy: c.strategy,
    kind: kindOf(c.strategy),
    payloadBytes: c.payloadBytes,
    clients: c.clients,
    outstanding: c.outstanding,
    handlerUs: c.handlerUs,
    placement: c.placement,
    ringSlots: c.ringSlots,
    ddio: c.ddio,
    strict: c.strict === true,
    ...(c.strict === true ? { msync: c.msync ?? 'pool' } : {}),
    repeats: rs.length,
    throughputPerSecond: Math.round(m((r) => r.throughputPerSecond)),
    throughputSamples: rs.map((r) => Math.round(r.throughputPerSecond)),
    ackedPerSecond: Math.round(m((r) => r.ackedPerSecond)),
    durableP50Us: us(m((r) => r.durableP50Ns)),
    durableP99Us: us(m((r) => r.durableP99Ns)),
    durableP999Us: us(m((r) => r.durableP999Ns)),
    resultP50Us: us(m((r) => r.resultP50Ns)),
    resultP99Us: us(m((r) => r.resultP99Ns)),
    issued: sum((r) => r.issued),
    acknowledged: sum((r) => r.acknowledged),
    processed: sum((r) => r.processed),
    errors: sum((r) => r.errors),
    ringFills: sum((r) => r.ringFills),
    ringLapsMin: Math.round(Math.min(...rs.map((r) => r.ringLapsMin))),
    windowMs: rs[0]?.windowMs ?? 0,
    cpuCores: r3(m((r) => r.cpuCores)),
    ownerElu: r3(m((r) => r.ownerElu)),
    workerElu: rs.some((r) => r.workerElu !== undefined) ? r3(m((r) => r.workerElu ?? 0)) : null,
    poolInFlightPeak: rs.some((r) => r.poolInFlightPeak !== undefined) ? Math.max(...rs.map((r) => r.poolInFlightPeak ?? 0)) : null,
    ...(rs.some((r) => r.warmMs !== undefined) ? { warmMs: Math.round(m((r) => r.warmMs ?? 0)) } : {}),
  };
}

/** The loopback echo's round trip (one message of a ring entry's size in flight), measured before and after a run's TCP cells. */
interface EchoRtt {
  beforeUs: number;
  afterUs: number;
  /** Their mean: the denominator of the one-outstanding ratios. */
  us: number;
}

export interface Comparison {
  bestDecoupled: Summary;
  bestCoupled: Summary;
  throughput: number;
  p99: number;
}

/** Best decoupled vs the better of farm and darpc (by throughput), among the rows of one configuration. */
export function compare(rows: Summary[]): Comparison | undefined {
  const best = (ss: readonly RpcStrategy[]): Summary | undefined =>
    rows.filter((r) => ss.includes(r.strategy)).sort((a, b) => b.throughputPerSecond - a.throughputPerSecond)[0];
  const d = best(DECOUPLED);
  const c = best(COUPLED);
  if (d === undefined || c === undefined) return undefined;
  // The client's latency is its acknowledgement: durable for a decoupled strategy, the reply (= durable) for a coupled one.
  return { bestDecoupled: d, bestCoupled: c, throughput: r3(d.throughputPerSecond / c.throughputPerSecond), p99: r3(d.durableP99Us / c.durableP99Us) };
}

export async function runFlushBench(o: BenchOptions, plan: FlushPlan, clock: BenchClock = wallClock): Promise<BenchReport> {
  const cells = planCells(plan);
  const sqliteCells = plan.sqliteSizes.flatMap((size) => (['txn', 'group', 'txn-sync-off'] as const).map((mode) => ({ size, mode })));
  const passes = Math.max(1, ...cells.map((c) => c.repeats));
  const total = cells.reduce((a, c) => a + c.repeats, 0) + sqliteCells.length + 1;
  let done = 0;
  const t0 = clock.nowNs();
  try {
    o.progress(0, total, 'warm-up (calibrate the handler, JIT both paths)');
    const itersPerUs = calibrate(clock);
    for (const strategy of ['wflush', 'farm'] as const) await runCell({ ...HEADLINE, strategy }, { ...plan.cell, measureMs: plan.cell.measureMs }, o.seed, clock);
    done++;
    // The yardstick of the TCP cells' latency (1 client × 1 outstanding): the loopback's round trip, in this run.
    const tcpEntryBytes = cells.find((c) => c.config.link === 'tcp')?.config.payloadBytes;
    const echoMs = { warm: plan.cell.warmupMs, cell: Math.max(500, plan.cell.measureMs) };
    const rttBefore = tcpEntryBytes === undefined ? undefined : await echoRoundTrip(tcpEntryBytes + 32, echoMs.warm, echoMs.cell);
    // Interleaved passes: every cell once per pass, so slow phases of a noisy machine hit all strategies alike.
    for (let pass = 0; pass < passes; pass++) {
      for (const cell of cells) {
        if (pass >= cell.repeats) continue;
        o.progress(done, total, `${cell.key} (pass ${pass + 1})`);
        // A TCP cell's server is a fresh child process: a longer warm-up lets its JIT settle.
        const cellPlan = cell.config.link === 'tcp' ? { ...plan.cell, warmupMs: plan.cell.warmupMs + TCP_EXTRA_WARMUP_MS, warmRequests: plan.tcpWarm?.requests, warmMsMax: plan.tcpWarm?.msMax } : plan.cell;
        cell.results.push(await runCell(cell.config, cellPlan, o.seed + pass, clock));
        done++;
      }
    }
    const rttAfter = tcpEntryBytes === undefined ? undefined : await echoRoundTrip(tcpEntryBytes + 32, echoMs.warm, echoMs.cell);
    const rtt: EchoRtt | undefined = rttBefore === undefined || rttAfter === undefined ? undefined : { beforeUs: rttBefore.p50us, afterUs: rttAfter.p50us, us: (rttBefore.p50us + rttAfter.p50us) / 2 };
    const sqlite: SqliteResult[] = [];
    for (const s of sqliteCells) {
      o.progress(done, total, `better-sqlite3 ${s.mode} ${s.size} B`);
      sqlite.push(runSqlite(s.mode, s.size, plan.sqliteGroup, plan.cell, clock));
      done++;
    }
    o.progress(total, total, 'done');
    const seconds = (clock.nowNs() - t0) / 1e9;
    return report(o, plan, cells, sqlite, itersPerUs, seconds, rtt);
  } finally {
    await closeBenchPool();
  }
}

function report(o: BenchOptions, plan: FlushPlan, cells: PlannedCell[], sqlite: SqliteResult[], itersPerUs: number, seconds: number, rtt?: EchoRtt): BenchReport {
  const rows: Array<Record<string, unknown>> = cells.map(summarise);
  const typed = rows as Array<Record<string, unknown> & Summary>;
  const at = (f: (r: Record<string, unknown>) => boolean): Array<Record<string, unknown> & Summary> => typed.filter(f);
  const isHeadline = (r: Record<string, unknown>, link = 'in-process'): boolean =>
    r.group === (link === 'tcp' ? 'tcp' : 'payload') && r.link === link && r.payloadBytes === HEADLINE.payloadBytes && r.clients === HEADLINE.clients && r.outstanding === HEADLINE.outstanding;
  const head = at((r) => isHeadline(r));
  const cmp = compare(head);
  const get = (s: RpcStrategy): Summary | undefined => head.find((r) => r.strategy === s);
  const wflush = get('wflush');
  const raw = get('raw');
  const none = get('none');
  const ratios: Record<string, number> = {};
  if (cmp !== undefined) {
    ratios.decoupledVsCoupledThroughput = cmp.throughput;
    ratios.decoupledVsCoupledP99 = cmp.p99;
    ratios.decoupledVsCoupledResultP99 = r3(cmp.bestDecoupled.resultP99Us / cmp.bestCoupled.resultP99Us);
    if (none !== undefined) ratios.noneVsBestDecoupled = r3(none.throughputPerSecond / cmp.bestDecoupled.throughputPerSecond);
  }
  if (raw !== undefined && wflush !== undefined) {
    ratios.rawVsWflush = r3(raw.throughputPerSecond / wflush.throughputPerSecond);
    ratios.rawVsWflushP99 = r3(raw.durableP99Us / wflush.durableP99Us);
  }
  const tcpCmp = compare(at((r) => isHeadline(r, 'tcp')));
  if (tcpCmp !== undefined) {
    ratios.decoupledVsCoupledThroughputTcp = tcpCmp.throughput;
    ratios.decoupledVsCoupledP99Tcp = tcpCmp.p99;
  }
  // One request outstanding over TCP: durable p50 ÷ the loopback's round trip in this run (issue 16: ≤ 4).
  const tcpOne = at((r) => isHeadline(r, 'tcp'));
  if (rtt !== undefined && rtt.us > 0 && tcpOne.length > 0) {
    for (const r of tcpOne) {
      const x = r3(r.durableP50Us / rtt.us);
      (r as Record<string, unknown>).durableP50OverEchoRtt = x;
      ratios[`tcpOneOutstandingP50OverEchoRtt_${r.strategy}`] = x;
    }
    const dec = tcpOne.filter((r) => r.kind === 'decoupled');
    if (dec.length > 0) ratios.tcpOneOutstandingP50OverEchoRtt = r3(Math.min(...dec.map((r) => r.durableP50Us)) / rtt.us);
  }
  // Per payload size (the chart) and per concurrency configuration.
  const bySize = plan.payloadSizes.map((size) => ({ size, c: compare(at((r) => r.group === 'payload' && r.payloadBytes === size)) }));
  for (const { size, c } of bySize) if (c !== undefined) ratios[`decoupledVsCoupledThroughput_${size}B`] = c.throughput;
  const concurrency: Array<{ label: string; c: Comparison }> = [];
  for (const clients of plan.clients)
    for (const outstanding of plan.outstanding)
      for (const placement of ['inline', 'pool']) {
        const c = compare(at((r) => r.group === 'concurrency' && r.clients === clients && r.outstanding === outstanding && r.placement === placement));
        if (c !== undefined) concurrency.push({ label: `${clients}c×${outstanding}o ${placement}`, c });
      }
  // better-sqlite3 vs pmrpc strict (wflush, inline handler, 1 client, 1 or sqliteGroup outstanding).
  const strictRow = (size: number, outstanding: number, strict: boolean): Summary | undefined =>
    at((r) => r.group === 'strict' && r.payloadBytes === size && r.outstanding === outstanding && r.strict === strict)[0];
  const sqlName = { txn: 'txn/request, FULL', group: `group commit ×${plan.sqliteGroup}, FULL`, 'txn-sync-off': 'txn/request, sync OFF' } as const;
  const pmName = { txn: 'pmrpc strict, 1 outstanding', group: `pmrpc strict, ${plan.sqliteGroup} outstanding`, 'txn-sync-off': 'pmrpc (no msync), 1 outstanding' } as const;
  const sqlRows: Array<Record<string, unknown>> = [];
  for (const s of sqlite) {
    const p = strictRow(s.payloadBytes, s.mode === 'group' ? plan.sqliteGroup : 1, s.mode !== 'txn-sync-off');
    const row = {
      group: 'sqlite', system: `better-sqlite3 ${sqlName[s.mode]}`, pmrpc: pmName[s.mode], mode: s.mode, payloadBytes: s.payloadBytes, groupSize: s.groupSize,
      throughputPerSecond: Math.round(s.throughputPerSecond), p50Us: us(s.p50Ns), p99Us: us(s.p99Ns), requests: s.requests,
      pmrpcThroughputPerSecond: p?.throughputPerSecond ?? null, pmrpcP99Us: p?.durableP99Us ?? null,
      pmrpcVsSqliteThroughput: p !== undefined ? r3(p.throughputPerSecond / s.throughputPerSecond) : null,
      pmrpcVsSqliteP99: p !== undefined ? r3(p.durableP99Us / us(s.p99Ns)) : null,
    };
    sqlRows.push(row);
    const name = { txn: 'pmrpcStrictVsSqliteTxn', group: 'pmrpcStrictVsSqliteGroup', 'txn-sync-off': 'pmrpcVsSqliteSyncOff' }[s.mode];
    if (row.pmrpcVsSqliteThroughput !== null) ratios[`${name}_${s.payloadBytes}B_Throughput`] = row.pmrpcVsSqliteThroughput;
    if (row.pmrpcVsSqliteP99 !== null) ratios[`${name}_${s.payloadBytes}B_P99`] = row.pmrpcVsSqliteP99;
  }
  rows.push(...sqlRows);

  const unmeasured = dropUnmeasured(ratios);

  // ------------------------------------------------------------ summary
  const cfg = `in-process link, handler ${HEADLINE.handlerUs} µs of CPU in a piscina worker (1 thread), ${HEADLINE.clients} client × ${HEADLINE.outstanding} outstanding, ${HEADLINE.payloadBytes} B payloads, ring ${HEADLINE.ringSlots} slots, DDIO off`;
  const summary: string[] = [];
  summary.push(`bench flush: ${cells.reduce((a, c) => a + c.results.length, 0)} cell runs + ${sqlite.length} better-sqlite3 runs in ${seconds.toFixed(1)} s; ${plan.cell.measureMs} ms per cell after ${plan.cell.warmupMs} ms warm-up; headline cells: median of ${plan.headlineRepeats} interleaved repeats`);
  summary.push(`machine: ${String(machineDescription().cpus)} cpus (${String(machineDescription().cpuModel)}), shared and noisy; handler loop ${itersPerUs.toFixed(0)} iterations/µs`);
  if (cmp !== undefined) {
    summary.push(`HEADLINE (${cfg}):`);
    summary.push(`  decoupledVsCoupledThroughput = ${cmp.throughput}  (SC'21: ×${SC21.throughput})  ${cmp.bestDecoupled.strategy} ${fmtRate(cmp.bestDecoupled.throughputPerSecond)} vs ${cmp.bestCoupled.strategy} ${fmtRate(cmp.bestCoupled.throughputPerSecond)}`);
    summary.push(`  decoupledVsCoupledP99        = ${cmp.p99}  (SC'21: ×${SC21.p99})  ${cmp.bestDecoupled.strategy} durable p99 ${cmp.bestDecoupled.durableP99Us} µs vs ${cmp.bestCoupled.strategy} reply p99 ${cmp.bestCoupled.durableP99Us} µs`);
    const dr = cmp.bestDecoupled as Summary & Record<string, unknown>;
    const cr = cmp.bestCoupled as Summary & Record<string, unknown>;
    summary.push(`  measured CPU: ${dr.strategy} ${String(dr.cpuCores)} cores (owner thread ${String(dr.ownerElu)} busy, pool worker ${String(dr.workerElu)}, ${String(dr.ringFills)} ring fills), ${cr.strategy} ${String(cr.cpuCores)} cores (owner ${String(cr.ownerElu)}, worker ${String(cr.workerElu)})` +
      (Number(dr.cpuCores) < 1.3 ? ' — the second core was mostly taken by other work on the machine: the pipeline had one core, so no gain is expected' : ''));
  }
  if (unmeasured.length > 0) summary.push(`  not measured (a cell of the ratio saw no request in its ${plan.cell.measureMs} ms window: a loaded machine; rerun, or without --quick): ${unmeasured.join(', ')}`);
  if (ratios.rawVsWflush !== undefined) summary.push(`  rawVsWflush = ${ratios.rawVsWflush} (throughput; p99 ×${ratios.rawVsWflushP99}); raw is correct here only because DDIO is off`);
  if (ratios.noneVsBestDecoupled !== undefined) summary.push(`  noneVsBestDecoupled = ${ratios.noneVsBestDecoupled} (none: no persistence at all, the upper bound)`);
  if (tcpCmp !== undefined) summary.push(`  over TCP (server in a child process, same configuration): throughput ×${tcpCmp.throughput} (${tcpCmp.bestDecoupled.strategy} vs ${tcpCmp.bestCoupled.strategy}), p99 ×${tcpCmp.p99}`);
  const line = (r: Summary & Record<string, unknown>): string =>
    `  ${String(r.strategy).padEnd(8)} ${String(r.kind).padEnd(9)} ${fmtRate(r.throughputPerSecond).padStart(11)}  durable p50/p99 ${`${r.durableP50Us}/${r.durableP99Us}`.padEnd(15)} µs  result p50/p99 ${`${r.resultP50Us}/${r.resultP99Us}`.padEnd(16)} µs  cpu ${String(r.cpuCores)} cores, owner ${String(r.ownerElu)}, worker ${String(r.workerElu)}, ring fills ${String(r.ringFills)}, laps ≥ ${String(r.ringLapsMin)}`;
  summary.push(`headline cells (medians):`);
  for (const r of head) summary.push(line(r));
  summary.push('decoupled vs coupled throughput by payload (same configuration): ' + bySize.map(({ size, c }) => `${size} B ×${c?.throughput ?? '-'} (p99 ×${c?.p99 ?? '-'})`).join(', '));
  if (concurrency.length > 0) summary.push('by concurrency at 1 KiB: ' + concurrency.map(({ label, c }) => `${label}: ×${c.throughput} (p99 ×${c.p99})`).join('; '));
  const tcpHead = at((r) => isHeadline(r, 'tcp'));
  if (tcpHead.length > 0) {
    summary.push('TCP cells (server process: owner thread + 1 pool worker; clients in this process):');
    for (const r of tcpHead) summary.push(line(r));
    if (rtt !== undefined && ratios.tcpOneOutstandingP50OverEchoRtt !== undefined)
      summary.push(`  one request outstanding: best decoupled durable p50 ÷ loopback echo round trip = ×${ratios.tcpOneOutstandingP50OverEchoRtt} (echo p50 ${rtt.beforeUs} µs before, ${rtt.afterUs} µs after the cells; issue 16 target ≤ 4); per strategy: ` +
        tcpHead.map((r) => `${String(r.strategy)} ×${String(ratios[`tcpOneOutstandingP50OverEchoRtt_${String(r.strategy)}`])}`).join(', '));
  }
  if (sqlRows.length > 0) {
    summary.push('what a Node user would use instead: better-sqlite3 (WAL) vs pmrpc wflush (inline handler, 1 client), same payloads, same run; ratio = pmrpc ÷ sqlite:');
    for (const s of sqlRows)
      summary.push(`  ${String(s.payloadBytes).padStart(6)} B  ${String(s.system).padEnd(38)} ${fmtRate(Number(s.throughputPerSecond)).padStart(10)} p99 ${String(s.p99Us).padStart(8)} µs | ${String(s.pmrpc).padEnd(32)} ${fmtRate(Number(s.pmrpcThroughputPerSecond)).padStart(10)} p99 ${String(s.pmrpcP99Us).padStart(8)} µs → throughput ×${String(s.pmrpcVsSqliteThroughput)}, p99 ×${String(s.pmrpcVsSqliteP99)}`);
  }
  summary.push(
    'Why not ×1.9: here the emulated NIC, the clients and the server CPU share 2 cores (and other work on the machine); the decoupled pipeline overlaps',
    'persistence (owner thread) with processing (pool worker), so it gains at most ×2, and only while both stages have a core. See docs/benchmarks.md.',
  );
  const bad = typed.filter((r) => r.group !== 'sqlite' && (Number(r.errors) > 0 || r.processed !== r.acknowledged || r.acknowledged !== r.issued));
  if (bad.length > 0) summary.push(`WARNING: ${bad.length} cell(s) with errors or processed != acknowledged: ${bad.map((r) => `${r.strategy}/${String(r.payloadBytes)}`).join(', ')}`);

  // ------------------------------------------------------------ charts
  const payloadRows = at((r) => r.group === 'payload');
  const charts: ChartSpec[] = [
    opsBySizeChart('throughput-by-payload', `acknowledged + processed requests/s vs payload (headline configuration)`,
      payloadRows.map((r) => ({ series: r.strategy, sizeBytes: Number(r.payloadBytes), opsPerSecond: r.throughputPerSecond }))),
    {
      name: 'latency-by-strategy',
      spec: {
        title: `acknowledgement latency p50 / p99, ${HEADLINE.payloadBytes} B, headline configuration`,
        width: 480,
        height: 300,
        data: { values: head.flatMap((r) => [{ strategy: r.strategy, percentile: 'p50', us: r.durableP50Us }, { strategy: r.strategy, percentile: 'p99', us: r.durableP99Us }]) },
        mark: 'bar',
        encoding: {
          x: { field: 'strategy', type: 'nominal', sort: [...RPC_STRATEGIES], title: null },
          xOffset: { field: 'percentile' },
          y: { field: 'us', type: 'quantitative', scale: { type: 'symlog' }, title: 'latency (µs, symlog scale)' },
          color: { field: 'percentile', type: 'nominal', title: null },
        },
      },
    },
    {
      name: 'decoupled-vs-coupled',
      spec: {
        title: 'best decoupled ÷ better of farm/darpc (same cells)',
        width: 480,
        height: 300,
        data: {
          values: bySize.flatMap(({ size, c }) =>
            c === undefined ? [] : [
              { sizeBytes: size, series: 'throughput ratio (measured)', ratio: c.throughput },
              { sizeBytes: size, series: 'p99 ratio (measured)', ratio: c.p99 },
              { sizeBytes: size, series: "SC'21 throughput ×1.9", ratio: SC21.throughput },
              { sizeBytes: size, series: "SC'21 p99 ×0.51", ratio: SC21.p99 },
            ]),
        },
        mark: { type: 'line', point: true },
        encoding: {
          x: { field: 'sizeBytes', type: 'quantitative', scale: { type: 'log', base: 2 }, title: 'payload (bytes)' },
          y: { field: 'ratio', type: 'quantitative', title: 'ratio' },
          color: { field: 'series', type: 'nominal', title: null, legend: { labelLimit: 300 } },
          strokeDash: { condition: { test: "indexof(datum.series, 'SC') === 0", value: [4, 4] }, value: [1, 0] },
        },
      },
    },
  ];
  if (sqlRows.length > 0) {
    charts.push({
      name: 'vs-sqlite',
      spec: {
        title: 'durable requests/s: better-sqlite3 vs pmrpc strict',
        width: 480,
        height: 300,
        data: {
          values: sqlRows.flatMap((s) => [
            { payload: `${String(s.payloadBytes)} B`, system: String(s.system), throughput: Number(s.throughputPerSecond) },
            { payload: `${String(s.payloadBytes)} B`, system: String(s.pmrpc), throughput: Number(s.pmrpcThroughputPerSecond ?? 0) },
          ]),
        },
        mark: 'bar',
        encoding: {
          x: { field: 'payload', type: 'nominal', title: null },
          xOffset: { field: 'system' },
          y: { field: 'throughput', type: 'quantitative', scale: { type: 'symlog' }, title: 'requests per second (symlog scale)' },
          color: { field: 'system', type: 'nominal', title: null, legend: { labelLimit: 300 } },
        },
      },
    });
  }
  return {
    suite: 'flush',
    config: {
      machine: machineDescription(),
      quick: o.quick,
      seed: o.seed,
      seconds: Math.round(seconds * 10) / 10,
      plan,
      headline: { ...HEADLINE, description: cfg, bestDecoupled: cmp?.bestDecoupled.strategy, bestCoupled: cmp?.bestCoupled.strategy },
      sc21: SC21,
      handlerIterationsPerUs: Math.round(itersPerUs),
      nic: { drain: 'lazy (default)', fabric: 'immediate', strictCells: 'ddio on, file-backed region in the OS temp dir, msync on every drain, on the JS thread (msyncInline: one client in lockstep, as SQLite)' },
      pool: 'piscina, 1 thread, atomics disabled, 16 concurrent tasks per worker',
      throughput: 'requests acknowledged and processed in the window ÷ window',
      ...(rtt === undefined ? {} : { tcpEchoRoundTripUs: rtt, tcpWarmUp: `${plan.tcpWarm === undefined ? '' : `≥ ${plan.tcpWarm.requests} requests (≤ ${plan.tcpWarm.msMax} ms), then `}${plan.cell.warmupMs + TCP_EXTRA_WARMUP_MS} ms` }),
    },
    rows,
    ratios,
    unmeasured,
    summary,
    charts,
  };
}

export const flushBench: BenchSuite = {
  name: 'flush',
  description: 'every flush strategy (wflush sflush wrflush srflush raw gpspm farm darpc none) × payload × clients × outstanding × handler cost, in-process and TCP; decoupled vs coupled; vs better-sqlite3',
  run: (o) => runFlushBench(o, o.quick ? QUICK_PLAN : FULL_PLAN),
};
