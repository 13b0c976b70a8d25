/**
 * The crash part of the app registry (src/node/apps.ts: APP_RECORDS, one list of names, one
 * lookup): one record per crash-testable app (rpc, kv — PRISM-KV, with Pilaf as its `system` —,
 * register, recovery, rs, rslock, tx), attached by name (CRASH_PARTS, typed by the registry's
 * CrashAppName: a crash-testable app without its part, or a part the registry does not mark
 * crash-testable, does not compile). A part says everything the explorer's front ends need to know
 * about its app: its help text, its mutants (what `--list-mutants` prints, how `--mutant` and the
 * mutant sweep `--mutants` run them, the old names kept as aliases, kv's per system), how a sweep
 * spec is built from the CLI's options, what the plain mutant sweep runs, whether exhaustive mode
 * and crash runs apply, what the swarm draws, and what `pmrpc soak` runs of it. `pmrpc
 * crash-test`, `pmrpc swarm`, `pmrpc soak` (soak.ts), the sweep (sweep.ts), the mutant sweep
 * (mutants.ts) and the swarm (swarm.ts) pick apps here, through the registry's lookup, and nowhere
 * else (test/crash/registry.test.ts holds that no app name is spelled outside the registry files).
 */
import { KV_MUTANTS, PILAF_MUTANTS } from '../../apps/kv/index.js';
import { APP_RECORDS, findAppRecord, KV_SYSTEMS, type CrashAppName } from '../../node/index.js';
import { RS_MUTANTS } from '../../apps/rs/index.js';
import { RSLOCK_MUTANTS } from '../../apps/rslock/index.js';
import { TX_MUTANTS } from '../../apps/tx/index.js';
import type { RpcStrategy } from '../../rpc/index.js';
import { resolveExploreOptions, type ExploreOptions, type ExplorerApp } from './explorer.js';
import { kvExplorerApp, resolveKvWorkload, type KvWorkloadOptions } from './kv.js';
import { plainRecoveryShape, recoveryExplorerApp, recoveryMutantWorkload, resolveRecoveryWorkload, RECOVERY_MUTANTS } from './recovery.js';
import { registerExplorerApp, resolveRegisterWorkload } from './register.js';
import { REGISTER_MUTANTS } from '../../apps/register/index.js';
import { resolveRpcWorkload, rpcExplorerApp } from './rpc.js';
import { MUTANTS } from './rpc-mutants.js';
import { resolveRsWorkload, rsExplorerApp } from './rs.js';
import { rslockExplorerApp } from './rslock.js';
import { resolveTxWorkload, TX_CLI_DEFAULTS, txExplorerApp, type TxWorkloadOptions } from './tx.js';
import { KV_SOAK, RS_SOAK, TX_SOAK, type SoakEntry } from '../soak/index.js';
import { KV_REAL_CRASH, RPC_REAL_CRASH, type RealCrashEntry } from '../../server/index.js';
import { RS_REAL_CRASH, TX_REAL_CRASH } from '../../cluster/index.js';

/** Explorer options a spec carries (serialisable: no clock, no callbacks, no seed). */
export type SpecExplore = Partial<Omit<ExploreOptions, 'clock' | 'onProgress' | 'seed'>>;

/** A serialisable description of an app and its explorer options (what a sweep's worker needs): `app` names a record of CRASH_APPS. */
export interface SweepSpec {
  app: string;
  workload: object;
  explore: SpecExplore;
}

/** The options of `pmrpc crash-test` a record builds its workload from (undefined: not given). */
export interface CrashTestFlags {
  strategy: string;
  system: string;
  nodes?: number | undefined;
  requests?: number | undefined;
  clients?: number | undefined;
  churn?: number | undefined;
  batch?: number | undefined;
  registers?: number | undefined;
  pattern?: string | undefined;
  workload?: string | undefined;
  keys?: number | undefined;
  agent: boolean;
  mutant?: string | undefined;
  resumeEvery?: number | undefined;
  damageTombstone?: boolean | undefined;
}

