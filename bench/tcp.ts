/**
 * bench tcp: durable RPC between processes over loopback TCP (DESIGN §6, §9).
 *
 * Per strategy: a `pmrpc serve` child process on a fresh PM file (the demo workload: a
 * non-idempotent handler that appends a digest and bumps a counter), and clients in this process
 * (a separate process from the server), each keeping `window` calls in flight. Throughput counts
 * requests acknowledged durable AND processed (their result arrived); latency is call → durable
 * and call → result, in HDR histograms (p50, p99). Beside them, in the same run, the limit the
 * transport sets: a raw TCP echo (another child process) of messages of the same size as a
 * request's ring entry, with the same connections and messages in flight, driven two ways. The
 * BATCHED echo client answers each `data` event with exactly one write of every message it
 * completed — as the RPC client gathers an event-loop turn's frames into one buffer — and is the
 * limit: ratio `<strategy>_over_batched_echo` (issue 29). The PER-MESSAGE echo client (one write per
 * message, the yardstick before issue 29) stays beside it as a second row.
 *
 * Then the latency cells: one client with ONE call outstanding per strategy (call → durable p50),
 * beside the loopback echo's round trip with one message outstanding, measured in the same run
 * before and after them (ratio `<strategy>_one_outstanding_p50_over_echo_rtt`, issue 16: ≤ 4).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import * as hdr from 'hdr-histogram-js';
import type { RpcStrategy } from '../src/rpc/index.js';
import { PAYLOAD_BYTES, RemoteRpcClient, WORKLOAD_METHOD, workloadPayload } from '../src/server/index.js';
import { barChart } from './charts.js';
import { fmtRate, machineDescription, median } from './measure.js';
import { EXIT_WITH_PARENT_JS } from './child.js';
import { startCanary, type FrozenSummary } from './frozen.js';
import { pinPair, placementNote } from './placement.js';
import type { BenchOptions, BenchReport, BenchSuite } from './types.js';

export const MAIN = fileURLToPath(new URL('../cli/main.js', import.meta.url));
const STRATEGIES: RpcStrategy[] = ['wflush', 'sflush', 'wrflush', 'srflush', 'gpspm', 'farm', 'darpc'];
const DECOUPLED: RpcStrategy[] = ['wflush', 'wrflush', 'srflush', 'sflush', 'gpspm'];
/** A ring entry: 32-byte header + the workload's payload. */
const ENTRY_BYTES = 32 + PAYLOAD_BYTES;
/** The two-write echo's acknowledgement of one message: bytes, and their value (a message's bytes are ECHO_BYTE). */
const ACK_BYTES = 8;
const ACK_BYTE = 0xaa;
const ECHO_BYTE = 0x5a;

export interface Plan {
  clients: number;
  window: number;
  warmMs: number;
  cellMs: number;
  /** Length of a one-outstanding latency cell (1 client × 1 call in flight) and of the echo round-trip cell beside it. */
  latencyCellMs: number;
  /**
   * bench tcp's throughput cells (the echoes, then every strategy) run this many times, alternated,
   * and each figure is the median over the passes (as bench redis's): a host's slow streak (the
   * machine at half speed for seconds) then moves one pass's cell, not the ratio. Default 1.
   */
  passes?: number;
}

/**
 * The echo server child: `node -e ECHO_SERVER MODE BYTES`. 'one': each `data` event is written
 * back at once, one write. 'two': as a decoupled durable RPC server answers (its durable signals at
 * the end of the read, its RESULTs at the end of the turn), each `data` event gets TWO writes: at
 * once an ACK_BYTES-byte acknowledgement (bytes ACK_BYTE) per BYTES-byte message it completed, then,
 * at the end of the turn (setImmediate), the echo of its bytes.
 */
const ECHO_SERVER = `
const net = require('node:net');
const mode = process.argv[1] ?? 'one';
const bytes = Number(process.argv[2] ?? 64);
const s = net.createServer({ noDelay: true }, (c) => {
  let pending = 0;
  c.on('data', (b) => {
    if (mode !== 'two') return void c.write(b);
    pending += b.length;
    const n = Math.floor(pending / bytes);
    pending -= n * bytes;
    if (n > 0) c.write(Buffer.alloc(${ACK_BYTES} * n, ${ACK_BYTE}));
    setImmediate(() => c.write(b));
  });
  c.on('error', () => {});
});
s.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: s.address().port }) + '\\n'));
process.on('SIGTERM', () => process.exit(0));
${EXIT_WITH_PARENT_JS}
`;

/** Starts a child process that prints one JSON line {port, …} once listening (bench tcp, bench hostile). */
export function startChild(args: string[], env?: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'inherit'], ...(env === undefined ? {} : { env }) });
  return new Promise((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (b: Buffer) => {
      buf += b.toString('utf8');
      const nl = buf.indexOf('\n');
      if (nl >= 0) resolve({ child, port: (JSON.parse(buf.slice(0, nl)) as { port: number }).port });
    });
    child.on('exit', (code, signal) => reject(new Error(`bench tcp: child ${args.slice(0, 2).join(' ')} exited (code ${code}, signal ${signal}) before listening`)));
  });
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  child.kill('SIGTERM');
  const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(t);
}

