/**
 * The apps a node can host, by name (what `pmrpc serve --app NAME` and a cluster file's `app`
 * accept): rpc, kv, rs, rslock, tx, txfarm, txford — and, per app, what the CLI's `serve` and
 * `format` configure of it (NODE_APP_FLAGS). The one table of hostable apps; the crash-testable
 * apps are the other registry (src/testing/crash/apps.ts).
 */
import { PmrpcError, defineErrorCodes, type ErrorCodesOf } from '../../pmem/index.js';
import type { App } from '../apps/index.js';
import { DIGEST_HANDLERS, rpcApp, RPC_APP_DEFAULTS } from '../apps/rpc/index.js';
import { kvApp, type KvSystem } from '../apps/kv/index.js';
import { txApp } from '../apps/tx/index.js';
import { rsApp } from '../apps/rs/index.js';
import { rslockApp } from '../apps/rslock/index.js';
import { txfarmApp, txfordApp } from '../apps/txlock/index.js';

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

export const NODE_APPS: Readonly<Record<string, AnyApp>> = Object.freeze({ rpc: rpcApp, kv: kvApp, rs: rsApp, rslock: rslockApp, tx: txApp, txfarm: txfarmApp, txford: txfordApp });

declare module '../../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof NodeErrorCodes> {}
}

export type NodeAppName = 'rpc' | 'kv' | 'rs' | 'rslock' | 'tx' | 'txfarm' | 'txford';

export const NODE_APP_NAMES: readonly string[] = Object.freeze(Object.keys(NODE_APPS));

/** The app called `name`, or PMRPC_ERR_UNKNOWN_APP. */
export function appByName(name: string): AnyApp {
  const app = typeof name === 'string' && Object.hasOwn(NODE_APPS, name) ? NODE_APPS[name] : undefined;
  if (app === undefined) throw new PmrpcError(NodeErrorCodes.UNKNOWN_APP, `unknown app ${JSON.stringify(name)}: a node hosts one of ${NODE_APP_NAMES.join(', ')}`);
  return app;
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

/** What the CLI configures of a hostable app. */
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
}

/** The systems of the kv app: PRISM-KV, or the Pilaf-style baseline. */
export const KV_SYSTEMS: readonly KvSystem[] = Object.freeze(['prism', 'pilaf']);

const NO_FLAGS: NodeAppFlags = Object.freeze({ flags: [], clusterShard: false, connectionTable: false, options: () => ({}), startLine: () => ({}) });

export const NODE_APP_FLAGS: Readonly<Record<NodeAppName, NodeAppFlags>> = Object.freeze({
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
  },
  kv: { ...NO_FLAGS, flags: ['system'], options: (o: NodeFlagValues) => ({ system: o.system }), startLine: (o: NodeFlagValues) => ({ system: o.system }) },
  rs: NO_FLAGS,
  rslock: NO_FLAGS,
  // A tx node's lease (--lease-ms) paces its resolver agent.
  tx: { ...NO_FLAGS, flags: ['leaseMs', 'cluster'], clusterShard: true },
  txfarm: NO_FLAGS,
  txford: NO_FLAGS,
});

/** What the CLI configures of the app called `name` (PMRPC_ERR_UNKNOWN_APP for an unknown one). */
export function nodeAppFlags(name: string): NodeAppFlags {
  appByName(name);
  return NODE_APP_FLAGS[name as NodeAppName];
}