/** One mutant as the front ends see it. */
export interface MutantEntry {
  /** Its name (kebab-case; what `--list-mutants` prints and replay commands name). */
  name: string;
  /** Former names `--mutant` and `--mutants` still accept (resolved to `name`). */
  aliases: readonly string[];
  /** What `--list-mutants` prints after the tab: the strategies it is caught under (rpc, kv: 'none' for an equivalent mutant), or the step it removes. */
  listed: string;
  /** rpc: the mutant sweep runs it once per strategy listed (none: equivalent). */
  strategies?: readonly string[];
  /** Why no execution of the workload can tell it apart (then the mutant sweep does not run it). */
  equivalent?: string;
  /** kv: the system it is a mutant of (CrashApp.systems; the mutant sweep runs those of `--system`). */
  system?: string;
}

/** One mutant of one app in the mutant sweep (for rpc: under one strategy). */
export interface MutantTarget {
  app: string;
  name: string;
  /** rpc: the strategy it runs under (null: none, an equivalent mutant); other apps: null. */
  strategy: string | null;
  /** Why no execution can tell it apart (then it is not run). */
  equivalent?: string;
  /** kv: the system it runs on (MutantEntry.system). */
  system?: string;
}

/** What the swarm draws and runs for an app. */
export interface SwarmEntry {
  /** Operations per client at the default virtual seconds (they scale with `seconds`). */
  baseOps: number;
  /** The workload variants drawn per seed (tx: append or bank; rpc: the strategy); none: no draw. */
  variants?: readonly string[];
  /** Its clients reconnect a live node, so runs draw dropped connections. */
  drops: boolean;
  /** The workload of a run: `ops` per client, the drawn variant ('' when none), the mutant. */
  workload(ops: number, variant: string, mutant: string | undefined): object;
}

/** A crash-testable app. */
export interface CrashApp {
  readonly name: string;
  /** What `--app` says of it. */
  readonly help: string;
  readonly mutants: readonly MutantEntry[];
  /** kv: its systems (`--system`), the default first; each mutant names its own (MutantEntry.system). Undefined: one system. */
  readonly systems?: readonly string[];
  /** It has a whole-history check, which crash runs (`--crash-runs`, `--crash-plan`) need. */
  readonly crashRuns: boolean;
  /** `--damage-tombstone` (a media error in every image) applies. */
  readonly mediaDamage: boolean;
  /** Default images per crash point of `crash-test` (undefined: the explorer's). */
  readonly imagesPerPoint?: number;
  /** Crash runs per seed of the plain mutant sweep (undefined: none, or the app's own default). */
  readonly plainCrashRuns?: number;
  /** The explorer app of a workload. */
  explorerApp(workload: object): ExplorerApp<unknown>;
  /** The spec `crash-test` runs, from its flags and the explorer options given (the mutant already resolved to its name). */
  spec(f: CrashTestFlags, given: Partial<ExploreOptions>): SweepSpec;
  /** The plain mutant sweep's spec of mutant `t` at `seed` (undefined: the app's default shape), on the sweep's explorer options. */
  plainSpec(t: MutantTarget, seed: number | undefined, explore: SpecExplore): SweepSpec;
  /** `--exhaustive`: the tiny workload's explorer app (undefined: exhaustive mode does not apply). */
  exhaustive?(f: CrashTestFlags): () => ExplorerApp<unknown>;
  /** What the report's first line adds after the seeds (e.g. the strategy). */
  header?(f: CrashTestFlags): string;
  /** What the JSON report adds (e.g. {strategy}). */
  jsonFields?(f: CrashTestFlags): Record<string, string>;
  /** The swarm's draws and workload (undefined: the swarm does not run it). */
  readonly swarm?: SwarmEntry;
  /** `pmrpc soak`: its minimal deployment, workload and item bounds (undefined: the soak does not drive it). */
  readonly soak?: SoakEntry;
  /** Its part of a real-crash (SIGKILL) run — workload, kill points, inspection after a restart, checks — on the one loop, src/server/supervisor.ts runRealCrashApp (undefined: no real-crash run). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly realCrash?: RealCrashEntry<any, unknown>;
  /** `pmrpc demo --app`: what --app says of the demo, its realCrash run (undefined: no demo; cli/demo.ts presents the run by its entry). */
  readonly demo?: { readonly help: string };
}

