/**
 * Swarm simulation (VOPR / FoundationDB style) on the one crash explorer: every seed is a new fault
 * schedule. Per seed and app, fault parameters are drawn from the seed — the NIC configuration
 * (config.ts: drain policy and bound, cache pressure, DDIO, placement, eviction, line model), node
 * crash and restart rates, crashes during recovery, crashes of every node at once, client crashes,
 * dropped connections (every app: its clients reconnect a live node), message delay and
 * reordering between QPs, paused nodes, and which BUGGIFY fault sites (pmem/buggify.ts) are on — and
 * the app's seeded workload runs as one crash run (multi.ts) with the crash suites' whole-history
 * checker judging it. The fault phase lasts `seconds` of virtual time (or until the workload ends);
 * then the liveness phase: faults off, every node up, and the workload must finish within
 * LIVENESS_VIRTUAL_US of virtual time. A crashed node restarts after a delay of virtual time too
 * (restartAfterUsMax, an event on the virtual clock): every bound of a run is modelled time, and
 * scheduler steps only bound a run whose clock stops moving (a 'steps' failure).
 *
 * Each app runs in its own World in the same seed (the explorer's World hosts one ExplorerApp: its
 * workloads address nodes by index). Everything derives from (seed, app, seconds, mutant), so the
 * one-line replay command reproduces a failure exactly.
 *
 * Virtual time: every World runs in modelled time (virtual-time.ts) on the default cost profile
 * (`cx4-optane`): every message, work request, CPU pass, drain and timer is an event with a cost,
 * and the virtual clock moves by those costs. `seconds` bounds the fault phase on that clock
 * (nsOfSeconds() is the one place the unit is converted); ties among events are broken by the
 * World's seeded PRNG, so one seed is still one exact execution.
 */
import { createPrng, FAULT_SITE_NAMES, setBuggifyHook, type FaultSite, type Prng } from '../../../pmem/index.js';
import { configName, nicConfigFor, type NicConfig } from './config.js';
import { resolveExploreOptions } from './explorer.js';
import { atGeometricGaps, formatPlan, onePerPoint, runCrashPlan, type CrashEvent, type CrashPlan } from './multi.js';
import { mix } from './seeds.js';
import { runPooled } from './sweep.js';
import { appOf, crashApp, mutantName, swarmEntry, SWARM_APP_NAMES, type SweepSpec } from './apps.js';
import type { World } from './world.js';
import type { TimeFaults } from './virtual-time.js';
import { costProfile, DEFAULT_COST_PROFILE } from '../model/index.js';

/** The apps the swarm runs: the crash-test registry's apps with a swarm entry (apps.ts), in its order. */
export const SWARM_APPS: readonly string[] = SWARM_APP_NAMES;
export type SwarmApp = string;

/** The cost profile of the swarm's modelled time (src/testing/model). */
export const SWARM_COST_PROFILE = DEFAULT_COST_PROFILE;
/** Default virtual seconds per seed and app (fault phase); workloads are sized for it. */
export const SWARM_DEFAULT_SECONDS = 0.01;
/**
 * The liveness bound, in virtual µs of modelled time (not measured): once faults are off and every
 * node is up, every app must converge and every client finish within this much time on the
 * World's virtual clock, else a 'liveness' failure naming the modelled time it waited. 5 virtual
 * seconds: above the longest protocol timer a client may have to ride out after the faults (2 s:
 * rs `majorityWaitMs`, rpc `restartGraceMs`), and 12× the longest liveness phase of seeds 1..200
 * (0.40 virtual s, tx; the median is 1 virtual ms).
 */
export const LIVENESS_VIRTUAL_US = 5_000_000;
/**
 * A safety net, not the liveness bound: the most scheduler steps of the liveness phase. Hitting it
 * means the run takes steps far faster than the virtual clock moves (a loop of zero- or low-cost
 * events): a 'steps' failure, not 'liveness'. Runs of seeds 1..200 take at most 7,419 steps in all.
 */
export const LIVENESS_STEPS_MAX = 500_000;
/** The same safety net on the fault phase's steps (it ends on the virtual clock, at `seconds`, or with the workload). */
const FAULT_STEPS_MAX = 1_000_000;
/** Probability that a node-crash event that is not of every node crashes a seeded subset of them (apps of 3 or more nodes). */
const SUBSET_RATE = 0.3;
/** Most node-crash events of one run (and most dropped connections). */
const CRASH_EVENTS_MAX = 10;

