/**
 * The one module of pmrpc that reads the system clock, schedules on the global timers and reads
 * the crypto entropy source (DESIGN §7). Library code receives these by injection; the CLI,
 * the benchmarks and the defaults of public constructors take them from here.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Clock, TimerHandle } from './clock.js';
import type { Entropy } from './prng.js';

export const systemClock: Clock = {
  nowMs(): number {
    return performance.now();
  },
  nowNs(): bigint {
    return process.hrtime.bigint();
  },
  setTimer(delayMs: number, fn: () => void): TimerHandle {
    const t = setTimeout(fn, delayMs);
    return { cancel: () => clearTimeout(t) };
  },
};

export const cryptoEntropy: Entropy = {
  bytes(n: number): Uint8Array {
    return new Uint8Array(randomBytes(n));
  },
};

/**
 * One macrotask turn of the event loop: resolves once every microtask queued before it (and every
 * microtask those queue) has run. A scheduler that must run all pending continuations before its
 * next step takes this by injection (the crash explorer's World.turn): no promise-only construct
 * can tell when a chain of continuations of unknown depth has finished.
 */
export function macrotaskTurn(): Promise<void> {
  return new Promise<void>((resolve) => nextTurn(resolve));
}

/** Wall-clock milliseconds since the epoch, for timestamps in reports and headers. */
export function wallClockMs(): number {
  return Date.now();
}

/** A fresh random seed in [0, 2^31), for runs that were not given one (it is printed, so it replays). */
export function randomSeed(): number {
  return randomBytes(4).readUInt32LE(0) >>> 1;
}

/** Runs `fn` on a later turn of the event loop, after pending I/O (setImmediate): how a server yields between slices of work. */
export function nextTurn(fn: () => void): void {
  setImmediate(fn);
}

/** The environment variable a supervising parent sets on a child that must not outlive it (with a stdin pipe). */
export const EXIT_WITH_PARENT_ENV = 'PMRPC_EXIT_WITH_PARENT';

/**
 * In a child process: exit when the parent goes. The parent spawns the child with a stdin pipe it
 * never writes; when the parent exits — even by SIGKILL, or a test runner's timeout — the pipe
 * reaches end-of-file and the child exits, so a killed benchmark or test leaves no server behind.
 * `onlyIfAsked`: only when the parent set EXIT_WITH_PARENT_ENV=1 (`pmrpc serve` run by the
 * real-crash Supervisor; under systemd or `cluster up` stdin is not a pipe and nothing changes).
 */
export function exitWithParent(onlyIfAsked = false): void {
  if (onlyIfAsked && process.env[EXIT_WITH_PARENT_ENV] !== '1') return;
  process.stdin.on('end', () => process.exit(0)).on('error', () => process.exit(0)).resume();
  // Read without holding the event loop: a child that has finished (an orderly stop) still exits.
  (process.stdin as { unref?: () => void }).unref?.();
}
