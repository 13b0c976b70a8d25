/**
 * The app registry: one list of app records (APP_RECORDS), one lookup (appRecord), for everything
 * that picks an app by name — the node host and `pmrpc serve` / `format` / `inspect` (the App a
 * node hosts and what the CLI, the node host and the cluster need of it: NodeAppFlags), and the
 * crash explorer, the mutant sweep, the swarm and `pmrpc crash-test` / `swarm` / `soak` (whether
 * it is crash-testable; its crash part is attached by name from src/testing/crash/apps.ts, which
 * sits above the apps it explores: CRASH_PARTS, typed by CrashAppName so that a crash-testable
 * record without its part, or a part without its record, does not compile). The order of
 * APP_RECORDS is every front end's order (`--app` help, the swarm's seeds).
 * test/crash/registry.test.ts holds that no app name is spelled outside the registry files.
 */
import { PmrpcError, defineErrorCodes, type ErrorCodesOf, type PmemRegion } from '../../pmem/index.js';
import { Layout } from '../../recovery/index.js';
import type { App, AreaHolder } from '../apps/index.js';
import { DIGEST_HANDLERS, rpcApp, RPC_APP_DEFAULTS } from '../apps/rpc/index.js';
import { decodeKvHeader, KV_LAYOUT_DEFAULTS, KV_MAGIC, kvApp, PILAF_MAGIC, type KvSystem } from '../apps/kv/index.js';
import { decodeTxHeader, TX_HEADER_BYTES, txApp } from '../apps/tx/index.js';
import { decodeRsHeader, rsApp } from '../apps/rs/index.js';
import { decodeRsLockHeader, RSLOCK_HEADER_BYTES, rslockApp } from '../apps/rslock/index.js';
import { decodeTxLockHeader, TXLOCK_HEADER_BYTES, txfarmApp, txfordApp } from '../apps/txlock/index.js';

export const NodeErrorCodes = defineErrorCodes('node', {
  /** An app name that no node can host. */
  UNKNOWN_APP: 'PMRPC_ERR_UNKNOWN_APP',
  /** The PM file would be too small for the app with these options. */
  SIZE_TOO_SMALL: 'PMRPC_ERR_SIZE_TOO_SMALL',
  /** A node started on a PM file that does not exist, without `create` (`pmrpc format` it first, or `serve --create`). */
  PM_FILE_MISSING: 'PMRPC_ERR_PM_FILE_MISSING',
});

/** Any app, whatever its options type (the host passes the options through the app's own resolveOptions). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyApp = App<any>;


declare module '../../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof NodeErrorCodes> {}
}


/** The app-specific flags of `pmrpc serve` and `format` (their commander attribute names). */
export type NodeAppFlag = 'strategy' | 'keepResults' | 'maxClients' | 'leaseMs' | 'system' | 'cluster';

/** The values of those flags (what an app builds its options from). */
export interface NodeFlagValues {
  strategy: string;
  keepResults: boolean;
  system: string;
  maxClients?: number | undefined;
  leaseMs?: number | undefined;
}

/**
 * The layout options of a new PM file (a cluster file's node options, `pmrpc serve --kv-slots` …)
 * that belong to an app: each names the app option it sets (`int`: a positive integer, checked
 * before the app's own rules), and `options` builds the app options from those values (`base`:
 * the node's other app options).
 */
export interface NodeLayout {
  readonly fields: Readonly<Record<string, { readonly to: string; readonly int: boolean }>>;
  options(values: Record<string, unknown>, base: Record<string, unknown>): Record<string, unknown>;
}

/** How Cluster.connect reaches a node of the app: a RemoteRpcClient, a PRISM-KV (or Pilaf) client, or a raw queue pair and the welcome. */
export type NodeClientKind = 'rpc-client' | 'kv-client' | 'queue-pair';

