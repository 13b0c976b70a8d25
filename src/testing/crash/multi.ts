/**
 * Crash runs (DESIGN §8 "crashes any subset of nodes at a crash point, restarts each from its own
 * images"): the cluster goes on while nodes are down. A run cannot be forked in memory, so a crash
 * run replays the seeded workload from the start — same seed, same execution — up to crash point p,
 * crashes a subset of nodes there (their clients see the links close; the other nodes keep running)
 * and/or some clients (they stop mid-operation and never resume), restarts each crashed node
 * `restartAfter` scheduler steps later (or, in modelled time, `restartAfterNs` virtual ns later) from one of its crash images (a fresh region and NIC in the
 * same World, recovered through the App contract; clients may reconnect), and lets the workload run
 * to its end. The app then judges the whole history (checkHistory).
 *
 * A plan is a string, so the replay command can name it:
 *   plan   := event (';' event)*
 *   event  := 'p' point ':' target (',' target)* ['@' image] ['/r' restartAfter ['ns']] ['x']
 *   target := 'n' node | 'c' client | 'd' k   (d: drop the k-th open connection, both ends live)
 * e.g. "p40:n1@2/r12;p95:n0,n1,n2/r0;p120:c1". '/r12' restarts 12 scheduler steps later; '/r12000ns'
 * 12 000 virtual ns later on the modelled clock (a World with a cost model: the swarm). A trailing 'x' crashes each restarted node once
 * more during its recovery (at a seeded crash point of it) and restarts it from that image. Points count every crash point of the replayed run
 * (media events of every node and deliveries), in order, so a plan's later events refer to the
 * run as changed by its earlier ones — still deterministic.
 */
import { countImages, crashImages, createPrng, materialize, type CrashState, type Prng } from '../../../pmem/index.js';
import type { AppProblem } from '../../apps/index.js';
import type { NicConfig } from './config.js';
import type { CrashShapes, ExploreOptions, ExplorerApp } from './types.js';
import { mix } from './seeds.js';
import { World } from './world.js';
import { resolveSchedule } from './pct.js';
import { buildWorld, imageRegion, nestedImage, sampleRecoveryCrash, startWorkload } from './driver.js';
import type { CostModel } from '../model/index.js';

export interface CrashEvent {
  point: number;
  nodes: number[];
  clients: number[];
  /** Dropped connections (target 'd<k>'): the k-th open connection of the up nodes closes while both ends live (World.dropConnection). */
  drops?: number[];
  /** Which image of each crashed node's state it restarts from (index into a seeded list). */
  image: number;
  /** Scheduler steps between the crash and the restart (earlier if nothing else can run); ignored when restartAfterNs is set. */
  restartAfter: number;
  /** Modelled time only: virtual ns between the crash and the restart, an event on the virtual clock (plan suffix '/r<N>ns'). */
  restartAfterNs?: number;
  /** The restart crashes once more during its recovery and restarts from that image (plan suffix 'x'). */
  recoveryCrash?: boolean;
}

/**
 * What a caller (the swarm simulation, swarm.ts) adds to a crash run: faults installed on the World,
 * and a fault phase followed by a liveness phase — once the virtual clock reaches `faultNsMax` (or
 * after `faultStepsMax` steps) the plan's events stop firing, `faultsOff` runs, every crashed node
 * restarts, and the workload must then finish within `livenessNsMax` virtual ns of modelled time
 * (else a 'liveness' problem). `livenessStepsMax` is only a safety net against a run that takes
 * steps without advancing the virtual clock: hitting it is a 'steps' problem, not a liveness one.
 * Without a cost model (or without `livenessNsMax`), `livenessStepsMax` is the liveness bound.
 */
export interface CrashRunHooks {
  /** Modelled time (virtual-time.ts): the World runs on this cost model, and the fault phase is bounded in virtual ns too. */
  model?: Readonly<CostModel>;
  /** Called once the World exists, before its nodes are added (e.g. to set world.chooser or world.time.faults). */
  install?(world: World): void;
  /** The fault phase ends after this many steps, or (with a model) once the virtual clock reaches `faultNsMax`. */
  faultStepsMax: number;
  faultNsMax?: number;
  faultsOff?(world: World): void;
  /** Modelled time: virtual ns the workload may take to finish once faults are off (the liveness bound). */
  livenessNsMax?: number;
  /** With livenessNsMax: a safety net on the liveness phase's steps (a 'steps' problem); without it: the liveness bound. */
  livenessStepsMax: number;
}