/**
 * CPU time (µs) a child process has used so far, user and system apart, from /proc/<pid>/stat
 * (Linux; undefined elsewhere). CPU per request is the figure a loaded machine distorts least:
 * throughput and latency move with the other work on the machine, the server's CPU per request much
 * less (docs/benchmarks.md). The system part is the kernel's work for the process: its syscalls
 * (socket reads and writes) and the loopback's delivery to the peer that a write runs in the writer's
 * context.
 */
export function childCpuSplitUs(pid: number | undefined): { userUs: number; systemUs: number } | undefined {
  if (pid === undefined) return undefined;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // utime and stime are fields 14 and 15 of stat(5), in clock ticks (USER_HZ, 100 on Linux).
    return { userUs: Number(fields[11]) * 10_000, systemUs: Number(fields[12]) * 10_000 };
  } catch {
    return undefined;
  }
}

/** CPU time (user + system, µs) a child process has used so far (childCpuSplitUs). */
export function childCpuUs(pid: number | undefined): number | undefined {
  const t = childCpuSplitUs(pid);
  return t === undefined ? undefined : t.userUs + t.systemUs;
}

const perOp = (us: number | undefined, ops: number): number | null => (us === undefined || ops === 0 ? null : Math.round((10 * us) / ops) / 10);

export const histogram = () => hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3 });

interface RpcCell {
  opsPerSecond: number;
  durableP50us: number;
  durableP99us: number;
  resultP50us: number;
  resultP99us: number;
  completed: number;
  /** CPU µs per completed request in the server process and in this (the clients') process; null where unknown. */
  serverCpuUsPerOp: number | null;
  clientCpuUsPerOp: number | null;
  /** Of which system (kernel) time: the server process's and this process's. */
  serverSystemUsPerOp: number | null;
  clientSystemUsPerOp: number | null;
  /** How long the warm-up took (warmMs, longer on a loaded machine: see warmUp). */
  warmMs: number;
  /** What the frozen-time canary saw over the counted window (ServeOptions.canary; frozen.ts). */
  frozen?: FrozenSummary;
}

/** How a cell's server is started (bench redis reuses the cell): `serve --strict`, the payload size, where the PM file goes. */
export interface ServeOptions {
  /** `pmrpc serve --strict`: msync of the ring and log before every durable acknowledgement. */
  strict?: boolean;
  /** Request payload bytes (default the workload's PAYLOAD_BYTES). */
  payloadBytes?: number;
  /** Directory under which the cell's temp dir (and PM file) is made (default the OS temp dir). */
  baseDir?: string;
  /** Watch the counted window with the frozen-time canary (frozen.ts): how long the machine stopped every thread. */
  canary?: boolean;
}

/** A closed loop over connected clients (closedLoop): its completions so far, and how it stops. */
export interface ClosedLoop {
  /** Results received so far. */
  completed(): number;
  /** Issues no more calls; resolves once every call in flight settled (or after `boundMs`). */
  stop(boundMs?: number): Promise<void>;
}

/**
 * Each client keeps `window` workload calls in flight, a new one as each result comes back (the
 * profile and probe tools' load; rpcCell keeps its own, which also times durability). `onResult`
 * gets each call's start (performance.now()) when its result arrives.
 */
export function closedLoop(clients: readonly RemoteRpcClient[], window: number, payloadBytes: number, seed: number, onResult?: (startedAt: number) => void): ClosedLoop {
  let stopped = false;
  let done = 0;
  const loops = clients.map(
    (c) =>
      new Promise<void>((resolve) => {
        let inflight = 0;
        let seq = 0;
        const payloads = benchPayloads(seed, c.clientId, payloadBytes);
        const issue = (): void => {
          while (!stopped && inflight < window) {
            const at = performance.now();
            inflight++;
            c.rpc.call(WORKLOAD_METHOD, payloads[seq++ % BENCH_PAYLOADS]!).result.then(
              () => {
                inflight--;
                done++;
                onResult?.(at);
                if (stopped && inflight === 0) resolve();
                else issue();
              },
              () => {
                inflight--;
                if (stopped && inflight === 0) resolve();
              },
            );
          }
        };
        issue();
      }),
  );
  return {
    completed: () => done,
    async stop(boundMs = 5000): Promise<void> {
      stopped = true;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.all(loops), new Promise((r) => (timer = setTimeout(r, boundMs)))]);
      clearTimeout(timer);
    },
  };
}

/** The workload's payload of (client, seq), repeated to `bytes` bytes (the digest handler takes any length). */
export function benchPayload(seed: number, clientId: number, seq: number, bytes: number): Uint8Array {
  const p = workloadPayload(seed, clientId, seq);
  if (bytes === p.length) return p;
  const out = new Uint8Array(bytes);
  for (let i = 0; i < bytes; i += p.length) out.set(p.subarray(0, Math.min(p.length, bytes - i)), i);
  return out;
}

/**
 * The load client's payloads: BENCH_PAYLOADS distinct ones per client (benchPayload of seq 1..n),
 * made before the cell and used in turn — as redis-benchmark sends one value — so the client's CPU
 * (which shares the machine with the server) goes to the calls, not to making their bytes. The
 * client copies a payload into its ring entry, so reusing one is safe.
 */
export const BENCH_PAYLOADS = 256;

export function benchPayloads(seed: number, clientId: number, bytes: number): Uint8Array[] {
  return Array.from({ length: BENCH_PAYLOADS }, (_, i) => benchPayload(seed, clientId, i + 1, bytes));
}

