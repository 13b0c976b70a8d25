/**
 * bench tx: PRISM-TX vs the FaRM-style and FORD-style baselines, in the same run (DESIGN §9).
 *
 * First the checks: every system runs the concurrent list-append workload (Elle-style
 * serializability, atomicity) and the bank workload (conservation) on 2 shards; their verdicts go
 * into the report (`checks`), so a figure is never reported for a system that fails them.
 *
 * Then each cell deploys S shards of every system (bench/tx-systems.ts: in this process, each shard
 * its own region, NIC and fabric) and runs every client in a closed loop (one transaction at a
 * time, an aborted one is not retried — the next one is drawn) for the cell's window, windows
 * alternating the systems' order (A B C C B A …), medians. Workloads (bench/tx-workloads.ts):
 * YCSB-T-like, 4 distinct keys per transaction, each read (50 %) or read-modify-write, uniform
 * (low contention) or Zipf 0.99 (high); SmallBank (4 % hot accounts take 90 % of the picks).
 * Figures: committed transactions per second, p50/p99 latency of committed transactions (begin →
 * outcome, HDR), abort rate, commit round trips per committed transaction (from the end of
 * execution to the outcome; execution reads are one round trip each in every system), NIC work
 * requests per commit and the process's CPU per commit split by role — client, NIC emulation,
 * server host (bench/nic-work.ts) — with their ratios to FaRM-style.
 *
 * On this emulator a round trip costs CPU, not wire time, and the emulated NICs and the FaRM
 * shards' "server CPUs" share the machine's cores with the clients: the ratios compare the work
 * per transaction of the protocols, measured wall clock — not the hardware figures of the PRISM
 * paper (+20 % throughput, −18 % latency vs FaRM).
 */
import * as hdr from 'hdr-histogram-js';
import { performance } from 'node:perf_hooks';
import { createPrng } from '../pmem/index.js';
import { barChart, type ChartSpec } from './charts.js';
import { fmtRate, machineDescription, median } from './measure.js';
import { TX_FACTORIES, type TxApi, type TxDeployment, type TxSystemFactory } from './tx-systems.js';
import { attempt, runAppendCheck, runBankCheck, smallBank, ycsbT, type TxWorkload, type TxWorkloadName } from './tx-workloads.js';
import type { BenchOptions, BenchReport, BenchSuite } from './types.js';

export interface TxCellConfig {
  workload: TxWorkloadName;
  shards: number;
  clients: number;
}

export interface TxPlan {
  /** Measured window per system per cell, ms. */
  cellMs: number;
  windows: number;
  /** YCSB-T keys (over all shards). */
  ycsbKeys: number;
  /** SmallBank accounts (two keys each). */
  accounts: number;
  /** PRISM-TX: arena items per shard (every committed write ALLOCATEs one; nothing returns them during a cell). */
  itemsPerShard: number;
  /** Transactions per client of each check workload. */
  checkTxPerClient: number;
  cells: TxCellConfig[];
}

const WORKLOADS: readonly TxWorkloadName[] = ['ycsb-low', 'ycsb-high', 'smallbank'];

export const TX_QUICK_PLAN: Readonly<TxPlan> = Object.freeze({
  cellMs: 700,
  windows: 2,
  ycsbKeys: 2048,
  accounts: 1000,
  itemsPerShard: 8_000,
  checkTxPerClient: 25,
  cells: WORKLOADS.map((workload) => ({ workload, shards: 2, clients: 4 })),
});

export const TX_FULL_PLAN: Readonly<TxPlan> = Object.freeze({
  cellMs: 2000,
  windows: 3,
  ycsbKeys: 4096,
  accounts: 2000,
  itemsPerShard: 24_000,
  checkTxPerClient: 60,
  cells: WORKLOADS.flatMap((workload) => [1, 4, 8].flatMap((clients) => [2, 3].map((shards) => ({ workload, shards, clients })))),
});

