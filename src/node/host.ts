/**
 * The node host (DESIGN §6): one process owning one PM file and hosting one app through the App
 * contract (src/apps/app.ts), served over TCP. One start-up (create + format, or open + recover),
 * one handshake (the TCP Hello payload goes to the app's accept(), its welcome comes back), one
 * shutdown order (Goodbye to every client, the app stops, the NIC cache drains, the region is
 * written back and closed), one start line. `pmrpc serve`, the cluster launcher, the benchmark
 * servers and the test fixtures all run this.
 *
 * Time comes from the injected Clock (DESIGN §7): recovery is timed with it.
 */
import { statSync } from 'node:fs';
import { bool, cryptoEntropy, ErrorCodes, intIn, must, nonEmptyString, optional, PmemRegion, PmrpcError, PmrpcIoError, positiveInt, resolveOptions, systemClock, type Clock, type CrashPointEvent, type Entropy, type OptionChecks, type PmemOptions } from '../../pmem/index.js';
import { Rnic, type RnicOptions } from '../../flush/index.js';
import type { AppServer } from '../apps/index.js';
import { isLoopbackHost, resolveTcpServerOptions, TcpNicServer, TransportErrorCodes, type DisconnectInfo, type TcpNicServerOptions } from '../transport/index.js';
import { checkAuthToken } from './auth.js';
import { appByName, NodeErrorCodes, type AnyApp } from './apps.js';

export interface NodeHostOptions {
  /** The app (an App, or its name in NODE_APPS). */
  app: AnyApp | string;
  /** The app's options (its resolveOptions() validates them). */
  appOptions: object;
  /**
   * The PM file, opened and recovered (the process holds its exclusive lock until close: a second
   * owner gets PMRPC_ERR_FILE_LOCKED). A missing or empty file is refused (PMRPC_ERR_PM_FILE_MISSING,
   * PMRPC_ERR_NOT_FORMATTED: `pmrpc format` it first) unless `create`. undefined: an in-memory
   * region (nothing survives the process).
   */
  pmPath: string | undefined;
  /** Create and format a missing (or empty) PM file first, crash-safe (formatNodeFile); an existing one is opened as always. */
  create: boolean;
  /** Data bytes of a new PM file (ignored when it exists). */
  sizeBytes: number;
  host: string;
  /** 0 picks a free port. */
  port: number;
  authToken: string | undefined;
  ddio: boolean;
  /** msync on every drain (durability across a machine crash, not just a process crash; slow). */
  strict: boolean;
  clock: Clock;
  /** Identities the app creates (and the region UUID of a new file). */
  entropy: Entropy;
  /** How the app schedules its CPU passes. */
  schedule: (fn: () => void) => void;
  /** More NIC options (drain policy, entropy…); `ddio` above wins. */
  nic: Partial<RnicOptions>;
  /** More region options for a new file or an in-memory region (seed, entropy…); `strict` above wins. */
  region: Partial<PmemOptions>;
  /** More TCP server options (maxConnections, timeouts…); host, port, authToken, accept above win. */
  tcp: Partial<TcpNicServerOptions>;
  /** The node's name in its start line and logs (a cluster file's id). */
  nodeId: string;
  onDisconnect: ((info: DisconnectInfo) => void) | undefined;
  /** Set on the region as soon as it is open, before recovery (`--kill-after-events` counts crash points with it). */
  onCrashPoint: ((e: CrashPointEvent) => void) | undefined;
}

export const NODE_HOST_DEFAULTS: Readonly<Omit<NodeHostOptions, 'app' | 'pmPath'>> = Object.freeze({
  appOptions: Object.freeze({}),
  create: false,
  sizeBytes: 16 << 20,
  host: '127.0.0.1',
  port: 0,
  authToken: undefined,
  ddio: true,
  strict: false,
  clock: systemClock,
  entropy: cryptoEntropy,
  schedule: queueMicrotask,
  nic: Object.freeze({}),
  region: Object.freeze({}),
  tcp: Object.freeze({}),
  nodeId: 'node',
  onDisconnect: undefined,
  onCrashPoint: undefined,
});

