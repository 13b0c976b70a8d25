/**
 * A durable RPC server node (DESIGN §6): one process owning one PM file, serving durable RPC over
 * TCP. It creates the PM file (formatting a recovery layout in it) or opens an existing one and
 * recovers it, registers the handlers, and serves TcpNicServer connections whose handshake is the
 * RPC accept(): a new client gets an id and a ring, a reconnecting one its resume point and the
 * results the server kept. What `pmrpc serve` runs; tests and the demo run it as a child process.
 *
 * Time comes from an injected Clock (DESIGN §7): recovery is timed with it.
 */
import { existsSync, statSync } from 'node:fs';
import { PmemRegion, PmrpcError, systemClock, type Clock, type CrashPointEvent, defineErrorCodes, type ErrorCodesOf } from '../../pmem/index.js';
import { Rnic } from '../../flush/index.js';
import { computeGeometry, layoutBytes, RecoveryStore, type LayoutOptions, type RecoveryReport } from '../../recovery/index.js';
import { checkStrategy, DurableRpcServer, type RpcHandler, type RpcStrategy } from '../rpc/index.js';
import { isLoopbackHost, TcpNicServer, TransportErrorCodes, type DisconnectInfo } from '../transport/index.js';
import { decodeHelloPayload, encodeWelcomePayload } from '../apps/rpc/index.js';

export const ServerErrorCodes = defineErrorCodes('server', {
  /** `--size` is too small for the recovery layout (rings, log, and a minimal application area). */
  SIZE_TOO_SMALL: 'PMRPC_ERR_SIZE_TOO_SMALL',
});

declare module '../../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof ServerErrorCodes> {}
}

/** The layout every node formats (the application area takes the rest of the region). */
export const NODE_LAYOUT: Readonly<Omit<LayoutOptions, 'appBytes' | 'baseOffset'>> = Object.freeze({
  maxClients: 64,
  ringSlots: 64,
  slotBytes: 128,
  logRecords: 256,
  recordBytes: 256,
});

export interface RpcNodeOptions {
  /** The PM file: created (and formatted) when absent, else opened and recovered. */
  pmPath: string;
  /** Data bytes of a new PM file (ignored when it exists). */
  sizeBytes: number;
  host: string;
  /** 0 picks a free port. */
  port: number;
  authToken: string | undefined;
  ddio: boolean;
  strategy: RpcStrategy;
  keepResults: boolean;
  /** Handlers by method name (registered before recovery, which re-executes durable requests with them). */
  handlers: Readonly<Record<string, RpcHandler>>;
  /** msync on every drain (durability across a machine crash, not just a process crash; slow). */
  strict: boolean;
  clock: Clock;
  onDisconnect: ((info: DisconnectInfo) => void) | undefined;
  /** Set on the region as soon as it is open, before recovery (`--kill-after-events` counts crash points with it). */
  onCrashPoint: ((e: CrashPointEvent) => void) | undefined;
}

export const RPC_NODE_DEFAULTS: Readonly<Omit<RpcNodeOptions, 'pmPath' | 'handlers'>> = Object.freeze({
  sizeBytes: 16 << 20,
  host: '127.0.0.1',
  port: 0,
  authToken: undefined,
  ddio: true,
  strategy: 'wflush',
  keepResults: false,
  strict: false,
  clock: systemClock,
  onDisconnect: undefined,
  onCrashPoint: undefined,
});

export interface RecoverySummary {
  /** Whether the file existed (and was recovered) or was created. */
  created: boolean;
  epoch: number;
  /** Redo-log records replayed (complete, not marked applied). */
  replayed: number;
  /** Durable requests re-executed (past the applied ones). */
  reexecuted: number;
  /** Slots durably invalidated past a client's durable prefix. */
  invalidated: number;
  clients: Array<{ clientId: number; appliedSeq: number; resumeSeq: number; reexecuted: number }>;
  recoveryMs: number;
}

/** The application-area bytes a region of `sizeBytes` leaves after NODE_LAYOUT. */
export function nodeAppBytes(sizeBytes: number): number {
  const fixed = layoutBytes({ ...NODE_LAYOUT, appBytes: 64 }) - 64;
  return Math.floor((sizeBytes - fixed) / 64) * 64;
}

export function summarize(report: RecoveryReport | undefined, created: boolean, epoch: number, recoveryMs: number): RecoverySummary {
  if (report === undefined) return { created, epoch, replayed: 0, reexecuted: 0, invalidated: 0, clients: [], recoveryMs };
  return {
    created,
    epoch: report.epoch,
    replayed: report.replayedLsns.length,
    reexecuted: report.clients.reduce((a, c) => a + c.reexecute.length, 0),
    invalidated: report.invalidated,
    clients: report.clients.map((c) => ({ clientId: c.clientId, appliedSeq: c.appliedSeq, resumeSeq: c.resumeSeq, reexecuted: c.reexecute.length })),
    recoveryMs,
  };
}

