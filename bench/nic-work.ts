/**
 * The work a benchmark window costs, counted the same way by every suite that reports it.
 *
 * - Work requests: the sum of `Rnic.stats.wrs` over a deployment's NICs; a suite reports the
 *   delta over its window divided by its operations (`bench rs` workRequestsPerOp, `bench tx`
 *   workRequestsPerCommit). In-process deployments only (over TCP the NICs are another process's).
 * - CPU by role (`bench tx`): everything runs in this process, so the process's CPU time
 *   (`process.cpuUsage()`, user + system) is split by reading that same CPU clock at the
 *   boundaries of the synchronous sections of code that belong to a role:
 *   - `nic`: the emulated NIC — every call into an Rnic's `submit`, `step`, `runAll` and
 *     `drainAll` (decoding, executing and completing work requests, the DMA drain, and what runs
 *     synchronously inside them: the delivery of a response or notification to the client's link
 *     object, and a host-write listener queueing an event for the server CPU);
 *   - `host`: the server's CPU — every pass the app schedules through its host's `schedule` (the
 *     CPU poller's passes: FaRM-style LOCK / apply / unlock handling, PRISM-TX's reclamation),
 *     minus the NIC calls made inside it (nested sections are charged to the innermost role);
 *   - client: the rest of the process's CPU (the clients' protocol code, promise continuations,
 *     timers, GC).
 *   The clock is read only where the role changes (a NIC call inside a NIC call reads nothing).
 *   It is the process's CPU clock (Node 20 has no per-thread one): CPU that V8's helper threads
 *   (concurrent GC, compilation) spend during a section is charged to that section's role, and the
 *   reads themselves (one getrusage system call each, ≈ 1 µs) are charged half to each side.
 *   Wall clock would not do: on a loaded machine a preempted section would be charged the time
 *   other processes ran.
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

/** CPU µs spent in each role so far (monotonic; a window takes deltas). */
export interface RoleTimes {
  nicUs: number;
  hostUs: number;
}

function cpuNowUs(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

/** Charges the time of nested synchronous sections to the innermost role. */
export class RoleTimer {
  #nicUs = 0;
  #hostUs = 0;
  #stack: TimedRole[] = [];
  #since = 0;

  enter(role: TimedRole): void {
    const top = this.#stack[this.#stack.length - 1];
    if (top !== role) {
      const now = cpuNowUs();
      this.#charge(top, now);
      this.#since = now;
    }
    this.#stack.push(role);
  }

  exit(): void {
    const role = this.#stack.pop();
    const top = this.#stack[this.#stack.length - 1];
    if (top !== role) {
      const now = cpuNowUs();
      this.#charge(role, now);
      this.#since = now;
    }
  }

  #charge(role: TimedRole | undefined, now: number): void {
    if (role === 'nic') this.#nicUs += now - this.#since;
    else if (role === 'host') this.#hostUs += now - this.#since;
  }

  times(): RoleTimes {
    return { nicUs: this.#nicUs, hostUs: this.#hostUs };
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
      return app.open({ ...host, schedule: this.timedSchedule(host.schedule) }, o);
    };
    return Object.freeze({ ...app, open });
  }
}
