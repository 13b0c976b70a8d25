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
 * closing), changed in one place (#enter); a connection and a session are typed there too. The rest,
 * one job a file: options, fault switches and the handshake's shapes (server-options.ts); the
 * Hello's checks, a new secret, the known results (handshake.ts); method ids, the registered
 * handlers and an entry's effects (methods.ts); the strict batch — replies held until their msync,
 * passes waiting for one (strict-batch.ts); leases (leases.ts); pool mode (pool.ts).
 */
import { invariant, isInvariantError, isPmrpcError, nextTurn, PmrpcError, resolveOptions, type PmemRegion } from '../../pmem/index.js';
import { Access, CpuPoller, type RecvCompletion, type Rnic, type ServerQp } from '../../flush/index.js';
import { RecoveryStore, type RecoveryReport, type RingEntry } from '../../recovery/index.js';
import { RpcErrorCodes } from './errors.js';
import { rpcStrategy, type RpcStrategy, type RpcStrategyRecord } from './strategies.js';
import type { RpcHandler } from './handler.js';
import { CONNST, connTransition, type Conn, type ConnState, type Session } from './conn-life.js';
import { PoolDispatch, type ComputedEffects } from './pool.js';
import { GOODBYE_ID, MethodTable, type MethodOptions } from './methods.js';
import { checkRpcFaults, RPC_SERVER_CHECKS, RPC_SERVER_DEFAULTS, type AcceptRequest, type ConnectionInfo, type RpcFaults, type RpcServerOptions } from './server-options.js';
import { StrictBatch, type PassPart } from './strict-batch.js';
import { Leases } from './leases.js';
import { checkAccept, decodeSecret, knownResults, newSecret } from './handshake.js';
import { encodeAck, encodeResultOf, RESULT_HEADER_BYTES, RESULT_PACK_BYTES_MAX, ResultPack, RPC_ACK_IMM, RPC_RESULT_IMM, RPC_RESULTS_IMM } from './wire.js';

export {
  checkRpcFaults,
  CLIENT_SECRET_BYTES,
  RPC_FAULT_NAMES,
  RPC_SERVER_DEFAULTS,
  rethrowInvariant,
  type AcceptRequest,
  type ConnectionInfo,
  type KnownResult,
  type RpcFaults,
  type RpcServerOptions,
} from './server-options.js';
export { GOODBYE_METHOD, methodId, type MethodOptions } from './methods.js';

/** A connection's part of a redo-log batch (#processBatch): its polled entries, what goes first, its replies. */
interface BatchPart {
  c: Conn;
  polled: RingEntry[];
  first?: () => void;
  replies?: Array<() => void>;
  /** Its connection was cut in this batch (no further pass is scheduled for it). */
  failed?: boolean;
}

/** The sequences of entries[from..]. */
function seqsFrom(entries: readonly RingEntry[], from: number): number[] {
  const out: number[] = [];
  for (let i = from; i < entries.length; i++) out.push(entries[i]!.seq);
  return out;
}

/** notify() options of an ACK: its bytes are encoded for the message alone (handed over, not copied). */
const TRANSFER = Object.freeze({ transfer: true });
/** notify() options of a reply followed at once by another of the same settled batch (gathered: one socket write). */
const MORE = Object.freeze({ more: true, transfer: true });

export class DurableRpcServer {
  readonly nic: Rnic;
  readonly store: RecoveryStore;
  readonly region: PmemRegion;
  readonly options: Readonly<RpcServerOptions>;
  readonly strategy: RpcStrategy;
  /** The strategy's record, looked up once (the hot path branches on its fields, never on the name). */
  readonly #rec: RpcStrategyRecord;
  #faults: Readonly<RpcFaults>;
  /** The registered methods and the effects of an entry under them (methods.ts). */
  readonly #methods: MethodTable;
  /** strict, file-backed, inline handlers: the strict batch (strict-batch.ts); undefined otherwise. */
  readonly #strict: StrictBatch<Conn> | undefined;
  /** Pool mode (pool.ts); undefined: every handler runs inline. */
  #pool: PoolDispatch<Conn> | undefined;
  /**
   * Each client's connection life, by client id. Re-inserted at each step (#enter): the map runs
   * in the order the clients entered their states (the longest closing is released first).
   */
  #sessions = new Map<number, Session>();
  #poller: CpuPoller;
  #state: 'new' | 'serving' | 'closed' = 'new';
  /** When each client in the table last showed a sign of life, and who is expired (leases.ts). */
  readonly #leases: Leases;
  /**
   * Entries polled, persisted and ACKed at a NIC run's end (#ackArrived), by client id, in sequence
   * order: the next CPU pass of the client processes them first (or a release commits them).
   * undefined: this server ACKs in its CPU passes only.
   */
  readonly #held: Map<number, RingEntry[]> | undefined;
  /** Connections whose ring something arrived in since the last #ackArrived. */
  readonly #arrived = new Set<Conn>();
  #stopRunEnd: (() => void) | undefined;
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
    this.#methods = new MethodTable(store, o.keepResults);
    this.#leases = new Leases(o.clock, o.leaseMs, o.restartGraceMs);
    // Receiver-persist strategies whose entries arrive in the ring (wrflush, srflush), inline
    // handlers, a region that does not msync: what arrived is polled, persisted and ACKed at the
    // end of the NIC run that brought it (Rnic.runEnded: over TCP, inside the socket read's pump),
    // so the ACK leaves in the same socket write as the run's Responses; the CPU pass processes it.
    if (this.#rec.serverAcks && this.#rec.arrives !== 'flush-request' && !strictFile && o.pool === undefined) {
      this.#held = new Map();
      this.#stopRunEnd = nic.onRunEnd(() => this.#ackArrived());
    }
    this.#strict =
      strictFile && o.pool === undefined
        ? new StrictBatch<Conn>({
            region: this.region,
            store,
            runnable: (c) => this.#live(c) && this.#state === 'serving',
            pass: (parts) => this.#runPass(parts),
            fail: (c, e) => this.#fail(c, e),
            send: (_c, replies, applied) => this.#send(replies, applied),
          })
        : undefined;
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
            effects: (entry, compute) => this.#methods.effects(entry, this.store.appView, compute),
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
    this.#methods.register(method, handler, options, this.options.pool !== undefined, this.#state === 'closed');
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
    if (!this.store.ready) report = this.store.recover((e, view) => this.#methods.effects(e, view).record);
    this.#state = 'serving';
    // A restart is a sign of life for every client: each gets a full lease to reconnect.
    this.#leases.started(this.store.conn.entries().map((e) => e.clientId), report !== undefined);
    if (report !== undefined) {
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
    const awaiting = checkAccept(request);
    const store = this.store;
    let clientId: number;
    let resumeSeq: number;
    let secret: string | undefined;
    if (request.clientId === undefined) {
      const bytes = newSecret(this.options.entropy);
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
    const conn: Conn = { clientId, sqp, mr, ring, packed: request.packedResults === true, stops: [], ackedUpTo: resumeSeq - 1, recvUpTo: resumeSeq - 1, polledEmptyIn: -1, deferred: undefined };
    this.#enter(clientId, CONNST.OPEN, conn);
    this.#leases.seen(clientId);
    const applied = store.conn.appliedSeq(clientId);
    if (this.#rec.arrives === 'recv') {
      for (let s = resumeSeq; s <= applied + g.ringSlots; s++) sqp.postRecv({ id: s, addr: ring.slotOffset(s), len: g.slotBytes });
      conn.recvUpTo = Math.max(conn.recvUpTo, applied + g.ringSlots);
      conn.stops.push(this.#poller.watchRecv(sqp, () => this.#doorbell(conn), this.#held === undefined ? undefined : () => this.#arrived.add(conn)));
    } else {
      if (this.#rec.arrives === 'flush-request') {
        // Flush requests carry the sequence in imm and no payload: zero-length receive buffers.
        // 2 × ringSlots: up to ringSlots requests may be applied (their entries polled on an
        // earlier request's pass) while their own SENDs wait for a pass, and ringSlots more sent.
        for (let i = 0; i < 2 * g.ringSlots; i++) sqp.postRecv({ id: i, addr: 0, len: 0 });
        conn.stops.push(this.#poller.watchRecv(sqp, (c) => this.#onFlushRequest(conn, c)));
      }
      // gpspm's doorbell is its flush request; the other WRITE strategies watch the ring for drained writes.
      else {
        const filter = this.#held === undefined ? undefined : (): boolean => (this.#arrived.add(conn), true);
        conn.stops.push(this.#poller.watchMemory({ offset: info.ringOffset, len: ringBytes, qpn: sqp.qpn, filter }, () => this.#doorbell(conn)));
      }
    }
    // Entries ACKed at a run's end and not yet processed (a reconnect in the middle of a pass, or
    // after the old connection was cut): the client resumes past them, so a pass processes them now.
    if (this.#held?.has(clientId) === true) this.options.schedule(() => this.#service(conn, undefined, true));
    const results = knownResults(store, clientId, awaiting, applied);
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
    this.#strict?.clear(); // the held replies' connections are gone: nothing to answer
    this.#stopRunEnd?.();
    this.#arrived.clear();
    this.#held?.clear(); // durable in their ring and not applied: recovery re-executes them
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
    for (const id of this.#leases.expired(this.store.conn.entries().map((e) => e.clientId))) if (this.#tryRelease(id, 'lease')) out.push(id);
    return out;
  }

  /**
   * Frees one slot for a new client: a client that said goodbye first, then the longest-expired
   * lease, then a pre-crash client not back restartGraceMs after the restart (lowest id first).
   */
  #reclaim(): number | undefined {
    for (const id of this.#inState(CONNST.CLOSING)) if (this.#tryRelease(id, 'goodbye')) return id;
    for (const id of this.#leases.expired(this.store.conn.entries().map((e) => e.clientId))) if (this.#tryRelease(id, 'lease')) return id;
    if (this.#leases.graceOver()) {
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
      // Entries ACKed at a run's end and not processed come first (they were polled before the rest).
      const held = this.#held?.get(clientId);
      for (let i = 0; i <= this.store.geometry.ringSlots + (held?.length ?? 0) && this.#stateOf(clientId) !== CONNST.CLOSING; i++) {
        let entry: RingEntry;
        if (held !== undefined && held.length > 0) entry = held[0]!;
        else {
          const p = ring.poll();
          if (p.kind !== 'entry') break;
          entry = p.entry;
        }
        if (entry.methodId === GOODBYE_ID) this.#enter(clientId, CONNST.CLOSING);
        this.store.commit(clientId, entry.seq, this.#methods.effects(entry, this.store.appView).record);
        if (held !== undefined && held[0] === entry) held.shift();
      }
      if (held?.length === 0) this.#held!.delete(clientId);
      // After its goodbye a client sends nothing: whatever it placed past it is void.
      if (this.#stateOf(clientId) === CONNST.CLOSING) this.store.discardUnapplied(clientId);
      this.store.release(clientId);
      this.#held?.delete(clientId); // after its goodbye: void, as what it placed in the ring
    } catch {
      return false; // PMRPC_ERR_CLIENT_BUSY, a torn entry, a full log: the slot stays; tried again later
    }
    if (this.#sessions.has(clientId)) this.#enter(clientId, CONNST.NONE);
    this.#leases.forget(clientId);
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

  #persistAndAck(c: Conn, seqs: number[], atRunEnd = false): void {
    if (seqs.length === 0) return;
    const ackFirst = this.#faults.ackBeforePersist === true || (atRunEnd && this.#faults.ackBeforePersistInPump === true);
    const upTo = Math.max(c.ackedUpTo, seqs[seqs.length - 1]!);
    const ack = (): void => {
      if (upTo > c.ackedUpTo) {
        c.ackedUpTo = upTo;
        c.sqp.notify(encodeAck(upTo), RPC_ACK_IMM, TRANSFER);
      }
    };
    if (ackFirst) ack();
    if (!this.#faults.skipReceiverPersist) {
      for (const s of seqs) this.region.flush(c.ring.slotOffset(s), this.store.geometry.slotBytes);
      this.region.drain();
    }
    // strict group commit: the ACK waits with the batch's RESULTs, so the entries share the records' msync.
    if (!ackFirst) {
      if (this.#replies !== undefined) this.#replies.push(ack);
      else ack();
    }
  }

  /**
   * The end of a NIC run (Rnic.runEnded, after its idle drain): every connection whose ring something
   * arrived in is polled, what it holds persisted and ACKed — before any of it is processed — and
   * kept (#held) for the CPU pass the same arrivals scheduled. Over TCP this runs inside the
   * socket read's pump, so the ACK leaves in the pump's one write with the run's Responses instead
   * of a write of its own (issue 29); the pass's RESULTs follow as before. Not inside a pass (that
   * pass polls and ACKs itself).
   */
  #ackArrived(): void {
    const arrived = this.#arrived;
    if (arrived.size === 0 || this.#passes > 0) return;
    const held = this.#held!;
    this.#passes++;
    try {
      for (const c of arrived) {
        arrived.delete(c);
        if (!this.#live(c) || this.#state !== 'serving') continue;
        let h = held.get(c.clientId);
        const room = this.options.batchMax - (h?.length ?? 0);
        const seqs: number[] = [];
        try {
          for (let i = 0; i < room; i++) {
            const p = c.ring.poll();
            if (p.kind !== 'entry') break;
            if (h === undefined) held.set(c.clientId, (h = []));
            h.push(p.entry);
            seqs.push(p.entry.seq);
          }
        } catch (e) {
          // A broken ring (an overrun, a torn entry): the pass polls it again and cuts the
          // connection; what was polled here is ACKed now and processed first.
          if (isInvariantError(e)) this.#fail(c, e);
        }
        try {
          this.#persistAndAck(c, seqs, true);
        } catch (e) {
          this.#fail(c, e);
        }
      }
    } finally {
      this.#passes--;
    }
  }

  /** The client's entries ACKed at a run's end and not processed yet (taken: the caller processes them), in order; a new array if none. */
  #takeHeld(clientId: number): RingEntry[] {
    const h = this.#held?.get(clientId);
    if (h === undefined) return [];
    this.#held!.delete(clientId);
    return h;
  }

  /** CPU passes running now (a reconnect accepted in the middle of one does not start another). */
  #passes = 0;

  /** One CPU pass for a connection: poll FIFO, ACK what needs the CPU's persist, process. */
  #service(c: Conn, beforeProcess?: () => void, mayDefer = false): void {
    if (!this.#live(c) || this.#state !== 'serving') return;
    if (mayDefer && this.#strict?.defer(c, beforeProcess) === true) return;
    this.#runPass([{ c, before: beforeProcess }]);
  }

  #runPass(parts: readonly PassPart<Conn>[]): void {
    this.#passes++;
    try {
      this.#pass(parts);
    } finally {
      this.#passes--;
    }
  }

  /** A drained write into c's ring (or a receive completion): a CPU pass, unless one of this poller pass already found the ring empty. */
  #doorbell(c: Conn): void {
    if (c.polledEmptyIn === this.#poller.passId) return;
    this.#service(c, undefined, true);
  }

  /** One CPU pass over one or more connections (strict: several that waited for the same msync), one redo-log batch for all of them. */
  #pass(parts: readonly PassPart<Conn>[]): void {
    // The ACK of an entry that arrives by its flush request goes out on that request (#onFlushRequest).
    const acks = this.#rec.serverAcks && this.#rec.arrives !== 'flush-request';
    const batch: BatchPart[] = [];
    for (const { c, before } of parts) {
      // Entries ACKed at a NIC run's end come first; only those polled here are persisted and ACKed here.
      const polled = this.#takeHeld(c.clientId);
      const fresh = polled.length;
      try {
        for (let i = polled.length; i < this.options.batchMax; i++) {
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
      if (this.#strict !== undefined) {
        batch.push({ c, polled, first: () => {
          if (acks) this.#persistAndAck(c, seqsFrom(polled, fresh));
          before?.();
        } });
        continue;
      }
      const part: BatchPart = { c, polled };
      try {
        if (acks) this.#persistAndAck(c, seqsFrom(polled, fresh));
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
    // while the next requests are received; its replies are held (strict-batch.ts) until it calls
    // back. true: synced already, released below (outside the batch).
    let held: boolean | undefined;
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
      if (this.#strict !== undefined) held = this.#strict.commit(parts as Array<{ c: Conn; replies: Array<() => void> }>, run);
      else this.region.groupCommit(run);
    } catch (e) {
      failure = e;
      held = undefined;
    } finally {
      this.#replies = undefined;
    }
    if (held !== undefined) {
      if (held) this.#strict!.releaseHeld();
      return;
    }
    // What was settled before a failure is still answered (each RESULT through the ack gate).
    const done = failure === undefined ? parts.length : Math.min(at + 1, parts.length);
    for (let k = 0; k < done; k++) {
      try {
        this.#send(parts[k]!.replies!, -1);
      } catch (e) {
        parts[k]!.failed = true;
        this.#fail(parts[k]!.c, e);
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
   * A settled batch's replies of one connection, in order. They follow one another with no
   * processing between, so all but the last are sent `more` (a coupled strategy's replies, its
   * durable signals, leave in one write). `applied`: the credit the RESULTs carry (the strict
   * batch's, read when it was settled); -1: read it when sending.
   */
  #send(replies: Array<() => void>, applied: number): void {
    const last = replies.length - 1;
    this.#replyApplied = applied;
    // Two or more: a connection that reads packed RESULTs gets them in one notify (#reply packs them).
    if (last > 0) this.#packing = true;
    try {
      for (let i = 0; i <= last; i++) {
        this.#more = i < last;
        replies[i]!();
      }
    } finally {
      this.#more = false;
      this.#replyApplied = -1;
      this.#packing = false;
      this.#sendPack();
    }
  }

  /** Inside #send of two or more replies: RESULTs to a packing connection are gathered in #pack (for #packConn). */
  #packing = false;
  #pack = new ResultPack();
  #packConn: Conn | undefined;

  /** The gathered RESULTs, as one packed notify to their connection (a durable signal if the strategy is coupled: not lazy then). */
  #sendPack(): void {
    const c = this.#packConn;
    if (c === undefined) return;
    this.#packConn = undefined;
    if (this.#pack.size > 0) c.sqp.notify(this.#pack.take(), RPC_RESULTS_IMM, this.#lazyResults);
  }

  /** notify() options of a RESULT: lazy unless the strategy is coupled (its RESULT is the durable signal). */
  #lazyResults: { lazy?: boolean; transfer: boolean };

  /** The region msyncs (strict, file-backed): a pass's ACKs join its RESULTs behind the batch's syncs. */
  #strictFile: boolean;

  /** Inside #send: the credit the batch's RESULTs carry (the strict batch's, read when settled); -1: read it when sending. */
  #replyApplied = -1;

  /** Inside #send: another reply follows this one at once (notify's `more`). */
  #more = false;

  /** Inside #processBatch: RESULTs held until the batch is settled. */
  #replies: Array<() => void> | undefined;

  /** The batch part (its replies array) and client #process last reported to the leases (Leases.seen). */
  #seenFor: Array<() => void> | undefined;
  #seenClient = -1;

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
    // A sign of life once per client per batch part (a clock read and a map store; not per request).
    const rs = this.#replies;
    if (rs === undefined || rs !== this.#seenFor || this.#seenClient !== c.clientId) {
      this.#leases.seen(c.clientId);
      this.#seenFor = rs;
      this.#seenClient = c.clientId;
    }
    const { record, status, bytes } = computed ?? this.#methods.effects(entry, this.store.appView);
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
      const held = this.#replyApplied;
      // The client's applied sequence in the store now (a strict batch's credit was read when it settled; its client may be released since).
      const stored = held >= 0 && !this.store.conn.has(c.clientId) ? held : this.store.conn.appliedSeq(c.clientId);
      const applied = held >= 0 ? held : stored;
      const g = this.store.geometry;
      // The slot of seq + ringSlots is free now: repost it (SEND strategies) before the credit goes out.
      // (Once: a reconnect accepted in the middle of this pass may have posted it already.)
      const next = entry.seq + g.ringSlots;
      if (this.#rec.arrives === 'recv' && next > c.recvUpTo) {
        c.sqp.postRecv({ id: next, addr: c.ring.slotOffset(next), len: g.slotBytes });
        c.recvUpTo = next;
      }
      const credit = applied + (this.#faults.earlyCredit ? 1 : 0);
      // The credit is the client's applied sequence, never past it: one more lets the client
      // overwrite the ring slot of an entry not yet applied (the early-credit mutant).
      invariant(credit <= stored, () => `client ${c.clientId}: a RESULT would carry credit ${credit}, past its applied sequence ${stored}`);
      if (!(coupled && this.#faults.replyBeforeApply)) this.#reply(c, entry.seq, status, bytes, credit);
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
    // A RESULT answers an applied request (the client counts it durable): its credit covers its own
    // sequence. A reply before the commit (the reply-before-apply mutant) would not.
    invariant(appliedSeq >= seq, () => `client ${c.clientId}: RESULT of sequence ${seq} before it is applied (applied up to ${appliedSeq})`);
    // A decoupled strategy's RESULT follows its durable signal: the transport may gather it with the
    // pass's other RESULTs (one socket write). A coupled reply is the durable signal: never lazy.
    const size = RESULT_HEADER_BYTES + bytes.length;
    if (this.#packing && c.packed && size <= RESULT_PACK_BYTES_MAX) {
      // (A pass's replies are one client's; its connection may change in the middle: what was
      // gathered for the old one goes first. A pack that this RESULT would take past the bound goes first too.)
      if (this.#packConn !== c || this.#pack.bytes + size > RESULT_PACK_BYTES_MAX) this.#sendPack();
      this.#packConn = c;
      this.#pack.add(seq, appliedSeq, status, bytes);
      return;
    }
    // (Not packed: what was gathered leaves first, in order.)
    if (this.#packConn !== undefined) this.#sendPack();
    c.sqp.notify(encodeResultOf(seq, appliedSeq, status, bytes), RPC_RESULT_IMM, this.#more ? MORE : this.#lazyResults);
  }
}