/** What start-up did: the app's recovery summary, plus whether the file was created. */
export type NodeRecovery = { created: boolean; recoveryMs: number } & Record<string, unknown>;

/** The one line a node prints once it serves (`pmrpc serve --json`, the cluster launcher reads it). */
export interface NodeStartLine {
  node: string;
  app: string;
  host: string;
  port: number;
  /** The PM file (null: in memory). */
  pm: string | null;
  recovered: NodeRecovery;
  recoveryMs: number;
}

const NODE_HOST_CHECKS: OptionChecks<NodeHostOptions> = {
  app: must((v) => v !== undefined, 'must be an App or an app name'),
  pmPath: optional(must((v) => typeof v === 'string' && v.length > 0, 'must be a non-empty string (or undefined: in memory)')),
  sizeBytes: positiveInt,
  create: bool,
  host: nonEmptyString,
  port: intIn(0, 65535),
  ddio: bool,
  strict: bool,
  nodeId: nonEmptyString,
  appOptions: must((v) => v !== null && typeof v === 'object', 'must be an object'),
};

/** The TCP server's options of a node: `tcp`, then what the node's own options say. */
function tcpOptionsOf(o: NodeHostOptions, accept: TcpNicServerOptions['accept'], release?: (qpn: number) => void, onRunEnd?: () => void): Partial<TcpNicServerOptions> {
  const onDisconnect =
    release === undefined
      ? o.onDisconnect
      : (info: DisconnectInfo): void => {
          // The app reclaims what it gave the connection (its QP is destroyed by now: the fence).
          if (info.qpn !== undefined) release(info.qpn);
          o.onDisconnect?.(info);
        };
  return { ...o.tcp, host: o.host, port: o.port, authToken: o.authToken, clock: o.clock, onDisconnect, accept, ...(onRunEnd === undefined ? {} : { onRunEnd }) };
}

/**
 * A strict PM file served by an app whose passes may run at a NIC run's end (App.passesAtRunEnd: the rpc app): the server CPU's passes that a NIC run schedules (its
 * drained entries woke the CPU poller) run at the end of that run, inside its group commit
 * (TcpNicServer's onRunEnd, flush/driver.ts) — their records share the run's msync with the
 * entries instead of waiting for the next one (issue 29). What is durable when acknowledged does
 * not change: every Response and reply still waits for its msync. Passes scheduled anywhere else
 * run on `schedule` as before.
 */
function runEndScheduler(schedule: (fn: () => void) => void): { schedule: (fn: () => void) => void; runAll: () => void } {
  const pending: Array<() => void> = [];
  let armed = false;
  const runAll = (): void => {
    armed = false;
    for (let fn = pending.shift(); fn !== undefined; fn = pending.shift()) {
      try {
        fn();
      } catch (e) {
        queueMicrotask(() => {
          throw e; // as it would have left its own microtask
        });
      }
    }
  };
  return {
    schedule: (fn) => {
      pending.push(fn);
      if (armed) return;
      armed = true;
      schedule(runAll);
    },
    runAll,
  };
}

function resolveNodeOptions(options: Partial<NodeHostOptions>): NodeHostOptions {
  return resolveOptions(NODE_HOST_DEFAULTS as Readonly<NodeHostOptions>, options, NODE_HOST_CHECKS);
}

/** PMRPC_ERR_SIZE_TOO_SMALL unless `sizeBytes` holds the app with these options. */
function checkAppSize(app: AnyApp, appOptions: object, sizeBytes: number): void {
  const min = app.minRegionBytes(appOptions);
  if (sizeBytes < min) throw new PmrpcError(NodeErrorCodes.SIZE_TOO_SMALL, `the ${app.name} app needs at least ${min} bytes with these options, got ${sizeBytes}`);
}

/** The size of the file at `path` (undefined: none); a directory or an unreadable path is PMRPC_ERR_IO. */
function pmFileBytes(path: string): number | undefined {
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new PmrpcIoError(`${path} is not a regular file`, st.isDirectory() ? 'EISDIR' : 'EINVAL', 'open');
    return st.size;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    if (e instanceof PmrpcError) throw e;
    const err = e as NodeJS.ErrnoException;
    throw new PmrpcIoError(`cannot stat ${path}: ${err.message}`, err.code ?? 'EUNKNOWN', 'stat', e);
  }
}

