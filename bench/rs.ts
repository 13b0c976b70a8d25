/**
 * bench rs: PRISM-RS vs the lock-based replication baseline, in the same run (DESIGN §9).
 *
 * Each cell deploys N replicas of one system (bench/rs-systems.ts: one factory per system), loads
 * every block, lets every client read every block once (warm caches), then runs every client in a
 * closed loop (one operation at a time) for the cell's window: reads and writes of whole blocks,
 * 50 % or 95 % reads, blocks drawn uniformly or Zipf(0.99). Latencies go to HDR histograms (ns),
 * throughput is operations completed per second of the window, round trips per operation are the
 * clients' own counts (a phase that messages several replicas in parallel counts once). Both
 * systems make a write durable on a majority before acknowledging it (a FLUSH(persistent) on each).
 * The systems of one cell run back to back on the same configuration and seed.
 *
 * Matrix: quick — a base cell (N = 3, 4 clients, 512 B blocks, 95 % reads, uniform) and one
 * dimension changed at a time (N = 5; 1 and 8 clients; 64 B and 4 KiB; 50 % reads; Zipf), plus the
 * base cell over TCP. Full — every combination of N ∈ {3, 5}, clients ∈ {1, 2, 4, 8}, blocks ∈
 * {64 B, 512 B, 4 KiB}, reads ∈ {50 %, 95 %}, uniform / Zipf, plus TCP cells.
 *
 * On this emulator a round trip costs CPU (message objects, the NIC engine of every replica,
 * promise hops), not wire time, and every replica's emulated NIC shares the machine's cores with
 * the clients: the ratios compare the work per operation of the two protocols, measured wall
 * clock — not the hardware figures of the PRISM paper (≈ 1.5× throughput).
 */
import * as hdr from 'hdr-histogram-js';
import { performance } from 'node:perf_hooks';
import { createPrng, type Prng } from '../pmem/index.js';
import { barChart, type ChartSpec } from './charts.js';
import { zipf } from './kv.js';
import { fmtRate, machineDescription, median } from './measure.js';
import type { RsDeployment } from './rs-systems.js';
import { RS_FACTORIES, type BlockStore, type RsLinkKind, type RsSystemFactory } from './rs-systems.js';
import type { BenchOptions, BenchReport, BenchSuite } from './types.js';

export type RsDist = 'uniform' | 'zipf';

export interface RsCellConfig {
  link: RsLinkKind;
  nodes: number;
  clients: number;
  blockBytes: number;
  readPct: number;
  dist: RsDist;
}

export interface RsPlan {
  /** Measured window of an in-process cell, ms. */
  cellMs: number;
  /**
   * Windows per system per cell, alternating the systems' order (A B B A …) on deployments made
   * once per cell: a slow phase of a shared machine hits both alike; figures are medians.
   */
  windows: number;
  /** Measured window of a TCP cell, ms. */
  tcpCellMs: number;
  /** Blocks per replica (the key space). */
  blocks: number;
  cells: RsCellConfig[];
}

/** The cell every ratio without a suffix is measured on. */
export const RS_BASE_CELL: Readonly<RsCellConfig> = Object.freeze({ link: 'in-process', nodes: 3, clients: 4, blockBytes: 512, readPct: 95, dist: 'uniform' });

/** Each ratio's cell: the base cell with one dimension changed. */
export const RS_VARIATIONS: Readonly<Record<string, Partial<RsCellConfig>>> = Object.freeze({
  n5: { nodes: 5 },
  '1client': { clients: 1 },
  '8clients': { clients: 8 },
  '64B': { blockBytes: 64 },
  '4KiB': { blockBytes: 4096 },
  '50reads': { readPct: 50 },
  zipf: { dist: 'zipf' },
  tcp: { link: 'tcp' },
});

function oneAtATime(): RsCellConfig[] {
  return [RS_BASE_CELL, ...Object.values(RS_VARIATIONS).map((v) => ({ ...RS_BASE_CELL, ...v }))];
}

