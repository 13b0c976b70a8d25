/**
 * The real-crash supervisor (DESIGN §8 "real crashes"): one module for every app's real-crash
 * run. `runRealCrashApp` is the one loop — start the nodes, drive a workload, SIGKILL nodes at the
 * points the app chooses, let them restart on the same PM file and recover, inspect them after the
 * restart, stop in order, check the recorded history and the files — and an app supplies the parts
 * that are its own (workload, kill points, what to inspect after a restart, checker) as a
 * `RealCrashEntry`, referenced by its crash-test registry record (`realCrash`; the rpc and kv
 * entries in `crash-rpc.ts` and `crash-kv.ts`, PRISM-RS and PRISM-TX in src/cluster/rs-crash.ts
 * and src/cluster/tx-crash.ts). The PRISM-KV SIGKILL test (test/deep/kv-sigkill.test.ts) drives
 * a Supervisor of its own fixture server directly. A Supervisor spawns
 * node processes (`pmrpc serve` children, or any child that prints one JSON start line), SIGKILLs
 * them and restarts them on the same PM file, stops them in order; it delivers what a child prints
 * after its start line as it arrives, and wakes bounded waits (`Wakeup`) on each event — a child
 * listening, exiting, printing — so a runner waits on events, never on a fixed sleep.
 *
 * Time comes from an injected Clock (DESIGN §7).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXIT_WITH_PARENT_ENV, intIn, must, PmrpcError, defineErrorCodes, type Clock, type ErrorCodesOf, type OptionCheck } from '../../pmem/index.js';
import type { RecoverySummary } from './node.js';

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
  /** Its start line as printed (a child other than `pmrpc serve` may say more than its port). */
  startLine?: Record<string, unknown>;
}

/** An external kill waits until the server has served this long since it last started. */
export const MIN_SERVE_MS = 250;

/**
 * Bounded waits on events: `until(ready, boundMs)` resolves true as soon as `ready()` holds —
 * checked now and at each `notify()` — or with `ready()` at the bound. A Supervisor notifies
 * the Wakeup it is given at each start line, exit and printed line; a runner notifies it at the
 * moment one of its clients receives an outcome.
 */
export class Wakeup {
  #waiters = new Set<() => void>();
  constructor(readonly clock: Clock) {}

  notify(): void {
    for (const w of [...this.#waiters]) w();
  }

  until(ready: () => boolean, boundMs: number): Promise<boolean> {
    if (ready()) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const finish = (v: boolean): void => {
        this.#waiters.delete(check);
        timer.cancel();
        resolve(v);
      };
      const check = (): void => {
        if (ready()) finish(true);
      };
      const timer = this.clock.setTimer(Math.max(0, boundMs), () => finish(ready()));
      this.#waiters.add(check);
    });
  }
}

/** A pause of `ms` of the clock's time (none if `ms` <= 0). */
export function pause(clock: Clock, ms: number): Promise<void> {
  return new Promise((r) => clock.setTimer(Math.max(0, ms), r));
}

/** A seed: any integer a PRNG takes (negative ones are taken modulo 2^32). */
export const seedCheck: OptionCheck = intIn(-(2 ** 31), 2 ** 32 - 1);
/** A load duration in seconds: (0, 3600]. */
export const secondsCheck: OptionCheck = must((v) => typeof v === 'number' && v > 0 && v <= 3600, (v) => `must be in (0, 3600], got ${String(v)}`, RangeError);
/** A seeded range [lo, hi] of counts. */
export const rangeCheck: OptionCheck = must((v) => {
  const [lo, hi] = Array.isArray(v) ? (v as unknown[]) : [];
  return Number.isSafeInteger(lo) && Number.isSafeInteger(hi) && (lo as number) >= 1 && (hi as number) >= (lo as number);
}, (v) => `must be [lo, hi] with 1 <= lo <= hi, got ${String(v)}`, RangeError);

/** The incarnations that ended in a crash (an external SIGKILL or a self-kill). */
export function crashesOf(incarnations: readonly RestartRecord[]): RestartRecord[] {
  return incarnations.filter((r) => r.end === 'external' || r.end === 'self');
}

