/**
 * Small-scope exhaustive mode (DESIGN §8): for a tiny workload, every interleaving of work requests
 * the scheduler allows and every crash image (every node's, as a tuple) at every crash point,
 * within a stated bound.
 *
 * - Interleavings: stateless DFS over the scheduler's choice points (World.chooser), replaying
 *   deterministically from the root for each branch (same seed, same prefix -> same execution).
 * - Crash points: each run checks only the crash points at or after the depth where it left the
 *   previous run's path (the earlier ones are the same states, already checked).
 * - Images: every image of each node's crash state (crashImages engine 'exhaustive'), the full
 *   product over nodes; each tuple recovers through the App contract and the app checks it.
 * - Partial-order reduction: sleep sets (Godefroid). Two steps are independent when they are of
 *   different QPs (CPU passes depend on everything of their node), on different nodes or touching
 *   disjoint cache lines (or only reading a shared one), and not both deliveries to the same
 *   client. Footprints are exact only when the NIC drains eagerly with no eviction (a lazy drain or
 *   an eviction makes a step touch what other steps wrote), so this mode pins drain 'eager' and
 *   eviction 0 (DDIO and placement remain the caller's or the seed's).
 * - Bound: statesExplored = interleavings + crash points + image tuples; past `statesMax` the run
 *   is refused with PMRPC_ERR_TOO_MANY_STATES.
 */
import { countImages, crashImages, createPrng, defineErrorCodes, materialize, PmrpcError, type Clock, type CrashState, type ErrorCodesOf, resolveOptions } from '../../../pmem/index.js';
import type { Loc, WorkRequest } from '../../../flush/index.js';
import { checkPins, configName, nicConfigFor, type NicConfig, type NicPins } from './config.js';
import { checkTuple, type ExplorerApp, type ExplorerViolation, type ExploreReport } from './explorer.js';
import { mix } from './seeds.js';
import { World, type StepChoice } from './world.js';
import { buildWorld, startWorkload } from './driver.js';

export const ExhaustiveErrorCodes = defineErrorCodes('testing', {
  /** The exploration would pass `statesMax`. */
  TOO_MANY_STATES: 'PMRPC_ERR_TOO_MANY_STATES',
});

declare module '../../../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof ExhaustiveErrorCodes> {}
}

export interface ExhaustiveOptions {
  seed: number;
  /** Most states (interleavings + crash points + image tuples): past it, PMRPC_ERR_TOO_MANY_STATES. */
  statesMax: number;
  /** Partial-order reduction by sleep sets. */
  por: boolean;
  /** Crash points and images too (false: interleavings only, e.g. to measure the reduction). */
  crashes: boolean;
  /** NIC dimensions pinned (drain and eviction are always eager and 0 here). */
  pins: NicPins;
  /** Stop after this many violations. */
  violationsMax: number;
  /** Replay one interleaving: the choice index at each step (what a violation's command names); then the first choice. */
  schedule: readonly number[] | undefined;
  /** Most scheduler steps of one run. */
  stepsMax: number;
  clock: Clock | undefined;
}

export const EXHAUSTIVE_DEFAULTS: Readonly<ExhaustiveOptions> = Object.freeze({
  seed: 1,
  statesMax: 200_000,
  por: true,
  crashes: true,
  pins: Object.freeze({}),
  violationsMax: 1,
  schedule: undefined,
  stepsMax: 100_000,
  clock: undefined,
});

export interface StatesExplored {
  /** Runs: complete interleavings, plus those cut where every enabled step slept (POR). */
  interleavings: number;
  crashPoints: number;
  /** Image tuples recovered and checked. */
  images: number;
  total: number;
}

export interface ExhaustiveViolation extends ExplorerViolation {
  /** The interleaving: choice index per step ('.'-separated). */
  schedule: string;
}

export interface ExhaustiveReport {
  app: string;
  seed: number;
  configs: string[];
  por: boolean;
  statesExplored: StatesExplored;
  /** Runs cut because every enabled step was in the sleep set. */
  sleepBlocked: number;
  /** Longest run, in scheduler choices. */
  maxDepth: number;
  /** Every interleaving was explored (false: stopped at violationsMax, or a schedule replay). */
  complete: boolean;
  seconds: number;
  violations: ExhaustiveViolation[];
}

