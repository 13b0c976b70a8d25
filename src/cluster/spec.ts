/**
 * The cluster file (DESIGN §6): a JSON document listing nodes — id, app, host, port, the PM file,
 * options — validated here with one coded error per kind of mistake (docs/cluster.schema.json is
 * the same rules as a JSON Schema). The auth token never lives in a cluster file: a field that
 * looks like one is refused (PMRPC_ERR_CLUSTER_TOKEN_IN_FILE); it comes from PMRPC_AUTH_TOKEN or a
 * token file (auth.ts).
 */
import { readFileSync } from 'node:fs';
import { networkInterfaces, hostname } from 'node:os';
import { dirname, isAbsolute, resolve } from 'node:path';
import { PmrpcError, defineErrorCodes, type ErrorCodesOf, type ErrorCode } from '../../pmem/index.js';
import { isLoopbackHost } from '../transport/index.js';
import { KV_SYSTEMS, NODE_APP_FLAGS, NODE_APP_NAMES, appByName, nodeAppFlags } from '../node/index.js';
import type { KvSystem, SizeClass } from '../apps/kv/index.js';

export const ClusterErrorCodes = defineErrorCodes('cluster', {
  /** The cluster file cannot be read. */
  UNREADABLE: 'PMRPC_ERR_CLUSTER_UNREADABLE',
  /** The cluster file is not JSON. */
  NOT_JSON: 'PMRPC_ERR_CLUSTER_NOT_JSON',
  /** A required field is absent (the message names it, e.g. nodes[1].pm). */
  MISSING_FIELD: 'PMRPC_ERR_CLUSTER_MISSING_FIELD',
  /** A field has the wrong type or an out-of-range value. */
  BAD_FIELD: 'PMRPC_ERR_CLUSTER_BAD_FIELD',
  /** A field the schema does not know (a typo would otherwise be silently ignored). */
  UNKNOWN_FIELD: 'PMRPC_ERR_CLUSTER_UNKNOWN_FIELD',
  /** An app no node can host. */
  UNKNOWN_APP: 'PMRPC_ERR_UNKNOWN_APP',
  /** Two nodes with one id. */
  DUPLICATE_ID: 'PMRPC_ERR_CLUSTER_DUPLICATE_ID',
  /** Two nodes on one host:port. */
  DUPLICATE_PORT: 'PMRPC_ERR_CLUSTER_DUPLICATE_PORT',
  /** Two nodes of one host on one PM file. */
  DUPLICATE_PM: 'PMRPC_ERR_CLUSTER_DUPLICATE_PM',
  /** An auth token (or anything named like one) in the cluster file. */
  TOKEN_IN_FILE: 'PMRPC_ERR_CLUSTER_TOKEN_IN_FILE',
  /** A node id the cluster file does not list. */
  UNKNOWN_NODE: 'PMRPC_ERR_CLUSTER_UNKNOWN_NODE',
});

export const LayoutErrorCodes = defineErrorCodes('layout', {
  /** A layout option (kvSlots, kvProbeSlots, kvClasses, rsBlocks, txItems; `--kv-slots` …) with a bad value, or a layout the app refuses. */
  BAD_LAYOUT: 'PMRPC_ERR_BAD_LAYOUT',
  /** A layout option of another app (e.g. `--kv-slots` with `--app rs`). */
  LAYOUT_WRONG_APP: 'PMRPC_ERR_LAYOUT_WRONG_APP',
});

declare module '../../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof ClusterErrorCodes>, ErrorCodesOf<typeof LayoutErrorCodes> {}
}

/**
 * The capacity of a new PM file, per app (cluster-file node options; `pmrpc serve` flags
 * `--kv-slots` …). They apply only when the file is formatted: an existing file keeps the layout
 * its header records.
 */
