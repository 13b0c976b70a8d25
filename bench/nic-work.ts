/**
 * The work a benchmark window costs, counted the same way by every suite that reports it.
 *
 * - Work requests: the sum of `Rnic.stats.wrs` over a deployment's NICs; a suite reports the
 *   delta over its window divided by its operations (`bench rs` workRequestsPerOp, `bench tx`
 *   workRequestsPerCommit). In-process deployments only (over TCP the NICs are another process's).
 * - CPU by role (`bench tx`): everything runs in this process. The process's total CPU (user +
 *   system, `process.cpuUsage()`) is read at a window's boundaries and split by role:
 *   - `nic`: the emulated NIC — every call into an Rnic's `submit`, `step`, `runAll` and
 *     `drainAll` (decoding, executing and completing work requests, the DMA drain, and what runs
 *     synchronously inside them: the delivery of a response or notification to the client's link
 *     object, and a host-write listener queueing an event for the server CPU). These sections are
 *     many and short (µs), so they are timed on a monotonic high-resolution clock
 *     (`performance.now()`, no system call): wall time inside the synchronous section, which on
 *     the one JS thread is the NIC's CPU unless the process is descheduled in it;
 *   - `host`: the server's CPU — every pass the app schedules through its host's `schedule` (the
 *     CPU poller's passes: FaRM-style LOCK / apply / unlock handling, PRISM-TX's reclamation),
 *     minus the NIC calls made inside it (nested sections are charged to the innermost role).
 *     A pass is timed on two clocks, and charged the smaller span: the process's CPU clock
 *     (`process.cpuUsage()`, read once where the pass starts and once where it ends: one system
 *     call per pass boundary, not per NIC step), so that a pass the machine deschedules is
 *     charged its CPU, not the time other processes ran (a long pass on a loaded machine would
 *     otherwise be charged whole scheduling periods), and the monotonic clock read just inside
 *     the CPU clock's reads, so that a pass is charged neither the getrusage calls that bound it
 *     (half of each falls inside the CPU span: tens of µs on a loaded machine, more than most
 *     passes' work) nor what V8's helper threads (concurrent GC, compilation) ran meanwhile (the
 *     process's clock has no per-thread view in Node 20). Each span bounds the pass's own CPU
 *     from above; the NIC sections and the timer's bookkeeping inside it are subtracted. A
 *     server's SEND to a client (`ServerQp.notify`: the in-process link delivers it to the
 *     client's handler synchronously) is a NIC section too, not the pass's;
 *   - accounting: the timer's own bookkeeping at a role change, between its two monotonic-clock
 *     reads (charged to no role; reported as accountingCpuUsPerCommit);
 *   - client: the rest of the process's CPU (the clients' protocol code, promise continuations,
 *     timers, GC), clamped at 0 (a NIC section preempted on a loaded machine is charged more than
 *     its CPU).
 *   CPU that V8's helper threads (concurrent GC, compilation) spend during a descheduled host pass is charged
 *   to the pass (the process's clock has no per-thread view in Node 20). Every system of a suite
 *   is timed by the same instrumentation (`RoleTimer.instrumentApp` on its shards' hosts), so
 *   their figures are comparable. The clocks are read only where the role changes (a NIC call
 *   inside a NIC call reads nothing).
 */
import type { Rnic } from '../flush/index.js';
import type { App, AppHost } from '../src/apps/index.js';

/** Work requests the NICs have executed so far (summed). */
export function nicWorkRequests(nics: readonly Rnic[]): number {
  let n = 0;
  for (const nic of nics) n += nic.stats.wrs;
  return n;
}

export type TimedRole = 'nic' | 'host';

/** µs spent in each role so far (monotonic; a window takes deltas), and the timer's own. */
export interface RoleTimes {
  nicUs: number;
  hostUs: number;
  /** The timer's bookkeeping at role changes, between its clock reads: charged to no role. */
  accountingUs: number;
}

/** The clocks a RoleTimer reads, in µs (injected in tests). */
export interface RoleClocks {
  /** Monotonic wall clock (NIC sections, bookkeeping). */
  wall: () => number;
  /** The process's CPU clock (host passes). */
  cpu: () => number;
}

const SYSTEM_CLOCKS: RoleClocks = {
  wall: () => performance.now() * 1000,
  cpu: () => {
    const u = process.cpuUsage();
    return u.user + u.system;
  },
};

interface Frame {
  role: TimedRole;
  /** Calls of this role nested directly in it (a NIC call inside a NIC call): they read no clock. */
  depth: number;
  /** host: the CPU clock where the pass started. */
  cpuStart: number;
  /** host: the wall clock where the pass started (read after the CPU clock: inside its span). */
  wallStart: number;
  /** host: the time of the NIC sections and of the bookkeeping inside the pass. */
  excluded: number;
}

/**
 * Charges the time of nested synchronous sections to the innermost role: NIC sections on the
 * wall clock, host passes on the CPU clock minus what ran nested in them. At a role change the
 * wall clock is read once to end the running section and once, after the bookkeeping, to start
 * the next; the time between the two reads is accounting, not a role's.
 */
export class RoleTimer {
  #nicUs = 0;
  #hostUs = 0;
  #accountingUs = 0;
  #hostPasses = 0;
  #frames: Frame[] = [];
  #since = 0;
  readonly #clocks: RoleClocks;

  constructor(clocks: RoleClocks = SYSTEM_CLOCKS) {
    this.#clocks = clocks;
  }