/** Images per crash point of rs in `crash-test` and in its plain mutant sweep: one seed checks >= 10,000 images (issue 12). */
export const RS_IMAGES_PER_POINT = 14;

/** The RPC strategies the swarm draws: those correct under every NIC configuration (raw needs DDIO off; none never persists). */
const SWARM_RPC_STRATEGIES: readonly RpcStrategy[] = ['wflush', 'sflush', 'wrflush', 'srflush', 'gpspm', 'farm', 'darpc'];

/** The explorer options of a spec, resolved from those given (without clock, callbacks and seed). */
function specExplore(given: Partial<ExploreOptions>): SpecExplore {
  const { clock: _c, onProgress: _p, seed: _s, ...explore } = resolveExploreOptions(given);
  return explore;
}

/** Entries of a mutant list: `listed` from the strategies (rpc, kv) or the step. */
function entries(ms: ReadonlyArray<{ name: string; aliases?: readonly string[]; step: string; strategies?: readonly string[]; equivalent?: string }>, listed: 'strategies' | 'step', perStrategy = false): MutantEntry[] {
  return ms.map((m) => ({
    name: m.name,
    aliases: m.aliases ?? [],
    listed: listed === 'step' ? m.step : m.strategies !== undefined && m.strategies.length > 0 ? m.strategies.join(',') : 'none',
    ...(perStrategy && m.strategies !== undefined ? { strategies: m.strategies } : {}),
    ...(m.equivalent !== undefined ? { equivalent: m.equivalent } : {}),
  }));
}

/**
 * What `crash-test --app tx` explores, from its flags (a workload, explorer options as given;
 * undefined = not given): a mutant runs with DDIO on unless pinned, with TX_CLI_DEFAULTS' images
 * per point and crash runs, and its own pins and schedule (none of them in a plain run, `given.plain`) (TxMutant.pins, .explore, applied by
 * resolveTxWorkload and the explorer). The CLI and test/deep/tx-mutants.test.ts both build their
 * run here and explore it with exploreSeed, so the test runs exactly what the CLI runs.
 */
export function txCrashSpec(workload: Partial<TxWorkloadOptions>, given: Partial<ExploreOptions> = {}): SweepSpec & { workload: TxWorkloadOptions } {
  const pins = { ...(given.pins ?? {}) };
  if (workload.mutant !== undefined && pins.ddio === undefined && given.plain !== true) pins.ddio = true; // the configuration in which a missing persistence step shows
  const explore = specExplore({
    ...given,
    pins,
    imagesPerPoint: given.imagesPerPoint ?? TX_CLI_DEFAULTS.imagesPerPoint,
    crashRuns: given.crashRuns ?? TX_CLI_DEFAULTS.crashRuns,
  });
  return { app: TX.name, workload: resolveTxWorkload(workload), explore };
}

/**
 * The workload shape the plain tx sweep draws for `seed`: every other seed (even seeds) runs hot
 * keys — 2 keys, 4 clients: transactions conflict on every key, the race a validation bug needs —
 * the others the default (4 keys, 3 clients). The same for every mutant (none pins it).
 */
export function plainTxShape(seed: number | undefined): { keys?: number; clients?: number } {
  return seed !== undefined && seed % 2 === 0 ? { keys: 2, clients: 4 } : {};
}

const RPC: CrashApp & { readonly name: 'rpc' } = {
  name: 'rpc',
  help: 'durable RPC, per --strategy',
  mutants: entries(MUTANTS, 'strategies', true),
  crashRuns: false,
  mediaDamage: false,
  explorerApp: (w) => rpcExplorerApp(w) as ExplorerApp<unknown>,
  spec: (f, given) => ({ app: RPC.name, workload: resolveRpcWorkload({ strategy: f.strategy as RpcStrategy, requests: f.requests, clients: f.clients, mutant: f.mutant, resumeEvery: f.resumeEvery, nodes: f.nodes }), explore: specExplore(given) }),
  plainSpec: (t, _seed, explore) => ({ app: RPC.name, workload: resolveRpcWorkload({ strategy: t.strategy as RpcStrategy, mutant: t.name }), explore }),
  header: (f) => `, strategy ${f.strategy}`,
  jsonFields: (f) => ({ strategy: f.strategy }),
  swarm: {
    baseOps: 72,
    variants: SWARM_RPC_STRATEGIES,
    drops: true,
    workload: (ops, variant, mutant) => ({ strategy: variant as RpcStrategy, nodes: 2, clients: 2, requests: ops * 4, mutant }),
  },
  realCrash: RPC_REAL_CRASH,
  demo: { help: 'durable RPC, one node' },
};