export interface LayoutOptions {
  /** kv: index slots (default 1024, at most 2^24). */
  kvSlots?: number;
  /** kv: a key's probe window, contiguous slots from its home slot (default 4, at most 16). */
  kvProbeSlots?: number;
  /** kv: the item arena's size classes, increasing powers of two in [64, 2^20] with their buffer counts. */
  kvClasses?: SizeClass[];
  /** rs: blocks (registers) per replica (default 256). */
  rsBlocks?: number;
  /** tx: items in the shard's arena (default 256; at least keysPerShard). */
  txItems?: number;
}

/** The app each layout option belongs to (from the node registry's `layout` records). */
export const LAYOUT_OPTION_APPS: Readonly<Record<keyof LayoutOptions, string>> = Object.freeze(
  Object.fromEntries(Object.entries(NODE_APP_FLAGS).flatMap(([app, r]) => Object.keys(r.layout?.fields ?? {}).map((k) => [k, app]))) as Record<keyof LayoutOptions, string>,
);

/** The app option each layout option sets, and back (for messages). */
const LAYOUT_FIELDS = Object.freeze(Object.assign({}, ...Object.values(NODE_APP_FLAGS).map((r) => r.layout?.fields ?? {})) as Record<string, { to: string; int: boolean }>);
const LAYOUT_NAME_OF: Readonly<Record<string, string>> = Object.freeze(Object.fromEntries(Object.entries(LAYOUT_FIELDS).map(([k, f]) => [f.to, k])));
const LAYOUT_APP_OPTION = new RegExp(`^(${Object.keys(LAYOUT_NAME_OF).join('|')})\\b`);

/**
 * The app options that `layout` sets for app `app` (to merge over the rest of its options; `base`:
 * those other options, e.g. a tx node's keysPerShard, which the check needs), checked by the app's
 * own rules: PMRPC_ERR_LAYOUT_WRONG_APP for an option of another app, PMRPC_ERR_BAD_LAYOUT for a
 * value or a layout the app refuses. `where` prefixes messages (e.g. `nodes[0].options.`).
 */
export function layoutAppOptions(app: string, layout: LayoutOptions, base: Record<string, unknown> = {}, where = ''): Record<string, unknown> {
  const given = (Object.keys(LAYOUT_OPTION_APPS) as Array<keyof LayoutOptions>).filter((k) => layout[k] !== undefined);
  for (const k of given) if (LAYOUT_OPTION_APPS[k] !== app) fail(LayoutErrorCodes.LAYOUT_WRONG_APP, `${where}${k} is a layout option of the ${LAYOUT_OPTION_APPS[k]} app, not of ${app}`);
  if (given.length === 0) return {};
  const int = (k: keyof LayoutOptions): number => {
    const v = layout[k];
    if (!Number.isSafeInteger(v) || (v as number) < 1) fail(LayoutErrorCodes.BAD_LAYOUT, `${where}${k} must be a positive integer, got ${JSON.stringify(v)}`);
    return v as number;
  };
  // The app's record (it has a layout: some option of it was given) turns the values into app options.
  const values: Record<string, unknown> = {};
  for (const k of given) values[LAYOUT_FIELDS[k]!.to] = LAYOUT_FIELDS[k]!.int ? int(k) : layout[k];
  const out = nodeAppFlags(app).layout!.options(values, base);
  try {
    appByName(app).resolveOptions({ ...base, ...out });
  } catch (e) {
    if (!(e instanceof RangeError || e instanceof TypeError)) throw e;
    const msg = e.message.replace(LAYOUT_APP_OPTION, (m) => LAYOUT_NAME_OF[m] ?? m).replace(/(slotCount|probeSlots)/g, (m) => LAYOUT_NAME_OF[m] ?? m);
    fail(LayoutErrorCodes.BAD_LAYOUT, `${where}${msg}`);
  }
  return out;
}