export interface SwarmOptions {
  apps: readonly SwarmApp[];
  /** Virtual seconds of the fault phase per seed and app. */
  seconds: number;
  /** A mutant build of one app, "app:name" (test: a broken build must fail with a replayable seed). */
  mutant: string | undefined;
  /** Node and client crashes (false: only the NIC configuration, scheduler faults and fault sites; the replay says --no-crashes). */
  crashes: boolean;
  /** Test only, to narrow a failure down: these fault parameters instead of the drawn ones (not in the replay command). */
  overrides: Partial<SwarmParams> | undefined;
}

export const SWARM_DEFAULTS: Readonly<SwarmOptions> = Object.freeze({ apps: SWARM_APPS, seconds: SWARM_DEFAULT_SECONDS, mutant: undefined, crashes: true, overrides: undefined });

/** The fault parameters of one (seed, app): all drawn from the seed. */
export interface SwarmParams {
  config: NicConfig;
  /** Node crashes per crash point (a crash event every 1/rate points on average). */
  nodeCrashRate: number;
  /** Probability that a node-crash event takes every node down at once. */
  allNodesRate: number;
  /** Most virtual µs (modelled time) between a node's crash and its restart; each restart's delay is drawn in [0, this]. */
  restartAfterUsMax: number;
  /** Probability that a restart crashes once more during its recovery. */
  recoveryCrashRate: number;
  /** Client crashes per crash point. */
  clientCrashRate: number;
  /** Dropped connections per crash point (both ends live; the client reconnects). Drawn for every app whose swarm entry says `drops` (its clients reconnect a live node); elsewhere 0 (docs/swarm.md, "Dropped connections"). */
  dropRate: number;
  /** Probability that a QP is slow (message delay; QPs of different delays reorder relative to each other). */
  slowQpRate: number;
  /** A slow QP's messages each spend up to this many extra virtual µs on the fabric (uniform; RC order within the QP holds). */
  slowQpDelayUsMax: number;
  /** Every message (any QP) spends up to this many extra virtual µs on the fabric (jitter: reorders messages of different QPs that would arrive close together). */
  jitterUsMax: number;
  /** Probability that a message (any QP) stalls, as a retransmission would hold it up, for up to stallUsMax virtual µs (RC order within its QP holds). */
  stallRate: number;
  stallUsMax: number;
  /** Node pauses (no NIC work request, CPU pass or drain of the node starts) in the fault phase, and their most virtual µs. */
  pauses: number;
  pauseUsMax: number;
  /** BUGGIFY sites switched on for this run, and how often an enabled site fires. */
  sites: FaultSite[];
  siteFireRate: number;
  /** Workload variant (tx: 'append' or 'bank'; rpc: the flush strategy). */
  variant: string;
}

export interface SwarmFailure {
  seed: number;
  app: SwarmApp;
  /** One-line command that replays it. */
  replay: string;
  violation: string;
}

export interface SwarmAppResult {
  app: SwarmApp;
  seed: number;
  config: string;
  plan: string;
  sites: FaultSite[];
  /** Scheduler steps of the run (fault and liveness phases, and the final check). */
  steps: number;
  /** Virtual (modelled, not measured) µs: when the fault phase ended, and at the end of the run. */
  faultUs: number;
  virtualUs: number;
  /** Virtual (modelled) µs the liveness phase took (0: the workload ended in the fault phase); at most LIVENESS_VIRTUAL_US. */
  livenessUs: number;
  crashPoints: number;
  events: number;
  failures: SwarmFailure[];
  /** What happened (crashes, restarts, faults off), kept when the run failed. */
  trace?: string[];
}

export interface SwarmSeedResult {
  seed: number;
  apps: SwarmAppResult[];
  failures: SwarmFailure[];
}

export function resolveSwarmOptions(options: Partial<SwarmOptions>): SwarmOptions {
  const o: SwarmOptions = { ...SWARM_DEFAULTS, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) };
  if (!Array.isArray(o.apps) || o.apps.length === 0 || o.apps.some((a) => !SWARM_APPS.includes(a))) throw new TypeError(`apps must be a non-empty list of ${SWARM_APPS.join(', ')}, got ${String(o.apps)}`);
  if (typeof o.crashes !== 'boolean') throw new TypeError(`crashes must be a boolean, got ${String(o.crashes)}`);
  if (typeof o.seconds !== 'number' || !(o.seconds > 0 && o.seconds <= 10)) throw new RangeError(`seconds must be a number in (0, 10], got ${String(o.seconds)}`);
  if (o.mutant !== undefined) {
    const app = parseMutant(o.mutant).app;
    if (!o.apps.includes(app)) throw new TypeError(`mutant ${o.mutant}: app ${app} is not among the apps run (${o.apps.join(', ')})`);
    appOf(specOf(app, o, paramsFor(1, app, o))); // validates the mutant's workload
  }
  return o;
}