/** What a hostable app's record tells the CLI, the node host and the cluster. */
export interface NodeAppFlags {
  /** The app-specific flags that configure it (another app's is refused: PMRPC_ERR_OPTION_NOT_APPLICABLE). */
  flags: readonly NodeAppFlag[];
  /** A node of a cluster (`--cluster FILE`): its options come from the cluster file, and it runs the shard's resolver agent. */
  clusterShard: boolean;
  /** Its state is a connection table and a redo log (inspect prints them and the replay plan, not a recovered summary). */
  connectionTable: boolean;
  /** Its app options from the flags (the rest are the app's defaults). */
  options(o: NodeFlagValues): object;
  /** What its start line (and the demo's) adds from the flags. */
  startLine(o: NodeFlagValues): Record<string, string>;
  /** Its layout options (undefined: none). */
  layout?: NodeLayout;
  /** The app options a cluster file's node options give a shard (clusterShard; its index and the shard count are the cluster's). */
  clusterOptions?(o: Readonly<Record<string, unknown>>): Record<string, unknown>;
  /** How Cluster.connect reaches it (undefined: Cluster.connect has no client for it). */
  connect?: NodeClientKind;
  /** `pmrpc inspect`: its layout as its own header at offset 0 records it (nothing past the header is read). */
  inspectLayout(region: PmemRegion, h: AreaHolder): Record<string, unknown>;
  /** `pmrpc inspect`: the app options that open the file as it is (what its header says, where the app checks it against its options). */
  openOptions?(h: AreaHolder, layout: Record<string, unknown>): object;
  /** The node's metrics: the arena use it reports cheaply (from its inspect() and geometry; undefined: none). */
  arena?(inspect: Record<string, unknown>, geometry: Record<string, unknown>): { used: number; capacity: number } | undefined;
}

/** The systems of the kv app: PRISM-KV, or the Pilaf-style baseline. */
export const KV_SYSTEMS: readonly KvSystem[] = Object.freeze(['prism', 'pilaf']);

const NO_FLAGS = Object.freeze({ flags: [] as readonly NodeAppFlag[], clusterShard: false, connectionTable: false, options: () => ({}), startLine: () => ({}) });

/** A finite number, or undefined. */
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** A txfarm or txford shard opens with the shard index and count its header records. */
const shardOpenOptions = (_h: AreaHolder, layout: Record<string, unknown>): object => ({ shard: layout.shard, shards: layout.shards });

