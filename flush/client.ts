/**
 * The client side of a QP: post work requests over a Link, get their completions as promises.
 * One postChain() = one message = one round trip (doorbell batching: any number of requests per
 * message). Completions never reject for a remote failure — the status says; the convenience
 * helpers (write, read, cas, …) turn a non-'ok' status into a PmrpcError with its code.
 */
import { intIn, invariant, PmrpcError, positiveInt, resolveOptions, SeqMap, type ErrorCode } from '../pmem/index.js';
import { NicErrorCodes } from './mr.js';
import { bigintToLe, leToBigint } from './prism.js';
import type {
  AllocateWr,
  CasMode,
  ChainFlags,
  Completion,
  FlushPlacement,
  Link,
  Loc,
  NotifyMessage,
  OutstandingRequest,
  PrismCasWr,
  ReadWr,
  RequestMessage,
  ServerMessage,
  WorkRequest,
  WriteWr,
} from './types.js';
import { markChecked, MAX_WRS_PER_MESSAGE, wrError } from './validate.js';

export interface QueuePairOptions {
  /** Most request messages awaiting their response (held for back-pressure included); posting beyond it throws PMRPC_ERR_QUEUE_FULL. */
  outstandingMessagesMax: number;
  /** Sequence number of the first message (then +1, wrapping within 32 bits as the wire carries u32). Tests start near the wrap. */
  firstSeq: number;
}

export const QUEUE_PAIR_DEFAULTS: Readonly<QueuePairOptions> = Object.freeze({ outstandingMessagesMax: 4096, firstSeq: 0 });

const SEQ_MOD = 2 ** 32;

/**
 * Receives the outcome of a chain posted with postChainWith (no promise, no closure per chain): `done`
 * with its completions (in order; a remote failure is a status, as for postChain), or `failed` when
 * the chain cannot complete (the link closed: PMRPC_ERR_LINK_CLOSED, or the link refused a held message).
 * Called synchronously from the link's delivery — possibly before postChainWith returns (an
 * 'immediate' in-process link).
 */
export interface ChainListener<T> {
  done(arg: T, completions: Completion[]): void;
  failed(arg: T, err: unknown): void;
}

/** A request posted and not yet answered: who hears its outcome, and what the link reads of it (Link.adoptRequests). */
interface Outstanding extends OutstandingRequest {
  listener: ChainListener<unknown>;
  arg: unknown;
  sent: boolean;
}

/** postChain's listener: the arg is the promise's settle functions. */
const PROMISE_LISTENER: ChainListener<{ resolve: (c: Completion[]) => void; reject: (e: unknown) => void }> = {
  done: (arg, cs) => arg.resolve(cs),
  failed: (arg, e) => arg.reject(e),
};

export class QueuePair {
  readonly link: Link;
  readonly options: Readonly<QueuePairOptions>;
  #seq = 0;
  /** The one map of this QP's outstanding requests (held ones included): registered in #post, retired by their response or the close; a link that reads it has it handed over (Link.adoptRequests). */
  #outstanding = new SeqMap<Outstanding>();
  #notify: Array<(m: NotifyMessage) => void> = [];
  #notifyBacklog: NotifyMessage[] = [];
  #state: 'ready' | 'error' = 'ready';
  /** Messages held while the link is not writable (back-pressure), in posting order; each also in #outstanding. */
  #held: RequestMessage[] = [];
  #flushing = false;
  #closed = false;
  #closeListeners: Array<(err: PmrpcError) => void> = [];

