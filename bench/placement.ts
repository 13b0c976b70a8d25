/**
 * Where a cell's two sides run (bench tcp, bench redis, probe-tcp): the load's thread on one CPU,
 * the server's main thread on another. Left to the scheduler, the placement changes from run to
 * run: a light pair — the echo, each process mostly waiting for the other — is often put on ONE
 * CPU (the waker's), and then moves half as many messages as on two, while a busy pair (a durable
 * RPC server and its clients) is spread; the limit came out weak in some runs and not in others
 * (docs/benchmarks.md, "The echo's placement"). Pinned, every cell — limit, RPC, Redis — runs in
 * the placement that is best for both: each side on its own CPU.
 *
 * Pinning uses `taskset` (util-linux): `taskset -p -c CPU PID` sets the affinity of the thread
 * whose id is PID — a process's main thread; threads already running (V8's helpers, libuv's pool)
 * keep theirs. Where taskset is missing or refuses (a cpuset without CPUs 0 and 1), or the machine
 * has one CPU, the cells run unpinned and the report says so.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/** The CPU of the load (the bench process's main thread, redis-benchmark). */
export const LOAD_CPU = 0;
/** The CPU of the server's main thread (pmrpc serve, the echo server, redis-server). */
export const SERVER_CPU = 1;

function taskset(args: string[]): boolean {
  try {
    return spawnSync('taskset', args, { stdio: 'ignore' }).status === 0;
  } catch {
    return false;
  }
}

/** The CPUs the main thread of `pid` may run on (Cpus_allowed_list), or undefined. */
export function allowedCpus(pid: number): string | undefined {
  try {
    return /Cpus_allowed_list:\s*(\S+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  } catch {
    return undefined;
  }
}

let why: string | null | undefined;

/** Why cells run unpinned here (null: they are pinned); checked once: Linux, two CPUs, taskset that can set this thread to LOAD_CPU and back. */
export function unpinnedReason(): string | null {
  if (why !== undefined) return why;
  const mine = allowedCpus(process.pid);
  if (process.platform !== 'linux' || mine === undefined) why = 'not Linux';
  else if (availableParallelism() < 2) why = 'one CPU';
  else if (!taskset(['-p', '-c', String(LOAD_CPU), String(process.pid)])) why = 'taskset missing or refused';
  else why = taskset(['-p', '-c', mine, String(process.pid)]) ? null : 'taskset could not restore the affinity';
  return why;
}

/** What a report says of its cells' placement. */
export function placementNote(): string {
  const w = unpinnedReason();
  return w === null ? `pinned (taskset): the load on CPU ${LOAD_CPU}, the server's main thread on CPU ${SERVER_CPU}` : `unpinned (${w}): the scheduler places both sides`;
}

/** A pinned cell: restore() puts this process's main thread back on the CPUs it had (once). */
export interface Placement {
  pinned: boolean;
  restore(): void;
}

/**
 * Pins `serverPid`'s main thread to SERVER_CPU and this process's (the load's) to LOAD_CPU, where
 * pinning works (unpinnedReason); the caller restores this process's placement after its cell.
 */
export function pinPair(serverPid: number | undefined): Placement {
  const unpinned: Placement = { pinned: false, restore: () => {} };
  if (serverPid === undefined || unpinnedReason() !== null) return unpinned;
  const mine = allowedCpus(process.pid);
  if (mine === undefined || !taskset(['-p', '-c', String(SERVER_CPU), String(serverPid)])) return unpinned;
  if (!taskset(['-p', '-c', String(LOAD_CPU), String(process.pid)])) return unpinned;
  let restored = false;
  return {
    pinned: true,
    restore: () => {
      if (restored) return;
      restored = true;
      taskset(['-p', '-c', mine, String(process.pid)]);
    },
  };
}

/** Pins another process's main thread (redis-server) to SERVER_CPU where pinning works; whether it did. */
export function pinServer(pid: number | undefined): boolean {
  return pid !== undefined && unpinnedReason() === null && taskset(['-p', '-c', String(SERVER_CPU), String(pid)]);
}

/** A load command (redis-benchmark) run on LOAD_CPU where pinning works: [command, args]. */
export function loadCommand(command: string, args: string[]): [string, string[]] {
  return unpinnedReason() === null ? ['taskset', ['-c', String(LOAD_CPU), command, ...args]] : [command, args];
}