export interface TxCellResult {
  commitsPerSecond: number;
  /** Committed transactions per second of this process's CPU time (everything runs in it): the work per transaction. */
  commitsPerCpuSecond: number;
  p50Ns: number;
  p99Ns: number;
  commits: number;
  aborts: number;
  abortRate: number;
  errors: number;
  commitRoundTrips: number;
  /** Per committed transaction (aborted attempts' work included): NIC work requests, request messages (doorbells), PM lines written back. */
  wrsPerCommit: number;
  messagesPerCommit: number;
  linesPerCommit: number;
  /**
   * Round trips per committed transaction, the same figure as commitRoundTrips under the name
   * `bench rs` uses (roundTripsPerOp): the commit protocol's round trips, from the end of execution
   * to the outcome (execution reads are one round trip each in every system and are not counted).
   */
  roundTripsPerCommit: number;
  /** NIC work requests per committed transaction (= wrsPerCommit; bench rs: workRequestsPerOp). */
  workRequestsPerCommit: number;
  /**
   * CPU µs per committed transaction, by role (bench/nic-work.ts): the process's CPU time over the
   * window (warm-up included; process.cpuUsage at its boundaries) split into the emulated NICs'
   * sections and the shards' server-CPU passes (minus NIC calls inside them), both timed on a
   * monotonic clock, the role timer's own bookkeeping, and the rest (clients), divided by the
   * commits of that interval.
   */
  cpuUsPerCommit: number;
  clientCpuUsPerCommit: number;
  nicCpuUsPerCommit: number;
  hostCpuUsPerCommit: number;
  /** The role timer's own bookkeeping per commit (charged to no role). */
  accountingCpuUsPerCommit: number;
  /** Server-CPU passes per committed transaction (each one timed: its CPU clock read at both ends). */
  hostPassesPerCommit: number;
  /**
   * PRISM-TX's reclamation per committed transaction (0 for the baselines), counted, not timed:
   * drained writes its CPU polls (pointer moves and dead marks, logged as they drain), the ones of
   * them that woke the CPU poller, sweeps that found work, and items retired (superseded or dead).
   */
  pollEventsPerCommit: number;
  pollWakesPerCommit: number;
  sweepsPerCommit: number;
  retiredPerCommit: number;
}

/** The summed reclamation counters of a deployment's PRISM-TX shards (zeros for the baselines). */
function sweepCounts(d: TxDeployment): { logged: number; wakes: number; sweeps: number; retired: number } {
  const out = { logged: 0, wakes: 0, sweeps: 0, retired: 0 };
  for (const sv of d.servers) {
    const st = (sv as { sweepStats?: { logged?: number; wakes?: number; sweeps: number; superseded: number; dead: number } }).sweepStats;
    if (st === undefined) continue;
    out.logged += st.logged ?? 0;
    out.wakes += st.wakes ?? 0;
    out.sweeps += st.sweeps;
    out.retired += st.superseded + st.dead;
  }
  return out;
}

const histogram = (): hdr.Histogram => hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: 3 });
const pct = (h: hdr.Histogram, p: number): number => (h.totalCount > 0 ? h.getValueAtPercentile(p) : 0);

function workloadOf(c: TxCellConfig, plan: TxPlan): TxWorkload {
  return c.workload === 'smallbank' ? smallBank(plan.accounts) : ycsbT(c.workload, plan.ycsbKeys);
}

interface DeployedTxCell {
  d: TxDeployment;
  apis: TxApi[];
}

function deployTxCell(f: TxSystemFactory, c: TxCellConfig, plan: TxPlan, seed: number): DeployedTxCell {
  const w = workloadOf(c, plan);
  const d = f.start({ shards: c.shards, keysPerShard: Math.ceil(w.keys / c.shards), clients: c.clients, value: w.value, initialBalance: w.initialBalance, items: Math.ceil(w.keys / c.shards) + plan.itemsPerShard, seed });
  return { d, apis: Array.from({ length: c.clients }, (_, i) => d.client(i)) };
}