/** The kv workload of the CLI's flags (the tiny exhaustive one with `tiny`). */
function kvWorkload(f: CrashTestFlags, tiny: boolean): KvWorkloadOptions {
  const system = f.system as KvWorkloadOptions['system'];
  const mutant = f.mutant as KvWorkloadOptions['mutant'];
  if (tiny) return resolveKvWorkload({ system, mutant, clients: f.clients ?? 2, opsPerClient: 2, keys: 2 });
  return resolveKvWorkload({ system, mutant, clients: f.clients, damageTombstone: f.damageTombstone === true });
}

const KV: CrashApp & { readonly name: 'kv' } = {
  name: 'kv',
  help: 'PRISM-KV: put/get/delete chains, allocator recovery, durable linearizability; --system pilaf: the Pilaf baseline',
  // PRISM-KV's mutants, then the Pilaf baseline's (listed `pilaf`: `--system pilaf --mutants all` runs them).
  mutants: [...entries(KV_MUTANTS, 'strategies').map((m) => ({ ...m, system: KV_SYSTEMS[0]! })), ...PILAF_MUTANTS.map((m) => ({ name: m.name, aliases: [], listed: 'pilaf', system: 'pilaf' }))],
  systems: KV_SYSTEMS,
  crashRuns: true,
  mediaDamage: true,
  plainCrashRuns: 12,
  explorerApp: (w) => kvExplorerApp(w) as ExplorerApp<unknown>,
  spec: (f, given) => ({ app: KV.name, workload: kvWorkload(f, false), explore: specExplore(given) }),
  // A media error as well (damageTombstone: a linked tombstone item goes bad in every image; its
  // key reads as deleted either way): recovery's rejected-slot repair runs in the plain sweep.
  plainSpec: (t, _seed, explore) => ({ app: KV.name, workload: resolveKvWorkload({ system: t.system as KvWorkloadOptions['system'] | undefined, mutant: t.name as KvWorkloadOptions['mutant'], damageTombstone: true }), explore }),
  exhaustive: (f) => {
    const w = kvWorkload(f, true);
    return () => kvExplorerApp(w) as ExplorerApp<unknown>;
  },
  jsonFields: (f) => ({ system: f.system }),
  swarm: { baseOps: 156, drops: true, workload: (ops, _variant, mutant) => ({ clients: 3, opsPerClient: ops, ...(mutant !== undefined ? { mutant } : {}) }) },
  soak: KV_SOAK,
  realCrash: KV_REAL_CRASH,
  demo: { help: 'a PRISM-KV cluster' },
};

const REGISTER: CrashApp & { readonly name: 'register' } = {
  name: 'register',
  help: 'the test-only replicated register on --nodes nodes: crash runs, exhaustive mode',
  mutants: entries(REGISTER_MUTANTS, 'step'),
  crashRuns: true,
  mediaDamage: false,
  explorerApp: (w) => registerExplorerApp(w) as ExplorerApp<unknown>,
  spec: (f, given) => ({
    app: REGISTER.name,
    workload: resolveRegisterWorkload({ nodes: f.nodes, clients: f.clients, opsPerClient: f.requests, registers: f.registers, mutant: f.mutant, pattern: f.pattern as 'mixed' | 'writer-reader' | undefined }),
    explore: specExplore(given),
  }),
  plainSpec: (t, _seed, explore) => ({ app: REGISTER.name, workload: resolveRegisterWorkload({ mutant: t.name }), explore }),
  exhaustive: (f) => {
    const w = resolveRegisterWorkload({ nodes: f.nodes ?? 2, clients: f.clients ?? 2, opsPerClient: f.requests ?? 1, registers: f.registers, mutant: f.mutant, pattern: (f.pattern ?? 'writer-reader') as 'mixed' | 'writer-reader' });
    return () => registerExplorerApp(w) as ExplorerApp<unknown>;
  },
};

