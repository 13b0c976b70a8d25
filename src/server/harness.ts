/**
 * Real crash-restart runs (DESIGN §8 "real crashes"): a `pmrpc serve` child process on a PM file,
 * clients in this process sending the workload's durable RPCs over TCP with many calls in flight,
 * SIGKILLs of the server — external ones at seeded moments, and self-kills after a seeded number
 * of persistence events (`--kill-after-events`) — a restart on the same file after each, clients
 * reconnecting and resuming, then an orderly stop and a verification of the digest log in PM.
 * `pmrpc demo` and test/server/ run this.
 *
 * Time comes from an injected Clock and randomness from the seed (DESIGN §7); the kill moments are
 * seeded, what the server had done by then depends on the machine's speed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPrng, PmemRegion, PmrpcError, systemClock, type Clock, defineErrorCodes, type ErrorCodesOf } from '../../pmem/index.js';
import { RecoveryStore } from '../../recovery/index.js';
import { checkStrategy, RpcErrorCodes, type RpcStrategy } from '../rpc/index.js';
import { RemoteRpcClient } from './client.js';
import type { RecoverySummary } from './node.js';
import { verifyDigestLog, workloadPayload, WORKLOAD_METHOD, type ClientLedger, type DigestVerdict } from './workload.js';

export const HarnessErrorCodes = defineErrorCodes('server', {
  /** The serve child exited on its own (not killed) or printed no address. */
  SERVER_FAILED: 'PMRPC_ERR_SERVER_FAILED',
});

declare module '../../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof HarnessErrorCodes> {}
}

export interface RealCrashOptions {
  /** The compiled CLI (dist/cli/main.js). */
  mainScript: string;
  strategy: RpcStrategy;
  clients: number;
  /** Seconds of load (crashes and restarts included). */
  seconds: number;
  seed: number;
  /** External SIGKILLs, at seeded moments spread over the load. */
  externalKills: number;
  /** Self-kills: the i-th server incarnation gets `--kill-after-events` = a seeded count in this range (one per entry of the plan). */
  selfKills: number;
  selfKillEvents: readonly [number, number];
  /** Calls in flight per client (pipelining). */
  window: number;
  ddio: boolean;
  keepResults: boolean;
  sizeBytes: number;
  /** Where the PM file goes (default a fresh temp dir, removed after unless keep). */
  dir: string | undefined;
  keep: boolean;
  /** Most seconds to wait for every call to be answered after the load stops. */
  drainSeconds: number;
  clock: Clock;
  /** Progress: elapsed seconds of load, acknowledged so far, crashes so far. */
  onProgress: ((p: { elapsedS: number; seconds: number; acked: number; crashes: number }) => void) | undefined;
  /** Log lines (restarts, kills). */
  log: ((line: string) => void) | undefined;
}

export const REAL_CRASH_DEFAULTS: Readonly<Omit<RealCrashOptions, 'mainScript'>> = Object.freeze({
  strategy: 'wflush',
  clients: 4,
  seconds: 6,
  seed: 1,
  externalKills: 1,
  selfKills: 1,
  selfKillEvents: [2000, 20000] as const,
  window: 96,
  ddio: true,
  keepResults: true,
  sizeBytes: 32 << 20,
  dir: undefined,
  keep: false,
  drainSeconds: 30,
  clock: systemClock,
  onProgress: undefined,
  log: undefined,
});

export interface RestartRecord {
  /** How this incarnation ended: 'external' SIGKILL, 'self' kill after N events, or 'stop' (SIGTERM). */
  end: 'external' | 'self' | 'stop' | 'failed';
  killAfterEvents: number | undefined;
  /** undefined when the incarnation died before it was listening. */
  recovered: RecoverySummary | undefined;
  /** From the kill to the new incarnation listening (process start + recovery). */
  restartMs: number | undefined;
}

