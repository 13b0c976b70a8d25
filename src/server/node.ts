/**
 * `RpcNode`: the durable RPC app on the one node host (src/node). A thin shell kept for the
 * library's RPC users (README): RpcNode.start({ pmPath, handlers, strategy }) is
 * NodeHost.start({ app: rpcApp, appOptions: { handlers, strategy, keepResults } }), with the RPC
 * server, its recovery store and the recovery summary at hand.
 */
import { bool, must, resolveOptions, systemClock, defineErrorCodes, type Clock, type CrashPointEvent, type ErrorCodesOf, type OptionChecks, type PmemRegion } from '../../pmem/index.js';
import type { Rnic } from '../../flush/index.js';
import type { LayoutOptions, RecoveryStore } from '../../recovery/index.js';
import { checkStrategy, type DurableRpcServer, type RpcHandler, type RpcStrategy } from '../rpc/index.js';
import type { DisconnectInfo, TcpNicServer } from '../transport/index.js';
import { rpcApp, rpcAppBytes, RPC_APP_DEFAULTS, type RpcAppServer } from '../apps/rpc/index.js';
import { NodeHost, NodeErrorCodes } from '../node/index.js';

export const ServerErrorCodes = defineErrorCodes('server', {
  /** `--size` is too small for the recovery layout (rings, log, and a minimal application area). */
  SIZE_TOO_SMALL: NodeErrorCodes.SIZE_TOO_SMALL,
} as const);

/** The layout every RPC node formats (the application area takes the rest of the region). */
export const NODE_LAYOUT: Readonly<Omit<LayoutOptions, 'appBytes' | 'baseOffset'>> = RPC_APP_DEFAULTS.layout;

export interface RpcNodeOptions {
  /** The PM file, opened and recovered (held with an exclusive lock while open); a missing or empty one is refused unless `create`. */
  pmPath: string;
  /** Create and format a missing (or empty) PM file first (NodeHostOptions.create). */
  create: boolean;
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
  create: false,
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

// The host options (sizeBytes, host, port, ddio, ...) are checked by NodeHost.start.
const RPC_NODE_CHECKS: OptionChecks<RpcNodeOptions> = {
  pmPath: must((v) => typeof v === 'string' && v.length > 0, 'must be a non-empty string'),
  keepResults: bool,
  strategy: (_name, v) => void checkStrategy(v),
};

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
  return rpcAppBytes(NODE_LAYOUT, sizeBytes);
}

export class RpcNode {
  readonly options: Readonly<RpcNodeOptions>;
  /** The node host underneath (the one node of src/node). */
  readonly host: NodeHost<RpcAppServer>;

  private constructor(o: RpcNodeOptions, host: NodeHost<RpcAppServer>) {
    this.options = Object.freeze(o);
    this.host = host;
  }

  get region(): PmemRegion {
    return this.host.region;
  }
  get nic(): Rnic {
    return this.host.nic;
  }
  get store(): RecoveryStore {
    return this.host.server.store;
  }
  get rpc(): DurableRpcServer {
    return this.host.server.rpc;
  }
  get tcp(): TcpNicServer {
    return this.host.tcp;
  }
  get recovery(): RecoverySummary {
    return this.host.recovery as unknown as RecoverySummary;
  }

  /** Opens (recovering) or creates the PM file and starts serving; resolves once listening. */
  static async start(options: Partial<RpcNodeOptions> & Pick<RpcNodeOptions, 'pmPath' | 'handlers'>): Promise<RpcNode> {
    const o = resolveOptions(RPC_NODE_DEFAULTS as Readonly<RpcNodeOptions>, options, RPC_NODE_CHECKS);
    const host = await NodeHost.start<RpcAppServer>({
      app: rpcApp,
      appOptions: { strategy: o.strategy, keepResults: o.keepResults, handlers: o.handlers, layout: NODE_LAYOUT },
      pmPath: o.pmPath,
      create: o.create,
      sizeBytes: o.sizeBytes,
      host: o.host,
      port: o.port,
      authToken: o.authToken,
      ddio: o.ddio,
      strict: o.strict,
      clock: o.clock,
      onDisconnect: o.onDisconnect,
      onCrashPoint: o.onCrashPoint,
    });
    return new RpcNode(o, host);
  }

  address(): { host: string; port: number } {
    return this.host.address();
  }

  /** Orderly shutdown: Goodbye to every client, the NIC cache drains, the region is written back and closed. */
  async close(): Promise<void> {
    await this.host.close();
  }
}