async function measureTxWindow(cell: DeployedTxCell, w: TxWorkload, ms: number, seed: number): Promise<TxCellResult> {
  const h = histogram();
  let commits = 0;
  let aborts = 0;
  let errors = 0;
  let rtts = 0;
  const warmMs = Math.min(100, ms / 4);
  const start = performance.now() + warmMs;
  const end = start + ms;
  let allCommits = 0;
  const cpu0 = process.cpuUsage();
  const t0 = cell.d.roleTimes();
  const s0 = sweepCounts(cell.d);
  let w0 = cell.d.work();
  let started = false;
  await Promise.all(
    cell.apis.map(async (api, ci) => {
      const prng = createPrng(seed * 31 + ci);
      let mine = 0;
      for (;;) {
        const a = performance.now();
        if (a >= end && (mine > 0 || a >= end + 10_000)) return;
        const body = w.next(prng);
        let status: string;
        try {
          const out = await attempt(api, body);
          // An abort for any reason but a lost conflict (e.g. PRISM-TX's arena ran out: ALLOCATE failed) is an error, not an abort.
          if (out.status !== 'committed' && out.code !== 'PMRPC_ERR_TX_CONFLICT') throw new Error(out.code);
          status = out.status;
        } catch {
          errors++;
          if (errors > 1000) throw new Error('more than 1000 transactions failed with an error (not an abort)');
          continue;
        }
        const b = performance.now();
        if (status === 'committed') allCommits++;
        if (a < start) continue;
        if (!started) {
          started = true;
          w0 = cell.d.work();
        }
        if (status !== 'committed') {
          aborts++;
          continue;
        }
        commits++;
        mine++;
        h.recordValue(Math.max(1, Math.round((b - a) * 1e6)));
        rtts += api.lastCommitRoundTrips();
      }
    }),
  );
  const elapsed = Math.max(performance.now() - start, 1e-3);
  const cpu = process.cpuUsage(cpu0);
  const t1 = cell.d.roleTimes();
  const s1 = sweepCounts(cell.d);
  const w1 = cell.d.work();
  // Let asynchronous unlocks and CPU applies of this system finish before the next window (maybe another system's).
  await new Promise((r) => setImmediate(r));
  const cpuUs = cpu.user + cpu.system;
  const nicUs = t1.nicUs - t0.nicUs;
  const hostUs = t1.hostUs - t0.hostUs;
  const accountingUs = t1.accountingUs - t0.accountingUs;
  const hostPasses = t1.hostPasses - t0.hostPasses;
  // The roles are wall time inside synchronous sections (bench/nic-work.ts): a section preempted on a
  // loaded machine is charged more than its CPU, so the remainder is clamped at 0.
  const clientUs = Math.max(0, cpuUs - nicUs - hostUs - accountingUs);
  const perCommit = (x: number): number => (allCommits > 0 ? x / allCommits : 0);
  const wrsPerCommit = commits > 0 ? (w1.wrs - w0.wrs) / commits : 0;
  const commitRoundTrips = commits > 0 ? rtts / commits : 0;
  const r: TxCellResult = {
    commitsPerSecond: (commits * 1000) / elapsed,
    commitsPerCpuSecond: cpu.user + cpu.system > 0 ? (allCommits * 1e6) / (cpu.user + cpu.system) : 0,
    p50Ns: pct(h, 50),
    p99Ns: pct(h, 99),
    commits,
    aborts,
    abortRate: commits + aborts > 0 ? aborts / (commits + aborts) : 0,
    errors,
    commitRoundTrips,
    wrsPerCommit,
    messagesPerCommit: commits > 0 ? (w1.messages - w0.messages) / commits : 0,
    linesPerCommit: commits > 0 ? (w1.linesWrittenBack - w0.linesWrittenBack) / commits : 0,
    roundTripsPerCommit: commitRoundTrips,
    workRequestsPerCommit: wrsPerCommit,
    cpuUsPerCommit: perCommit(cpuUs),
    clientCpuUsPerCommit: perCommit(clientUs),
    nicCpuUsPerCommit: perCommit(nicUs),
    hostCpuUsPerCommit: perCommit(hostUs),
    accountingCpuUsPerCommit: perCommit(accountingUs),
    hostPassesPerCommit: perCommit(hostPasses),
    pollEventsPerCommit: perCommit(s1.logged - s0.logged),
    pollWakesPerCommit: perCommit(s1.wakes - s0.wakes),
    sweepsPerCommit: perCommit(s1.sweeps - s0.sweeps),
    retiredPerCommit: perCommit(s1.retired - s0.retired),
  };
  h.destroy();
  return r;
}

