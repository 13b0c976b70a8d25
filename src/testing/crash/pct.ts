/**
 * Adversarial scheduling for the one explorer (a chooser of World, world.ts): what the seeded
 * random scheduler reaches only by luck — one agent held back while the others run on — made a
 * first-class, seeded, replayable dimension of a run.
 *
 * - `pct`: probabilistic concurrency testing (Burckhardt, Kothari, Musuvathi, Nagarakatte,
 *   ASPLOS'10). Every agent (a QP of a node, or a node's CPU) gets a random priority when it first
 *   becomes runnable; the highest-priority runnable agent always runs; at `depth` change points,
 *   drawn uniformly among the first `horizon` steps, the agent that runs there drops below every
 *   initial priority. A bug of depth d (d ordering constraints) is found with probability at least
 *   1/(n·k^(d-1)) per run (n agents, k steps); strict priorities also starve an agent for as long
 *   as higher ones have work — the long delays that random scheduling almost never produces.
 * - `stalls` (with either mode): at `stalls` steps drawn uniformly among the first `horizon`, one
 *   runnable agent is picked at random and held back for a random bound in [1, stallSteps] steps:
 *   with `stallUnit: 'client'`, every QP of that agent's client (on every node) is held, so a
 *   client stops mid-operation while the others — and resolvers — go on; with 'qp', only that QP.
 *   With `stallOn: 'atomic'`, a stall begins only when its unit next runs an atomic (a CAS, FAA or
 *   ATOMIC WRITE — the protocols' synchronisation points) at or after its drawn step, and holds each
 *   QP of the unit from the step after that QP's own next atomic until the stall ends: a client
 *   whose CASes landed on several nodes while everything after them (the READ, the FLUSH that would
 *   make them durable) is delayed — the window in which another agent sees a result no FLUSH of its
 *   own can persist (DESIGN §2.2).
 *   A held agent still runs when nothing else can (a stall never blocks the run, and the logical
 *   clock never moves because of one).
 *
 * Deterministic: every draw comes from the seed (never from the run's own PRNG, so the workload
 * sees the same randomness under every schedule), and agents are named by stable keys, so a crash
 * run (multi.ts) replays the same schedule up to its crash point.
 */
import { createPrng, intIn, oneOf, resolveOptions, type OptionChecks } from '../../../pmem/index.js';
import { mix } from './seeds.js';
import type { Chooser, StepChoice, World } from './world.js';

export interface ScheduleOptions {
  /**
   * 'random': each step uniformly among the runnable; 'pct': priorities with change points;
   * 'mixed': a schedule drawn per seed (mixedSchedule) — random, stalls of a client or QP right after
   * its atomic, or PCT — what a sweep runs by default (the CLI's default).
   */
  mode: 'random' | 'pct' | 'mixed';
  /** pct: priority change points. */
  depth: number;
  /** Steps over which change points and stalls are drawn (an estimate of a run's length). */
  horizon: number;
  /** Agents held back, one at a time or overlapping, each at a drawn step. */
  stalls: number;
  /** Most steps a stall lasts (each draws its bound in [1, stallSteps]). */
  stallSteps: number;
  /** What a stall holds: one QP, or every QP of its client (an unlabelled QP or a CPU: itself). */
  stallUnit: 'qp' | 'client';
  /** When a stall begins: at its drawn step ('any'), or right after the picked agent's next atomic at or after it ('atomic'). */
  stallOn: 'any' | 'atomic';
}

export const SCHEDULE_DEFAULTS: Readonly<ScheduleOptions> = Object.freeze({ mode: 'random', depth: 3, horizon: 20_000, stalls: 0, stallSteps: 200, stallUnit: 'client', stallOn: 'any' });

const SCHEDULE_CHECKS: OptionChecks<ScheduleOptions> = {
  mode: oneOf(['random', 'pct', 'mixed']),
  depth: intIn(0, 1000),
  horizon: intIn(1, 1e9),
  stalls: intIn(0, 100_000),
  stallSteps: intIn(1, 1e9),
  stallUnit: oneOf(['qp', 'client']),
  stallOn: oneOf(['any', 'atomic']),
};