export interface RealCrashReport extends DigestVerdict {
  strategy: RpcStrategy;
  seed: number;
  clients: number;
  /** Requests acknowledged durable to the clients. */
  acked: number;
  sent: number;
  /** Real crashes (SIGKILLs): external + self. */
  crashes: number;
  externalKills: number;
  selfKills: number;
  /** Redo-log records replayed + durable requests re-executed, by recoveries after crashes. */
  replayed: number;
  reexecuted: number;
  /** Mean time of the in-server recovery (open + recover) after a crash; 0 without crash. */
  recoveryMs: number;
  /** Mean time from a kill to the restarted server listening. */
  restartMs: number;
  /** Acknowledged requests per second over the whole load (downtime included). */
  opsPerSecond: number;
  loadSeconds: number;
  /** The load duration asked for (--seconds). */
  loadSecondsAsked: number;
  resultsOk: number;
  resultsLost: number;
  resultErrors: number;
  /** Calls never answered within drainSeconds after the load. */
  unanswered: number;
  incarnations: RestartRecord[];
  pmFile: string;
  /** Problems of the run itself (a server that failed to start, calls never answered). */
  errors: string[];
  /** lost + duplicates + outOfOrder + corrupt + unanswered-applied problems: 0 means the run passed. */
  violations: number;
}

/** An external kill waits until the server has served this long since it last started. */
const MIN_SERVE_MS = 250;

interface Up {
  port: number;
  generation: number;
}

/** Runs `pmrpc serve` children one after another on the same PM file. */
class Supervisor {
  child: ChildProcess | undefined;
  generation = 0;
  incarnations: RestartRecord[] = [];
  #up: Promise<Up> | undefined;
  #expectKill: 'external' | 'stop' | undefined;
  #killPlan: number[];
  #killedAt: number | undefined;
  #stopping = false;
  #exited: Promise<void> = Promise.resolve();
  failures: string[] = [];
  restartsMax: number;
  /** When the current incarnation started listening. */
  upAtMs = 0;

  constructor(
    readonly o: RealCrashOptions,
    readonly pmFile: string,
    killPlan: number[],
  ) {
    this.#killPlan = [...killPlan];
    this.restartsMax = o.externalKills + killPlan.length + 3;
  }

  /** The current incarnation's address, once listening (rejects if it cannot start). */
  up(): Promise<Up> {
    return this.#up ?? Promise.reject(new PmrpcError(HarnessErrorCodes.SERVER_FAILED, 'the server was never started'));
  }

  start(): Promise<Up> {
    const o = this.o;
    const killAfter = this.#killPlan.shift();
    const args = [o.mainScript, 'serve', '--pm', this.pmFile, '--size', String(o.sizeBytes), '--port', '0', '--strategy', o.strategy, '--ddio', o.ddio ? 'on' : 'off', '--json'];
    if (o.keepResults) args.push('--keep-results');
    if (killAfter !== undefined) args.push('--kill-after-events', String(killAfter));
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    const generation = ++this.generation;
    let stderr = '';
    child.stderr!.on('data', (b: Buffer) => {
      stderr = (stderr + b.toString('utf8')).slice(-4000);
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => child.on('exit', (code, signal) => res({ code, signal })));
    this.#exited = exited.then(() => undefined);
    const record: RestartRecord = { end: 'failed', killAfterEvents: killAfter, recovered: undefined, restartMs: undefined };
    this.incarnations.push(record);
    const killedAt = this.#killedAt;
    this.#up = new Promise<Up>((resolve, reject) => {
      let buf = '';
      let done = false;
      child.stdout!.on('data', (b: Buffer) => {
        if (done) return;
        buf += b.toString('utf8');
        const nl = buf.indexOf('\n');
        if (nl < 0) return;
        done = true;
        try {
          const line = JSON.parse(buf.slice(0, nl)) as { port: number; recovered: RecoverySummary };
          record.recovered = line.recovered;
          record.restartMs = killedAt === undefined ? undefined : this.o.clock.nowMs() - killedAt;
          this.upAtMs = this.o.clock.nowMs();
          resolve({ port: line.port, generation });
        } catch {
          reject(new PmrpcError(HarnessErrorCodes.SERVER_FAILED, `serve printed no address: ${buf.slice(0, 200)}`));
        }
      });
      void exited.then(({ code, signal }) => {
        if (!done) {
          done = true;
          reject(new PmrpcError(HarnessErrorCodes.SERVER_FAILED, `serve exited (code ${code}, signal ${signal}) before listening: ${stderr.trim().split('\n').slice(-3).join(' | ')}`));
        }
      });
    });
    this.#up.catch(() => undefined);
    void exited.then(({ code, signal }) => {
      if (this.child !== child) return;
      const expected = this.#expectKill;
      this.#expectKill = undefined;
      if (expected === 'stop') {
        record.end = 'stop';
        if (code !== 0) this.failures.push(`serve incarnation ${generation} exited with code ${code} (signal ${signal}) on SIGTERM: ${stderr.trim().split('\n').slice(-3).join(' | ')}`);
        return;
      }
      if (expected === 'external') record.end = 'external';
      else if (signal === 'SIGKILL' && killAfter !== undefined) record.end = 'self';
      else {
        record.end = 'failed';
        this.failures.push(`serve incarnation ${generation} exited by itself (code ${code}, signal ${signal}): ${stderr.trim().split('\n').slice(-3).join(' | ')}`);
      }
      if (this.#stopping) return;
      if (this.generation > this.restartsMax) {
        this.failures.push(`more than ${this.restartsMax} restarts: giving up`);
        return;
      }
      this.o.log?.(`server incarnation ${generation} ${record.end === 'self' ? `killed itself after ${killAfter} persistence events` : record.end === 'external' ? 'SIGKILLed' : 'died'}; restarting on the same PM file`);
      this.#killedAt = this.o.clock.nowMs();
      this.start();
    });
    return this.#up;
  }

