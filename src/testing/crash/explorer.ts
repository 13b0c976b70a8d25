/**
 * The one crash explorer (DESIGN §8), for every app: an app supplies its nodes (through the App
 * contract), a workload of clients and checkers (`ExplorerApp`); the explorer owns the scheduler
 * (world.ts), the crash points, the image engines, the nested crash during recovery, the seeds,
 * the replay command and the report.
 *
 * 1. The workload runs once on a World; at every crash point (any node's region, and every
 *    delivery to a client) the explorer takes each node's crash state — a multi-node image is a
 *    tuple — and the app's snapshot of what its clients have observed by then.
 * 2. Crash runs (`crashRuns`, multi.ts), when asked for: each replays the workload with nodes and
 *    clients crashing mid-run while the rest go on, and the app judges the whole history. They run
 *    before the image tuples: a crash run costs one workload, a seed's tuples many thousands of
 *    recoveries, so a bug only a crash run shows stops the run (violationsMax) cheaply.
 * 3. Each crash point (all, or a stride past `pointsMax`) is expanded into images per node (random
 *    or exhaustive engine). Each tuple is opened in a fresh World, every node recovers through the
 *    App contract (crashed once more at a sampled crash point of its own recovery when `nested`),
 *    and the app's checker judges it against the snapshot.
 *
 * Deterministic: time is read only from an injected clock (for imagesPerSecond), randomness only
 * from the seed, and the images of crash point p depend only on (seed, p).
 */
import { countImages, crashImages, createPrng, materialize, type Clock, type CrashState, type Prng, resolveOptions } from '../../../pmem/index.js';
import type { AppHost, AppProblem, AppServer } from '../../apps/index.js';
import { checkPins, configName, nicConfigFor, type NicConfig, type NicPins } from './config.js';
import { mix } from './seeds.js';
import { World } from './world.js';
import { buildWorld, imageRegion, nestedImage, sampleRecoveryCrash, startWorkload } from './driver.js';
import { formatPlan, parsePlan, planFor, runCrashPlan } from './multi.js';
import { concreteSchedule, isPlainRandom, mixedSchedule, resolveSchedule, scheduleArgs, scheduleName } from './pct.js';

export type { ImageEngine, ExplorerApp, ExploreOptions } from './types.js';
import type { ExplorerApp, ExploreOptions } from './types.js';

export const EXPLORE_DEFAULTS: Readonly<ExploreOptions> = Object.freeze({
  seed: 1,
  engine: 'random',
  imagesPerPoint: 4,
  exhaustiveMax: 4096,
  pointsMax: 2000,
  point: undefined,
  nested: true,
  violationsMax: 20,
  pins: Object.freeze({}),
  observe: 'delivery',
  stepsMax: 2_000_000,
  clock: undefined,
  onProgress: undefined,
  crashRuns: 0,
  crashPlan: undefined,
  schedule: undefined,
  plain: false,
});

export interface ExplorerViolation {
  kind: string;
  detail: string;
  /** The command that reproduces it. */
  replay: string;
  point: number;
  /** Image index per node of the tuple (undefined: the live run). */
  image: number | undefined;
  phase: 'live' | 'first' | 'nested' | 'crash-run';
  /** The crash plan of a crash-run violation. */
  plan?: string;
}

/** The one report shape of every app. */
export interface ExploreReport {
  app: string;
  seed: number;
  /** NIC configurations the run used (one per seed). */
  configs: string[];
  /** The scheduler of the workload runs (pct.ts scheduleName), e.g. "random" or "pct(d=3)". */
  schedule?: string;
  crashPointsTotal: number;
  crashPoints: number;
  /** Crash points at a delivery to a client. */
  deliveryPoints: number;
  imagesChecked: number;
  nestedImagesChecked: number;
  /** Points whose images were sampled although the exhaustive engine was asked for. */
  sampledPoints: number;
  /** Crash runs (multi-node crashes and restarts while the cluster goes on) checked. */
  crashRunsChecked?: number;
  imagesPerSecond: number;
  seconds: number;
  violations: ExplorerViolation[];
}