export const RS_QUICK_PLAN: Readonly<RsPlan> = Object.freeze({ cellMs: 120, tcpCellMs: 250, windows: 2, blocks: 128, cells: oneAtATime() });

export const RS_FULL_PLAN: Readonly<RsPlan> = Object.freeze({
  cellMs: 300,
  tcpCellMs: 1000,
  windows: 3,
  blocks: 256,
  cells: (() => {
    const cells: RsCellConfig[] = [];
    for (const nodes of [3, 5])
      for (const clients of [1, 2, 4, 8])
        for (const blockBytes of [64, 512, 4096])
          for (const readPct of [50, 95]) for (const dist of ['uniform', 'zipf'] as RsDist[]) cells.push({ link: 'in-process', nodes, clients, blockBytes, readPct, dist });
    for (const nodes of [3, 5]) for (const clients of [1, 4]) for (const readPct of [50, 95]) cells.push({ link: 'tcp', nodes, clients, blockBytes: 512, readPct, dist: 'uniform' });
    return cells;
  })(),
});

export interface RsCellResult {
  opsPerSecond: number;
  /**
   * Operations per second of this process's CPU time (user + system) over the whole loop, warm-up
   * included: the work per operation, far less sensitive than wall clock to other load on a shared
   * machine. In-process cells only (over TCP the replicas' CPU is another process's).
   */
  opsPerCpuSecond: number | undefined;
  p50Ns: number;
  p99Ns: number;
  readP50Ns: number;
  readP99Ns: number;
  writeP50Ns: number;
  writeP99Ns: number;
  reads: number;
  writes: number;
  errors: number;
  /**
   * Round trips per operation at the cell's mix (readPct), from the per-kind figures: two systems
   * are compared on the same mix of reads and writes, not on the mix each window happened to draw
   * (a window of 130 operations holds 5–12 % writes at a 95 % cell); a window that measured no
   * operation of a kind of the mix, at its own mix. Undefined when the system does not count them.
   */
  roundTripsPerOp: number | undefined;
  readRoundTripsPerOp: number | undefined;
  writeRoundTripsPerOp: number | undefined;
  /**
   * Work requests the replicas' NICs executed per operation (every operation of the window, warm-up
   * included, and the background work they leave — installs beyond the majority, buffer returns —
   * up to the window's settle); undefined over TCP (the NICs are the child process's).
   */
  workRequestsPerOp: number | undefined;
}

const histogram = (): hdr.Histogram => hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: 3 });
const pct = (h: hdr.Histogram, p: number): number => (h.totalCount > 0 ? h.getValueAtPercentile(p) : 0);

/** Per-kind round trips weighted by the cell's mix (`readPct` % reads); undefined when a kind with weight is missing. */
export function atMix(readPct: number, read: number | undefined, write: number | undefined): number | undefined {
  const wr = readPct / 100;
  if ((wr > 0 && read === undefined) || (wr < 1 && write === undefined)) return undefined;
  return (wr > 0 ? wr * read! : 0) + (wr < 1 ? (1 - wr) * write! : 0);
}

/** Writes `n` into the value's first 8 bytes: no two writes write the same bytes. */
function stamp(value: Uint8Array, n: number): void {
  new DataView(value.buffer, value.byteOffset, value.byteLength).setFloat64(0, n, true);
}

/** One cell of one system: deploy, load, warm, closed loops for `ms`, tear down. */
/** A system deployed for a cell: its replicas, its clients (loaded and warm). */
export interface DeployedCell {
  d: RsDeployment;
  stores: BlockStore[];
  close(): Promise<void>;
}

/** Deploys N replicas of `factory`, connects the clients, writes every block, lets every client read every block once. */
export async function deployRsCell(factory: RsSystemFactory, c: RsCellConfig, plan: Pick<RsPlan, 'blocks'>, seed: number): Promise<DeployedCell> {
  const d = await factory.start(c.nodes, { blocks: plan.blocks, blockBytes: c.blockBytes, seed, link: c.link });
  const stores: BlockStore[] = [];
  const close = async (): Promise<void> => {
    for (const s of stores) await s.close().catch(() => undefined);
    await d.close();
  };
  try {
    for (let i = 0; i < c.clients; i++) stores.push(await d.client(i));
    const value = new Uint8Array(c.blockBytes).fill(7);
    for (let b = 0; b < plan.blocks; b++) await stores[0]!.write(b, value);
    for (const s of stores) for (let b = 0; b < plan.blocks; b++) await s.read(b);
  } catch (e) {
    await close();
    throw e;
  }
  return { d, stores, close };
}

