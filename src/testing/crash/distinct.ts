/**
 * Counting distinct (crash point, image) pairs (issue 10 item 8): the random engine may draw the
 * same image twice, and two choice vectors may give the same bytes, so `imagesChecked` over-counts
 * what a run really explored. `withDistinctImages(app)` wraps an ExplorerApp (no change to the
 * explorer): just before recovery of a freshly opened image it hashes each node's bytes (what the
 * image holds: media with the chosen pieces), and when the tuple is checked it records
 * (crash point, every node's hash). Pairs of different seeds are distinct by construction (a
 * different run), so a suite sums `distinct` over its seeds.
 *
 * It also keeps the pictures (picture.ts) of the problems the app's checks return, so that
 * `attachTimelines(report)` can give each reported violation its timeline input.
 */
import { createHash } from 'node:crypto';
import type { Prng } from '../../../pmem/index.js';
import type { AppProblem } from '../../apps/index.js';
import type { ExploreReport, ExplorerApp } from './explorer.js';
import { timelineInput, type Picture, type PicturedProblem, type PicturedViolation } from './picture.js';
import type { World } from './world.js';

interface Tagged<S> {
  point: number;
  inner: S;
}

export type Counted<S> = ExplorerApp<Tagged<S>> & {
  /** The app wrapped. */
  readonly inner: ExplorerApp<S>;
  /** Distinct (crash point, image tuple) pairs recovered and checked so far (first recoveries, not nested ones). */
  readonly distinct: number;
  /** Gives each violation of `report` (a run of this app) the timeline input of its picture, when its check drew one. */
  attachTimelines(report: ExploreReport): ExploreReport & { violations: PicturedViolation[] };
};

/** Wraps `app` so that the distinct (crash point, image) pairs it is checked on are counted. */
export function withDistinctImages<S>(app: ExplorerApp<S>): Counted<S> {
  const seen = new Set<string>();
  let points = 0;
  let pending: string[] = [];
  const pictures: Array<{ kind: string; detail: string; picture: () => Picture; used: boolean }> = [];
  const keep = (ps: AppProblem[]): AppProblem[] => {
    for (const p of ps as PicturedProblem[]) if (p.picture !== undefined && pictures.length < 10_000) pictures.push({ kind: p.kind, detail: p.detail, picture: p.picture, used: false });
    return ps;
  };
  const hashOf = (world: World, node: number): string => {
    const r = world.nodes[node]!.region;
    return createHash('sha1').update(r.load(0, r.sizeBytes)).digest('base64');
  };
  const wrapped: Counted<S> = {
    inner: app,
    get distinct() {
      return seen.size;
    },
    name: app.name,
    nodes: app.nodes,
    regionBytes: app.regionBytes,
    format: (region, node) => app.format(region, node),
    open: (host, node) => app.open(host, node),
    workload: (world: World, prng: Prng) => app.workload(world, prng),
    snapshot: () => ({ point: points++, inner: app.snapshot() }),
    checkLive: async (world) => keep(await app.checkLive(world)),
    async beforeRecover(world: World, node: number): Promise<AppProblem[]> {
      if (node === 0) pending = [];
      pending[node] = hashOf(world, node);
      return app.beforeRecover ? app.beforeRecover(world, node) : [];
    },
    async checkRecovered(world, snap, ctx) {
      if (ctx.phase === 'first' && pending.length === app.nodes) seen.add(`${snap.point}:${pending.join(',')}`);
      return keep(await app.checkRecovered(world, snap.inner, ctx));
    },
    attachTimelines(report: ExploreReport) {
      const violations: PicturedViolation[] = report.violations.map((v) => {
        const p = pictures.find((x) => !x.used && x.kind === v.kind && v.detail.endsWith(x.detail));
        if (p === undefined) return v;
        p.used = true;
        try {
          return { ...v, timeline: timelineInput(v, report.app, report.seed, p.picture()) };
        } catch {
          return v; // a picture that cannot be drawn leaves the violation as it is
        }
      });
      return { ...report, violations };
    },
    replayArgs: () => app.replayArgs(),
    // What crash runs (clients, client crashes, dropped connections, the whole-history check) and media errors need, when the app has it.
    ...(app.clients !== undefined ? { clients: app.clients } : {}),
    ...(app.drops !== undefined ? { drops: app.drops } : {}),
    ...(app.crashShapes !== undefined ? { crashShapes: app.crashShapes } : {}),
    ...(app.exploreDefaults !== undefined ? { exploreDefaults: app.exploreDefaults } : {}),
    ...(app.crashClient !== undefined ? { crashClient: (c: number) => app.crashClient!(c) } : {}),
    ...(app.checkHistory !== undefined ? { checkHistory: async (world: World) => keep(await app.checkHistory!(world)) } : {}),
    ...(app.damageImage !== undefined ? { damageImage: (image: Uint8Array, node: number) => app.damageImage!(image, node) } : {}),
  };
  return wrapped;
}