export type CrashPlan = CrashEvent[];

export function formatPlan(plan: CrashPlan): string {
  return plan
    .map((e) => `p${e.point}:${[...e.nodes.map((n) => `n${n}`), ...e.clients.map((c) => `c${c}`), ...(e.drops ?? []).map((d) => `d${d}`)].join(',')}${e.nodes.length > 0 ? `@${e.image}/r${e.restartAfterNs !== undefined ? `${e.restartAfterNs}ns` : e.restartAfter}${e.recoveryCrash === true ? 'x' : ''}` : ''}`)
    .join(';');
}

export function parsePlan(s: string): CrashPlan {
  if (typeof s !== 'string' || s.trim() === '') throw new TypeError('a crash plan must be a non-empty string');
  return s.split(';').map((part) => {
    const m = /^p(\d+):((?:[ncd]\d+)(?:,[ncd]\d+)*)(?:@(\d+))?(?:\/r(\d+)(ns)?)?(x)?$/.exec(part.trim());
    if (m === null) throw new TypeError(`bad crash plan event '${part}': expected p<point>:n<node>|c<client>|d<connection>[,...][@<image>][/r<steps>|/r<virtual ns>ns][x]`);
    const targets = m[2]!.split(',');
    return {
      point: Number(m[1]),
      nodes: targets.filter((x) => x.startsWith('n')).map((x) => Number(x.slice(1))),
      clients: targets.filter((x) => x.startsWith('c')).map((x) => Number(x.slice(1))),
      ...(targets.some((x) => x.startsWith('d')) ? { drops: targets.filter((x) => x.startsWith('d')).map((x) => Number(x.slice(1))) } : {}),
      image: m[3] === undefined ? 0 : Number(m[3]),
      restartAfter: m[4] === undefined || m[5] !== undefined ? 0 : Number(m[4]),
      ...(m[5] !== undefined ? { restartAfterNs: Number(m[4]) } : {}),
      ...(m[6] !== undefined ? { recoveryCrash: true } : {}),
    };
  });
}

/**
 * Fault events at geometric gaps of crash points (each point starts one with probability `rate`),
 * at most `max` of them: `each(point)` draws the event at that point from the same PRNG. The swarm's
 * draw of node crashes, client crashes and dropped connections (swarm.ts planOf), and the storms of
 * planFor's crash shapes.
 */
export function atGeometricGaps(p: Prng, rate: number, max: number, each: (point: number) => void): void {
  const gap = (): number => Math.max(1, Math.ceil(Math.log(1 - p.int(0, 999_999) / 1_000_000) / Math.log(1 - rate)));
  for (let at = gap(), k = 0; k < max; at += gap(), k++) each(at);
}

/** Majority crashes of a `majorities` run (at most; at geometric gaps with this mean count over the run). */
export const MAJORITY_STORM = 10;
/** Dropped connections of a `dropStorms` run (at most; at geometric gaps with this mean count over the run). */
export const DROP_STORM = 24;

/**
 * The seeded plan of crash run `i` of a run with `pointsTotal` crash points. Kinds cycle: one node
 * (f = 1), every node at once, one node and one client, a client alone; a second node crash later
 * in the run every other time (with one node: the same node again, once it is back). With `drops`
 * (an app whose clients reconnect a live node, ExplorerApp.drops), every run also drops one or two
 * connections while the nodes are up (drawn after everything else, so the crashes stay what they
 * are without drops), and every fourth run (kind 3) drops two to eight instead of crashing a client.
 * `shapes` (CrashShapes) turns kind 0 into a storm of majority crashes and kind 3 into a storm of drops.
 */