export class RpcNode {
  readonly options: Readonly<RpcNodeOptions>;
  readonly region: PmemRegion;
  readonly nic: Rnic;
  readonly store: RecoveryStore;
  readonly rpc: DurableRpcServer;
  readonly tcp: TcpNicServer;
  readonly recovery: RecoverySummary;
  #address: { host: string; port: number } | undefined;
  #closed = false;

  private constructor(o: RpcNodeOptions, region: PmemRegion, store: RecoveryStore, created: boolean, t0: number) {
    this.options = Object.freeze(o);
    this.region = region;
    this.store = store;
    this.nic = new Rnic(region, { ddio: o.ddio });
    this.rpc = new DurableRpcServer(this.nic, store, { strategy: o.strategy, keepResults: o.keepResults });
    for (const [name, h] of Object.entries(o.handlers)) this.rpc.register(name, h);
    const report = this.rpc.start();
    this.recovery = summarize(report, created, store.epoch, o.clock.nowMs() - t0);
    this.tcp = new TcpNicServer(this.nic, {
      host: o.host,
      port: o.port,
      authToken: o.authToken,
      clock: o.clock,
      onDisconnect: o.onDisconnect,
      accept: (hello) => {
        const req = decodeHelloPayload(hello.payload);
        const { sqp, info } = this.rpc.accept(req);
        return { qp: sqp, welcome: encodeWelcomePayload(info) };
      },
    });
  }

  /** Opens (recovering) or creates the PM file and starts serving; resolves once listening. */
  static async start(options: Partial<RpcNodeOptions> & Pick<RpcNodeOptions, 'pmPath' | 'handlers'>): Promise<RpcNode> {
    if (options === null || typeof options !== 'object') throw new TypeError('options must be an object');
    const o = { ...RPC_NODE_DEFAULTS, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) } as RpcNodeOptions;
    if (typeof o.pmPath !== 'string' || o.pmPath.length === 0) throw new TypeError('pmPath must be a non-empty string');
    if (!Number.isSafeInteger(o.sizeBytes) || o.sizeBytes < 1) throw new RangeError(`sizeBytes must be a positive integer, got ${String(o.sizeBytes)}`);
    if (typeof o.host !== 'string' || o.host.length === 0) throw new TypeError(`host must be a non-empty string, got ${String(o.host)}`);
    if (!Number.isInteger(o.port) || o.port < 0 || o.port > 65535) throw new RangeError(`port must be an integer in [0, 65535], got ${String(o.port)}`);
    if (typeof o.ddio !== 'boolean') throw new TypeError(`ddio must be a boolean, got ${String(o.ddio)}`);
    if (typeof o.keepResults !== 'boolean') throw new TypeError(`keepResults must be a boolean, got ${String(o.keepResults)}`);
    checkStrategy(o.strategy);
    if (o.handlers === null || typeof o.handlers !== 'object') throw new TypeError('handlers must be an object of method name -> handler');
    // Refused before the file is touched: an unauthenticated server on a reachable address hands out PM.
    if (o.authToken === undefined && !isLoopbackHost(o.host)) {
      throw new PmrpcError(TransportErrorCodes.AUTH_REQUIRED, `binding ${o.host} (not loopback) requires an auth token (--auth-token)`);
    }
    const t0 = o.clock.nowMs();
    const exists = existsSync(o.pmPath) && statSync(o.pmPath).size > 0;
    let region: PmemRegion;
    let store: RecoveryStore;
    if (exists) {
      region = PmemRegion.open(o.pmPath, { strict: o.strict });
      if (o.onCrashPoint !== undefined) region.setCrashPointHook(o.onCrashPoint);
      try {
        store = RecoveryStore.open(region);
      } catch (e) {
        region.close({ writeBack: false });
        throw e;
      }
    } else {
      const appBytes = nodeAppBytes(o.sizeBytes);
      if (appBytes < 4096) {
        throw new PmrpcError(ServerErrorCodes.SIZE_TOO_SMALL, `a node needs at least ${layoutBytes({ ...NODE_LAYOUT, appBytes: 4096 })} bytes (rings, redo log and a 4 KiB application area), got ${o.sizeBytes}`);
      }
      computeGeometry({ ...NODE_LAYOUT, appBytes });
      region = PmemRegion.create(o.pmPath, o.sizeBytes, { strict: o.strict });
      if (o.onCrashPoint !== undefined) region.setCrashPointHook(o.onCrashPoint);
      store = RecoveryStore.format(region, { ...NODE_LAYOUT, appBytes });
    }
    let node: RpcNode;
    try {
      node = new RpcNode(o, region, store, !exists, t0);
    } catch (e) {
      region.close({ writeBack: false });
      throw e;
    }
    try {
      node.#address = await node.tcp.listen();
    } catch (e) {
      node.rpc.close();
      node.nic.detach();
      region.close({ writeBack: false });
      throw e;
    }
    return node;
  }

  address(): { host: string; port: number } {
    if (this.#address === undefined) throw new TypeError('the node is not listening');
    return this.#address;
  }

  /** Orderly shutdown: Goodbye to every client, the NIC cache drains, the region is written back and closed. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.tcp.close();
    this.rpc.close();
    this.nic.close();
    this.region.close();
  }
}
