/**
 * DurableRpcClient: the client half of durable RPC (DESIGN §4). call() assigns the next sequence
 * number, places the request when the ring has credit (a full ring makes calls wait, bounded by
 * pendingCallsMax: nothing is dropped), and returns two promises: `durable` — resolved at the
 * moment the strategy's table row says (FLUSH or READ completion, the server's ACK, the coupled
 * reply), never earlier — and `result` — the handler's result once the request is applied.
 */
import { callable, invariant, nonNegativeInt, optional, PmrpcError, resolveOptions, SeqMap, type ErrorCode } from '../../pmem/index.js';
import { ByteSlab, Wr, type ChainListener, type Completion, type FlushWr, type NotifyMessage, type QueuePair, type WorkRequest, type WriteWr } from '../../flush/index.js';
import { encodeEntry } from '../../recovery/index.js';
import { RpcErrorCodes } from './errors.js';
import { checkRpcFaults, GOODBYE_METHOD, methodId, type ConnectionInfo, type RpcFaults } from './server.js';
import { rpcStrategy, type RpcStrategy, type RpcStrategyRecord } from './strategies.js';
import { decodeAck, decodeError, decodeResult, decodeResults, RPC_ACK_IMM, RPC_RESULT_IMM, RPC_RESULTS_IMM, STATUS_OK } from './wire.js';

export interface RpcCall {
  /** The request's sequence number (FIFO per client). */
  seq: number;
  /** Resolves when the request is durable in the server's PM (the strategy's "durable at"). */
  durable: Promise<void>;
  /** The handler's result once the request is applied; rejects with a coded error result, or PMRPC_ERR_RESULT_LOST. */
  result: Promise<Uint8Array>;
}

export interface RpcClientOptions {
  /** Most calls waiting for ring credit; a call beyond it throws PMRPC_ERR_CALLS_PENDING_FULL (nothing is sent). */
  pendingCallsMax: number;
  /** Called synchronously when a sequence becomes durable, before `durable` resolves (crash tests record what clients were told). */
  onDurable: ((seq: number) => void) | undefined;
  /** Test-only fault switches (client-side ones: skipFlush, flushGlobal). */
  faults: RpcFaults | undefined;
}

export const RPC_CLIENT_DEFAULTS: Readonly<RpcClientOptions> = Object.freeze({ pendingCallsMax: 1024, onDurable: undefined, faults: undefined });

const ignore = (): undefined => undefined;

/** Most calls, and most bytes written (entries and the slot padding between them), of one gathered chain (#gatheredWrs; wflush). */
const GATHER_MAX = 64;
const GATHER_BYTES = 16 * 1024;

/**
 * The settle functions of the promise being built: `new Promise(capture)` stores them here, and the
 * constructor of Pending takes them at once (one shared executor, not a closure per promise).
 */
let capturedResolve: (v: never) => void = ignore;
let capturedReject: (e: unknown) => void = ignore;
function capture(resolve: (v: never) => void, reject: (e: unknown) => void): void {
  capturedResolve = resolve;
  capturedReject = reject;
}

/**
 * One call: its entry bytes, and its two promises with their settle functions, each settled at
 * most once. One object per call on the hot path (no deferred objects, no closure per promise).
 * The no-op rejection handler (a caller that ignores one of the two promises must not crash the
 * process with an unhandled rejection) is attached just before a rejection, not to every promise.
 */
class Pending {
  readonly seq: number;
  readonly bytes: Uint8Array;
  /** Sent on the current connection. */
  sent = false;
  durableSettled: boolean;
  resultSettled = false;
  readonly durable: Promise<void>;
  readonly result: Promise<Uint8Array>;
  #resolveDurable: (v: never) => void = ignore;
  #rejectDurable: (e: unknown) => void = ignore;
  #resolveResult: (v: never) => void;
  #rejectResult: (e: unknown) => void;

  /** `never`: the durable promise of every call (strategy none: rejected once per client), settled already. */
  constructor(seq: number, bytes: Uint8Array, never: Promise<void> | undefined) {
    this.seq = seq;
    this.bytes = bytes;
    if (never === undefined) {
      this.durable = new Promise<void>(capture);
      this.#resolveDurable = capturedResolve;
      this.#rejectDurable = capturedReject;
      this.durableSettled = false;
    } else {
      this.durable = never;
      this.durableSettled = true;
    }
    this.result = new Promise<Uint8Array>(capture);
    this.#resolveResult = capturedResolve;
    this.#rejectResult = capturedReject;
  }

