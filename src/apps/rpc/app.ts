/**
 * The durable RPC app (DESIGN §3–§4) behind the App contract: a recovery layout (rings, connection
 * table, redo log) plus an application area that the registered handlers change through the redo
 * log. By default it serves the digest workload (digest.ts), which the crash explorer and the
 * real-crash harness verify; a library user passes handlers of their own.
 */
import { bool, callable, must, optional, PmemRegion, PmrpcError, positiveInt, positiveMs, resolveOptions, type OptionChecks } from '../../../pmem/index.js';
import { entryOffset, inspectSlot, layoutBytes, RecoveryStore, type LayoutOptions, type RecordState, type RecoveryFaults, type RecoveryReport } from '../../../recovery/index.js';
import { checkStrategy, DurableRpcServer, type MethodOptions, type RpcFaults, type RpcHandler, type RpcPool, type RpcStrategy } from '../../rpc/index.js';
import { refuseOtherApp, type AcceptedClient, type App, type AppHost, type AppProblem, type AppServer } from '../index.js';
import { DIGEST_HANDLERS } from './digest.js';
import { decodeHelloPayload, encodeWelcomePayload } from './handshake.js';

export const RpcAppErrorCodes = Object.freeze({
  /** The region is too small for the recovery layout (rings, log, and a minimal application area). */
  SIZE_TOO_SMALL: 'PMRPC_ERR_SIZE_TOO_SMALL',
} as const);

/** The recovery layout of an RPC app; the application area takes the rest of the region. */
export type RpcAppLayout = Omit<LayoutOptions, 'appBytes' | 'baseOffset'>;

export interface RpcAppOptions {
  strategy: RpcStrategy;
  /** Keep each result in its effect record, so a result survives a crash. */
  keepResults: boolean;
  layout: RpcAppLayout;
  /** Handlers by method name (registered before recovery, which re-executes durable requests with them). */
  handlers: Readonly<Record<string, RpcHandler>>;
  /** Per-method registration options (e.g. { pooled: true, keys } to run a handler in `pool`); absent: inline. */
  methods: Readonly<Record<string, Partial<MethodOptions>>>;
  /** The smallest application area accepted (bytes, a multiple of 64). */
  appBytesMin: number;
  /** Consecutive polls that may see an entry partially arrived before PMRPC_ERR_ENTRY_TORN. */
  partialPollsMax: number;
  /** A worker pool for methods registered as pooled (undefined: every handler inline). */
  pool: RpcPool | undefined;
  /** A client silent this long may lose its slot to a new client (DurableRpcServer leaseMs; Infinity: only goodbye frees slots). */
  leaseMs: number;
  /** Asked before a client's slot is released (goodbye or lease); false keeps it (DurableRpcServer canRelease). */
  canRelease: ((clientId: number) => boolean) | undefined;
  /** After a restart, how long a pre-crash client keeps its slot against new clients in a full table if it has not come back (DurableRpcServer restartGraceMs). */
  restartGraceMs: number;
  /** Test-only fault switches (mutants). */
  rpcFaults: RpcFaults | undefined;
  recoveryFaults: RecoveryFaults | undefined;
}

export const RPC_APP_DEFAULTS: Readonly<RpcAppOptions> = Object.freeze({
  strategy: 'wflush',
  keepResults: false,
  layout: Object.freeze({ maxClients: 64, ringSlots: 64, slotBytes: 128, logRecords: 256, recordBytes: 256 }),
  handlers: DIGEST_HANDLERS,
  methods: Object.freeze({}),
  appBytesMin: 4096,
  partialPollsMax: 1000,
  pool: undefined,
  leaseMs: 60_000,
  canRelease: undefined,
  restartGraceMs: 2_000,
  rpcFaults: undefined,
  recoveryFaults: undefined,
});

const isObject = (v: unknown): boolean => v !== null && typeof v === 'object';

