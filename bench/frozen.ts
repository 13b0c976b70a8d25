/**
 * A canary for time the machine takes away from every thread at once (bench redis, probe-tcp): a
 * worker thread sleeps SLEEP_MS at a time (Atomics.wait) and notes each wake-up that came at least
 * FROZEN_MIN_MS late. A late wake-up is time no CPU ran it: a hypervisor that stopped the virtual
 * machine (the host's CPU quota — these machines' vCPUs stop for 5–15 ms in a 100 ms period once
 * the guest's CPU and its disk flushes together pass the quota, docs/benchmarks.md), or CPU
 * contention in the guest. It costs a wake-up every SLEEP_MS; nothing else.
 */
import { Worker } from 'node:worker_threads';

export const SLEEP_MS = 2;
export const FROZEN_MIN_MS = 4;

export interface FrozenSummary {
  /** Wake-ups at least FROZEN_MIN_MS late. */
  events: number;
  /** Their lateness in all (beyond the SLEEP_MS asked for), ms. */
  frozenMs: number;
  /** The span watched, ms. */
  spanMs: number;
  /** frozenMs per second watched. */
  frozenMsPerSecond: number;
}

/** The late wake-ups among consecutive wake-up times (ms) of a thread that sleeps `sleepMs` at a time. */
export function frozenFrom(wakeups: ArrayLike<number>, sleepMs = SLEEP_MS, minLateMs = FROZEN_MIN_MS): FrozenSummary {
  let events = 0;
  let frozenMs = 0;
  for (let i = 1; i < wakeups.length; i++) {
    const late = wakeups[i]! - wakeups[i - 1]! - sleepMs;
    if (late >= minLateMs) {
      events++;
      frozenMs += late;
    }
  }
  const spanMs = wakeups.length >= 2 ? wakeups[wakeups.length - 1]! - wakeups[0]! : 0;
  return { events, frozenMs: Math.round(frozenMs * 10) / 10, spanMs: Math.round(spanMs), frozenMsPerSecond: spanMs > 0 ? Math.round((frozenMs / spanMs) * 10_000) / 10 : 0 };
}

// The worker: sleeps until told to stop (flag word 1), keeps only the wake-ups around a late one.
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { performance } = require('node:perf_hooks');
const flag = new Int32Array(workerData.sab);
const sleepMs = workerData.sleepMs, minLate = workerData.minLateMs;
const first = performance.now();
let last = first;
const late = [];
parentPort.postMessage({ ready: true });
while (Atomics.load(flag, 0) === 0) {
  Atomics.wait(flag, 1, 0, sleepMs);
  const now = performance.now();
  if (now - last - sleepMs >= minLate) late.push(last, now);
  last = now;
}
parentPort.postMessage({ first, last, late });
`;

export interface Canary {
  /** Stops the canary; what it saw since it started. */
  stop(): Promise<FrozenSummary>;
}

/**
 * Starts the canary thread (SLEEP_MS sleeps, wake-ups FROZEN_MIN_MS late counted); resolves once it
 * runs, so a window opened after it is watched whole: what it reports spans from before the
 * window to after stop().
 */
export async function startCanary(): Promise<Canary> {
  const sab = new SharedArrayBuffer(8);
  const flag = new Int32Array(sab);
  const worker = new Worker(WORKER, { eval: true, workerData: { sab, sleepMs: SLEEP_MS, minLateMs: FROZEN_MIN_MS } });
  let ready!: () => void;
  const running = new Promise<void>((r) => (ready = r));
  const result = new Promise<{ first: number; last: number; late: number[] }>((resolve, reject) => {
    worker.on('message', (m: { ready?: true; first: number; last: number; late: number[] }) => (m.ready === true ? ready() : resolve(m)));
    worker.once('error', reject);
  });
  await Promise.race([running, result]);
  return {
    async stop(): Promise<FrozenSummary> {
      Atomics.store(flag, 0, 1);
      Atomics.notify(flag, 1);
      const r = await result;
      await worker.terminate();
      // The late wake-ups, as (wake-up before, late wake-up) pairs: frozenFrom over each pair sums as over the whole series.
      const pairs = [];
      for (let i = 0; i + 1 < r.late.length; i += 2) pairs.push(frozenFrom([r.late[i]!, r.late[i + 1]!]));
      const frozenMs = pairs.reduce((a, p) => a + p.frozenMs, 0);
      const spanMs = r.last - r.first;
      return { events: pairs.length, frozenMs: Math.round(frozenMs * 10) / 10, spanMs: Math.round(spanMs), frozenMsPerSecond: spanMs > 0 ? Math.round((frozenMs / spanMs) * 10_000) / 10 : 0 };
    },
  };
}