interface Capture<S> {
  point: number;
  kind: string;
  states: CrashState[];
  snap: S;
}

export function resolveExploreOptions(options: Partial<ExploreOptions>): ExploreOptions {
  const o = resolveOptions<ExploreOptions>(EXPLORE_DEFAULTS, options, {});
  if (!Number.isSafeInteger(o.seed)) throw new TypeError(`seed must be an integer, got ${String(o.seed)}`);
  const int = (name: keyof ExploreOptions, min: number, max: number): void => {
    const v = o[name];
    if (!Number.isSafeInteger(v) || (v as number) < min || (v as number) > max) throw new RangeError(`${name} must be an integer in [${min}, ${max}], got ${String(v)}`);
  };
  int('imagesPerPoint', 1, 100_000);
  int('exhaustiveMax', 1, 1_000_000);
  int('pointsMax', 1, 10_000_000);
  int('violationsMax', 1, 1_000_000);
  int('stepsMax', 1, 1e9);
  int('crashRuns', 0, 1_000_000);
  if (o.crashPlan !== undefined) parsePlan(o.crashPlan);
  if (o.engine !== 'random' && o.engine !== 'exhaustive') throw new TypeError(`engine must be 'random' or 'exhaustive', got ${String(o.engine)}`);
  if (o.point !== undefined && (!Number.isSafeInteger(o.point) || o.point < 0)) throw new RangeError(`point must be a non-negative integer, got ${String(o.point)}`);
  if (typeof o.plain !== 'boolean') throw new TypeError(`plain must be a boolean, got ${String(o.plain)}`);
  if (typeof o.nested !== 'boolean') throw new TypeError(`nested must be a boolean, got ${String(o.nested)}`);
  if (o.observe !== 'delivery' && o.observe !== 'late') throw new TypeError(`observe must be 'delivery' or 'late', got ${String(o.observe)}`);
  checkPins(o.pins);
  if (o.schedule !== undefined) resolveSchedule(o.schedule);
  return o;
}

/**
 * `o` with the app's exploreDefaults under it (a mutant's pins, schedule and crash plan): NIC pins
 * merge under the caller's, the app's schedule stands unless the caller gave one, and its crash plan
 * unless the caller gave a plan or crash runs. A 'mixed' schedule becomes the one the seed draws.
 * A plain run (`o.plain`, the mutant sweep) takes none of them.
 */
export function withAppDefaults(app: ExplorerApp<unknown>, o: ExploreOptions): ExploreOptions {
  const d = app.exploreDefaults;
  if (d === undefined || o.plain) return { ...o, schedule: concreteSchedule(o.schedule, o.seed) };
  // A crash plan of the app's stands only when the caller asked for neither a plan nor crash runs.
  const crashPlan = o.crashPlan ?? (o.crashRuns === 0 ? d.crashPlan : undefined);
  return { ...o, pins: checkPins({ ...(d.pins ?? {}), ...o.pins }), schedule: concreteSchedule(o.schedule ?? d.schedule, o.seed), crashPlan };
}