  enter(role: TimedRole): void {
    const top = this.#frames[this.#frames.length - 1];
    if (top?.role === role) {
      top.depth++;
      return;
    }
    const t0 = this.#clocks.wall();
    if (top?.role === 'nic') this.#nic(t0 - this.#since);
    const frame: Frame = { role, depth: 1, cpuStart: 0, wallStart: 0, excluded: 0 };
    this.#frames.push(frame);
    // The bookkeeping of a NIC call made inside a pass is in the pass's CPU time: excluded from it.
    this.#start(t0, top?.role === 'host' ? top : undefined);
    // A pass's CPU clock starts last (after the bookkeeping) and stops first; its wall clock
    // starts after the CPU clock and stops before it (neither clock read is inside its span).
    if (role === 'host') {
      this.#hostPasses++;
      frame.cpuStart = this.#clocks.cpu();
      frame.wallStart = this.#clocks.wall();
    }
  }

  exit(): void {
    const top = this.#frames[this.#frames.length - 1];
    if (top === undefined) return;
    if (--top.depth > 0) return;
    const wallEnd = top.role === 'host' ? this.#clocks.wall() : 0;
    const cpuEnd = top.role === 'host' ? this.#clocks.cpu() : 0;
    const t0 = this.#clocks.wall();
    this.#frames.pop();
    const below = this.#frames[this.#frames.length - 1];
    if (top.role === 'nic') this.#nic(t0 - this.#since);
    else {
      // Both spans bound the pass's own thread's CPU from above: the process's CPU clock also
      // counts V8's helper threads and half of each of its own reads (a getrusage system call, tens
      // of µs on a loaded machine), the wall clock also counts time the machine ran other
      // processes. The pass is charged the smaller one.
      const cpu = Math.min(cpuEnd - top.cpuStart, wallEnd - top.wallStart);
      this.#hostUs += Math.max(0, cpu - top.excluded);
      // A pass inside a NIC call inside a pass: the inner pass's time is not the outer pass's.
      const outer = this.#innermostPass();
      if (outer !== undefined) outer.excluded += cpu;
    }
    this.#start(t0, below?.role === 'host' ? below : undefined);
  }

  /** A NIC section of `us`: the NIC's, and excluded from the pass it ran in (if any). */
  #nic(us: number): void {
    this.#nicUs += us;
    const pass = this.#innermostPass();
    if (pass !== undefined) pass.excluded += us;
  }

  #innermostPass(): Frame | undefined {
    for (let i = this.#frames.length - 1; i >= 0; i--) if (this.#frames[i]!.role === 'host') return this.#frames[i];
    return undefined;
  }

  /** The next section starts now; what passed since `t0` (the bookkeeping) is accounting. */
  #start(t0: number, pass: Frame | undefined): void {
    const now = this.#clocks.wall();
    this.#accountingUs += now - t0;
    if (pass !== undefined) pass.excluded += now - t0;
    this.#since = now;
  }

  times(): RoleTimes {
    return { nicUs: this.#nicUs, hostUs: this.#hostUs, accountingUs: this.#accountingUs };
  }

  /** Host passes timed so far (a pass nested in a NIC call inside a pass counts too). */
  get hostPasses(): number {
    return this.#hostPasses;
  }

  /** Times this NIC's entry points as role `nic` (own properties shadowing the class's methods). */
  instrumentNic(nic: Rnic): void {
    for (const name of ['submit', 'step', 'runAll', 'drainAll'] as const) {
      const orig = nic[name] as (...args: unknown[]) => unknown;
      const timed = (...args: unknown[]): unknown => {
        this.enter('nic');
        try {
          return orig.apply(nic, args);
        } finally {
          this.exit();
        }
      };
      Object.defineProperty(nic, name, { value: timed, configurable: true, writable: true });
    }
  }

  /**
   * Times each ServerQp's `notify` (a SEND of the server CPU: the NIC's transport and, in process,
   * the client's handler that the link runs synchronously) as role `nic`.
   */
  instrumentNotify(nic: Rnic): void {
    const create = nic.createQp;
    const timer = this;
    const timedCreate = function (this: Rnic, ...args: Parameters<Rnic['createQp']>): ReturnType<Rnic['createQp']> {
      const qp = create.apply(nic, args);
      const orig = qp.notify;
      const timed = (...a: Parameters<typeof orig>): void => {
        timer.enter('nic');
        try {
          orig.apply(qp, a);
        } finally {
          timer.exit();
        }
      };
      Object.defineProperty(qp, 'notify', { value: timed, configurable: true, writable: true });
      return qp;
    };
    Object.defineProperty(nic, 'createQp', { value: timedCreate, configurable: true, writable: true });
  }

  /** A host schedule that times each pass as role `host`. */
  timedSchedule(schedule: (fn: () => void) => void): (fn: () => void) => void {
    return (fn) =>
      schedule(() => {
        this.enter('host');
        try {
          fn();
        } finally {
          this.exit();
        }
      });
  }

  /** `app` whose opened servers run on an instrumented host: its NIC's calls and its CPU passes timed. */
  instrumentApp<O extends object>(app: App<O>): App<O> {
    const open = (host: AppHost, o: O): ReturnType<App<O>['open']> => {
      this.instrumentNic(host.nic);
      this.instrumentNotify(host.nic);
      return app.open({ ...host, schedule: this.timedSchedule(host.schedule) }, o);
    };
    return Object.freeze({ ...app, open });
  }
}
