/**
 * The remote-persistence methods of DESIGN §2.3 as client-side primitives over a QP, and their
 * server halves.
 *
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
import assert from 'node:assert/strict';
import { callable, PmrpcError, positiveInt, resolveOptions } from '../pmem/index.js';
import { NicErrorCodes } from './mr.js';
import { Wr, ok, type QueuePair } from './client.js';
import type { HostWriteEvent, Rnic, ServerQp } from './nic.js';
import { readPtr, u64le } from './prism.js';
import type { Completion, NotifyMessage, RecvCompletion, WorkRequest } from './types.js';

export type FlushStrategy = 'wflush' | 'sflush' | 'wrflush' | 'srflush' | 'raw' | 'gpspm' | 'none';
export const FLUSH_STRATEGIES: readonly FlushStrategy[] = Object.freeze(['wflush', 'sflush', 'wrflush', 'srflush', 'raw', 'gpspm', 'none']);

/** imm of a server ACK (data: u64 offset, u64 length of what is now durable). */
export const ACK_IMM = 0x504d4143; // 'PMAC'
/** imm of a server refusal (a gpspm request for a range outside the region). */
export const NACK_IMM = 0x504d4e41; // 'PMNA'
/** imm of a gpspm flush request SEND (data: u64 offset, u64 length). */
export const GPSPM_IMM = 0x504d4750; // 'PMGP'

