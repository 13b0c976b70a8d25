/**
 * The remote-persistence methods of DESIGN §2.3 as client-side primitives over a QP, and their
 * server halves.
 *
 * - FLUSH_STRATEGY_TABLE is the one place a strategy is described: how the request is sent, how the
 *   server learns of it, when it is durable, whether the server CPU acknowledges. Client and server
 *   look their record up once, at construction (as PMDK picks its persist functions once), and
 *   branch on its fields — never on the strategy's name.
 * - FlushClient.persist(addr, data) resolves at the moment the strategy lets a client treat the
 *   data as durable ("durable at" in the table): the FLUSH completion (wflush, sflush), the
 *   server's ACK (wrflush, srflush, gpspm), the READ completion (raw — correct only without DDIO
 *   or with eADR), the WRITE completion (none — never durable; an upper bound).
 * - StrategyServer is the server CPU's half: it keeps receive buffers posted and, for wrflush /
 *   srflush / gpspm, persists what arrived and ACKs. It runs on a CpuPoller.
 * - CpuPoller is the server CPU's polling loop, driven by notifications from the NIC (a drained
 *   write landing in watched memory, a receive completion) — never a spin loop. The durable RPC
 *   layer reuses it.
 */
import { callable, invariant, PmrpcError, positiveInt, resolveOptions } from '../pmem/index.js';
import { NicErrorCodes } from './mr.js';
import { Wr, ok, type QueuePair } from './client.js';
import type { HostWriteEvent, Rnic, ServerQp } from './nic.js';
import { readPtr, u64le } from './prism.js';
import type { Completion, NotifyMessage, RecvCompletion, WorkRequest } from './types.js';

export type FlushStrategy = 'wflush' | 'sflush' | 'wrflush' | 'srflush' | 'raw' | 'gpspm' | 'none';

/** How the client sends the entry: a WRITE into server memory, or a SEND into a posted receive buffer. */
export type RequestVerb = 'write' | 'send';
/**
 * What follows the entry in the same chain: a FLUSH(persistent) of it ('flush': of the written
 * range, or of the whole receive MR after a SEND), a 1-byte READ of its last byte ('read'), a flush
 * request SEND to the server CPU ('flush-request'), or nothing ('none').
 */
export type FollowVerb = 'flush' | 'read' | 'flush-request' | 'none';
/**
 * How the server CPU learns of an entry: a drained WRITE into watched memory ('memory'), a receive
 * completion of the entry's own SEND ('recv'), or the receive completion of the flush request that
 * follows the entry's WRITE ('flush-request').
 */
export type Arrival = 'memory' | 'recv' | 'flush-request';
/**
 * When the client may treat the entry as durable: its own chain's completion ('completion': the
 * FLUSH or READ), the server CPU's ACK after it persisted the entry ('ack'), never ('never').
 */
export type FlushDurableAt = 'completion' | 'ack' | 'never';

/** One row of DESIGN §2.3: everything client and server decide about a strategy. */
export interface FlushStrategyRecord {
  readonly name: FlushStrategy;
  readonly request: RequestVerb;
  readonly follow: FollowVerb;
  readonly arrives: Arrival;
  readonly durableAt: FlushDurableAt;
  /** The server CPU persists the entry and then acknowledges it (exactly when durableAt is 'ack'). */
  readonly serverAcks: boolean;
  /** Correct under the hardware model of DESIGN §2 whatever the DDIO setting. */
  readonly alwaysCorrect: boolean;
}