  /** SIGKILL the current incarnation (a crash); the exit handler restarts it. */
  async kill(): Promise<void> {
    const c = this.child;
    if (c === undefined || c.exitCode !== null || c.signalCode !== null) return;
    this.#expectKill = 'external';
    c.kill('SIGKILL');
    await this.#exited;
  }

  /** Orderly stop (SIGTERM): the server closes its connections, drains, writes back and exits 0. */
  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#up?.catch(() => undefined);
    const c = this.child;
    if (c === undefined || c.exitCode !== null || c.signalCode !== null) return;
    this.#expectKill = 'stop';
    c.kill('SIGTERM');
    const t = this.o.clock.setTimer(10_000, () => c.kill('SIGKILL'));
    await this.#exited;
    t.cancel();
  }

  /** Teardown: no child survives. */
  destroy(): void {
    this.#stopping = true;
    const c = this.child;
    if (c !== undefined && c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  }
}

/** One client's load loop: keeps `window` calls in flight, reconnects after a drop, resumes. */
class LoadClient {
  remote: RemoteRpcClient;
  sentUpTo = 0;
  inflight = 0;
  resultsOk = 0;
  resultsLost = 0;
  resultErrors = 0;
  errors: string[] = [];
  #wake: (() => void) | undefined;

  constructor(remote: RemoteRpcClient) {
    this.remote = remote;
    remote.onDisconnect(() => this.#signal());
  }

  get ledger(): ClientLedger {
    return { clientId: this.remote.clientId, sentUpTo: this.sentUpTo, ackedUpTo: this.remote.rpc.durableUpTo };
  }

  #signal(): void {
    const w = this.#wake;
    this.#wake = undefined;
    w?.();
  }

