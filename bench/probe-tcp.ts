/**
 * Probes one `bench tcp` throughput cell for stalls: a `pmrpc serve` child and, in this process,
 * its clients (2 × 32 calls in flight, as `bench tcp --quick` and `bench redis`), counted once the
 * rate is steady (bench tcp's warmUp), for `seconds`. Prints the rate second by second, the
 * latency percentiles, the stalls — gaps of at least 2 ms between two completions, in which the
 * whole pipeline stood still (stalls.ts) — the time the machine stopped every thread (the
 * frozen-time canary, frozen.ts) and the server's CPU per request.
 *
 *   node dist/bench/probe-tcp.js wflush 8              # plain serve
 *   node dist/bench/probe-tcp.js wflush 8 strict       # serve --strict (msync before each acknowledgement)
 *   node dist/bench/probe-tcp.js wflush 8 strict bytes=48 json
 *   node dist/bench/probe-tcp.js wflush 20 size=8M     # a smaller PM file (serve --size)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { RpcStrategy } from '../src/rpc/index.js';
import { PAYLOAD_BYTES, RemoteRpcClient } from '../src/server/index.js';
import { FROZEN_MIN_MS, SLEEP_MS, startCanary } from './frozen.js';
import { StallTracker } from './stalls.js';
import { childCpuSplitUs, closedLoop, histogram, MAIN, startChild, stopChild, warmUp } from './tcp.js';
import { pinPair } from './placement.js';

/** A gap this long between two completions is a stall. */
export const STALL_US = 2000;

async function main(): Promise<void> {
  const strategy = (process.argv[2] ?? 'wflush') as RpcStrategy;
  const seconds = Number(process.argv[3] ?? 8);
  const extra = process.argv.slice(4);
  const strict = extra.includes('strict');
  const json = extra.includes('json');
  const payloadBytes = Number(extra.find((a) => a.startsWith('bytes='))?.slice(6) ?? PAYLOAD_BYTES);
  // `size=S`: the PM file's size (serve --size; default 64M, as bench tcp's cells).
  const size = extra.find((a) => a.startsWith('size='))?.slice(5) ?? '64M';
  if (!(seconds > 0) || !(payloadBytes > 0)) throw new Error('usage: probe-tcp.js <strategy> <seconds> [strict] [bytes=N] [size=S] [json]');
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-probe-'));
  const { child, port } = await startChild([MAIN, 'serve', '--create', '--pm', join(dir, 'node.pm'), '--size', size, '--port', '0', '--strategy', strategy, '--json', ...(strict ? ['--strict'] : [])]);
  // Placed as bench tcp's cells: the clients on one CPU, the server on another (placement.ts).
  const placed = pinPair(child.pid);
  const clients: RemoteRpcClient[] = [];
  try {
    for (let k = 0; k < 2; k++) clients.push(await RemoteRpcClient.connect({ port, name: `probe-${k}` }));
    const latency = histogram();
    let measuring = false;
    // Stalls counted as completions come (nothing kept per request: see StallTracker).
    const tracker = new StallTracker(STALL_US);
    let n = 0;
    let t0 = 0;
    const load = closedLoop(clients, 32, payloadBytes, 1, (at) => {
      if (!measuring) return;
      const now = performance.now();
      latency.recordValue(Math.max(1, Math.round((now - at) * 1000)));
      tracker.add((now - t0) * 1000);
      n++;
    });
    const warmMs = await warmUp({ warmMs: 400 }, () => load.completed());
    const canary = await startCanary();
    const cpu0 = childCpuSplitUs(child.pid);
    const own0 = process.cpuUsage();
    t0 = performance.now();
    measuring = true;
    const perSecond: number[] = [];
    for (let s = 0, last = 0; s < seconds; s++) {
      await new Promise((r) => setTimeout(r, 1000));
      perSecond.push(n - last);
      last = n;
    }
    measuring = false;
    const elapsed = performance.now() - t0;
    const cpu1 = childCpuSplitUs(child.pid);
    const own = process.cpuUsage(own0);
    const frozen = await canary.stop();
    await load.stop();
    const s = tracker.summary();
    const report = {
      strategy,
      strict,
      size,
      payloadBytes,
      warmMs: Math.round(warmMs),
      requests: n,
      opsPerSecond: Math.round(n / (elapsed / 1000)),
      perSecond,
      p50us: latency.getValueAtPercentile(50),
      p99us: latency.getValueAtPercentile(99),
      maxUs: latency.maxValue,
      stallMinUs: STALL_US,
      stalls: s.count,
      stalledMs: Math.round(s.totalUs / 100) / 10,
      stalledShare: Math.round(s.share * 1000) / 1000,
      longestGapUs: Math.round(s.maxGapUs),
      /** The first stalls: [ms into the window, length ms]. */
      stallList: s.list.map(([at, len]) => [Math.round(at / 100) / 10, Math.round(len / 100) / 10]),
      frozenMsPerSecond: frozen.frozenMsPerSecond,
      serverCpuUsPerOp: cpu0 === undefined || cpu1 === undefined || n === 0 ? null : Math.round(((cpu1.userUs + cpu1.systemUs - cpu0.userUs - cpu0.systemUs) / n) * 100) / 100,
      /** Of which system (kernel) time: the server's socket syscalls and the loopback delivery its writes run. */
      serverSystemUsPerOp: cpu0 === undefined || cpu1 === undefined || n === 0 ? null : Math.round(((cpu1.systemUs - cpu0.systemUs) / n) * 100) / 100,
      /** This process's (the clients') CPU a request, and its system part. */
      clientCpuUsPerOp: n === 0 ? null : Math.round(((own.user + own.system) / n) * 100) / 100,
      clientSystemUsPerOp: n === 0 ? null : Math.round((own.system / n) * 100) / 100,
    };
    if (json) console.log(JSON.stringify(report));
    else {
      console.log(`${strategy}${strict ? ' strict' : ''} ${payloadBytes} B: ${report.opsPerSecond} requests/s over ${seconds} s (after a ${report.warmMs} ms warm-up); by second ${perSecond.join(' ')}`);
      console.log(`  latency p50 ${report.p50us} µs, p99 ${report.p99us} µs, max ${report.maxUs} µs; server CPU ${report.serverCpuUsPerOp ?? '?'} µs a request (system ${report.serverSystemUsPerOp ?? '?'}), client ${report.clientCpuUsPerOp ?? '?'} (system ${report.clientSystemUsPerOp ?? '?'})`);
      console.log(`  stalls (no completion for ≥ ${STALL_US / 1000} ms): ${s.count}, ${report.stalledMs} ms in all (${(s.share * 100).toFixed(1)} % of the run), the longest ${(s.maxGapUs / 1000).toFixed(1)} ms`);
      console.log(`  frozen (a thread sleeping ${SLEEP_MS} ms woke ≥ ${FROZEN_MIN_MS} ms late: the machine stopped every thread): ${frozen.frozenMs} ms in ${frozen.events} events, ${frozen.frozenMsPerSecond} ms a second`);
    }
  } finally {
    for (const c of clients) await c.close().catch(() => undefined);
    await stopChild(child);
    placed.restore();
    rmSync(dir, { recursive: true, force: true });
  }
}

void main();
