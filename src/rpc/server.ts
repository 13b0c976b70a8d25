/**
 * DurableRpcServer: the server CPU's half of durable RPC (DESIGN §4). A validating shell over a
 * RecoveryStore (rings, redo log, recovery) and an Rnic; one engine per connection.
 *
 * Per connection and strategy: entries arrive in the client's ring (WRITE strategies) or in
 * receive slots posted at the ring's slots in sequence order (SEND strategies). The CpuPoller —
 * driven by NIC notifications (drained writes into the ring, receive completions), never a spin
 * loop — runs a pass: poll the ring FIFO, persist and ACK (wrflush, srflush; gpspm on its flush
 * request), then process: the handler computes effects, the store commits them through the redo
 * log (FIFO, one total order), and a RESULT carrying the credit (the applied sequence) goes back.
 * Coupled baselines (farm, darpc) only ever answer with that RESULT.
 *
 * Each client's connection life is one named state (conn-life.ts: none, dormant, open, error,
 * closing), changed in one place (#enter). Pool mode (pooled methods on worker threads) is pool.ts.
 */
import { bool, callable, cryptoEntropy, invariant, isInvariantError, isPmrpcError, must, nextTurn, optional, PmrpcError, crc32c, positiveInt, positiveMs, resolveOptions, systemClock, type Clock, type Entropy, type OptionChecks, type PmemRegion } from '../../pmem/index.js';
import { Access, CpuPoller, type MemoryRegion, type RecvCompletion, type Rnic, type ServerQp } from '../../flush/index.js';
import {
  checkEffects,
  RECORD_HEADER_BYTES,
  RecoveryStore,
  type AppView,
  type Effects,
  type RecoveryReport,
  type Ring,
  type RingEntry,
} from '../../recovery/index.js';
import { RpcErrorCodes } from './errors.js';
import { checkStrategy, rpcStrategy, type RpcStrategy, type RpcStrategyRecord } from './strategies.js';
import type { RpcEffects, RpcHandler, RpcPool, RpcRequest } from './handler.js';
import { CONNST, connTransition, type ConnState } from './conn-life.js';
import { PoolDispatch, type ComputedEffects } from './pool.js';
import { decodeKept, encodeAck, encodeError, encodeKept, encodeResultOf, RPC_ACK_IMM, RPC_RESULT_IMM, STATUS_ERROR, STATUS_OK } from './wire.js';

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
  /** Server: the coupled reply goes out before the request's effects are committed (farm, darpc). */
  replyBeforeApply?: boolean;
  /** Server: return the ring credit one slot early (the client may overwrite an entry not yet applied). */
  earlyCredit?: boolean;
  /** Server: a live reconnect hands out the resume point without persisting the consumed entries not yet applied (pool mode). */
  skipReconnectPersist?: boolean;
}

export const RPC_FAULT_NAMES = Object.freeze(['skipFlush', 'flushGlobal', 'skipReceiverPersist', 'ackBeforePersist', 'replyBeforeApply', 'earlyCredit', 'skipReconnectPersist'] as const) satisfies readonly (keyof RpcFaults)[];

export function checkRpcFaults(f: unknown): Readonly<RpcFaults> {
  if (f === undefined) return Object.freeze({});
  if (f === null || typeof f !== 'object') throw new TypeError(`faults must be an object, got ${String(f)}`);
  for (const [k, v] of Object.entries(f)) {
    if (!(RPC_FAULT_NAMES as readonly string[]).includes(k)) throw new TypeError(`unknown fault switch ${k}`);
    if (typeof v !== 'boolean' && v !== undefined) throw new TypeError(`fault switch ${k} must be a boolean, got ${String(v)}`);
  }
  return Object.freeze({ ...(f as RpcFaults) });
}