  constructor(link: Link, options: Partial<QueuePairOptions> = {}) {
    if (link === null || typeof link !== 'object' || typeof link.send !== 'function' || typeof link.onMessage !== 'function') {
      throw new TypeError('link must implement Link (send, onMessage, close)');
    }
    const o = resolveOptions(QUEUE_PAIR_DEFAULTS, options, { outstandingMessagesMax: positiveInt, firstSeq: intIn(0, SEQ_MOD - 1, '[0, 2^32)') });
    this.options = Object.freeze(o);
    this.link = link;
    this.#seq = o.firstSeq;
    link.adoptRequests?.(this.#outstanding);
    link.onMessage((m) => this.#onMessage(m));
    // A link that says when it closes: what is outstanding rejects instead of hanging.
    link.onClose?.((err) => this.#linkClosed(err));
  }

  get qpn(): number {
    return this.link.qpn;
  }

  /** 'error' once any completion of this QP came back 'error' (the server QP is then in the error state too). */
  get state(): 'ready' | 'error' {
    return this.#state;
  }

  get outstanding(): number {
    return this.#outstanding.size;
  }

  /** Posts a chain of work requests as one message; resolves with their completions, in order. */
  postChain(wrs: readonly WorkRequest[]): Promise<Completion[]> {
    if (!Array.isArray(wrs)) checkChain(wrs); // the RangeError, before the copy
    // Copied (the caller may reuse its array while the message is held or queued), then checked once.
    const chain = checkedChain([...wrs], this.link.remote !== true);
    let settle!: { resolve: (c: Completion[]) => void; reject: (e: unknown) => void };
    const p = new Promise<Completion[]>((resolve, reject) => {
      settle = { resolve, reject };
    });
    this.#post(chain, PROMISE_LISTENER as ChainListener<unknown>, settle);
    return p;
  }

  /**
   * postChain without a promise: the chain's outcome goes to `listener` with `arg` (one object per
   * chain, no closures: the RPC client posts a chain per call, or per run of calls under wflush). Throws as postChain does. `wrs`
   * is taken as it is (not copied): the caller must not change it afterwards.
   */
  postChainWith<T>(wrs: WorkRequest[], listener: ChainListener<T>, arg: T): void {
    this.#post(checkedChain(wrs, this.link.remote !== true), listener as ChainListener<unknown>, arg);
  }

  #post(wrs: WorkRequest[], listener: ChainListener<unknown>, arg: unknown): void {
    if (this.#closed || this.link.closed) throw new PmrpcError(NicErrorCodes.LINK_CLOSED, `the link to QP ${this.qpn} is closed`);
    if (this.#outstanding.size >= this.options.outstandingMessagesMax) {
      throw new PmrpcError(NicErrorCodes.QUEUE_FULL, `QP ${this.qpn} has ${this.#outstanding.size} messages outstanding (outstandingMessagesMax)`);
    }
    const seq = this.#seq;
    // Bounded by outstandingMessagesMax (< 2^32): a wrapped sequence can only meet a finished one.
    invariant(!this.#outstanding.has(seq), () => `sequence ${seq} is still outstanding`);
    this.#seq = (this.#seq + 1) % SEQ_MOD;
    const entry: Outstanding = { listener, arg, wrs, sent: false };
    this.#outstanding.set(seq, entry);
    const msg: RequestMessage = { type: 'request', qpn: this.qpn, seq, wrs };
    // Back-pressure: while the link is full (or messages are already held), hold this one too, in order.
    if (this.#held.length > 0 || (this.link.whenWritable !== undefined && this.link.writable === false)) {
      this.#hold(msg);
      return;
    }
    try {
      this.link.send(msg);
    } catch (e) {
      if (this.link.whenWritable !== undefined && !this.link.closed && e instanceof PmrpcError && e.code === BACKPRESSURE) {
        this.#hold(msg);
        return;
      }
      this.#outstanding.delete(seq);
      throw e;
    }
    entry.sent = true;
  }

  /** Messages held back by the link's back-pressure, not yet sent. */
  get held(): number {
    return this.#held.length;
  }

  /** Runs `fn` once when this QP's link closes (owner close() included): outstanding work rejected with PMRPC_ERR_LINK_CLOSED. Returns its remover. */
  onClose(fn: (err: PmrpcError) => void): () => void {
    if (typeof fn !== 'function') throw new TypeError('onClose takes a function');
    if (this.#closed) {
      const err = this.#closedError(undefined);
      queueMicrotask(() => fn(err));
      return () => {};
    }
    this.#closeListeners.push(fn);
    return () => {
      const i = this.#closeListeners.indexOf(fn);
      if (i >= 0) this.#closeListeners.splice(i, 1);
    };
  }

  #hold(msg: RequestMessage): void {
    this.#held.push(msg);
    if (this.#flushing) return;
    this.#flushing = true;
    void this.#flushHeld();
  }

  /** Sends held messages as the link drains; a link that closes rejects them (#linkClosed). */
  async #flushHeld(): Promise<void> {
    try {
      while (this.#held.length > 0 && !this.#closed) {
        if (this.link.writable === false) {
          try {
            await this.link.whenWritable!();
          } catch {
            return; // closed: #linkClosed (or close()) settles what is held
          }
          continue;
        }
        const m = this.#held[0]!;
        try {
          this.link.send(m);
        } catch (e) {
          if (e instanceof PmrpcError && e.code === BACKPRESSURE && !this.link.closed) {
            try {
              await this.link.whenWritable!();
            } catch {
              return;
            }
            continue;
          }
          this.#held.shift();
          const o = this.#outstanding.get(m.seq);
          this.#outstanding.delete(m.seq);
          o?.listener.failed(o.arg, e);
          continue;
        }
        this.#held.shift();
        const sent = this.#outstanding.get(m.seq);
        if (sent !== undefined) sent.sent = true;
      }
    } finally {
      this.#flushing = false;
    }
  }

  /** Posts one work request as one message. */
  async post(wr: WorkRequest): Promise<Completion> {
    const [c] = await this.postChain([wr]);
    return c!;
  }

  /** Adds a listener of server-initiated messages (ACKs, replies); they queue until the first listener. Returns its remover. */
  onNotify(handler: (m: NotifyMessage) => void): () => void {
    this.#notify.push(handler);
    for (const m of this.#notifyBacklog.splice(0)) handler(m);
    return () => {
      const i = this.#notify.indexOf(handler);
      if (i >= 0) this.#notify.splice(i, 1);
    };
  }

  /** Closes the link; outstanding requests reject with PMRPC_ERR_LINK_CLOSED. */
  close(): void {
    this.link.close();
    this.#linkClosed(undefined);
  }

  #closedError(cause: Error | undefined): PmrpcError {
    return new PmrpcError(NicErrorCodes.LINK_CLOSED, `the link to QP ${this.qpn} was closed${cause === undefined ? '' : ` (${cause.message})`}`);
  }

  /** The link is gone: outstanding and held work rejects with PMRPC_ERR_LINK_CLOSED, then the listeners run. */
  #linkClosed(cause: Error | undefined): void {
    if (this.#closed) return;
    this.#closed = true;
    const err = this.#closedError(cause);
    this.#held.length = 0;
    const outstanding = [...this.#outstanding.values()];
    this.#outstanding.clear();
    for (const o of outstanding) o.listener.failed(o.arg, err);
    for (const fn of this.#closeListeners.splice(0)) fn(err);
  }

  // ---------------------------------------------------------------- helpers (throw on a non-'ok' completion)

  async write(to: Loc, data: Uint8Array, flags: Omit<WriteWr, 'op' | 'to' | 'data'> = {}): Promise<void> {
    ok(await this.post(Wr.write(to, data, flags)));
  }

  async writeImm(to: Loc, data: Uint8Array, imm: number): Promise<void> {
    ok(await this.post({ op: 'writeImm', to, data, imm }));
  }

  async read(from: Loc, len: number, flags: Omit<ReadWr, 'op' | 'from' | 'len'> = {}): Promise<Uint8Array> {
    return ok(await this.post(Wr.read(from, len, flags))).data ?? new Uint8Array(0);
  }

  async send(data: Uint8Array, imm?: number): Promise<void> {
    ok(await this.post(Wr.send(data, imm)));
  }

  async cas(at: Loc, compare: bigint, swap: bigint): Promise<{ old: bigint; swapped: boolean }> {
    const c = ok(await this.post(Wr.cas(at, compare, swap)));
    return { old: leToBigint(c.data!), swapped: c.swapped === true };
  }

  async faa(at: Loc, add: bigint): Promise<bigint> {
    return leToBigint(ok(await this.post(Wr.faa(at, add))).data!);
  }

  async atomicWrite(at: Loc, value: bigint): Promise<void> {
    ok(await this.post(Wr.atomicWrite(at, value)));
  }

  async flush(placement: FlushPlacement, rkey: number, range?: { addr: number; len: number }): Promise<void> {
    ok(await this.post(Wr.flush(placement, rkey, range)));
  }

  #onMessage(m: ServerMessage): void {
    if (m.type === 'notify') {
      const n = this.#notify;
      if (n.length === 1) n[0]!(m);
      else if (n.length > 0) for (const h of [...n]) h(m);
      else if (this.#notifyBacklog.length < 65536) this.#notifyBacklog.push(m);
      return;
    }
    const o = this.#outstanding.get(m.seq);
    if (o === undefined) return; // a response to a closed or unknown request: nothing waits for it
    this.#outstanding.delete(m.seq);
    const cs = m.completions;
    for (let i = 0; i < cs.length; i++) if (cs[i]!.status === 'error') this.#state = 'error';
    o.listener.done(o.arg, cs);
  }
}

/** A chain's shape: 1..MAX_WRS_PER_MESSAGE well-formed work requests (a TypeError or RangeError says what is wrong). */
function checkChain(wrs: readonly WorkRequest[]): void {
  if (!Array.isArray(wrs) || wrs.length === 0 || wrs.length > MAX_WRS_PER_MESSAGE) {
    throw new RangeError(`a chain holds 1..${MAX_WRS_PER_MESSAGE} work requests, got ${Array.isArray(wrs) ? wrs.length : String(wrs)}`);
  }
  for (let i = 0; i < wrs.length; i++) {
    const e = wrError(wrs[i]);
    if (e !== undefined) throw new TypeError(`work request ${i}: ${e}`);
  }
}

/** checkChain, then the array is the QP's: marked checked (`mark`: the link may reach a NIC in this process), so that NIC does not check it again. */
function checkedChain(wrs: WorkRequest[], mark: boolean): WorkRequest[] {
  checkChain(wrs);
  if (mark) markChecked(wrs);
  return wrs;
}

/** The completion if 'ok', else a PmrpcError with its code (PMRPC_ERR_WR_FAILED when it has none, e.g. 'skipped'). */
export function ok(c: Completion): Completion {
  if (c.status === 'ok') return c;
  throw new PmrpcError((c.code ?? NicErrorCodes.WR_FAILED) as ErrorCode, `${c.op} #${c.id} ${c.status}${c.message ? `: ${c.message}` : ''}`);
}

/** The code a link's send() throws when its buffer is full (src/transport's TcpLink). */
const BACKPRESSURE = NicErrorCodes.BACKPRESSURE;

const u64 = (v: bigint): Uint8Array => bigintToLe(v, 8);

/** Builders of plain work requests, for chains. 64-bit operands are bigints here, 8-byte LE on the wire. */
export const Wr = Object.freeze({
  write: (to: Loc, data: Uint8Array, flags: Omit<WriteWr, 'op' | 'to' | 'data'> = {}): WriteWr => ({ op: 'write', to, data, ...flags }),
  writeFrom: (to: Loc, from: Loc, len: number, flags: Omit<WriteWr, 'op' | 'to' | 'from' | 'len'> = {}): WriteWr => ({ op: 'write', to, from, len, ...flags }),
  writeImm: (to: Loc, data: Uint8Array, imm: number, flags: ChainFlags = {}): WriteWr => ({ op: 'writeImm', to, data, imm, ...flags }),
  read: (from: Loc, len: number, flags: Omit<ReadWr, 'op' | 'from' | 'len'> = {}): ReadWr => ({ op: 'read', from, len, ...flags }),
  send: (data: Uint8Array, imm?: number, flags: ChainFlags = {}): WorkRequest => ({ op: 'send', data, ...(imm === undefined ? {} : { imm }), ...flags }),
  cas: (at: Loc, compare: bigint, swap: bigint, flags: ChainFlags = {}): WorkRequest => ({ op: 'cas', at, compare: u64(compare), swap: u64(swap), ...flags }),
  faa: (at: Loc, add: bigint, flags: ChainFlags = {}): WorkRequest => ({ op: 'faa', at, add: u64(add), ...flags }),
  atomicWrite: (at: Loc, value: bigint, flags: ChainFlags = {}): WorkRequest => ({ op: 'atomicWrite', at, value: u64(value), ...flags }),
  /** FLUSH of a range, or of the whole MR when `range` is omitted. */
  flush: (placement: FlushPlacement, rkey: number, range?: { addr: number; len: number }, flags: ChainFlags = {}): WorkRequest =>
    range === undefined ? { op: 'flush', placement, selectivity: 'mr', rkey, ...flags } : { op: 'flush', placement, selectivity: 'range', rkey, addr: range.addr, len: range.len, ...flags },
  /**
   * Redirected FLUSH (pmrpc's extension of IBTA FLUSH): `len` bytes from the 8-byte pointer at scratch
   * offset `from.scratch`, which an earlier op of the same chain redirected there, inside MR `rkey`.
   * With `from.count` (default 1): `count` pointers at `from.scratch + stride·j` (`from.stride`,
   * default 8), each flushing `len` bytes, in one work request — all of them produced by this chain,
   * or nothing is flushed.
   */
  flushFrom: (placement: FlushPlacement, rkey: number, from: { scratch: number; count?: number; stride?: number }, len: number, flags: ChainFlags = {}): WorkRequest => ({
    op: 'flush',
    placement,
    selectivity: 'range',
    rkey,
    addrScratch: from.scratch,
    ...(from.count === undefined ? {} : { count: from.count }),
    ...(from.stride === undefined ? {} : { stride: from.stride }),
    len,
    ...flags,
  }),
  prismCas: (mode: CasMode, at: Loc, data: Uint8Array, flags: Omit<PrismCasWr, 'op' | 'mode' | 'at' | 'data' | 'len'> = {}): PrismCasWr => ({ op: 'prismCas', mode, at, data, len: data.length, ...flags }),
  prismCasFrom: (mode: CasMode, at: Loc, from: Loc, len: number, flags: Omit<PrismCasWr, 'op' | 'mode' | 'at' | 'from' | 'len'> = {}): PrismCasWr => ({ op: 'prismCas', mode, at, from, len, ...flags }),
  allocate: (rkey: number, sizeBytes: number, data: Uint8Array, flags: ChainFlags = {}): AllocateWr => ({ op: 'allocate', rkey, sizeBytes, data, ...flags }),
});