/** Per-node options; each applies to the apps named. */
export interface ClusterNodeOptions {
  /** Data bytes of a new PM file (default 16 MiB). */
  sizeBytes?: number;
  ddio?: boolean;
  strict?: boolean;
  /** rpc: the remote-persistence strategy. */
  strategy?: string;
  /** rpc: keep results in PM. */
  keepResults?: boolean;
  /** kv: one of KV_SYSTEMS (PRISM-KV or the Pilaf baseline). */
  system?: KvSystem;
  /** tx: objects per shard, client record slots, arena items, initial values ('list' | 'balance') and the initial balance. */
  keysPerShard?: number;
  txClients?: number;
  txItems?: number;
  txValue?: 'list' | 'balance';
  initialBalance?: number;
  /** rpc: a silent client's slot lease; tx: the resolver agent's pass period (`pmrpc serve --lease-ms`). */
  leaseMs?: number;
  /** Layout of a new PM file (LayoutOptions; txItems above): kv index slots, kv probe slots, kv size classes, rs blocks. */
  kvSlots?: number;
  kvProbeSlots?: number;
  kvClasses?: SizeClass[];
  rsBlocks?: number;
}

export interface ClusterNodeSpec {
  id: string;
  app: string;
  host: string;
  port: number;
  /** The PM file, absolute (a relative path in the file is relative to the cluster file's folder). */
  pm: string;
  options: ClusterNodeOptions;
}

export interface ClusterSpec {
  version: 1;
  name: string;
  nodes: ClusterNodeSpec[];
  /** The cluster file it came from (undefined for a spec built in code). */
  file: string | undefined;
}

const ID_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const TOP_FIELDS = new Set(['$schema', 'version', 'name', 'nodes']);
const NODE_FIELDS = new Set(['id', 'app', 'host', 'port', 'pm', 'options']);
const OPTION_FIELDS: Readonly<Record<string, (v: unknown) => boolean>> = Object.freeze({
  sizeBytes: (v) => Number.isSafeInteger(v) && (v as number) > 0,
  ddio: (v) => typeof v === 'boolean',
  strict: (v) => typeof v === 'boolean',
  strategy: (v) => typeof v === 'string' && v.length > 0,
  keepResults: (v) => typeof v === 'boolean',
  system: (v) => (KV_SYSTEMS as readonly unknown[]).includes(v),
  keysPerShard: (v) => Number.isSafeInteger(v) && (v as number) > 0,
  txClients: (v) => Number.isSafeInteger(v) && (v as number) > 0,
  txItems: (v) => Number.isSafeInteger(v) && (v as number) > 0,
  txValue: (v) => v === 'list' || v === 'balance',
  initialBalance: (v) => Number.isSafeInteger(v),
  leaseMs: (v) => Number.isSafeInteger(v) && (v as number) > 0,
  kvSlots: (v) => Number.isSafeInteger(v) && (v as number) > 0,
  kvProbeSlots: (v) => Number.isSafeInteger(v) && (v as number) > 0,
  kvClasses: (v) => Array.isArray(v) && v.length > 0 && v.every((c: unknown) => c !== null && typeof c === 'object' && !Array.isArray(c) && Object.keys(c).every((k) => k === 'sizeBytes' || k === 'count') && Number.isSafeInteger((c as SizeClass).sizeBytes) && Number.isSafeInteger((c as SizeClass).count)),
  rsBlocks: (v) => Number.isSafeInteger(v) && (v as number) > 0,
});
const TOKEN_RE = /token|secret|password/i;

function fail(code: ErrorCode, message: string): never {
  throw new PmrpcError(code, message);
}

function checkNoToken(v: unknown, where: string): void {
  if (v === null || typeof v !== 'object') return;
  for (const [k, x] of Object.entries(v)) {
    if (TOKEN_RE.test(k)) fail(ClusterErrorCodes.TOKEN_IN_FILE, `${where}${k}: a cluster file never holds the auth token (use PMRPC_AUTH_TOKEN or --auth-token-file)`);
    checkNoToken(x, `${where}${k}.`);
  }
}

/**
 * Validates a parsed cluster document. `baseDir` resolves relative PM paths (the cluster file's
 * folder; default the working directory).
 */