/** Orderly stop of every supervisor (at once), then no child survives. */
export async function stopAll(sups: readonly Supervisor[]): Promise<void> {
  await Promise.all(
    sups.map(async (s) => {
      try {
        await s.stop();
      } finally {
        s.destroy();
      }
    }),
  );
}

/** An incarnation listening: its port and its generation (1 for the first). */
export interface Up {
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
  /** Notified at each start line, exit and printed line of any incarnation (several supervisors may share one). */
  wakeup?: Wakeup | undefined;
  /** Each line an incarnation prints after its start line, at the moment it arrives. */
  onLine?: ((line: string, generation: number) => void) | undefined;
}

/**
 * Runs `pmrpc serve` children one after another on the same PM file (one node; a cluster run has one
 * per node) — or any child that prints one JSON start line (PRISM-TX's client processes,
 * src/cluster/tx-crash.ts): SIGKILLed, it is restarted — at once, or (`kill('later')`) when the
 * runner calls start() again.
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
  /** The next exit of a SIGKILLed incarnation is not restarted by the supervisor (kill('later')). */
  #restartLater = false;
  /** The generation whose start line arrived (it is listening unless it exited since). */
  #listening = 0;
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

  /** The current incarnation is listening and has not exited. */
  get serving(): boolean {
    return this.#listening === this.generation && this.#alive();
  }

  #alive(): boolean {
    const c = this.child;
    return c !== undefined && c.exitCode === null && c.signalCode === null;
  }

  /** Waits until the current incarnation listens (or fails to start) and has served `ms` since. */
  async servedFor(ms: number): Promise<void> {
    await this.up().catch(() => undefined);
    await pause(this.o.clock, this.upAtMs + ms - this.o.clock.nowMs());
  }

  /**
   * `connect(up)` on the current incarnation, retried 50 ms apart (at least once, at most 200
   * times) while it restarts, until `deadline`: the last error if none succeeds.
   */
  async connect<T>(connect: (up: Up) => Promise<T>, deadline: number): Promise<T> {
    let last: unknown;
    for (let attempt = 0; attempt < 200 && (attempt === 0 || this.o.clock.nowMs() < deadline); attempt++) {
      try {
        return await connect(await this.up());
      } catch (e) {
        last = e;
        await pause(this.o.clock, 50);
      }
    }
    throw last instanceof Error ? last : new PmrpcError(HarnessErrorCodes.SERVER_FAILED, `${this.o.name}: no connection`);
  }

  /** Self-kills after N completions asked for that have not struck yet (planned, or armed in the running incarnation). */
  get ackKillsPending(): number {
    const planned = this.#killPlan.filter((p) => p?.completions !== undefined).length;
    const running = this.incarnations.at(-1);
    return planned + (running !== undefined && running.killAfterCompletions !== undefined && this.#alive() ? 1 : 0);
  }

  /** The recovery that the incarnation `generation` reported (undefined: it never listened). */
  recoveredBy(generation: number): RecoverySummary | undefined {
    return this.incarnations[generation - 1]?.recovered;
  }

  /** Starts the next incarnation (the first, or one held back by kill('later')). */
  start(): Promise<Up> {
    const o = this.o;
    const plan = this.#killPlan.shift();
    const killAfter = plan?.events;
    const args = o.args(plan);
    // A stdin pipe it never writes, and EXIT_WITH_PARENT_ENV: the child exits when this process does
    // (even by SIGKILL or a test runner's timeout), so no server outlives its runner.
    const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, [EXIT_WITH_PARENT_ENV]: '1' } });
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
      let listening = false;
      child.stdout!.on('data', (b: Buffer) => {
        if (done && (!listening || o.onLine === undefined)) return;
        buf += b.toString('utf8');
        for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
          const text = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          if (done) {
            o.onLine?.(text, generation);
            o.wakeup?.notify();
            continue;
          }
          done = true;
          try {
            const line = JSON.parse(text) as { port: number; recovered: RecoverySummary };
            record.startLine = line;
            record.recovered = line.recovered;
            record.restartMs = killedAt === undefined ? undefined : this.o.clock.nowMs() - killedAt;
            this.upAtMs = this.o.clock.nowMs();
            this.#listening = generation;
            listening = true;
            resolve({ port: line.port, generation });
            o.wakeup?.notify();
          } catch {
            reject(new PmrpcError(HarnessErrorCodes.SERVER_FAILED, `serve printed no address: ${text.slice(0, 200)}`));
            return;
          }
          if (o.onLine === undefined) return;
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
      if (this.#restartLater) {
        this.#restartLater = false;
        this.#killedAt = this.o.clock.nowMs();
        return;
      }
      if (this.generation > this.restartsMax) {
        this.failures.push(`more than ${this.restartsMax} restarts: giving up`);
        return;
      }
      const how = record.end === 'self' ? (killAfter !== undefined ? `killed itself after ${killAfter} persistence events` : `killed itself at its first media change after ${plan?.completions} completions`) : record.end === 'external' ? 'SIGKILLed' : 'died';
      this.o.log?.(`${this.o.name} incarnation ${generation} ${how}; restarting on the same PM file`);
      this.#killedAt = this.o.clock.nowMs();
      this.start();
    });
    // After the exit handler above (a restart's kill plan is in place when a waiter looks).
    void exited.then(() => o.wakeup?.notify());
    return this.#up;
  }

  /**
   * SIGKILL the current incarnation (a crash); the exit handler restarts it — unless `restart` is
   * false (a crash for good) or 'later' (the runner calls start() when it wants the restart).
   */
  async kill(restart: boolean | 'later' = true): Promise<void> {
    const c = this.child;
    if (c === undefined || c.exitCode !== null || c.signalCode !== null) return;
    if (restart === false) this.#stopping = true;
    if (restart === 'later') this.#restartLater = true;
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

/** One process of a real-crash run, as an app's plan declares it (a node on its PM file, or a client process). */
export interface RealCrashNode {
  /** Its name in logs. */
  name: string;
  /** Its PM file (a client process: the file it writes its history to). */
  pmFile: string;
  /** The `node` arguments of an incarnation, given its planned self-kill. */
  args: (plan: KillPlan | undefined) => string[];
  /** Self-kills, one per incarnation in order (none by default). */
  killPlan?: Array<KillPlan | undefined>;
  restartsMax: number;
  /** Each line an incarnation prints after its start line, at the moment it arrives. */
  onLine?: (line: string, generation: number) => void;
}

/**
 * A kill an app chose: SIGKILL these processes (indices into `run.sups`) at once; each restarts
 * on its file at once (`restart` true, the default), never (false), or when the plan calls its
 * Supervisor's start() ('later'). A step may kill nothing (`nodes` empty) and name instead the
 * processes that killed themselves (`selfKilled`: a planned self-kill the plan waited for, which
 * its Supervisor restarts at once): the loop then only runs afterKill on it.
 */
export interface KillStep {
  nodes: readonly number[];
  restart?: boolean | 'later';
  /** Processes (indices into `run.sups`) that killed themselves at this point (none by default). */
  selfKilled?: readonly number[];
}

/** What a plan's parts see of the run. */
export interface RealCrashRun {
  readonly clock: Clock;
  readonly log: ((line: string) => void) | undefined;
  /** The run's directory (its PM files, histories). */
  readonly dir: string;
  /** Notified at each start line, exit and printed line of every process; a plan notifies it at the moment a client receives an outcome. */
  readonly wakeup: Wakeup;
  /** The processes, in the order the plan's groups declared them. */
  readonly sups: Supervisor[];
  /** Problems of the run itself (an exception of the loop, then each process's failures). */
  readonly errors: string[];
  /** A pause of the run's clock. */
  sleep(ms: number): Promise<void>;
}

/**
 * An app's part of a real-crash run: what `runRealCrashApp`'s one loop calls, in this order —
 * nodes, load, kills (afterKill after each), finish; teardown and the orderly stop whatever
 * happened; then check.
 */
export interface RealCrashPlan<R> {
  /** The processes, in groups started one after another (e.g. the shards, then the client processes that connect to them). */
  nodes(run: RealCrashRun): RealCrashNode[][] | Promise<RealCrashNode[][]>;
  /** Starts the workload once every process listens (its loops run on until finish() stops them); each outcome is recorded the moment a client receives it. */
  load(run: RealCrashRun): Promise<void>;
  /** The kill points: each step is yielded when it is due (the plan waits, bounded, for its chosen moment in between); the loop SIGKILLs it. */
  kills(run: RealCrashRun): AsyncIterable<KillStep>;
  /** What to inspect once a step's processes restarted (e.g. every key read back before the load resumes on them). */
  afterKill?(step: KillStep, run: RealCrashRun): Promise<void>;
  /** After the last kill: stop the load, drain it, the final reads. */
  finish(run: RealCrashRun): Promise<void>;
  /** Before the orderly stop, whatever happened (e.g. what each client was told, then close the clients). */
  teardown?(run: RealCrashRun): void | Promise<void>;
  /** After every process stopped: the checks of the recorded history and the PM files, and the report. */
  check(run: RealCrashRun): R;
}

/** What every app's real-crash options carry (the loop's own). */
export interface RealCrashRunOptions {
  /** The compiled CLI (dist/cli/main.js). */
  mainScript: string;
  seed: number;
  /** Where the files go (default a fresh temp dir, removed after unless keep). */
  dir: string | undefined;
  keep: boolean;
  clock: Clock;
  log: ((line: string) => void) | undefined;
}

/**
 * An app's real-crash entry (its crash-test registry record's `realCrash`): its options (defaults,
 * checks) and the plan of a run with them.
 */
export interface RealCrashEntry<O extends RealCrashRunOptions = RealCrashRunOptions, R = unknown> {
  /** The prefix of its temp dir. */
  readonly dirPrefix: string;
  /** Its options (defaults filled in); a bad one throws. */
  resolveOptions(options: Partial<O> & { mainScript: string }): O;
  plan(o: O): RealCrashPlan<R>;
}

/**
 * The real-crash loop of every app (DESIGN §8): the entry's processes started group by group, its
 * workload, a SIGKILL at each point it chooses (each process restarting on its own file and
 * recovering) and its inspection after each, its finish, the orderly stop of every process (no
 * child survives), then its checks on the recorded history and the files.
 */
export async function runRealCrashApp<O extends RealCrashRunOptions, R>(entry: RealCrashEntry<O, R>, options: Partial<O> & { mainScript: string }): Promise<R> {
  const o = entry.resolveOptions(options);
  const plan = entry.plan(o);
  const clock = o.clock;
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), entry.dirPrefix));
  const run: RealCrashRun = { clock, log: o.log, dir, wakeup: new Wakeup(clock), sups: [], errors: [], sleep: (ms) => pause(clock, ms) };
  try {
    const groups = await plan.nodes(run);
    const started = groups.map((g) => g.map((n) => new Supervisor({ args: n.args, clock, log: o.log, restartsMax: n.restartsMax, name: n.name, wakeup: run.wakeup, onLine: n.onLine }, n.pmFile, n.killPlan ?? [])));
    run.sups.push(...started.flat());
    for (const g of started) await Promise.all(g.map((s) => s.start()));
    await plan.load(run);
    for await (const step of plan.kills(run)) {
      await Promise.all(step.nodes.map((k) => run.sups[k]!.kill(step.restart ?? true)));
      await plan.afterKill?.(step, run);
    }
    await plan.finish(run);
  } catch (e) {
    run.errors.push((e as Error).message);
  } finally {
    await plan.teardown?.(run);
    await stopAll(run.sups);
  }
  for (const s of run.sups) run.errors.push(...s.failures);
  try {
    return plan.check(run);
  } finally {
    if (!o.keep && o.dir === undefined) rmSync(dir, { recursive: true, force: true });
  }
}
