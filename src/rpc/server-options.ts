/**
 * The durable RPC server's options, its test-only fault switches and the shapes its connection
 * handshake hands over (DESIGN §4): what DurableRpcServer (server.ts) is configured with and
 * answers a connecting client.
 */
import { bool, callable, cryptoEntropy, must, optional, PmrpcError, positiveInt, positiveMs, systemClock, type Clock, type Entropy, type OptionChecks } from '../../pmem/index.js';
import { checkStrategy, type RpcStrategy } from './strategies.js';
import type { RpcPool } from './handler.js';

/** Test-only fault switches of the RPC layer (the crash-test mutants); never set in production. */
export interface RpcFaults {
  /** Client: send the request without its FLUSH and treat the message's completion as durable (wflush, sflush). */
  skipFlush?: boolean;
  /** Client: FLUSH(global) instead of FLUSH(persistent) (wflush, sflush). */
  flushGlobal?: boolean;
  /** Server: ACK without persisting the entry (wrflush, srflush, gpspm). */
  skipReceiverPersist?: boolean;
  /** Server: ACK first, persist after (wrflush, srflush, gpspm). */
  ackBeforePersist?: boolean;
  /** Server: in the ACK taken at a NIC run's end (the pump's drain, before processing), ACK first, persist after (wrflush, srflush). */
  ackBeforePersistInPump?: boolean;
  /** Server: the coupled reply goes out before the request's effects are committed (farm, darpc). */
  replyBeforeApply?: boolean;
  /** Server: return the ring credit one slot early (the client may overwrite an entry not yet applied). */
  earlyCredit?: boolean;
  /** Server: a live reconnect hands out the resume point without persisting the consumed entries not yet applied (pool mode). */
  skipReconnectPersist?: boolean;
}

export const RPC_FAULT_NAMES = Object.freeze(['skipFlush', 'flushGlobal', 'skipReceiverPersist', 'ackBeforePersist', 'ackBeforePersistInPump', 'replyBeforeApply', 'earlyCredit', 'skipReconnectPersist'] as const) satisfies readonly (keyof RpcFaults)[];

export function checkRpcFaults(f: unknown): Readonly<RpcFaults> {
  if (f === undefined) return Object.freeze({});
  if (f === null || typeof f !== 'object') throw new TypeError(`faults must be an object, got ${String(f)}`);
  for (const [k, v] of Object.entries(f)) {
    if (!(RPC_FAULT_NAMES as readonly string[]).includes(k)) throw new TypeError(`unknown fault switch ${k}`);
    if (typeof v !== 'boolean' && v !== undefined) throw new TypeError(`fault switch ${k} must be a boolean, got ${String(v)}`);
  }
  return Object.freeze({ ...(f as RpcFaults) });
}

export interface RpcServerOptions {
  strategy: RpcStrategy;
  /** Keep each request's result in its effect record, so it survives a server crash (while the record is in the log). */
  keepResults: boolean;
  /** How a CPU pass is scheduled (the CpuPoller's; default queueMicrotask). */
  schedule: (fn: () => void) => void;
  /** Most entries one connection processes in one CPU pass (the rest in the next pass). */
  batchMax: number;
  /** Test-only fault switches. */
  faults: RpcFaults | undefined;
  /**
   * A worker pool (a Piscina instance whose worker module exports rpcWorker(...)) for the methods
   * registered with `{ pooled: true }`; undefined: every handler runs inline on the owner thread.
   */
  pool: RpcPool | undefined;
  /** Most pooled requests computing at once. */
  poolInFlightMax: number;
  /** Client secrets (32 bytes per registration) come from here (DESIGN §7). */
  entropy: Entropy;
  /** Lease time is read from here. */
  clock: Clock;
  /**
   * A client silent this long (no connect, no request processed; restarts count as a sign of life
   * for every client) may lose its slot to a new client when the table is full, or to
   * releaseExpired(). Infinity: slots are given back only by goodbye.
   */
  leaseMs: number;
  /**
   * Asked before any release (goodbye or lease): false keeps the client's slot (e.g. PRISM-TX while
   * the client has undecided transactions); a goodbye is then finished later, when it says true.
   */
  canRelease: ((clientId: number) => boolean) | undefined;
  /**
   * After a restart every pre-crash client gets a full lease to come back (releaseExpired() waits
   * leaseMs), but one that has not come back within this many ms of the restart counts as expired
   * when a new client needs its slot in a full table — so a restarted full table does not refuse
   * new clients for leaseMs. A slot with unresolved state stays (canRelease, unapplied entries).
   */
  restartGraceMs: number;
  /**
   * A broken invariant of pmrpc's own state (PMRPC_ERR_INVARIANT, pmem/errors.ts) is never answered
   * as a request error: the server stops serving (no connection is polled again) and calls this
   * once. The default rethrows it out of the event loop, so the process stops (`pmrpc serve` exits
   * 70) before it writes anything else; restart recovers from the file.
   */
  onInvariant: (error: PmrpcError) => void;
}