/** One measured window of closed loops on a deployed cell (`window` varies the seed of the operation mix). */
export async function measureRsWindow(cell: DeployedCell, c: RsCellConfig, plan: Pick<RsPlan, 'blocks'>, ms: number, seed: number): Promise<RsCellResult> {
  const { d, stores } = cell;
  {
    const all = histogram();
    const readH = histogram();
    const writeH = histogram();
    const pick = c.dist === 'zipf' ? zipf(plan.blocks, 0.99) : (p: Prng) => p.int(0, plan.blocks - 1);
    let ops = 0;
    let errors = 0;
    let stamped = 0;
    let readRtts = 0;
    let writeRtts = 0;
    let counted = true;
    const warmMs = Math.min(100, ms / 4);
    const start = performance.now() + warmMs;
    const end = start + ms;
    let allOps = 0;
    const wrs0 = d.nicWorkRequests?.();
    const cpu0 = process.cpuUsage();
    await Promise.all(
      stores.map(async (s, ci) => {
        const prng = createPrng(seed * 31 + ci);
        const v = new Uint8Array(c.blockBytes).fill(ci + 1);
        // Every client measures at least one operation, even when a loaded machine stalls it past
        // the window (bounded: 10 s past its end).
        let mine = 0;
        for (;;) {
          const a = performance.now();
          if (a >= end && (mine > 0 || a >= end + 10_000)) return;
          const block = pick(prng);
          const isRead = prng.int(0, 99) < c.readPct;
          if (!isRead) stamp(v, ++stamped);
          try {
            if (isRead) await s.read(block);
            else await s.write(block, v);
          } catch {
            errors++;
            continue;
          }
          const b = performance.now();
          allOps++;
          if (a < start) continue;
          ops++;
          mine++;
          const ns = Math.max(1, Math.round((b - a) * 1e6));
          all.recordValue(ns);
          (isRead ? readH : writeH).recordValue(ns);
          const rtts = d.lastOpRoundTrips(s);
          if (rtts === undefined) counted = false;
          else if (isRead) readRtts += rtts;
          else writeRtts += rtts;
        }
      }),
    );
    const elapsed = Math.max(performance.now() - start, 1e-3);
    const cpu = process.cpuUsage(cpu0);
    // Background work of this system (counted in its CPU time above) must not run into the next
    // window, which may be the other system's.
    for (const st of stores) await st.settle?.();
    const wrs1 = d.nicWorkRequests?.();
    const reads = readH.totalCount;
    const writes = writeH.totalCount;
    const r: RsCellResult = {
      opsPerSecond: (ops * 1000) / elapsed,
      opsPerCpuSecond: c.link === 'in-process' && cpu.user + cpu.system > 0 ? (allOps * 1e6) / (cpu.user + cpu.system) : undefined,
      p50Ns: pct(all, 50),
      p99Ns: pct(all, 99),
      readP50Ns: pct(readH, 50),
      readP99Ns: pct(readH, 99),
      writeP50Ns: pct(writeH, 50),
      writeP99Ns: pct(writeH, 99),
      reads,
      writes,
      errors,
      // At the cell's mix; a window that measured no operation of a kind of the mix: its own mix.
      roundTripsPerOp: counted && ops > 0 ? (atMix(c.readPct, reads > 0 ? readRtts / reads : undefined, writes > 0 ? writeRtts / writes : undefined) ?? (readRtts + writeRtts) / ops) : undefined,
      readRoundTripsPerOp: counted && reads > 0 ? readRtts / reads : undefined,
      writeRoundTripsPerOp: counted && writes > 0 ? writeRtts / writes : undefined,
      workRequestsPerOp: wrs0 !== undefined && wrs1 !== undefined && allOps > 0 ? (wrs1 - wrs0) / allOps : undefined,
    };
    all.destroy();
    readH.destroy();
    writeH.destroy();
    return r;
  }
}