export function parseClusterSpec(doc: unknown, options: { baseDir?: string; file?: string } = {}): ClusterSpec {
  const base = options.baseDir ?? process.cwd();
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) fail(ClusterErrorCodes.BAD_FIELD, 'a cluster file is a JSON object {version, nodes: [...]}');
  checkNoToken(doc, '');
  const d = doc as Record<string, unknown>;
  for (const k of Object.keys(d)) if (!TOP_FIELDS.has(k)) fail(ClusterErrorCodes.UNKNOWN_FIELD, `unknown field ${k} (known: ${[...TOP_FIELDS].join(', ')})`);
  if (d.version === undefined) fail(ClusterErrorCodes.MISSING_FIELD, 'version is missing (1)');
  if (d.version !== 1) fail(ClusterErrorCodes.BAD_FIELD, `version must be 1, got ${JSON.stringify(d.version)}`);
  if (d.name !== undefined && (typeof d.name !== 'string' || d.name.length === 0)) fail(ClusterErrorCodes.BAD_FIELD, 'name must be a non-empty string');
  if (d.nodes === undefined) fail(ClusterErrorCodes.MISSING_FIELD, 'nodes is missing');
  if (!Array.isArray(d.nodes) || d.nodes.length === 0) fail(ClusterErrorCodes.BAD_FIELD, 'nodes must be a non-empty array');
  if (d.nodes.length > 256) fail(ClusterErrorCodes.BAD_FIELD, `at most 256 nodes, got ${d.nodes.length}`);
  const nodes: ClusterNodeSpec[] = [];
  const ids = new Set<string>();
  const addrs = new Map<string, string>();
  const pms = new Map<string, string>();
  d.nodes.forEach((raw: unknown, i: number) => {
    const at = `nodes[${i}]`;
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) fail(ClusterErrorCodes.BAD_FIELD, `${at} must be an object {id, app, host, port, pm, options}`);
    const n = raw as Record<string, unknown>;
    for (const k of Object.keys(n)) if (!NODE_FIELDS.has(k)) fail(ClusterErrorCodes.UNKNOWN_FIELD, `${at}.${k} is not a node field (known: ${[...NODE_FIELDS].join(', ')})`);
    for (const k of ['id', 'app', 'port', 'pm']) if (n[k] === undefined) fail(ClusterErrorCodes.MISSING_FIELD, `${at}.${k} is missing`);
    if (typeof n.id !== 'string' || !ID_RE.test(n.id)) fail(ClusterErrorCodes.BAD_FIELD, `${at}.id must match ${ID_RE}, got ${JSON.stringify(n.id)}`);
    if (typeof n.app !== 'string' || !NODE_APP_NAMES.includes(n.app)) fail(ClusterErrorCodes.UNKNOWN_APP, `${at}.app: unknown app ${JSON.stringify(n.app)}: a node hosts one of ${NODE_APP_NAMES.join(', ')}`);
    const host = n.host ?? '127.0.0.1';
    if (typeof host !== 'string' || host.length === 0 || host.length > 255) fail(ClusterErrorCodes.BAD_FIELD, `${at}.host must be a non-empty string`);
    if (!Number.isInteger(n.port) || (n.port as number) < 1 || (n.port as number) > 65535) fail(ClusterErrorCodes.BAD_FIELD, `${at}.port must be an integer in [1, 65535] (a cluster's addresses are fixed), got ${JSON.stringify(n.port)}`);
    if (typeof n.pm !== 'string' || n.pm.length === 0) fail(ClusterErrorCodes.BAD_FIELD, `${at}.pm must be a non-empty path`);
    const opts = n.options ?? {};
    if (opts === null || typeof opts !== 'object' || Array.isArray(opts)) fail(ClusterErrorCodes.BAD_FIELD, `${at}.options must be an object`);
    for (const [k, v] of Object.entries(opts)) {
      const ok = OPTION_FIELDS[k];
      if (ok === undefined) fail(ClusterErrorCodes.UNKNOWN_FIELD, `${at}.options.${k} is not a node option (known: ${Object.keys(OPTION_FIELDS).join(', ')})`);
      if (!ok(v)) fail(ClusterErrorCodes.BAD_FIELD, `${at}.options.${k} has a bad value ${JSON.stringify(v)}`);
    }
    // Layout options: of this node's app, and a layout the app accepts.
    const o = opts as ClusterNodeOptions;
    layoutAppOptions(n.app, o, nodeAppFlags(n.app).clusterOptions?.(o as Record<string, unknown>) ?? {}, `${at}.options.`);
    const id = n.id;
    if (ids.has(id)) fail(ClusterErrorCodes.DUPLICATE_ID, `${at}.id ${id} is used twice`);
    ids.add(id);
    const addr = `${host}:${n.port as number}`;
    if (addrs.has(addr)) fail(ClusterErrorCodes.DUPLICATE_PORT, `${at} (${id}) and ${addrs.get(addr)!} both listen on ${addr}`);
    addrs.set(addr, id);
    const pm = isAbsolute(n.pm) ? n.pm : resolve(base, n.pm);
    const pmKey = `${isLoopbackHost(host) ? 'local' : host}|${pm}`;
    if (pms.has(pmKey)) fail(ClusterErrorCodes.DUPLICATE_PM, `${at} (${id}) and ${pms.get(pmKey)!} share the PM file ${pm}: a node owns its file`);
    pms.set(pmKey, id);
    nodes.push({ id, app: n.app, host, port: n.port as number, pm, options: { ...(opts as ClusterNodeOptions) } });
  });
  return { version: 1, name: typeof d.name === 'string' ? d.name : 'cluster', nodes, file: options.file };
}