  resolveDurable(): void {
    if (this.durableSettled) return;
    this.durableSettled = true;
    (this.#resolveDurable as (v: undefined) => void)(undefined);
  }

  rejectDurable(e: unknown): void {
    if (this.durableSettled) return;
    this.durableSettled = true;
    this.durable.catch(ignore);
    this.#rejectDurable(e);
  }

  resolveResult(v: Uint8Array): void {
    if (this.resultSettled) return;
    this.resultSettled = true;
    (this.#resolveResult as (v: Uint8Array) => void)(v);
  }

  rejectResult(e: unknown): void {
    if (this.resultSettled) return;
    this.resultSettled = true;
    this.result.catch(ignore);
    this.#rejectResult(e);
  }
}

export class DurableRpcClient {
  readonly options: Readonly<RpcClientOptions>;
  #qp: QueuePair;
  #info: ConnectionInfo;
  /** The strategy's record, looked up once per connection (never the name on the hot path). */
  #rec: RpcStrategyRecord;
  #faults: Readonly<RpcFaults>;
  #nextSeq: number;
  /** Every pending call below this sequence has been posted (#pump starts here: calls are numbered in order). */
  #nextUnsent: number;
  #credit: number;
  #durableUpTo: number;
  /** Requests whose durability or result is still open, by sequence (bounded: ringSlots + pendingCallsMax). */
  #pending = new SeqMap<Pending>();
  /** Ring entries' bytes (ByteSlab: an entry over 64 bytes would otherwise be an off-heap ArrayBuffer per call). */
  #slab = new ByteSlab();
  #entryBytes = (n: number): Uint8Array => this.#slab.alloc(n);
  #unsubscribe: () => void = () => undefined;
  #closed = false;
  #connected = true;
  /** The secret issued at registration (kept across reconnects; presented by each). */
  #secret: string | undefined;
  #goodbye = false;
  /** Strategy none: the one (rejected) durable promise of every call, made at the first call. */
  #never: Promise<void> | undefined;
  /** The current connection's listener of chain outcomes (one per connection, not a closure per call). */
  #chains!: ChainListener<Pending>;

  constructor(qp: QueuePair, info: ConnectionInfo, options: Partial<RpcClientOptions> = {}) {
    if (qp === null || typeof qp !== 'object' || typeof (qp as QueuePair).postChainWith !== 'function') throw new TypeError('qp must be a QueuePair');
    checkInfo(info);
    const o = resolveOptions(RPC_CLIENT_DEFAULTS, options, { pendingCallsMax: nonNegativeInt, onDurable: optional(callable()) });
    this.#faults = checkRpcFaults(o.faults);
    this.options = Object.freeze(o);
    this.#qp = qp;
    this.#info = info;
    this.#rec = rpcStrategy(info.strategy);
    this.#nextSeq = info.resumeSeq;
    this.#nextUnsent = info.resumeSeq;
    this.#credit = info.appliedSeq;
    this.#durableUpTo = info.resumeSeq - 1;
    this.#secret = info.secret;
    this.#attach();
  }

  /**
   * The client's secret (base64url), issued at registration: a reconnect presents it with the
   * client id (accept({ clientId, secret, awaiting })). Whoever holds it can act as this client.
   */
  get secret(): string | undefined {
    return this.#secret;
  }

  /**
   * Says goodbye: one last request, after every earlier one (FIFO), that releases the client's slot
   * on the server (its ring and table row are reused by later clients; its id is never reused and
   * its results are dropped). Resolves once the server answered — the release is durable then, or
   * deferred by the server's canRelease — then closes. Wait for the results you need before it.
   */
  async goodbye(): Promise<void> {
    if (this.#closed || this.#goodbye) return;
    const call = this.call(GOODBYE_METHOD, new Uint8Array(0));
    this.#goodbye = true;
    try {
      await call.result;
    } finally {
      this.close();
    }
  }

  get clientId(): number {
    return this.#info.clientId;
  }

  get strategy(): RpcStrategy {
    return this.#info.strategy;
  }

  /** The longest payload a request may carry. */
  get maxPayloadBytes(): number {
    return this.#info.slotBytes - 32;
  }

  /** Sequences whose result is still awaited (what a reconnect hands to accept()). */
  get awaiting(): number[] {
    return [...this.#pending.values()].filter((p) => !p.resultSettled).map((p) => p.seq);
  }

  /**
   * Calls issued but not yet placed for lack of ring credit: the sequences past the credit window,
   * counted, not looked for — #pump never posts past credit + ringSlots, the credit never goes
   * back, and an unposted call stays pending (nothing makes it durable or answers it) until the
   * client closes. (The bench's cell driver reads it on every call, call() while the ring is full.)
   */
  get waitingForCredit(): number {
    if (this.#closed) return 0;
    return Math.max(0, this.#nextSeq - 1 - (this.#credit + this.#info.ringSlots));
  }

  get durableUpTo(): number {
    return this.#durableUpTo;
  }

  call(method: string, payload: Uint8Array): RpcCall {
    if (typeof method !== 'string' || method.length === 0) throw new TypeError(`method must be a non-empty string, got ${String(method)}`);
    if (!(payload instanceof Uint8Array)) throw new TypeError('payload must be a Uint8Array');
    if (this.#closed) throw new PmrpcError(RpcErrorCodes.DISCONNECTED, 'the client is closed');
    if (this.#goodbye) throw new PmrpcError(RpcErrorCodes.DISCONNECTED, 'the client said goodbye');
    if (payload.length > this.maxPayloadBytes) {
      throw new PmrpcError('PMRPC_ERR_TOO_LARGE', `payload of ${payload.length} bytes exceeds the ring slot's ${this.maxPayloadBytes} bytes`);
    }
    if (this.#nextSeq > this.#credit + this.#info.ringSlots && this.waitingForCredit >= this.options.pendingCallsMax) {
      throw new PmrpcError(RpcErrorCodes.CALLS_PENDING_FULL, `${this.options.pendingCallsMax} calls already wait for ring credit (pendingCallsMax)`);
    }
    const seq = this.#nextSeq++;
    const bytes = encodeEntry({ clientId: this.#info.clientId, seq, methodId: methodId(method), payload }, this.#info, this.#entryBytes);
    const p = new Pending(seq, bytes, this.#rec.durableAt === 'never' ? this.#neverDurable() : undefined);
    this.#pending.set(seq, p);
    if (this.#gathers()) {
      // One chain for the calls of this synchronous run (#pump): posted at its end, a microtask later.
      if (!this.#pumpQueued) {
        this.#pumpQueued = true;
        queueMicrotask(this.#queuedPump);
      }
    } else this.#pump();
    return { seq, durable: p.durable, result: p.result };
  }

  /**
   * Reconnects over a new QP with the handshake's answer (server.accept({clientId, awaiting})):
   * everything before the resume point is durable; results the server kept are delivered, lost
   * ones reject with PMRPC_ERR_RESULT_LOST; requests from the resume point on are sent again.
   */
  reconnect(qp: QueuePair, info: ConnectionInfo): void {
    if (qp === null || typeof qp !== 'object' || typeof (qp as QueuePair).postChainWith !== 'function') throw new TypeError('qp must be a QueuePair');
    checkInfo(info);
    if (info.clientId !== this.#info.clientId) throw new TypeError(`info is for client ${info.clientId}, not ${this.#info.clientId}`);
    if (this.#closed) throw new PmrpcError(RpcErrorCodes.DISCONNECTED, 'the client is closed');
    if (info.resumeSeq > this.#nextSeq) throw new RangeError(`resume point ${info.resumeSeq} is past the next sequence ${this.#nextSeq}`);
    this.#unsubscribe();
    this.#qp = qp;
    this.#info = info;
    this.#rec = rpcStrategy(info.strategy);
    this.#connected = true;
    this.#credit = Math.max(this.#credit, info.appliedSeq);
    this.#markDurable(info.resumeSeq - 1);
    for (const r of info.results) {
      const p = this.#pending.get(r.seq);
      if (p === undefined) continue;
      if (r.status === 'ok') p.resolveResult(r.bytes ?? new Uint8Array(0));
      else if (r.status === 'error') p.rejectResult(decodeError(r.bytes ?? new Uint8Array(0)));
      else p.rejectResult(new PmrpcError(RpcErrorCodes.RESULT_LOST, `client ${this.clientId} seq ${r.seq}: durable and applied, but its result was not kept across the server's restart`));
      this.#gc(p);
    }
    for (const p of this.#pending.values()) {
      if (p.seq <= info.appliedSeq && !p.resultSettled) {
        p.rejectResult(new PmrpcError(RpcErrorCodes.RESULT_LOST, `client ${this.clientId} seq ${p.seq}: applied, but the server no longer knows its result`));
        this.#gc(p);
      } else if (p.seq >= info.resumeSeq) p.sent = false;
    }
    this.#nextUnsent = this.#nextSeq;
    for (const p of this.#pending.values()) if (!p.sent && p.seq < this.#nextUnsent) this.#nextUnsent = p.seq;
    this.#attach();
    this.#pump();
  }

  /**
   * Closes the connection; requests not yet durable reject `durable`, unknown results reject
   * `result` — with PMRPC_ERR_DISCONNECTED, or with `cause` (the connection ended for good, e.g.
   * the server's Goodbye PMRPC_ERR_SERVER_CLOSED: whether such a request is durable is unknown).
   */
  close(cause?: PmrpcError): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#unsubscribe();
    this.#qp.close();
    const err = cause ?? new PmrpcError(RpcErrorCodes.DISCONNECTED, `client ${this.clientId} closed`);
    for (const p of this.#pending.values()) {
      p.rejectDurable(err);
      p.rejectResult(err);
    }
    this.#pending.clear();
  }

  #attach(): void {
    const qp = this.#qp;
    this.#chains = {
      done: (p, cs) => this.#onCompletions(qp, p, cs),
      failed: (_p, e) => {
        if (qp === this.#qp) this.#disconnected(e);
      },
    };
    this.#unsubscribe = qp.onNotify((m) => this.#onNotify(m));
  }

  #neverDurable(): Promise<void> {
    if (this.#never === undefined) {
      this.#never = Promise.reject(new PmrpcError(RpcErrorCodes.NEVER_DURABLE, 'strategy none never makes a request durable'));
      this.#never.catch(ignore);
    }
    return this.#never;
  }

  /** A call's post waits for the end of its synchronous run (#pumpQueued). */
  #pumpQueued = false;
  readonly #queuedPump = (): void => {
    this.#pumpQueued = false;
    this.#pump();
  };

  /**
   * Whether the calls #pump posts at once go as one chain: one WRITE of consecutive ring slots, then
   * ONE range FLUSH over them (wflush). The FLUSH's completion says every entry of the chain is
   * durable — as each call's own FLUSH did, over its own entry — with one FLUSH, one completion and
   * one Response for the run instead of one per call (issue 29).
   */
  #gathers(): boolean {
    const r = this.#rec;
    return r.request === 'write' && r.follow === 'flush';
  }

  #pump(): void {
    if (!this.#connected || this.#closed) return;
    // In sequence order from the first call not yet posted (no scan or sort of every pending call).
    const last = Math.min(this.#nextSeq - 1, this.#credit + this.#info.ringSlots);
    const gather = this.#gathers();
    for (let seq = this.#nextUnsent; seq <= last; seq++) {
      // A chain's outcome may arrive before postChainWith returns (an 'immediate' in-process link).
      if (!this.#connected || this.#closed) return;
      this.#nextUnsent = seq + 1;
      const p = this.#pending.get(seq);
      if (p === undefined || p.sent) continue;
      // Built before the post, outside its catch: a broken invariant stops the client, not a disconnect.
      let wrs: WorkRequest[];
      let tail = p;
      if (gather) {
        wrs = this.#gatheredWrs(p, last);
        tail = this.#pending.get(this.#gatheredTail)!;
        for (let s = p.seq; s <= tail.seq; s++) this.#pending.get(s)!.sent = true;
        this.#nextUnsent = tail.seq + 1;
      } else {
        wrs = this.#wrs(p);
        p.sent = true;
      }
      try {
        // The chain's outcome names its last call: its completion makes every call up to it durable (#markDurable).
        this.#qp.postChainWith(wrs, this.#chains, tail);
      } catch (e) {
        for (let s = p.seq; s <= tail.seq; s++) this.#pending.get(s)!.sent = false;
        this.#nextUnsent = seq;
        this.#disconnected(e);
        return;
      }
      seq = tail.seq;
    }
  }

  /** The last call of the chain #gatheredWrs built last. */
  #gatheredTail = 0;
  /**
   * The chain of the calls from `first` on (wflush): the entries of the pending, unsent calls in
   * consecutive ring slots (no wrap), up to `last`, GATHER_MAX calls or GATHER_BYTES written, then
   * one persistent range FLUSH from the first entry's start to the last entry's end. The entries go
   * as ONE WRITE of their slots back to back — each entry followed by zeros to the end of its slot,
   * the last one without — as an RDMA client writes a run of ring slots: one work request, one NIC
   * cache entry and one drain a chain instead of one a call (the server reads an entry by its
   * header, never the rest of its slot, which only this client writes). The last call is left in
   * #gatheredTail.
   */
  #gatheredWrs(first: Pending, last: number): WorkRequest[] {
    const info = this.#info;
    const f = this.#faults;
    const placement = f.flushGlobal ? 'global' : 'persistent';
    const start = info.ringOffset + ((first.seq - 1) % info.ringSlots) * info.slotBytes;
    let calls = 0;
    let end = start;
    for (let seq = first.seq; seq <= last && calls < GATHER_MAX; seq++) {
      const p = this.#pending.get(seq);
      if (p === undefined || p.sent) break;
      invariant(p.bytes.length <= info.slotBytes, () => `client ${info.clientId}: entry ${p.seq} is ${p.bytes.length} bytes, the ring slot ${info.slotBytes}`);
      const slot = (seq - 1) % info.ringSlots;
      const addr = info.ringOffset + slot * info.slotBytes;
      if (seq > first.seq && (slot === 0 || addr + p.bytes.length - start > GATHER_BYTES)) break; // the ring wraps, or the chain is long enough
      calls++;
      end = addr + p.bytes.length;
    }
    this.#gatheredTail = first.seq + calls - 1;
    let data: Uint8Array;
    if (calls === 1) data = first.bytes;
    else {
      // The run's slots back to back (zeros after each entry, to its slot's end), the last entry without.
      data = new Uint8Array(end - start);
      for (let i = 0; i < calls; i++) data.set(this.#pending.get(first.seq + i)!.bytes, i * info.slotBytes);
    }
    // Unsignaled: the chain's FLUSH completion says all (a WRITE that fails still answers with its error).
    const wrs: WorkRequest[] = [{ op: 'write', to: { rkey: info.rkey, addr: start }, data, unsignaled: true } satisfies WriteWr];
    if (!f.skipFlush) wrs.push({ op: 'flush', placement, selectivity: 'range', rkey: info.rkey, addr: start, len: end - start } satisfies FlushWr);
    return wrs;
  }

  #wrs(p: Pending): WorkRequest[] {
    const info = this.#info;
    // The entry stays in its ring slot: encoded for a larger slot (a reconnect's geometry is not
    // the one it was built for), it would spill into the next slot, over another request's entry.
    invariant(p.bytes.length <= info.slotBytes, () => `client ${info.clientId}: entry ${p.seq} is ${p.bytes.length} bytes, the ring slot ${info.slotBytes}`);
    const addr = info.ringOffset + ((p.seq - 1) % info.ringSlots) * info.slotBytes;
    const f = this.#faults;
    const placement = f.flushGlobal ? 'global' : 'persistent';
    // Object literals of Wr's shapes (Wr.write and Wr.flush spread an options object each).
    const r = this.#rec;
    const entry: WorkRequest = r.request === 'write' ? ({ op: 'write', to: { rkey: info.rkey, addr }, data: p.bytes } satisfies WriteWr) : { op: 'send', data: p.bytes };
    switch (r.follow) {
      case 'none':
        return [entry];
      case 'flush': {
        if (f.skipFlush) return [entry];
        // After a WRITE the written range; after a SEND the whole receive MR (the ring).
        const flush: FlushWr = r.request === 'write' ? { op: 'flush', placement, selectivity: 'range', rkey: info.rkey, addr, len: p.bytes.length } : { op: 'flush', placement, selectivity: 'mr', rkey: info.rkey };
        return [entry, flush];
      }
      case 'read':
        return [entry, { op: 'read', from: { rkey: info.rkey, addr: addr + p.bytes.length - 1 }, len: 1 }];
      case 'flush-request':
        // The sequence in imm, no payload: the server persists the entry at that ring slot.
        return [entry, { op: 'send', data: new Uint8Array(0), imm: p.seq >>> 0 }];
    }
  }

  #onCompletions(qp: QueuePair, p: Pending, cs: Completion[]): void {
    if (qp !== this.#qp) return; // an answer from a connection that was replaced
    let bad: Completion | undefined;
    for (let i = 0; i < cs.length && bad === undefined; i++) if (cs[i]!.status !== 'ok') bad = cs[i];
    if (bad !== undefined) {
      this.#disconnected(new PmrpcError((bad.code ?? 'PMRPC_ERR_WR_FAILED') as ErrorCode, `${bad.op} ${bad.status}${bad.message ? `: ${bad.message}` : ''}`));
      return;
    }
    if (this.#rec.durableAt === 'completion') this.#markDurable(p.seq);
  }

  #onNotify(m: NotifyMessage): void {
    if (m.imm === RPC_ACK_IMM) {
      const upTo = decodeAck(m.data);
      if (upTo !== undefined && this.#rec.serverAcks) this.#markDurable(Math.min(upTo, this.#nextSeq - 1));
      return;
    }
    if (m.imm === RPC_RESULTS_IMM) {
      // Packed RESULTs (a pass's, in order): each as one RESULT, then one pump for them all.
      if (decodeResults(m.data, this.#onResult)) this.#pump();
      return;
    }
    if (m.imm !== RPC_RESULT_IMM) return;
    const r = decodeResult(m.data);
    if (r === undefined) return;
    this.#onResult(r.seq, r.appliedSeq, r.status, r.bytes);
    this.#pump();
  }

  /** One RESULT (alone or packed): the call's answer, its durability, the credit. */
  #onResult = (seq: number, appliedSeq: number, status: number, bytes: Uint8Array): void => {
    const p = this.#pending.get(seq);
    // A result is sent after the request's applied flag is durable: it implies durability
    // (for a decoupled strategy the ACK or FLUSH completion may simply not have arrived yet).
    if (this.#rec.durableAt !== 'never') this.#markDurable(Math.min(seq, this.#nextSeq - 1));
    if (appliedSeq > this.#credit) this.#credit = appliedSeq;
    if (p !== undefined) {
      if (status === STATUS_OK) p.resolveResult(bytes);
      else p.rejectResult(decodeError(bytes));
      this.#gc(p);
    }
  };

  #markDurable(upTo: number): void {
    if (this.#rec.durableAt === 'never') return;
    while (this.#durableUpTo < upTo) {
      const s = ++this.#durableUpTo;
      this.options.onDurable?.(s);
      const p = this.#pending.get(s);
      if (p !== undefined) {
        p.resolveDurable();
        this.#gc(p);
      }
    }
  }

  #gc(p: Pending): void {
    if (p.durableSettled && p.resultSettled) this.#pending.delete(p.seq);
  }

  #disconnected(_e: unknown): void {
    // The QP failed (or the link closed): requests stay pending, to be sent again after reconnect().
    this.#connected = false;
  }
}

function checkInfo(info: ConnectionInfo): void {
  if (info === null || typeof info !== 'object') throw new TypeError('info must be a ConnectionInfo from DurableRpcServer.accept()');
  for (const k of ['clientId', 'ringOffset', 'ringSlots', 'slotBytes', 'rkey', 'resumeSeq', 'appliedSeq'] as const) {
    if (!Number.isSafeInteger(info[k]) || info[k] < 0) throw new TypeError(`info.${k} must be a non-negative integer, got ${String(info[k])}`);
  }
  if (!Array.isArray(info.results)) throw new TypeError('info.results must be an array');
}
