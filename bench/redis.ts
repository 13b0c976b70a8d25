/**
 * bench redis: durable requests against the server a user knows (issue 29). Redis with an
 * append-only file (`appendonly yes`) beside `pmrpc serve`, with the same connections and requests
 * in flight (2 × 32 by default), the same payload size (48 B by default) and the AOF and the PM file
 * in one temp dir (one filesystem, named in the output):
 *
 * - `appendfsync always` (Redis acknowledges a write after `fsync` of its AOF) vs `serve --strict`
 *   (pmrpc acknowledges a request durable after `msync` of the ring and the redo log):
 *   ratio `strict_over_redis_always`;
 * - `appendfsync no` (Redis acknowledges after `write(2)` to the AOF; the kernel writes it back
 *   when it likes) vs plain `serve` (durable in the emulated PM, not across a machine crash):
 *   ratio `pm_over_redis_nofsync`.
 *
 * Redis is driven by `redis-benchmark` (its CSV output parsed here: SET, `-c` connections × `-P`
 * pipelined requests), pmrpc by bench tcp's load client on the public client API (rpcCell, the one
 * mechanism for driving a served node); both servers are separate processes. The cells alternate
 * (Redis always, pmrpc strict, pmrpc strict with the second strategy — wrflush —, Redis no, pmrpc
 * plain) and each figure is the median of the passes.
 * Without `redis-server` and `redis-benchmark` on PATH the suite is skipped with a note (exit 0).
 */
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { defineErrorCodes, PmrpcError, type ErrorCodesOf } from '../pmem/index.js';
import type { RpcStrategy } from '../src/rpc/index.js';
import { filesystemOf, fmtRate, machineDescription, median } from './measure.js';
import { FROZEN_MIN_MS, SLEEP_MS, startCanary } from './frozen.js';
import { rpcCell, type Plan } from './tcp.js';
import { loadCommand, pinServer, placementNote } from './placement.js';
import type { BenchOptions, BenchReport, BenchSuite } from './types.js';

export const RedisBenchErrorCodes = defineErrorCodes('bench', {
  /** redis-server did not start, or redis-benchmark failed or printed no SET figure (bench redis). */
  REDIS_BENCH_FAILED: 'PMRPC_ERR_REDIS_BENCH_FAILED',
});

declare module '../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof RedisBenchErrorCodes> {}
}

export interface RedisPlan {
  /** Connections (redis-benchmark -c; pmrpc clients). */
  clients: number;
  /** Requests in flight per connection (redis-benchmark -P; pmrpc calls in flight per client). */
  window: number;
  /** Value / payload bytes (redis-benchmark -d; the pmrpc request payload). */
  payloadBytes: number;
  warmMs: number;
  cellMs: number;
  /** Alternated passes; each figure is the median over them. */
  passes: number;
  /** The pmrpc strategy (`serve --strategy`; wflush is serve's default). */
  strategy: RpcStrategy;
  /**
   * A second `serve --strict` cell with this strategy (row `pmrpc-strict-alt`, ratio
   * `strict_<strategy>_over_redis_always`): wrflush, whose ACK is the server CPU's, after the
   * batch's msync — the one that runs off the JS thread while the next batch is received.
   */
  strictAltStrategy: RpcStrategy;
}

export const REDIS_QUICK: RedisPlan = { clients: 2, window: 32, payloadBytes: 48, warmMs: 400, cellMs: 1000, passes: 3, strategy: 'wflush', strictAltStrategy: 'wrflush' };
export const REDIS_FULL: RedisPlan = { clients: 2, window: 32, payloadBytes: 48, warmMs: 1000, cellMs: 3000, passes: 5, strategy: 'wflush', strictAltStrategy: 'wrflush' };

/** One row of redis-benchmark's `--csv` output (latencies in ms; absent in Redis < 7, whose CSV has test and rps only). */
export interface RedisCsvRow {
  test: string;
  rps: number;
  avgLatencyMs?: number;
  p50LatencyMs?: number;
  p99LatencyMs?: number;
}

/**
 * Parses redis-benchmark's `--csv` output: an optional header line (`"test","rps",…` in Redis 7)
 * and one line per test of quoted fields. Throws PMRPC_ERR_REDIS_BENCH_FAILED when no line carries a
 * test name and a finite rps.
 */