export function parseMutant(m: string): { app: SwarmApp; name: string } {
  const i = typeof m === 'string' ? m.indexOf(':') : -1;
  const app = i > 0 ? m.slice(0, i) : '';
  if (i <= 0 || !SWARM_APPS.includes(app) || m.length === i + 1) throw new TypeError(`mutant must be APP:NAME with APP one of ${SWARM_APPS.join(', ')}, got ${String(m)}`);
  // A former name (an alias) names the mutant by its name (mutantName: TypeError for an unknown one).
  return { app, name: mutantName(crashApp(app), m.slice(i + 1)) };
}

/** Virtual ns of `seconds` of virtual time (the one place the unit is converted): the fault phase's bound on the World's clock. */
export function nsOfSeconds(seconds: number): number {
  return Math.max(1, Math.round(seconds * 1e9));
}

/** The fault parameters of (seed, app). */
export function paramsFor(seed: number, app: SwarmApp, o: SwarmOptions): SwarmParams {
  const p = createPrng(mix(seed, 0x5a4a, SWARM_APPS.indexOf(app)));
  const pick = <T>(xs: readonly T[]): T => xs[p.int(0, xs.length - 1)]!;
  const config = nicConfigFor(mix(seed, 0x5a4b, SWARM_APPS.indexOf(app)));
  const sites = FAULT_SITE_NAMES.filter(() => p.chance(0.5));
  const entry = swarmEntry(app);
  return {
    config,
    nodeCrashRate: pick([0, 1 / 400, 1 / 150, 1 / 60]),
    allNodesRate: pick([0, 0.2, 0.5]),
    restartAfterUsMax: pick([0, 10, 100, 1000]),
    recoveryCrashRate: pick([0, 0.3, 0.8]),
    clientCrashRate: pick([0, 0, 1 / 500, 1 / 150]),
    dropRate: ((r) => (entry.drops ? r : 0))(pick([0, 1 / 400, 1 / 100])), // drawn for every app, so the other draws do not depend on SwarmEntry.drops
    slowQpRate: pick([0, 0.2, 0.5, 1]),
    slowQpDelayUsMax: pick([2, 10, 50]),
    jitterUsMax: pick([0, 0.5, 2, 5]),
    stallRate: pick([0, 0, 0.01, 0.05]),
    stallUsMax: pick([100, 1000]),
    pauses: pick([0, 0, 1, 3]),
    pauseUsMax: pick([5, 50, 300]),
    sites,
    siteFireRate: pick([0.01, 0.05, 0.2]),
    variant: entry.variants !== undefined ? pick(entry.variants) : '',
    ...(o.crashes ? {} : { nodeCrashRate: 0, clientCrashRate: 0, dropRate: 0 }),
    ...o.overrides,
  };
}

/**
 * The spec of a run. Operations per client (SwarmEntry.baseOps at the default `seconds`) scale
 * with `seconds`: under the drawn faults (crashed nodes, delays, pauses, clients waiting on timers)
 * a workload of this size usually outlasts the fault phase (in about 5 of 8 runs the virtual clock
 * ends it), so the liveness phase takes over mid-workload; without faults it takes 0.1–2 virtual ms.
 */
function specOf(app: SwarmApp, o: SwarmOptions, params: SwarmParams): SweepSpec {
  const entry = swarmEntry(app);
  const ops = Math.max(2, Math.round((entry.baseOps * o.seconds) / SWARM_DEFAULT_SECONDS));
  const m = o.mutant !== undefined ? parseMutant(o.mutant) : undefined;
  const mutant = m !== undefined && m.app === app ? m.name : undefined;
  return { app, workload: entry.workload(ops, params.variant, mutant), explore: {} };
}

