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
 */
import type { Rnic } from './nic.js';
import type { RequestMessage } from './types.js';

export class NicDriver {
  readonly nic: Rnic;
  /** Drain the whole NIC cache when the loop leaves the NIC idle. */
  readonly idleDrain: boolean;
  #running = false;

  constructor(nic: Rnic, idleDrain: boolean) {
    this.nic = nic;
    this.idleDrain = idleDrain;
  }

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
      this.nic.runAll();
      if (this.idleDrain) this.nic.drainAll();
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
      while (n < stepsMax && step()) n++;
      if (this.idleDrain && this.nic.busyQps().length === 0) this.nic.drainAll();
    } finally {
      this.#running = false;
    }
    return n;
  }
}