/** The default onInvariant: the error leaves the event loop as an uncaught exception (the process stops). */
export function rethrowInvariant(error: PmrpcError): void {
  queueMicrotask(() => {
    throw error;
  });
}

export const RPC_SERVER_DEFAULTS: Readonly<RpcServerOptions> = Object.freeze({
  strategy: 'wflush',
  keepResults: false,
  schedule: queueMicrotask,
  batchMax: 64,
  faults: undefined,
  pool: undefined,
  poolInFlightMax: 64,
  entropy: cryptoEntropy,
  clock: systemClock,
  leaseMs: 60_000,
  canRelease: undefined,
  restartGraceMs: 2_000,
  onInvariant: rethrowInvariant,
});


export const RPC_SERVER_CHECKS: OptionChecks<RpcServerOptions> = {
  strategy: (_name, v) => void checkStrategy(v),
  keepResults: bool,
  schedule: callable(),
  onInvariant: callable(),
  batchMax: positiveInt,
  pool: must((v) => v === undefined || (v !== null && typeof (v as RpcPool).run === 'function'), 'must have a run(task) method (a Piscina instance)'),
  poolInFlightMax: positiveInt,
  entropy: must((v) => v !== null && typeof v === 'object' && typeof (v as Entropy).bytes === 'function', 'must be an Entropy (bytes(n))'),
  clock: must((v) => v !== null && typeof v === 'object' && typeof (v as Clock).nowMs === 'function', 'must be a Clock'),
  leaseMs: (name, v) => (v === Number.POSITIVE_INFINITY ? undefined : positiveMs(name, v, {})),
  canRelease: optional(callable()),
  restartGraceMs: (name, v) => (v === 0 ? undefined : positiveMs(name, v, {})),
};

/** Bytes of the secret a new client is issued. */
export const CLIENT_SECRET_BYTES = 32;

/** A result the server still knows for a reconnecting client. */
export interface KnownResult {
  seq: number;
  status: 'ok' | 'error' | 'lost';
  bytes?: Uint8Array;
}

/** What a client needs to (re)connect: handed over by the connection handshake (accept). */
export interface ConnectionInfo {
  clientId: number;
  strategy: RpcStrategy;
  /** Region offset of the client's ring, its slots and their size. */
  ringOffset: number;
  ringSlots: number;
  slotBytes: number;
  /** rkey of the MR over the client's ring (WRITE target; FLUSH target of sflush). */
  rkey: number;
  /** First sequence to (re)send: past the durable prefix. */
  resumeSeq: number;
  /** Applied sequence: the credit (sequence s may be placed when s <= appliedSeq + ringSlots). */
  appliedSeq: number;
  /** The server's epoch (bumped by every recovery). */
  epoch: number;
  /** For each awaited sequence at or below appliedSeq: its kept result, or 'lost'. */
  results: KnownResult[];
  /**
   * A new client's secret (base64url, issued once, at registration; the server keeps only its
   * SHA-256): reconnect and resume present it. Absent in the answer to a reconnect.
   */
  secret?: string;
}

export interface AcceptRequest {
  /** Reconnect as this client (omit for a new client). */
  clientId?: number;
  /** The client's secret (ConnectionInfo.secret of its registration): required with clientId. */
  secret?: string;
  /** Sequences whose result the client still waits for. */
  awaiting?: readonly number[];
  /**
   * The client reads packed RESULTs (RPC_RESULTS_IMM: a pass's RESULTs to it in one notify).
   * DurableRpcClient reads both kinds and its connect helpers say so; a client that does not say
   * so gets one RESULT (RPC_RESULT_IMM) a request.
   */
  packedResults?: boolean;
}