/**
 * Each cell starts a fresh server process: until V8 has compiled its hot path, a request costs
 * several times its steady CPU. On a quiet machine warmMs covers thousands of requests; on a loaded
 * one it may cover a few hundred, and the cell would measure the compiler. Even thousands are not
 * a steady state: a fresh `serve` on these machines climbs for 2–4 s (2 × 32 in flight, the rate
 * every 250 ms — plain: 8, 42, 69, 98, 112, 173, 179, 186 … k/s; `--strict`: 11, 37, 52, 58, 55,
 * 55, 70, 73, 79, 66, 78 … k/s, note the pause at 55), so a cell counted from 400 ms measured the
 * climb. So the warm-up lasts warmMs, at least WARM_REQUESTS completed requests, and until the
 * rate is steady (rateSteady: the last second's rate not above WARM_STEADY × the second's before),
 * at most 10 × warmMs (a loaded machine, a rate that never settles: the cell records the warm-up it
 * took, warmMs).
 */
export const WARM_REQUESTS = 3000;
const WARM_STEP_MS = 250;
const WARM_WINDOW_STEPS = 4;
const WARM_STEADY = 1.05;

/** A reading of the completed-request count during a warm-up. */
export interface WarmMark {
  at: number;
  done: number;
}

/**
 * Whether the rate has stopped climbing: over the last `windowSteps` readings it is at most
 * `steady` × its rate over the `windowSteps` before them (false with fewer than 2 × windowSteps + 1).
 * Two windows of a second each: a pause of half a second on the way up (the `--strict` climb above)
 * does not pass for a steady state.
 */
export function rateSteady(marks: readonly WarmMark[], windowSteps = WARM_WINDOW_STEPS, steady = WARM_STEADY): boolean {
  const n = marks.length - 1;
  if (n < 2 * windowSteps) return false;
  const rate = (from: WarmMark, to: WarmMark): number => (to.done - from.done) / Math.max(1e-3, to.at - from.at);
  return rate(marks[n - windowSteps]!, marks[n]!) <= steady * rate(marks[n - 2 * windowSteps]!, marks[n - windowSteps]!);
}

export async function warmUp(plan: Pick<Plan, 'warmMs'>, completedSoFar: () => number): Promise<number> {
  const t0 = performance.now();
  const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
  await sleep(plan.warmMs);
  const step = Math.min(WARM_STEP_MS, plan.warmMs);
  const marks: WarmMark[] = [{ at: performance.now(), done: completedSoFar() }];
  while (performance.now() - t0 < 10 * plan.warmMs) {
    if (marks[marks.length - 1]!.done >= WARM_REQUESTS && rateSteady(marks)) break;
    await sleep(step);
    marks.push({ at: performance.now(), done: completedSoFar() });
  }
  return performance.now() - t0;
}

/**
 * Closed loop: each client keeps `window` calls in flight; after the warm-up, counts results for cellMs.
 * `gate` says when a call stops counting as in flight: at its result (the throughput cells), or as
 * soon as it is durable (the one-outstanding latency cells: a decoupled client goes on once its
 * request is durable, as bench flush's slots do; results are awaited on the side).
 */