/** strict: one batch's replies (RESULTs, ACKs), held until its msync (syncAsync) calls back. */
interface HeldReplies {
  c: Conn;
  replies: Array<() => void>;
  synced: boolean;
  failure: unknown;
  /**
   * The client's applied sequence when the batch was settled: the credit its RESULTs carry. Read
   * then, not when they leave — a later batch of the same client, settled while this one's msync
   * ran, is not synced yet (its msync is queued) and must not be credited by these RESULTs. -1:
   * read it when sending.
   */
  applied: number;
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

const RPC_SERVER_CHECKS: OptionChecks<RpcServerOptions> = {
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

/** The method a client's goodbye is sent as (reserved: a handler cannot be registered under it). */
export const GOODBYE_METHOD = 'pmrpc.goodbye';
/** Bytes of the secret a new client is issued. */
export const CLIENT_SECRET_BYTES = 32;

export interface MethodOptions {
  /** Compute this method's effects in the pool (the worker module must export the same handler under the same name). */
  pooled: boolean;
  /**
   * The keys a request touches (reads or writes). Requests run in parallel only when their keys are
   * disjoint; without keys a pooled request runs alone. The after-images of requests computed in
   * parallel are checked for overlap before they are applied; an overlap (keys that lied) makes the
   * later request compute again, serially, inline.
   */
  keys: ((request: RpcRequest) => readonly string[]) | undefined;
}

const METHOD_DEFAULTS: Readonly<MethodOptions> = Object.freeze({ pooled: false, keys: undefined });

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
}

interface Conn {
  clientId: number;
  sqp: ServerQp;
  mr: MemoryRegion;
  ring: Ring;
  stops: Array<() => void>;
  ackedUpTo: number;
  /** SEND strategies: the highest sequence whose receive buffer this connection has posted. */
  recvUpTo: number;
  /**
   * The CpuPoller pass (passId) in which a CPU pass of this connection polled its ring until it
   * found it empty: the pass's further doorbells of this connection (writes drained before the
   * pass began, one per request) would find it empty again, and are let go.
   */
  polledEmptyIn: number;
  /**
   * strict: a CPU pass of this connection waits for the msync its redo-log step depends on
   * (#deferPass); the callers' beforeProcess steps wait with it. undefined: none waits.
   */
  deferred: Array<() => void> | undefined;
}

/** A connection's part of a CPU pass, and the step that goes first in its batch (its ACKs, a flush request's). */
interface PassPart {
  c: Conn;
  before: (() => void) | undefined;
}

/** A connection's part of a redo-log batch (#processBatch): its polled entries, what goes first, its replies. */
interface BatchPart {
  c: Conn;
  polled: RingEntry[];
  first?: () => void;
  replies?: Array<() => void>;
  /** Its connection was cut in this batch (no further pass is scheduled for it). */
  failed?: boolean;
}

/** A client's connection life (one state, conn-life.ts) and its current connection (none while dormant, after a drop, or closing). */
interface Session {
  state: ConnState;
  conn: Conn | undefined;
}

/** A method name's id on the wire (CRC-32C of its UTF-8 bytes): client and server agree without a handshake. */
export function methodId(method: string): number {
  let id = METHOD_IDS.get(method);
  if (id === undefined) {
    id = crc32c(new TextEncoder().encode(method));
    // Bounded: a caller naming ever new methods pays the encoding, not memory.
    if (METHOD_IDS.size >= 1024) METHOD_IDS.clear();
    METHOD_IDS.set(method, id);
  }
  return id;
}

/** Ids of the method names seen (the client computes one per call). */
const METHOD_IDS = new Map<string, number>();

const GOODBYE_ID = methodId(GOODBYE_METHOD);

/** A Hello's secret (base64url) as bytes; none or a malformed one is PMRPC_ERR_CLIENT_AUTH. */
function decodeSecret(secret: unknown): Uint8Array {
  if (typeof secret !== 'string' || !/^[A-Za-z0-9_-]{1,1400}$/.test(secret)) {
    throw new PmrpcError('PMRPC_ERR_CLIENT_AUTH', 'a reconnect must present the client\'s secret (ConnectionInfo.secret of its registration)');
  }
  return new Uint8Array(Buffer.from(secret, 'base64url'));
}

/** notify() options of an ACK: its bytes are encoded for the message alone (handed over, not copied). */
const TRANSFER = Object.freeze({ transfer: true });
/** notify() options of a reply followed at once by another of the same settled batch (gathered: one socket write). */
const MORE = Object.freeze({ more: true, transfer: true });

const METHOD_RE = /^[A-Za-z_][A-Za-z0-9_.:/-]{0,127}$/;

export class DurableRpcServer {
  readonly nic: Rnic;
  readonly store: RecoveryStore;
  readonly region: PmemRegion;
  readonly options: Readonly<RpcServerOptions>;
  readonly strategy: RpcStrategy;
  /** The strategy's record, looked up once (the hot path branches on its fields, never on the name). */
  readonly #rec: RpcStrategyRecord;
  #faults: Readonly<RpcFaults>;
  #methods = new Map<number, { name: string; handler: RpcHandler; pooled: boolean; keys: MethodOptions['keys'] }>();
  /** Pool mode (pool.ts); undefined: every handler runs inline. */
  #pool: PoolDispatch<Conn> | undefined;
  /**
   * Each client's connection life, by client id. Re-inserted at each step (#enter): the map runs
   * in the order the clients entered their states (the longest closing is released first).
   */
  #sessions = new Map<number, Session>();
  #poller: CpuPoller;
  #state: 'new' | 'serving' | 'closed' = 'new';
  /** Lease: when each client in the table last showed a sign of life (clock ms). */
  #lastSeen = new Map<number, number>();
  /** When the recovered store's clients became dormant (start() after a restart). */
  #restartedAt = 0;
  /** Slots released so far (goodbye and lease). */
  releases = { goodbye: 0, lease: 0 };
  /** Errors of connections that were cut (a misbehaving client); the server keeps serving the others. */
  readonly connectionErrors: Array<{ clientId: number; error: unknown }> = [];

  constructor(nic: Rnic, store: RecoveryStore, options: Partial<RpcServerOptions> = {}) {
    if (nic === null || typeof nic !== 'object' || typeof (nic as Rnic).createQp !== 'function') throw new TypeError('nic must be an Rnic');
    if (!(store instanceof RecoveryStore)) throw new TypeError('store must be a RecoveryStore');
    if (store.region !== nic.region) throw new TypeError('store and nic must be on the same region');
    // strict group commit: on a region that msyncs, a CPU pass waits for the next turn of the event
    // loop (unless the caller schedules passes), so the requests of one turn form one poll batch and
    // share its msyncs (docs/recovery.md, "Group commit").
    const strictFile = nic.region.options.strict && nic.region.path !== undefined;
    const o = resolveOptions(RPC_SERVER_DEFAULTS, strictFile && options.schedule === undefined ? { ...options, schedule: nextTurn } : options, RPC_SERVER_CHECKS);
    this.#strictFile = strictFile;
    this.#faults = checkRpcFaults(o.faults);
    this.options = Object.freeze(o);
    this.strategy = o.strategy;
    this.#rec = rpcStrategy(o.strategy);
    // The RESULT's bytes are encoded for the message alone: handed over, not copied again.
    this.#lazyResults = this.#rec.coupled ? { transfer: true } : { lazy: true, transfer: true };
    this.nic = nic;
    this.store = store;
    this.region = nic.region;
    this.#poller = new CpuPoller(nic, { schedule: o.schedule });
    const pool = o.pool;
    this.#pool =
      pool === undefined
        ? undefined
        : new PoolDispatch<Conn>({
            pool,
            inFlightMax: o.poolInFlightMax,
            serving: () => this.#state === 'serving',
            method: (id) => this.#methods.get(id),
            failed: (c) => this.#stateOf(c.clientId) === CONNST.ERROR && this.#sessions.get(c.clientId)!.conn === c,
            taskBase: () => ({ shared: this.region.shared(), appOffset: this.store.geometry.appOffset, appBytes: this.store.geometry.appBytes }),
            effects: (entry, compute) => this.#effects(entry, this.store.appView, compute),
            process: (c, entry, computed) => this.#process(c, entry, computed),
            guarded: (c, fn) => this.#guarded(c, fn),
          });
  }