export function resolveExhaustiveOptions(options: Partial<ExhaustiveOptions>): ExhaustiveOptions {
  const o = resolveOptions<ExhaustiveOptions>(EXHAUSTIVE_DEFAULTS, options, {});
  if (!Number.isSafeInteger(o.seed)) throw new TypeError(`seed must be an integer, got ${String(o.seed)}`);
  for (const [k, lo, hi] of [['statesMax', 1, 1e9], ['violationsMax', 1, 1e6], ['stepsMax', 1, 1e9]] as const) {
    const v = o[k];
    if (!Number.isSafeInteger(v) || v < lo || v > hi) throw new RangeError(`${k} must be an integer in [${lo}, ${hi}], got ${String(v)}`);
  }
  if (typeof o.por !== 'boolean') throw new TypeError(`por must be a boolean, got ${String(o.por)}`);
  if (typeof o.crashes !== 'boolean') throw new TypeError(`crashes must be a boolean, got ${String(o.crashes)}`);
  if (o.schedule !== undefined && (!Array.isArray(o.schedule) || o.schedule.some((x) => !Number.isSafeInteger(x) || x < 0))) throw new TypeError('schedule must be an array of non-negative integers');
  checkPins(o.pins);
  return o;
}

/** Parses a schedule "0.2.1" (what a violation's replay command names). */
export function parseSchedule(s: string): number[] {
  if (!/^\d+(\.\d+)*$/.test(s)) throw new TypeError(`a schedule is choice indices separated by '.', got '${s}'`);
  return s.split('.').map(Number);
}

/** The NIC configuration of exhaustive mode: the seed's, with drain eager and no eviction. */
export function exhaustiveConfig(seed: number, pins: NicPins): NicConfig {
  return nicConfigFor(seed, { ...pins, drain: 'eager', eviction: 0 });
}

// ------------------------------------------------------------------ footprints and independence

type Range = readonly [number, number];

/** What one step may touch (cache-line granular) and whether it delivers to its client. */
interface Footprint {
  key: string;
  node: number;
  client: number;
  delivers: boolean;
  /** Touches anything of its node (CPU passes, SEND, ALLOCATE, indirection, FLUSH of a whole MR). */
  whole: boolean;
  /**
   * Lines whose visible content it reads without changing it. A FLUSH counts here: it changes
   * only the media, and two FLUSHes, or a FLUSH and a READ, of one line leave the same state in
   * either order; a FLUSH and a store to that line do not (the snapshot moves).
   */
  reads: Range[];
  /** Lines whose visible content it changes (WRITE, atomics). */
  writes: Range[];
}

const LINE = 64;
/** A pseudo line, below every address: the node's free lists (NIC-volatile). */
const FREE_LISTS: Range = [-LINE, 0];
const lines = (addr: number, len: number): Range => [Math.floor(addr / LINE) * LINE, Math.ceil((addr + Math.max(1, len)) / LINE) * LINE];
/** The lines of a remote location; undefined for a scratch location (per connection: touches nothing shared). */
const at = (loc: Loc, len: number): Range[] => ('addr' in loc ? [lines(loc.addr, len)] : []);

function footprintOf(world: World, c: StepChoice): Footprint {
  const base = { key: c.key, node: c.node, client: c.client, delivers: true, whole: true, reads: [] as Range[], writes: [] as Range[] };
  if (c.qpn < 0) return base;
  const next = world.nodes[c.node]!.nic.peekWr(c.qpn);
  if (next === undefined) return base;
  const f = { ...base, delivers: next.last, whole: false };
  const wr: WorkRequest = next.wr;
  const region = world.nodes[c.node]!.region;
  switch (wr.op) {
    case 'read': {
      if (wr.indirect !== true && wr.bounded !== true) return { ...f, reads: at(wr.from, wr.len) };
      // The pointer as it is now: a step that changed it first would write its line (dependent).
      if (!('addr' in wr.from)) return { ...f, whole: true };
      const word = region.load(wr.from.addr, wr.bounded === true ? 16 : 8);
      const dv = new DataView(word.buffer, word.byteOffset, word.byteLength);
      const ptr = Number(dv.getBigUint64(0, true));
      const len = wr.bounded === true ? Math.min(wr.len, Number(dv.getBigUint64(8, true))) : wr.len;
      if (!Number.isSafeInteger(ptr) || ptr < 0 || ptr + len > region.sizeBytes) return { ...f, whole: true };
      return { ...f, reads: [...at(wr.from, word.length), lines(ptr, len)] };
    }
    case 'allocate':
      // Pops a buffer from a free list and writes it: the free list (a line no address has, so
      // ALLOCATEs of one node conflict) and a free buffer, which no enabled step can reach
      // (a pointer to a free buffer would be a bug the checkers report on some order anyway).
      return { ...f, writes: [FREE_LISTS], reads: wr.from !== undefined && 'addr' in wr.from ? at(wr.from, wr.len ?? 0) : [] };
    case 'write':
      if (wr.indirect === true || wr.bounded === true || wr.data === undefined) return { ...f, whole: true };
      return { ...f, writes: at(wr.to, wr.data.length) };
    case 'cas':
    case 'faa':
    case 'atomicWrite':
      return { ...f, writes: at(wr.at, 8) };
    case 'prismCas':
      if (wr.indirect === true || wr.from !== undefined) return { ...f, whole: true };
      return { ...f, writes: at(wr.at, wr.len) };
    case 'flush':
      if (wr.selectivity !== 'range' || wr.addr === undefined || wr.len === undefined) return { ...f, whole: true };
      return { ...f, reads: [lines(wr.addr, wr.len)] };
    default:
      // writeImm, send (receive buffers, server CPU), allocate (free lists): the whole node.
      return { ...f, whole: true };
  }
}

