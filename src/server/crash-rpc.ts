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
 * `pmrpc demo` and test/server/ run this: the rpc app's part (RPC_REAL_CRASH, its registry record's
 * `realCrash`) of the one real-crash loop (supervisor.ts runRealCrashApp).
 *
 * Time comes from an injected Clock and randomness from the seed (DESIGN §7); the kill moments are
 * seeded, what the server had done by then depends on the machine's speed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createPrng, intIn, PmemRegion, PmrpcError, resolveOptions, systemClock, type Clock, type OptionChecks } from '../../pmem/index.js';
import { rpcApp } from '../apps/rpc/index.js';
import { describeAckedLoss, durablePrefixes, lostAcknowledged, type AckedLoss } from '../check/index.js';
import { RecoveryStore } from '../../recovery/index.js';
import { rpcStrategy, RpcErrorCodes, type RpcStrategy } from '../rpc/index.js';
import { RemoteRpcClient } from './client.js';
import type { RecoverySummary } from './node.js';
import { crashesOf, HarnessErrorCodes, MIN_SERVE_MS, rangeCheck, runRealCrashApp, secondsCheck, seedCheck, type KillPlan, type RealCrashEntry, type RealCrashPlan, type RealCrashRun, type RealCrashRunOptions, type RealCrashVerdict, type RestartRecord, type Supervisor, type Up } from './supervisor.js';
import { verifyDigestLog, workloadPayload, WORKLOAD_METHOD, type ClientLedger, type DigestVerdict } from './workload.js';

/** The rpc app's real-crash options (mainScript, seed, dir, keep, clock, log: RealCrashRunOptions). */
export interface RealCrashOptions extends RealCrashRunOptions {
  strategy: RpcStrategy;
  clients: number;
  /** Seconds of load (crashes and restarts included). */
  seconds: number;
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
  /** `serve --strict`: an msync before every durable acknowledgement (the PM file written through its descriptor, group by group). */
  strict: boolean;
  sizeBytes: number;
  /** Most seconds to wait for every call to be answered after the load stops. */
  drainSeconds: number;
  /** Progress: elapsed seconds of load, acknowledged so far, crashes so far. */
  onProgress: ((p: { elapsedS: number; seconds: number; acked: number; crashes: number }) => void) | undefined;
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
  strict: false,
  sizeBytes: 32 << 20,
  dir: undefined,
  keep: false,
  drainSeconds: 30,
  clock: systemClock,
  onProgress: undefined,
  log: undefined,
});


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

/** The rpc app's part of a real-crash run (its crash-test registry record's `realCrash`). */
export const RPC_REAL_CRASH: RealCrashEntry<RealCrashOptions, RealCrashReport> = {
  dirPrefix: 'pmrpc-real-crash-',
  resolveOptions: resolveRealCrashOptions,
  plan: rpcPlan,
};

/** A real-crash run of the rpc app: one serve process, its load clients, its kills, the digest log's verification. */
export function runRealCrash(options: Partial<RealCrashOptions> & { mainScript: string }): Promise<RealCrashReport> {
  return runRealCrashApp(RPC_REAL_CRASH, options);
}