/** The flush strategies of DESIGN §2.3, one record each; FLUSH_STRATEGIES lists them in this order. */
export const FLUSH_STRATEGY_TABLE: Readonly<Record<FlushStrategy, FlushStrategyRecord>> = Object.freeze({
  wflush: { name: 'wflush', request: 'write', follow: 'flush', arrives: 'memory', durableAt: 'completion', serverAcks: false, alwaysCorrect: true },
  sflush: { name: 'sflush', request: 'send', follow: 'flush', arrives: 'recv', durableAt: 'completion', serverAcks: false, alwaysCorrect: true },
  wrflush: { name: 'wrflush', request: 'write', follow: 'none', arrives: 'memory', durableAt: 'ack', serverAcks: true, alwaysCorrect: true },
  srflush: { name: 'srflush', request: 'send', follow: 'none', arrives: 'recv', durableAt: 'ack', serverAcks: true, alwaysCorrect: true },
  // Durable at the READ completion only without DDIO or with eADR (read-after-write flushes the NIC, not the CPU caches).
  raw: { name: 'raw', request: 'write', follow: 'read', arrives: 'memory', durableAt: 'completion', serverAcks: false, alwaysCorrect: false },
  gpspm: { name: 'gpspm', request: 'write', follow: 'flush-request', arrives: 'flush-request', durableAt: 'ack', serverAcks: true, alwaysCorrect: true },
  // No persistence at all: an upper bound for benchmarks.
  none: { name: 'none', request: 'write', follow: 'none', arrives: 'memory', durableAt: 'never', serverAcks: false, alwaysCorrect: false },
} satisfies Record<FlushStrategy, FlushStrategyRecord>);
for (const r of Object.values(FLUSH_STRATEGY_TABLE)) Object.freeze(r);

export const FLUSH_STRATEGIES: readonly FlushStrategy[] = Object.freeze(Object.keys(FLUSH_STRATEGY_TABLE) as FlushStrategy[]);

/** The record of a flush strategy by name; a TypeError for anything else. */
export function flushStrategy(name: unknown): FlushStrategyRecord {
  if (typeof name !== 'string' || !Object.hasOwn(FLUSH_STRATEGY_TABLE, name)) throw new TypeError(`strategy must be one of ${FLUSH_STRATEGIES.join(', ')}, got ${String(name)}`);
  return FLUSH_STRATEGY_TABLE[name as FlushStrategy];
}

/** imm of a server ACK (data: u64 offset, u64 length of what is now durable). */
export const ACK_IMM = 0x504d4143; // 'PMAC'
/** imm of a server refusal (a gpspm request for a range outside the region). */
export const NACK_IMM = 0x504d4e41; // 'PMNA'
/** imm of a gpspm flush request SEND (data: u64 offset, u64 length). */
export const GPSPM_IMM = 0x504d4750; // 'PMGP'


// ---------------------------------------------------------------------------- CPU poller

export interface CpuPollerOptions {
  /** Runs a CPU pass later (default queueMicrotask): the NIC never runs server-CPU code inline. */
  schedule: (fn: () => void) => void;
  /** Most events handled in one pass; the rest wait for the next pass. */
  batchMax: number;
  /** Bound of queued events (an assertion: a CPU that never runs is a bug of the caller). */
  queueMax: number;
}

export const CPU_POLLER_DEFAULTS: Readonly<CpuPollerOptions> = Object.freeze({ schedule: queueMicrotask, batchMax: 1024, queueMax: 1 << 20 });

interface MemoryWatch {
  offset: number;
  len: number;
  qpn: number | undefined;
  fn: (e: HostWriteEvent) => void;
  filter: ((e: HostWriteEvent) => boolean) | undefined;
}

type PollEvent = { kind: 'mem'; fn: (e: HostWriteEvent) => void; e: HostWriteEvent } | { kind: 'recv'; qp: ServerQp; fn: (c: RecvCompletion) => void };

export class CpuPoller {
  readonly nic: Rnic;
  readonly options: Readonly<CpuPollerOptions>;
  #watches: MemoryWatch[] = [];
  #queue: PollEvent[] = [];
  #scheduled = false;
  #unsubscribe: () => void;

  constructor(nic: Rnic, options: Partial<CpuPollerOptions> = {}) {
    const o = resolveOptions(CPU_POLLER_DEFAULTS, options, { schedule: callable(), batchMax: positiveInt, queueMax: positiveInt });
    this.nic = nic;
    this.options = Object.freeze(o);
    this.#unsubscribe = nic.onHostWrite((e) => this.#onHostWrite(e));
  }