export async function rpcCell(strategy: RpcStrategy, plan: Plan, seed: number, gate: 'result' | 'durable' = 'result', serve: ServeOptions = {}): Promise<RpcCell> {
  const dir = mkdtempSync(join(serve.baseDir ?? tmpdir(), 'pmrpc-bench-tcp-'));
  const payloadBytes = serve.payloadBytes ?? PAYLOAD_BYTES;
  const args = [MAIN, 'serve', '--create', '--pm', join(dir, 'node.pm'), '--size', '64M', '--port', '0', '--strategy', strategy, '--json'];
  if (serve.strict === true) args.push('--strict');
  const { child, port } = await startChild(args);
  // The clients (this thread) on one CPU, the server on another (placement.ts).
  const placed = pinPair(child.pid);
  const clients: RemoteRpcClient[] = [];
  try {
    for (let k = 0; k < plan.clients; k++) clients.push(await RemoteRpcClient.connect({ port, name: `bench-${k}` }));
    const durableH = histogram();
    const resultH = histogram();
    let measuring = false;
    let stop = false;
    let completed = 0;
    let warmed = 0;
    const loops = clients.map(
      (c) =>
        new Promise<void>((resolve) => {
          let inflight = 0;
          let unresolved = 0;
          let seq = 0;
          const payloads = benchPayloads(seed, c.clientId, payloadBytes);
          const settled = (): void => {
            if (stop && unresolved === 0) resolve();
            else issue();
          };
          const issue = (): void => {
            while (!stop && inflight < plan.window) {
              const t0 = performance.now();
              const call = c.rpc.call(WORKLOAD_METHOD, payloads[seq++ % BENCH_PAYLOADS]!);
              inflight++;
              unresolved++;
              const m = measuring;
              call.durable.then(() => {
                if (m && measuring) durableH.recordValue(Math.max(1, Math.round((performance.now() - t0) * 1000)));
                if (gate === 'durable') {
                  inflight--;
                  issue();
                }
              }, () => undefined);
              call.result.then(
                () => {
                  if (gate === 'result') inflight--;
                  unresolved--;
                  warmed++;
                  if (m && measuring) {
                    completed++;
                    resultH.recordValue(Math.max(1, Math.round((performance.now() - t0) * 1000)));
                  }
                  settled();
                },
                () => {
                  if (gate === 'result') inflight--;
                  unresolved--;
                  settled();
                },
              );
            }
          };
          issue();
        }),
    );
    const warmMs = await warmUp(plan, () => warmed);
    const canary = serve.canary === true ? await startCanary() : undefined;
    measuring = true;
    const s0 = childCpuSplitUs(child.pid);
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, plan.cellMs));
    measuring = false;
    const seconds = (performance.now() - t0) / 1000;
    const done = completed;
    const s1 = childCpuSplitUs(child.pid);
    const c1 = process.cpuUsage(c0);
    const frozen = await canary?.stop();
    stop = true;
    await Promise.race([Promise.all(loops), new Promise((r) => setTimeout(r, 10_000))]);
    return {
      opsPerSecond: done / seconds,
      durableP50us: durableH.getValueAtPercentile(50),
      durableP99us: durableH.getValueAtPercentile(99),
      resultP50us: resultH.getValueAtPercentile(50),
      resultP99us: resultH.getValueAtPercentile(99),
      completed: done,
      serverCpuUsPerOp: perOp(s0 === undefined || s1 === undefined ? undefined : s1.userUs + s1.systemUs - s0.userUs - s0.systemUs, done),
      clientCpuUsPerOp: perOp(c1.user + c1.system, done),
      serverSystemUsPerOp: perOp(s0 === undefined || s1 === undefined ? undefined : s1.systemUs - s0.systemUs, done),
      clientSystemUsPerOp: perOp(c1.system, done),
      warmMs: Math.round(warmMs),
      ...(frozen === undefined ? {} : { frozen }),
    };
  } finally {
    for (const c of clients) c.close();
    await stopChild(child);
    placed.restore();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * How the echo client answers: one write per `data` event of every message completed (the limit),
 * or one write per message; 'two-writes' answers as 'batched' a server that sends two writes per
 * `data` event — an acknowledgement per message at once, the echo at the end of its turn — the
 * transport's limit for a protocol with two messages per request, as a decoupled strategy's
 * durable signal and RESULT.
 */
export type EchoMode = 'batched' | 'per-message' | 'two-writes';

/** The bytes of a two-write echo server's `data` event that are echo, not acknowledgements (runs of ACK_BYTE). */
export function echoBytesOf(b: Uint8Array): number {
  let ack = 0;
  for (let i = b.indexOf(ACK_BYTE); i >= 0; ) {
    const j = b.indexOf(ECHO_BYTE, i);
    ack += (j < 0 ? b.length : j) - i;
    i = j < 0 ? -1 : b.indexOf(ACK_BYTE, j);
  }
  return b.length - ack;
}

/**
 * The echo client's bookkeeping for one connection: given a `data` event of `length` bytes, the
 * writes it answers with, as message counts. Batched: at most ONE write per `data` event, of every
 * message the event completed (as the RPC client sends an event-loop turn's frames in one buffer);
 * per-message: one write per completed message.
 */
export class EchoClientState {
  private pending = 0;
  constructor(readonly bytes: number, readonly mode: EchoMode) {
    if (!Number.isInteger(bytes) || bytes <= 0) throw new RangeError(`echo message bytes must be a positive integer, got ${bytes}`);
  }

  onData(length: number): number[] {
    this.pending += length;
    const n = Math.floor(this.pending / this.bytes);
    this.pending -= n * this.bytes;
    if (n === 0) return [];
    return this.mode === 'per-message' ? new Array<number>(n).fill(1) : [n];
  }
}

export interface EchoResult {
  opsPerSecond: number;
  p50us: number;
  p99us: number;
  serverCpuUsPerOp: number | null;
  /** Of which system (kernel) time. */
  serverSystemUsPerOp: number | null;
  /** Messages per client write while measuring (1 for the per-message echo). */
  messagesPerWrite: number;
  /** Client writes per `data` event while measuring (≤ 1 for the batched echo). */
  writesPerDataEvent: number;
  /** The server's acknowledgements per echoed message while measuring (two-writes: ≈ 1; else 0). */
  acksPerMessage: number;
}

/** Raw TCP echo of `bytes`-byte messages, `window` in flight per connection: the transport's limit. */
export async function echoCell(plan: Plan, bytes: number, mode: EchoMode = 'batched'): Promise<EchoResult> {
  const { child, port } = await startChild(['-e', ECHO_SERVER, mode === 'two-writes' ? 'two' : 'one', String(bytes)]);
  // As the RPC cells: the echo client on one CPU, the echo server on another (placement.ts).
  const placed = pinPair(child.pid);
  const sockets: net.Socket[] = [];
  try {
    const h = histogram();
    let measuring = false;
    let received = 0;
    let echoed = 0; // warm-up and window alike
    let writes = 0;
    let dataEvents = 0;
    let ackBytes = 0;
    // Every message has the same bytes: a write of n messages is a view of this buffer.
    const block = Buffer.alloc(bytes * plan.window, ECHO_BYTE);
    for (let k = 0; k < plan.clients; k++) {
      const s = net.connect({ host: '127.0.0.1', port, noDelay: true });
      await new Promise<void>((r, j) => {
        s.once('connect', () => r());
        s.once('error', j);
      });
      s.on('error', () => {});
      sockets.push(s);
      const state = new EchoClientState(bytes, mode);
      // Messages are echoed in order: the send time of each in-flight message, FIFO.
      const sentAt: number[] = [];
      s.on('data', (b: Buffer) => {
        const echo = mode === 'two-writes' ? echoBytesOf(b) : b.length;
        const out = state.onData(echo);
        const now = performance.now();
        if (measuring) {
          dataEvents++;
          ackBytes += b.length - echo;
        }
        for (const n of out) {
          echoed += n;
          for (let m = 0; m < n; m++) {
            const t0 = sentAt.shift()!;
            if (measuring) {
              received++;
              h.recordValue(Math.max(1, Math.round((now - t0) * 1000)));
            }
          }
          const t1 = performance.now();
          for (let m = 0; m < n; m++) sentAt.push(t1);
          if (measuring) writes++;
          s.write(block.subarray(0, n * bytes));
        }
      });
      const t0 = performance.now();
      for (let i = 0; i < plan.window; i++) sentAt.push(t0);
      if (mode !== 'per-message') s.write(block);
      else for (let i = 0; i < plan.window; i++) s.write(block.subarray(0, bytes));
    }
    // The limit warms as the RPC cells do (warmUp): it is as strong as it can be only at its steady rate.
    await warmUp(plan, () => echoed);
    measuring = true;
    const s0 = childCpuSplitUs(child.pid);
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, plan.cellMs));
    measuring = false;
    const seconds = (performance.now() - t0) / 1000;
    const s1 = childCpuSplitUs(child.pid);
    const done = received;
    return {
      opsPerSecond: done / seconds,
      p50us: h.getValueAtPercentile(50),
      p99us: h.getValueAtPercentile(99),
      serverCpuUsPerOp: perOp(s0 === undefined || s1 === undefined ? undefined : s1.userUs + s1.systemUs - s0.userUs - s0.systemUs, done),
      serverSystemUsPerOp: perOp(s0 === undefined || s1 === undefined ? undefined : s1.systemUs - s0.systemUs, done),
      messagesPerWrite: writes === 0 ? 0 : round(done / writes, 2),
      writesPerDataEvent: dataEvents === 0 ? 0 : round(writes / dataEvents, 3),
      acksPerMessage: done === 0 ? 0 : round(ackBytes / ACK_BYTES / done, 3),
    };
  } finally {
    for (const s of sockets) s.destroy();
    await stopChild(child);
    placed.restore();
  }
}