const overlap = (a: readonly Range[], b: readonly Range[]): boolean => a.some(([a0, a1]) => b.some(([b0, b1]) => a0 < b1 && b0 < a1));

/** Two steps, both enabled in one state, commute (see the file comment). */
export function independent(a: Footprint, b: Footprint): boolean {
  if (a.key === b.key) return false;
  if (a.delivers && b.delivers && a.client === b.client) return false;
  if (a.node !== b.node) return true;
  if (a.whole || b.whole) return false;
  return !overlap(a.writes, b.writes) && !overlap(a.writes, b.reads) && !overlap(a.reads, b.writes);
}

// ------------------------------------------------------------------ the search

interface Frame {
  choices: Footprint[];
  /** Sleep set of this state. */
  sleep: Footprint[];
  /** Keys explored from this state, in order; the last is the one the current path takes. */
  done: string[];
}

class Blocked extends Error {}

function tooMany(what: string, total: number, max: number): PmrpcError {
  return new PmrpcError(ExhaustiveErrorCodes.TOO_MANY_STATES, `exhaustive exploration passes statesMax ${max} (${what}; ${total} states so far): shrink the workload or raise the bound`);
}

/**
 * Explores every interleaving and every crash image of the workload of `makeApp()` (a fresh app
 * per run: apps hold their history).
 */