  /**
   * fn runs (on a CPU pass) for every drained NIC write overlapping [offset, offset+len), from QP
   * `qpn` if given — and, with `filter`, only for the writes it accepts: the words the CPU polls
   * (filter runs as the write drains, on what is then visible; a write it refuses costs no pass).
   */
  watchMemory(range: { offset: number; len: number; qpn?: number; filter?: (e: HostWriteEvent) => boolean }, fn: (e: HostWriteEvent) => void): () => void {
    const w: MemoryWatch = { offset: range.offset, len: range.len, qpn: range.qpn, fn, filter: range.filter };
    this.#watches.push(w);
    return () => {
      const i = this.#watches.indexOf(w);
      if (i >= 0) this.#watches.splice(i, 1);
    };
  }

  /**
   * fn runs (on a CPU pass) for every receive completion of `qp`, in order. `arrived`, if given,
   * runs at once (inside the NIC) when a completion is queued, before its pass is scheduled.
   */
  watchRecv(qp: ServerQp, fn: (c: RecvCompletion) => void, arrived?: () => void): () => void {
    qp.onRecvNotify(
      arrived === undefined
        ? () => this.#enqueue({ kind: 'recv', qp, fn })
        : () => {
            arrived();
            this.#enqueue({ kind: 'recv', qp, fn });
          },
    );
    return () => qp.onRecvNotify(undefined);
  }

  /**
   * fn runs at the end of every pass that handled at least one event, in the same pass (after the
   * pass's events, before the next pass is scheduled): work a pass's events make due (a sweep)
   * costs no pass of its own. Returns the unsubscribe.
   */
  onPassEnd(fn: () => void): () => void {
    this.#passEnd.push(fn);
    return () => {
      const i = this.#passEnd.indexOf(fn);
      if (i >= 0) this.#passEnd.splice(i, 1);
    };
  }

  #passEnd: Array<() => void> = [];

  /** Events waiting for a CPU pass. */
  get pending(): number {
    return this.#queue.length;
  }

  /**
   * Numbers the passes: it changes when a pass starts. Every event of a pass was queued before it
   * started (what its callbacks cause queues for a later pass), so a callback that has already
   * looked at everything its memory holds during this pass may let its further events of the pass go.
   */
  get passId(): number {
    return this.#passId;
  }

  #passId = 0;

  /** Runs one pass now (at most batchMax events); returns how many ran. */
  runPending(): number {
    this.#passId++;
    const batch = this.#queue.splice(0, this.options.batchMax);
    for (const ev of batch) {
      if (ev.kind === 'mem') ev.fn(ev.e);
      else for (const c of ev.qp.pollRecv(1)) ev.fn(c);
    }
    if (batch.length > 0) for (const fn of this.#passEnd) fn();
    if (this.#queue.length > 0) this.#schedulePass();
    return batch.length;
  }

  close(): void {
    this.#unsubscribe();
    this.#watches = [];
    this.#queue = [];
    this.#passEnd = [];
  }

  #onHostWrite(e: HostWriteEvent): void {
    for (const w of this.#watches) {
      if (w.qpn !== undefined && w.qpn !== e.qpn) continue;
      if (e.offset < w.offset + w.len && e.offset + e.len > w.offset && (w.filter === undefined || w.filter(e))) this.#enqueue({ kind: 'mem', fn: w.fn, e });
    }
  }

  #enqueue(ev: PollEvent): void {
    invariant(this.#queue.length < this.options.queueMax, () => `CpuPoller: ${this.#queue.length} events queued; the CPU pass never ran`);
    this.#queue.push(ev);
    this.#schedulePass();
  }

  #schedulePass(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    this.options.schedule(() => {
      this.#scheduled = false;
      this.runPending();
    });
  }
}

// ---------------------------------------------------------------------------- server half

export interface StrategyServerOptions {
  strategy: FlushStrategy;
  qp: ServerQp;
  /** The memory this client WRITEs into (wrflush watches it for the client's drained writes). */
  ring?: { offset: number; len: number };
  /** Receive buffers kept posted (sflush, srflush, gpspm); each is reposted after its entry is handled. */
  recvBuffers?: ReadonlyArray<{ addr: number; len: number }>;
  /** Called on the CPU for each arrived entry — after it is durable for wrflush / srflush / gpspm. */
  onEntry?: (e: { offset: number; len: number; qpn: number }) => void;
}

