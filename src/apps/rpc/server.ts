/**
 * The durable RPC app's server face over src/rpc: RpcAppServer (the AppServer a host opens on a
 * region: a RecoveryStore and a DurableRpcServer with the app's handlers), its recovery summary
 * and inspect view, and the server half of the handshake (docs/wire.md): the Hello it validates
 * (a bad one refuses the connection with a coded Goodbye) and the Welcome it answers with (the
 * ConnectionInfo of DurableRpcServer.accept(); a new client's carries its secret).
 */
import { entryOffset, inspectSlot, RecoveryStore, type RecordState, type RecoveryFaults, type RecoveryReport } from '../../../recovery/index.js';
import { DurableRpcServer, type AcceptRequest, type ConnectionInfo, type MethodOptions, type RpcFaults, type RpcHandler, type RpcPool, type RpcStrategy } from '../../rpc/index.js';
import type { AcceptedClient, AppHost, AppProblem, AppServer } from '../index.js';
import { badHandshake, isPositiveInt, MAX_AWAITING, parseHandshake } from './layout.js';

/** What RpcAppServer uses of the app's options (RpcAppOptions, app.ts, adds the layout). */
export interface RpcAppServerOptions {
  strategy: RpcStrategy;
  /** Keep each result in its effect record, so a result survives a crash. */
  keepResults: boolean;
  /** Handlers by method name (registered before recovery, which re-executes durable requests with them). */
  handlers: Readonly<Record<string, RpcHandler>>;
  /** Per-method registration options (e.g. { pooled: true, keys } to run a handler in `pool`); absent: inline. */
  methods: Readonly<Record<string, Partial<MethodOptions>>>;
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

/** Server side: the client's accept request, validated (a bad one refuses the connection with a coded Goodbye). */
export function decodeHelloPayload(bytes: Uint8Array): AcceptRequest {
  const o = parseHandshake(bytes, 'Hello');
  const out: { clientId?: number; secret?: string; awaiting?: number[]; packedResults?: boolean } = {};
  if (o.clientId !== undefined) {
    if (!isPositiveInt(o.clientId)) throw badHandshake(`clientId must be a positive integer, got ${String(o.clientId)}`);
    out.clientId = o.clientId as number;
  }
  if (o.secret !== undefined) {
    if (typeof o.secret !== 'string' || !/^[A-Za-z0-9_-]{1,1400}$/.test(o.secret)) throw badHandshake('secret must be a base64url string (at most 1400 characters)');
    if (o.clientId === undefined) throw badHandshake('secret without clientId');
    out.secret = o.secret;
  }
  if (o.packedResults !== undefined) {
    if (typeof o.packedResults !== 'boolean') throw badHandshake(`packedResults must be a boolean, got ${String(o.packedResults)}`);
    out.packedResults = o.packedResults;
  }
  if (o.awaiting !== undefined) {
    const what = `awaiting must be an array of positive integers and [first, last] runs, at most ${MAX_AWAITING} sequences in all`;
    if (!Array.isArray(o.awaiting) || o.awaiting.length > MAX_AWAITING) throw badHandshake(what);
    const seqs: number[] = [];
    for (const r of o.awaiting as unknown[]) {
      if (isPositiveInt(r)) seqs.push(r as number);
      else if (Array.isArray(r) && r.length === 2 && isPositiveInt(r[0]) && isPositiveInt(r[1]) && (r[0] as number) <= (r[1] as number) && seqs.length + (r[1] as number) - (r[0] as number) < MAX_AWAITING) {
        for (let q = r[0] as number; q <= (r[1] as number); q++) seqs.push(q);
      } else throw badHandshake(what);
      if (seqs.length > MAX_AWAITING) throw badHandshake(what);
    }
    out.awaiting = seqs;
  }
  return out;
}

export function encodeWelcomePayload(info: ConnectionInfo): Uint8Array {
  return new TextEncoder().encode(
    JSON.stringify({ ...info, results: info.results.map((r) => ({ seq: r.seq, status: r.status, ...(r.bytes === undefined ? {} : { bytes: Buffer.from(r.bytes).toString('base64') }) })) }),
  );
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
  /**
   * How many times each row decided (row id → count): RPC_CONN_SLOT_TABLE's per connection slot,
   * RPC_RECOVERY_TABLE's per ring position, and replay-behind-word (recovery.ts). Empty when the
   * store needed no recovery.
   */
  rows: Record<string, number>;
}

export function summarizeRecovery(report: RecoveryReport | undefined, epoch: number): RpcRecoverySummary {
  if (report === undefined) return { app: 'rpc', epoch, replayed: 0, reexecuted: 0, invalidated: 0, clients: [], rows: {} };
  return {
    app: 'rpc',
    epoch: report.epoch,
    replayed: report.replayedLsns.length,
    reexecuted: report.clients.reduce((a, c) => a + c.reexecute.length, 0),
    invalidated: report.invalidated,
    clients: report.clients.map((c) => ({ clientId: c.clientId, appliedSeq: c.appliedSeq, resumeSeq: c.resumeSeq, reexecuted: c.reexecute.length })),
    rows: { ...report.rows },
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

  constructor(host: AppHost, o: RpcAppServerOptions) {
    this.store = RecoveryStore.open(host.region, { faults: o.recoveryFaults, partialPollsMax: o.partialPollsMax });
    this.rpc = new DurableRpcServer(host.nic, this.store, {
      strategy: o.strategy, keepResults: o.keepResults, faults: o.rpcFaults, schedule: host.schedule, pool: o.pool,
      entropy: host.entropy, clock: host.clock, leaseMs: o.leaseMs, canRelease: o.canRelease, restartGraceMs: o.restartGraceMs,
      // A broken invariant stops the node the host's way (the explorer halts it; a process without halt exits).
      ...(host.halt === undefined ? {} : { onInvariant: host.halt }),
    });
    for (const [name, h] of Object.entries(o.handlers)) this.rpc.register(name, h, o.methods[name] ?? {});
  }

  /** Recovery of the store (RecoveryStore.recover through DurableRpcServer.start), deciding by RPC_CONN_SLOT_TABLE and RPC_RECOVERY_TABLE (recovery.ts). */
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