function combine(rs: TxCellResult[]): TxCellResult {
  const med = (f: (r: TxCellResult) => number): number => median(rs.map(f));
  const commits = rs.reduce((a, r) => a + r.commits, 0);
  const aborts = rs.reduce((a, r) => a + r.aborts, 0);
  return {
    commitsPerSecond: med((r) => r.commitsPerSecond),
    commitsPerCpuSecond: med((r) => r.commitsPerCpuSecond),
    p50Ns: med((r) => r.p50Ns),
    p99Ns: med((r) => r.p99Ns),
    commits,
    aborts,
    abortRate: commits + aborts > 0 ? aborts / (commits + aborts) : 0,
    errors: rs.reduce((a, r) => a + r.errors, 0),
    commitRoundTrips: med((r) => r.commitRoundTrips),
    wrsPerCommit: med((r) => r.wrsPerCommit),
    messagesPerCommit: med((r) => r.messagesPerCommit),
    linesPerCommit: med((r) => r.linesPerCommit),
    roundTripsPerCommit: med((r) => r.roundTripsPerCommit),
    workRequestsPerCommit: med((r) => r.workRequestsPerCommit),
    cpuUsPerCommit: med((r) => r.cpuUsPerCommit),
    clientCpuUsPerCommit: med((r) => r.clientCpuUsPerCommit),
    nicCpuUsPerCommit: med((r) => r.nicCpuUsPerCommit),
    hostCpuUsPerCommit: med((r) => r.hostCpuUsPerCommit),
    accountingCpuUsPerCommit: med((r) => r.accountingCpuUsPerCommit),
    hostPassesPerCommit: med((r) => r.hostPassesPerCommit),
    pollEventsPerCommit: med((r) => r.pollEventsPerCommit),
    pollWakesPerCommit: med((r) => r.pollWakesPerCommit),
    sweepsPerCommit: med((r) => r.sweepsPerCommit),
    retiredPerCommit: med((r) => r.retiredPerCommit),
  };
}

export const txCellName = (c: TxCellConfig): string => `${c.workload}/${c.clients}c/${c.shards}s`;
const us = (ns: number): string => (ns / 1000).toFixed(1);
const round = (x: number): number => Math.round(x * 1000) / 1000;
const PRISM = 'prism-tx';
const FARM = 'farm';
const FORD = 'ford';

export interface TxCheckVerdict {
  system: string;
  workload: 'append' | 'bank';
  committed: number;
  aborted: number;
  problems: string[];
}

