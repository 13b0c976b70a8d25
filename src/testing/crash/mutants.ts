/**
 * The mutant sweep (`pmrpc crash-test --app A --mutants all --seeds 1..N`): a mutant is a real bug,
 * so the plain sweep — the app's default workload and explorer options, the NIC configuration drawn
 * per seed, nothing pinned for the mutant (ExploreOptions.plain: no exploreDefaults, no workload
 * pins, no DDIO pin) — must find it by itself. Each listed mutant (for rpc: once per strategy it
 * lists) runs seeds in order and stops at its first violation; the report says which were caught,
 * at which seed, after how many images, and the command that reproduces the catch. A mutant the app
 * declares equivalent (no execution of its workload can tell it apart, argued where it is defined)
 * is reported with `equivalent: true` and not run.
 */
import { crashApp, CRASH_APP_NAMES, CRASH_APPS, findMutantEntry, type MutantTarget, type SweepSpec } from './apps.js';
import { exploreSeed, runPooled } from './sweep.js';

export { plainTxShape, RS_IMAGES_PER_POINT as RS_PLAIN_IMAGES_PER_POINT, type MutantTarget } from './apps.js';

/** The apps with mutants (every crash-testable app). */
export const MUTANT_APPS: readonly string[] = CRASH_APP_NAMES;
export type MutantApp = string;

export interface MutantResult {
  name: string;
  strategy: string | null;
  caught: boolean;
  /** The seed whose sweep caught it (null: not caught). */
  seed: number | null;
  /** Crash images checked until caught (or over every seed). */
  images: number;
  /** The command that reproduces the catch (null: not caught). */
  replay: string | null;
  equivalent: boolean;
  /** The first violation's kind and detail (shortened). */
  violation?: string;
  seedsRun: number;
}

export interface MutantsReport {
  app: MutantApp;
  seeds: number[];
  mutants: MutantResult[];
}

/**
 * The targets of `--mutants` ('all', or names or former names (aliases) separated by commas) of
 * `app`; of an app with systems (kv), those of `system` (default: the app's first, PRISM-KV).
 */
export function mutantTargets(app: string, which: string, system?: string): MutantTarget[] {
  if (!CRASH_APP_NAMES.includes(app)) throw new TypeError(`app must be one of ${CRASH_APP_NAMES.join(', ')}, got ${String(app)}`);
  const a = crashApp(app);
  if (system !== undefined && a.systems !== undefined && !a.systems.includes(system)) throw new TypeError(`system must be one of ${a.systems.join(', ')}, got ${String(system)}`);
  const sys = a.systems === undefined ? undefined : (system ?? a.systems[0]!);
  const all = a.mutants.filter((m) => m.system === undefined || m.system === sys);
  const picked = which === 'all' ? all : which.split(',').map((n) => {
    const m = findMutantEntry(a, n.trim());
    if (m === undefined) throw new TypeError(`unknown mutant '${n}' of --app ${app}; one of ${all.map((x) => x.name).join(', ') || '(none)'}`);
    if (m.system !== undefined && m.system !== sys) throw new TypeError(`mutant '${n}' of --app ${app} is a mutant of --system ${m.system}, not ${String(sys)}`);
    return m;
  });
  return picked.flatMap((m): MutantTarget[] => {
    const on = m.system !== undefined ? { system: m.system } : {};
    if (m.strategies === undefined) return [{ app, name: m.name, strategy: null, ...on }];
    if (m.strategies.length === 0) return [{ app, name: m.name, strategy: null, equivalent: m.equivalent ?? 'no strategy lists it', ...on }];
    return m.strategies.map((s) => ({ app, name: m.name, strategy: s, ...on }));
  });
}

/**
 * Seeded crash runs per seed of the plain sweep of an app with a whole-history check (multi.ts
 * planFor: node crashes and restarts while the clients go on, a second crash after they resumed,
 * client crashes, and — for apps whose clients reconnect, ExplorerApp.drops — connections dropped
 * while the server is up): CrashApp.plainCrashRuns. tx runs TX_CLI_DEFAULTS.crashRuns.
 */
export const PLAIN_CRASH_RUNS: Readonly<Partial<Record<string, number>>> = Object.freeze(Object.fromEntries(CRASH_APPS.flatMap((a) => (a.plainCrashRuns !== undefined ? [[a.name, a.plainCrashRuns]] : []))));

