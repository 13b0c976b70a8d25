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
import { KV_MUTANTS } from '../../apps/kv/index.js';
import { RS_MUTANTS } from '../../apps/rs/index.js';
import { RSLOCK_MUTANTS } from '../../apps/rslock/index.js';
import { TX_MUTANTS } from '../../apps/tx/index.js';
import type { RpcStrategy } from '../../rpc/index.js';
import { resolveKvWorkload } from './kv.js';
import { REGISTER_MUTANTS, resolveRegisterWorkload } from './register.js';
import { plainRecoveryShape, RECOVERY_MUTANTS, recoveryMutantWorkload, resolveRecoveryWorkload } from './recovery.js';
import { resolveRpcWorkload } from './rpc.js';
import { MUTANTS } from './rpc-mutants.js';
import { resolveRsWorkload } from './rs.js';
import { exploreSeed, runPooled, txCrashSpec, type SweepSpec } from './sweep.js';

export const MUTANT_APPS = ['rpc', 'kv', 'register', 'recovery', 'rs', 'rslock', 'tx'] as const;
export type MutantApp = (typeof MUTANT_APPS)[number];

/** Images per crash point of a plain rs sweep (what `crash-test --app rs` checks by default). */
export const RS_PLAIN_IMAGES_PER_POINT = 14;

/** One mutant of one app (for rpc: under one strategy). */
export interface MutantTarget {
  app: MutantApp;
  name: string;
  /** rpc: the strategy it runs under (null: none, an equivalent mutant); other apps: null. */
  strategy: string | null;
  /** Why no execution can tell it apart (then it is not run). */
  equivalent?: string;
}

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

function names(app: MutantApp): Array<{ name: string; strategies?: readonly string[]; equivalent?: string }> {
  if (app === 'rpc') return MUTANTS.map((m) => ({ name: m.name, strategies: m.strategies, ...(m.equivalent !== undefined ? { equivalent: m.equivalent } : {}) }));
  if (app === 'kv') return KV_MUTANTS.map((m) => ({ name: m.name }));
  if (app === 'register') return REGISTER_MUTANTS.map((m) => ({ name: m.name }));
  if (app === 'rs') return RS_MUTANTS.map((m) => ({ name: m.name }));
  if (app === 'rslock') return RSLOCK_MUTANTS.map((m) => ({ name: m.name }));
  if (app === 'tx') return TX_MUTANTS.map((m) => ({ name: m.name }));
  return RECOVERY_MUTANTS.map((m) => ({ name: m.name })); // recovery
}

/** The targets of `--mutants` ('all', or names separated by commas) of `app`. */
export function mutantTargets(app: string, which: string): MutantTarget[] {
  if (!(MUTANT_APPS as readonly string[]).includes(app)) throw new TypeError(`app must be one of ${MUTANT_APPS.join(', ')}, got ${String(app)}`);
  const all = names(app as MutantApp);
  const picked = which === 'all' ? all : which.split(',').map((n) => {
    const m = all.find((x) => x.name === n.trim());
    if (m === undefined) throw new TypeError(`unknown mutant '${n}' of --app ${app}; one of ${all.map((x) => x.name).join(', ') || '(none)'}`);
    return m;
  });
  return picked.flatMap((m): MutantTarget[] => {
    if (m.strategies === undefined) return [{ app: app as MutantApp, name: m.name, strategy: null }];
    if (m.strategies.length === 0) return [{ app: app as MutantApp, name: m.name, strategy: null, equivalent: m.equivalent ?? 'no strategy lists it' }];
    return m.strategies.map((s) => ({ app: app as MutantApp, name: m.name, strategy: s }));
  });
}

/**
 * Seeded crash runs per seed of the plain sweep of an app with a whole-history check (multi.ts
 * planFor: node crashes and restarts while the clients go on, a second crash after they resumed,
 * client crashes, and — for apps whose clients reconnect, ExplorerApp.drops — connections dropped
 * while the server is up). tx runs TX_CLI_DEFAULTS.crashRuns.
 */
export const PLAIN_CRASH_RUNS: Readonly<Partial<Record<MutantApp, number>>> = Object.freeze({ kv: 12, rs: 12 });

/**
 * The workload shape the plain tx sweep draws for `seed`: every other seed (even seeds) runs hot
 * keys — 2 keys, 4 clients: transactions conflict on every key, the race a validation bug needs —
 * the others the default (4 keys, 3 clients). The same for every mutant (none pins it).
 */
export function plainTxShape(seed: number | undefined): { keys?: number; clients?: number } {
  return seed !== undefined && seed % 2 === 0 ? { keys: 2, clients: 4 } : {};
}

/**
 * The plain sweep's spec of a mutant at `seed` (undefined: the app's default shape): the app's
 * defaults with the mutant switched on, nothing pinned for it; what the sweep adds (crash runs,
 * media errors, the tx workload shape of the seed) is the same for every mutant of the app.
 */
export function plainSpec(t: MutantTarget, seed?: number): SweepSpec {
  const explore = { plain: true, violationsMax: 1, schedule: { mode: 'mixed' as const }, ...(PLAIN_CRASH_RUNS[t.app] !== undefined ? { crashRuns: PLAIN_CRASH_RUNS[t.app] } : {}) };
  switch (t.app) {
    case 'rpc':
      return { app: 'rpc', workload: resolveRpcWorkload({ strategy: t.strategy as RpcStrategy, mutant: t.name }), explore };
    case 'kv':
      // A media error as well (damageTombstone: a linked tombstone item goes bad in every image; its
      // key reads as deleted either way): recovery's rejected-slot repair runs in the plain sweep.
      return { app: 'kv', workload: resolveKvWorkload({ mutant: t.name as never, damageTombstone: true }), explore };
    case 'register':
      return { app: 'register', workload: resolveRegisterWorkload({ mutant: t.name }), explore };
    case 'rs':
      return { app: 'rs', workload: resolveRsWorkload({ mutant: t.name }), explore: { ...explore, imagesPerPoint: RS_PLAIN_IMAGES_PER_POINT } };
    case 'rslock':
      return { app: 'rslock', workload: { mutant: t.name }, explore };
    case 'recovery':
      // The seed's workload shape (plainRecoveryShape: churn on even seeds), 4 images per crash
      // point (a line of two pending words has 4 under the subset line model the draw includes).
      return { app: 'recovery', workload: resolveRecoveryWorkload({ ...plainRecoveryShape(seed), ...recoveryMutantWorkload(t.name) }), explore: { ...explore, imagesPerPoint: 4 } };
    case 'tx': {
      // The workload of a run without a mutant (every option explicit: no TxMutant.pins), then the mutant.
      const base = txCrashSpec(plainTxShape(seed), explore);
      return { ...base, workload: { ...base.workload, mutant: t.name } };
    }
    default:
      throw new TypeError(`the ${t.app} app has no mutants`);
  }
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

/** The mutant sweep of `app`: every target of `which`, `jobs` of them at a time (worker threads). */
export async function runMutants(app: string, which: string, seeds: readonly number[], options: { jobs?: number; onResult?: (r: MutantResult, done: number, total: number) => void } = {}): Promise<MutantsReport> {
  const targets = mutantTargets(app, which);
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