function rpcPlan(o: RealCrashOptions): RealCrashPlan<RealCrashReport> {
  const clock = o.clock;
  const prng = createPrng(o.seed >>> 0);
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
  /** Every client, the mortal ones (and their replacements) included. */
  const clients: LoadClient[] = [];
  let ledgers: ClientLedger[] = [];
  let pmFile = '';
  let sup!: Supervisor;
  let t0 = 0;
  let stopped = false;
  let drainEnd = Number.POSITIVE_INFINITY;
  let loadSeconds = 0;
  let work: Array<Promise<void>> = [];
  let ticking = true;
  let ticker: Promise<void> = Promise.resolve();
  const progress = (): void => {
    const acked = clients.reduce((a, c) => a + c.ledger.ackedUpTo, 0);
    o.onProgress?.({ elapsedS: Math.min(o.seconds, (clock.nowMs() - t0) / 1000), seconds: o.seconds, acked, crashes: crashesOf(sup.incarnations).length });
  };
  return {
    nodes: (run) => {
      pmFile = join(run.dir, 'node.pm');
      const args = (plan: KillPlan | undefined): string[] => {
        const a = [o.mainScript, 'serve', '--app', rpcApp.name, '--create', '--pm', pmFile, '--size', String(o.sizeBytes), '--port', '0', '--strategy', o.strategy, '--ddio', o.ddio ? 'on' : 'off', '--json'];
        if (o.keepResults) a.push('--keep-results');
        if (o.strict) a.push('--strict');
        if (plan?.events !== undefined) a.push('--kill-after-events', String(plan.events));
        if (plan?.completions !== undefined) a.push('--kill-after-completions', String(plan.completions));
        return a;
      };
      return [[{ name: 'server', pmFile, args, killPlan, restartsMax: o.externalKills + killPlan.length + 3 }]];
    },
    load: async (run) => {
      sup = run.sups[0]!;
      const first = await sup.up();
      for (let k = 0; k < o.clients; k++) {
        clients.push(new LoadClient(await RemoteRpcClient.connect({ port: first.port, name: `load-${k}`, clock }), first.generation, false, restartCheck));
      }
      // The first mortal clients load the first incarnation with the others (its crash is theirs).
      const mortals: LoadClient[] = [];
      for (let k = 0; k < o.mortalClients; k++) mortals.push(new LoadClient(await RemoteRpcClient.connect({ port: first.port, name: `mortal-${k}.0`, clock }), first.generation, true, restartCheck));
      clients.push(...mortals);
      t0 = clock.nowMs();
      // While loading, a reconnect may wait as long as the run lasts; once stopped, drainSeconds.
      const deadline = (): number => (stopped ? drainEnd : clock.nowMs() + o.drainSeconds * 1000);
      const loops = clients.filter((c) => !c.mortal).map((c) => c.run(sup, o, () => stopped, deadline));
      // Mortal seats: each client dies with the server at the next crash; a new one takes its seat.
      const seats = mortals.map(async (firstMortal, k) => {
        for (let n = 0, c: LoadClient | undefined = firstMortal; c !== undefined; n++) {
          await c.run(sup, o, () => stopped, deadline);
          if (!c.dead || stopped || clients.length >= CLIENT_IDS_MAX) return;
          try {
            const { remote, generation } = await sup.connect(async (up) => ({ remote: await RemoteRpcClient.connect({ port: up.port, name: `mortal-${k}.${n + 1}`, clock }), generation: up.generation }), deadline());
            c = new LoadClient(remote, generation, true, restartCheck);
            clients.push(c);
          } catch (e) {
            if (!stopped) run.errors.push(`mortal client ${k}.${n + 1} could not connect: ${(e as Error).message}`);
            return;
          }
        }
      });
      work = [...loops, ...seats];
      ticker = (async () => {
        while (ticking) {
          progress();
          await run.sleep(250);
        }
      })();
    },
    kills: async function* (run) {
      for (const at of killTimes) {
        await run.sleep(t0 + at - clock.nowMs());
        // Each kill hits a server that has been serving a while (not one still starting up); on a
        // slow machine the load runs past --seconds until every asked-for kill has happened.
        await sup.servedFor(MIN_SERVE_MS);
        o.log?.(`SIGKILL of the server at ${((clock.nowMs() - t0) / 1000).toFixed(2)} s`);
        yield { nodes: [0] };
      }
      // Every asked-for acknowledgement kill strikes under load (bounded): the wakeup fires at each incarnation's start and exit.
      await run.wakeup.until(() => sup.ackKillsPending === 0, 30_000);
      if (sup.ackKillsPending > 0) run.errors.push(`${sup.ackKillsPending} acknowledgement kill(s) never struck within 30 s of load`);
    },
    // No inspection here: each client checks what it was told against the recovery's report before it resends (RestartCheck).
    finish: async (run) => {
      // After the last crash the clients resume and load the restarted server a while.
      await sup.up().catch(() => undefined);
      await run.sleep(Math.max(t0 + o.seconds * 1000, sup.upAtMs + 2 * MIN_SERVE_MS) - clock.nowMs());
      drainEnd = clock.nowMs() + o.drainSeconds * 1000;
      stopped = true;
      loadSeconds = (clock.nowMs() - t0) / 1000;
      await Promise.all(work);
      ticking = false;
      await ticker;
      progress();
    },
    teardown: () => {
      ticking = false;
      // What each client was told, taken before close(): close() says goodbye, one more (acknowledged)
      // request that releases the client's slot and is not part of the workload's digest log.
      ledgers = clients.map((c) => c.ledger);
      for (const c of clients) void c.remote.close();
    },
    check: (run) => rpcCheck(o, run, { sup: run.sups[0]!, clients, ledgers, restartCheck, pmFile, loadSeconds }),
  };
}

/** The checks of an rpc run once the server stopped: the digest log in PM against what each client was told. */
function rpcCheck(o: RealCrashOptions, run: RealCrashRun, r: { sup: Supervisor; clients: LoadClient[]; ledgers: ClientLedger[]; restartCheck: RestartCheck; pmFile: string; loadSeconds: number }): RealCrashReport {
  const { sup, clients, ledgers, restartCheck, pmFile, loadSeconds } = r;
  const errors = run.errors;
  for (const c of clients) errors.push(...c.errors);
  const unanswered = clients.reduce((a, c) => a + (c.dead ? 0 : c.inflight), 0);
  if (unanswered > 0) errors.push(`${unanswered} calls never answered within ${o.drainSeconds} s after the load`);

  // Verify from the file alone, read-only: a copy of its bytes, opened as an image.
  let verdict: DigestVerdict = { applied: 0, evicted: 0, lost: 0, duplicates: 0, outOfOrder: 0, corrupt: 0, unapplied: 0, abandoned: 0, losses: [], messages: [] };
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

  const crashes = crashesOf(sup.incarnations);
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