  /** A client's connection state (CONNST.NONE when the server keeps none). */
  #stateOf(clientId: number): ConnState {
    return this.#sessions.get(clientId)?.state ?? CONNST.NONE;
  }

  /**
   * The one place a client's connection life changes: `to` must be a legal step from its state
   * (conn-life.ts; an illegal one throws PMRPC_ERR_CONN_STATE before anything changes). `conn`:
   * its new connection (open); otherwise it keeps the one it has.
   */
  #enter(clientId: number, to: ConnState, conn?: Conn): void {
    const s = this.#sessions.get(clientId);
    connTransition(s?.state ?? CONNST.NONE, to, clientId);
    this.#sessions.delete(clientId);
    if (to !== CONNST.NONE) this.#sessions.set(clientId, { state: to, conn: conn ?? s?.conn });
  }

  /** The clients in state `st`, in the order they entered it. */
  #inState(st: ConnState): number[] {
    const out: number[] = [];
    for (const [id, s] of this.#sessions) if (s.state === st) out.push(id);
    return out;
  }

  /** c is its client's current connection and open: it is polled. */
  #live(c: Conn): boolean {
    const s = this.#sessions.get(c.clientId);
    return s !== undefined && s.conn === c && s.state === CONNST.OPEN && this.halted === undefined;
  }

  get serving(): boolean {
    return this.#state === 'serving';
  }

  /** A client's connection state (src/rpc/conn-life.ts): none, dormant, open, error or closing. */
  connState(clientId: number): ConnState {
    return this.#stateOf(clientId);
  }

  /** The longest payload a request may carry (a ring slot less its header). */
  get maxPayloadBytes(): number {
    return this.store.geometry.slotBytes - 32;
  }

  register(method: string, handler: RpcHandler, options: Partial<MethodOptions> = {}): this {
    if (typeof method !== 'string' || !METHOD_RE.test(method)) throw new TypeError(`method must be a name matching ${METHOD_RE}, got ${String(method)}`);
    if (typeof handler !== 'function') throw new TypeError('handler must be a function');
    const { pooled, keys } = resolveOptions(METHOD_DEFAULTS, options, { pooled: bool, keys: optional(callable()) });
    if (pooled && this.options.pool === undefined) throw new TypeError(`method ${method} is pooled but the server has no pool`);
    if (this.#state === 'closed') throw new PmrpcError(RpcErrorCodes.NOT_SERVING, 'the server is closed');
    const id = methodId(method);
    if (id === GOODBYE_ID) throw new PmrpcError(RpcErrorCodes.METHOD_EXISTS, `method ${method} ${method === GOODBYE_METHOD ? 'is' : 'has the same id as'} the reserved ${GOODBYE_METHOD}`);
    const had = this.#methods.get(id);
    if (had !== undefined) throw new PmrpcError(RpcErrorCodes.METHOD_EXISTS, had.name === method ? `method ${method} is already registered` : `method ${method} has the same id as ${had.name}`);
    this.#methods.set(id, { name: method, handler, pooled, keys });
    return this;
  }

  /**
   * Starts serving. A store that was opened (after a restart) is recovered first, with the
   * registered handlers re-executing the durable requests past the applied ones: register every
   * method before start().
   */
  start(): RecoveryReport | undefined {
    if (this.#state !== 'new') throw new PmrpcError(RpcErrorCodes.NOT_SERVING, `start() on a server that is ${this.#state}`);
    let report: RecoveryReport | undefined;
    if (!this.store.ready) report = this.store.recover((e, view) => this.#effects(e, view).record);
    this.#state = 'serving';
    // A restart is a sign of life for every client: each gets a full lease to reconnect.
    const now = this.options.clock.nowMs();
    for (const e of this.store.conn.entries()) this.#lastSeen.set(e.clientId, now);
    if (report !== undefined) {
      this.#restartedAt = now;
      for (const e of this.store.conn.entries()) this.#enter(e.clientId, CONNST.DORMANT);
    }
    // A goodbye that recovery re-executed (its client was not told): finish it as the live path would.
    for (const c of report?.clients ?? []) {
      if (c.reexecute.at(-1)?.methodId === GOODBYE_ID) {
        this.#enter(c.clientId, CONNST.CLOSING);
        this.#tryRelease(c.clientId, 'goodbye');
      }
    }
    return report;
  }

  /**
   * The connection handshake (in-process: a call; over a transport: its connect exchange). A new
   * client gets a fresh id and ring; a reconnecting one (`clientId`) gets its resume point and the
   * results the server still knows for the sequences it awaits. The returned server QP is what the
   * client's link connects to.
   */
  accept(request: AcceptRequest = {}): { sqp: ServerQp; info: ConnectionInfo } {
    if (this.#state !== 'serving') throw new PmrpcError(RpcErrorCodes.NOT_SERVING, 'the server is not serving: call start() first');
    if (request === null || typeof request !== 'object') throw new TypeError(`request must be an object, got ${String(request)}`);
    const awaiting = request.awaiting ?? [];
    if (!Array.isArray(awaiting) || awaiting.some((s) => !Number.isSafeInteger(s) || s < 1)) throw new TypeError('awaiting must be an array of positive integers');
    const store = this.store;
    let clientId: number;
    let resumeSeq: number;
    let secret: string | undefined;
    if (request.clientId === undefined) {
      const bytes = this.options.entropy.bytes(CLIENT_SECRET_BYTES);
      if (!(bytes instanceof Uint8Array) || bytes.length !== CLIENT_SECRET_BYTES) throw new TypeError(`entropy.bytes(${CLIENT_SECRET_BYTES}) must return ${CLIENT_SECRET_BYTES} bytes`);
      try {
        clientId = store.register(bytes).clientId;
      } catch (e) {
        // A full table: a slot whose lease expired (or whose client said goodbye) is given back first.
        if (!isPmrpcError(e, 'PMRPC_ERR_TABLE_FULL') || this.#reclaim() === undefined) throw e;
        clientId = store.register(bytes).clientId;
      }
      secret = Buffer.from(bytes).toString('base64url');
      resumeSeq = 1;
    } else {
      clientId = request.clientId;
      // Who the client is, before anything of it is touched: its id alone proves nothing.
      if (this.#stateOf(clientId) === CONNST.CLOSING) throw new PmrpcError('PMRPC_ERR_CLIENT_RELEASED', `client ${clientId} said goodbye: its slot is being released`);
      store.client(clientId); // PMRPC_ERR_UNKNOWN_CLIENT, PMRPC_ERR_CLIENT_RELEASED
      store.authenticate(clientId, decodeSecret(request.secret)); // PMRPC_ERR_CLIENT_AUTH
      const old = this.#sessions.get(clientId)?.conn;
      if (old !== undefined) {
        // A live reconnect: take in what already arrived, make every consumed entry durable (the
        // client will count everything before the resume point as durable), drop the old QP.
        // Not inside a CPU pass: a connection may drop (and its client reconnect) synchronously in
        // the middle of one (the pass's own notify or persist); that pass processes what it polled
        // and answers on the client's current connection (#process), so a nested pass here would
        // only interleave two batches of the store.
        if (this.#passes === 0) this.#service(old); // (an open connection only)
        if (!this.#faults.skipReconnectPersist) for (let s = store.conn.appliedSeq(clientId) + 1; s < old.ring.nextSeq; s++) old.ring.persistEntry(s);
        resumeSeq = old.ring.nextSeq;
        this.#drop(old);
      } else {
        resumeSeq = store.resumeSeq(clientId);
      }
    }
    // strict: a batch whose msync still runs off the thread (syncAsync) is not on the disk yet, and
    // this reply (the resume point, the applied sequence, the kept results) tells the client about
    // it without passing the ack gate: sync it first.
    if (this.#strictFile && this.region.unsyncedBytes > 0) this.region.sync();
    const info = store.client(clientId);
    const g = store.geometry;
    const ringBytes = g.ringSlots * g.slotBytes;
    const pd = this.nic.allocPd();
    const mr = this.nic.registerMr(pd, info.ringOffset, ringBytes, Access.REMOTE_WRITE | Access.REMOTE_READ | Access.FLUSH_PERSISTENT | Access.FLUSH_GLOBAL);
    const sqp = this.nic.createQp(pd);
    const ring = store.ring(clientId);
    invariant(ring.nextSeq === resumeSeq, () => `the ring polls from ${ring.nextSeq}, not the resume point ${resumeSeq}`);
    const conn: Conn = { clientId, sqp, mr, ring, stops: [], ackedUpTo: resumeSeq - 1, recvUpTo: resumeSeq - 1, polledEmptyIn: -1, deferred: undefined };
    this.#enter(clientId, CONNST.OPEN, conn);
    this.#lastSeen.set(clientId, this.options.clock.nowMs());
    const applied = store.conn.appliedSeq(clientId);
    if (this.#rec.arrives === 'recv') {
      for (let s = resumeSeq; s <= applied + g.ringSlots; s++) sqp.postRecv({ id: s, addr: ring.slotOffset(s), len: g.slotBytes });
      conn.recvUpTo = Math.max(conn.recvUpTo, applied + g.ringSlots);
      conn.stops.push(this.#poller.watchRecv(sqp, () => this.#doorbell(conn)));
    } else {
      if (this.#rec.arrives === 'flush-request') {
        // Flush requests carry the sequence in imm and no payload: zero-length receive buffers.
        // 2 × ringSlots: up to ringSlots requests may be applied (their entries polled on an
        // earlier request's pass) while their own SENDs wait for a pass, and ringSlots more sent.
        for (let i = 0; i < 2 * g.ringSlots; i++) sqp.postRecv({ id: i, addr: 0, len: 0 });
        conn.stops.push(this.#poller.watchRecv(sqp, (c) => this.#onFlushRequest(conn, c)));
      }
      // gpspm's doorbell is its flush request; the other WRITE strategies watch the ring for drained writes.
      else conn.stops.push(this.#poller.watchMemory({ offset: info.ringOffset, len: ringBytes, qpn: sqp.qpn }, () => this.#doorbell(conn)));
    }
    const results: KnownResult[] = [];
    for (const s of awaiting) {
      if (s > applied) continue;
      const kept = store.resultOf(clientId, s);
      // A record without a kept result (keepResults off) reads back as an empty result.
      if (kept === undefined || kept.length === 0) results.push({ seq: s, status: 'lost' });
      else {
        const k = decodeKept(kept);
        results.push({ seq: s, status: k.status === STATUS_OK ? 'ok' : 'error', bytes: k.bytes });
      }
    }
    return {
      sqp,
      info: Object.freeze({
        clientId, strategy: this.strategy, ringOffset: info.ringOffset, ringSlots: g.ringSlots, slotBytes: g.slotBytes,
        rkey: mr.rkey, resumeSeq, appliedSeq: applied, epoch: store.epoch, results, ...(secret === undefined ? {} : { secret }),
      }),
    };
  }

  /** Stops serving: the poller stops, every connection's QP is destroyed (the NIC cache drains). */
  close(): void {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    for (const s of [...this.#sessions.values()]) if (s.conn !== undefined) this.#drop(s.conn);
    this.#held = []; // their connections are gone: nothing to answer
    this.#poller.close();
    try {
      this.store.completeAll(); // the lazy flags of group commit (recovery would replay them anyway)
    } catch {
      // a failed msync (sticky PMRPC_ERR_SYNC_FAILED) or a closed region: recovery replays the records
    }
  }

  /**
   * Releases every client whose lease expired (silent for leaseMs) or that said goodbye, when
   * canRelease allows and every entry of it is applied. Returns their ids. (A full table does this
   * by itself, one slot at a time, when a new client needs one.)
   */
  releaseExpired(): number[] {
    if (this.#state !== 'serving') return [];
    const out: number[] = [];
    for (const id of this.#inState(CONNST.CLOSING)) if (this.#tryRelease(id, 'goodbye')) out.push(id);
    for (const id of this.#expired()) if (this.#tryRelease(id, 'lease')) out.push(id);
    return out;
  }

  /** Clients in the table whose lease has expired, the longest silent first. */
  #expired(): number[] {
    const now = this.options.clock.nowMs();
    const lease = this.options.leaseMs;
    return this.store.conn
      .entries()
      .map((e) => ({ id: e.clientId, seen: this.#lastSeen.get(e.clientId) ?? Number.NEGATIVE_INFINITY }))
      .filter((x) => now - x.seen >= lease)
      .sort((a, b) => a.seen - b.seen)
      .map((x) => x.id);
  }

  /**
   * Frees one slot for a new client: a client that said goodbye first, then the longest-expired
   * lease, then a pre-crash client not back restartGraceMs after the restart (lowest id first).
   */
  #reclaim(): number | undefined {
    for (const id of this.#inState(CONNST.CLOSING)) if (this.#tryRelease(id, 'goodbye')) return id;
    for (const id of this.#expired()) if (this.#tryRelease(id, 'lease')) return id;
    if (this.options.clock.nowMs() - this.#restartedAt >= this.options.restartGraceMs) {
      for (const id of this.#inState(CONNST.DORMANT).sort((a, b) => a - b)) if (this.#tryRelease(id, 'lease')) return id;
    }
    return undefined;
  }

  /**
   * Releases a client's slot if it may go now: canRelease allows it, no request of it waits in the
   * pool, and — its connection dropped (the NIC cache drained into its ring) and whatever reached
   * the ring processed — every entry of it is applied. The release is durable when this returns true.
   */
  #tryRelease(clientId: number, why: 'goodbye' | 'lease', dropConn = true): boolean {
    if (!this.store.conn.has(clientId)) {
      if (this.#stateOf(clientId) === CONNST.CLOSING) this.#enter(clientId, CONNST.NONE);
      return false;
    }
    if (this.options.canRelease !== undefined && this.options.canRelease(clientId) !== true) return false;
    if (this.#pool?.holds(clientId) === true) return false;
    const c = this.#sessions.get(clientId)?.conn;
    if (c !== undefined && dropConn) {
      this.#service(c); // (an open connection only)
      this.#drop(c);
    }
    try {
      // What drained into the ring when the QP went: processed (nobody to answer).
      const ring = this.store.ring(clientId);
      for (let i = 0; i <= this.store.geometry.ringSlots && this.#stateOf(clientId) !== CONNST.CLOSING; i++) {
        const p = ring.poll();
        if (p.kind !== 'entry') break;
        if (p.entry.methodId === GOODBYE_ID) this.#enter(clientId, CONNST.CLOSING);
        this.store.commit(clientId, p.entry.seq, this.#effects(p.entry, this.store.appView).record);
      }
      // After its goodbye a client sends nothing: whatever it placed past it is void.
      if (this.#stateOf(clientId) === CONNST.CLOSING) this.store.discardUnapplied(clientId);
      this.store.release(clientId);
    } catch {
      return false; // PMRPC_ERR_CLIENT_BUSY, a torn entry, a full log: the slot stays; tried again later
    }
    if (this.#sessions.has(clientId)) this.#enter(clientId, CONNST.NONE);
    this.#lastSeen.delete(clientId);
    this.releases[why]++;
    return true;
  }

  /** Runs pending CPU passes now (tests and the crash-test driver; normally they run on `schedule`). */
  runPending(): number {
    return this.#poller.runPending();
  }

  #drop(c: Conn): void {
    // Nothing more is polled for a dropped connection (a pass already running answers on the client's current one).
    const s = this.#sessions.get(c.clientId);
    if (s?.conn === c) {
      // A cut connection's entries waiting in the pool are never dispatched (nor after a reconnect).
      if (s.state === CONNST.ERROR) this.#pool?.drop(c);
      s.conn = undefined;
    }
    for (const stop of c.stops.splice(0)) stop();
    this.nic.destroyQp(c.sqp.qpn);
    this.nic.deregisterMr(c.mr);
  }

  #fail(c: Conn, error: unknown): void {
    if (isInvariantError(error)) {
      this.#halt(error);
      return;
    }
    // A client that broke the protocol (an entry beyond its credits, a torn entry that never
    // completes): its connection is cut, the others are served on.
    const s = this.#sessions.get(c.clientId);
    if (s?.conn === c) {
      if (s.state === CONNST.OPEN) this.#enter(c.clientId, CONNST.ERROR);
    } else this.#pool?.drop(c); // a connection already replaced or dropped: its waiting entries are void
    this.connectionErrors.push({ clientId: c.clientId, error });
    if (this.connectionErrors.length > 1024) this.connectionErrors.shift();
    for (const s of c.stops.splice(0)) s();
  }

  /** A broken invariant: nothing is polled or answered again (every connection is cut); onInvariant is told once. */
  #halt(error: PmrpcError): void {
    if (this.halted !== undefined) return;
    this.halted = error;
    for (const s of this.#sessions.values()) if (s.conn !== undefined) for (const stop of s.conn.stops.splice(0)) stop();
    this.options.onInvariant(error);
  }

  /** The broken invariant that stopped this server (PMRPC_ERR_INVARIANT), if any. */
  halted: PmrpcError | undefined;

  /** gpspm: the client asks the CPU to persist the entry of sequence `imm`. */
  #onFlushRequest(c: Conn, rc: RecvCompletion): void {
    if (!this.#live(c) || this.#state !== 'serving') return;
    // Every flush request already received is taken now (strict group commit: one pass, one
    // batch, one msync for all of them, not one per request; their poll events then find none).
    const seqs: number[] = [];
    for (const r of [rc, ...c.sqp.pollRecv(this.store.geometry.ringSlots)]) {
      c.sqp.postRecv({ id: r.recvId, addr: 0, len: 0 });
      if (r.imm !== undefined && r.imm >= 1) seqs.push(r.imm);
    }
    if (seqs.length === 0) return;
    // Poll first: the entries (which the same chains wrote) are in visible memory (rule ii).
    this.#service(c, () => this.#persistAndAck(c, seqs), true);
  }

  #persistAndAck(c: Conn, seqs: number[]): void {
    if (seqs.length === 0) return;
    const upTo = Math.max(c.ackedUpTo, seqs[seqs.length - 1]!);
    const ack = (): void => {
      if (upTo > c.ackedUpTo) {
        c.ackedUpTo = upTo;
        c.sqp.notify(encodeAck(upTo), RPC_ACK_IMM, TRANSFER);
      }
    };
    if (this.#faults.ackBeforePersist) ack();
    if (!this.#faults.skipReceiverPersist) {
      for (const s of seqs) this.region.flush(c.ring.slotOffset(s), this.store.geometry.slotBytes);
      this.region.drain();
    }
    // strict group commit: the ACK waits with the batch's RESULTs, so the entries share the records' msync.
    if (!this.#faults.ackBeforePersist) {
      if (this.#replies !== undefined) this.#replies.push(ack);
      else ack();
    }
  }

  /** CPU passes running now (a reconnect accepted in the middle of one does not start another). */
  #passes = 0;

  /** One CPU pass for a connection: poll FIFO, ACK what needs the CPU's persist, process. */
  #service(c: Conn, beforeProcess?: () => void, mayDefer = false): void {
    if (!this.#live(c) || this.#state !== 'serving') return;
    if (mayDefer && this.#deferPass(c, beforeProcess)) return;
    this.#passes++;
    try {
      this.#pass([{ c, before: beforeProcess }]);
    } finally {
      this.#passes--;
    }
  }

  /** A drained write into c's ring (or a receive completion): a CPU pass, unless one of this poller pass already found the ring empty. */
  #doorbell(c: Conn): void {
    if (c.polledEmptyIn === this.#poller.passId) return;
    this.#service(c, undefined, true);
  }

  /**
   * strict: the CPU passes waiting for one msync (#deferPass), by the mark they wait for; they run
   * as ONE batch from its call back (#runDeferred). undefined: none waits.
   */
  #deferredGroup: { mark: number; conns: Conn[] } | undefined;

  /**
   * strict (inline handlers): a CPU pass whose redo-log step (the lazy images and flags of the
   * previous batch, written at this batch's first commit) depends on a batch whose msync still
   * runs off the thread would sync it on the thread first (RedoLog.advanceMark). Instead the pass
   * waits for that msync's call back (PmemRegion.whenSynced) — the socket reads and NIC passes go on
   * meanwhile, their msyncs queued — and runs then, with whatever arrived in the ring by then. The
   * passes of every connection waiting for the same msync run together, as one redo-log batch with
   * one msync (#runDeferred): two connections whose requests came while one msync ran share the
   * next instead of taking one each. true: deferred (or joined a deferred pass of this connection).
   */
  #deferPass(c: Conn, beforeProcess: (() => void) | undefined): boolean {
    if (c.deferred !== undefined) {
      if (beforeProcess !== undefined) c.deferred.push(beforeProcess);
      return true;
    }
    if (!this.#strictFile || this.#pool !== undefined || !this.region.syncing) return false;
    const mark = this.store.log.advanceMark;
    if (mark < 0 || this.region.isSynced(mark)) return false;
    c.deferred = beforeProcess === undefined ? [] : [beforeProcess];
    const g = this.#deferredGroup;
    if (g !== undefined && g.mark === mark) {
      g.conns.push(c);
      return true;
    }
    const group = { mark, conns: [c] };
    this.#deferredGroup = group;
    // (A failed msync: the pass's own sync reports it, as it would have without the wait.)
    this.region.whenSynced(mark, () => this.#runDeferred(group));
    return true;
  }

  /** The passes of a deferred group, from its msync's call back: one batch for all of them (or deferred again, if another batch's msync now runs ahead of them). */
  #runDeferred(group: { mark: number; conns: Conn[] }): void {
    if (this.#deferredGroup === group) this.#deferredGroup = undefined;
    const parts: PassPart[] = [];
    for (const c of group.conns) {
      const waiting = c.deferred ?? [];
      c.deferred = undefined;
      const before = waiting.length === 0 ? undefined : waiting.length === 1 ? waiting[0] : () => {
        for (const f of waiting) f();
      };
      if (!this.#live(c) || this.#state !== 'serving') continue;
      // A batch committed since (a reconnect's or a release's pass) whose msync runs now: wait for it.
      if (this.#deferPass(c, before)) continue;
      parts.push({ c, before });
    }
    if (parts.length === 0) return;
    this.#passes++;
    try {
      this.#pass(parts);
    } finally {
      this.#passes--;
    }
  }

  /** One CPU pass over one or more connections (strict: several that waited for the same msync), one redo-log batch for all of them. */
  #pass(parts: readonly PassPart[]): void {
    // The ACK of an entry that arrives by its flush request goes out on that request (#onFlushRequest).
    const acks = this.#rec.serverAcks && this.#rec.arrives !== 'flush-request';
    const batch: BatchPart[] = [];
    for (const { c, before } of parts) {
      const polled: RingEntry[] = [];
      try {
        for (let i = 0; i < this.options.batchMax; i++) {
          const p = c.ring.poll();
          if (p.kind !== 'entry') {
            // Empty (not a partial entry, whose polls are counted): nothing drained before this poller pass is left.
            if (p.kind === 'empty') c.polledEmptyIn = this.#poller.passId;
            break;
          }
          polled.push(p.entry);
        }
      } catch (e) {
        // Entries before the failure are still acknowledged and processed; the connection is cut.
        this.#fail(c, e);
      }
      if (this.#pool === undefined && this.#strictFile) {
        batch.push({ c, polled, first: () => {
          if (acks) this.#persistAndAck(c, polled.map((e) => e.seq));
          before?.();
        } });
        continue;
      }
      const part: BatchPart = { c, polled };
      try {
        if (acks) this.#persistAndAck(c, polled.map((e) => e.seq));
        before?.();
        if (this.#pool === undefined) this.#processBatch([part]);
        else this.#pool.enqueue(c, polled);
      } catch (e) {
        // The store refused (a full log, a broken layout): this connection stops, the others go on.
        this.#fail(c, e);
        continue;
      }
      if (!part.failed) this.#again(c, polled);
    }
    if (batch.length === 0) return;
    this.#processBatch(batch);
    for (const b of batch) if (!b.failed) this.#again(b.c, b.polled);
  }

  /** More may have arrived than one batch: another pass. */
  #again(c: Conn, polled: readonly RingEntry[]): void {
    if (polled.length === this.options.batchMax && this.#live(c)) this.options.schedule(() => this.#service(c, undefined, true));
  }

  /**
   * Group commit of one poll batch (docs/recovery.md, "Group commit") — of one connection, or
   * (strict) of several whose passes waited for the same msync: the redo log's persists of the
   * whole batch are shared (RecoveryStore.batch) and, on a `strict` region, synced by a few msyncs
   * per batch instead of several per request (PmemRegion.groupCommit); the batch's RESULTs (each
   * carrying its credit) wait until the batch is settled, and leave through the region's ack gate,
   * which syncs whatever is still waiting first. A part the store refuses (a full log, a broken
   * layout) is answered for what was settled and its connection cut; the parts after it run as
   * batches of their own.
   */
  #processBatch(parts: BatchPart[]): void {
    if (parts.every((p) => p.polled.length === 0 && p.first === undefined)) return;
    for (const p of parts) p.replies = [];
    let failure: unknown;
    let at = 0;
    // strict (inline handlers): the batch's msync runs off the JS thread (PmemRegion.syncAsync)
    // while the next requests are received; its replies wait in #held until it calls back.
    let held: HeldReplies[] | undefined;
    try {
      const run = (): void => this.store.batch(() => {
        for (at = 0; at < parts.length; at++) {
          const p = parts[at]!;
          this.#replies = p.replies;
          p.first?.();
          for (const entry of p.polled) this.#process(p.c, entry);
          // Settled part by part (still one batch: the lazy step ran at its first commit), so each part's credit is read below.
          if (parts.length > 1) this.store.settle();
        }
      });
      if (this.#strictFile && this.#pool === undefined) {
        const hs: HeldReplies[] = parts.map((p) => ({ c: p.c, replies: p.replies!, synced: false, failure: undefined, applied: -1 }));
        held = hs;
        this.#held.push(...hs);
        let later = false; // a call back inside groupCommitAsync is released below, outside the batch
        this.region.groupCommitAsync(() => {
          run();
          for (const h of hs) if (this.store.conn.has(h.c.clientId)) h.applied = this.store.conn.appliedSeq(h.c.clientId);
        }, (err) => {
          for (const h of hs) {
            h.synced = true;
            h.failure = err;
          }
          if (later) this.#releaseHeld();
        });
        later = true;
      } else this.region.groupCommit(run);
    } catch (e) {
      failure = e;
      if (held !== undefined) this.#held = this.#held.filter((h) => !held!.includes(h));
      held = undefined;
    } finally {
      this.#replies = undefined;
    }
    if (held !== undefined) {
      // Synced at once (nothing new to sync and nothing running, or a sync point on the way): go now.
      if (held[0]!.synced) this.#releaseHeld();
      return;
    }
    // What was settled before a failure is still answered (each RESULT through the ack gate). The
    // batch is settled: its replies follow one another with no processing between, so all but the
    // last of a connection's are sent `more` (a coupled strategy's replies, its durable signals, leave in one write).
    const done = failure === undefined ? parts.length : Math.min(at + 1, parts.length);
    for (let k = 0; k < done; k++) {
      const replies = parts[k]!.replies!;
      const last = replies.length - 1;
      try {
        for (let i = 0; i <= last; i++) {
          this.#more = i < last;
          replies[i]!();
        }
      } catch (e) {
        parts[k]!.failed = true;
        this.#fail(parts[k]!.c, e);
      } finally {
        this.#more = false;
      }
    }
    if (failure === undefined) return;
    // The store refused this part: its connection stops, the others go on (each a batch of its own).
    const bad = parts[Math.min(at, parts.length - 1)]!;
    bad.failed = true;
    this.#fail(bad.c, failure);
    for (const p of parts.slice(at + 1)) this.#processBatch([p]);
  }

  /**
   * strict: batches whose replies wait for their msync (syncAsync), oldest first. They leave in this
   * order, a batch once its msync called back or a later sync covered it — every reply still
   * through the region's ack gate; after a failed msync, none (the connection is cut).
   */
  #held: HeldReplies[] = [];

  #releaseHeld(): void {
    const held = this.#held;
    while (held.length > 0) {
      const h = held[0]!;
      if (!h.synced) return;
      held.shift();
      if (h.failure !== undefined) {
        this.#fail(h.c, h.failure);
        continue;
      }
      const last = h.replies.length - 1;
      this.#replyApplied = h.applied;
      try {
        for (let i = 0; i <= last; i++) {
          this.#more = i < last;
          h.replies[i]!();
        }
      } catch (e) {
        this.#fail(h.c, e);
      } finally {
        this.#more = false;
        this.#replyApplied = -1;
      }
    }
  }

  /** notify() options of a RESULT: lazy unless the strategy is coupled (its RESULT is the durable signal). */
  #lazyResults: { lazy?: boolean; transfer: boolean };

  /** The region msyncs (strict, file-backed): a pass's ACKs join its RESULTs behind the batch's syncs. */
  #strictFile: boolean;

  /** Inside #releaseHeld: the credit the batch's RESULTs carry (HeldReplies.applied); -1 elsewhere (read it when sending). */
  #replyApplied = -1;

  /** Inside #processBatch's replies: another reply follows this one at once (notify's `more`). */
  #more = false;

  /** Inside #processBatch: RESULTs held until the batch is settled. */
  #replies: Array<() => void> | undefined;

  #flushReplies(): void {
    const rs = this.#replies;
    if (rs === undefined || rs.length === 0) return;
    this.store.settle();
    for (const send of rs.splice(0)) send();
  }

  #process(from: Conn, entry: RingEntry, computed?: ComputedEffects): void {
    // The client may have reconnected since the entry was polled (pool mode): answer on its current connection.
    const session = this.#sessions.get(from.clientId);
    const c = session?.conn;
    if (c === undefined || session!.state === CONNST.CLOSING || !this.store.conn.has(c.clientId)) return; // dropped, or after its goodbye: nothing more
    this.#lastSeen.set(c.clientId, this.options.clock.nowMs());
    const { record, status, bytes } = computed ?? this.#effects(entry, this.store.appView);
    const coupled = this.#rec.coupled;
    if (coupled && this.#faults.replyBeforeApply) this.#reply(c, entry.seq, status, bytes, this.store.conn.appliedSeq(c.clientId));
    this.store.commit(entry.clientId, entry.seq, record);
    if (entry.methodId === GOODBYE_ID) {
      this.#flushReplies(); // settled and answered before the release, in order
      if (this.#replies !== undefined) this.store.settle();
      // Every earlier entry is applied (FIFO). The release is durable before the answer goes out;
      // a slot canRelease keeps is released later (releaseExpired, or when a slot is needed).
      this.#enter(c.clientId, CONNST.CLOSING);
      this.#tryRelease(c.clientId, 'goodbye', false);
      this.#reply(c, entry.seq, status, bytes, entry.seq);
      this.#drop(c);
      return;
    }
    const send = (): void => {
      // The client may have reconnected since (its old connection dropped in the middle of this pass): answer on the current one.
      const c = this.#sessions.get(from.clientId)?.conn ?? from;
      const applied = this.#replyApplied >= 0 ? this.#replyApplied : this.store.conn.appliedSeq(c.clientId);
      const g = this.store.geometry;
      // The slot of seq + ringSlots is free now: repost it (SEND strategies) before the credit goes out.
      // (Once: a reconnect accepted in the middle of this pass may have posted it already.)
      const next = entry.seq + g.ringSlots;
      if (this.#rec.arrives === 'recv' && next > c.recvUpTo) {
        c.sqp.postRecv({ id: next, addr: c.ring.slotOffset(next), len: g.slotBytes });
        c.recvUpTo = next;
      }
      if (!(coupled && this.#faults.replyBeforeApply)) this.#reply(c, entry.seq, status, bytes, applied + (this.#faults.earlyCredit ? 1 : 0));
    };
    if (this.#replies !== undefined) this.#replies.push(send);
    else send();
  }

  /** Most pooled requests that were computing at once (pool mode). */
  get poolInFlightPeak(): number {
    return this.#pool?.inFlightPeak ?? 0;
  }

  /** Requests whose pooled effects overlapped a concurrent request's and were recomputed serially (pool mode). */
  get poolClashes(): number {
    return this.#pool?.clashes ?? 0;
  }

  #guarded(c: Conn, fn: () => void): void {
    try {
      fn();
    } catch (e) {
      this.#fail(c, e);
    }
  }

  #reply(c: Conn, seq: number, status: number, bytes: Uint8Array, appliedSeq: number): void {
    // A decoupled strategy's RESULT follows its durable signal: the transport may gather it with the
    // pass's other RESULTs (one socket write). A coupled reply is the durable signal: never lazy.
    c.sqp.notify(encodeResultOf(seq, appliedSeq, status, bytes), RPC_RESULT_IMM, this.#more ? MORE : this.#lazyResults);
  }

  /** The effects of an entry, as committed (record) and as answered (status, bytes). Never throws for a request's fault. */
  #effects(entry: RingEntry, view: AppView, compute?: () => RpcEffects): ComputedEffects {
    const keep = this.options.keepResults;
    if (entry.methodId === GOODBYE_ID) return { record: keep ? { images: [], result: encodeKept(STATUS_OK, new Uint8Array(0)) } : { images: [] }, status: STATUS_OK, bytes: new Uint8Array(0) };
    const m = this.#methods.get(entry.methodId);
    if (m === undefined) return this.#failed(RpcErrorCodes.UNKNOWN_METHOD, `no method with id ${entry.methodId}`);
    let eff: RpcEffects;
    try {
      eff = compute !== undefined ? compute() : m.handler({ clientId: entry.clientId, seq: entry.seq, method: m.name, payload: entry.payload }, view);
    } catch (e) {
      if (isInvariantError(e)) throw e; // pmrpc's own state is wrong: not the request's fault (#fail halts)
      const err = e as { code?: unknown; message?: unknown };
      return this.#failed(typeof err?.code === 'string' && err.code.startsWith('PMRPC_ERR_') ? err.code : RpcErrorCodes.HANDLER_FAILED, String(err?.message ?? e));
    }
    const result = eff?.result ?? new Uint8Array(0);
    // (No spread: one object of one shape per request.)
    const record: Effects = keep ? { images: eff?.images, result: encodeKept(STATUS_OK, result instanceof Uint8Array ? result : new Uint8Array(0)) } : { images: eff?.images };
    try {
      if (!(result instanceof Uint8Array)) throw new TypeError('effects.result must be a Uint8Array');
      checkEffects(record, this.store.layout);
    } catch (e) {
      return this.#failed(RpcErrorCodes.HANDLER_FAILED, `invalid effects: ${(e as Error).message}`);
    }
    return { record, status: STATUS_OK, bytes: result };
  }

  /** The effects of a request that failed: no images, the coded error as its result. */
  #failed(code: string, message: string): ComputedEffects {
    const roomBytes = this.store.geometry.recordBytes - RECORD_HEADER_BYTES - 8;
    const bytes = encodeError(code, message, Math.min(256, roomBytes - 1));
    return { record: this.options.keepResults ? { images: [], result: encodeKept(STATUS_ERROR, bytes) } : { images: [] }, status: STATUS_ERROR, bytes };
  }

}