/**
 * An app's NOT_FORMATTED on a file (a header but no app layout: a create interrupted by an older
 * pmrpc, or a file formatted for nothing) gets the remedy: re-create it with `pmrpc format --force`.
 */
function withFormatRemedy(e: unknown, pmPath: string | undefined, appName: string): unknown {
  if (pmPath === undefined || !(e instanceof PmrpcError) || !e.code.endsWith('NOT_FORMATTED')) return e;
  return new PmrpcError(e.code, `${e.message.slice(e.code.length + 2)} — ${pmPath} holds no complete ${appName} layout; if it holds nothing you need, re-create it with \`pmrpc format ${pmPath} --app ${appName} --force\``, { cause: e });
}

export interface FormatNodeFileOptions {
  /** Replace a non-empty file at the path (`pmrpc format --force`); without it one is refused (PMRPC_ERR_REGION_EXISTS). */
  replace: boolean;
  /** The region UUID's source. */
  entropy: Entropy;
  /** Called at each step (file reserved, layout, sync, rename, done): `pmrpc format`'s progress. */
  progress: ((step: number, steps: number, label: string) => void) | undefined;
}

/**
 * Creates the PM file of a node and formats the app in it, crash-safe (PmemRegion.format: built in
 * a temporary sibling, synced, renamed into place; a format killed at any moment leaves no file at
 * `pmPath`, and the next format reuses the stale temporary file). The file's blocks are
 * reserved (a filesystem without room is PMRPC_ERR_IO ENOSPC here), none written: memory is spent
 * only on what is written. `pmrpc format` and `serve --create` run this.
 */
export function formatNodeFile(pmPath: string, app: AnyApp | string, appOptions: object, sizeBytes: number, options: Partial<FormatNodeFileOptions> = {}): { uuid: string; sizeBytes: number; app: string } {
  const a = typeof app === 'string' ? appByName(app) : app;
  const ao = a.resolveOptions(appOptions) as object;
  if (typeof pmPath !== 'string' || pmPath.length === 0) throw new TypeError('pmPath must be a non-empty string');
  if (Number.isSafeInteger(sizeBytes) && sizeBytes > 0) checkAppSize(a, ao, sizeBytes);
  const r = PmemRegion.format(pmPath, sizeBytes, (region) => a.format(region, ao), { entropy: options.entropy ?? cryptoEntropy, replace: options.replace === true, ...(options.progress === undefined ? {} : { progress: options.progress }) });
  return { ...r, app: a.name };
}

export class NodeHost<S extends AppServer = AppServer> {
  readonly options: Readonly<NodeHostOptions>;
  readonly app: AnyApp;
  readonly region: PmemRegion;
  readonly nic: Rnic;
  /** The app opened on the region (an RpcAppServer, a KvAppServer…). */
  readonly server: S;
  readonly tcp: TcpNicServer;
  readonly recovery: NodeRecovery;
  #address: { host: string; port: number } | undefined;
  #closed = false;

  private constructor(o: NodeHostOptions, app: AnyApp, region: PmemRegion, nic: Rnic, server: S, recovery: NodeRecovery, onRunEnd: (() => void) | undefined) {
    this.options = Object.freeze(o);
    this.app = app;
    this.region = region;
    this.nic = nic;
    this.server = server;
    this.recovery = recovery;
    this.tcp = new TcpNicServer(nic, tcpOptionsOf(o, (hello) => server.accept(hello.payload), server.release === undefined ? undefined : (qpn) => server.release!(qpn), onRunEnd));
  }