/**
 * The plain sweep's spec of a mutant at `seed` (undefined: the app's default shape): the app's
 * defaults with the mutant switched on, nothing pinned for it; what the sweep adds (crash runs,
 * media errors, the tx workload shape of the seed) is the same for every mutant of the app
 * (CrashApp.plainSpec).
 */
export function plainSpec(t: MutantTarget, seed?: number): SweepSpec {
  const a = crashApp(t.app);
  const explore = { plain: true, violationsMax: 1, schedule: { mode: 'mixed' as const }, ...(a.plainCrashRuns !== undefined ? { crashRuns: a.plainCrashRuns } : {}) };
  return a.plainSpec(t, seed, explore);
}

/** Runs the plain sweep of one mutant over `seeds` in order, stopping at its first violation. */
export async function mutantSweep(t: MutantTarget, seeds: readonly number[]): Promise<MutantResult> {
  const base = { name: t.name, strategy: t.strategy, equivalent: t.equivalent !== undefined };
  if (t.equivalent !== undefined) return { ...base, caught: false, seed: null, images: 0, replay: null, seedsRun: 0 };
  let images = 0;
  let seedsRun = 0;
  for (const seed of seeds) {
    const r = await exploreSeed(plainSpec(t, seed), seed);
    images += r.imagesChecked;
    seedsRun++;
    const v = r.violations[0];
    if (v !== undefined) return { ...base, caught: true, seed, images, replay: v.replay, violation: `${v.kind}: ${v.detail.slice(0, 300)}`, seedsRun };
  }
  return { ...base, caught: false, seed: null, images, replay: null, seedsRun };
}

/** The mutant sweep of `app`: every target of `which` (of `system`, for kv), `jobs` of them at a time (worker threads). */
export async function runMutants(app: string, which: string, seeds: readonly number[], options: { jobs?: number; system?: string; onResult?: (r: MutantResult, done: number, total: number) => void } = {}): Promise<MutantsReport> {
  const targets = mutantTargets(app, which, options.system);
  if (seeds.length === 0) throw new RangeError('seeds must not be empty');
  const jobs = options.jobs ?? 1;
  if (!Number.isSafeInteger(jobs) || jobs < 1 || jobs > 64) throw new RangeError(`jobs must be an integer in [1, 64], got ${String(jobs)}`);
  const results = new Map<MutantTarget, MutantResult>();
  let done = 0;
  const run = targets.filter((t) => t.equivalent === undefined);
  for (const t of targets) if (t.equivalent !== undefined) results.set(t, await mutantSweep(t, seeds));
  const byKey = new Map(run.map((t) => [`${t.name}/${t.strategy ?? ''}`, t]));
  await runPooled(
    run,
    jobs,
    (t) => ({ mutantSweep: t, seeds: [...seeds] }),
    (t) => mutantSweep(t, seeds),
    (r) => {
      results.set(byKey.get(`${r.name}/${r.strategy ?? ''}`)!, r);
      options.onResult?.(r, ++done, run.length);
    },
  );
  return { app: app as MutantApp, seeds: [...seeds], mutants: targets.map((t) => results.get(t)!) };
}

/** The report as text lines: one per mutant, then the tally. */
export function formatMutants(r: MutantsReport): string[] {
  const lines = r.mutants.map((m) => {
    const name = `${m.name}${m.strategy !== null ? ` (${m.strategy})` : ''}`;
    if (m.equivalent) return `${name}: equivalent (not run)`;
    if (!m.caught) return `${name}: NOT CAUGHT by seeds ${r.seeds[0]}..${r.seeds[r.seeds.length - 1]} (${m.images} images)`;
    return `${name}: caught at seed ${m.seed} after ${m.images} images — ${m.violation ?? ''}\n  reproduce: ${m.replay}`;
  });
  const missed = r.mutants.filter((m) => !m.caught && !m.equivalent).length;
  lines.push(`${r.mutants.filter((m) => m.caught).length} caught, ${missed} not caught, ${r.mutants.filter((m) => m.equivalent).length} equivalent`);
  return lines;
}

/** True when every mutant that is not equivalent was caught (the CLI's exit status 0). */
export function allCaught(r: MutantsReport): boolean {
  return r.mutants.every((m) => m.caught || m.equivalent);
}
