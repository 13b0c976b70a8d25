/**
 * The explorer's one driver (DESIGN §8): what every kind of run — the random and PCT sweeps
 * (explorer.ts), small-scope exhaustive mode (exhaustive.ts), crash runs and crash plans (multi.ts)
 * and the swarm (swarm.ts, through multi.ts) — does the same way, written once:
 *
 * - building a node's region with the run's NIC configuration (line model, eviction): a fresh,
 *   app-formatted region of a run, a restarted node's region on a crash image, or a region on an
 *   image only to check its recovery;
 * - building the World (configuration, seed, optional cost model, schedule, observation rule) with
 *   every node formatted, opened and recovered;
 * - starting the seeded workload;
 * - sampling a crash during a recovery (the nested crash): one crash point of the recovery, drawn
 *   uniformly (reservoir), and one image of that moment.
 *
 * A driver that built regions itself drifted (crash runs and the swarm once never used the drawn
 * line model); here there is one place, and a test-only probe (setRegionProbe) records what each
 * driver built.
 */
import { crashImages, createPrng, materialize, PmemRegion, seededEntropy, type CrashState, type Prng } from '../../../pmem/index.js';
import type { NicConfig } from './config.js';
import type { ExplorerApp } from './types.js';
import { mix } from './seeds.js';
import { World } from './world.js';
import { applySchedule, type ScheduleOptions } from './pct.js';
import type { CostModel } from '../model/index.js';

/** Which driver built a region (what the probe reports). */
export type RegionUse = 'explore' | 'exhaustive' | 'crash-run' | 'restart' | 'check' | 'recovery-crash';

export interface RegionProbeEvent {
  use: RegionUse;
  node: number;
  lineModel: 'prefix' | 'subset';
  eviction: number;
}

let probe: ((e: RegionProbeEvent) => void) | undefined;

/** Test only: called with every region the driver builds (undefined: off). Returns the previous probe. */
export function setRegionProbe(fn: ((e: RegionProbeEvent) => void) | undefined): ((e: RegionProbeEvent) => void) | undefined {
  const prev = probe;
  probe = fn;
  return prev;
}

function probed(region: PmemRegion, use: RegionUse, node: number): PmemRegion {
  probe?.({ use, node, lineModel: region.options.lineModel, eviction: region.options.eviction });
  return region;
}

/** A fresh region of node `n` of a run of `seed`, formatted by the app (not yet opened). */
export function freshRegion<S>(app: ExplorerApp<S>, config: NicConfig, seed: number, n: number, use: RegionUse): PmemRegion {
  const region = PmemRegion.createInMemory(app.regionBytes, {
    tracing: true,
    lineModel: config.lineModel,
    seed: mix(seed, 0x7e, n),
    eviction: config.eviction,
    entropy: seededEntropy(createPrng(mix(seed, 3, n))),
  });
  app.format(region, n);
  return probed(region, use, n);
}

/**
 * A region on crash image `image` of node `n`. With `evictionSeed` it runs on (a restarted node of a
 * crash run: the configuration's eviction, seeded); without, it only recovers to be checked (no
 * eviction, as the explorer's image checks always ran).
 */
export function imageRegion(config: NicConfig, image: Uint8Array, n: number, use: RegionUse, evictionSeed?: number): PmemRegion {
  const region = PmemRegion.openImage(image, {
    tracing: true,
    lineModel: config.lineModel,
    ...(evictionSeed !== undefined ? { seed: evictionSeed, eviction: config.eviction } : {}),
  });
  return probed(region, use, n);
}

export interface BuildWorldOptions {
  /** Modelled time (virtual-time.ts). */
  model?: Readonly<CostModel>;
  /** The scheduler (pct.ts); undefined: the World's seeded random chooser. */
  schedule?: ScheduleOptions;
  /** 'late': test only, answers observed late (World.lateObservation). */
  observe?: 'delivery' | 'late';
  /** Called once the World exists, before its nodes are added. */
  install?(world: World): void;
}

/** The World of a run of `app` under `config` and `seed`: every node formatted, opened and recovered. */
export function buildWorld<S>(app: ExplorerApp<S>, config: NicConfig, seed: number, use: RegionUse, o: BuildWorldOptions = {}): World {
  const world = new World(config, seed, o.model !== undefined ? { model: o.model } : {});
  if (o.schedule !== undefined) applySchedule(world, o.schedule);
  world.lateObservation = o.observe === 'late';
  o.install?.(world);
  for (let n = 0; n < app.nodes; n++) {
    const region = freshRegion(app, config, seed, n, use);
    world.addNode(region, (host) => app.open(host, n)).server!.recover();
  }
  return world;
}

/** A started workload: `finished` once it resolved or failed (`error`). */
export interface RunningWorkload {
  readonly finished: boolean;
  readonly error: unknown;
  /** Settles when the workload does (never rejects). */
  readonly done: Promise<void>;
}

/** Starts the seeded workload of `app` on `world` (the same randomness under every schedule). */
export function startWorkload<S>(app: ExplorerApp<S>, world: World, seed: number): RunningWorkload {
  const w = { finished: false, error: undefined as unknown, done: Promise.resolve() };
  w.done = app.workload(world, createPrng(mix(seed, 0))).then(
    () => void (w.finished = true),
    (e: unknown) => {
      w.finished = true;
      w.error = e;
    },
  );
  return w;
}

/**
 * Runs `recover` with a reservoir on `region`'s crash points: returns the state at one crash point
 * of it drawn uniformly with `prng` (undefined: it had none). Exceptions of `recover` propagate.
 */
export function sampleRecoveryCrash(region: PmemRegion, prng: Prng, recover: () => void): CrashState | undefined {
  let sampled: CrashState | undefined;
  let seen = 0;
  region.setCrashPointHook(() => {
    seen++;
    if (prng.int(1, seen) === 1) sampled = region.crashState();
  });
  try {
    recover();
  } finally {
    region.setCrashPointHook(undefined);
  }
  return sampled;
}

/** One image of a sampled recovery crash: one of three seeded random images of `state`. */
export function nestedImage(state: CrashState, prng: Prng): Uint8Array {
  const imgs = [...crashImages(state, { engine: 'random', seed: prng.u32() | 0, count: 3 })];
  return materialize(state, imgs[prng.int(0, imgs.length - 1)]!);
}