/** The server CPU's half of a flush strategy for one client QP. */
export class StrategyServer {
  readonly strategy: FlushStrategy;
  readonly qp: ServerQp;
  /** The strategy's record, looked up once. */
  readonly record: FlushStrategyRecord;
  #poller: CpuPoller;
  #stops: Array<() => void> = [];
  #buffers: ReadonlyArray<{ addr: number; len: number }>;
  #onEntry: ((e: { offset: number; len: number; qpn: number }) => void) | undefined;

  constructor(poller: CpuPoller, options: StrategyServerOptions) {
    const r = flushStrategy(options.strategy);
    this.record = r;
    this.strategy = r.name;
    this.qp = options.qp;
    this.#poller = poller;
    this.#onEntry = options.onEntry;
    this.#buffers = options.recvBuffers ?? [];
    const needsRecv = r.arrives !== 'memory';
    if (needsRecv && this.#buffers.length === 0) throw new TypeError(`strategy ${r.name} needs recvBuffers`);
    if (!needsRecv && r.serverAcks && options.ring === undefined) throw new TypeError(`strategy ${r.name} needs ring`);
    this.#buffers.forEach((b, id) => this.qp.postRecv({ id, addr: b.addr, len: b.len }));
    if (needsRecv) this.#stops.push(poller.watchRecv(this.qp, (c) => this.#onRecv(c)));
    if (options.ring !== undefined && (r.serverAcks || this.#onEntry !== undefined) && !needsRecv) {
      this.#stops.push(poller.watchMemory({ ...options.ring, qpn: this.qp.qpn }, (e) => this.#onWrite(e)));
    }
  }

  close(): void {
    for (const s of this.#stops.splice(0)) s();
  }

  #onWrite(e: HostWriteEvent): void {
    if (this.record.serverAcks) this.#durable(e.offset, e.len);
    else this.#onEntry?.({ offset: e.offset, len: e.len, qpn: e.qpn });
  }

  #onRecv(c: RecvCompletion): void {
    const region = this.#poller.nic.region;
    if (this.record.arrives === 'flush-request') {
      const req = c.byteLen >= 16 ? region.load(c.addr, 16) : undefined;
      const off = req === undefined ? -1 : readPtr(req, 0);
      const len = req === undefined ? -1 : readPtr(req, 8);
      if (c.imm !== GPSPM_IMM || !(off >= 0 && len >= 0 && off + len <= region.sizeBytes)) this.qp.notify(new Uint8Array(16), NACK_IMM);
      else this.#durable(off, len);
    } else if (this.record.serverAcks) {
      this.#durable(c.addr, c.byteLen);
    } else {
      this.#onEntry?.({ offset: c.addr, len: c.byteLen, qpn: c.qpn });
    }
    const b = this.#buffers[c.recvId]!;
    this.qp.postRecv({ id: c.recvId, addr: b.addr, len: b.len });
  }

  /** The CPU persists the entry, lets the application see it, then ACKs: the ACK follows durability. */
  #durable(offset: number, len: number): void {
    this.#poller.nic.region.persist(offset, len);
    this.#onEntry?.({ offset, len, qpn: this.qp.qpn });
    const ack = new Uint8Array(16);
    ack.set(u64le(offset), 0);
    ack.set(u64le(len), 8);
    this.qp.notify(ack, ACK_IMM);
  }
}

// ---------------------------------------------------------------------------- client half

export interface FlushClientOptions {
  strategy: FlushStrategy;
  /** rkey of the server memory written by wflush, wrflush, raw, gpspm, none. */
  rkey?: number;
  /** sflush: rkey of the receive MR (flushed whole, FLUSH(persistent, mr)). */
  recvRkey?: number;
}

export interface PersistResult {
  /** Completions of the request message. */
  completions: Completion[];
  /** The server's ACK, for wrflush / srflush / gpspm: [offset, len) it persisted. */
  ack?: { offset: number; len: number };
}