/** The crash plan of a run: node and client crash events at geometric gaps of crash points. */
function planOf(seed: number, app: SwarmApp, params: SwarmParams, nodes: number, clients: number): CrashPlan {
  const p = createPrng(mix(seed, 0x5a4c, SWARM_APPS.indexOf(app)));
  const plan: CrashEvent[] = [];
  if (params.nodeCrashRate > 0) {
    atGeometricGaps(p, params.nodeCrashRate, CRASH_EVENTS_MAX, (at) => {
      const all = nodes > 1 && p.chance(params.allNodesRate);
      // Otherwise one node, or (with probability SUBSET_RATE) a seeded subset of them crashing at one instant.
      const subset = !all && nodes > 2 && p.chance(SUBSET_RATE) ? Array.from({ length: nodes }, (_, n) => n).filter(() => p.chance(0.5)) : [];
      const down = all ? Array.from({ length: nodes }, (_, n) => n) : subset.length > 0 ? subset : [p.int(0, nodes - 1)];
      plan.push({ point: at, nodes: down, clients: [], image: p.int(0, 3), restartAfter: 0, restartAfterNs: p.int(0, params.restartAfterUsMax * 1000), ...(p.chance(params.recoveryCrashRate) ? { recoveryCrash: true } : {}) });
    });
  }
  if (params.clientCrashRate > 0 && clients > 1) {
    // At most clients - 1 client crashes: someone is left to finish the workload.
    atGeometricGaps(p, params.clientCrashRate, clients - 1, (at) => plan.push({ point: at, nodes: [], clients: [p.int(0, clients - 1)], image: 0, restartAfter: 0 }));
  }
  if (params.dropRate > 0) atGeometricGaps(p, params.dropRate, CRASH_EVENTS_MAX, (at) => plan.push({ point: at, nodes: [], clients: [], drops: [p.int(0, 63)], image: 0, restartAfter: 0 }));
  // One event per point (the plan's syntax allows several; keep it readable), in point order.
  return onePerPoint(plan);
}

/**
 * The faults of modelled time: message delay and reordering between QPs (a slow QP's messages each
 * spend up to slowQpDelayUsMax extra µs on the fabric, so they arrive late relative to other QPs'
 * while RC order within the QP holds: virtual-time.ts), and paused nodes (none of a paused node's
 * work requests, CPU passes or drains starts inside a pause window of the fault phase).
 */
function timeFaults(world: World, params: SwarmParams, prng: Prng, faultNs: number): TimeFaults {
  const slow = new Map<string, boolean>();
  const pauses = Array.from({ length: params.pauses }, () => {
    const from = prng.int(0, faultNs);
    // The node is drawn now, resolved against the node count when consulted (install runs before the nodes exist).
    return { node: prng.int(0, 1 << 20), from, to: from + prng.int(1, params.pauseUsMax * 1000) };
  });
  return {
    messageDelayNs(node, qpn) {
      const k = `${node}.${world.nodes[node]?.incarnation ?? 0}/${qpn}`;
      let s = slow.get(k);
      if (s === undefined) slow.set(k, (s = prng.chance(params.slowQpRate)));
      let ns = s ? prng.int(0, params.slowQpDelayUsMax * 1000) : 0;
      if (params.jitterUsMax > 0) ns += prng.int(0, Math.round(params.jitterUsMax * 1000));
      if (params.stallRate > 0 && prng.chance(params.stallRate)) ns += prng.int(0, params.stallUsMax * 1000);
      return ns;
    },
    resumeAt(node, t) {
      for (let moved = true; moved; ) {
        moved = false;
        for (const x of pauses) {
          if (x.node % world.nodes.length === node && t >= x.from && t < x.to) {
            t = x.to;
            moved = true;
          }
        }
      }
      return t;
    },
  };
}

/** The one-line command that replays (seed, app) under these options. */
export function swarmReplay(seed: number, app: SwarmApp, o: SwarmOptions): string {
  return [`pmrpc swarm --seeds ${seed}..${seed} --app ${app}`, o.seconds !== SWARM_DEFAULT_SECONDS ? `--seconds ${o.seconds}` : '', o.mutant !== undefined ? `--mutant ${o.mutant}` : '', o.crashes ? '' : '--no-crashes'].filter((x) => x !== '').join(' ');
}