  #wait(clock: Clock, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = clock.setTimer(ms, () => {
        this.#wake = undefined;
        resolve();
      });
      this.#wake = () => {
        t.cancel();
        resolve();
      };
    });
  }

  #issue(seed: number): void {
    const c = this.remote.rpc;
    const seq = this.sentUpTo + 1;
    const call = c.call(WORKLOAD_METHOD, workloadPayload(seed, c.clientId, seq));
    if (call.seq !== seq) throw new Error(`client ${c.clientId}: call got seq ${call.seq}, expected ${seq}`);
    this.sentUpTo = seq;
    this.inflight++;
    call.result.then(
      () => {
        this.resultsOk++;
      },
      (e: unknown) => {
        if ((e as PmrpcError).code === RpcErrorCodes.RESULT_LOST) this.resultsLost++;
        else {
          this.resultErrors++;
          if (this.errors.length < 5) this.errors.push(`client ${c.clientId} seq ${seq}: ${(e as Error).message}`);
        }
      },
    ).finally(() => {
      this.inflight--;
      this.#signal();
    });
  }

  async #reconnect(sup: Supervisor, o: RealCrashOptions, deadline: number): Promise<boolean> {
    for (let attempt = 0; o.clock.nowMs() < deadline && attempt < 200; attempt++) {
      let up: Up;
      try {
        up = await sup.up();
      } catch {
        await this.#wait(o.clock, 50);
        continue;
      }
      try {
        await this.remote.reconnect({ port: up.port });
        return true;
      } catch {
        // The incarnation died again between listening and our Hello: wait for the next.
        await this.#wait(o.clock, 20);
      }
    }
    return false;
  }

  async run(sup: Supervisor, o: RealCrashOptions, stopAt: () => boolean, deadline: () => number): Promise<void> {
    while (!stopAt()) {
      if (!this.remote.connected) {
        if (!(await this.#reconnect(sup, o, deadline()))) break;
        continue;
      }
      while (this.inflight < o.window && this.remote.connected && !stopAt()) this.#issue(o.seed);
      await this.#wait(o.clock, 100);
    }
    // Drain: every call answered (results of requests cut by a crash come with the reconnect).
    while (this.inflight > 0 && o.clock.nowMs() < deadline()) {
      if (!this.remote.connected) {
        if (!(await this.#reconnect(sup, o, deadline()))) break;
        continue;
      }
      await this.#wait(o.clock, 100);
    }
  }
}

export function resolveRealCrashOptions(options: Partial<RealCrashOptions> & { mainScript: string }): RealCrashOptions {
  const o = { ...REAL_CRASH_DEFAULTS, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) } as RealCrashOptions;
  checkStrategy(o.strategy);
  if (o.strategy === 'none') throw new TypeError('strategy none never makes a request durable: nothing to verify');
  const int = (name: keyof RealCrashOptions, min: number, max: number): void => {
    const v = o[name];
    if (!Number.isSafeInteger(v) || (v as number) < min || (v as number) > max) throw new RangeError(`${name} must be an integer in [${min}, ${max}], got ${String(v)}`);
  };
  int('clients', 1, 64);
  int('externalKills', 0, 100);
  int('selfKills', 0, 100);
  int('window', 1, 1024); // within the client's pendingCallsMax (1024) beyond the ring's credit
  int('seed', -(2 ** 31), 2 ** 32 - 1);
  if (typeof o.seconds !== 'number' || !(o.seconds > 0 && o.seconds <= 3600)) throw new RangeError(`seconds must be in (0, 3600], got ${String(o.seconds)}`);
  const [lo, hi] = o.selfKillEvents;
  if (!Number.isSafeInteger(lo) || !Number.isSafeInteger(hi) || lo < 1 || hi < lo) throw new RangeError(`selfKillEvents must be [lo, hi] with 1 <= lo <= hi, got ${String(o.selfKillEvents)}`);
  return o;
}

export async function runRealCrash(options: Partial<RealCrashOptions> & { mainScript: string }): Promise<RealCrashReport> {
  const o = resolveRealCrashOptions(options);
  const clock = o.clock;
  const prng = createPrng(o.seed >>> 0);
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), 'pmrpc-real-crash-'));
  const pmFile = join(dir, 'node.pm');
  const killPlan = Array.from({ length: o.selfKills }, () => prng.int(o.selfKillEvents[0], o.selfKillEvents[1]));
  // External kills at seeded moments in [15 %, 85 %] of the load, at least 10 % apart.
  const killTimes: number[] = [];
  for (let i = 0; i < o.externalKills; i++) {
    const slot = 0.7 / o.externalKills;
    killTimes.push(o.seconds * 1000 * (0.15 + slot * i + slot * (0.2 + 0.6 * prng.int(0, 1000) / 1000)));
  }
  const sup = new Supervisor(o, pmFile, killPlan);
  const clients: LoadClient[] = [];
  const errors: string[] = [];
  const sleep = (ms: number): Promise<void> => new Promise((r) => clock.setTimer(Math.max(0, ms), r));
  let loadSeconds = 0;
  try {
    const first = await sup.start();
    for (let k = 0; k < o.clients; k++) {
      clients.push(new LoadClient(await RemoteRpcClient.connect({ port: first.port, name: `load-${k}`, clock })));
    }
    const t0 = clock.nowMs();
    const end = t0 + o.seconds * 1000;
    let stopped = false;
    let drainEnd = Number.POSITIVE_INFINITY;
    // While loading, a reconnect may wait as long as the run lasts; once stopped, drainSeconds.
    const loops = clients.map((c) => c.run(sup, o, () => stopped, () => (stopped ? drainEnd : clock.nowMs() + o.drainSeconds * 1000)));
    const progress = (): void => {
      const acked = clients.reduce((a, c) => a + c.ledger.ackedUpTo, 0);
      o.onProgress?.({ elapsedS: Math.min(o.seconds, (clock.nowMs() - t0) / 1000), seconds: o.seconds, acked, crashes: sup.incarnations.filter((r) => r.end === 'external' || r.end === 'self').length });
    };
    let ticking = true;
    const tick = async (): Promise<void> => {
      while (ticking) {
        progress();
        await sleep(250);
      }
    };
    const ticker = tick();
    for (const at of killTimes) {
      await sleep(t0 + at - clock.nowMs());
      // Each kill hits a server that has been serving a while (not one still starting up); on a
      // slow machine the load runs past --seconds until every asked-for kill has happened.
      await sup.up().catch(() => undefined);
      await sleep(sup.upAtMs + MIN_SERVE_MS - clock.nowMs());
      o.log?.(`SIGKILL of the server at ${((clock.nowMs() - t0) / 1000).toFixed(2)} s`);
      await sup.kill();
    }
    // After the last crash the clients resume and load the restarted server a while.
    await sup.up().catch(() => undefined);
    await sleep(Math.max(end, sup.upAtMs + 2 * MIN_SERVE_MS) - clock.nowMs());
    drainEnd = clock.nowMs() + o.drainSeconds * 1000;
    stopped = true;
    loadSeconds = (clock.nowMs() - t0) / 1000;
    await Promise.all(loops);
    ticking = false;
    await ticker;
    progress();
  } catch (e) {
    errors.push((e as Error).message);
  } finally {
    for (const c of clients) c.remote.close();
    try {
      await sup.stop();
    } finally {
      sup.destroy();
    }
  }
  errors.push(...sup.failures);
  for (const c of clients) errors.push(...c.errors);
  const unanswered = clients.reduce((a, c) => a + c.inflight, 0);
  if (unanswered > 0) errors.push(`${unanswered} calls never answered within ${o.drainSeconds} s after the load`);

  // Verify from the file alone, read-only: a copy of its bytes, opened as an image.
  let verdict: DigestVerdict = { applied: 0, lost: 0, duplicates: 0, outOfOrder: 0, corrupt: 0, unapplied: 0, messages: [] };
  try {
    const region = PmemRegion.openImage(new Uint8Array(readFileSync(pmFile)));
    const store = RecoveryStore.open(region);
    // After the orderly stop nothing is left to recover: recovery on the copy must find nothing to do.
    const report = store.recover();
    const pending = report.replayedLsns.length + report.clients.reduce((a, c) => a + c.reexecute.length, 0);
    if (pending > 0) errors.push(`after the orderly stop, recovery still found ${pending} requests to replay or re-execute`);
    verdict = verifyDigestLog(store.appView, o.seed >>> 0, clients.map((c) => c.ledger));
    region.close({ writeBack: false });
  } catch (e) {
    errors.push(`verification failed: ${(e as Error).message}`);
  }
  if (!o.keep && o.dir === undefined) rmSync(dir, { recursive: true, force: true });

  const crashes = sup.incarnations.filter((r) => r.end === 'external' || r.end === 'self');
  const restarts = sup.incarnations.slice(1);
  const mean = (xs: number[]): number => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length);
  const acked = clients.reduce((a, c) => a + c.ledger.ackedUpTo, 0);
  return {
    strategy: o.strategy,
    seed: o.seed,
    clients: o.clients,
    acked,
    sent: clients.reduce((a, c) => a + c.sentUpTo, 0),
    crashes: crashes.length,
    externalKills: crashes.filter((r) => r.end === 'external').length,
    selfKills: crashes.filter((r) => r.end === 'self').length,
    replayed: restarts.reduce((a, r) => a + (r.recovered?.replayed ?? 0) + (r.recovered?.reexecuted ?? 0), 0),
    reexecuted: restarts.reduce((a, r) => a + (r.recovered?.reexecuted ?? 0), 0),
    recoveryMs: mean(restarts.map((r) => r.recovered?.recoveryMs ?? 0)),
    restartMs: mean(restarts.map((r) => r.restartMs ?? 0)),
    opsPerSecond: loadSeconds > 0 ? acked / loadSeconds : 0,
    loadSeconds,
    loadSecondsAsked: o.seconds,
    resultsOk: clients.reduce((a, c) => a + c.resultsOk, 0),
    resultsLost: clients.reduce((a, c) => a + c.resultsLost, 0),
    resultErrors: clients.reduce((a, c) => a + c.resultErrors, 0),
    unanswered,
    incarnations: sup.incarnations,
    pmFile,
    errors,
    ...verdict,
    violations: verdict.lost + verdict.duplicates + verdict.outOfOrder + verdict.corrupt + errors.length,
  };
}