const RECOVERY: CrashApp & { readonly name: 'recovery' } = {
  name: 'recovery',
  help: 'recovery/ alone: rings and redo log driven without a NIC',
  mutants: entries(RECOVERY_MUTANTS, 'step'),
  crashRuns: false,
  mediaDamage: false,
  explorerApp: (w) => recoveryExplorerApp(w) as ExplorerApp<unknown>,
  spec: (f, given) => ({
    app: RECOVERY.name,
    workload: resolveRecoveryWorkload({ clients: f.clients, requestsPerClient: f.requests, churn: f.churn, batchMax: f.batch, ...(f.mutant !== undefined ? recoveryMutantWorkload(f.mutant) : {}) }),
    explore: specExplore(given),
  }),
  // The seed's workload shape (plainRecoveryShape: churn on even seeds), 4 images per crash
  // point (a line of two pending words has 4 under the subset line model the draw includes).
  plainSpec: (t, seed, explore) => ({ app: RECOVERY.name, workload: resolveRecoveryWorkload({ ...plainRecoveryShape(seed), ...recoveryMutantWorkload(t.name) }), explore: { ...explore, imagesPerPoint: 4 } }),
};

const RS: CrashApp & { readonly name: 'rs' } = {
  name: 'rs',
  help: 'PRISM-RS: ABD over durable chains on --nodes replicas (default 3), --registers blocks (default 2); crash runs',
  mutants: entries(RS_MUTANTS, 'step'),
  crashRuns: true,
  mediaDamage: false,
  imagesPerPoint: RS_IMAGES_PER_POINT,
  plainCrashRuns: 12,
  explorerApp: (w) => rsExplorerApp(w) as ExplorerApp<unknown>,
  spec: (f, given) => ({ app: RS.name, workload: resolveRsWorkload({ replicas: f.nodes, clients: f.clients, opsPerClient: f.requests, blocks: f.registers, mutant: f.mutant }), explore: specExplore(given) }),
  plainSpec: (t, _seed, explore) => ({ app: RS.name, workload: resolveRsWorkload({ mutant: t.name }), explore: { ...explore, imagesPerPoint: RS_IMAGES_PER_POINT } }),
  swarm: { baseOps: 72, drops: true, workload: (ops, _variant, mutant) => ({ replicas: 3, clients: 3, opsPerClient: ops, blocks: 2, mutant }) },
  soak: RS_SOAK,
  realCrash: RS_REAL_CRASH,
};

const RSLOCK: CrashApp & { readonly name: 'rslock' } = {
  name: 'rslock',
  help: "PRISM-RS's lock-based baseline on --nodes replicas, every replica crashed at once",
  mutants: entries(RSLOCK_MUTANTS, 'step'),
  crashRuns: false,
  mediaDamage: false,
  explorerApp: (w) => rslockExplorerApp(w) as ExplorerApp<unknown>,
  spec: (f, given) => ({ app: RSLOCK.name, workload: { nodes: f.nodes, clients: f.clients, opsPerClient: f.requests, registers: f.registers, mutant: f.mutant }, explore: specExplore(given) }),
  plainSpec: (t, _seed, explore) => ({ app: RSLOCK.name, workload: { mutant: t.name }, explore }),
};

const TX: CrashApp & { readonly name: 'tx' } = {
  name: 'tx',
  help: 'PRISM-TX on --nodes shards: list-append or bank transactions, resolution, crash runs, mutants; docs/tx.md',
  mutants: entries(TX_MUTANTS, 'step'),
  crashRuns: true,
  mediaDamage: false,
  explorerApp: (w) => txExplorerApp(w) as ExplorerApp<unknown>,
  // One path with test/deep/tx-mutants.test.ts: a mutant's DDIO pin and the TX defaults are applied there.
  spec: (f, given) => txCrashSpec({ workload: f.workload as TxWorkloadOptions['workload'] | undefined, shards: f.nodes, clients: f.clients, txPerClient: f.requests, keys: f.keys, mutant: f.mutant, agent: f.agent }, given),
  plainSpec: (t, seed, explore) => {
    // The workload of a run without a mutant (every option explicit: no TxMutant.pins), then the mutant.
    const base = txCrashSpec(plainTxShape(seed), explore);
    return { ...base, workload: { ...base.workload, mutant: t.name } };
  },
  swarm: {
    baseOps: 48,
    variants: ['append', 'bank'],
    drops: true,
    workload: (ops, variant, mutant) => ({ workload: variant as TxWorkloadOptions['workload'], shards: 2, clients: 3, txPerClient: ops, mutant }),
  },
  soak: TX_SOAK,
  realCrash: TX_REAL_CRASH,
};