/** One app of one seed: the fault phase, the liveness phase, the whole-history check. */
export async function swarmRun(seed: number, app: SwarmApp, options: Partial<SwarmOptions> = {}): Promise<SwarmAppResult> {
  const o = resolveSwarmOptions(options);
  const params = paramsFor(seed, app, o);
  const explorerApp = appOf(specOf(app, o, params));
  const plan = planOf(seed, app, params, explorerApp.nodes, explorerApp.clients ?? 0);
  const faultNs = nsOfSeconds(o.seconds);
  const siteRng = createPrng(mix(seed, 0xb0, SWARM_APPS.indexOf(app)));
  const enabled = new Set(params.sites);
  let world: World | undefined;
  const result: SwarmAppResult = { app, seed, config: configName(params.config), plan: formatPlan(plan), sites: params.sites, steps: 0, faultUs: 0, virtualUs: 0, livenessUs: 0, crashPoints: 0, events: 0, failures: [] };
  const fail = (violation: string): void => void result.failures.push({ seed, app, replay: swarmReplay(seed, app, o), violation });
  const prev = setBuggifyHook(enabled.size > 0 ? (site) => enabled.has(site) && siteRng.chance(params.siteFireRate) : undefined);
  try {
    const r = await runCrashPlan(explorerApp, resolveExploreOptions({ seed }), params.config, plan, {
      model: costProfile(SWARM_COST_PROFILE),
      install(w) {
        world = w;
        w.time!.faults = timeFaults(w, params, createPrng(mix(seed, 0xc4, SWARM_APPS.indexOf(app))), faultNs);
      },
      faultStepsMax: FAULT_STEPS_MAX,
      faultNsMax: faultNs,
      faultsOff(w) {
        w.time!.faults = undefined;
        setBuggifyHook(undefined);
      },
      livenessNsMax: LIVENESS_VIRTUAL_US * 1000,
      livenessStepsMax: LIVENESS_STEPS_MAX,
    });
    result.crashPoints = r.crashPoints;
    result.events = r.events.length;
    result.faultUs = Math.round(r.faultNs ?? r.virtualNs ?? 0) / 1000;
    result.virtualUs = Math.round(r.virtualNs ?? 0) / 1000;
    result.livenessUs = Math.round(r.livenessNs ?? 0) / 1000;
    for (const p of r.problems) fail(`${p.kind}: ${p.detail}`);
    if (result.failures.length > 0) result.trace = r.events;
  } catch (e) {
    fail(`exception: ${e instanceof Error ? (e.stack ?? e.message).split('\n').slice(0, 3).join(' | ') : String(e)}`);
  } finally {
    setBuggifyHook(prev);
    result.steps = world?.steps ?? 0;
  }
  return result;
}

/** Every app of one seed (what a worker runs). */
export async function swarmSeed(seed: number, options: Partial<SwarmOptions> = {}): Promise<SwarmSeedResult> {
  const o = resolveSwarmOptions(options);
  const apps: SwarmAppResult[] = [];
  for (const app of o.apps) apps.push(await swarmRun(seed, app, o));
  return { seed, apps, failures: apps.flatMap((a) => a.failures) };
}

export interface SwarmReport {
  seeds: number[];
  failures: SwarmFailure[];
  apps: SwarmApp[];
  seconds: number;
  /** Sums over seeds and apps (virtualUs: modelled, not measured). */
  steps: number;
  virtualUs: number;
  crashPoints: number;
  events: number;
  results: SwarmSeedResult[];
}

/** A swarm over `seeds`, in-process or on `jobs` worker threads (the sweep's piscina pool). */
export async function swarm(seeds: readonly number[], options: Partial<SwarmOptions> & { jobs?: number; onSeed?: (r: SwarmSeedResult, done: number, total: number) => void } = {}): Promise<SwarmReport> {
  const { jobs = 1, onSeed, ...rest } = options;
  const o = resolveSwarmOptions(rest);
  if (!Number.isSafeInteger(jobs) || jobs < 1 || jobs > 64) throw new RangeError(`jobs must be an integer in [1, 64], got ${String(jobs)}`);
  if (seeds.length === 0) throw new RangeError('seeds must not be empty');
  const results: SwarmSeedResult[] = [];
  await runPooled(
    seeds,
    jobs,
    (seed) => ({ swarm: o, seed }),
    (seed) => swarmSeed(seed, o),
    (r) => {
      results.push(r);
      onSeed?.(r, results.length, seeds.length);
    },
  );
  results.sort((a, b) => a.seed - b.seed);
  const all = results.flatMap((r) => r.apps);
  return {
    seeds: [...seeds],
    failures: results.flatMap((r) => r.failures),
    apps: [...o.apps],
    seconds: o.seconds,
    steps: all.reduce((a, r) => a + r.steps, 0),
    virtualUs: Math.round(all.reduce((a, r) => a + r.virtualUs, 0) * 1000) / 1000,
    crashPoints: all.reduce((a, r) => a + r.crashPoints, 0),
    events: all.reduce((a, r) => a + r.events, 0),
    results,
  };
}