/**
 * The loopback's round trip: one connection, ONE `bytes`-byte message in flight, echoed by a child
 * process (p50/p99 µs). The yardstick of the one-outstanding latency cells (bench tcp, bench flush).
 */
export async function echoRoundTrip(bytes: number, warmMs: number, cellMs: number): Promise<{ p50us: number; p99us: number; opsPerSecond: number }> {
  const r = await echoCell({ clients: 1, window: 1, warmMs, cellMs, latencyCellMs: cellMs }, bytes, 'per-message');
  return { p50us: r.p50us, p99us: r.p99us, opsPerSecond: r.opsPerSecond };
}

/** A cell's CPU per request for the summary: server and client, each with its system (kernel) part. */
const cpuCell = (r: RpcCell): string => `${r.serverCpuUsPerOp ?? '?'} (${r.serverSystemUsPerOp ?? '?'}) ${r.clientCpuUsPerOp ?? '?'} (${r.clientSystemUsPerOp ?? '?'})`;

const round = (x: number, d = 3): number => Math.round(x * 10 ** d) / 10 ** d;

/**
 * The median of each numeric field over a cell's passes (a field null in any pass stays null):
 * every figure of a row is its own median, so a slow pass moves none of them.
 */
export function medianOf<T extends object>(passes: readonly T[]): T {
  if (passes.length === 0) throw new RangeError('medianOf: no passes');
  if (passes.length === 1) return passes[0]!;
  const out = { ...passes[0]! } as Record<string, unknown>;
  for (const [k, v] of Object.entries(out)) {
    if (typeof v !== 'number' && v !== null) continue;
    const xs = passes.map((p) => (p as Record<string, unknown>)[k]);
    out[k] = xs.every((x): x is number => typeof x === 'number') ? median(xs) : null;
  }
  return out as T;
}

const pad = (s: string, n: number): string => s.padEnd(n);

