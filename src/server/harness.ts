/**
 * Real crash-restart runs (DESIGN §8 "real crashes"): a `pmrpc serve` child process on a PM file,
 * clients in this process sending the workload's durable RPCs over TCP with many calls in flight,
 * SIGKILLs of the server — external ones at seeded moments, self-kills after a seeded number
 * of persistence events (`--kill-after-events`), and self-kills right after a seeded number of
 * acknowledgements, before the next write-back (`--kill-after-completions`) — a restart on the
 * same file after each, then an orderly stop and a verification of the digest log in PM.
 *
 * The checks can fail (DESIGN §8): at each restart, before a client resends anything, what it
 * was told was durable is compared with the durable prefix the recovery reports (a surviving
 * client's resends would otherwise hide what the server lost); and some clients die with the
 * server (they never resend), so the end state must hold what they were told on its own.
 * `pmrpc demo` and test/server/ run this.
 *
 * Time comes from an injected Clock and randomness from the seed (DESIGN §7); the kill moments are
 * seeded, what the server had done by then depends on the machine's speed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPrng, cryptoEntropy, intIn, must, oneOf, PmemRegion, PmrpcError, resolveOptions, systemClock, type Clock, defineErrorCodes, type ErrorCodesOf, type OptionCheck, type OptionChecks } from '../../pmem/index.js';
import { QueuePair, Rnic } from '../../flush/index.js';
import { TcpLink, TransportErrorCodes } from '../transport/index.js';
import { connectKvClient, kvApp, type KvFaults, type PilafClient, type PrismKvClient } from '../apps/kv/index.js';
import { checkLinearizable, describeAckedLoss, describeKvInput, durablePrefixes, kvModel, lostAcknowledged, lostWrites, type AckedLoss, type KvInput, type KvOutput, type Operation } from '../check/index.js';
import { RecoveryStore } from '../../recovery/index.js';
import { rpcStrategy, RpcErrorCodes, type RpcStrategy } from '../rpc/index.js';
import { RemoteRpcClient } from './client.js';
import type { RecoverySummary } from './node.js';
import { kvNodeKeys, verifyDigestLog, workloadPayload, WORKLOAD_METHOD, type ClientLedger, type DigestVerdict } from './workload.js';

export const HarnessErrorCodes = defineErrorCodes('server', {
  /** The serve child exited on its own (not killed) or printed no address. */
  SERVER_FAILED: 'PMRPC_ERR_SERVER_FAILED',
  /** Verdict: a request a client was told was durable is absent — from a recovered durable prefix at a restart, or from PM at the end. */
  ACKED_LOST: 'PMRPC_ERR_ACKED_LOST',
  /** Verdict: nothing acknowledged was lost, but a request was applied twice, out of FIFO order, with a wrong payload, or never. */
  CRASH_VIOLATION: 'PMRPC_ERR_CRASH_VIOLATION',
  /** Verdict: the run itself did not go through (a server failed, calls never answered) or no crash happened. */
  RUN_INCOMPLETE: 'PMRPC_ERR_RUN_INCOMPLETE',
});

/** A real-crash run's verdict: 'ok', or the code of what failed first (lost, then other violations, then the run). */
export type RealCrashVerdict = 'ok' | typeof HarnessErrorCodes.ACKED_LOST | typeof HarnessErrorCodes.CRASH_VIOLATION | typeof HarnessErrorCodes.RUN_INCOMPLETE;

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
  /**
   * Acknowledgement kills: the first incarnations get `--kill-after-completions` = a seeded count
   * in `ackKillCompletions` — the server SIGKILLs itself at its first media change after that many
   * messages to clients, i.e. between an acknowledgement and the write-back it may lack (raw with
   * DDIO on loses it, every time). One killed from outside first is planned again; the load runs
   * on (bounded) until each has struck.
   */
  ackKills: number;
  ackKillCompletions: readonly [number, number];
  /**
   * Clients that die with the server: at the crash after they joined they stop for good (never
   * reconnect, never resend), after the restart check; a new one takes each one's place (while
   * the connection table has room). What they were told is durable must be in PM on its own.
   */
  mortalClients: number;
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
  ackKills: 1,
  ackKillCompletions: [64, 512] as const,
  mortalClients: 1,
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

/** A planned self-kill of one incarnation: after N persistence events, or at the first media change after N completions. */
export interface KillPlan {
  events?: number;
  completions?: number;
}

export interface RestartRecord {
  /** How this incarnation ended: 'external' SIGKILL, 'self' kill (after N events or N completions), or 'stop' (SIGTERM). */
  end: 'external' | 'self' | 'stop' | 'failed';
  killAfterEvents: number | undefined;
  killAfterCompletions: number | undefined;
  /** undefined when the incarnation died before it was listening. */
  recovered: RecoverySummary | undefined;
  /** From the kill to the new incarnation listening (process start + recovery). */
  restartMs: number | undefined;
}