/** The command line that reproduces a run of `app` (or one crash point of it). */
export function replayCommand(app: ExplorerApp<unknown>, o: ExploreOptions, point?: number, plan?: string): string {
  const parts = ['pmrpc crash-test', app.replayArgs(), `--seed ${o.seed}`, `--images-per-point ${o.imagesPerPoint}`, `--engine ${o.engine}`];
  if (o.pins.drain !== undefined) parts.push(`--drain ${o.pins.drain}`);
  if (o.pins.ddio !== undefined) parts.push(`--ddio ${o.pins.ddio ? 'on' : 'off'}`);
  if (o.pins.placement !== undefined) parts.push(`--placement ${o.pins.placement}`);
  if (o.pins.eviction !== undefined) parts.push(`--eviction ${o.pins.eviction}`);
  if (o.pins.lineModel !== undefined) parts.push(`--line-model ${o.pins.lineModel}`);
  if (!o.nested) parts.push('--no-nested');
  if (o.plain) parts.push('--plain');
  // The schedule, always named unless it is what the CLI's default (mixed) draws for this seed anyway.
  const sched = scheduleArgs(resolveSchedule(o.schedule));
  parts.push(sched !== '' ? sched : isPlainRandom(resolveSchedule(mixedSchedule(o.seed))) ? '' : '--schedule random');
  if (point !== undefined) parts.push(`--point ${point}`);
  if (plan !== undefined) parts.push(`--crash-plan '${plan}'`);
  return parts.filter((p) => p !== '').join(' ');
}

