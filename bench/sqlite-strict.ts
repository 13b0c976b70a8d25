/**
 * bench sqlite: pmrpc `strict` durable puts with group commit against better-sqlite3 (WAL,
 * synchronous = FULL, one transaction per group of requests) at the same concurrency, in one run:
 * throughput (requests acknowledged AND processed per second) with latency beside it, as medians of
 * interleaved passes (alternate runs: a loaded machine hits both systems alike).
 *
 * pmrpc side: one in-process client keeping `outstanding` requests in flight on a file-backed
 * `strict` region (msync, durable across a machine crash; the msync on the JS thread —
 * `msyncInline`, as SQLite's fsync: with one client in lockstep nothing could overlap it), inline no-op handler (one 8-byte effect
 * per request, like the SQLite side's digest row), wrflush (the server persists each poll batch
 * with one drain; its redo-log persists are group-committed per batch, docs/recovery.md), wflush
 * and sflush (the NIC persists each FLUSH; its driver loop group-commits a pass of them,
 * flush/driver.ts) and gpspm (the server CPU persists on the client's flush request). SQLite side:
 * `outstanding` requests per transaction (its group commit: each request waits for its group's fsync).
 */
import { tmpdir } from 'node:os';
import { RPC_STRATEGIES, type RpcStrategy } from '../src/rpc/index.js';
import { closeBenchPool, runCell, wallClock, type BenchClock, type CellPlan, type CellResult } from './flush-cell.js';
import { HEADLINE } from './flush.js';
import { filesystemOf, machineDescription, median } from './measure.js';
import { runSqlite, type SqliteResult } from './sqlite-baseline.js';
import type { BenchOptions, BenchReport, BenchSuite } from './types.js';

export interface StrictPlan {
  cell: CellPlan;
  passes: number;
  payloadBytes: number;
  /** Requests in flight (pmrpc: one client's outstanding requests; SQLite: requests per transaction). */
  outstanding: number;
  strategies: RpcStrategy[];
  /** Where pmrpc's msync runs (CellConfig.msync): 'inline', on the JS thread, as SQLite's fsync. */
  msync: 'inline' | 'pool';
}

export const STRICT_QUICK: StrictPlan = { cell: { warmupMs: 150, measureMs: 800, drainMsMax: 20_000 }, passes: 3, payloadBytes: 1024, outstanding: 16, strategies: ['wrflush', 'wflush', 'sflush', 'gpspm'], msync: 'inline' };
export const STRICT_FULL: StrictPlan = { cell: { warmupMs: 300, measureMs: 2000, drainMsMax: 30_000 }, passes: 5, payloadBytes: 1024, outstanding: 16, strategies: ['wrflush', 'wflush', 'sflush', 'gpspm'], msync: 'inline' };

const us = (ns: number): number => Math.round(ns / 100) / 10;
const r3 = (x: number): number => Math.round(x * 1000) / 1000;

