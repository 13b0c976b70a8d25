/**
 * One cell of `bench flush`: a server (in this process over the in-process link, or in a child
 * process over TCP), `clients` durable RPC clients, each a closed loop of `outstanding` request
 * slots. A slot issues a request, waits for its acknowledgement (the strategy's "durable at"; for
 * the coupled baselines that is the reply after processing; for `none`, the placement of the
 * request in the ring), and issues the next. Results are awaited on the side.
 *
 * Figures of a cell (one measurement window after a warm-up):
 * - throughput = requests acknowledged **and processed** (their result arrived) in the window ÷ the
 *   window; acknowledged-only counts are reported beside it;
 * - durable latency (call → acknowledgement) and result latency (call → result), HDR histograms;
 * - ring fills (calls that found the ring without credit) and ring laps (requests ÷ ring slots);
 * - CPU: the process's CPU time over the window (in cores), the owner thread's event-loop
 *   utilisation and the pool worker's.
 * After the window the clients stop issuing and every request issued must be acknowledged and
 * processed (checked: processed == acknowledged == issued).
 *
 * Time comes from an injected BenchClock: the wall clock here; a modelled-time clock later.
 */
import * as hdr from 'hdr-histogram-js';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { InProcessFabric, QueuePair, Rnic } from '../flush/index.js';
import { createPrng, PmemRegion, seededEntropy, SeqMap } from '../pmem/index.js';
import { layoutBytes, RecoveryStore, type LayoutOptions } from '../recovery/index.js';
import { connectInProcess, DurableRpcClient, DurableRpcServer, type RpcCall, type RpcStrategy } from '../src/rpc/index.js';
import { TcpLink } from '../src/transport/index.js';
import { decodeWelcomePayload } from '../src/apps/rpc/index.js';
import { APP_BYTES, handlers, keysOf, makePayload, METHOD, spin } from './flush-handlers.js';

/** The only source of time of the cell runner (real time here; a virtual clock can drive it later). */
export interface BenchClock {
  nowNs(): number;
  /** Lets other work run (the event loop, a simulation's scheduler). */
  yield(): Promise<void>;
  /** Resolves after `ms` (bounded waits). */
  sleep(ms: number): Promise<void>;
}

export const wallClock: BenchClock = {
  nowNs: () => performance.now() * 1e6,
  yield: () => new Promise((r) => setImmediate(r)),
  sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
};

export type LinkKind = 'in-process' | 'tcp';
export type Placement = 'inline' | 'pool';

export interface CellConfig {
  link: LinkKind;
  strategy: RpcStrategy;
  payloadBytes: number;
  clients: number;
  /** Requests each client keeps outstanding (unacknowledged). */
  outstanding: number;
  /** CPU time of the handler per request (µs, a calibrated busy loop). */
  handlerUs: number;
  placement: Placement;
  ringSlots: number;
  ddio: boolean;
  /** File-backed region with msync on every drain (the better-sqlite3 comparison). */
  strict?: boolean;
  /**
   * strict: where a group commit's msync runs — 'inline' on the JS thread (PmemOptions.msyncInline:
   * the embedded configuration, one client in lockstep, as SQLite's inline fsync) or 'pool' (the
   * default: off the thread, as `serve --strict`).
   */
  msync?: 'inline' | 'pool';
}

export interface CellPlan {
  warmupMs: number;
  measureMs: number;
  /** Bound on waiting for the requests in flight after the window. */
  drainMsMax: number;
  /** TCP cells: before the warm-up proper, run until this many requests were processed (at most warmMsMax ms); see warmTcpServer. */
  warmRequests?: number;
  warmMsMax?: number;
}

export interface CellResult {
  throughputPerSecond: number;
  ackedPerSecond: number;
  durableP50Ns: number;
  durableP99Ns: number;
  durableP999Ns: number;
  durableMaxNs: number;
  resultP50Ns: number;
  resultP99Ns: number;
  issued: number;
  acknowledged: number;
  processed: number;
  errors: number;
  ringFills: number;
  ringLapsMin: number;
  windowMs: number;
  /** Process CPU time in the window ÷ the window (cores busy; the TCP server child not included). */
  cpuCores: number;
  ownerElu: number;
  workerElu: number | undefined;
  poolInFlightPeak: number | undefined;
  /** TCP cells: how long the server's warm-up by requests took (CellPlan.warmRequests; see warmTcpServer). */
  warmMs?: number;
}

// ---------------------------------------------------------------- calibration

let iterationsPerUs: number | undefined;