/** The node part of each hostable app, by name (APP_RECORDS carries it). */
const NODE_PARTS = {
  rpc: {
    flags: ['strategy', 'keepResults', 'maxClients', 'leaseMs'],
    clusterShard: false,
    connectionTable: true,
    // The rpc app serves the demo workload (append-digest).
    options: (o: NodeFlagValues) => ({
      strategy: o.strategy, keepResults: o.keepResults, handlers: DIGEST_HANDLERS,
      ...(o.maxClients === undefined ? {} : { layout: { ...RPC_APP_DEFAULTS.layout, maxClients: o.maxClients } }),
      ...(o.leaseMs === undefined ? {} : { leaseMs: o.leaseMs }),
    }),
    startLine: (o: NodeFlagValues) => ({ strategy: o.strategy }),
    connect: 'rpc-client',
    inspectLayout: (region) => {
      const l = Layout.open(region);
      return { ...l.geometry, epoch: l.epoch, nextClientId: l.nextClientId };
    },
    arena: (r) => {
      const capacity = num(((r.geometry ?? {}) as Record<string, unknown>).maxClients);
      return Array.isArray(r.clients) && capacity !== undefined ? { used: r.clients.length, capacity } : undefined;
    },
  },
  kv: {
    ...NO_FLAGS,
    flags: ['system'],
    options: (o: NodeFlagValues) => ({ system: o.system }),
    startLine: (o: NodeFlagValues) => ({ system: o.system }),
    layout: {
      fields: { kvSlots: { to: 'slotCount', int: true }, kvProbeSlots: { to: 'probeSlots', int: true }, kvClasses: { to: 'classes', int: false } },
      options: (v, base) => ({ layout: { ...KV_LAYOUT_DEFAULTS, ...(base.layout as object | undefined), ...v } }),
    },
    connect: 'kv-client',
    inspectLayout: (region, h) => ({ system: h.system, ...decodeKvHeader(region.load(0, 128), 0, h.system === 'pilaf' ? PILAF_MAGIC : KV_MAGIC) }),
    openOptions: (h) => ({ system: h.system }),
    arena: (r, g) => {
      const capacity = num(g.slotCount);
      return r.items instanceof Map && capacity !== undefined ? { used: r.items.size, capacity } : undefined;
    },
  },
  rs: {
    ...NO_FLAGS,
    layout: { fields: { rsBlocks: { to: 'blocks', int: true } }, options: (v, base) => ({ layout: { ...(base.layout as object | undefined), ...v } }) },
    connect: 'queue-pair',
    inspectLayout: (region) => ({ ...decodeRsHeader(region.load(0, 128), 0) }),
    arena: (r) => {
      const used = num(r.written);
      const capacity = num(r.blocks);
      return used !== undefined && capacity !== undefined ? { used, capacity } : undefined;
    },
  },
  rslock: { ...NO_FLAGS, inspectLayout: (region) => ({ ...decodeRsLockHeader(region.load(0, RSLOCK_HEADER_BYTES), 0) }) },
  // A tx node's lease (--lease-ms) paces its resolver agent.
  tx: {
    ...NO_FLAGS,
    flags: ['leaseMs', 'cluster'],
    clusterShard: true,
    layout: { fields: { txItems: { to: 'items', int: true } }, options: (v) => ({ ...v }) },
    clusterOptions: (o) => ({
      ...(o.keysPerShard === undefined ? {} : { keysPerShard: o.keysPerShard }),
      ...(o.txClients === undefined ? {} : { clients: o.txClients }),
      ...(o.txItems === undefined ? {} : { items: o.txItems }),
      ...(o.txValue === undefined ? {} : { value: o.txValue }),
      ...(o.initialBalance === undefined ? {} : { initialBalance: o.initialBalance }),
    }),
    inspectLayout: (region) => ({ ...decodeTxHeader(region.load(0, TX_HEADER_BYTES), 0) }),
    openOptions: shardOpenOptions,
    arena: (r, g) => {
      const capacity = num(g.items);
      const free = num(r.freeItems);
      return capacity !== undefined && free !== undefined ? { used: capacity - free, capacity } : undefined;
    },
  },
  txfarm: { ...NO_FLAGS, inspectLayout: (region) => ({ ...decodeTxLockHeader(region.load(0, TXLOCK_HEADER_BYTES), 0, 'farm') }), openOptions: shardOpenOptions },
  txford: { ...NO_FLAGS, inspectLayout: (region) => ({ ...decodeTxLockHeader(region.load(0, TXLOCK_HEADER_BYTES), 0, 'ford') }), openOptions: shardOpenOptions },
} satisfies Record<string, NodeAppFlags>;


/** One app of the registry. */
export interface AppRecord {
  readonly name: string;
  /** The App a node hosts, and what the CLI, the node host and the cluster need of it (undefined: not hostable — the test-only register, recovery/ alone). */
  readonly host?: { readonly app: AnyApp; readonly flags: NodeAppFlags };
  /** The crash explorer runs it (`crash-test --app`): its crash part is CRASH_PARTS[name] (src/testing/crash/apps.ts). */
  readonly crash: boolean;
}