  /**
   * Opens (recovering) or creates (formatting) the PM file, recovers the app and starts serving;
   * resolves once listening. Every refusal (bad option, unknown app, no auth token off loopback,
   * file too small) comes before the file is touched.
   */
  static async start<S extends AppServer = AppServer>(options: Partial<NodeHostOptions> & Pick<NodeHostOptions, 'app'>): Promise<NodeHost<S>> {
    const o = resolveNodeOptions(options);
    const app = typeof o.app === 'string' ? appByName(o.app) : o.app;
    const appOptions = app.resolveOptions(o.appOptions);
    // Refused before the file is touched: an empty token (`--auth-token ''`), an unauthenticated
    // server on a reachable address (it would hand out PM), any bad TCP option.
    checkAuthToken(o.authToken);
    if (o.authToken === undefined && !isLoopbackHost(o.host)) {
      throw new PmrpcError(TransportErrorCodes.AUTH_REQUIRED, `binding ${o.host} (not loopback) requires an auth token (--auth-token / PMRPC_AUTH_TOKEN)`);
    }
    resolveTcpServerOptions(tcpOptionsOf(o, () => {
      throw new TypeError('not serving yet');
    }));
    const t0 = o.clock.nowMs();
    const regionOptions: Partial<PmemOptions> = { entropy: o.entropy, ...o.region, strict: o.strict, clock: o.clock };
    let created = false;
    let region: PmemRegion;
    if (o.pmPath !== undefined) {
      const bytes = pmFileBytes(o.pmPath);
      if (bytes === undefined || bytes === 0) {
        if (!o.create) {
          const remedy = `create it with \`pmrpc format ${o.pmPath} --app ${app.name}\` (or start with --create / { create: true })`;
          if (bytes === undefined) throw new PmrpcError(NodeErrorCodes.PM_FILE_MISSING, `${o.pmPath} does not exist (an unmounted volume? a typo?): ${remedy}`);
          throw new PmrpcError(ErrorCodes.NOT_FORMATTED, `${o.pmPath} is empty (0 bytes): not formatted; ${remedy}`);
        }
        formatNodeFile(o.pmPath, app, appOptions, o.sizeBytes, { entropy: o.entropy, replace: bytes === 0 });
        created = true;
      }
      region = PmemRegion.open(o.pmPath, regionOptions);
    } else {
      checkAppSize(app, appOptions, o.sizeBytes);
      region = PmemRegion.createInMemory(o.sizeBytes, regionOptions);
      created = true;
    }
    let nic: Rnic | undefined;
    let server: S | undefined;
    const runEnd = o.strict && o.pmPath !== undefined && app.passesAtRunEnd === true ? runEndScheduler(o.schedule) : undefined;
    try {
      if (o.onCrashPoint !== undefined) region.setCrashPointHook(o.onCrashPoint);
      if (o.pmPath === undefined) app.format(region, appOptions);
      nic = new Rnic(region, { entropy: o.entropy, ...o.nic, ddio: o.ddio });
      try {
        server = app.open({ region, nic, clock: o.clock, schedule: runEnd?.schedule ?? o.schedule, entropy: o.entropy }, appOptions) as S;
      } catch (e) {
        throw withFormatRemedy(e, o.pmPath, app.name);
      }
      let summary: object;
      try {
        summary = server.recover();
      } catch (e) {
        throw withFormatRemedy(e, o.pmPath, app.name);
      }
      const recovery: NodeRecovery = { created, ...summary, recoveryMs: o.clock.nowMs() - t0 };
      const node = new NodeHost<S>(o, app, region, nic, server, recovery, runEnd?.runAll);
      node.#address = await node.tcp.listen();
      return node;
    } catch (e) {
      server?.close();
      nic?.detach();
      region.close({ writeBack: false });
      throw e;
    }
  }

  address(): { host: string; port: number } {
    if (this.#address === undefined) throw new TypeError('the node is not listening');
    return this.#address;
  }

  /** The one start line (JSON) a serving node prints. */
  startLine(): NodeStartLine {
    const a = this.address();
    return { node: this.options.nodeId, app: this.app.name, host: a.host, port: a.port, pm: this.options.pmPath ?? null, recovered: this.recovery, recoveryMs: this.recovery.recoveryMs };
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Orderly shutdown: Goodbye to every client, the app stops, the NIC cache drains, the region is written back and closed. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.tcp.close();
    this.server.close();
    this.nic.close();
    this.region.close();
  }
}