export interface RealCrashReport extends Omit<DigestVerdict, 'losses'> {
  strategy: RpcStrategy;
  ddio: boolean;
  seed: number;
  clients: number;
  /** 'ok', or the code of the first kind of failure (PMRPC_ERR_ACKED_LOST, PMRPC_ERR_CRASH_VIOLATION, PMRPC_ERR_RUN_INCOMPLETE). */
  verdict: RealCrashVerdict;
  /**
   * Acknowledged requests found absent, each counted once: at a restart (`lostAtRestart`: not in
   * the durable prefix the recovery reports, checked before the client resent anything) or at the
   * end (`lostAtEnd`: not in the digest log).
   */
  lost: number;
  lostAtRestart: number;
  lostAtEnd: number;
  /** Restart checks done: one per client per restart it saw (surviving and dying clients). */
  restartChecks: number;
  /** Clients that died with the server (never resent); `abandoned` counts what they sent unacknowledged and PM does not hold. */
  mortalClients: number;
  ackKills: number;
  /** Requests acknowledged durable to the clients. */
  acked: number;
  sent: number;
  /** Real crashes (SIGKILLs): external + self. */
  crashes: number;
  externalKills: number;
  /** Self-kills after N persistence events and after N completions (ackKills). */
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
  /** lost + duplicates + outOfOrder + corrupt + run errors: 0 means the run passed. */
  violations: number;
}

/** An external kill waits until the server has served this long since it last started. */
export const MIN_SERVE_MS = 250;

interface Up {
  port: number;
  generation: number;
}

/** What a Supervisor needs: how to start one incarnation, time, logs, and a bound on restarts. */
export interface SupervisorOptions {
  /** The `node` arguments of an incarnation (main script, `serve`, flags), given its planned self-kill (if any). */
  args: (plan: KillPlan | undefined) => string[];
  clock: Clock;
  log: ((line: string) => void) | undefined;
  restartsMax: number;
  /** The node's name in logs. */
  name: string;
}

/**
 * Runs `pmrpc serve` children one after another on the same PM file (one node; a cluster run has one
 * per node) — or any child that prints one JSON start line (PRISM-TX's client processes,
 * src/cluster/tx-crash.ts): SIGKILLed, it is restarted.
 */
export class Supervisor {
  child: ChildProcess | undefined;
  generation = 0;
  incarnations: RestartRecord[] = [];
  #up: Promise<Up> | undefined;
  #expectKill: 'external' | 'stop' | undefined;
  #killPlan: Array<KillPlan | undefined>;
  #killedAt: number | undefined;
  #stopping = false;
  #exited: Promise<void> = Promise.resolve();
  failures: string[] = [];
  restartsMax: number;
  /** When the current incarnation started listening. */
  upAtMs = 0;

  constructor(
    readonly o: SupervisorOptions,
    readonly pmFile: string,
    killPlan: Array<KillPlan | undefined>,
  ) {
    this.#killPlan = [...killPlan];
    this.restartsMax = o.restartsMax;
  }

  /** The current incarnation's address, once listening (rejects if it cannot start). */
  up(): Promise<Up> {
    return this.#up ?? Promise.reject(new PmrpcError(HarnessErrorCodes.SERVER_FAILED, 'the server was never started'));
  }

  /** Self-kills after N completions asked for that have not struck yet (planned, or armed in the running incarnation). */
  get ackKillsPending(): number {
    const planned = this.#killPlan.filter((p) => p?.completions !== undefined).length;
    const running = this.incarnations.at(-1);
    return planned + (running !== undefined && running.killAfterCompletions !== undefined && this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null ? 1 : 0);
  }

  /** The recovery that the incarnation `generation` reported (undefined: it never listened). */
  recoveredBy(generation: number): RecoverySummary | undefined {
    return this.incarnations[generation - 1]?.recovered;
  }

  start(): Promise<Up> {
    const o = this.o;
    const plan = this.#killPlan.shift();
    const killAfter = plan?.events;
    const args = o.args(plan);
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    const generation = ++this.generation;
    let stderr = '';
    child.stderr!.on('data', (b: Buffer) => {
      stderr = (stderr + b.toString('utf8')).slice(-4000);
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => child.on('exit', (code, signal) => res({ code, signal })));
    this.#exited = exited.then(() => undefined);
    const record: RestartRecord = { end: 'failed', killAfterEvents: killAfter, killAfterCompletions: plan?.completions, recovered: undefined, restartMs: undefined };
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
      if (expected === 'external') {
        record.end = 'external';
        // Killed from outside before its acknowledgement kill struck: the next incarnation gets it.
        if (plan?.completions !== undefined) this.#killPlan.unshift({ completions: plan.completions });
      } else if (signal === 'SIGKILL' && plan !== undefined) record.end = 'self';
      else {
        record.end = 'failed';
        this.failures.push(`serve incarnation ${generation} exited by itself (code ${code}, signal ${signal}): ${stderr.trim().split('\n').slice(-3).join(' | ')}`);
      }
      if (this.#stopping) return;
      if (this.generation > this.restartsMax) {
        this.failures.push(`more than ${this.restartsMax} restarts: giving up`);
        return;
      }
      const how = record.end === 'self' ? (killAfter !== undefined ? `killed itself after ${killAfter} persistence events` : `killed itself at its first media change after ${plan?.completions} completions`) : record.end === 'external' ? 'SIGKILLed' : 'died';
      this.o.log?.(`${this.o.name} incarnation ${generation} ${how}; restarting on the same PM file`);
      this.#killedAt = this.o.clock.nowMs();
      this.start();
    });
    return this.#up;
  }