/** One cell of one system: deploy, one window, tear down. */
export async function runRsCell(factory: RsSystemFactory, c: RsCellConfig, plan: Pick<RsPlan, 'blocks'>, ms: number, seed: number): Promise<RsCellResult> {
  const cell = await deployRsCell(factory, c, plan, seed);
  try {
    return await measureRsWindow(cell, c, plan, ms, seed);
  } finally {
    await cell.close();
  }
}

/** The median of each figure over a cell's windows (counts summed). */
function combine(rs: RsCellResult[]): RsCellResult {
  const med = (f: (r: RsCellResult) => number | undefined): number | undefined => {
    const xs = rs.map(f).filter((x): x is number => x !== undefined);
    return xs.length === rs.length ? median(xs) : undefined;
  };
  return {
    opsPerSecond: med((r) => r.opsPerSecond)!,
    opsPerCpuSecond: med((r) => r.opsPerCpuSecond),
    p50Ns: med((r) => r.p50Ns)!,
    p99Ns: med((r) => r.p99Ns)!,
    readP50Ns: med((r) => r.readP50Ns)!,
    readP99Ns: med((r) => r.readP99Ns)!,
    writeP50Ns: med((r) => r.writeP50Ns)!,
    writeP99Ns: med((r) => r.writeP99Ns)!,
    reads: rs.reduce((a, r) => a + r.reads, 0),
    writes: rs.reduce((a, r) => a + r.writes, 0),
    errors: rs.reduce((a, r) => a + r.errors, 0),
    roundTripsPerOp: med((r) => r.roundTripsPerOp),
    readRoundTripsPerOp: med((r) => r.readRoundTripsPerOp),
    writeRoundTripsPerOp: med((r) => r.writeRoundTripsPerOp),
    workRequestsPerOp: med((r) => r.workRequestsPerOp),
  };
}

export const cellName = (c: RsCellConfig): string => `${c.link}/n${c.nodes}/${c.clients}c/${c.blockBytes}B/${c.readPct}r/${c.dist}`;
const label = (c: RsCellConfig): string => `${c.link === 'tcp' ? 'tcp ' : ''}N=${c.nodes} ${c.clients}c ${c.blockBytes}B ${c.readPct}%r ${c.dist}`;
const us = (ns: number): string => (ns / 1000).toFixed(1);
const round = (x: number): number => Math.round(x * 1000) / 1000;
const same = (a: RsCellConfig, b: RsCellConfig): boolean => cellName(a) === cellName(b);

const PRISM = 'prism-rs';
const LOCK = 'lock-based';
const PAPER = 'lock-paper';