/** Reads and validates a cluster file (relative PM paths are relative to its folder). */
export function loadClusterFile(file: string): ClusterSpec {
  if (typeof file !== 'string' || file.length === 0) throw new TypeError('the cluster file must be a non-empty path');
  const abs = resolve(file);
  let text: string;
  try {
    text = readFileSync(abs, 'utf8');
  } catch (e) {
    fail(ClusterErrorCodes.UNREADABLE, `cannot read ${file}: ${(e as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    fail(ClusterErrorCodes.NOT_JSON, `${file} is not JSON: ${(e as Error).message}`);
  }
  return parseClusterSpec(doc, { baseDir: dirname(abs), file: abs });
}

/** A spec from a file path, or a spec (or parsed document) given in code. */
export function toClusterSpec(fileOrSpec: string | ClusterSpec | Record<string, unknown>): ClusterSpec {
  if (typeof fileOrSpec === 'string') return loadClusterFile(fileOrSpec);
  if (fileOrSpec !== null && typeof fileOrSpec === 'object' && Array.isArray((fileOrSpec as ClusterSpec).nodes) && 'file' in fileOrSpec) return fileOrSpec as ClusterSpec;
  return parseClusterSpec(fileOrSpec);
}

/** The node called `id`, or PMRPC_ERR_CLUSTER_UNKNOWN_NODE. */
export function clusterNode(spec: ClusterSpec, id: string): ClusterNodeSpec {
  const n = spec.nodes.find((x) => x.id === id);
  if (n === undefined) fail(ClusterErrorCodes.UNKNOWN_NODE, `no node ${JSON.stringify(id)} in the cluster (nodes: ${spec.nodes.map((x) => x.id).join(', ')})`);
  return n;
}

/** Whether a node's host is this machine (loopback, this host's name, or one of its interface addresses): the launcher starts only those. */
export function isLocalNode(n: Pick<ClusterNodeSpec, 'host'>): boolean {
  if (isLoopbackHost(n.host) || n.host === 'localhost' || n.host === hostname()) return true;
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) if (a.address === n.host) return true;
  return false;
}