export function resolveSchedule(options: Partial<ScheduleOptions> = {}): ScheduleOptions {
  return resolveOptions(SCHEDULE_DEFAULTS, options, SCHEDULE_CHECKS);
}

/**
 * The schedule `--schedule mixed` draws for seed `seed`: seeds cycle through four kinds, so every
 * sweep of four or more seeds runs each — plain random (seed 1, 5, …); a client held right after
 * its next atomic (its READ and FLUSH delayed: the window in which another agent sees a CAS no
 * FLUSH has persisted); one QP held right after its atomic; PCT priorities (depth 3) with client
 * stalls. Holds are long (up to 400 steps), and the horizon over which stalls are drawn alternates
 * between a short workload's length (800 steps) and a long one's (3000) per cycle.
 */
export function mixedSchedule(seed: number): Partial<ScheduleOptions> {
  const kind = ((seed - 1) % 4 + 4) % 4;
  const horizon = Math.floor(((seed - 1) / 4)) % 2 === 0 ? 800 : 3000;
  if (kind === 0) return { mode: 'random' };
  if (kind === 1) return { mode: 'random', horizon, stalls: 20, stallSteps: 400, stallUnit: 'client', stallOn: 'atomic' };
  if (kind === 2) return { mode: 'random', horizon, stalls: 20, stallSteps: 400, stallUnit: 'qp', stallOn: 'atomic' };
  return { mode: 'pct', depth: 3, horizon, stalls: 10, stallSteps: 300, stallUnit: 'client', stallOn: 'any' };
}

/** `s` with a mixed schedule replaced by the one seed `seed` draws (what a replay command names). */
export function concreteSchedule(s: Partial<ScheduleOptions> | undefined, seed: number): Partial<ScheduleOptions> | undefined {
  return s !== undefined && resolveSchedule(s).mode === 'mixed' ? mixedSchedule(seed) : s;
}

/** True when the schedule is the plain seeded random one (the World's own chooser serves it). */
export function isPlainRandom(s: ScheduleOptions): boolean {
  return s.mode === 'random' && s.stalls === 0;
}

/** The CLI flags that select `s` (empty for the plain random schedule): what a replay command names. */
export function scheduleArgs(s: ScheduleOptions): string {
  if (isPlainRandom(s)) return '';
  if (s.mode === 'mixed') return '--schedule mixed';
  const d = SCHEDULE_DEFAULTS;
  const parts = [`--schedule ${s.mode}`];
  if (s.mode === 'pct') parts.push(`--pct-depth ${s.depth}`);
  if (s.horizon !== d.horizon) parts.push(`--schedule-horizon ${s.horizon}`);
  if (s.stalls > 0) parts.push(`--stalls ${s.stalls}`, `--stall-steps ${s.stallSteps}`, `--stall-unit ${s.stallUnit}`, `--stall-on ${s.stallOn}`);
  return parts.join(' ');
}

/** A short name for reports, e.g. "pct(d=3)+stalls(8x<=200 client atomic)". */
export function scheduleName(s: ScheduleOptions): string {
  if (s.mode === 'mixed') return 'mixed';
  const base = s.mode === 'pct' ? `pct(d=${s.depth})` : 'random';
  return s.stalls > 0 ? `${base}+stalls(${s.stalls}x<=${s.stallSteps} ${s.stallUnit}${s.stallOn === 'atomic' ? ' atomic' : ''})` : base;
}

const ATOMICS: ReadonlySet<string> = new Set(['cas', 'faa', 'atomicWrite', 'prismCas']);

/**
 * The chooser of schedule `s` for a World of seed `seed` (undefined: the World's own seeded random
 * choice). `opOf(choice)` names the work request a QP choice runs (for `stallOn: 'atomic'`).
 * Stateful: one per World.
 */