export function parseRedisBenchmarkCsv(text: string): RedisCsvRow[] {
  const unquote = (f: string): string => f.trim().replace(/^"(.*)"$/, '$1');
  let header = ['test', 'rps'];
  const rows: RedisCsvRow[] = [];
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === '') continue;
    const fields = line.split(',').map(unquote);
    if (fields[0] === 'test') {
      header = fields;
      continue;
    }
    const at = (name: string): number | undefined => {
      const i = header.indexOf(name);
      const v = i < 0 ? undefined : Number(fields[i]);
      return v === undefined || !Number.isFinite(v) ? undefined : v;
    };
    const rps = at('rps');
    if (fields.length < 2 || fields[0] === '' || rps === undefined) continue;
    const row: RedisCsvRow = { test: fields[0]!, rps };
    const avg = at('avg_latency_ms');
    const p50 = at('p50_latency_ms');
    const p99 = at('p99_latency_ms');
    if (avg !== undefined) row.avgLatencyMs = avg;
    if (p50 !== undefined) row.p50LatencyMs = p50;
    if (p99 !== undefined) row.p99LatencyMs = p99;
    rows.push(row);
  }
  if (rows.length === 0) throw new PmrpcError(RedisBenchErrorCodes.REDIS_BENCH_FAILED, `redis-benchmark printed no CSV result line (test, rps): ${JSON.stringify(text.slice(0, 200))}`);
  return rows;
}

/** The full path of an executable `name` on `pathEnv` (a PATH value), or undefined. */
export function findOnPath(name: string, pathEnv: string | undefined): string | undefined {
  for (const dir of (pathEnv ?? '').split(delimiter)) {
    if (dir === '') continue;
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      // not here
    }
  }
  return undefined;
}

const run = promisify(execFile);

async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** Waits until a Redis server answers PING on `port` (at most 10 s). */
async function redisReady(port: number, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) break;
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port });
      s.on('error', () => resolve(false));
      s.on('connect', () => s.write('PING\r\n'));
      s.on('data', (b) => {
        s.destroy();
        resolve(b.toString('latin1').startsWith('+PONG'));
      });
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new PmrpcError(RedisBenchErrorCodes.REDIS_BENCH_FAILED, `redis-server on port ${port} did not answer PING within 10 s (exit code ${child.exitCode})`);
}

interface RedisCell {
  opsPerSecond: number;
  p50us: number | null;
  p99us: number | null;
  requests: number;
  /** The frozen-time canary over the measured run (frozen.ts): ms a second the machine stopped every thread. */
  frozenMsPerSecond: number;
}