export async function runStrictBench(o: BenchOptions, plan: StrictPlan, clock: BenchClock = wallClock): Promise<BenchReport> {
  for (const s of plan.strategies) if (!RPC_STRATEGIES.includes(s)) throw new TypeError(`unknown strategy ${s}`);
  const pm = new Map<RpcStrategy, CellResult[]>(plan.strategies.map((s) => [s, []]));
  const sq: SqliteResult[] = [];
  const total = plan.passes * (plan.strategies.length + 1);
  let done = 0;
  try {
    for (let pass = 0; pass < plan.passes; pass++) {
      for (const strategy of plan.strategies) {
        o.progress(done++, total, `pmrpc strict ${strategy} (pass ${pass + 1})`);
        pm.get(strategy)!.push(await runCell({ ...HEADLINE, strategy, payloadBytes: plan.payloadBytes, clients: 1, outstanding: plan.outstanding, placement: 'inline', handlerUs: 0, ddio: true, strict: true, msync: plan.msync }, plan.cell, o.seed + pass, clock));
      }
      o.progress(done++, total, `better-sqlite3 group ×${plan.outstanding} (pass ${pass + 1})`);
      sq.push(runSqlite('group', plan.payloadBytes, plan.outstanding, plan.cell, clock));
    }
  } finally {
    await closeBenchPool();
  }
  o.progress(total, total, 'done');
  const sqlite = { throughputPerSecond: Math.round(median(sq.map((s) => s.throughputPerSecond))), p50Us: us(median(sq.map((s) => s.p50Ns))), p99Us: us(median(sq.map((s) => s.p99Ns))) };
  // The disk both sides sync to (pmrpc's strict file and SQLite's database share the OS temp dir).
  const disk = filesystemOf(tmpdir());
  const rows: Array<Record<string, unknown>> = [{ system: `better-sqlite3 WAL FULL, ${plan.outstanding} requests per transaction`, ...sqlite, runs: sq.map((s) => Math.round(s.throughputPerSecond)) }];
  const ratios: Record<string, number> = {};
  const summary: string[] = [
    `bench sqlite: pmrpc strict (group commit) vs better-sqlite3 WAL + synchronous FULL, ${plan.outstanding} requests in flight, ${plan.payloadBytes} B; medians of ${plan.passes} interleaved passes of ${plan.cell.measureMs} ms`,
    `machine: ${String(machineDescription().cpus)} cpus, shared and noisy; disk: ${disk.device} (${disk.type} on ${disk.mountedOn}), both files in ${tmpdir()}`,
    `  better-sqlite3: ${sqlite.throughputPerSecond}/s, p50 ${sqlite.p50Us} µs, p99 ${sqlite.p99Us} µs (a request's latency is its transaction's)`,
  ];
  for (const [strategy, rs] of pm) {
    const row = {
      system: `pmrpc strict ${strategy}, 1 client × ${plan.outstanding} outstanding`,
      throughputPerSecond: Math.round(median(rs.map((r) => r.throughputPerSecond))),
      durableP50Us: us(median(rs.map((r) => r.durableP50Ns))), durableP99Us: us(median(rs.map((r) => r.durableP99Ns))),
      resultP50Us: us(median(rs.map((r) => r.resultP50Ns))), resultP99Us: us(median(rs.map((r) => r.resultP99Ns))),
      runs: rs.map((r) => Math.round(r.throughputPerSecond)),
    };
    rows.push(row);
    const ratio = sqlite.throughputPerSecond > 0 ? r3(row.throughputPerSecond / sqlite.throughputPerSecond) : 0;
    ratios[`strictGroupCommitVsSqliteThroughput_${strategy}`] = ratio;
    ratios[`strictGroupCommitVsSqliteResultP50_${strategy}`] = sqlite.p50Us > 0 ? r3(row.resultP50Us / sqlite.p50Us) : 0;
    summary.push(`  pmrpc ${strategy}: ${row.throughputPerSecond}/s (×${ratio} of SQLite), durable p50 ${row.durableP50Us} µs p99 ${row.durableP99Us} µs, result p50 ${row.resultP50Us} µs p99 ${row.resultP99Us} µs`);
  }
  // The headline: the best strategy's ratio (a user picks the strategy; SQLite has one).
  const best = plan.strategies.reduce((b, st) => ((ratios[`strictGroupCommitVsSqliteThroughput_${st}`] ?? 0) > (ratios[`strictGroupCommitVsSqliteThroughput_${b}`] ?? 0) ? st : b));
  ratios.strictGroupCommitVsSqliteThroughput_best = ratios[`strictGroupCommitVsSqliteThroughput_${best}`] ?? 0;
  summary.push(`  best: pmrpc strict ${best} ×${ratios.strictGroupCommitVsSqliteThroughput_best} of SQLite (strictGroupCommitVsSqliteThroughput_best)`);
  return {
    suite: 'sqlite',
    config: { machine: machineDescription(), disk, plan, pmrpc: `in-process link, file-backed strict region in the OS temp dir (msync ${plan.msync === 'inline' ? 'on the JS thread' : 'on a pool thread'}), inline handler, DDIO on`, sqlite: 'better-sqlite3, journal_mode WAL, synchronous FULL, same directory' },
    rows,
    ratios,
    summary,
  };
}

export const sqliteBench: BenchSuite = {
  name: 'sqlite',
  description: 'pmrpc strict durable puts with group commit vs better-sqlite3 (WAL, synchronous FULL) at the same concurrency: throughput with latency beside it, medians of interleaved passes',
  run: (o) => runStrictBench(o, o.quick ? STRICT_QUICK : STRICT_FULL),
};