/** Explores one seed of `app`. */
export async function explore<S>(app: ExplorerApp<S>, options: Partial<ExploreOptions> = {}): Promise<ExploreReport> {
  const o = withAppDefaults(app, resolveExploreOptions(options));
  const schedule = resolveSchedule(o.schedule);
  const t0 = o.clock?.nowMs();
  const config = nicConfigFor(o.seed, o.pins);
  const report: ExploreReport = {
    app: app.name, seed: o.seed, configs: [configName(config)], schedule: scheduleName(schedule), crashPointsTotal: 0, crashPoints: 0, deliveryPoints: 0,
    imagesChecked: 0, nestedImagesChecked: 0, sampledPoints: 0, imagesPerSecond: 0, seconds: 0, violations: [],
  };
  const violate = (kind: string, detail: string, point: number, image: number | undefined, phase: ExplorerViolation['phase'], plan?: string): void => {
    if (report.violations.length >= o.violationsMax) return;
    report.violations.push({ kind, detail, replay: replayCommand(app as ExplorerApp<unknown>, o, point >= 0 ? point : undefined, plan), point, image, phase, ...(plan !== undefined ? { plan } : {}) });
  };

  // 1. The workload, capturing every crash point (`capture`), then the live check. With crash runs
  // it runs twice: once before them, for the live check and the number of crash points their plans
  // draw from, and once after them, capturing, since a crash run replays the workload on the same
  // app and leaves its state (the history its snapshots refer to) at that run's end; the second run
  // is the same execution (same seed) and its live check puts the app where the first one left it
  // (its problems were reported by the first).
  const captures: Capture<S>[] = [];
  const live = async (capture: boolean, report_: boolean): Promise<void> => {
    const world = buildWorld(app, config, o.seed, 'explore', { schedule, observe: o.observe });
    let pointIndex = 0;
    let deliveries = 0;
    world.onCrashPoint = (kind) => {
      if (kind === 'delivery' && o.observe === 'late') return;
      const p = pointIndex++;
      if (kind === 'delivery') deliveries++;
      if (!capture || (o.point !== undefined && p !== o.point)) return;
      captures.push({ point: p, kind, states: world.nodes.map((n) => n.region.crashState()), snap: app.snapshot() });
    };
    const wl = startWorkload(app, world, o.seed);
    const r = await world.run(() => wl.finished, o.stepsMax);
    world.onCrashPoint = undefined;
    const problem = report_ ? violate : (): void => undefined;
    if (report_) {
      report.crashPointsTotal = pointIndex;
      report.deliveryPoints = deliveries;
    }
    for (const h of world.halts) problem('invariant', `live: ${h.detail}`, -1, undefined, 'live');
    if (r.status !== 'done') problem('stalled', `workload ${r.status === 'bound' ? `still running after ${r.steps} steps` : `stalled after ${r.steps} steps: nothing can run and a client still waits`}`, -1, undefined, 'live');
    if (wl.error !== undefined) problem('workload', `the workload failed: ${String(wl.error)}`, -1, undefined, 'live');
    if (r.status === 'done') {
      await wl.done;
      for (const p of await app.checkLive(world)) problem(p.kind, p.detail.startsWith('live: ') ? p.detail : `live: ${p.detail}`, -1, undefined, 'live');
    }
    world.close();
  };
  const runs = o.crashPlan !== undefined || o.crashRuns > 0;
  await live(!runs, true);

  // 2. Crash runs: subsets of nodes (and clients) crash mid-run, nodes restart while the cluster goes on
  // (before the image tuples: see the file comment).
  if (o.crashPlan !== undefined || o.crashRuns > 0) {
    if (app.checkHistory === undefined) throw new TypeError(`app ${app.name} does not support crash runs (no checkHistory)`);
    const plans = o.crashPlan !== undefined ? [parsePlan(o.crashPlan)] : Array.from({ length: o.crashRuns }, (_, i) => planFor(o.seed, i, report.crashPointsTotal, app.nodes, app.clients ?? 0, app.drops === true, app.crashShapes));
    report.crashRunsChecked = 0;
    for (const plan of plans) {
      if (report.violations.length >= o.violationsMax) break;
      const res = await runCrashPlan(app, o, config, plan);
      report.crashRunsChecked++;
      const name = formatPlan(plan);
      for (const p of res.problems) violate(p.kind, `crash run ${name} (${res.events.join('; ')}): ${p.detail}`, -1, undefined, 'crash-run', name);
    }
  }
  // 3. Crash points -> image tuples -> recovery -> checks.
  if (runs && o.crashPlan === undefined && report.violations.length < o.violationsMax) await live(true, false);
  const stride = Math.max(1, Math.ceil(captures.length / o.pointsMax));
  const points = Math.ceil(captures.length / stride);
  for (let i = 0; i < captures.length && o.crashPlan === undefined; i += stride) {
    if (report.violations.length >= o.violationsMax) break;
    const cap = captures[i]!;
    report.crashPoints++;
    const perNode = cap.states.map((st, n) => imagesOf(st, o, mix(o.seed, cap.point, 5, n), report));
    const count = Math.max(...perNode.map((x) => x.length));
    for (let k = 0; k < count; k++) {
      if (report.violations.length >= o.violationsMax) break;
      report.imagesChecked++;
      const bytes = perNode.map((imgs, n) => materialize(cap.states[n]!, imgs[k % imgs.length]!));
      const prng = createPrng(mix(o.seed, cap.point, 1000 + k));
      const problems = await checkTuple(app, config, bytes, cap.snap, prng, 'first', o.nested, report, mix(o.seed, cap.point, k));
      for (const pr of problems) violate(pr.kind, `${pr.phase === 'nested' ? 'crashed again during recovery: ' : ''}${pr.detail}`, cap.point, k, pr.phase);
    }
    o.onProgress?.({ imagesChecked: report.imagesChecked, points, pointsDone: report.crashPoints });
  }
  if (o.clock !== undefined && t0 !== undefined) {
    report.seconds = Math.max(1e-9, (o.clock.nowMs() - t0) / 1000);
    report.imagesPerSecond = Math.round(report.imagesChecked / report.seconds);
  }
  return report;
}

function imagesOf(state: CrashState, o: ExploreOptions, seed: number, report: ExploreReport) {
  const n = countImages(state);
  if (o.engine === 'exhaustive' && n <= BigInt(o.exhaustiveMax)) return [...crashImages(state, { engine: 'exhaustive', maxImages: o.exhaustiveMax })];
  if (o.engine === 'random' && n <= BigInt(o.imagesPerPoint)) return [...crashImages(state, { engine: 'exhaustive' })];
  if (o.engine === 'exhaustive') report.sampledPoints++;
  return [...crashImages(state, { engine: 'random', seed, count: o.imagesPerPoint })];
}