// layout is checked by the recovery layout, pool by the RPC server; partialPollsMax as the store does, but before the region is touched.
const RPC_APP_CHECKS: OptionChecks<RpcAppOptions> = {
  strategy: (_name, v) => void checkStrategy(v),
  keepResults: bool,
  handlers: must(isObject, 'must be an object of method name -> handler'),
  layout: must(isObject, 'must be an object'),
  methods: (name, v, all) => {
    must(isObject, 'must be an object of method name -> registration options')(name, v, all);
    for (const m of Object.keys(v as object)) if (!Object.hasOwn(all.handlers as object, m)) throw new TypeError(`${name} names ${m}, which has no handler`);
  },
  appBytesMin: must((v) => Number.isSafeInteger(v) && (v as number) >= 64 && (v as number) % 64 === 0, (v) => `must be a positive multiple of 64, got ${String(v)}`, RangeError),
  partialPollsMax: positiveInt,
  leaseMs: (name, v, all) => (v === Number.POSITIVE_INFINITY ? undefined : positiveMs(name, v, all)),
  canRelease: optional(callable()),
  restartGraceMs: (name, v, all) => (v === 0 ? undefined : positiveMs(name, v, all)),
};

function resolveRpcAppOptions(options: Partial<RpcAppOptions>): RpcAppOptions {
  return resolveOptions(RPC_APP_DEFAULTS, options, RPC_APP_CHECKS);
}

/** Bytes of the layout without its application area. */
function fixedBytes(layout: RpcAppLayout): number {
  return layoutBytes({ ...layout, appBytes: 64 }) - 64;
}

/** The application-area bytes a region of `sizeBytes` leaves after `layout`. */
export function rpcAppBytes(layout: RpcAppLayout, sizeBytes: number): number {
  return Math.floor((sizeBytes - fixedBytes(layout)) / 64) * 64;
}

/** What recovery did, JSON-able. */
export interface RpcRecoverySummary {
  app: 'rpc';
  epoch: number;
  /** Redo-log records replayed (complete, not marked applied). */
  replayed: number;
  /** Durable requests re-executed (past the applied ones). */
  reexecuted: number;
  /** Slots durably invalidated past a client's durable prefix. */
  invalidated: number;
  clients: Array<{ clientId: number; appliedSeq: number; resumeSeq: number; reexecuted: number }>;
}

export function summarizeRecovery(report: RecoveryReport | undefined, epoch: number): RpcRecoverySummary {
  if (report === undefined) return { app: 'rpc', epoch, replayed: 0, reexecuted: 0, invalidated: 0, clients: [] };
  return {
    app: 'rpc',
    epoch: report.epoch,
    replayed: report.replayedLsns.length,
    reexecuted: report.clients.reduce((a, c) => a + c.reexecute.length, 0),
    invalidated: report.invalidated,
    clients: report.clients.map((c) => ({ clientId: c.clientId, appliedSeq: c.appliedSeq, resumeSeq: c.resumeSeq, reexecuted: c.reexecute.length })),
  };
}

/** What RpcAppServer.inspect() shows. */
export interface RpcInspectView {
  app: 'rpc';
  epoch: number;
  nextClientId: number;
  clients: Array<{ clientId: number; appliedSeq: number; resumeSeq: number }>;
  connections: Array<{
    clientId: number;
    connSlot: number;
    /** The table's applied word (made durable lazily; the redo log's flags are the truth). */
    tableAppliedSeq: number;
    /** Highest sequence of this client with a durable applied record in the log. */
    logAppliedSeq: number;
    ring: { offset: number; head: number; tail: number; durableUnprocessed: number };
  }>;
  redoLog: {
    records: Record<RecordState, number>;
    /** LSN range of complete records (applied or not). */
    lsnMin: number | undefined;
    lsnMax: number | undefined;
    completeUnapplied: number[];
  };
  /** The first word of the application area (the digest workload's counter). */
  appCounter: string;
}

/** The RPC app opened on a region: `rpc` and `store` are there for tests and checkers. */
export class RpcAppServer implements AppServer {
  readonly app = 'rpc';
  readonly store: RecoveryStore;
  readonly rpc: DurableRpcServer;

  constructor(host: AppHost, o: RpcAppOptions) {
    this.store = RecoveryStore.open(host.region, { faults: o.recoveryFaults, partialPollsMax: o.partialPollsMax });
    this.rpc = new DurableRpcServer(host.nic, this.store, {
      strategy: o.strategy, keepResults: o.keepResults, faults: o.rpcFaults, schedule: host.schedule, pool: o.pool,
      entropy: host.entropy, clock: host.clock, leaseMs: o.leaseMs, canRelease: o.canRelease, restartGraceMs: o.restartGraceMs,
    });
    for (const [name, h] of Object.entries(o.handlers)) this.rpc.register(name, h, o.methods[name] ?? {});
  }

  recover(): RpcRecoverySummary {
    return { ...summarizeRecovery(this.rpc.start(), this.store.epoch) };
  }