/** The suite on `plan` with `factories` (the test runs a tiny plan; PRISM-RS is compared when it is among them). */
export async function runRsBench(o: BenchOptions, plan: RsPlan = o.quick ? RS_QUICK_PLAN : RS_FULL_PLAN, factories: readonly RsSystemFactory[] = RS_FACTORIES): Promise<BenchReport> {
  const prism = factories.find((f) => f.name === PRISM);
  const lock = factories.find((f) => f.name === LOCK);
  const rows: Array<Record<string, unknown>> = [];
  const results = new Map<string, RsCellResult>();
  const total = plan.cells.length;
  // JIT warm-up of every system's path, discarded: otherwise the first cell measured pays for it.
  o.progress(0, total, 'warm-up');
  for (const f of factories) await runRsCell(f, { ...RS_BASE_CELL, clients: 1 }, plan, Math.min(150, plan.cellMs), o.seed);
  let done = 0;
  for (const c of plan.cells) {
    o.progress(done, total, label(c));
    const fs = factories.filter((f) => f.links.includes(c.link));
    const cells: DeployedCell[] = [];
    try {
      for (const f of fs) cells.push(await deployRsCell(f, c, plan, o.seed));
      const windows: RsCellResult[][] = fs.map(() => []);
      for (let w = 0; w < plan.windows; w++) {
        const order = w % 2 === 0 ? fs.map((_, i) => i) : fs.map((_, i) => fs.length - 1 - i);
        for (const i of order) windows[i]!.push(await measureRsWindow(cells[i]!, c, plan, c.link === 'tcp' ? plan.tcpCellMs : plan.cellMs, o.seed + w));
      }
      fs.forEach((f, i) => {
        const r = combine(windows[i]!);
        results.set(`${f.name}|${cellName(c)}`, r);
        rows.push({ system: f.name, ...c, ...r, windows: plan.windows, opsPerSecond: Math.round(r.opsPerSecond), opsPerCpuSecond: r.opsPerCpuSecond === undefined ? null : Math.round(r.opsPerCpuSecond), roundTripsPerOp: r.roundTripsPerOp ?? null, readRoundTripsPerOp: r.readRoundTripsPerOp ?? null, writeRoundTripsPerOp: r.writeRoundTripsPerOp ?? null, workRequestsPerOp: r.workRequestsPerOp === undefined ? null : round(r.workRequestsPerOp) });
      });
    } finally {
      for (const x of cells) await x.close();
    }
    done++;
  }
  o.progress(total, total, 'done');

  const get = (system: string, c: RsCellConfig): RsCellResult | undefined => results.get(`${system}|${cellName(c)}`);
  const ratios: Record<string, number> = {};
  if (prism !== undefined && lock !== undefined) {
    const pair = (c: RsCellConfig): [RsCellResult, RsCellResult] | undefined => {
      const p = get(PRISM, c);
      const l = get(LOCK, c);
      return p !== undefined && l !== undefined ? [p, l] : undefined;
    };
    const div = (a: number | undefined, b: number | undefined): number | undefined => (a !== undefined && b !== undefined && b > 0 ? round(a / b) : undefined);
    const put = (k: string, v: number | undefined): void => {
      if (v !== undefined && Number.isFinite(v)) ratios[k] = v;
    };
    const base = pair(RS_BASE_CELL);
    if (base !== undefined) {
      const [p, l] = base;
      put('throughputVsLockBased', div(p.opsPerSecond, l.opsPerSecond));
      put('cpuThroughputVsLockBased', div(p.opsPerCpuSecond, l.opsPerCpuSecond));
      put('p50VsLockBased', div(p.p50Ns, l.p50Ns));
      put('p99VsLockBased', div(p.p99Ns, l.p99Ns));
      put('readP50VsLockBased', div(p.readP50Ns, l.readP50Ns));
      put('writeP50VsLockBased', div(p.writeP50Ns, l.writeP50Ns));
      put('writeP99VsLockBased', div(p.writeP99Ns, l.writeP99Ns));
      put('roundTripsPerOpVsLockBased', div(p.roundTripsPerOp, l.roundTripsPerOp));
      put('workRequestsPerOpVsLockBased', div(p.workRequestsPerOp, l.workRequestsPerOp));
    }
    // The paper's baseline (lock → access → unlock), when it ran: the published ratio's own denominator.
    const pp = get(PRISM, RS_BASE_CELL);
    const pl = get(PAPER, RS_BASE_CELL);
    if (pp !== undefined && pl !== undefined) {
      put('throughputVsPaperLockBased', div(pp.opsPerSecond, pl.opsPerSecond));
      put('cpuThroughputVsPaperLockBased', div(pp.opsPerCpuSecond, pl.opsPerCpuSecond));
      put('roundTripsPerOpVsPaperLockBased', div(pp.roundTripsPerOp, pl.roundTripsPerOp));
      put('workRequestsPerOpVsPaperLockBased', div(pp.workRequestsPerOp, pl.workRequestsPerOp));
    }
    for (const [k, v] of Object.entries(RS_VARIATIONS)) {
      const x = pair({ ...RS_BASE_CELL, ...v });
      if (x === undefined) continue;
      put(`throughputVsLockBased_${k}`, div(x[0].opsPerSecond, x[1].opsPerSecond));
      put(`p50VsLockBased_${k}`, div(x[0].p50Ns, x[1].p50Ns));
      put(`cpuThroughputVsLockBased_${k}`, div(x[0].opsPerCpuSecond, x[1].opsPerCpuSecond));
    }
    const logs = plan.cells.filter((c) => c.link === 'in-process').map(pair).filter((x) => x !== undefined && x[0].opsPerSecond > 0 && x[1].opsPerSecond > 0).map((x) => Math.log(x![0].opsPerSecond / x![1].opsPerSecond));
    if (logs.length > 0) put('throughputVsLockBased_geomean', round(Math.exp(logs.reduce((a, b) => a + b, 0) / logs.length)));
    const cpuLogs = plan.cells.map(pair).filter((x) => x !== undefined && (x[0].opsPerCpuSecond ?? 0) > 0 && (x[1].opsPerCpuSecond ?? 0) > 0).map((x) => Math.log(x![0].opsPerCpuSecond! / x![1].opsPerCpuSecond!));
    if (cpuLogs.length > 0) put('cpuThroughputVsLockBased_geomean', round(Math.exp(cpuLogs.reduce((a, b) => a + b, 0) / cpuLogs.length)));
  }

  const summary: string[] = [];
  if (prism === undefined) {
    summary.push('PRISM-RS is not built yet (src/apps/rs exports no RsClient on this branch): only the lock-based baseline was measured; no ratio is reported.');
  }
  summary.push(
    `${factories.map((f) => f.name).join(' vs ')}: ${plan.blocks} blocks, closed loops, ${plan.windows} windows of ${plan.cellMs} ms per system per in-process cell (TCP: ${plan.tcpCellMs} ms), systems alternating (A B B A), medians; latencies from HDR histograms; measured wall clock on this machine)`,
  );
  if (ratios.throughputVsLockBased !== undefined) {
    summary.push(
      `throughputVsLockBased = ${ratios.throughputVsLockBased} (${label(RS_BASE_CELL)}; PRISM paper on hardware: ≈ 1.5); p50 ×${ratios.p50VsLockBased}, p99 ×${ratios.p99VsLockBased}; round trips per op ×${ratios.roundTripsPerOpVsLockBased ?? '?'}, NIC work requests per op ×${ratios.workRequestsPerOpVsLockBased ?? '?'}; geometric mean over the in-process cells: ×${ratios.throughputVsLockBased_geomean ?? '?'}`,
    );
    summary.push(
      `cpuThroughputVsLockBased = ${ratios.cpuThroughputVsLockBased ?? '?'} (operations per second of CPU: the work per operation, steadier than wall clock on a shared machine); geometric mean ×${ratios.cpuThroughputVsLockBased_geomean ?? '?'}`,
    );
    summary.push(`  by dimension: ${Object.keys(RS_VARIATIONS).filter((k) => ratios[`throughputVsLockBased_${k}`] !== undefined).map((k) => `${k} ×${ratios[`throughputVsLockBased_${k}`]}`).join(', ')}`);
  }
  summary.push(`  ${'system'.padEnd(11)} ${'cell'.padEnd(34)} ${'p50/p99 µs'.padEnd(14)} ${'read p50 µs'.padEnd(12)} ${'write p50 µs'.padEnd(13)} ${'RTT/op'.padEnd(7)} ${'WR/op'.padEnd(7)} ${'ops/CPU-s'.padEnd(10)} throughput`);
  for (const c of plan.cells) {
    for (const f of factories) {
      const r = get(f.name, c);
      if (r === undefined) continue;
      summary.push(
        `  ${f.name.padEnd(11)} ${label(c).padEnd(34)} ${`${us(r.p50Ns)}/${us(r.p99Ns)}`.padEnd(14)} ${(r.reads > 0 ? us(r.readP50Ns) : '-').padEnd(12)} ${(r.writes > 0 ? us(r.writeP50Ns) : '-').padEnd(13)} ${(r.roundTripsPerOp === undefined ? '-' : r.roundTripsPerOp.toFixed(2)).padEnd(7)} ${(r.workRequestsPerOp === undefined ? '-' : r.workRequestsPerOp.toFixed(1)).padEnd(7)} ${(r.opsPerCpuSecond === undefined ? '-' : fmtRate(r.opsPerCpuSecond).replace('/s', '')).padEnd(10)} ${fmtRate(r.opsPerSecond)}${r.errors > 0 ? ` (${r.errors} errors)` : ''}`,
      );
    }
  }
  summary.push(
    'A round trip here costs CPU (message objects, every replica\'s NIC engine, promise hops; over TCP also the codec and syscalls), not wire time, and the emulated NICs share the cores',
    'with the clients: the ratios compare the work per operation of the two protocols (messages per phase, work requests per message, retries under contention), not hardware latency.',
  );
  const chartRows = rows
    .filter((r) => plan.cells.some((c) => same(c, r as unknown as RsCellConfig)))
    .map((r) => ({ series: String(r.system), cell: label(r as unknown as RsCellConfig), opsPerSecond: Number(r.opsPerSecond), p50us: Number(r.p50Ns) / 1000, p99us: Number(r.p99Ns) / 1000, opsPerCpuSecond: r.opsPerCpuSecond === null ? 0 : Number(r.opsPerCpuSecond), roundTripsPerOp: r.roundTripsPerOp === null ? 0 : Number(r.roundTripsPerOp) }));
  const chartCells = o.quick || plan.cells.length <= 12 ? chartRows : chartRows.filter((r) => oneAtATime().some((c) => label(c) === r.cell));
  const charts: ChartSpec[] = [
    barChart('throughput', `throughput (ops/s), ${factories.map((f) => f.name).join(' vs ')}`, chartCells, { x: 'cell', y: 'opsPerSecond', yTitle: 'operations per second', group: 'series', width: 720 }),
    barChart('latency-p50', 'p50 latency (µs), all operations', chartCells, { x: 'cell', y: 'p50us', yTitle: 'p50 (µs)', group: 'series', width: 720 }),
    barChart('latency-p99', 'p99 latency (µs), all operations', chartCells, { x: 'cell', y: 'p99us', yTitle: 'p99 (µs)', group: 'series', width: 720 }),
    barChart('cpu-throughput', 'operations per second of CPU time (in-process cells)', chartCells.filter((r) => r.opsPerCpuSecond > 0), { x: 'cell', y: 'opsPerCpuSecond', yTitle: 'operations per CPU second', group: 'series', width: 720 }),
    barChart('round-trips', 'round trips per operation', chartCells, { x: 'cell', y: 'roundTripsPerOp', yTitle: 'round trips per op', group: 'series', width: 720 }),
  ];
  return {
    suite: 'rs',
    config: {
      ...machineDescription(),
      quick: o.quick,
      seed: o.seed,
      systems: factories.map((f) => ({ name: f.name, description: f.description, links: f.links })),
      prismRs: prism !== undefined ? 'measured' : 'not built yet: src/apps/rs exports no RsClient on this branch',
      baseCell: RS_BASE_CELL,
      msPerCell: plan.cellMs,
      windowsPerCell: plan.windows,
      msPerTcpCell: plan.tcpCellMs,
      blocks: plan.blocks,
      zipfExponent: 0.99,
      nic: { ddio: true, drain: 'eager' },
      links: ['in-process immediate, every replica its own region, NIC and fabric', 'tcp 127.0.0.1, the replicas node hosts in one child process (dist/bench/rs-server.js)'],
      timing: 'measured wall clock',
    },
    rows,
    ratios,
    summary,
    charts,
  };
}

export const rsBench: BenchSuite = {
  name: 'rs',
  description: "PRISM-RS vs lock-based replication (SIGMOD'23-guided, and the paper's lock → access → unlock) in the same run: N = 3 / 5, 1–8 clients, 64 B – 4 KiB blocks, 50 % / 95 % reads, uniform / Zipf; throughput, p50/p99 (HDR), round trips and NIC work requests per op; in-process and over TCP",
  run: (o: BenchOptions) => runRsBench(o),
};