export async function exploreExhaustive<S>(makeApp: () => ExplorerApp<S>, options: Partial<ExhaustiveOptions> = {}): Promise<ExhaustiveReport> {
  const o = resolveExhaustiveOptions(options);
  const t0 = o.clock?.nowMs();
  const config = exhaustiveConfig(o.seed, o.pins);
  const probe = makeApp();
  const states: StatesExplored = { interleavings: 0, crashPoints: 0, images: 0, total: 0 };
  const report: ExhaustiveReport = { app: probe.name, seed: o.seed, configs: [configName(config)], por: o.por, statesExplored: states, sleepBlocked: 0, maxDepth: 0, complete: false, seconds: 0, violations: [] };
  const count = (what: keyof Omit<StatesExplored, 'total'>, n: number): void => {
    if (states.total + n > o.statesMax) throw tooMany(`${states.interleavings} interleavings, ${states.crashPoints} crash points, ${states.images} images`, states.total, o.statesMax);
    states[what] += n;
    states.total += n;
  };
  const pins = [o.pins.ddio !== undefined ? `--ddio ${o.pins.ddio ? 'on' : 'off'}` : '', o.pins.placement !== undefined ? `--placement ${o.pins.placement}` : ''].filter((x) => x !== '').join(' ');
  const replayOf = (app: ExplorerApp<S>, schedule: string, point: number | undefined): string =>
    ['pmrpc crash-test', app.replayArgs(), `--seed ${o.seed}`, '--exhaustive', pins, `--schedule ${schedule === '' ? '0' : schedule}`, point !== undefined ? `--point ${point}` : ''].filter((x) => x !== '').join(' ');

  const frames: Frame[] = [];
  let branchDepth = -1;
  for (;;) {
    // One run: replay frames[0..branchDepth], then extend the path.
    const app = makeApp();
    const world = buildWorld(app, config, o.seed, 'exhaustive');
    let depth = 0;
    const chosen: number[] = [];
    world.chooser = (choices) => {
      const d = depth++;
      let idx: number;
      if (o.schedule !== undefined) {
        idx = Math.min(o.schedule[d] ?? 0, choices.length - 1);
      } else if (d < frames.length) {
        const key = frames[d]!.done[frames[d]!.done.length - 1]!;
        idx = choices.findIndex((c) => c.key === key);
        if (idx < 0) throw new Error(`exhaustive replay diverged at step ${d}: ${key} is not enabled (the workload is not deterministic)`);
      } else {
        const fps = choices.map((c) => footprintOf(world, c));
        let sleep: Footprint[] = [];
        if (o.por && d > 0) {
          const parent = frames[d - 1]!;
          const taken = parent.choices.find((c) => c.key === parent.done[parent.done.length - 1])!;
          const before = parent.done.slice(0, -1).map((k) => parent.choices.find((c) => c.key === k)!);
          sleep = [...parent.sleep, ...before].filter((z) => independent(z, taken));
        }
        idx = fps.findIndex((f) => !sleep.some((z) => z.key === f.key));
        if (idx < 0) throw new Blocked();
        frames.push({ choices: fps, sleep, done: [fps[idx]!.key] });
      }
      chosen.push(idx);
      return idx;
    };
    // Crash points at or after the branch depth are new.
    const captures: Array<{ point: number; kind: string; states: CrashState[]; snap: S }> = [];
    let pointIndex = 0;
    if (o.crashes) {
      world.onCrashPoint = (kind) => {
        const p = pointIndex++;
        // The snapshot every time (it may advance the app's logical time: replays must match).
        const snap = app.snapshot();
        if (o.schedule === undefined && depth - 1 < branchDepth) return;
        captures.push({ point: p, kind, states: world.nodes.map((n) => n.region.crashState()), snap });
      };
    }
    const wl = startWorkload(app, world, o.seed);
    let blocked = false;
    let status: string = 'done';
    try {
      status = (await world.run(() => wl.finished, o.stepsMax)).status;
    } catch (e) {
      if (!(e instanceof Blocked)) throw e;
      blocked = true;
    }
    world.onCrashPoint = undefined;
    world.chooser = undefined;
    count('interleavings', 1);
    if (blocked) report.sleepBlocked++;
    report.maxDepth = Math.max(report.maxDepth, depth);
    const schedule = chosen.join('.');
    const violate = (kind: string, detail: string, point: number, image: number | undefined, phase: ExplorerViolation['phase']): void => {
      if (report.violations.length < o.violationsMax) report.violations.push({ kind, detail, replay: replayOf(app, schedule, point >= 0 ? point : undefined), point, image, phase, schedule });
    };
    if (!blocked) {
      if (status !== 'done') violate('stalled', `workload ${status} after ${depth} choices`, -1, undefined, 'live');
      else if (wl.error !== undefined) violate('workload', `the workload failed: ${String(wl.error)}`, -1, undefined, 'live');
      else for (const p of await app.checkLive(world)) violate(p.kind, p.detail.startsWith('live: ') ? p.detail : `live: ${p.detail}`, -1, undefined, 'live');
    }
    world.close();
    // Every image tuple of every new crash point.
    for (const cap of captures) {
      if (report.violations.length >= o.violationsMax) break;
      count('crashPoints', 1);
      const perNode = cap.states.map((st) => {
        const n = countImages(st);
        if (n > BigInt(o.statesMax)) throw tooMany(`crash point ${cap.point} has ${n} images on one node`, states.total, o.statesMax);
        return Number(n);
      });
      const tuples = perNode.reduce((a, b) => a * b, 1);
      count('images', tuples);
      const lists = cap.states.map((st) => [...crashImages(st, { engine: 'exhaustive', maxImages: o.statesMax })]);
      const sink = { nestedImagesChecked: 0 } as ExploreReport;
      for (let k = 0; k < tuples && report.violations.length < o.violationsMax; k++) {
        let rest = k;
        const bytes = lists.map((imgs, n) => {
          const img = imgs[rest % imgs.length]!;
          rest = Math.floor(rest / imgs.length);
          return materialize(cap.states[n]!, img);
        });
        const prng = createPrng(mix(o.seed, cap.point, 1000 + k));
        const problems = await checkTuple(app, config, bytes, cap.snap, prng, 'first', false, sink, mix(o.seed, cap.point, k));
        for (const pr of problems) violate(pr.kind, `crash point ${cap.point} (${cap.kind}), image ${k}: ${pr.detail}`, cap.point, k, pr.phase);
      }
    }
    if (report.violations.length >= o.violationsMax || o.schedule !== undefined) break;
    // Backtrack: the deepest state with a step not yet explored and not asleep.
    let next = -1;
    while (frames.length > 0) {
      const f = frames[frames.length - 1]!;
      const alt = f.choices.find((c) => !f.done.includes(c.key) && !f.sleep.some((z) => z.key === c.key));
      if (alt !== undefined) {
        f.done.push(alt.key);
        next = frames.length - 1;
        break;
      }
      frames.pop();
    }
    if (next < 0) {
      report.complete = true;
      break;
    }
    branchDepth = next;
  }
  if (o.clock !== undefined && t0 !== undefined) report.seconds = Math.max(1e-9, (o.clock.nowMs() - t0) / 1000);
  return report;
}