export function planFor(seed: number, i: number, pointsTotal: number, nodes: number, clients: number, drops = false, shapes: CrashShapes = {}): CrashPlan {
  const p = createPrng(mix(seed, 0xc7a5, i));
  const point = (): number => p.int(0, Math.max(0, pointsTotal - 1));
  const kind = i % 4;
  const rate = (mean: number): number => Math.min(0.5, mean / Math.max(1, pointsTotal));
  if (kind === 0 && shapes.majorities === true && nodes >= 3) {
    const majority = Math.floor(nodes / 2) + 1;
    const plan: CrashPlan = [];
    atGeometricGaps(p, rate(MAJORITY_STORM), MAJORITY_STORM, (at) => {
      const down = Array.from({ length: nodes }, (_, n) => n);
      while (down.length > majority) down.splice(p.int(0, down.length - 1), 1);
      plan.push({ point: at, nodes: down, clients: [], image: p.int(0, 3), restartAfter: p.int(0, 10) });
    });
    return onePerPoint(plan);
  }
  if (kind === 3 && drops && shapes.dropStorms === true) {
    const plan: CrashPlan = [];
    atGeometricGaps(p, rate(DROP_STORM), DROP_STORM, (at) => plan.push({ point: at, nodes: [], clients: [], drops: [p.int(0, 63)], image: 0, restartAfter: 0 }));
    return onePerPoint(plan);
  }
  const first: CrashEvent = { point: point(), nodes: [], clients: [], image: p.int(0, 3), restartAfter: p.int(0, 60) };
  if (kind === 0 || kind === 2) first.nodes = [p.int(0, nodes - 1)];
  if (kind === 1) first.nodes = Array.from({ length: nodes }, (_, n) => n);
  if ((kind === 2 || kind === 3) && clients > 0) first.clients = [p.int(0, clients - 1)];
  if (first.nodes.length === 0 && first.clients.length === 0) first.nodes = [p.int(0, nodes - 1)];
  const plan: CrashPlan = [first];
  if (i % 2 === 1) {
    const later = first.point + p.int(1, Math.max(1, Math.floor(pointsTotal / 2)));
    plan.push({ point: later, nodes: [p.int(0, nodes - 1)], clients: [], image: p.int(0, 3), restartAfter: p.int(0, 60) });
  }
  if (!drops) return plan;
  // Kind 3 with drops: connections drop instead of a client crashing (the server never goes down:
  // what a client does after a drop — resend, resolve, reconnect — is all that is tested).
  if (kind === 3) plan.splice(0, plan.length);
  const n = kind === 3 ? p.int(2, 8) : p.int(1, 2);
  for (let k = 0; k < n; k++) plan.push({ point: point(), nodes: [], clients: [], drops: [p.int(0, 63)], image: 0, restartAfter: 0 });
  return onePerPoint(plan);
}

/** One event per point, in point order (the first drawn at a point wins: a node crash over a drop). */
export function onePerPoint(plan: CrashPlan): CrashPlan {
  const byPoint = new Map<number, CrashEvent>();
  for (const e of plan) if (!byPoint.has(e.point)) byPoint.set(e.point, e);
  return [...byPoint.values()].sort((a, b) => a.point - b.point);
}

/** Virtual ns as µs with 3 decimals (for messages). */
const fmtUs = (ns: number): string => (ns / 1000).toFixed(3);

/** The image a crashed node restarts from: the `k`-th (mod count) of its state's images, seeded. */
function restartImage(state: CrashState, seed: number, k: number): Uint8Array {
  const n = countImages(state);
  const imgs = n <= BigInt(k + 1) ? [...crashImages(state, { engine: 'exhaustive' })] : [...crashImages(state, { engine: 'random', seed, count: k + 1 })];
  return materialize(state, imgs[k % imgs.length]!);
}

export interface CrashRunResult {
  problems: AppProblem[];
  /** What happened, in order (for the report and the timeline). */
  events: string[];
  crashPoints: number;
  /** Modelled time (a World with a cost model): virtual ns when the fault phase ended, and at the end of the run (after the check). */
  faultNs?: number;
  virtualNs?: number;
  /** Modelled time: virtual ns the liveness phase took (until the workload finished, or the bound). */
  livenessNs?: number;
}