/** The suite on `plan` with `factories`. */
export async function runTxBench(o: BenchOptions, plan: TxPlan = o.quick ? TX_QUICK_PLAN : TX_FULL_PLAN, factories: readonly TxSystemFactory[] = TX_FACTORIES): Promise<BenchReport> {
  const total = plan.cells.length + 1;
  o.progress(0, total, 'checks (list-append + bank, every system)');
  const checks: TxCheckVerdict[] = [];
  for (const f of factories) {
    const co = { shards: 2, clients: 4, txPerClient: plan.checkTxPerClient, seed: o.seed };
    const a = await runAppendCheck(f, { ...co, keys: 8 });
    checks.push({ system: f.name, workload: 'append', committed: a.committed, aborted: a.aborted, problems: a.problems.map((p) => `${p.kind}: ${p.detail}`) });
    const b = await runBankCheck(f, { ...co, keys: 6 });
    checks.push({ system: f.name, workload: 'bank', committed: b.committed, aborted: b.aborted, problems: b.problems.map((p) => `${p.kind}: ${p.detail}`) });
  }
  const rows: Array<Record<string, unknown>> = [];
  const results = new Map<string, TxCellResult>();
  let done = 1;
  for (const c of plan.cells) {
    o.progress(done, total, txCellName(c));
    const w = workloadOf(c, plan);
    const cells = factories.map((f) => deployTxCell(f, c, plan, o.seed));
    try {
      // JIT warm-up of every system on this cell, discarded.
      for (const cell of cells) await measureTxWindow(cell, w, 60, o.seed + 1000);
      const windows: TxCellResult[][] = factories.map(() => []);
      for (let k = 0; k < plan.windows; k++) {
        const order = k % 2 === 0 ? factories.map((_, i) => i) : factories.map((_, i) => factories.length - 1 - i);
        for (const i of order) windows[i]!.push(await measureTxWindow(cells[i]!, w, plan.cellMs, o.seed + k));
      }
      factories.forEach((f, i) => {
        const r = combine(windows[i]!);
        results.set(`${f.name}|${txCellName(c)}`, r);
        rows.push({ system: f.name, cell: txCellName(c), ...c, windows: plan.windows, ...r, commitsPerSecond: Math.round(r.commitsPerSecond), commitsPerCpuSecond: Math.round(r.commitsPerCpuSecond), abortRate: round(r.abortRate), commitRoundTrips: round(r.commitRoundTrips), wrsPerCommit: round(r.wrsPerCommit), messagesPerCommit: round(r.messagesPerCommit), linesPerCommit: round(r.linesPerCommit), roundTripsPerCommit: round(r.roundTripsPerCommit), workRequestsPerCommit: round(r.workRequestsPerCommit), cpuUsPerCommit: round(r.cpuUsPerCommit), clientCpuUsPerCommit: round(r.clientCpuUsPerCommit), nicCpuUsPerCommit: round(r.nicCpuUsPerCommit), hostCpuUsPerCommit: round(r.hostCpuUsPerCommit), accountingCpuUsPerCommit: round(r.accountingCpuUsPerCommit), hostPassesPerCommit: round(r.hostPassesPerCommit), pollEventsPerCommit: round(r.pollEventsPerCommit), pollWakesPerCommit: round(r.pollWakesPerCommit), sweepsPerCommit: round(r.sweepsPerCommit), retiredPerCommit: round(r.retiredPerCommit) });
      });
    } finally {
      for (const x of cells) x.d.close();
    }
    done++;
  }
  o.progress(total, total, 'done');

  const get = (s: string, c: TxCellConfig): TxCellResult | undefined => results.get(`${s}|${txCellName(c)}`);
  const ratios: Record<string, number> = {};
  const put = (k: string, v: number | undefined): void => {
    if (v !== undefined && Number.isFinite(v) && v > 0) ratios[k] = round(v);
  };
  const geo = (xs: number[]): number | undefined => (xs.length > 0 ? Math.exp(xs.reduce((a, b) => a + Math.log(b), 0) / xs.length) : undefined);
  for (const [other, suffix] of [[FARM, 'Farm'], [FORD, 'Ford']] as const) {
    const tput: number[] = [];
    const lat: number[] = [];
    const p99: number[] = [];
    const cpu: number[] = [];
    for (const c of plan.cells) {
      const p = get(PRISM, c);
      const b = get(other, c);
      if (p === undefined || b === undefined || b.commitsPerSecond <= 0 || b.p50Ns <= 0 || p.commitsPerSecond <= 0) continue;
      const n = txCellName(c);
      tput.push(p.commitsPerSecond / b.commitsPerSecond);
      lat.push(p.p50Ns / b.p50Ns);
      p99.push(p.p99Ns / b.p99Ns);
      cpu.push(p.commitsPerCpuSecond / b.commitsPerCpuSecond);
      put(`throughputVs${suffix}_${n}`, tput[tput.length - 1]);
      put(`latencyVs${suffix}_${n}`, lat[lat.length - 1]);
      put(`p99Vs${suffix}_${n}`, p99[p99.length - 1]);
    }
    put(`throughputVs${suffix}`, geo(tput));
    put(`latencyVs${suffix}`, geo(lat));
    put(`p99Vs${suffix}`, geo(p99));
    put(`cpuThroughputVs${suffix}`, geo(cpu));
  }

  // The work per commit against FaRM-style, from the rows' own (rounded) fields: per cell the
  // quotient of PRISM-TX's row and FaRM-style's, unsuffixed the geometric mean over the cells. A
  // PRISM-TX shard whose CPU did nothing in the window gives hostCpuPerCommitVsFarm = 0.
  const rowOf = (s: string, c: TxCellConfig): Record<string, unknown> | undefined => rows.find((r) => r.system === s && r.cell === txCellName(c));
  for (const [ratio, field] of [['roundTripsPerCommitVsFarm', 'roundTripsPerCommit'], ['workRequestsPerCommitVsFarm', 'workRequestsPerCommit'], ['hostCpuPerCommitVsFarm', 'hostCpuUsPerCommit'], ['nicCpuPerCommitVsFarm', 'nicCpuUsPerCommit'], ['clientCpuPerCommitVsFarm', 'clientCpuUsPerCommit'], ['cpuPerCommitVsFarm', 'cpuUsPerCommit']] as const) {
    const qs: number[] = [];
    for (const c of plan.cells) {
      const p = rowOf(PRISM, c);
      const b = rowOf(FARM, c);
      if (p === undefined || b === undefined || Number(p.commits) <= 0 || !(Number(b[field]) > 0)) continue;
      const q = Number(p[field]) / Number(b[field]);
      if (!Number.isFinite(q) || q < 0) continue;
      qs.push(q);
      ratios[`${ratio}_${txCellName(c)}`] = round(q);
    }
    if (qs.length === plan.cells.length && qs.length > 0) ratios[ratio] = round(qs.some((q) => q === 0) ? 0 : Math.exp(qs.reduce((a, q) => a + Math.log(q), 0) / qs.length));
  }

  const failed = checks.filter((c) => c.problems.length > 0 || c.committed === 0);
  const summary: string[] = [];
  summary.push(`checks: ${checks.map((c) => `${c.system} ${c.workload} ${c.problems.length === 0 && c.committed > 0 ? 'ok' : 'FAILED'} (${c.committed} committed, ${c.aborted} aborted)`).join('; ')}`);
  for (const c of failed) summary.push(`  ${c.system} ${c.workload}: ${c.problems.slice(0, 3).join(' | ') || 'nothing committed'}`);
  summary.push(`${factories.map((f) => f.name).join(' vs ')}: closed loops, ${plan.windows} windows of ${plan.cellMs} ms per system per cell (alternating order), medians; latency of committed transactions (HDR); measured wall clock on this machine`);
  if (ratios.throughputVsFarm !== undefined) {
    summary.push(`throughputVsFarm = ${ratios.throughputVsFarm} (geometric mean over the cells; PRISM-TX paper on hardware: 1.2), latencyVsFarm = ${ratios.latencyVsFarm ?? '?'} (p50; paper: 0.82), p99 ×${ratios.p99VsFarm ?? '?'}, CPU-time throughput ×${ratios.cpuThroughputVsFarm ?? '?'}`);
  }
  if (ratios.roundTripsPerCommitVsFarm !== undefined) {
    summary.push(`work per commit vs FaRM-style (geometric means): roundTripsPerCommitVsFarm = ${ratios.roundTripsPerCommitVsFarm}, NIC work requests ×${ratios.workRequestsPerCommitVsFarm ?? '?'}, hostCpuPerCommitVsFarm = ${ratios.hostCpuPerCommitVsFarm ?? '?'} (server CPU), NIC-emulation CPU ×${ratios.nicCpuPerCommitVsFarm ?? '?'}, client CPU ×${ratios.clientCpuPerCommitVsFarm ?? '?'}`);
  }
  if (ratios.throughputVsFord !== undefined) summary.push(`throughputVsFord = ${ratios.throughputVsFord}, latencyVsFord = ${ratios.latencyVsFord ?? '?'}, p99 ×${ratios.p99VsFord ?? '?'}, CPU-time throughput ×${ratios.cpuThroughputVsFord ?? '?'}`);
  summary.push(`  ${'system'.padEnd(9)} ${'cell'.padEnd(22)} ${'p50/p99 µs'.padEnd(16)} ${'aborts'.padEnd(7)} ${'RTT/commit'.padEnd(11)} ${'WRs/msgs/lines'.padEnd(16)} ${'commits/CPU-s'.padEnd(14)} throughput`);
  for (const c of plan.cells) {
    for (const f of factories) {
      const r = get(f.name, c);
      if (r === undefined) continue;
      summary.push(`  ${f.name.padEnd(9)} ${txCellName(c).padEnd(22)} ${`${us(r.p50Ns)}/${us(r.p99Ns)}`.padEnd(16)} ${`${(r.abortRate * 100).toFixed(1)}%`.padEnd(7)} ${r.commitRoundTrips.toFixed(2).padEnd(11)} ${`${r.wrsPerCommit.toFixed(0)}/${r.messagesPerCommit.toFixed(1)}/${r.linesPerCommit.toFixed(0)}`.padEnd(16)} ${fmtRate(r.commitsPerCpuSecond).replace('/s', '').padEnd(14)} ${fmtRate(r.commitsPerSecond).replace('/s', ' tx/s')}${r.errors > 0 ? ` (${r.errors} errors)` : ''}`);
    }
  }
  summary.push(`  CPU µs per commit by role (client / NIC emulation / server host; measured, bench/nic-work.ts):`);
  for (const c of plan.cells) {
    const parts: string[] = [];
    for (const f of factories) {
      const r = get(f.name, c);
      if (r !== undefined) parts.push(`${f.name} ${r.clientCpuUsPerCommit.toFixed(0)}/${r.nicCpuUsPerCommit.toFixed(0)}/${r.hostCpuUsPerCommit.toFixed(1)}`);
    }
    summary.push(`    ${txCellName(c).padEnd(22)} ${parts.join('  ')}`);
  }
  summary.push(
    'A round trip here costs CPU (message objects, the NIC engine, promise hops), not wire time; the emulated NICs and the FaRM shards\' CPUs share the cores with the clients, so',
    'the ratios compare the work per transaction of the protocols (work requests per commit, CPU passes, aborts), not hardware latency (docs/tx.md "Benchmarks").',
  );
  const chartRows = rows.map((r) => ({ series: String(r.system), cell: String(r.cell), commitsPerSecond: Number(r.commitsPerSecond), p50us: Number(r.p50Ns) / 1000, p99us: Number(r.p99Ns) / 1000, abortPct: Number(r.abortRate) * 100, commitRoundTrips: Number(r.commitRoundTrips) }));
  const charts: ChartSpec[] = [
    barChart('throughput', `committed transactions per second, ${factories.map((f) => f.name).join(' vs ')}`, chartRows, { x: 'cell', y: 'commitsPerSecond', yTitle: 'commits per second', group: 'series', width: 720 }),
    barChart('latency-p50', 'p50 latency of committed transactions (µs)', chartRows, { x: 'cell', y: 'p50us', yTitle: 'p50 (µs)', group: 'series', width: 720 }),
    barChart('latency-p99', 'p99 latency of committed transactions (µs)', chartRows, { x: 'cell', y: 'p99us', yTitle: 'p99 (µs)', group: 'series', width: 720 }),
    barChart('abort-rate', 'abort rate (%)', chartRows, { x: 'cell', y: 'abortPct', yTitle: 'aborted (%)', group: 'series', width: 720 }),
    barChart('round-trips', 'commit round trips per committed transaction', chartRows, { x: 'cell', y: 'commitRoundTrips', yTitle: 'round trips', group: 'series', width: 720 }),
  ];
  return {
    suite: 'tx',
    config: {
      ...machineDescription(),
      quick: o.quick,
      seed: o.seed,
      systems: factories.map((f) => ({ name: f.name, description: f.description })),
      checks,
      msPerCell: plan.cellMs,
      windowsPerCell: plan.windows,
      ycsbKeys: plan.ycsbKeys,
      smallbankAccounts: plan.accounts,
      zipfExponent: 0.99,
      nic: { ddio: true, drain: 'eager' },
      links: ['in-process immediate, every shard its own region, NIC and fabric'],
      timing: 'measured wall clock',
    },
    rows,
    ratios,
    summary,
    charts,
  };
}

export const txBench: BenchSuite = {
  name: 'tx',
  description: 'PRISM-TX vs FaRM-style vs FORD-style commit in the same run: YCSB-T-like (low / high contention) and SmallBank; throughput, p50/p99 (HDR), abort rate; per commit: round trips, NIC work requests, CPU by role (client / NIC emulation / server host); Elle list-append and bank checks of every system',
  run: (o: BenchOptions) => runTxBench(o),
};