/** One Redis cell: a fresh redis-server (AOF in `dir`), a warm-up run sizing the measured run to ≈ cellMs, the measured run. */
async function redisCell(bins: { server: string; benchmark: string }, dir: string, fsync: 'always' | 'no', plan: RedisPlan): Promise<RedisCell> {
  const port = await freePort();
  const data = join(dir, `redis-${fsync}-${port}`);
  mkdirSync(data);
  const child = spawn(bins.server, ['--port', String(port), '--bind', '127.0.0.1', '--dir', data, '--appendonly', 'yes', '--appendfsync', fsync, '--save', '', '--daemonize', 'no', '--protected-mode', 'no', '--loglevel', 'warning'], { stdio: 'ignore' });
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  try {
    await redisReady(port, child);
    // As the pmrpc cells: redis-server's main thread on one CPU, redis-benchmark on another (placement.ts).
    pinServer(child.pid);
    const bench = async (n: number): Promise<RedisCsvRow> => {
      const args = ['-h', '127.0.0.1', '-p', String(port), '-c', String(plan.clients), '-P', String(plan.window), '-t', 'set', '-d', String(plan.payloadBytes), '-r', '100000', '-n', String(n), '--csv'];
      let out: string;
      try {
        const [command, commandArgs] = loadCommand(bins.benchmark, args);
        out = (await run(command, commandArgs, { maxBuffer: 1 << 20 })).stdout;
      } catch (e) {
        throw new PmrpcError(RedisBenchErrorCodes.REDIS_BENCH_FAILED, `redis-benchmark ${args.join(' ')} failed: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
      }
      const row = parseRedisBenchmarkCsv(out).find((r) => r.test === 'SET');
      if (row === undefined) throw new PmrpcError(RedisBenchErrorCodes.REDIS_BENCH_FAILED, `redis-benchmark printed no SET line: ${JSON.stringify(out.slice(0, 200))}`);
      return row;
    };
    // Warm-up of ≈ warmMs at a first guess of the rate, then a measured run sized from the warm-up's rate.
    const warm = await bench(Math.max(2 * plan.clients * plan.window, Math.round((20_000 * plan.warmMs) / 1000)));
    const n = Math.max(10 * plan.clients * plan.window, Math.round((warm.rps * plan.cellMs) / 1000));
    const canary = await startCanary();
    let m: RedisCsvRow;
    try {
      m = await bench(n);
    } catch (e) {
      await canary.stop();
      throw e;
    }
    const frozen = await canary.stop();
    return { frozenMsPerSecond: frozen.frozenMsPerSecond, opsPerSecond: m.rps, p50us: m.p50LatencyMs === undefined ? null : Math.round(m.p50LatencyMs * 1000), p99us: m.p99LatencyMs === undefined ? null : Math.round(m.p99LatencyMs * 1000), requests: n };
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(t);
    rmSync(data, { recursive: true, force: true }); // its AOF: the next cells write beside nothing
  }
}

const r3 = (x: number): number => Math.round(x * 1000) / 1000;

/**
 * Before each cell, what earlier cells left dirty on the filesystem (an `appendfsync no` AOF, a
 * plain `serve`'s mapped PM file) is written back (`sync -f`: syncfs of the filesystem holding
 * `dir`), so no cell's fsyncs or msyncs share the disk with another cell's write-back. Best
 * effort: without `sync` on PATH the cells run as they are.
 */
export function settleDisk(dir: string): void {
  spawnSync('sync', ['-f', dir], { stdio: 'ignore' });
}

export const REDIS_SKIP_NOTE = 'skipped: redis-server and redis-benchmark are not both on PATH (Debian: apt-get install redis-server redis-tools); nothing was measured';

/** Runs the suite; `env` supplies PATH (the test passes one without Redis to see the skip). */
export async function runRedisBench(o: BenchOptions, plan: RedisPlan, env: NodeJS.ProcessEnv = process.env): Promise<BenchReport> {
  const server = findOnPath('redis-server', env.PATH);
  const benchmark = findOnPath('redis-benchmark', env.PATH);
  const base = { machine: machineDescription(), plan };
  if (server === undefined || benchmark === undefined) {
    o.progress(1, 1, 'skipped');
    return { suite: 'redis', config: { ...base, skipped: true, note: REDIS_SKIP_NOTE }, rows: [], ratios: {}, summary: [`pmrpc bench redis: ${REDIS_SKIP_NOTE}`] };
  }
  const version = spawnSync(server, ['--version'], { encoding: 'utf8' }).stdout.trim();
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-bench-redis-'));
  const fs = filesystemOf(dir);
  const cellPlan: Plan = { clients: plan.clients, window: plan.window, warmMs: plan.warmMs, cellMs: plan.cellMs, latencyCellMs: plan.cellMs };
  const order = ['redis-always', 'pmrpc-strict', 'pmrpc-strict-alt', 'redis-no', 'pmrpc'] as const;
  type Cell = (typeof order)[number];
  const results = new Map<Cell, Array<{ opsPerSecond: number; p50us: number | null; p99us: number | null; frozenMsPerSecond: number }>>(order.map((c) => [c, []]));
  const total = plan.passes * order.length;
  let done = 0;
  try {
    for (let pass = 0; pass < plan.passes; pass++) {
      for (const cell of order) {
        o.progress(done++, total, `${cell} (pass ${pass + 1})`);
        settleDisk(dir);
        if (cell === 'redis-always' || cell === 'redis-no') {
          results.get(cell)!.push(await redisCell({ server, benchmark }, dir, cell === 'redis-always' ? 'always' : 'no', plan));
        } else {
          const strategy = cell === 'pmrpc-strict-alt' ? plan.strictAltStrategy : plan.strategy;
          const r = await rpcCell(strategy, cellPlan, o.seed + pass, 'result', { strict: cell !== 'pmrpc', payloadBytes: plan.payloadBytes, baseDir: dir, canary: true });
          results.get(cell)!.push({ opsPerSecond: r.opsPerSecond, p50us: r.durableP50us, p99us: r.durableP99us, frozenMsPerSecond: r.frozen?.frozenMsPerSecond ?? 0 });
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  o.progress(total, total, 'done');
  const med = (c: Cell) => {
    const rs = results.get(c)!;
    const lat = (f: 'p50us' | 'p99us') => (rs.every((r) => r[f] !== null) ? Math.round(median(rs.map((r) => r[f]!))) : null);
    return { opsPerSecond: Math.round(median(rs.map((r) => r.opsPerSecond))), p50us: lat('p50us'), p99us: lat('p99us'), runs: rs.map((r) => Math.round(r.opsPerSecond)), frozenMsPerSecond: Math.round(median(rs.map((r) => r.frozenMsPerSecond)) * 10) / 10 };
  };
  const what: Record<Cell, string> = {
    'redis-always': 'Redis, appendonly yes, appendfsync always (ack after fsync of the AOF)',
    'pmrpc-strict': `pmrpc serve --strict --strategy ${plan.strategy} (ack after msync of the ring and log)`,
    'pmrpc-strict-alt': `pmrpc serve --strict --strategy ${plan.strictAltStrategy} (ack after msync of the ring and log)`,
    'redis-no': 'Redis, appendonly yes, appendfsync no (ack after write to the AOF, no fsync)',
    pmrpc: `pmrpc serve --strategy ${plan.strategy} (durable in the emulated PM, no msync)`,
  };
  const rows = order.map((c) => ({ cell: c, name: what[c], ...med(c) }));
  const ops = (c: Cell) => rows.find((r) => r.cell === c)!.opsPerSecond;
  const ratios: Record<string, number> = {};
  if (ops('redis-always') > 0) ratios.strict_over_redis_always = r3(ops('pmrpc-strict') / ops('redis-always'));
  if (ops('redis-always') > 0) ratios[`strict_${plan.strictAltStrategy}_over_redis_always`] = r3(ops('pmrpc-strict-alt') / ops('redis-always'));
  if (ops('redis-no') > 0) ratios.pm_over_redis_nofsync = r3(ops('pmrpc') / ops('redis-no'));
  const fsLine = `${fs.type} on ${fs.device} (mounted on ${fs.mountedOn})`;
  const summary = [
    `pmrpc bench redis${o.quick ? ' --quick' : ''} — ${version}; ${plan.clients} connections × ${plan.window} requests in flight, ${plan.payloadBytes}-byte values/payloads, loopback`,
    `Redis: redis-benchmark -c ${plan.clients} -P ${plan.window} -t set -d ${plan.payloadBytes} -r 100000 --csv; pmrpc: RemoteRpcClient load (bench tcp's), the digest handler, results awaited`,
    `placement: ${placementNote()}`,
    `AOF and PM file in one temp dir: ${fsLine}; medians of ${plan.passes} alternated passes of ≈ ${plan.cellMs} ms, the filesystem synced before each cell (sync -f), pmrpc cells counted once their rate is steady (bench tcp's warm-up); ${String(base.machine.cpus)} CPUs, Node ${process.version}`,
    '',
    ...rows.map((r) => `  ${r.name.padEnd(82)} ${fmtRate(r.opsPerSecond).padEnd(11)} p50 ${r.p50us ?? '?'} µs, p99 ${r.p99us ?? '?'} µs, frozen ${r.frozenMsPerSecond} ms/s  (runs ${r.runs.join(' / ')})`),
    '',
    `frozen: ms a second in which a thread sleeping ${SLEEP_MS} ms at a time woke ≥ ${FROZEN_MIN_MS} ms late (median of the passes) — the machine stopped every thread: a VM over its host's CPU quota (the guest's CPU and its disk flushes together), or CPU contention; docs/benchmarks.md`,
    `strict ÷ Redis appendfsync always ×${ratios.strict_over_redis_always ?? '?'} (issue 29 step: ≥ 0.6; ${plan.strictAltStrategy} ×${ratios[`strict_${plan.strictAltStrategy}_over_redis_always`] ?? '?'}); pmrpc ÷ Redis appendfsync no ×${ratios.pm_over_redis_nofsync ?? '?'} (≥ 0.4)`,
    'latency: Redis from redis-benchmark (request → reply); pmrpc call → durable',
  ];
  return {
    suite: 'redis',
    config: { ...base, redis: version, filesystem: fs, redisDriver: 'redis-benchmark (CSV)', pmrpcDriver: 'bench tcp rpcCell: RemoteRpcClient, pmrpc serve child process, counted once its rate is steady (bench tcp warmUp)', settle: 'sync -f of the filesystem before each cell', placement: placementNote(), canary: `frozen-time canary over each counted run: a thread sleeping ${SLEEP_MS} ms at a time, wake-ups ≥ ${FROZEN_MIN_MS} ms late summed (bench/frozen.ts)`, skipped: false },
    rows,
    ratios,
    summary,
  };
}

export const redisBench: BenchSuite = {
  name: 'redis',
  description: 'pmrpc serve --strict vs Redis appendfsync always, and plain serve vs appendfsync no, same connections and requests in flight, AOF and PM file on one filesystem (skipped when redis-server / redis-benchmark are absent)',
  run: (o) => runRedisBench(o, o.quick ? REDIS_QUICK : REDIS_FULL),
};