export class FlushClient {
  readonly qp: QueuePair;
  readonly strategy: FlushStrategy;
  /** The strategy's record, looked up once. */
  readonly record: FlushStrategyRecord;
  #rkey: number | undefined;
  #recvRkey: number | undefined;
  #ackWaiters: Array<{ resolve: (a: { offset: number; len: number }) => void; reject: (e: unknown) => void }> = [];

  constructor(qp: QueuePair, options: FlushClientOptions) {
    const r = flushStrategy(options.strategy);
    if (r.request === 'write' && options.rkey === undefined) throw new TypeError(`strategy ${r.name} needs rkey`);
    if (r.request === 'send' && r.follow === 'flush' && options.recvRkey === undefined) throw new TypeError(`strategy ${r.name} needs recvRkey`);
    this.qp = qp;
    this.record = r;
    this.strategy = r.name;
    this.#rkey = options.rkey;
    this.#recvRkey = options.recvRkey;
    if (r.serverAcks) {
      qp.onNotify((m) => this.#onNotify(m));
      // No ACK can come over a closed link: its waiters reject instead of hanging.
      qp.onClose((err) => {
        for (const w of this.#ackWaiters.splice(0)) w.reject(err);
      });
    }
  }

  /**
   * Sends `data` (to `addr` for the WRITE strategies; into the next receive buffer for sflush /
   * srflush, where `addr` is ignored) and resolves when the strategy deems it durable.
   * Rejects with the failing completion's code.
   */
  async persist(addr: number, data: Uint8Array): Promise<PersistResult> {
    if (!(data instanceof Uint8Array) || data.length === 0) throw new TypeError('data must be a non-empty Uint8Array');
    const r = this.record;
    const to = { rkey: this.#rkey ?? 0, addr };
    const wrs: WorkRequest[] = [r.request === 'write' ? Wr.write(to, data) : Wr.send(data)];
    if (r.follow === 'flush') wrs.push(r.request === 'write' ? Wr.flush('persistent', this.#rkey!, { addr, len: data.length }) : Wr.flush('persistent', this.#recvRkey!));
    else if (r.follow === 'read') wrs.push(Wr.read({ rkey: this.#rkey!, addr: addr + data.length - 1 }, 1));
    else if (r.follow === 'flush-request') {
      const req = new Uint8Array(16);
      req.set(u64le(addr), 0);
      req.set(u64le(data.length), 8);
      wrs.push(Wr.send(req, GPSPM_IMM));
    }
    let waiter: { resolve: (a: { offset: number; len: number }) => void; reject: (e: unknown) => void } | undefined;
    const ackP = r.serverAcks
      ? new Promise<{ offset: number; len: number }>((resolve, reject) => {
          waiter = { resolve, reject };
          this.#ackWaiters.push(waiter);
        })
      : undefined;
    ackP?.catch(() => undefined); // rejected by a close while postChain still runs: observed below
    const dropWaiter = (): void => {
      const i = waiter === undefined ? -1 : this.#ackWaiters.indexOf(waiter);
      if (i >= 0) this.#ackWaiters.splice(i, 1);
    };
    let completions: Completion[];
    try {
      completions = await this.qp.postChain(wrs);
    } catch (e) {
      dropWaiter();
      throw e;
    }
    const bad = completions.find((c) => c.status !== 'ok');
    if (bad !== undefined) {
      // No ACK will come for a request that failed: drop its own waiter.
      dropWaiter();
      ok(bad);
    }
    if (ackP === undefined) return { completions };
    return { completions, ack: await ackP };
  }

  #onNotify(m: NotifyMessage): void {
    if (m.imm !== ACK_IMM && m.imm !== NACK_IMM) return;
    const w = this.#ackWaiters.shift();
    if (w === undefined) return;
    if (m.imm === NACK_IMM) w.reject(new PmrpcError(NicErrorCodes.FLUSH_REFUSED, 'the server refused the flush request'));
    else w.resolve({ offset: readPtr(m.data, 0), len: readPtr(m.data, 8) });
  }
}