  /** SIGKILL the current incarnation (a crash); the exit handler restarts it (unless `restart` is false: a crash for good). */
  async kill(restart = true): Promise<void> {
    const c = this.child;
    if (c === undefined || c.exitCode !== null || c.signalCode !== null) return;
    if (!restart) this.#stopping = true;
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
    // A bounded wait, not a speed test: an orderly stop writes the file back, and a process starved
    // on a loaded 2-core machine has taken more than 10 s to do it (a hung stop still fails).
    const t = this.o.clock.setTimer(30_000, () => c.kill('SIGKILL'));
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

/**
 * The restart check (DESIGN §8): at each restart, each client's acknowledged prefix — what it had
 * been told was durable when its connection to the dead incarnation dropped — against the durable
 * prefixes the new incarnation's recovery reports, before the client resends anything. Each
 * acknowledged request found absent is counted once (here or at the end).
 */
class RestartCheck {
  checks = 0;
  lostAtRestart = 0;
  messages: string[] = [];
  #counted = new Map<number, Set<number>>();

  /** Counts the sequences of `losses` not counted before; returns how many were new. */
  count(losses: readonly AckedLoss[], where: string): number {
    let fresh = 0;
    for (const l of losses) {
      let set = this.#counted.get(l.clientId);
      if (set === undefined) this.#counted.set(l.clientId, (set = new Set()));
      const news = l.seqs.filter((q) => !set.has(q));
      for (const q of news) set.add(q);
      fresh += news.length;
      if (news.length > 0 && this.messages.length < 20) this.messages.push(describeAckedLoss({ ...l, seqs: news }, where));
    }
    return fresh;
  }

  check(clientId: number, ackedUpTo: number, generation: number, recovered: RecoverySummary | undefined): void {
    this.checks++;
    const present = recovered === undefined ? () => false : durablePrefixes(recovered.clients);
    this.lostAtRestart += this.count(lostAcknowledged([{ clientId, ackedUpTo }], present), `the durable prefix recovered by incarnation ${generation}`);
  }
}

/** One client's load loop: keeps `window` calls in flight, reconnects after a drop, resumes — or, mortal, dies with the server. */
class LoadClient {
  remote: RemoteRpcClient;
  sentUpTo = 0;
  inflight = 0;
  resultsOk = 0;
  resultsLost = 0;
  resultErrors = 0;
  errors: string[] = [];
  /** The incarnation this client last connected to. */
  generation: number;
  /** A mortal client that died with the server (closed at the restart, after its check). */
  dead = false;
  #wake: (() => void) | undefined;

  constructor(
    remote: RemoteRpcClient,
    generation: number,
    readonly mortal: boolean,
    readonly restartCheck: RestartCheck,
  ) {
    this.remote = remote;
    this.generation = generation;
    remote.onDisconnect(() => this.#signal());
  }

  get ledger(): ClientLedger {
    return { clientId: this.remote.clientId, sentUpTo: this.sentUpTo, ackedUpTo: this.remote.rpc.durableUpTo, diedWithServer: this.dead };
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
        else if (this.dead) return; // closed with the server: its calls are abandoned, not answered
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

  /**
   * After a drop: waits for an incarnation; if it is a new one (the server crashed and recovered),
   * first the restart check — this client's acknowledged prefix against the recovery's report,
   * before anything is resent — then a mortal client dies, a surviving one reconnects and resumes.
   * false: the client stops (dead, or no server within the deadline).
   */
  async #reconnect(sup: Supervisor, o: { clock: Clock }, deadline: number): Promise<boolean> {
    for (let attempt = 0; o.clock.nowMs() < deadline && attempt < 200; attempt++) {
      let up: Up;
      try {
        up = await sup.up();
      } catch {
        await this.#wait(o.clock, 50);
        continue;
      }
      if (up.generation > this.generation) {
        // No acknowledgement from the dead incarnation can arrive any more: its link is closed.
        this.restartCheck.check(this.remote.clientId, this.remote.rpc.durableUpTo, up.generation, sup.recoveredBy(up.generation));
        this.generation = up.generation;
        if (this.mortal) {
          this.dead = true;
          this.remote.close();
          return false;
        }
      }
      try {
        await this.remote.reconnect({ port: up.port });
        return true;
      } catch {
        // The incarnation died again between listening and our Hello (or the old one is not yet
        // known to be dead): wait for the next.
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
    while (!this.dead && this.inflight > 0 && o.clock.nowMs() < deadline()) {
      if (!this.remote.connected) {
        if (!(await this.#reconnect(sup, o, deadline()))) break;
        continue;
      }
      await this.#wait(o.clock, 100);
    }
  }
}

/** Connects a new client to the current incarnation (retrying while it restarts). */
async function connectClient(sup: Supervisor, name: string, clock: Clock, deadline: number): Promise<{ remote: RemoteRpcClient; generation: number }> {
  let last: unknown;
  for (let attempt = 0; attempt < 200 && (attempt === 0 || clock.nowMs() < deadline); attempt++) {
    try {
      const up = await sup.up();
      return { remote: await RemoteRpcClient.connect({ port: up.port, name, clock }), generation: up.generation };
    } catch (e) {
      last = e;
      await new Promise<void>((r) => clock.setTimer(50, r));
    }
  }
  throw last instanceof Error ? last : new Error(`client ${name} could not connect`);
}

/** A seed: any integer a PRNG takes (negative ones are taken modulo 2^32). */
const seedCheck: OptionCheck = intIn(-(2 ** 31), 2 ** 32 - 1);
const secondsCheck: OptionCheck = must((v) => typeof v === 'number' && v > 0 && v <= 3600, (v) => `must be in (0, 3600], got ${String(v)}`, RangeError);

const rangeCheck: OptionCheck = must((v) => {
  const [lo, hi] = Array.isArray(v) ? (v as unknown[]) : [];
  return Number.isSafeInteger(lo) && Number.isSafeInteger(hi) && (lo as number) >= 1 && (hi as number) >= (lo as number);
}, (v) => `must be [lo, hi] with 1 <= lo <= hi, got ${String(v)}`, RangeError);

const REAL_CRASH_CHECKS: OptionChecks<RealCrashOptions> = {
  strategy: (_name, v) => {
    if (rpcStrategy(v).durableAt === 'never') throw new TypeError('strategy none never makes a request durable: nothing to verify');
  },
  clients: intIn(1, 64),
  externalKills: intIn(0, 100),
  selfKills: intIn(0, 100),
  ackKills: intIn(0, 100),
  mortalClients: intIn(0, 16),
  window: intIn(1, 1024), // within the client's pendingCallsMax (1024) beyond the ring's credit
  seed: seedCheck,
  seconds: secondsCheck,
  selfKillEvents: rangeCheck,
  ackKillCompletions: rangeCheck,
};

/** Connection-table rows the harness may use (NODE_LAYOUT has 64): replacements of mortal clients stop there. */
const CLIENT_IDS_MAX = 60;

export function resolveRealCrashOptions(options: Partial<RealCrashOptions> & { mainScript: string }): RealCrashOptions {
  const o = resolveOptions(REAL_CRASH_DEFAULTS as Readonly<RealCrashOptions>, options, REAL_CRASH_CHECKS);
  if (o.clients + o.mortalClients > CLIENT_IDS_MAX) throw new RangeError(`clients + mortalClients must be at most ${CLIENT_IDS_MAX}, got ${o.clients + o.mortalClients}`);
  return o;
}

export async function runRealCrash(options: Partial<RealCrashOptions> & { mainScript: string }): Promise<RealCrashReport> {
  const o = resolveRealCrashOptions(options);
  const clock = o.clock;
  const prng = createPrng(o.seed >>> 0);
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), 'pmrpc-real-crash-'));
  const pmFile = join(dir, 'node.pm');
  const eventKills: KillPlan[] = Array.from({ length: o.selfKills }, () => ({ events: prng.int(o.selfKillEvents[0], o.selfKillEvents[1]) }));
  // External kills at seeded moments in [15 %, 85 %] of the load, at least 10 % apart.
  const killTimes: number[] = [];
  for (let i = 0; i < o.externalKills; i++) {
    const slot = 0.7 / o.externalKills;
    killTimes.push(o.seconds * 1000 * (0.15 + slot * i + slot * (0.2 + 0.6 * prng.int(0, 1000) / 1000)));
  }
  // The acknowledgement kills strike first (the first incarnations), before any external kill can race them.
  const ackKills: KillPlan[] = Array.from({ length: o.ackKills }, () => ({ completions: prng.int(o.ackKillCompletions[0], o.ackKillCompletions[1]) }));
  const killPlan = [...ackKills, ...eventKills];
  const restartCheck = new RestartCheck();
  const sup = new Supervisor(
    {
      args: (plan) => {
        const args = [o.mainScript, 'serve', '--app', 'rpc', '--create', '--pm', pmFile, '--size', String(o.sizeBytes), '--port', '0', '--strategy', o.strategy, '--ddio', o.ddio ? 'on' : 'off', '--json'];
        if (o.keepResults) args.push('--keep-results');
        if (plan?.events !== undefined) args.push('--kill-after-events', String(plan.events));
        if (plan?.completions !== undefined) args.push('--kill-after-completions', String(plan.completions));
        return args;
      },
      clock,
      log: o.log,
      restartsMax: o.externalKills + killPlan.length + 3,
      name: 'server',
    },
    pmFile,
    killPlan,
  );
  /** Every client, the mortal ones (and their replacements) included. */
  const clients: LoadClient[] = [];
  let ledgers: ClientLedger[] = [];
  const errors: string[] = [];
  const sleep = (ms: number): Promise<void> => new Promise((r) => clock.setTimer(Math.max(0, ms), r));
  let loadSeconds = 0;
  try {
    const first = await sup.start();
    for (let k = 0; k < o.clients; k++) {
      clients.push(new LoadClient(await RemoteRpcClient.connect({ port: first.port, name: `load-${k}`, clock }), first.generation, false, restartCheck));
    }
    // The first mortal clients load the first incarnation with the others (its crash is theirs).
    const mortals: LoadClient[] = [];
    for (let k = 0; k < o.mortalClients; k++) mortals.push(new LoadClient(await RemoteRpcClient.connect({ port: first.port, name: `mortal-${k}.0`, clock }), first.generation, true, restartCheck));
    clients.push(...mortals);
    const t0 = clock.nowMs();
    const end = t0 + o.seconds * 1000;
    let stopped = false;
    let drainEnd = Number.POSITIVE_INFINITY;
    // While loading, a reconnect may wait as long as the run lasts; once stopped, drainSeconds.
    const deadline = (): number => (stopped ? drainEnd : clock.nowMs() + o.drainSeconds * 1000);
    const loops = clients.filter((c) => !c.mortal).map((c) => c.run(sup, o, () => stopped, deadline));
    // Mortal seats: each client dies with the server at the next crash; a new one takes its seat.
    const seats = mortals.map(async (firstMortal, k) => {
      for (let n = 0, c: LoadClient | undefined = firstMortal; c !== undefined; n++) {
        await c.run(sup, o, () => stopped, deadline);
        if (!c.dead || stopped || clients.length >= CLIENT_IDS_MAX) return;
        try {
          const { remote, generation } = await connectClient(sup, `mortal-${k}.${n + 1}`, clock, deadline());
          c = new LoadClient(remote, generation, true, restartCheck);
          clients.push(c);
        } catch (e) {
          if (!stopped) errors.push(`mortal client ${k}.${n + 1} could not connect: ${(e as Error).message}`);
          return;
        }
      }
    });
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
    // Every asked-for acknowledgement kill strikes under load (bounded).
    const ackBound = clock.nowMs() + 30_000;
    while (sup.ackKillsPending > 0 && clock.nowMs() < ackBound) await sleep(50);
    if (sup.ackKillsPending > 0) errors.push(`${sup.ackKillsPending} acknowledgement kill(s) never struck within 30 s of load`);
    // After the last crash the clients resume and load the restarted server a while.
    await sup.up().catch(() => undefined);
    await sleep(Math.max(end, sup.upAtMs + 2 * MIN_SERVE_MS) - clock.nowMs());
    drainEnd = clock.nowMs() + o.drainSeconds * 1000;
    stopped = true;
    loadSeconds = (clock.nowMs() - t0) / 1000;
    await Promise.all([...loops, ...seats]);
    ticking = false;
    await ticker;
    progress();
  } catch (e) {
    errors.push((e as Error).message);
  } finally {
    // What each client was told, taken before close(): close() says goodbye, one more (acknowledged)
    // request that releases the client's slot and is not part of the workload's digest log.
    ledgers = clients.map((c) => c.ledger);
    for (const c of clients) void c.remote.close();
    try {
      await sup.stop();
    } finally {
      sup.destroy();
    }
  }
  errors.push(...sup.failures);
  for (const c of clients) errors.push(...c.errors);
  const unanswered = clients.reduce((a, c) => a + (c.dead ? 0 : c.inflight), 0);
  if (unanswered > 0) errors.push(`${unanswered} calls never answered within ${o.drainSeconds} s after the load`);

  // Verify from the file alone, read-only: a copy of its bytes, opened as an image.
  let verdict: DigestVerdict = { applied: 0, lost: 0, duplicates: 0, outOfOrder: 0, corrupt: 0, unapplied: 0, abandoned: 0, losses: [], messages: [] };
  try {
    const region = PmemRegion.openImage(new Uint8Array(readFileSync(pmFile)));
    const store = RecoveryStore.open(region);
    // After the orderly stop nothing is left to recover: recovery on the copy must find nothing to do.
    const report = store.recover();
    const pending = report.replayedLsns.length + report.clients.reduce((a, c) => a + c.reexecute.length, 0);
    if (pending > 0) errors.push(`after the orderly stop, recovery still found ${pending} requests to replay or re-execute`);
    verdict = verifyDigestLog(store.appView, o.seed >>> 0, ledgers);
    region.close({ writeBack: false });
  } catch (e) {
    errors.push(`verification failed: ${(e as Error).message}`);
  }
  if (!o.keep && o.dir === undefined) rmSync(dir, { recursive: true, force: true });

  const crashes = sup.incarnations.filter((r) => r.end === 'external' || r.end === 'self');
  const restarts = sup.incarnations.slice(1);
  const mean = (xs: number[]): number => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length);
  const acked = clients.reduce((a, c) => a + c.ledger.ackedUpTo, 0);
  // Each acknowledged request found absent counts once, wherever it was found first.
  const lost = restartCheck.lostAtRestart + restartCheck.count(verdict.losses, 'the digest log in PM');
  const { losses: _losses, messages: endMessages, ...digest } = verdict;
  const violations = lost + verdict.duplicates + verdict.outOfOrder + verdict.corrupt + (errors.length === 0 ? verdict.unapplied : 0) + errors.length;
  const verdictCode: RealCrashVerdict =
    lost > 0
      ? HarnessErrorCodes.ACKED_LOST
      : violations > errors.length
        ? HarnessErrorCodes.CRASH_VIOLATION
        : errors.length > 0 || crashes.length === 0
          ? HarnessErrorCodes.RUN_INCOMPLETE
          : 'ok';
  return {
    ...digest,
    strategy: o.strategy,
    ddio: o.ddio,
    seed: o.seed,
    clients: o.clients,
    verdict: verdictCode,
    lost,
    lostAtRestart: restartCheck.lostAtRestart,
    lostAtEnd: verdict.lost,
    restartChecks: restartCheck.checks,
    mortalClients: clients.filter((c) => c.dead).length,
    ackKills: sup.incarnations.filter((r) => r.end === 'self' && r.killAfterCompletions !== undefined).length,
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
    messages: [...restartCheck.messages, ...endMessages].slice(0, 20),
    violations,
  };
}

// ---------------------------------------------------------------------------- a KV cluster under real crashes

export interface KvRealCrashOptions {
  /** The compiled CLI (dist/cli/main.js). */
  mainScript: string;
  /** Nodes, each a `pmrpc serve --app kv` process on its own PM file. */
  nodes: number;
  /** Client loops; each keeps one connection per node and one operation in flight. */
  clients: number;
  /** Keys per node (each key lives on one node). */
  keysPerNode: number;
  seconds: number;
  seed: number;
  /** External kill rounds, at seeded moments: each SIGKILLs a seeded non-empty subset of the nodes at once. */
  killRounds: number;
  /** Node incarnations that SIGKILL themselves after a seeded number of persistence events (spread over the nodes). */
  selfKills: number;
  selfKillEvents: readonly [number, number];
  system: 'prism' | 'pilaf';
  sizeBytes: number;
  /** Test-only fault switches of the PRISM-KV clients (a mutant: the checks must catch it). */
  kvFaults: Partial<KvFaults> | undefined;
  /** A kill round waits (at most 30 s) until each node it kills acknowledged this many PUTs since it last started: kills hit a loaded node whatever the machine's speed. */
  putsBeforeKill: number;
  dir: string | undefined;
  keep: boolean;
  clock: Clock;
  log: ((line: string) => void) | undefined;
}

export const KV_REAL_CRASH_DEFAULTS: Readonly<Omit<KvRealCrashOptions, 'mainScript'>> = Object.freeze({
  nodes: 3,
  clients: 3,
  keysPerNode: 6,
  seconds: 6,
  seed: 1,
  killRounds: 2,
  selfKills: 1,
  selfKillEvents: [20, 150] as const,
  system: 'prism',
  sizeBytes: 4 << 20,
  kvFaults: undefined,
  putsBeforeKill: 0,
  dir: undefined,
  keep: false,
  clock: systemClock,
  log: undefined,
});

export interface KvNodeReport {
  node: number;
  pmFile: string;
  operations: number;
  acknowledged: number;
  /** Operations a crash cut (outcome unknown: may or may not have happened). */
  cut: number;
  crashes: number;
  lost: string[];
  /** Durable linearizability of the node's history (crash events removed, cut operations open). */
  linearizable: true | false | 'unknown';
  linearizabilityReason: string | undefined;
  /** The app's audit of the final file (after recovery on a copy): index and allocator problems. */
  auditProblems: string[];
  recoveryMs: number;
}

export interface KvRealCrashReport {
  seed: number;
  nodes: KvNodeReport[];
  /** Kill rounds done, each with the nodes it killed. */
  killRounds: Array<{ atS: number; nodes: number[] }>;
  crashes: number;
  externalKills: number;
  selfKills: number;
  operations: number;
  acknowledged: number;
  cut: number;
  lost: number;
  errors: string[];
  loadSeconds: number;
  /** lost + non-linearizable nodes + audit problems + errors: 0 means the run passed. */
  violations: number;
}

const KV_REAL_CRASH_CHECKS: OptionChecks<KvRealCrashOptions> = {
  nodes: intIn(1, 16),
  clients: intIn(1, 32),
  keysPerNode: intIn(1, 64),
  killRounds: intIn(0, 100),
  selfKills: intIn(0, 100),
  putsBeforeKill: intIn(0, 10_000),
  seed: seedCheck,
  seconds: secondsCheck,
  system: oneOf(['prism', 'pilaf']),
};

export function resolveKvRealCrashOptions(options: Partial<KvRealCrashOptions> & { mainScript: string }): KvRealCrashOptions {
  return resolveOptions(KV_REAL_CRASH_DEFAULTS as Readonly<KvRealCrashOptions>, options, KV_REAL_CRASH_CHECKS);
}

type KvOp = Operation<KvInput, KvOutput> & { error?: string };

const LINK_GONE = new Set<string>([TransportErrorCodes.LINK_CLOSED, TransportErrorCodes.SERVER_CLOSED]);

/** One client's connection to one node: reconnects (a new KV client) after the node restarts. */
class KvConn {
  kv: PrismKvClient | PilafClient | undefined;
  constructor(
    readonly sup: Supervisor,
    readonly name: string,
    readonly clock: Clock,
    readonly faults: Partial<KvFaults> | undefined,
  ) {}

  async get(deadline: number): Promise<PrismKvClient | PilafClient | undefined> {
    for (let attempt = 0; this.kv === undefined && this.clock.nowMs() < deadline && attempt < 200; attempt++) {
      try {
        const up = await this.sup.up();
        const { link, welcome } = await TcpLink.connect({ port: up.port, name: this.name, clock: this.clock });
        const qp = new QueuePair(link);
        try {
          this.kv = await connectKvClient(qp, welcome, this.faults === undefined ? {} : { faults: this.faults });
        } catch (e) {
          qp.close();
          throw e;
        }
        link.onClose(() => {
          if (this.kv?.qp === qp) this.kv = undefined;
        });
      } catch {
        await new Promise<void>((r) => this.clock.setTimer(50, r));
      }
    }
    return this.kv;
  }

  close(): void {
    this.kv?.qp.close();
    this.kv = undefined;
  }
}

/**
 * A PRISM-KV cluster under real crashes (DESIGN §8): `nodes` serve processes, each on its own PM
 * file; clients spread puts, gets and deletes over every node's keys; kill rounds SIGKILL a seeded
 * subset of the nodes at once at seeded moments, some incarnations kill themselves after a seeded
 * number of persistence events; each node restarts on its own file and recovers; then every key is
 * read back and each node's history is checked — nothing acknowledged lost, durably linearizable —
 * and the app's audit runs on a copy of each final file.
 */
export async function runKvRealCrash(options: Partial<KvRealCrashOptions> & { mainScript: string }): Promise<KvRealCrashReport> {
  const o = resolveKvRealCrashOptions(options);
  const clock = o.clock;
  const prng = createPrng(o.seed >>> 0);
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), 'pmrpc-kv-cluster-'));
  const sleep = (ms: number): Promise<void> => new Promise((r) => clock.setTimer(Math.max(0, ms), r));
  // A node's i-th self-kill goes to its i-th incarnation (counted from the open: format or recovery
  // included — a few events).
  const killPlans: KillPlan[][] = Array.from({ length: o.nodes }, () => []);
  for (let i = 0; i < o.selfKills; i++) killPlans[prng.int(0, o.nodes - 1)]!.push({ events: prng.int(o.selfKillEvents[0], o.selfKillEvents[1]) });
  const rounds: Array<{ at: number; nodes: number[] }> = [];
  for (let i = 0; i < o.killRounds; i++) {
    const slot = 0.7 / o.killRounds;
    const at = o.seconds * 1000 * (0.15 + slot * i + slot * (0.2 + (0.6 * prng.int(0, 1000)) / 1000));
    const subset = Array.from({ length: o.nodes }, (_, k) => k).filter(() => prng.int(0, 1) === 1);
    rounds.push({ at, nodes: subset.length > 0 ? subset : [prng.int(0, o.nodes - 1)] });
  }
  const pmFiles = Array.from({ length: o.nodes }, (_, k) => join(dir, `kv-${k}.pm`));
  const sups = pmFiles.map(
    (pm, k) =>
      new Supervisor(
        {
          args: (plan) => {
            const a = [o.mainScript, 'serve', '--app', 'kv', '--create', '--system', o.system, '--node', `kv${k}`, '--pm', pm, '--size', String(o.sizeBytes), '--port', '0', '--json'];
            if (plan?.events !== undefined) a.push('--kill-after-events', String(plan.events));
            return a;
          },
          clock,
          log: o.log,
          restartsMax: o.killRounds + killPlans[k]!.length + 3,
          name: `node kv${k}`,
        },
        pm,
        killPlans[k]!,
      ),
  );
  const histories: KvOp[][] = pmFiles.map(() => []);
  const keys = pmFiles.map((_, k) => kvNodeKeys(k, o.keysPerNode));
  const errors: string[] = [];
  const killRounds: KvRealCrashReport['killRounds'] = [];
  const conns: KvConn[] = [];
  const finals: Array<Map<string, string | null>> = pmFiles.map(() => new Map());
  /** PUTs acknowledged by each node's current incarnation (reset at each kill round). */
  const putsAcked: number[] = pmFiles.map(() => 0);
  /** A killed node's clients wait here until its restart read-back is done (see below). */
  const gates: Array<Promise<void>> = pmFiles.map(() => Promise.resolve());
  /** Wakes a kill round waiting for acknowledged PUTs (no polling: it strikes at the acknowledgement). */
  let putWake: (() => void) | undefined;
  const te = new TextEncoder();
  const td = new TextDecoder();
  /** Reads every key of node k on a fresh connection, as history client `client`; false if unreachable. */
  const readBack = async (k: number, client: number, name: string): Promise<boolean> => {
    const c = new KvConn(sups[k]!, `${name}@kv${k}`, clock, undefined);
    try {
      const kv = await c.get(clock.nowMs() + 30_000);
      if (kv === undefined) return false;
      for (const key of keys[k]!) {
        const op: KvOp = { client, input: { kind: 'get', key }, output: undefined, call: clock.nowMs(), ret: undefined };
        histories[k]!.push(op);
        const v = await kv.get(key);
        op.output = v === undefined ? null : td.decode(v);
        op.ret = clock.nowMs();
        if (client === -1) finals[k]!.set(key, op.output);
      }
      return true;
    } finally {
      c.close();
    }
  };
  let loadSeconds = 0;
  try {
    await Promise.all(sups.map((s) => s.start()));
    const t0 = clock.nowMs();
    let stopped = false;
    const loops = Array.from({ length: o.clients }, async (_, ci) => {
      const mine = sups.map((s, k) => new KvConn(s, `c${ci}@kv${k}`, clock, o.kvFaults));
      conns.push(...mine);
      const rr = prng.fork();
      for (let n = 0; !stopped; n++) {
        const k = rr.int(0, o.nodes - 1);
        const key = keys[k]![rr.int(0, o.keysPerNode - 1)]!;
        await gates[k];
        const kv = await mine[k]!.get(clock.nowMs() + o.seconds * 1000 + 30_000);
        if (kv === undefined) {
          errors.push(`client ${ci}: node kv${k} unreachable`);
          return;
        }
        if (stopped) break;
        const roll = rr.int(0, 99);
        const input: KvInput = roll < 50 ? { kind: 'put', key, value: `c${ci}n${n}` } : roll < 85 ? { kind: 'get', key } : { kind: 'delete', key };
        const op: KvOp = { client: ci, input, output: undefined, call: clock.nowMs(), ret: undefined };
        histories[k]!.push(op);
        try {
          if (input.kind === 'put') await kv.put(key, te.encode(input.value));
          else if (input.kind === 'delete') await kv.delete(key);
          else {
            const v = await kv.get(key);
            op.output = v === undefined ? null : td.decode(v);
          }
          if (input.kind !== 'get') op.output = null;
          op.ret = clock.nowMs();
          if (input.kind === 'put') {
            putsAcked[k]!++;
            putWake?.();
          }
        } catch (e) {
          const code = (e as { code?: string }).code ?? String(e);
          op.error = code;
          op.output = undefined;
          if (!LINK_GONE.has(code) && errors.length < 20) errors.push(`client ${ci} ${describeKvInput(input)} on kv${k}: ${(e as Error).message}`);
          mine[k]!.close();
        }
      }
    });
    for (const r of rounds) {
      await sleep(t0 + r.at - clock.nowMs());
      // Each kill hits nodes that have served a while (not ones still starting up).
      for (const k of r.nodes) await sups[k]!.up().catch(() => undefined);
      await sleep(Math.max(...r.nodes.map((k) => sups[k]!.upAtMs)) + MIN_SERVE_MS - clock.nowMs());
      const enough = clock.nowMs() + 30_000;
      while (r.nodes.some((k) => putsAcked[k]! < o.putsBeforeKill) && clock.nowMs() < enough) {
        await new Promise<void>((wake) => {
          const timer = clock.setTimer(Math.max(0, enough - clock.nowMs()), wake);
          putWake = () => {
            timer.cancel();
            wake();
          };
        });
        putWake = undefined;
      }
      for (const k of r.nodes) putsAcked[k] = 0;
      // The killed nodes' clients hold back until the restart read-back below has read every key:
      // what the kill took back is seen before any later write can hide it.
      const opens = r.nodes.map((k) => {
        let open!: () => void;
        gates[k] = new Promise<void>((res) => (open = res));
        return open;
      });
      o.log?.(`SIGKILL of node(s) ${r.nodes.map((k) => `kv${k}`).join(', ')} at ${((clock.nowMs() - t0) / 1000).toFixed(2)} s`);
      killRounds.push({ atS: (clock.nowMs() - t0) / 1000, nodes: r.nodes });
      await Promise.all(r.nodes.map((k) => sups[k]!.kill()));
      await Promise.all(
        r.nodes.map(async (k, i) => {
          try {
            if (!(await readBack(k, -2 - killRounds.length, 'restart-check'))) errors.push(`node kv${k} unreachable for the restart read-back`);
          } catch (e) {
            // A self-kill may strike the restarted incarnation during the read-back: its reads are cut.
            const code = (e as { code?: string }).code ?? String(e);
            if (!LINK_GONE.has(code)) errors.push(`the restart read-back of kv${k}: ${(e as Error).message}`);
          } finally {
            opens[i]!();
          }
        }),
      );
    }
    await Promise.all(sups.map((s) => s.up().catch(() => undefined)));
    await sleep(Math.max(t0 + o.seconds * 1000, ...sups.map((s) => s.upAtMs + 2 * MIN_SERVE_MS)) - clock.nowMs());
    stopped = true;
    loadSeconds = (clock.nowMs() - t0) / 1000;
    await Promise.all(loops);
    // Read every key back (client -1), on a fresh connection to each node.
    for (let k = 0; k < o.nodes; k++) if (!(await readBack(k, -1, 'final'))) errors.push(`node kv${k} unreachable for the final reads`);
  } catch (e) {
    errors.push((e as Error).message);
  } finally {
    for (const c of conns) c.close();
    await Promise.all(sups.map(async (s) => {
      try {
        await s.stop();
      } finally {
        s.destroy();
      }
    }));
  }
  const nodes: KvNodeReport[] = [];
  for (let k = 0; k < o.nodes; k++) {
    const sup = sups[k]!;
    errors.push(...sup.failures);
    const h = histories[k]!.map((x): Operation<KvInput, KvOutput> => (x.ret !== undefined && x.error === undefined ? x : { client: x.client, input: x.input, output: undefined, call: x.call, ret: undefined }));
    const lin = checkLinearizable(kvModel, h);
    const auditProblems: string[] = [];
    try {
      const region = PmemRegion.openImage(new Uint8Array(readFileSync(pmFiles[k]!)));
      const nic = new Rnic(region);
      const server = kvApp.open({ region, nic, clock, schedule: queueMicrotask, entropy: cryptoEntropy }, kvApp.resolveOptions({ system: o.system }));
      server.recover();
      for (const p of server.audit()) auditProblems.push(`${p.kind}: ${p.detail}`);
      server.close();
      nic.detach();
      region.close({ writeBack: false });
    } catch (e) {
      auditProblems.push(`the final file does not open: ${(e as Error).message}`);
    }
    const crashes = sup.incarnations.filter((r) => r.end === 'external' || r.end === 'self').length;
    const restarts = sup.incarnations.slice(1);
    nodes.push({
      node: k,
      pmFile: pmFiles[k]!,
      operations: h.length,
      acknowledged: h.filter((x) => x.ret !== undefined).length,
      cut: h.filter((x) => x.ret === undefined).length,
      crashes,
      lost: lostWrites(h, finals[k]!),
      linearizable: lin.ok,
      linearizabilityReason: lin.ok === true ? undefined : lin.reason,
      auditProblems,
      recoveryMs: restarts.length === 0 ? 0 : restarts.reduce((a, r) => a + Number((r.recovered as { recoveryMs?: number } | undefined)?.recoveryMs ?? 0), 0) / restarts.length,
    });
  }
  if (!o.keep && o.dir === undefined) rmSync(dir, { recursive: true, force: true });
  const all = sups.flatMap((s) => s.incarnations);
  const lost = nodes.reduce((a, n) => a + n.lost.length, 0);
  return {
    seed: o.seed,
    nodes,
    killRounds,
    crashes: all.filter((r) => r.end === 'external' || r.end === 'self').length,
    externalKills: all.filter((r) => r.end === 'external').length,
    selfKills: all.filter((r) => r.end === 'self').length,
    operations: nodes.reduce((a, n) => a + n.operations, 0),
    acknowledged: nodes.reduce((a, n) => a + n.acknowledged, 0),
    cut: nodes.reduce((a, n) => a + n.cut, 0),
    lost,
    errors,
    loadSeconds,
    violations: lost + nodes.filter((n) => n.linearizable === false).length + nodes.reduce((a, n) => a + n.auditProblems.length, 0) + errors.length,
  };
}