/** Iterations of the handler's busy loop per µs on this machine (median of 5 measurements). */
export function calibrate(clock: BenchClock = wallClock): number {
  if (iterationsPerUs !== undefined) return iterationsPerUs;
  const p = makePayload(64, 0, 1);
  spin(p, 2_000_000, 0); // JIT
  const xs: number[] = [];
  for (let r = 0; r < 5; r++) {
    const n = 1_000_000;
    const t0 = clock.nowNs();
    spin(p, n, r);
    xs.push(n / ((clock.nowNs() - t0) / 1000));
  }
  xs.sort((a, b) => a - b);
  iterationsPerUs = xs[2]!;
  return iterationsPerUs;
}

export function iterationsFor(handlerUs: number): number {
  return Math.round(handlerUs * calibrate());
}

// ---------------------------------------------------------------- worlds

/** Compiled modules next to this one (dist/bench/…), also when this file runs from source. */
export function compiledBenchFile(name: string): string {
  const here = fileURLToPath(import.meta.url);
  const dir = here.endsWith('.ts') ? join(dirname(here), '..', 'dist', 'bench') : dirname(here);
  return join(dir, name);
}

export function geometryFor(c: Pick<CellConfig, 'payloadBytes' | 'clients' | 'ringSlots'>): Partial<LayoutOptions> {
  const slotBytes = Math.ceil((c.payloadBytes + 32) / 64) * 64;
  return { maxClients: c.clients, ringSlots: c.ringSlots, slotBytes, logRecords: 64, recordBytes: 128, appBytes: APP_BYTES };
}

export interface World {
  clients: DurableRpcClient[];
  ringSlots: number;
  stats(): { poolInFlightPeak: number | undefined };
  close(): Promise<void>;
}

let sharedPool: Piscina | undefined;

/** One pool of one worker thread for every in-process cell (the second core). */
export function benchPool(): Piscina {
  sharedPool ??= new Piscina({ filename: compiledBenchFile('flush-worker.js'), minThreads: 1, maxThreads: 1, idleTimeout: 60_000, atomics: 'disabled', concurrentTasksPerWorker: 16 });
  return sharedPool;
}

export async function closeBenchPool(): Promise<void> {
  const p = sharedPool;
  sharedPool = undefined;
  if (p !== undefined) await p.destroy();
}

export function makeServer(nic: Rnic, store: RecoveryStore, c: CellConfig, pool: Piscina | undefined): DurableRpcServer {
  const server = new DurableRpcServer(nic, store, { strategy: c.strategy, pool: c.placement === 'pool' ? pool : undefined });
  if (c.placement === 'pool') server.register(METHOD, handlers[METHOD]!, { pooled: true, keys: keysOf });
  else server.register(METHOD, handlers[METHOD]!);
  server.start();
  return server;
}