/** Every app, in the front ends' order (`--app` help; the swarm's seeds mix an app's index among the swarm's apps). */
export const APP_RECORDS = Object.freeze([
  { name: 'rpc', host: { app: rpcApp, flags: NODE_PARTS.rpc }, crash: true },
  { name: 'kv', host: { app: kvApp, flags: NODE_PARTS.kv }, crash: true },
  { name: 'register', crash: true },
  { name: 'recovery', crash: true },
  { name: 'rs', host: { app: rsApp, flags: NODE_PARTS.rs }, crash: true },
  { name: 'rslock', host: { app: rslockApp, flags: NODE_PARTS.rslock }, crash: true },
  { name: 'tx', host: { app: txApp, flags: NODE_PARTS.tx }, crash: true },
  { name: 'txfarm', host: { app: txfarmApp, flags: NODE_PARTS.txfarm }, crash: false },
  { name: 'txford', host: { app: txfordApp, flags: NODE_PARTS.txford }, crash: false },
] as const satisfies readonly AppRecord[]);

type Records = (typeof APP_RECORDS)[number];
/** Every app's name. */
export type AppName = Records['name'];
/** The apps a node hosts. */
export type NodeAppName = Extract<Records, { host: object }>['name'];
/** The crash-testable apps (each has its part in CRASH_PARTS). */
export type CrashAppName = Extract<Records, { crash: true }>['name'];

/** Every app's name, in registry order. */
export const APP_NAMES: readonly AppName[] = Object.freeze(APP_RECORDS.map((r) => r.name));

/** The record of the app called `name` (undefined: no such app). The one lookup. */
export function findAppRecord(name: string): AppRecord | undefined {
  return typeof name === 'string' ? APP_RECORDS.find((r) => r.name === name) : undefined;
}

/** The record of the app called `name`, or PMRPC_ERR_UNKNOWN_APP naming the apps of the registry. */
export function appRecord(name: string): AppRecord {
  const r = findAppRecord(name);
  if (r === undefined) throw new PmrpcError(NodeErrorCodes.UNKNOWN_APP, `unknown app ${JSON.stringify(name)}: one of ${APP_NAMES.join(', ')}`);
  return r;
}

const HOSTED = APP_RECORDS.filter((r): r is Extract<Records, { host: object }> => 'host' in r);

/** The apps a node hosts, by name (derived from APP_RECORDS). */
export const NODE_APPS: Readonly<Record<string, AnyApp>> = Object.freeze(Object.fromEntries(HOSTED.map((r) => [r.name, r.host.app])));

/** The names of `pmrpc serve --app` (a cluster file's `app`), in registry order. */
export const NODE_APP_NAMES: readonly string[] = Object.freeze(HOSTED.map((r) => r.name));

/** What the CLI, the node host and the cluster need of each hostable app, by name (derived from APP_RECORDS). */
export const NODE_APP_FLAGS: Readonly<Record<NodeAppName, NodeAppFlags>> = Object.freeze(Object.fromEntries(HOSTED.map((r): [string, NodeAppFlags] => [r.name, r.host.flags])) as Record<NodeAppName, NodeAppFlags>);

/** The app a node hosts called `name`, or PMRPC_ERR_UNKNOWN_APP (an unknown name, or an app no node hosts). */
export function appByName(name: string): AnyApp {
  const host = findAppRecord(name)?.host;
  if (host === undefined) throw new PmrpcError(NodeErrorCodes.UNKNOWN_APP, `unknown app ${JSON.stringify(name)}: a node hosts one of ${NODE_APP_NAMES.join(', ')}`);
  return host.app;
}

/** The node part of the app called `name`, or undefined (an App a node host was given that is not in the registry, or not hostable). */
export function findNodeAppFlags(name: string): NodeAppFlags | undefined {
  return findAppRecord(name)?.host?.flags;
}

/** What the CLI configures of the app called `name` (PMRPC_ERR_UNKNOWN_APP for an unknown one, or one no node hosts). */
export function nodeAppFlags(name: string): NodeAppFlags {
  appByName(name);
  return findAppRecord(name)!.host!.flags;
}