export const tcpBench: BenchSuite = {
  name: 'tcp',
  description: 'durable RPC per strategy between processes over loopback TCP (ops/s, p50/p99), beside a raw TCP echo of the same message size: batched (one write per data event, the limit), per message, and with two server writes per data event (the limit of a protocol with two messages a request)',
  async run(o: BenchOptions): Promise<BenchReport> {
    const plan: Plan = o.quick ? { clients: 2, window: 32, warmMs: 400, cellMs: 1500, latencyCellMs: 1000, passes: 3 } : { clients: 4, window: 64, warmMs: 1000, cellMs: 5000, latencyCellMs: 3000, passes: 3 };
    const passes = plan.passes ?? 1;
    const rows: Array<Record<string, unknown>> = [];
    const ratios: Record<string, number> = {};
    const summary: string[] = [];
    const total = passes * (3 + STRATEGIES.length) + STRATEGIES.length + 3;
    let i = 0;
    // The throughput cells in alternated passes — the echoes (batched, per message, two writes), then
    // every strategy — each figure the median over the passes (medianOf): the ratios are of medians.
    const echoRuns: Record<EchoMode, EchoResult[]> = { batched: [], 'per-message': [], 'two-writes': [] };
    const rpcRuns = new Map<RpcStrategy, RpcCell[]>(STRATEGIES.map((s) => [s, []]));
    for (let pass = 0; pass < passes; pass++) {
      const of = passes > 1 ? ` (pass ${pass + 1} of ${passes})` : '';
      for (const mode of ['batched', 'per-message', 'two-writes'] as const) {
        o.progress(i++, total, `raw TCP echo, ${mode === 'batched' ? 'batched' : mode === 'per-message' ? 'per message' : 'two writes'}${of}`);
        echoRuns[mode].push(await echoCell(plan, ENTRY_BYTES, mode));
      }
      for (const strategy of STRATEGIES) {
        o.progress(i++, total, `${strategy}${of}`);
        rpcRuns.get(strategy)!.push(await rpcCell(strategy, plan, o.seed + pass));
      }
    }
    const echo = medianOf(echoRuns.batched);
    const perMessage = medianOf(echoRuns['per-message']);
    const twoWrites = medianOf(echoRuns['two-writes']);
    const runs = (xs: ReadonlyArray<{ opsPerSecond: number }>) => xs.map((x) => Math.round(x.opsPerSecond));
    const echoRow = (cell: string, name: string, e: EchoResult, all: EchoResult[]) => ({ cell, name, sizeBytes: ENTRY_BYTES, opsPerSecond: Math.round(e.opsPerSecond), runs: runs(all), p50us: e.p50us, p99us: e.p99us, serverCpuUsPerOp: e.serverCpuUsPerOp, serverSystemUsPerOp: e.serverSystemUsPerOp, messagesPerWrite: e.messagesPerWrite, writesPerDataEvent: e.writesPerDataEvent });
    rows.push(echoRow('echo', 'tcp-echo-batched', echo, echoRuns.batched));
    rows.push(echoRow('echo-per-message', 'tcp-echo-per-message', perMessage, echoRuns['per-message']));
    rows.push({ ...echoRow('echo-two-writes', 'tcp-echo-two-writes', twoWrites, echoRuns['two-writes']), acksPerMessage: twoWrites.acksPerMessage });
    if (perMessage.opsPerSecond > 0) ratios.batched_echo_over_per_message_echo = round(echo.opsPerSecond / perMessage.opsPerSecond, 3);
    if (echo.opsPerSecond > 0) ratios.two_write_echo_over_batched_echo = round(twoWrites.opsPerSecond / echo.opsPerSecond, 3);
    summary.push(`pmrpc bench tcp${o.quick ? ' --quick' : ''} — server (pmrpc serve) and clients in separate processes over 127.0.0.1`);
    summary.push(`placement: ${placementNote()}`);
    summary.push(`${plan.clients} clients × ${plan.window} calls in flight; ${plan.cellMs} ms per cell after a warm-up of ≥ ${plan.warmMs} ms, ≥ ${WARM_REQUESTS} requests and a steady rate (≤ ${10 * plan.warmMs} ms); ${machineDescription().cpus} CPUs, Node ${process.version}`);
    summary.push(`throughput: medians of ${passes} alternated passes (each pass: the three echoes, then every strategy; ops/s of each pass in the JSON rows' runs); ratios of the medians`);
    summary.push(`workload: the demo's non-idempotent digest handler; ${PAYLOAD_BYTES}-byte payloads (${ENTRY_BYTES}-byte ring entries); ddio on`);
    summary.push('ops/s = requests acknowledged durable and processed (result received); latency from call to durable');
    summary.push('');
    const echoLine = (e: EchoResult) => `${fmtRate(e.opsPerSecond)}, p50 ${e.p50us} µs, p99 ${e.p99us} µs, ${e.messagesPerWrite} messages per client write, echo server CPU ${e.serverCpuUsPerOp ?? '?'} µs/message (system ${e.serverSystemUsPerOp ?? '?'})`;
    summary.push(`limit: raw TCP echo of ${ENTRY_BYTES}-byte messages, same connections and messages in flight, same echo server;`);
    summary.push(`  batched (one write per data event of every message completed, as the RPC client sends): ${echoLine(echo)}`);
    summary.push(`  per message (one write per message, the yardstick before issue 29):                      ${echoLine(perMessage)}`);
    summary.push(`  two writes (the server acknowledges a read's messages at once and echoes them at the end of its turn, as a decoupled strategy sends its durable signal, then its RESULT; client batched): ${echoLine(twoWrites)}`);
    summary.push('');
    summary.push(`${pad('strategy', 9)} ${pad('ops/s', 11)} ${pad('÷ batched', 10)} ${pad('÷ per-msg', 10)} ${pad('durable p50', 12)} ${pad('p99', 9)} ${pad('result p50', 11)} ${pad('p99', 11)} CPU µs/request (system): server client`);
    for (const strategy of STRATEGIES) {
      const all = rpcRuns.get(strategy)!;
      const r = medianOf(all);
      const overBatched = echo.opsPerSecond > 0 ? r.opsPerSecond / echo.opsPerSecond : 0;
      const overPerMessage = perMessage.opsPerSecond > 0 ? r.opsPerSecond / perMessage.opsPerSecond : 0;
      if (DECOUPLED.includes(strategy)) ratios[`${strategy}_over_batched_echo`] = round(overBatched, 4);
      rows.push({ cell: 'rpc', name: strategy, sizeBytes: ENTRY_BYTES, opsPerSecond: Math.round(r.opsPerSecond), runs: runs(all), completed: r.completed, durableP50us: r.durableP50us, durableP99us: r.durableP99us, resultP50us: r.resultP50us, resultP99us: r.resultP99us, overBatchedEcho: round(overBatched, 4), overPerMessageEcho: round(overPerMessage, 4), warmMs: r.warmMs, serverCpuUsPerOp: r.serverCpuUsPerOp, clientCpuUsPerOp: r.clientCpuUsPerOp, serverSystemUsPerOp: r.serverSystemUsPerOp, clientSystemUsPerOp: r.clientSystemUsPerOp });
      // The server's CPU per request ÷ the (batched) echo server's per message: the cost ratio, steadier than ops/s on a loaded machine.
      if (r.serverCpuUsPerOp !== null && echo.serverCpuUsPerOp !== null && echo.serverCpuUsPerOp > 0) ratios[`${strategy}_server_cpu_over_echo_cpu`] = round(r.serverCpuUsPerOp / echo.serverCpuUsPerOp, 2);
      summary.push(`${pad(strategy, 9)} ${pad(fmtRate(r.opsPerSecond), 11)} ${pad(round(overBatched, 4).toFixed(4), 10)} ${pad(round(overPerMessage, 4).toFixed(4), 10)} ${pad(`${r.durableP50us} µs`, 12)} ${pad(`${r.durableP99us} µs`, 9)} ${pad(`${r.resultP50us} µs`, 11)} ${pad(`${r.resultP99us} µs`, 11)} ${cpuCell(r)}`);
    }
    // One call outstanding: what a request waits for, beside the loopback's round trip (measured before and after).
    const one: Plan = { ...plan, clients: 1, window: 1, cellMs: plan.latencyCellMs };
    o.progress(i++, total, 'echo round trip (1 in flight)');
    const rttBefore = await echoCell(one, ENTRY_BYTES, 'per-message');
    const oneRows: Array<{ strategy: RpcStrategy; r: RpcCell }> = [];
    for (const strategy of STRATEGIES) {
      o.progress(i++, total, `${strategy}, 1 outstanding`);
      oneRows.push({ strategy, r: await rpcCell(strategy, one, o.seed, 'durable') });
    }
    // The same flagship cell, but the next call waits for the previous RESULT: the server has finished
    // processing the previous request when the next one arrives. The difference is what the server's
    // processing of request N costs the durable latency of request N + 1 (one thread runs the NIC and the CPU).
    o.progress(i++, total, 'wflush, 1 outstanding, next call after the result');
    const afterResult = await rpcCell('wflush', one, o.seed, 'result');
    o.progress(i++, total, 'echo round trip (1 in flight)');
    const rttAfter = await echoCell(one, ENTRY_BYTES, 'per-message');
    const rtt = (rttBefore.p50us + rttAfter.p50us) / 2;
    rows.push({ cell: 'echo-rtt', name: 'tcp-echo-1', sizeBytes: ENTRY_BYTES, opsPerSecond: Math.round(rttBefore.opsPerSecond), p50us: rttBefore.p50us, p99us: rttBefore.p99us, when: 'before' });
    rows.push({ cell: 'echo-rtt', name: 'tcp-echo-1', sizeBytes: ENTRY_BYTES, opsPerSecond: Math.round(rttAfter.opsPerSecond), p50us: rttAfter.p50us, p99us: rttAfter.p99us, when: 'after' });
    summary.push('');
    summary.push(`one call outstanding (1 client, the next call once the previous is durable; ${plan.latencyCellMs} ms per cell): loopback echo round trip p50 ${rttBefore.p50us} µs before, ${rttAfter.p50us} µs after the cells (ratio against ${round(rtt, 1)} µs)`);
    summary.push(`${pad('strategy', 9)} ${pad('durable p50', 12)} ${pad('÷ echo RTT', 11)} ${pad('p99', 11)} ${pad('result p50', 11)} ${pad('ops/s', 11)} CPU µs/request (system): server client`);
    for (const { strategy, r } of oneRows) {
      const ratio = rtt > 0 ? r.durableP50us / rtt : 0;
      ratios[`${strategy}_one_outstanding_p50_over_echo_rtt`] = round(ratio, 2);
      rows.push({ cell: 'rpc-1', name: strategy, sizeBytes: ENTRY_BYTES, opsPerSecond: Math.round(r.opsPerSecond), completed: r.completed, durableP50us: r.durableP50us, durableP99us: r.durableP99us, resultP50us: r.resultP50us, resultP99us: r.resultP99us, overEchoRtt: round(ratio, 2), echoRttUs: rtt, warmMs: r.warmMs, serverCpuUsPerOp: r.serverCpuUsPerOp, clientCpuUsPerOp: r.clientCpuUsPerOp, serverSystemUsPerOp: r.serverSystemUsPerOp, clientSystemUsPerOp: r.clientSystemUsPerOp });
      summary.push(`${pad(strategy, 9)} ${pad(`${r.durableP50us} µs`, 12)} ${pad(`×${round(ratio, 2)}`, 11)} ${pad(`${r.durableP99us} µs`, 11)} ${pad(`${r.resultP50us} µs`, 11)} ${pad(fmtRate(r.opsPerSecond), 11)} ${cpuCell(r)}`);
    }
    {
      const r = afterResult;
      const ratio = rtt > 0 ? r.durableP50us / rtt : 0;
      ratios.wflush_one_outstanding_after_result_p50_over_echo_rtt = round(ratio, 2);
      rows.push({ cell: 'rpc-1-after-result', name: 'wflush', sizeBytes: ENTRY_BYTES, opsPerSecond: Math.round(r.opsPerSecond), completed: r.completed, durableP50us: r.durableP50us, durableP99us: r.durableP99us, resultP50us: r.resultP50us, resultP99us: r.resultP99us, overEchoRtt: round(ratio, 2), echoRttUs: rtt, warmMs: r.warmMs, serverCpuUsPerOp: r.serverCpuUsPerOp, clientCpuUsPerOp: r.clientCpuUsPerOp, serverSystemUsPerOp: r.serverSystemUsPerOp, clientSystemUsPerOp: r.clientSystemUsPerOp });
      summary.push(`${pad('wflush ²', 9)} ${pad(`${r.durableP50us} µs`, 12)} ${pad(`×${round(ratio, 2)}`, 11)} ${pad(`${r.durableP99us} µs`, 11)} ${pad(`${r.resultP50us} µs`, 11)} ${pad(fmtRate(r.opsPerSecond), 11)} ${cpuCell(r)}`);
      summary.push('² the next call only after the previous RESULT (the server is done processing when it arrives)');
    }
    const bestOne = Math.min(...oneRows.filter((x) => DECOUPLED.includes(x.strategy)).map((x) => x.r.durableP50us));
    if (rtt > 0) ratios.best_decoupled_one_outstanding_p50_over_echo_rtt = round(bestOne / rtt, 2);
    o.progress(total, total, 'done');
    const rpc = rows.filter((r) => r.cell === 'rpc');
    const dec = DECOUPLED.map((s) => Number(rpc.find((r) => r.name === s)?.opsPerSecond ?? 0));
    const coupled = ['farm', 'darpc'].map((s) => Number(rpc.find((r) => r.name === s)?.opsPerSecond ?? 0));
    ratios.best_decoupled_over_best_coupled = round(Math.max(...dec) / Math.max(...coupled));
    if (echo.opsPerSecond > 0) ratios.best_decoupled_over_batched_echo = round(Math.max(...dec) / echo.opsPerSecond, 4);
    if (twoWrites.opsPerSecond > 0) ratios.best_decoupled_over_two_write_echo = round(Math.max(...dec) / twoWrites.opsPerSecond, 4);
    summary.push('');
    summary.push(`headline: best decoupled ÷ batched echo ×${ratios.best_decoupled_over_batched_echo ?? '?'}, wflush ÷ batched echo ×${ratios.wflush_over_batched_echo ?? '?'} (issue 29 step: ≥ 0.3, ≥ 0.25); batched ÷ per-message echo ×${ratios.batched_echo_over_per_message_echo ?? '?'}`);
    summary.push(`two messages a request: two-write echo ÷ batched echo ×${ratios.two_write_echo_over_batched_echo ?? '?'} (what the second write costs the transport); best decoupled ÷ two-write echo ×${ratios.best_decoupled_over_two_write_echo ?? '?'} (the rest is the server's and the client's work)`);
    summary.push(`best decoupled ÷ best coupled (measured here, the NIC and the server CPU share one process): ×${ratios.best_decoupled_over_best_coupled}`);
    if (ratios.best_decoupled_one_outstanding_p50_over_echo_rtt !== undefined) summary.push(`one call outstanding: best decoupled durable p50 ÷ echo round trip ×${ratios.best_decoupled_one_outstanding_p50_over_echo_rtt} (issue 16 target ≤ 4)`);
    const charts = [
      barChart('ops', 'durable RPC over loopback TCP vs raw TCP echo, batched, per message and with two writes (ops/s)', [{ name: 'tcp-echo-batched', opsPerSecond: Math.round(echo.opsPerSecond) }, { name: 'tcp-echo-per-message', opsPerSecond: Math.round(perMessage.opsPerSecond) }, { name: 'tcp-echo-two-writes', opsPerSecond: Math.round(twoWrites.opsPerSecond) }, ...rpc.map((r) => ({ name: String(r.name), opsPerSecond: Number(r.opsPerSecond) }))], { x: 'name', y: 'opsPerSecond', yTitle: 'operations per second' }),
      barChart('latency', 'durable RPC over loopback TCP: call → durable', rpc.flatMap((r) => [{ name: String(r.name), percentile: 'p50', us: Number(r.durableP50us) }, { name: String(r.name), percentile: 'p99', us: Number(r.durableP99us) }]), { x: 'name', y: 'us', yTitle: 'latency call → durable (µs)', group: 'percentile' }),
    ];
    return { suite: 'tcp', config: { ...machineDescription(), quick: o.quick, plan, placement: placementNote(), entryBytes: ENTRY_BYTES, strategies: STRATEGIES, server: 'pmrpc serve (child process), ddio on', echo: 'batched: one client write per data event of every message completed (the limit); per-message: one write per message; two-writes: the server writes an 8-byte acknowledgement per message at once and the echo at the end of its turn, the client batched; same echo server' }, rows, ratios, summary, charts };
  },
};
