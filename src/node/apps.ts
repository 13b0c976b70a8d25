/**
 * The apps a node can host, by name (what `pmrpc serve --app NAME` and a cluster file's `app`
 * accept): rpc, kv, rs, rslock, tx, txfarm, txford.
 */
import { PmrpcError, defineErrorCodes, type ErrorCodesOf } from '../../pmem/index.js';
import type { App } from '../apps/index.js';
import { rpcApp } from '../apps/rpc/index.js';
import { kvApp } from '../apps/kv/index.js';
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
