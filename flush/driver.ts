/**
 * The one loop that drives an Rnic for a link's server end (DESIGN §6: "both drive the NIC through
 * one loop"): the in-process fabric and the TCP server both submit through a NicDriver.
 *
 * - immediate: a request executes as soon as it is submitted — everything queued runs, QP by QP,
 *   then (idleDrain) the whole NIC cache drains;
 * - stepped: the owner picks the next work request (the fabric's seeded scheduling), up to a
 *   bound, then the idle drain if nothing is left queued.
 *
 * Both share one re-entry guard: a response handler or host-write listener that submits again
 * while the loop runs only queues its request, and the running loop serves it (no recursion, no
 * interleaving of two loops over one NIC).
 *
 * Group commit (`strict` file region; docs/recovery.md, "Group commit"): each run is one **pass**
 * inside the region's groupCommitAsync scope — the FLUSHes of every message it executes write their
 * lines but share ONE msync at the pass's end — and the NIC holds the pass's responses until that
 * msync calls back, then releases them (each still through the region's ack gate). The msync runs
 * off the JS thread (PmemRegion.syncAsync) where the region can, so the next socket read and the
 * server CPU's pass run while it syncs; passes waiting for their msync release their responses
 * oldest first. Without an async msync it syncs on the thread and the pass releases at once. A
 * FLUSH inside a chain syncs at once (an ordering point, Rnic.step). A pass that fails (a failed
 * msync, PMRPC_ERR_SYNC_FAILED, sticky) acknowledges nothing after the failure: what is held or
 * queued is answered with error completions of the failure's code, and the pass does not throw.
 */
import type { HeldResponses, Rnic } from './nic.js';
import type { RequestMessage } from './types.js';

/** Test-only fault switches of the driver (each must make a test fail). */
export interface NicDriverFaults {
  /** Group commit: release a pass's responses before its msync, each reaching the link before the ack gate. */
  respondBeforeSync?: boolean;
  /** Group commit: a FLUSH inside a chain waits for the pass's msync instead of syncing at once (its ordering lost). */
  skipChainSync?: boolean;
}

/** A `faults` option of a NIC loop's owner (the fabric, the TCP server): undefined, or an object of known boolean switches (NicDriverFaults). */
export function checkDriverFaults(name: string, f: unknown): void {
  if (f === undefined) return;
  if (f === null || typeof f !== 'object') throw new TypeError(`${name} must be an object, got ${String(f)}`);
  for (const [k, v] of Object.entries(f)) {
    if (k !== 'respondBeforeSync' && k !== 'skipChainSync') throw new TypeError(`unknown fault switch ${k}`);
    if (typeof v !== 'boolean' && v !== undefined) throw new TypeError(`fault switch ${k} must be a boolean, got ${String(v)}`);
  }
}

export class NicDriver {
  readonly nic: Rnic;
  /** Drain the whole NIC cache when the loop leaves the NIC idle. */
  readonly idleDrain: boolean;
  /** One msync per pass, responses held until it (a `strict`, file-backed region). */
  readonly groupCommit: boolean;
  readonly faults: Readonly<NicDriverFaults>;
  #running = false;

  /** How responses released on a later turn (their msync called back) are sent: the owner may cork its connections around them. */
  readonly #around: ((send: () => void) => void) | undefined;

  constructor(nic: Rnic, idleDrain: boolean, faults: Readonly<NicDriverFaults> = {}, around?: (send: () => void) => void) {
    this.nic = nic;
    this.idleDrain = idleDrain;
    this.groupCommit = nic.region.options.strict && nic.region.path !== undefined;
    this.faults = faults;
    this.#around = around;
  }

  /** Group commit: passes whose responses wait for their msync, oldest first. */
  #waiting: WaitingPass[] = [];

  /** Passes whose responses wait for their msync to call back. */
  get passesWaiting(): number {
    return this.#waiting.length;
  }