const SEND_STRATEGIES: ReadonlySet<FlushStrategy> = new Set(['sflush', 'srflush']);
const ACK_STRATEGIES: ReadonlySet<FlushStrategy> = new Set(['wrflush', 'srflush', 'gpspm']);

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

  /** fn runs (on a CPU pass) for every drained NIC write overlapping [offset, offset+len), from QP `qpn` if given. */
  watchMemory(range: { offset: number; len: number; qpn?: number }, fn: (e: HostWriteEvent) => void): () => void {
    const w: MemoryWatch = { offset: range.offset, len: range.len, qpn: range.qpn, fn };
    this.#watches.push(w);
    return () => {
      const i = this.#watches.indexOf(w);
      if (i >= 0) this.#watches.splice(i, 1);
    };
  }

  /** fn runs (on a CPU pass) for every receive completion of `qp`, in order. */
  watchRecv(qp: ServerQp, fn: (c: RecvCompletion) => void): () => void {
    qp.onRecvNotify(() => this.#enqueue({ kind: 'recv', qp, fn }));
    return () => qp.onRecvNotify(undefined);
  }

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
    if (this.#queue.length > 0) this.#schedulePass();
    return batch.length;
  }

  close(): void {
    this.#unsubscribe();
    this.#watches = [];
    this.#queue = [];
  }

  #onHostWrite(e: HostWriteEvent): void {
    for (const w of this.#watches) {
      if (w.qpn !== undefined && w.qpn !== e.qpn) continue;
      if (e.offset < w.offset + w.len && e.offset + e.len > w.offset) this.#enqueue({ kind: 'mem', fn: w.fn, e });
    }
  }

  #enqueue(ev: PollEvent): void {
    assert.ok(this.#queue.length < this.options.queueMax, `CpuPoller: ${this.#queue.length} events queued; the CPU pass never ran`);
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
  #poller: CpuPoller;
  #stops: Array<() => void> = [];
  #buffers: ReadonlyArray<{ addr: number; len: number }>;
  #onEntry: ((e: { offset: number; len: number; qpn: number }) => void) | undefined;

  constructor(poller: CpuPoller, options: StrategyServerOptions) {
    if (!FLUSH_STRATEGIES.includes(options.strategy)) throw new TypeError(`strategy must be one of ${FLUSH_STRATEGIES.join(', ')}, got ${String(options.strategy)}`);
    this.strategy = options.strategy;
    this.qp = options.qp;
    this.#poller = poller;
    this.#onEntry = options.onEntry;
    this.#buffers = options.recvBuffers ?? [];
    const needsRecv = SEND_STRATEGIES.has(this.strategy) || this.strategy === 'gpspm';
    if (needsRecv && this.#buffers.length === 0) throw new TypeError(`strategy ${this.strategy} needs recvBuffers`);
    if (this.strategy === 'wrflush' && options.ring === undefined) throw new TypeError('strategy wrflush needs ring');
    this.#buffers.forEach((b, id) => this.qp.postRecv({ id, addr: b.addr, len: b.len }));
    if (needsRecv) this.#stops.push(poller.watchRecv(this.qp, (c) => this.#onRecv(c)));
    if (options.ring !== undefined && (this.strategy === 'wrflush' || this.#onEntry !== undefined) && !needsRecv) {
      this.#stops.push(poller.watchMemory({ ...options.ring, qpn: this.qp.qpn }, (e) => this.#onWrite(e)));
    }
  }

  close(): void {
    for (const s of this.#stops.splice(0)) s();
  }

  #onWrite(e: HostWriteEvent): void {
    if (this.strategy === 'wrflush') this.#durable(e.offset, e.len);
    else this.#onEntry?.({ offset: e.offset, len: e.len, qpn: e.qpn });
  }

  #onRecv(c: RecvCompletion): void {
    const region = this.#poller.nic.region;
    if (this.strategy === 'gpspm') {
      const req = c.byteLen >= 16 ? region.load(c.addr, 16) : undefined;
      const off = req === undefined ? -1 : readPtr(req, 0);
      const len = req === undefined ? -1 : readPtr(req, 8);
      if (c.imm !== GPSPM_IMM || !(off >= 0 && len >= 0 && off + len <= region.sizeBytes)) this.qp.notify(new Uint8Array(16), NACK_IMM);
      else this.#durable(off, len);
    } else if (this.strategy === 'srflush') {
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
  #rkey: number | undefined;
  #recvRkey: number | undefined;
  #ackWaiters: Array<{ resolve: (a: { offset: number; len: number }) => void; reject: (e: unknown) => void }> = [];

  constructor(qp: QueuePair, options: FlushClientOptions) {
    if (!FLUSH_STRATEGIES.includes(options.strategy)) throw new TypeError(`strategy must be one of ${FLUSH_STRATEGIES.join(', ')}, got ${String(options.strategy)}`);
    if (!SEND_STRATEGIES.has(options.strategy) && options.rkey === undefined) throw new TypeError(`strategy ${options.strategy} needs rkey`);
    if (options.strategy === 'sflush' && options.recvRkey === undefined) throw new TypeError('strategy sflush needs recvRkey');
    this.qp = qp;
    this.strategy = options.strategy;
    this.#rkey = options.rkey;
    this.#recvRkey = options.recvRkey;
    if (ACK_STRATEGIES.has(this.strategy)) {
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
    const to = { rkey: this.#rkey ?? 0, addr };
    let wrs: WorkRequest[];
    switch (this.strategy) {
      case 'wflush':
        wrs = [Wr.write(to, data), Wr.flush('persistent', this.#rkey!, { addr, len: data.length })];
        break;
      case 'sflush':
        wrs = [Wr.send(data), Wr.flush('persistent', this.#recvRkey!)];
        break;
      case 'wrflush':
      case 'none':
        wrs = [Wr.write(to, data)];
        break;
      case 'srflush':
        wrs = [Wr.send(data)];
        break;
      case 'raw':
        wrs = [Wr.write(to, data), Wr.read({ rkey: this.#rkey!, addr: addr + data.length - 1 }, 1)];
        break;
      case 'gpspm': {
        const req = new Uint8Array(16);
        req.set(u64le(addr), 0);
        req.set(u64le(data.length), 8);
        wrs = [Wr.write(to, data), Wr.send(req, GPSPM_IMM)];
        break;
      }
    }
    let waiter: { resolve: (a: { offset: number; len: number }) => void; reject: (e: unknown) => void } | undefined;
    const ackP = ACK_STRATEGIES.has(this.strategy)
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