async function inProcessWorld(c: CellConfig, seed: number): Promise<World> {
  const g = geometryFor(c);
  const bytes = layoutBytes(g);
  let dir: string | undefined;
  let region: PmemRegion;
  if (c.strict) {
    dir = mkdtempSync(join(tmpdir(), 'pmrpc-bench-flush-'));
    region = PmemRegion.create(join(dir, 'strict.pm'), bytes, { strict: true, msyncInline: c.msync === 'inline', seed, entropy: seededEntropy(createPrng(seed)) });
  } else region = PmemRegion.createInMemory(bytes, { seed, entropy: seededEntropy(createPrng(seed)) });
  const store = RecoveryStore.format(region, g);
  const nic = new Rnic(region, { ddio: c.ddio, entropy: seededEntropy(createPrng(seed + 1)) });
  const fabric = new InProcessFabric(nic);
  const pool = c.placement === 'pool' ? benchPool() : undefined;
  const server = makeServer(nic, store, c, pool);
  const clients = Array.from({ length: c.clients }, () => connectInProcess(server, fabric));
  return {
    clients,
    ringSlots: c.ringSlots,
    stats: () => ({ poolInFlightPeak: pool === undefined ? undefined : server.poolInFlightPeak }),
    async close() {
      for (const cl of clients) cl.close();
      server.close();
      nic.close();
      region.close();
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The TCP server child (dist/bench/flush-server.js): one per cell, so every cell starts cold alike. */
export async function startServerProcess(c: CellConfig, seed: number): Promise<{ port: number; child: ChildProcess; stop(): Promise<void> }> {
  const file = compiledBenchFile('flush-server.js');
  if (!existsSync(file)) throw new Error(`${file} is missing: run npm run build:ts first`);
  const child = spawn(process.execPath, [file, JSON.stringify({ cell: c, seed })], { stdio: ['pipe', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    const timer = setTimeout(() => reject(new Error('the bench server did not start within 120 s')), 120_000);
    rl.once('line', (l) => {
      clearTimeout(timer);
      rl.close();
      resolve(l);
    });
    child.once('exit', (code) => reject(new Error(`the bench server exited (${String(code)}) before listening`)));
  });
  const { port } = JSON.parse(line) as { port: number };
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    port,
    child,
    async stop() {
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}

async function tcpWorld(c: CellConfig, seed: number): Promise<World> {
  const srv = await startServerProcess(c, seed);
  const clients: DurableRpcClient[] = [];
  try {
    for (let i = 0; i < c.clients; i++) {
      const { link, welcome } = await TcpLink.connect({ port: srv.port, name: `bench-${i}` });
      clients.push(new DurableRpcClient(new QueuePair(link), decodeWelcomePayload(welcome)));
    }
  } catch (e) {
    await srv.stop();
    throw e;
  }
  return {
    clients,
    ringSlots: c.ringSlots,
    stats: () => ({ poolInFlightPeak: undefined }),
    async close() {
      for (const cl of clients) cl.close();
      await srv.stop();
    },
  };
}

export function openWorld(c: CellConfig, seed: number): Promise<World> {
  return c.link === 'tcp' ? tcpWorld(c, seed) : inProcessWorld(c, seed);
}

// ---------------------------------------------------------------- the load

const histogram = (): hdr.Histogram => hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: 3 });

/** Runs one cell on a fresh world; closes it. */
export async function runCell(c: CellConfig, plan: CellPlan, seed: number, clock: BenchClock = wallClock): Promise<CellResult> {
  const iterations = iterationsFor(c.handlerUs);
  const w = await openWorld(c, seed);
  try {
    const warmMs = c.link === 'tcp' && (plan.warmRequests ?? 0) > 0 ? await warmTcpServer(w, c, plan, iterations, clock) : undefined;
    const r = await drive(w, c, plan, iterations, clock);
    return warmMs === undefined ? r : { ...r, warmMs: Math.round(warmMs) };
  } finally {
    await w.close();
  }
}

/**
 * A TCP cell's server is a fresh child process: until V8 has compiled its hot path a request costs
 * several times its steady CPU, and with one request outstanding a fixed warm-up of a few hundred
 * ms covers only a few hundred requests on a loaded machine — the cell then measures the compiler
 * (issue 16: wflush durable p50 ≈ 400 µs after 400 ms, ≈ 135 µs after 3 s, back to back). So the
 * cell's requests start after at least plan.warmRequests processed requests (at most
 * plan.warmMsMax), as bench tcp's cells do. Returns the ms it took.
 */
async function warmTcpServer(w: World, c: CellConfig, plan: CellPlan, iterations: number, clock: BenchClock): Promise<number> {
  const payload = makePayload(c.payloadBytes, iterations, 7);
  const t0 = clock.nowNs();
  const target = plan.warmRequests ?? 0;
  const tMax = t0 + (plan.warmMsMax ?? 4000) * 1e6;
  let done = 0;
  const results: Array<Promise<unknown>> = [];
  const slot = async (client: DurableRpcClient): Promise<void> => {
    while (done < target && clock.nowNs() < tMax) {
      const call = client.call(METHOD, payload);
      const result = call.result.then(() => void done++, () => undefined);
      results.push(result);
      // `none` is never durable: wait for its result instead.
      await (c.strategy === 'none' ? result : call.durable.catch(() => undefined));
      if (results.length > 4 * c.ringSlots) await results.shift();
    }
  };
  await Promise.all(w.clients.flatMap((client) => Array.from({ length: c.outstanding }, () => slot(client))));
  // Every warm-up request is processed before the cell starts (bounded).
  const deadline = clock.nowNs() + plan.drainMsMax * 1e6;
  let settled = false;
  void Promise.all(results).then(() => (settled = true));
  while (!settled && clock.nowNs() < deadline) await clock.sleep(1);
  return (clock.nowNs() - t0) / 1e6;
}

async function drive(w: World, c: CellConfig, plan: CellPlan, iterations: number, clock: BenchClock): Promise<CellResult> {
  const payload = makePayload(c.payloadBytes, iterations, 7);
  const durableH = histogram();
  const resultH = histogram();
  const begin = clock.nowNs();
  const tStart = begin + plan.warmupMs * 1e6;
  const tEnd = tStart + plan.measureMs * 1e6;
  let issued = 0;
  let acknowledged = 0;
  let processed = 0;
  let ackedInWindow = 0;
  let processedInWindow = 0;
  let errors = 0;
  let ringFills = 0;
  const perClient = w.clients.map(() => 0);
  // Calls whose result has not settled (a count, not an array of their promises: holding every
  // call's promise to the end of the cell grew the old generation by the cell's requests, a GC cost
  // the load put on the server's thread in-process).
  let unsettled = 0;
  const none = c.strategy === 'none';
  const yieldEach = c.link === 'in-process';
  const pool = c.placement === 'pool' && c.link === 'in-process' ? sharedPool : undefined;
  let cpu0 = process.cpuUsage();
  let elu0 = performance.eventLoopUtilization();
  const workers: Worker[] = pool?.threads ?? [];
  let welu0 = workers.map((x) => x.performance.eventLoopUtilization());
  let marked = false;
  const markStart = (): void => {
    if (marked) return;
    marked = true;
    cpu0 = process.cpuUsage();
    elu0 = performance.eventLoopUtilization();
    welu0 = workers.map((x) => x.performance.eventLoopUtilization());
  };
  let cpu1: NodeJS.CpuUsage | undefined;
  let elu1: ReturnType<typeof performance.eventLoopUtilization> | undefined;
  let welu1: Array<ReturnType<typeof performance.eventLoopUtilization>> | undefined;
  const markEnd = (): void => {
    if (cpu1 !== undefined) return;
    cpu1 = process.cpuUsage(cpu0);
    elu1 = performance.eventLoopUtilization(elu0);
    welu1 = workers.map((x, i) => x.performance.eventLoopUtilization(welu0[i]));
  };

  const slot = async (ci: number): Promise<void> => {
    const client = w.clients[ci]!;
    const calls = new SeqMap<RpcCall>();
    // Each slot issues at least one request: a process descheduled past the whole window before
    // its first turn (a loaded machine) still measures something instead of an empty cell.
    let mine = 0;
    for (;;) {
      const t0 = clock.nowNs();
      if (t0 >= tEnd && mine > 0) {
        markEnd();
        return;
      }
      mine++;
      if (t0 >= tStart) markStart();
      const inWindow = t0 >= tStart;
      const call = client.call(METHOD, payload);
      issued++;
      perClient[ci]!++;
      if (client.waitingForCredit > 0) ringFills++;
      calls.set(call.seq, call);
      unsettled++;
      call.result.then(
        () => {
          const t = clock.nowNs();
          processed++;
          if (t >= tStart && t < tEnd) processedInWindow++;
          if (inWindow) resultH.recordValue(Math.max(1, Math.round(t - t0)));
          calls.delete(call.seq);
          unsettled--;
        },
        () => {
          errors++;
          calls.delete(call.seq);
          unsettled--;
        },
      );
      if (none) {
        // `none` is never durable: its acknowledgement is the placement (ring credit for its slot).
        while (client.waitingForCredit > 0) {
          const older = calls.get(call.seq - w.ringSlots);
          if (older === undefined) await clock.yield();
          else await older.result.catch(() => undefined);
        }
      } else {
        try {
          await call.durable;
        } catch {
          errors++;
          continue;
        }
      }
      const t = clock.nowNs();
      acknowledged++;
      if (t >= tStart && t < tEnd) ackedInWindow++;
      if (inWindow) durableH.recordValue(Math.max(1, Math.round(t - t0)));
      // The client shares the owner's thread in-process: without a turn of the event loop between
      // requests its microtask chain would starve the pool's answers (macrotasks) until the ring is full.
      if (yieldEach) await clock.yield();
    }
  };
  const slots: Array<Promise<void>> = [];
  for (let ci = 0; ci < w.clients.length; ci++) for (let k = 0; k < c.outstanding; k++) slots.push(slot(ci));
  await Promise.all(slots);
  markEnd();
  // Every request issued must be processed: wait (bounded) for those in flight.
  const deadline = clock.nowNs() + plan.drainMsMax * 1e6;
  while (unsettled > 0 && clock.nowNs() < deadline) await clock.sleep(1);
  const windowMs = plan.measureMs;
  const workerBusy = welu1 !== undefined && welu1.length > 0 ? welu1.reduce((a, x) => a + x.utilization, 0) / welu1.length : undefined;
  const cpu = cpu1!;
  const r: CellResult = {
    throughputPerSecond: (processedInWindow * 1000) / windowMs,
    ackedPerSecond: (ackedInWindow * 1000) / windowMs,
    durableP50Ns: durableH.totalCount > 0 ? durableH.getValueAtPercentile(50) : 0,
    durableP99Ns: durableH.totalCount > 0 ? durableH.getValueAtPercentile(99) : 0,
    durableP999Ns: durableH.totalCount > 0 ? durableH.getValueAtPercentile(99.9) : 0,
    durableMaxNs: durableH.maxValue,
    resultP50Ns: resultH.totalCount > 0 ? resultH.getValueAtPercentile(50) : 0,
    resultP99Ns: resultH.totalCount > 0 ? resultH.getValueAtPercentile(99) : 0,
    issued,
    acknowledged,
    processed,
    errors,
    ringFills,
    ringLapsMin: Math.min(...perClient) / w.ringSlots,
    windowMs,
    cpuCores: (cpu.user + cpu.system) / 1000 / windowMs,
    ownerElu: elu1!.utilization,
    workerElu: workerBusy,
    poolInFlightPeak: w.stats().poolInFlightPeak,
  };
  durableH.destroy();
  resultH.destroy();
  return r;
}