export function scheduleChooser(s: ScheduleOptions, seed: number, opOf?: (c: StepChoice) => string | undefined): Chooser | undefined {
  if (isPlainRandom(s)) return undefined;
  if (s.mode === 'mixed') return scheduleChooser(resolveSchedule(mixedSchedule(seed)), seed, opOf);
  const prng = createPrng(mix(seed, 0x9c7));
  const changes = new Set<number>();
  if (s.mode === 'pct') for (let j = 0; j < s.depth; j++) changes.add(prng.int(0, s.horizon - 1));
  const stallAt = Array.from({ length: s.stalls }, () => ({ at: prng.int(0, s.horizon - 1), bound: prng.int(1, s.stallSteps), pick: prng.u32() })).sort((a, b) => a.at - b.at);
  const priority = new Map<string, number>();
  let lowered = 0;
  // Held units ('any'): unit -> the step at which it runs again. Held QPs ('atomic'): key -> that step.
  const held = new Map<string, number>();
  const heldQps = new Map<string, number>();
  // Armed stalls ('atomic'): each QP of the unit is held from the step after its next atomic, until the stall ends.
  const armed: Array<{ unit: string; bound: number; until: number | undefined }> = [];
  let step = 0;
  let next = 0;
  const unitOf = (c: StepChoice): string => (s.stallUnit === 'client' && c.client >= 0 ? `client ${c.client}` : c.key);
  const prio = (c: StepChoice): number => {
    let p = priority.get(c.key);
    if (p === undefined) {
      p = s.depth + 1 + prng.u32(); // above every lowered priority (those are <= depth)
      priority.set(c.key, p);
    }
    return p;
  };
  return (choices) => {
    for (const [u, until] of held) if (until <= step) held.delete(u);
    for (const [k, until] of heldQps) if (until <= step) heldQps.delete(k);
    for (let a = armed.length - 1; a >= 0; a--) if (armed[a]!.until !== undefined && armed[a]!.until! <= step) armed.splice(a, 1);
    while (next < stallAt.length && stallAt[next]!.at <= step) {
      const st = stallAt[next++]!;
      const unit = unitOf(choices[st.pick % choices.length]!);
      if (s.stallOn === 'atomic') armed.push({ unit, bound: st.bound, until: undefined });
      else held.set(unit, Math.max(held.get(unit) ?? 0, step + st.bound));
    }
    let idx = choices.map((_, i) => i).filter((i) => !held.has(unitOf(choices[i]!)) && !heldQps.has(choices[i]!.key));
    if (idx.length === 0) idx = choices.map((_, i) => i); // a stall never blocks the run
    let i: number;
    if (s.mode === 'pct') {
      i = idx[0]!;
      for (const j of idx) if (prio(choices[j]!) > prio(choices[i]!)) i = j;
      if (changes.has(step)) priority.set(choices[i]!.key, s.depth - lowered++);
    } else {
      i = idx[prng.int(0, idx.length - 1)]!;
    }
    const chosen = choices[i]!;
    if (armed.length > 0 && chosen.qpn >= 0) {
      const op = opOf?.(chosen);
      if (op !== undefined && ATOMICS.has(op)) {
        const u = unitOf(chosen);
        for (const a of armed) {
          if (a.unit !== u) continue;
          // Held from the next step on (this step, the atomic, runs), until the stall ends.
          a.until ??= step + 1 + a.bound;
          heldQps.set(chosen.key, Math.max(heldQps.get(chosen.key) ?? 0, a.until));
        }
      }
    }
    step++;
    return i;
  };
}

/** Installs schedule `s` on `world` (a fresh World of seed `world.seed`); the plain random schedule leaves its own chooser. */
export function applySchedule(world: World, s: ScheduleOptions): void {
  const c = scheduleChooser(s, world.seed, (ch) => world.nodes[ch.node]?.nic.peekWr(ch.qpn)?.wr.op);
  if (c !== undefined) world.chooser = c;
}