/** Opens one image tuple in a fresh World, recovers every node (sampling a nested crash point), checks; then the nested image. */
export async function checkTuple<S>(
  app: ExplorerApp<S>,
  config: NicConfig,
  images: Uint8Array[],
  snap: S,
  prng: Prng,
  phase: 'first' | 'nested',
  nested: boolean,
  report: ExploreReport,
  seed: number,
): Promise<Array<AppProblem & { phase: 'first' | 'nested' }>> {
  const out: Array<AppProblem & { phase: 'first' | 'nested' }> = [];
  const add = (ps: AppProblem[]): void => {
    for (const p of ps) out.push({ ...p, phase });
  };
  const world = new World(config, seed);
  // A nested crash hits one node's recovery, at a crash point sampled uniformly (reservoir).
  const nestedNode = phase === 'first' && nested ? prng.int(0, images.length - 1) : -1;
  let sampled: CrashState | undefined;
  try {
    for (let n = 0; n < images.length; n++) {
      app.damageImage?.(images[n]!, n);
      const region = imageRegion(config, images[n]!, n, 'check');
      let node;
      try {
        node = world.addNode(region, (host) => app.open(host, n));
      } catch (e) {
        add([{ kind: 'recovery', detail: `node ${n}: open failed: ${(e as Error).message}` }]);
        return out;
      }
      if (phase === 'first' && app.beforeRecover) add(await app.beforeRecover(world, n));
      try {
        const recover = (): void => void node.server!.recover();
        if (n === nestedNode) sampled = sampleRecoveryCrash(region, prng, recover);
        else recover();
      } catch (e) {
        add([{ kind: 'recovery', detail: `node ${n}: recovery failed: ${(e as Error).message}` }]);
        return out;
      }
      for (const p of node.server!.audit()) out.push({ ...p, detail: `node ${n}: ${p.detail}`, phase });
    }
    if (out.length > 0) return out;
    const checked = await app.checkRecovered(world, snap, { phase, prng });
    add(world.halts.map((h) => ({ kind: 'invariant', detail: h.detail }))); // before what the halt made the checks see
    add(checked);
  } finally {
    world.close();
  }
  if (sampled !== undefined && out.length === 0) {
    report.nestedImagesChecked++;
    const tuple = images.slice();
    tuple[nestedNode] = nestedImage(sampled, prng);
    out.push(...(await checkTuple(app, config, tuple, snap, prng, 'nested', false, report, mix(seed, 77))));
  }
  return out;
}

/** Merges the reports of several seeds of one app (a sweep, or the shards of one): by seed. */
export function mergeReports(reports: readonly ExploreReport[]): ExploreReport & { seeds: number[] } {
  const rs = [...reports].sort((a, b) => a.seed - b.seed);
  const sum = (f: (r: ExploreReport) => number): number => rs.reduce((a, r) => a + f(r), 0);
  const seconds = sum((r) => r.seconds);
  return {
    app: rs[0]?.app ?? '',
    seed: rs[0]?.seed ?? 0,
    seeds: rs.map((r) => r.seed),
    configs: [...new Set(rs.flatMap((r) => r.configs))],
    ...(rs[0]?.schedule !== undefined ? { schedule: rs[0].schedule } : {}),
    crashPointsTotal: sum((r) => r.crashPointsTotal),
    crashPoints: sum((r) => r.crashPoints),
    deliveryPoints: sum((r) => r.deliveryPoints),
    imagesChecked: sum((r) => r.imagesChecked),
    nestedImagesChecked: sum((r) => r.nestedImagesChecked),
    sampledPoints: sum((r) => r.sampledPoints),
    ...(rs.some((r) => r.crashRunsChecked !== undefined) ? { crashRunsChecked: sum((r) => r.crashRunsChecked ?? 0) } : {}),
    seconds,
    imagesPerSecond: seconds > 0 ? Math.round(sum((r) => r.imagesChecked) / seconds) : 0,
    violations: rs.flatMap((r) => r.violations),
  };
}
