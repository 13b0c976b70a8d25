/**
 * Time, injected (DESIGN §7). Library code never reads the system clock or schedules with the
 * global timers: it receives a Clock. The system clock lives in pmem/runtime.ts; VirtualClock
 * here drives deterministic simulation and tests.
 */

export interface TimerHandle {
  cancel(): void;
}

export interface Clock {
  /** Monotonic time in milliseconds (fractional). */
  nowMs(): number;
  /** Monotonic time in nanoseconds. */
  nowNs(): bigint;
  /** Runs `fn` once after `delayMs` milliseconds of this clock's time. */
  setTimer(delayMs: number, fn: () => void): TimerHandle;
}

interface VirtualTimer {
  dueNs: bigint;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/** A clock that moves only when told to. Timers fire in due order, ties in creation order. */
export class VirtualClock implements Clock {
  #nowNs: bigint;
  #timers: VirtualTimer[] = [];
  #seq = 0;

  constructor(startNs: bigint = 0n) {
    this.#nowNs = startNs;
  }

  nowMs(): number {
    return Number(this.#nowNs) / 1e6;
  }

  nowNs(): bigint {
    return this.#nowNs;
  }

  setTimer(delayMs: number, fn: () => void): TimerHandle {
    if (!(delayMs >= 0) || !Number.isFinite(delayMs)) {
      throw new RangeError(`delayMs must be a finite number >= 0, got ${delayMs}`);
    }
    const t: VirtualTimer = { dueNs: this.#nowNs + BigInt(Math.round(delayMs * 1e6)), seq: this.#seq++, fn, cancelled: false };
    this.#timers.push(t);
    return { cancel: () => void (t.cancelled = true) };
  }

  /** Advances time by `deltaNs`, firing every timer that falls due, in order. */
  advanceNs(deltaNs: bigint): void {
    if (deltaNs < 0n) throw new RangeError(`deltaNs must be >= 0, got ${deltaNs}`);
    const target = this.#nowNs + deltaNs;
    for (;;) {
      const next = this.#nextDue(target);
      if (next === undefined) break;
      this.#nowNs = next.dueNs;
      this.#timers.splice(this.#timers.indexOf(next), 1);
      next.fn();
    }
    this.#nowNs = target;
  }

  advanceMs(deltaMs: number): void {
    this.advanceNs(BigInt(Math.round(deltaMs * 1e6)));
  }

  /** Due time of the earliest timer not yet fired or cancelled (undefined: none) — for discrete-event schedulers. */
  nextDueNs(): bigint | undefined {
    let best: bigint | undefined;
    for (const t of this.#timers) if (!t.cancelled && (best === undefined || t.dueNs < best)) best = t.dueNs;
    return best;
  }

  /** Number of timers not yet fired or cancelled. */
  get pendingTimers(): number {
    return this.#timers.filter((t) => !t.cancelled).length;
  }

  #nextDue(limitNs: bigint): VirtualTimer | undefined {
    let best: VirtualTimer | undefined;
    this.#timers = this.#timers.filter((t) => !t.cancelled);
    for (const t of this.#timers) {
      if (t.dueNs > limitNs) continue;
      if (best === undefined || t.dueNs < best.dueNs || (t.dueNs === best.dueNs && t.seq < best.seq)) best = t;
    }
    return best;
  }
}