/** The crash part of every crash-testable app of the registry, by name (each part's name is its key). */
const CRASH_PARTS: { readonly [K in CrashAppName]: CrashApp & { readonly name: K } } = Object.freeze({ rpc: RPC, kv: KV, register: REGISTER, recovery: RECOVERY, rs: RS, rslock: RSLOCK, tx: TX } as const);

/** Every crash-testable app, in registry order (APP_RECORDS: what `--app` lists; the swarm's order too: its seeds mix the app's index among SWARM_APPS). */
export const CRASH_APPS: readonly CrashApp[] = Object.freeze(APP_RECORDS.filter((r): r is Extract<(typeof APP_RECORDS)[number], { crash: true }> => r.crash).map((r) => CRASH_PARTS[r.name]));

/** The names of `crash-test --app`. */
export const CRASH_APP_NAMES: readonly string[] = Object.freeze(CRASH_APPS.map((a) => a.name));

/** The apps of `pmrpc demo --app` (a demo and a real-crash run), in registry order. */
export const DEMO_APP_NAMES: readonly string[] = Object.freeze(CRASH_APPS.filter((a) => a.demo !== undefined && a.realCrash !== undefined).map((a) => a.name));

/** The apps the swarm runs (those with a SwarmEntry), in registry order. */
export const SWARM_APP_NAMES: readonly string[] = Object.freeze(CRASH_APPS.filter((a) => a.swarm !== undefined).map((a) => a.name));

/** The crash-test app called `name`, through the registry's lookup (TypeError naming the choices for an unknown or not crash-testable app). */
export function crashApp(name: string): CrashApp {
  const r = findAppRecord(name);
  if (r === undefined || !r.crash) throw new TypeError(`app must be one of ${CRASH_APP_NAMES.join(', ')}, got ${String(name)}`);
  return CRASH_PARTS[r.name as CrashAppName];
}

/** The record of a swarm app. */
export function swarmEntry(name: string): SwarmEntry {
  const s = crashApp(name).swarm;
  if (s === undefined) throw new TypeError(`app must be one of ${SWARM_APP_NAMES.join(', ')}, got ${String(name)}`);
  return s;
}

/** The mutant of `app` called `name` or one of its aliases, or undefined. */
export function findMutantEntry(app: CrashApp, name: string): MutantEntry | undefined {
  return app.mutants.find((m) => m.name === name) ?? app.mutants.find((m) => m.aliases.includes(name));
}

/** The name of `app`'s mutant `name` (an alias resolves to its name); TypeError naming the choices for an unknown one (`what`: the option named). */
export function mutantName(app: CrashApp, name: string, what = 'mutant'): string {
  const m = findMutantEntry(app, name);
  if (m === undefined) throw new TypeError(`${what} must be one of ${app.mutants.map((x) => x.name).join(', ') || '(none)'}, got ${String(name)} (unknown mutant ${String(name)} of --app ${app.name})`);
  return m.name;
}

/** Apps, as text for a help or an error: "'a', 'b' or 'c'" (quoted) or "a, b or c". */
export function listApps(names: readonly string[], quoted = false): string {
  const q = names.map((n) => (quoted ? `'${n}'` : n));
  return q.length <= 1 ? q.join('') : `${q.slice(0, -1).join(', ')} or ${q[q.length - 1]!}`;
}

/** The `--app` help of `crash-test`, from the records. */
export function crashAppHelp(): string {
  return `the app: ${listApps(CRASH_APPS.map((a) => `'${a.name}' (${a.help})`))}`;
}

/** The explorer app of a spec. */
export function appOf(spec: SweepSpec): ExplorerApp<unknown> {
  return crashApp(spec.app).explorerApp(spec.workload);
}