  accept(hello: Uint8Array): AcceptedClient {
    const { sqp, info } = this.rpc.accept(decodeHelloPayload(hello));
    return { qp: sqp, welcome: encodeWelcomePayload(info) };
  }

  /**
   * The store as it is now (before or after recover()): epoch, clients, each client's ring (the
   * durable, checksummed entries past its applied ones), the redo log's records by state, and the
   * first word of the application area (the digest workload's counter). Reads only.
   */
  inspect(): RpcInspectView & Record<string, unknown> {
    const s = this.store;
    const g = s.geometry;
    const counts: Record<RecordState, number> = { none: 0, incomplete: 0, 'complete-unapplied': 0, applied: 0 };
    const logApplied = new Map<number, number>();
    let lsnMin: number | undefined;
    let lsnMax: number | undefined;
    const completeUnapplied: number[] = [];
    for (const r of s.log.scan()) {
      counts[r.state]++;
      if (r.state === 'applied' || r.state === 'complete-unapplied') {
        lsnMin = lsnMin === undefined ? r.lsn : Math.min(lsnMin, r.lsn);
        lsnMax = lsnMax === undefined ? r.lsn : Math.max(lsnMax, r.lsn);
      }
      if (r.state === 'applied') logApplied.set(r.clientId, Math.max(logApplied.get(r.clientId) ?? 0, r.seq));
      if (r.state === 'complete-unapplied') completeUnapplied.push(r.lsn);
    }
    const connections = s.conn.entries().map((c) => {
      const applied = Math.max(c.appliedSeq, logApplied.get(c.clientId) ?? 0);
      const head = applied + 1;
      let tail = head;
      while (tail - head < g.ringSlots) {
        const ins = inspectSlot(s.region, entryOffset(s.layout, c.connSlot, tail), g, { clientId: c.clientId, seq: tail });
        if (!(ins.checksumValid && ins.lap === 'expected')) break;
        tail++;
      }
      return {
        clientId: c.clientId,
        connSlot: c.connSlot,
        tableAppliedSeq: c.appliedSeq,
        logAppliedSeq: logApplied.get(c.clientId) ?? 0,
        ring: { offset: s.layout.ringOffset(c.connSlot), head, tail, durableUnprocessed: tail - head },
      };
    });
    return {
      app: 'rpc',
      epoch: s.epoch,
      nextClientId: s.layout.nextClientId,
      geometry: g,
      clients: s.conn.entries().map((c) => ({ clientId: c.clientId, appliedSeq: s.conn.appliedSeq(c.clientId), resumeSeq: s.resumeSeq(c.clientId) })),
      connections,
      redoLog: { records: counts, lsnMin, lsnMax, completeUnapplied },
      appCounter: s.appView.loadU64(0).toString(),
    };
  }

  audit(): AppProblem[] {
    return this.rpc.connectionErrors.map((e) => ({ kind: 'connection', detail: `client ${e.clientId}: ${(e.error as Error).message}` }));
  }

  close(): void {
    this.rpc.close();
  }
}

export const rpcApp: App<RpcAppOptions> = Object.freeze({
  name: 'rpc',
  defaults: RPC_APP_DEFAULTS,
  passesAtRunEnd: true,
  resolveOptions: resolveRpcAppOptions,
  minRegionBytes(o: RpcAppOptions): number {
    return fixedBytes(o.layout) + o.appBytesMin;
  },
  format(region: PmemRegion, o: RpcAppOptions): void {
    if (!(region instanceof PmemRegion)) throw new TypeError('region must be a PmemRegion');
    refuseOtherApp(region, 0, 'rpc');
    const appBytes = rpcAppBytes(o.layout, region.sizeBytes);
    if (appBytes < o.appBytesMin) {
      throw new PmrpcError(RpcAppErrorCodes.SIZE_TOO_SMALL, `the rpc app needs at least ${fixedBytes(o.layout) + o.appBytesMin} bytes (rings, redo log and a ${o.appBytesMin}-byte application area), got ${region.sizeBytes}`);
    }
    RecoveryStore.format(region, { ...o.layout, appBytes, faults: o.recoveryFaults, partialPollsMax: o.partialPollsMax });
  },
  open(host: AppHost, o: RpcAppOptions): RpcAppServer {
    refuseOtherApp(host.region, 0, 'rpc');
    return new RpcAppServer(host, o);
  },
});
