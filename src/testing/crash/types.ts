/**
 * The explorer's interfaces (what an app supplies, the options of a run), apart from explorer.ts
 * so that the crash-run module (multi.ts) can name them without an import cycle.
 */
import type { Clock, PmemRegion, Prng } from '../../../pmem/index.js';
import type { AppHost, AppProblem, AppServer } from '../../apps/index.js';
import type { NicPins } from './config.js';
import type { ScheduleOptions } from './pct.js';
import type { World } from './world.js';

export type ImageEngine = 'random' | 'exhaustive';

/** What an app supplies to the explorer. `S` is its snapshot of what clients have observed. */
export interface ExplorerApp<S> {
  readonly name: string;
  /** Server nodes. */
  readonly nodes: number;
  /** Region data bytes per node. */
  readonly regionBytes: number;
  format(region: PmemRegion, node: number): void;
  open(host: AppHost, node: number): AppServer;
  /** Runs the workload's clients against `world` (connect through world.connect); resolves when every client is finished. */
  workload(world: World, prng: Prng): Promise<void>;
  /** What the clients have been told so far (a copy): taken at every crash point. */
  snapshot(): S;
  /** Checks after the workload, without a crash. */
  checkLive(world: World): Promise<AppProblem[]>;
  /** Before recovery of a freshly opened image (e.g. a request that must be refused until recovery). */
  beforeRecover?(world: World, node: number): Promise<AppProblem[]>;
  /** Checks recovered nodes (world holds them, recovered) against the snapshot of the crash point. */
  checkRecovered(world: World, snap: S, ctx: { phase: 'first' | 'nested'; prng: Prng }): Promise<AppProblem[]>;
  /**
   * Test only, a media error (not a crash): alters the bytes of node `node`'s crash image (as on
   * media: the region header, then the data area at `image.length - regionBytes`) before it is
   * opened — every checked image, nested image and crash-run restart. Must be idempotent.
   */
  damageImage?(image: Uint8Array, node: number): void;
  /** Arguments of the replay command that select this app and its options (e.g. "--app kv --mutant x"). */
  replayArgs(): string;
  /** Crash runs (multi.ts): how many clients the workload runs (client crashes pick among them). */
  readonly clients?: number;
  /** Crash runs: client `c` stops now, mid-operation, and never resumes (its in-flight operation is cut). */
  crashClient?(c: number): void;
  /**
   * Crash runs: this app's clients reconnect a live node by themselves after a dropped connection
   * (World.dropConnection), so its seeded crash runs drop connections while the server is up too
   * (multi.ts planFor) — what the drop mutants of PRISM-KV and PRISM-RS need.
   */
  readonly drops?: boolean;
  /** Crash runs: the crash shapes its seeded runs draw besides the four kinds (multi.ts CrashShapes: majority crashes, drop storms). */
  readonly crashShapes?: CrashShapes;
  /**
   * Crash runs: after the workload ran to its end through crashes and restarts (every node up and
   * recovered again), judges the whole history (crash events removed; operations cut by a crash
   * may or may not have happened).
   */
  checkHistory?(world: World): Promise<AppProblem[]>;
  /**
   * Explore options this app runs with unless the caller gives them (e.g. a mutant's NIC pins and
   * adversarial schedule, pct.ts): pins merge under the caller's; a schedule the caller gives replaces this one.
   */
  readonly exploreDefaults?: { pins?: NicPins; schedule?: Partial<ScheduleOptions>; crashPlan?: string };
}

/**
 * Crash shapes an app's seeded crash runs draw besides the four kinds (ExplorerApp.crashShapes):
 * - `majorities` (a quorum app of three or more nodes): every run of kind 0 crashes a majority of
 *   the nodes but not all of them, MAJORITY_STORM (multi.ts) times at geometric gaps over the run, each
 *   restarted within 10 steps — a write in flight then lands on the minority left up (it ends
 *   indeterminate) and the writer goes on, the shape a writer's tag reuse needs;
 * - `dropStorms` (with drops): every run of kind 3 drops DROP_STORM connections at geometric gaps
 *   over the run (the swarm's draw) and crashes nothing, so a drop meets a return batch or an install
 *   whose answer is outstanding, and no recovery reclaims what a lost answer leaked.
 */
export interface CrashShapes {
  majorities?: boolean;
  dropStorms?: boolean;
}

export interface ExploreOptions {
  seed: number;
  engine: ImageEngine;
  /** Images per crash point (random engine; points with at most this many images are enumerated). */
  imagesPerPoint: number;
  /** Exhaustive engine: most images of one point (beyond it imagesPerPoint random ones, counted in sampledPoints). */
  exhaustiveMax: number;
  /** Most crash points checked; beyond it a stride. */
  pointsMax: number;
  /** Check only this crash point. */
  point: number | undefined;
  /** Crash each image once more during its recovery. */
  nested: boolean;
  violationsMax: number;
  /** NIC dimensions pinned (the rest drawn from the seed). */
  pins: NicPins;
  /**
   * When an outcome enters the history: 'delivery' (the real rule: a step that delivered to a
   * client is a crash point, judged with the outcome in the history) or 'late' (test only: as the
   * old engines did — no delivery crash points, so an answer is judged only at later media events).
   */
  observe: 'delivery' | 'late';
  /** Most scheduler steps of the workload (beyond it: a 'stalled' violation). */
  stepsMax: number;
  /** For imagesPerSecond only (the CLI passes the system clock). */
  clock: Clock | undefined;
  onProgress: ((p: { imagesChecked: number; points: number; pointsDone: number }) => void) | undefined;
  /**
   * Crash runs (multi.ts), run before the image tuples: this many seeded plans, each a replay of the
   * workload in which subsets of nodes (and clients) crash at a crash point and the nodes restart
   * from an image while the rest of the cluster goes on. Needs app.checkHistory.
   */
  crashRuns: number;
  /** Replay exactly this crash plan (multi.ts syntax; what a crash-run violation's command names); the image tuples are skipped. */
  crashPlan: string | undefined;
  /**
   * The scheduler of the workload runs (pct.ts): seeded random (default), PCT priorities, stalls of
   * a client or QP. Undefined: the app's exploreDefaults.schedule, else plain random.
   */
  schedule: Partial<ScheduleOptions> | undefined;
  /**
   * A plain run: the app's exploreDefaults (a mutant's NIC pins, schedule and crash plan) do not
   * apply — what the mutant sweep (mutants.ts) runs, so that a mutant is caught with nothing pinned for it.
   */
  plain: boolean;
}