/** Runs one crash plan of `app` (see the file comment). */
export async function runCrashPlan<S>(app: ExplorerApp<S>, o: ExploreOptions, config: NicConfig, plan: CrashPlan, hooks?: CrashRunHooks): Promise<CrashRunResult> {
  if (app.checkHistory === undefined) throw new TypeError(`app ${app.name} does not support crash runs (no checkHistory)`);
  for (const e of plan) {
    for (const n of e.nodes) if (!Number.isSafeInteger(n) || n < 0 || n >= app.nodes) throw new RangeError(`crash plan: node ${n} out of [0, ${app.nodes})`);
    for (const c of e.clients) {
      if (app.crashClient === undefined) throw new TypeError(`app ${app.name} cannot crash clients`);
      if (!Number.isSafeInteger(c) || c < 0 || c >= (app.clients ?? 0)) throw new RangeError(`crash plan: client ${c} out of [0, ${app.clients ?? 0})`);
    }
    if (e.restartAfterNs !== undefined && hooks?.model === undefined) throw new RangeError(`crash plan: a restart delay in virtual ns (/r${e.restartAfterNs}ns) needs modelled time (a cost model)`);
  }
  const problems: AppProblem[] = [];
  const events: string[] = [];
  const world = buildWorld(app, config, o.seed, 'crash-run', {
    ...(hooks?.model !== undefined ? { model: hooks.model } : {}),
    schedule: resolveSchedule(o.schedule),
    observe: o.observe,
    ...(hooks?.install !== undefined ? { install: (w: World) => hooks.install!(w) } : {}),
  });
  const restart = (n: number, image: Uint8Array, point: number, recoveryCrash: boolean): void => {
    app.damageImage?.(image, n);
    if (recoveryCrash) {
      const again = crashedDuringRecovery(app, config, image, n, mix(o.seed, point, n, 0x5ec));
      if (again !== undefined) {
        events.push(`step ${world.steps}: node ${n} crashed during its recovery`);
        image = again;
      }
    }
    const region = imageRegion(config, image, n, 'restart', mix(o.seed, 0x7f, n, point));
    let node;
    try {
      node = world.restart(n, region, (host) => app.open(host, n));
      node.server!.recover();
    } catch (e) {
      problems.push({ kind: 'recovery', detail: `node ${n} restarted after crash point ${point}: ${(e as Error).message}` });
      return;
    }
    events.push(`step ${world.steps}${world.time !== undefined ? ` at ${(world.time.nowNs / 1000).toFixed(3)} virtual µs` : ''}: node ${n} restarted`);
    for (const p of node.server!.audit()) problems.push({ kind: p.kind, detail: `node ${n} restarted after crash point ${point}: ${p.detail}` });
  };
  const byPoint = new Map<number, CrashEvent[]>();
  for (const e of plan) byPoint.set(e.point, [...(byPoint.get(e.point) ?? []), e]);
  let pointIndex = 0;
  let faultsOn = true;
  world.onCrashPoint = (kind) => {
    if (kind === 'delivery' && o.observe === 'late') return;
    if (!faultsOn) return;
    const p = pointIndex++;
    for (const e of byPoint.get(p) ?? []) {
      // Take every state first (the subset crashes at one instant), then crash.
      const down = e.nodes.filter((n) => !world.nodes[n]!.crashed);
      const images = down.map((n) => restartImage(world.nodes[n]!.region.crashState(), mix(o.seed, p, n, 0xa11), e.image));
      down.forEach((n, j) => {
        world.crash(n);
        events.push(`crash point ${p} (${kind}): node ${n} crashed${world.time !== undefined ? ` at ${fmtUs(world.time.nowNs)} virtual µs` : ''}`);
        const img = images[j]!;
        const again = (): void => restart(n, img, p, e.recoveryCrash === true);
        if (e.restartAfterNs !== undefined) world.afterNs(e.restartAfterNs, again);
        else world.after(e.restartAfter, again);
      });
      for (const c of e.clients) {
        app.crashClient!(c);
        events.push(`crash point ${p} (${kind}): client ${c} crashed`);
      }
      for (const d of e.drops ?? []) {
        const what = world.dropConnection(d);
        if (what !== undefined) events.push(`crash point ${p} (${kind}): connection dropped: ${what}`);
      }
    }
  };
  let faultNs: number | undefined;
  let virtualNs: number | undefined;
  let livenessNs: number | undefined;
  const wl = startWorkload(app, world, o.seed);
  try {
    const faultNsMax = hooks?.faultNsMax;
    const timeUp = (): boolean => faultNsMax !== undefined && world.time !== undefined && world.time.nowNs >= faultNsMax;
    let r = await world.run(() => wl.finished || timeUp(), hooks?.faultStepsMax ?? o.stepsMax);
    if (r.status === 'done' && !wl.finished) r = { status: 'bound', steps: r.steps };
    if (hooks !== undefined) {
      // Liveness: faults off, every node up; the workload must now finish within the bound.
      faultsOn = false;
      faultNs = world.time?.nowNs;
      hooks.faultsOff?.(world);
      world.flushEvents();
      const at = world.time !== undefined ? ` at ${(world.time.nowNs / 1000).toFixed(3)} virtual µs` : '';
      const how = r.status === 'done' ? 'outlived the workload' : r.status === 'stalled' ? `stalled after ${r.steps} steps` : timeUp() ? `ended on the virtual clock after ${r.steps} steps` : `hit its safety bound of ${r.steps} steps`;
      events.push(`step ${world.steps}${at}: faults off (fault phase ${how})`);
      if (r.status === 'bound' && faultNsMax !== undefined && world.time !== undefined && !timeUp()) problems.push({ kind: 'steps', detail: `the fault phase hit the safety bound of ${r.steps} scheduler steps at ${fmtUs(world.time.nowNs)} of its ${fmtUs(faultNsMax)} virtual µs (modelled time): the run takes steps without advancing the virtual clock` });
      const faultPhase = r;
      if (faultPhase.status !== 'done') {
        const vt = world.time;
        if (vt !== undefined && hooks.livenessNsMax !== undefined) {
          // The bound is modelled time: the workload must finish by `end` on the virtual clock.
          const from = vt.nowNs;
          const end = from + hooks.livenessNsMax;
          const late = (): boolean => vt.nowNs > end;
          r = await world.run(() => wl.finished || late(), hooks.livenessStepsMax);
          livenessNs = vt.nowNs - from;
          const waited = `${fmtUs(vt.nowNs - from)} virtual µs (modelled time, not measured) after faults went off at ${fmtUs(from)} virtual µs`;
          if (late()) {
            problems.push({ kind: 'liveness', detail: `with faults off and every node up, the workload did not finish within the liveness bound of ${fmtUs(hooks.livenessNsMax)} virtual µs of modelled time: ${wl.finished ? 'it finished only' : 'still running'} ${waited}, ${r.steps} steps` });
            r = { status: 'bound', steps: r.steps };
          } else if (r.status === 'stalled') {
            problems.push({ kind: 'liveness', detail: `with faults off and every node up, the workload stalled ${waited}, ${r.steps} steps (nothing can run and a client still waits)` });
          } else if (r.status === 'bound') {
            problems.push({ kind: 'steps', detail: `the liveness phase hit the safety bound of ${hooks.livenessStepsMax} scheduler steps after only ${fmtUs(vt.nowNs - from)} of its ${fmtUs(hooks.livenessNsMax)} virtual µs (modelled time): the run takes steps without advancing the virtual clock` });
          }
        } else {
          r = await world.run(() => wl.finished, hooks.livenessStepsMax);
          if (r.status !== 'done') problems.push({ kind: 'liveness', detail: `with faults off and every node up, the workload ${r.status === 'bound' ? `still runs after ${r.steps} steps` : `stalled after ${r.steps} steps (nothing can run and a client still waits)`}` });
        }
      }
    }
    world.onCrashPoint = undefined;
    for (const h of world.halts) problems.push({ kind: 'invariant', detail: h.detail });
    if (r.status !== 'done' && hooks === undefined) problems.push({ kind: 'stalled', detail: `workload ${r.status === 'bound' ? `still running after ${r.steps} steps` : `stalled after ${r.steps} steps`}` });
    if (wl.error !== undefined) problems.push({ kind: 'workload', detail: `the workload failed: ${String(wl.error)}` });
    if (r.status === 'done' && wl.error === undefined) {
      // Nodes still down come back before the final check (their restarts were still due).
      world.flushEvents();
      problems.push(...(await app.checkHistory(world)));
    }
  } finally {
    world.onCrashPoint = undefined;
    virtualNs = world.time?.nowNs;
    world.close();
  }
  return { problems, events, crashPoints: pointIndex, ...(faultNs !== undefined ? { faultNs } : {}), ...(virtualNs !== undefined ? { virtualNs } : {}), ...(livenessNs !== undefined ? { livenessNs } : {}) };
}

/**
 * A crash during recovery: node `n` recovers from `image` in a scratch World, crashed at one crash
 * point of that recovery sampled uniformly (reservoir); returns an image of that moment (undefined:
 * the recovery had no crash point, or failed — the real restart then reports it).
 */
function crashedDuringRecovery<S>(app: ExplorerApp<S>, config: NicConfig, image: Uint8Array, n: number, seed: number): Uint8Array | undefined {
  const prng = createPrng(seed);
  const scratch = new World(config, seed);
  const region = imageRegion(config, image.slice(), n, 'recovery-crash');
  let sampled: CrashState | undefined;
  try {
    const node = scratch.addNode(region, (host) => app.open(host, n));
    sampled = sampleRecoveryCrash(region, prng, () => node.server!.recover());
  } catch {
    return undefined;
  } finally {
    scratch.close();
  }
  return sampled === undefined ? undefined : nestedImage(sampled, prng);
}