  /** runUntilIdle's body: everything queued, then the idle drain. */
  readonly #runAll = (): void => {
    this.nic.runAll();
    if (this.idleDrain) {
      this.nic.drainAll();
      this.nic.runEnded();
    }
  };

  /** Whether a loop is running (a submit now only queues). */
  get running(): boolean {
    return this.#running;
  }

  /**
   * Queues `msg` on the NIC and, unless a loop is already running, runs until idle. Throws what
   * Rnic.submit throws (PMRPC_ERR_NO_SUCH_QP) or what execution throws; the guard is released.
   */
  submit(msg: RequestMessage): void {
    this.nic.submit(msg);
    this.runUntilIdle();
  }

  /** Executes everything queued, QP by QP, then the idle drain. false if a loop was already running. */
  runUntilIdle(): boolean {
    if (this.#running) return false;
    this.#running = true;
    try {
      if (this.groupCommit) this.#pass(this.#runAll);
      else this.#runAll(); // no closure per run on the common path
    } finally {
      this.#running = false;
    }
    return true;
  }

  /**
   * Calls `step` (which executes one work request, false when there was none) until it returns
   * false or `stepsMax` steps ran; then the idle drain if no QP has work queued. Returns the steps
   * taken — 0 if a loop was already running.
   */
  runSteps(step: () => boolean, stepsMax: number): number {
    if (this.#running) return 0;
    this.#running = true;
    let n = 0;
    try {
      if (this.groupCommit) {
        this.#pass(() => {
          while (n < stepsMax && step()) n++;
          if (this.idleDrain && this.nic.idle) {
            this.nic.drainAll();
            this.nic.runEnded();
          }
        });
      } else {
        // The same body without its closure (one per run otherwise).
        while (n < stepsMax && step()) n++;
        if (this.idleDrain && this.nic.idle) {
          this.nic.drainAll();
          // The run's end, inside it (its responses not yet sent): the server CPU's listeners (Rnic.onRunEnd).
          this.nic.runEnded();
        }
      }
    } finally {
      this.#running = false;
    }
    return n;
  }

  /**
   * One pass: as is, or (group commit) inside one groupCommitAsync scope with its responses held
   * until its msync calls back (at once when it synced on the thread), released in pass order.
   */
  #pass(body: () => void): void {
    if (!this.groupCommit) {
      body();
      return;
    }
    const nic = this.nic;
    nic.holdResponses(this.faults.skipChainSync !== true);
    const p: WaitingPass = { responses: undefined, synced: false, failure: undefined, mark: -1 };
    this.#waiting.push(p);
    let later = false; // a call back inside groupCommitAsync is released below, with the pass
    let failure: unknown;
    try {
      nic.region.groupCommitAsync(
        () => {
          body();
          if (this.faults.respondBeforeSync === true) nic.releaseResponses(true);
          p.responses = nic.takeResponses();
          p.mark = nic.region.syncMark();
        },
        (err) => {
          p.synced = true;
          p.failure = err;
          if (!later) return;
          if (err !== undefined) nic.failQueued(err);
          // After the microtasks this call back's release queues (a strict RPC batch's RESULTs,
          // held for the same msync): the RESULTs are gathered by then and leave in the same
          // socket write as these responses.
          queueMicrotask(() => queueMicrotask(() => {
            if (this.#around !== undefined) this.#around(this.#release);
            else this.#releaseWaiting();
          }));
        },
      ); // the pass's one msync, at the end of the scope (off the thread where the region can)
    } catch (e) {
      failure = e;
    }
    later = true;
    if (failure !== undefined) {
      // The body threw (a store after a failed msync, sticky): nothing queued runs past it
      // (answered with its code); what it held leaves through the ack gate, which syncs what
      // waits or answers with the failure.
      p.responses ??= nic.takeResponses();
      p.synced = true;
      nic.failQueued(failure);
    } else if (p.failure !== undefined) nic.failQueued(p.failure);
    this.#releaseWaiting();
  }

  /** #releaseWaiting as one closure (the owner's `around` calls it). */
  readonly #release = (): void => this.#releaseWaiting();

  /** Sends the responses of the oldest passes whose msync called back, in pass order. */
  #releaseWaiting(): void {
    const waiting = this.#waiting;
    while (waiting.length > 0) {
      const p = waiting[0]!;
      if (!p.synced) return;
      waiting.shift();
      // Its msync called back (p.synced): released for the pass's own mark (PmemRegion.ackFor) —
      // its responses depend on nothing drained after it, so the ack gate need not sync a later
      // pass's drains first (the release now runs a few microtasks after the call back).
      if (p.mark >= 0 && p.failure === undefined) this.nic.region.ackFor(p.mark, () => this.nic.releaseTaken(p.responses, false, undefined));
      else this.nic.releaseTaken(p.responses, false, p.failure);
    }
  }
}

/** A group-commit pass whose responses wait for its msync. */
interface WaitingPass {
  responses: HeldResponses | undefined;
  synced: boolean;
  failure: unknown;
  /** region.syncMark() when the pass ended (its responses were computed by then); -1: not taken. */
  mark: number;
}
