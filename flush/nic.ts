/**
 * The emulated RNIC, server side (DESIGN §2.2–2.4). `Rnic` is the thin validating shell; the
 * engine below it executes work requests of reliable-connected QPs in order, one request at a
 * time (so a scheduler can interleave QPs between the ops of a chain), against the PM region.
 *
 * Inbound data (WRITE / SEND payloads, atomic results, PRISM writes, ALLOCATE data) first lands in
 * a volatile NIC cache; the DMA engine drains it into host memory by policy. With DDIO the drain
 * lands in visible memory as dirty CPU lines; without, it goes to media with a non-temporal store.
 * Whatever is undrained joins the region's crash states as one component per cache entry.
 */
import { bool, buggify, cryptoEntropy, intAtLeast, invariant, LINE_BYTES, must, oneOf, PmemRegion, PmrpcError, resolveOptions, type CrashComponent, type CrashPiece, type Entropy, type OptionChecks } from '../pmem/index.js';
import { MrTable, NicErrorCodes, WrError, type MemoryRegion, type ProtectionDomain } from './mr.js';
import { bigintToLe, casResult, casSucceeds, leToBigint, readPtr, u64le } from './prism.js';
import {
  Access,
  type AllocateWr,
  type Completion,
  type FlushWr,
  type Loc,
  type PrismCasWr,
  type ReadWr,
  type RecvCompletion,
  type RequestMessage,
  type ServerMessage,
  type WorkRequest,
  type WriteWr,
} from './types.js';
import { chainError, isScratch, MAX_WRS_PER_MESSAGE } from './validate.js';

export type DrainPolicy = 'eager' | 'lazy' | 'onFlush';
export type PlacementOrder = 'any' | 'ascending';

export interface RnicOptions {
  /** true (default): drained data lands in visible memory as dirty CPU lines. false: straight to media. */
  ddio: boolean;
  /** When the DMA engine drains the NIC cache: after every request, keeping at most `lazyBound` entries, or only when forced. */
  drain: DrainPolicy;
  /** 'lazy': most undrained cache entries kept (oldest drain first). */
  lazyBound: number;
  /** Any policy: the NIC cache's capacity in entries (oldest drain first beyond it). */
  cacheEntriesMax: number;
  /**
   * What undrained NIC writes can leave after a crash: 'any' — any subset of each message's 8-byte
   * words; 'ascending' — drained in address and posting order (a prefix of each QP's stream without
   * DDIO; a prefix per message and cache line with DDIO, as cache lines persist independently).
   */
  placement: PlacementOrder;
  /** Per-connection scratch buffer for `redirect` (NIC memory, volatile). */
  scratchBytes: number;
  /** Bound of each QP's posted receive buffers and of its receive completion queue. */
  recvQueueMax: number;
  /** Bound of each QP's queue of request messages not yet executed. */
  inboundMessagesMax: number;
  /** Source of rkeys. */
  entropy: Entropy;
}

export const RNIC_DEFAULTS: Readonly<RnicOptions> = Object.freeze({
  ddio: true,
  drain: 'lazy',
  lazyBound: 16,
  cacheEntriesMax: 65536,
  placement: 'any',
  scratchBytes: 256,
  recvQueueMax: 4096,
  inboundMessagesMax: 4096,
  entropy: cryptoEntropy,
});

export interface RnicStats {
  wrs: number;
  errors: number;
  messages: number;
  cacheEntriesDrained: number;
  bytesDrained: number;
  flushes: number;
  recvCompletions: number;
}

/**
 * Short-lived byte copies carved from 64-KiB slabs (the NIC cache's entries, the RPC client's ring
 * entries). V8 keeps a fresh Uint8Array of at most 64 bytes on its heap; a longer one gets an
 * ArrayBuffer backing store off the heap, which costs ≈ 1 µs to allocate and finalize — more than
 * the rest of a small request's copy. A view into a slab is one small heap object. Views are zeroed
 * (as new Uint8Array(n)), never reused, and disjoint; a slab is freed once no view of it is alive.
 * Copies over `maxBytes` get their own array.
 */
export class ByteSlab {
  #slab = new Uint8Array(0);
  #at = 0;
  constructor(
    readonly slabBytes = 64 * 1024,
    readonly maxBytes = 4096,
  ) {}

  /** n zeroed bytes. */
  alloc(n: number): Uint8Array {
    if (n > this.maxBytes) return new Uint8Array(n);
    if (this.#at + n > this.#slab.length) {
      this.#slab = new Uint8Array(this.slabBytes);
      this.#at = 0;
    }
    const v = this.#slab.subarray(this.#at, this.#at + n);
    this.#at = (this.#at + n + 7) & ~7;
    return v;
  }

  /** A copy of `bytes`. */
  copy(bytes: Uint8Array): Uint8Array {
    if (bytes.length <= 64 || bytes.length > this.maxBytes) return bytes.slice();
    const v = this.alloc(bytes.length);
    v.set(bytes);
    return v;
  }
}

/** A drained write landing in host memory: what a server CPU polling that memory could now see. */
export interface HostWriteEvent {
  qpn: number;
  offset: number;
  len: number;
}

interface CacheEntry {
  seq: number;
  qpn: number;
  offset: number;
  bytes: Uint8Array;
  /** Its QP's engine (the one it was put by). */
  qp: QpEngine;
  /** Still in the NIC cache (undrained). */
  live: boolean;
}

/**
 * The NIC cache: its undrained entries in seq (= insertion) order, as an array walked from `head`
 * (drained entries are marked, not removed, until the head passes them; the array is replaced, not
 * shifted, when compacted). A Map keyed by seq cost a shrink of its table per drain (it empties
 * after almost every request), the most expensive line of the server's NIC on the TCP path.
 * Iterating `list` while entries drain is safe: a drained entry only turns `live` false, and
 * compaction builds a new array (a walk keeps the one it started on); when the cache empties the
 * array is truncated in place, which only ends a walk early (nothing older is left to visit).
 * Exported for test/flush/nic-cache.test.ts.
 */
export class NicCache<E extends { live: boolean }> {
  list: E[] = [];
  head = 0;
  size = 0;

  add(c: E): void {
    this.list.push(c);
    this.size++;
  }

  /** The oldest undrained entry (size > 0). */
  first(): E {
    return this.list[this.head]!;
  }

  /** c drained (a no-op when it is no longer in the cache: detach() may have dropped it meanwhile, from a crash point of its store). */
  remove(c: E): void {
    if (!c.live) return;
    c.live = false;
    if (--this.size === 0) {
      this.list.length = 0;
      this.head = 0;
      return;
    }
    const list = this.list;
    let h = this.head;
    while (!list[h]!.live) h++;
    this.head = h;
    // Drained entries behind undrained older ones (another QP's) stay until the head passes them: compact when they outweigh the live ones.
    if (h >= 1024 || list.length - h > 4 * this.size + 1024) {
      this.list = list.filter((x) => x.live);
      this.head = 0;
    }
  }

  clear(): void {
    for (let i = this.head; i < this.list.length; i++) this.list[i]!.live = false;
    this.list = [];
    this.head = 0;
    this.size = 0;
  }

  /** The undrained entries, oldest first (a copy). */
  values(): E[] {
    const out: E[] = [];
    const list = this.list;
    for (let i = this.head; i < list.length; i++) if (list[i]!.live) out.push(list[i]!);
    return out;
  }
}

interface PostedRecv {
  id: number;
  addr: number;
  len: number;
}

/** Responses a group-commit pass held, handed over by Rnic.takeResponses() (opaque). */
export type HeldResponses = { readonly __heldResponses: unique symbol };

interface Inbound {
  msg: RequestMessage;
  completions: Completion[];
  next: number;
  /** The first malformed work request (checked once, when the message arrived): its index, or -1. */
  badAt: number;
  badWhy: string;
}

type Target = { kind: 'pm'; addr: number } | { kind: 'scratch'; off: number };

class QpEngine {
  state: 'ready' | 'error' = 'ready';
  lastOk = true;
  readonly recvQueue: PostedRecv[] = [];
  readonly recvCq: RecvCompletion[] = [];
  readonly inbound: Inbound[] = [];
  readonly entries: CacheEntry[] = [];
  /** `lazy`: a transport may gather the message with the next ones (no durable signal — a RESULT after its ACK — or one followed at once by another: notify's `more`). */
  sink: ((msg: ServerMessage, lazy?: boolean) => void) | undefined;
  recvNotify: (() => void) | undefined;
  /** The chain (request message) executing now, numbered from 1 per QP. */
  chain = 0;
  /** false once the QP is destroyed (a pass running a chain on it stops). */
  live = true;
  /**
   * Per scratch byte: the chain whose op last produced it (0: none, or its producer failed). A
   * redirected FLUSH reads only a pointer its own chain produced (DESIGN §2.4, docs/verbs.md).
   */
  readonly produced: Float64Array;
  constructor(
    readonly qpn: number,
    readonly pd: ProtectionDomain,
    readonly scratch: Uint8Array,
  ) {
    this.produced = new Float64Array(scratch.length);
  }
}

/** The server's view of one QP: post receive buffers, read receive completions, notify the client. */
export class ServerQp {
  readonly qpn: number;
  readonly pd: ProtectionDomain;
  #nic: Rnic;
  #e: QpEngine;

  /** @internal */
  constructor(nic: Rnic, e: QpEngine) {
    this.#nic = nic;
    this.#e = e;
    this.qpn = e.qpn;
    this.pd = e.pd;
  }

  get state(): 'ready' | 'error' {
    return this.#e.state;
  }

  /** Posts a receive buffer [addr, addr+len) of the region for one SEND (or WRITE_WITH_IMM). */
  postRecv(buf: { id: number; addr: number; len: number }): void {
    const e = this.#e;
    if (!Number.isInteger(buf.id) || buf.id < 0) throw new TypeError('recv id must be a non-negative integer');
    if (!Number.isSafeInteger(buf.addr) || !Number.isSafeInteger(buf.len) || buf.addr < 0 || buf.len < 0 || buf.addr + buf.len > this.#nic.region.sizeBytes) {
      throw new RangeError(`receive buffer [${buf.addr}, ${buf.addr + buf.len}) is outside the region [0, ${this.#nic.region.sizeBytes})`);
    }
    if (e.recvQueue.length >= this.#nic.options.recvQueueMax) {
      throw new RangeError(`QP ${this.qpn} already has ${e.recvQueue.length} posted receive buffers (recvQueueMax)`);
    }
    e.recvQueue.push({ id: buf.id, addr: buf.addr, len: buf.len });
  }

  get postedRecvs(): number {
    return this.#e.recvQueue.length;
  }

  /** Takes up to `max` receive completions, oldest first. */
  pollRecv(max = Number.POSITIVE_INFINITY): RecvCompletion[] {
    return this.#e.recvCq.splice(0, Math.min(max, this.#e.recvCq.length));
  }

  /** Called (synchronously, from inside the NIC) after a receive completion is queued; a CPU poller schedules itself from here. */
  onRecvNotify(fn: (() => void) | undefined): void {
    this.#e.recvNotify = fn;
  }

  /**
   * The server CPU tells the client something (an ACK or a reply): one message on the link. A
   * 'completion' crash point. `options.lazy`: the message is no durable signal (a decoupled
   * strategy's RESULT), so a transport may gather it with the messages that follow in the same
   * run of callbacks (one socket write for a pass's RESULTs); an ACK or a coupled reply is never lazy.
   * `options.more`: another notify of this QP follows at once, in the same synchronous run with no
   * processing between (the replies of one settled batch): a transport may hold this one for it
   * (one socket write for the batch) — at the latest until the end of the turn, like a lazy one.
   * `options.transfer`: the caller hands `data` over (a fresh buffer it never touches again), so
   * the message carries it as is instead of a copy.
   */
  notify(data: Uint8Array, imm?: number, options?: { lazy?: boolean; more?: boolean; transfer?: boolean }): void {
    const e = this.#e;
    if (!(data instanceof Uint8Array)) throw new TypeError('data must be a Uint8Array');
    const region = this.#nic.region;
    // The crash point's detail is built only for a hook that reads it (one per request otherwise).
    region.crashPoint('completion', region.crashPointHooked ? (imm === undefined ? { qpn: this.qpn, notify: data.length } : { qpn: this.qpn, notify: data.length, imm }) : undefined);
    if (e.sink === undefined) return;
    const bytes = options?.transfer === true ? data : data.slice();
    e.sink(imm === undefined ? { type: 'notify', qpn: this.qpn, data: bytes } : { type: 'notify', qpn: this.qpn, data: bytes, imm }, options?.lazy === true || options?.more === true);
  }

  /** A read-only copy of the scratch buffer (tests, debugging). */
  scratch(): Uint8Array {
    return this.#e.scratch.slice();
  }
}

/** A free list of one MR and size: FIFO `queue` from `head` (O(1) pops), and its `members` for the no-double-post invariant. */
export interface FreeList {
  queue: number[];
  head: number;
  members: Set<number>;
}

/** Pops the oldest buffer of a non-empty free list (compacting the consumed prefix now and then). Exported for test/flush/invariants.test.ts. */
export function takeFree(list: FreeList): number {
  const ptr = list.queue[list.head]!;
  // The queue and its members are one list: a buffer popped that is not a member was handed out
  // already (or never posted), and ALLOCATE would give it a second owner (DESIGN §2.4).
  invariant(list.members.has(ptr), () => `free-list pop: buffer ${ptr} is queued but not on the list`);
  list.head++;
  list.members.delete(ptr);
  if (list.head >= 1024 && list.head * 2 >= list.queue.length) {
    list.queue = list.queue.slice(list.head);
    list.head = 0;
  }
  return ptr;
}

export class Rnic {
  readonly region: PmemRegion;
  readonly options: Readonly<RnicOptions>;
  #mrs: MrTable;
  #qps = new Map<number, QpEngine>();
  /** #qps' engines in QP number order (its insertion order), walked per work request without an iterator. */
  #qpList: QpEngine[] = [];
  #nextQpn = 1;
  #cache = new NicCache<CacheEntry>();
  #seq = 0;
  /** The NIC cache's copies of written bytes (see ByteSlab). */
  #bytes = new ByteSlab();
  #hostWriteListeners: Array<(e: HostWriteEvent) => void> = [];
  #freeLists = new Map<string, FreeList>();
  #allocRefused = false;
  #closed = false;
  /** Group commit (NicDriver, strict): responses of the running pass, held until its msync. */
  #held: Array<{ e: QpEngine; item: Inbound }> | undefined;
  /** Group commit: a FLUSH inside a chain syncs at once (false only under the fault switch skipChainSync). */
  #chainSync = true;
  #removeContributor: () => void;
  #stats: RnicStats = { wrs: 0, errors: 0, messages: 0, cacheEntriesDrained: 0, bytesDrained: 0, flushes: 0, recvCompletions: 0 };

  constructor(region: PmemRegion, options: Partial<RnicOptions> = {}) {
    if (!(region instanceof PmemRegion)) throw new TypeError('region must be a PmemRegion');
    this.region = region;
    this.options = resolveOptions(RNIC_DEFAULTS, options, RNIC_CHECKS);
    this.#mrs = new MrTable(this.options.entropy, region.sizeBytes);
    this.#removeContributor = region.addCrashContributor(() => this.#crashComponents());
  }

  get stats(): Readonly<RnicStats> {
    return { ...this.#stats };
  }

  /** Undrained NIC cache entries. */
  get cacheEntries(): number {
    return this.#cache.size;
  }

  allocPd(): ProtectionDomain {
    return this.#mrs.allocPd();
  }

  /** Registers [offset, offset+len) of the region with `access` (Access bits); the rkey is random. */
  registerMr(pd: ProtectionDomain, offset: number, len: number, access: number): MemoryRegion {
    return this.#mrs.register(pd, offset, len, access);
  }

  deregisterMr(mr: MemoryRegion): void {
    this.#mrs.deregister(mr);
    for (const k of [...this.#freeLists.keys()]) if (k.startsWith(`${mr.rkey}/`)) this.#freeLists.delete(k);
  }

  createQp(pd: ProtectionDomain): ServerQp {
    const qpn = this.#nextQpn++;
    const e = new QpEngine(qpn, pd, new Uint8Array(this.options.scratchBytes));
    this.#qps.set(qpn, e);
    this.#qpList.push(e);
    return new ServerQp(this, e);
  }

  destroyQp(qpn: number): void {
    this.#drainWhere((x) => x.qpn === qpn);
    const e = this.#qps.get(qpn);
    if (e !== undefined) e.live = false;
    if (this.#qps.delete(qpn)) this.#qpList = this.#qpList.filter((x) => x.qpn !== qpn);
  }

  /** Where the responses and notifications of QP `qpn` go (the transport's server end). */
  attach(qpn: number, sink: (msg: ServerMessage, lazy?: boolean) => void): void {
    const e = this.#qps.get(qpn);
    if (e === undefined) throw new RangeError(`no QP ${qpn}`);
    e.sink = sink;
  }

  /** Host memory writes drained from the NIC cache are reported here (synchronously): the server CPU's doorbell. */
  onHostWrite(fn: (e: HostWriteEvent) => void): () => void {
    this.#hostWriteListeners.push(fn);
    return () => {
      const i = this.#hostWriteListeners.indexOf(fn);
      if (i >= 0) this.#hostWriteListeners.splice(i, 1);
    };
  }

  // ---------------------------------------------------------------- free lists (PRISM ALLOCATE)

  /** The server CPU posts buffers of `sizeBytes` (a power of two) inside `mr` to its free list. */
  postFreeBuffers(mr: MemoryRegion, sizeBytes: number, offsets: readonly number[]): void {
    if (!Number.isInteger(sizeBytes) || sizeBytes < 8 || sizeBytes > 1 << 30 || (sizeBytes & (sizeBytes - 1)) !== 0) {
      throw new RangeError(`sizeBytes must be a power of two in [8, 2^30], got ${String(sizeBytes)}`);
    }
    for (const o of offsets) {
      if (!Number.isSafeInteger(o) || o < mr.offset || o + sizeBytes > mr.offset + mr.len) {
        throw new RangeError(`free buffer [${o}, ${o + sizeBytes}) is outside MR [${mr.offset}, ${mr.offset + mr.len})`);
      }
    }
    const key = `${mr.rkey}/${sizeBytes}`;
    const list = this.#freeLists.get(key) ?? { queue: [], head: 0, members: new Set<number>() };
    if (list.members.size + offsets.length > 1 << 22) throw new RangeError('a free list holds at most 2^22 buffers');
    for (const o of offsets) {
      // A buffer on the list twice would be handed to two ALLOCATEs: two owners of one item (DESIGN §2.4).
      invariant(!list.members.has(o), () => `free buffer ${o} (${sizeBytes} B, rkey ${mr.rkey}) is posted while it is already on the free list`);
      list.members.add(o);
      list.queue.push(o);
    }
    this.#freeLists.set(key, list);
  }

  freeBufferCount(mr: MemoryRegion, sizeBytes: number): number {
    return this.#freeLists.get(this.#listKey(mr.rkey, sizeBytes))?.members.size ?? 0;
  }

  /** Whether the buffer at `offset` is on the free list of `sizeBytes` buffers of `mr` now (O(1)). */
  isFreeBuffer(mr: MemoryRegion, sizeBytes: number, offset: number): boolean {
    return this.#freeLists.get(this.#listKey(mr.rkey, sizeBytes))?.members.has(offset) === true;
  }

  /** The free lists' key of (rkey, size), the last one remembered (a server CPU asks per item: no string built each time). */
  #listKey(rkey: number, sizeBytes: number): string {
    if (rkey !== this.#keyRkey || sizeBytes !== this.#keySize) {
      this.#keyRkey = rkey;
      this.#keySize = sizeBytes;
      this.#key = `${rkey}/${sizeBytes}`;
    }
    return this.#key;
  }

  #keyRkey = -1;
  #keySize = -1;
  #key = '';

  /** The free list of `sizeBytes` buffers of `mr`, in the order ALLOCATE takes them (a copy). */
  freeBuffers(mr: MemoryRegion, sizeBytes: number): number[] {
    const list = this.#freeLists.get(`${mr.rkey}/${sizeBytes}`);
    return list === undefined ? [] : list.queue.slice(list.head);
  }

  /** Empties every free list (they are NIC-volatile: a crash loses them). */
  clearFreeLists(): void {
    this.#freeLists.clear();
  }

  /** ALLOCATE fails with PMRPC_ERR_ALLOC_REFUSED until acceptAllocate() (after a crash, until recovery rebuilds the lists). */
  refuseAllocate(): void {
    this.#allocRefused = true;
  }

  acceptAllocate(): void {
    this.#allocRefused = false;
  }

  // ---------------------------------------------------------------- execution

  /**
   * A request message arrived from a link. It queues; step() / runQp() / runAll() execute it (a
   * transport's server end: attach(), then submit() + runQp(), and drainAll() when idle).
   * No such QP (never created, or destroyed): nothing here could answer, so it throws a
   * PmrpcError PMRPC_ERR_NO_SUCH_QP for the transport to answer with (a real NIC would drop the
   * packets and the requester would time out; an emulator can say so at once).
   */
  submit(msg: RequestMessage): true {
    if (this.#closed) throw new PmrpcError(NicErrorCodes.NO_SUCH_QP, `the NIC is closed: QP ${String(msg?.qpn)} no longer exists`);
    const e = this.#qps.get(msg?.qpn);
    if (e === undefined) throw new PmrpcError(NicErrorCodes.NO_SUCH_QP, `no QP ${String(msg?.qpn)} on this NIC (never created, or destroyed)`);
    this.#stats.messages++;
    const wrs = Array.isArray(msg.wrs) ? msg.wrs : [];
    // (The message is kept as is when its wrs is an array: no copy of it per message.)
    const item: Inbound = { msg: wrs === msg.wrs ? msg : { ...msg, wrs }, completions: [], next: 0, badAt: -1, badWhy: '' };
    if (!Array.isArray(msg.wrs) || wrs.length > MAX_WRS_PER_MESSAGE) {
      e.state = 'error';
      this.#respond(e, { ...item, completions: wrs.slice(0, MAX_WRS_PER_MESSAGE).map((w, i) => errorCompletion(w, i, NicErrorCodes.BAD_WR, `a message carries 1..${MAX_WRS_PER_MESSAGE} work requests`)) });
      return true;
    }
    if (e.inbound.length >= this.options.inboundMessagesMax) {
      this.#respond(e, { ...item, completions: wrs.map((w, i) => errorCompletion(w, i, NicErrorCodes.QUEUE_FULL, `QP ${e.qpn} has ${e.inbound.length} messages queued (inboundMessagesMax)`)) });
      return true;
    }
    // Decoded and checked once per message, here (not per step); a chain the verbs layer of this
    // process already checked is not checked again (validate.ts, markChecked).
    const bad = chainError(wrs);
    if (bad !== undefined) {
      item.badAt = bad.index;
      item.badWhy = bad.why;
    }
    e.inbound.push(item);
    return true;
  }

  /** Whether no QP has queued work (busyQps() is empty), without building the list. */
  get idle(): boolean {
    const list = this.#qpList;
    for (let i = 0; i < list.length; i++) if (list[i]!.inbound.length > 0) return false;
    return true;
  }

  /** QPs with queued work, in QP number order. */
  busyQps(): number[] {
    const out: number[] = [];
    this.busyQpsInto(out);
    return out;
  }

  /**
   * busyQps() into `out` (overwritten from index 0; entries past the count are stale), leaving out
   * the QPs in `except`: the count. For a per-work-request scheduler that reuses one array.
   */
  busyQpsInto(out: number[], except?: ReadonlySet<number>): number {
    let n = 0;
    const list = this.#qpList;
    for (let i = 0; i < list.length; i++) {
      const e = list[i]!;
      if (e.inbound.length > 0 && (except === undefined || !except.has(e.qpn))) out[n++] = e.qpn;
    }
    return n;
  }

  /**
   * The work request QP `qpn` runs at its next step(), and whether it is the last of its message
   * (that step then delivers the message's completions); undefined when the QP has no work.
   * Read-only: for schedulers that reason about which steps commute (the crash explorer's POR).
   */
  peekWr(qpn: number): { wr: WorkRequest; last: boolean } | undefined {
    const item = this.#qps.get(qpn)?.inbound[0];
    if (item === undefined) return undefined;
    const wr = item.msg.wrs[item.next];
    return wr === undefined ? undefined : { wr, last: item.next >= item.msg.wrs.length - 1 };
  }

  /** Executes one work request of QP `qpn` (the head of its oldest message). false if it had none. */
  step(qpn: number): boolean {
    const e = this.#qps.get(qpn);
    if (e === undefined || e.inbound.length === 0) return false;
    this.#advance(e, e.inbound[0]!);
    return true;
  }

  /**
   * Executes everything queued on `qpn`: each message (chain) in one pass — its work requests one
   * after the other, in the same order and with the same effects and crash points as step() by
   * step(), without going back to the QP table between them.
   */
  runQp(qpn: number): void {
    const e = this.#qps.get(qpn);
    if (e === undefined) return;
    for (;;) {
      const item = e.inbound[0];
      // A callback of a work request may have destroyed the QP: nothing more runs on it.
      if (item === undefined || !e.live) return;
      while (!this.#advance(e, item) && e.live && e.inbound[0] === item);
    }
  }

  /**
   * The next work request of `item` (the head message of `e`), and its response once it was the
   * last: true when the message is done (answered). One mechanism for step() and runQp().
   */
  #advance(e: QpEngine, item: Inbound): boolean {
    const wrs = item.msg.wrs;
    if (item.next < wrs.length) {
      const i = item.next++;
      if (i === 0) e.chain++;
      const wr = wrs[i]!;
      const c = this.#execute(e, item, wr, i);
      // An unsignaled work request that succeeded gives no completion (one that did not, does).
      if (wr.unsignaled !== true || c.status !== 'ok') item.completions.push(c);
      if (buggify('nic.drain-early')) this.drainAll();
      // Group commit: a FLUSH inside a chain is an ordering point — what the chain does next may
      // depend on its bytes being durable (PRISM), so they are synced now, not at the pass's end.
      if (this.#held !== undefined && this.#chainSync && wr.op === 'flush' && item.next < wrs.length) this.region.sync();
    }
    if (item.next < wrs.length) return false;
    e.inbound.shift();
    this.#respond(e, item);
    return true;
  }

  /** Executes everything queued, QP by QP. */
  runAll(): void {
    // The list is reused unless a step's callback (a sink, a listener) calls runAll again.
    const busy = this.#busyScratch ?? [];
    this.#busyScratch = undefined;
    try {
      for (;;) {
        const n = this.busyQpsInto(busy);
        if (n === 0) return;
        for (let i = 0; i < n; i++) this.runQp(busy[i]!);
      }
    } finally {
      this.#busyScratch = busy;
    }
  }

  /** runAll's list of busy QPs, reused (taken while a runAll runs). */
  #busyScratch: number[] | undefined = [];

  /** The DMA engine catches up: every NIC cache entry drains, oldest first. */
  drainAll(): void {
    if (this.#cache.size === 0) return; // the common idle drain: nothing to copy or walk
    this.#drainWhere(() => true);
  }

  /**
   * The end of a NIC run: whoever drives this NIC ran every queued request and drained its cache
   * (the idle drain) — on a transport's server end, before the run's responses leave (NicDriver;
   * the crash explorer's idle drains). The onRunEnd listeners run now, synchronously: the server
   * CPU may take in what arrived, so that what it sends leaves with those responses (src/rpc's
   * receiver-persist ACKs, issue 29).
   */
  runEnded(): void {
    const ls = this.#runEndListeners;
    for (let i = 0; i < ls.length; i++) ls[i]!();
  }

  /** fn runs at every runEnded(). Returns the unsubscribe. */
  onRunEnd(fn: () => void): () => void {
    this.#runEndListeners.push(fn);
    return () => {
      const i = this.#runEndListeners.indexOf(fn);
      if (i >= 0) this.#runEndListeners.splice(i, 1);
    };
  }

  #runEndListeners: Array<() => void> = [];

  /** Orderly shutdown: the NIC cache drains into host memory, then the NIC leaves the region's crash states. */
  close(): void {
    this.#closed = true;
    this.drainAll();
    this.#removeContributor();
    for (const e of this.#qps.values()) e.sink = undefined;
  }

  /** Drops the NIC's volatile state without draining it, as a crash does (the region's media is untouched). */
  detach(): void {
    this.#cache.clear();
    for (const e of this.#qps.values()) e.entries.length = 0;
    this.#removeContributor();
  }

  // ---------------------------------------------------------------- group commit (NicDriver)

  /**
   * Group commit for `strict` (docs/recovery.md, "Group commit"; NicDriver runs it): from now until
   * releaseResponses(), the responses of the messages executed wait here, so that one msync at the
   * end of the pass covers all of their FLUSHes before any of them leaves. `chainSync` false is the
   * test-only fault switch skipChainSync (a FLUSH inside a chain waits for the pass's msync too).
   */
  holdResponses(chainSync = true): void {
    this.#held ??= [];
    this.#chainSync = chainSync;
  }

  /** Whether responses are being held (a group-commit pass is running). */
  get holdingResponses(): boolean {
    return this.#held !== undefined;
  }

  /**
   * Sends the held responses, in the order they completed. Each leaves through the region's ack
   * gate (its 'completion' crash point syncs whatever still waits); if that sync fails, this and
   * every later held response is answered with error completions of the failure's code
   * (PMRPC_ERR_SYNC_FAILED): nothing is acknowledged whose bytes are not synced.
   * `sinkFirst` is the test-only fault switch `respondBeforeSync`: the sink sees the response
   * before the crash point (and its gate) — a response that leaves before the sync.
   */
  releaseResponses(sinkFirst = false): void {
    this.releaseTaken(this.takeResponses(), sinkFirst);
  }

  /**
   * Ends holding and hands over the responses held so far (the pass's), to be sent later with
   * releaseTaken() — an overlapped group commit (NicDriver) sends a pass's responses when its msync
   * calls back, while later passes hold their own. undefined when nothing was being held.
   */
  takeResponses(): HeldResponses | undefined {
    const held = this.#held;
    this.#held = undefined;
    return held as unknown as HeldResponses | undefined;
  }

  /**
   * Sends responses taken by takeResponses(), as releaseResponses() does (each through the ack
   * gate; error completions from the first failure on). `failure` set: none is acknowledged, each
   * is answered with error completions of its code (a failed msync).
   */
  releaseTaken(taken: HeldResponses | undefined, sinkFirst = false, failure?: unknown): void {
    const held = taken as unknown as Array<{ e: QpEngine; item: Inbound }> | undefined;
    if (held === undefined) return;
    for (const { e, item } of held) {
      if (failure === undefined) {
        if (sinkFirst) {
          e.sink?.({ type: 'response', qpn: e.qpn, seq: item.msg.seq, completions: item.completions });
          this.#completionPoint(e, item);
          continue;
        }
        try {
          this.#completionPoint(e, item);
        } catch (err) {
          failure = err;
        }
        if (failure === undefined) {
          e.sink?.({ type: 'response', qpn: e.qpn, seq: item.msg.seq, completions: item.completions });
          continue;
        }
      }
      this.#respondFailed(e, item, failure);
    }
  }

  /**
   * A pass failed (a failed msync, sticky: PMRPC_ERR_SYNC_FAILED): every message still queued —
   * the one that was executing included — is answered with error completions of the failure's
   * code, without executing further (no acknowledgement can follow a failed sync).
   */
  failQueued(failure: unknown): void {
    for (const e of this.#qps.values()) {
      for (const item of e.inbound.splice(0)) this.#respondFailed(e, item, failure);
    }
  }

  /** Error completions for every work request of `item` (not an acknowledgement: no crash point, no ack gate). */
  #respondFailed(e: QpEngine, item: Inbound, failure: unknown): void {
    const code = typeof (failure as { code?: unknown })?.code === 'string' ? (failure as { code: string }).code : NicErrorCodes.WR_FAILED;
    const message = failure instanceof Error ? failure.message : String(failure);
    this.#stats.errors += item.msg.wrs.length;
    const completions = item.msg.wrs.map((w, i) => errorCompletion(w, i, code, message));
    e.sink?.({ type: 'response', qpn: e.qpn, seq: item.msg.seq, completions });
  }

  // ---------------------------------------------------------------- engine

  #respond(e: QpEngine, item: Inbound): void {
    if (this.#held !== undefined) {
      this.#held.push({ e, item });
      return;
    }
    this.#completionPoint(e, item);
    e.sink?.({ type: 'response', qpn: e.qpn, seq: item.msg.seq, completions: item.completions });
  }

  #completionPoint(e: QpEngine, item: Inbound): void {
    // The detail is built only for a hook that reads it (one per message otherwise).
    const region = this.region;
    region.crashPoint('completion', region.crashPointHooked ? { qpn: e.qpn, seq: item.msg.seq, completions: item.completions.map((c) => ({ id: c.id, op: c.op, status: c.status })) } : undefined);
  }

  #execute(e: QpEngine, item: Inbound, wr: WorkRequest, index: number): Completion {
    this.#stats.wrs++;
    if (e.state === 'error') return errorCompletion(wr, index, NicErrorCodes.WR_FLUSHED, `QP ${e.qpn} is in the error state`);
    if (index === item.badAt) return this.#fail(e, wr, index, new WrError(NicErrorCodes.BAD_WR, item.badWhy));
    const id = wr.id ?? index;
    if (wr.conditional === true && !e.lastOk) {
      e.lastOk = false;
      this.#unproduce(e, wr);
      return { id, op: wr.op, status: 'skipped' };
    }
    let c: Completion;
    try {
      c = this.#run(e, wr, id);
    } catch (err) {
      if (!(err instanceof WrError)) throw err;
      return this.#fail(e, wr, index, err);
    }
    e.lastOk = c.status === 'ok' && c.swapped !== false;
    if (c.status !== 'ok') this.#unproduce(e, wr);
    this.#afterRequest(e);
    return c;
  }

  /** An op that did not run or did not succeed produced nothing: its redirect target holds no output of this chain. */
  #unproduce(e: QpEngine, wr: WorkRequest): void {
    const r = wr.redirect;
    if (r === undefined || !Number.isSafeInteger(r) || r < 0) return;
    const n = wr.op === 'read' || wr.op === 'prismCas' ? wr.len : wr.op === 'allocate' || wr.op === 'cas' || wr.op === 'faa' ? 8 : 0;
    const end = Math.min(e.produced.length, r + (Number.isSafeInteger(n) ? n : 0));
    if (r < end) e.produced.fill(0, r, end);
  }

  #fail(e: QpEngine, wr: WorkRequest, index: number, err: WrError): Completion {
    this.#stats.errors++;
    e.state = 'error';
    e.lastOk = false;
    return errorCompletion(wr, index, err.code, err.message);
  }

  #afterRequest(e: QpEngine): void {
    const o = this.options;
    if (o.drain === 'eager') this.#drainQp(e);
    const bound = o.drain === 'lazy' ? Math.min(o.lazyBound, o.cacheEntriesMax) : o.cacheEntriesMax;
    while (this.#cache.size > bound) this.#drainEntry(this.#cache.first());
  }

  #run(e: QpEngine, wr: WorkRequest, id: number): Completion {
    switch (wr.op) {
      case 'write':
      case 'writeImm':
        return this.#write(e, wr, id);
      case 'read':
        return this.#read(e, wr, id);
      case 'send':
        return this.#send(e, wr.data, wr.imm, id);
      case 'cas': {
        // An 8-byte CAS installs 8 bytes: a longer swap would land over the next word (a chain the
        // verbs layer checked is not checked again here, validate.ts markChecked).
        invariant(wr.swap.length === 8 && wr.compare.length === 8, () => `CAS with a ${wr.compare.length}-byte compare and a ${wr.swap.length}-byte swap (8 each)`);
        const t = this.#atomicTarget(e, wr.at, Access.REMOTE_ATOMIC);
        const out = this.#redirectCheck(e, wr.redirect, 8);
        this.#drainQp(e);
        const old = this.#atomicLoad(e, t, 8);
        const swapped = leToBigint(old) === leToBigint(wr.compare);
        if (swapped) this.#put(e, t, wr.swap);
        return this.#output(e, { id, op: 'cas', status: 'ok', swapped }, old, out);
      }
      case 'faa': {
        const t = this.#atomicTarget(e, wr.at, Access.REMOTE_ATOMIC);
        const out = this.#redirectCheck(e, wr.redirect, 8);
        this.#drainQp(e);
        const old = this.#atomicLoad(e, t, 8);
        this.#put(e, t, bigintToLe(leToBigint(old) + leToBigint(wr.add), 8));
        return this.#output(e, { id, op: 'faa', status: 'ok' }, old, out);
      }
      case 'atomicWrite': {
        // As in Linux rxe: ATOMIC WRITE needs remote-write access; it is ordered after every earlier request of the QP.
        const t = this.#atomicTarget(e, wr.at, Access.REMOTE_WRITE);
        invariant(wr.value.length === 8, () => `ATOMIC WRITE of ${wr.value.length} bytes (8)`);
        this.#drainQp(e);
        this.#put(e, t, wr.value);
        return { id, op: 'atomicWrite', status: 'ok' };
      }
      case 'flush':
        return this.#flush(e, wr, id);
      case 'prismCas':
        return this.#prismCas(e, wr, id);
      case 'allocate':
        return this.#allocate(e, wr, id);
    }
  }

  #write(e: QpEngine, wr: WriteWr, id: number): Completion {
    const indirect = wr.indirect === true || wr.bounded === true;
    if (indirect || wr.from !== undefined) this.#drainQp(e); // a dereference is a NIC read (rule i)
    const data = wr.from !== undefined ? this.#load(e, wr.from, wr.len!) : wr.data!;
    const t = this.#target(e, wr.to, indirect, wr.bounded === true, wr.targetRkey, data.length, Access.REMOTE_WRITE, 'write');
    let recv: PostedRecv | undefined;
    if (wr.op === 'writeImm') recv = this.#takeRecvCheck(e, 0);
    this.#put(e, t.target, data);
    if (wr.op === 'writeImm') this.#deliverRecv(e, recv!, { op: 'writeImm', addr: 0, byteLen: 0, imm: wr.imm ?? 0 });
    return { id, op: wr.op, status: 'ok' };
  }

  #read(e: QpEngine, wr: ReadWr, id: number): Completion {
    this.#drainQp(e); // rule (i): a read does not pass the QP's earlier writes
    const indirect = wr.indirect === true || wr.bounded === true;
    const t = this.#target(e, wr.from, indirect, wr.bounded === true, wr.targetRkey, wr.len, Access.REMOTE_READ, 'read');
    const out = this.#redirectCheck(e, wr.redirect, t.len);
    const data = t.target.kind === 'pm' ? this.region.load(t.target.addr, t.len) : e.scratch.slice(t.target.off, t.target.off + t.len);
    return this.#output(e, { id, op: 'read', status: 'ok' }, data, out);
  }

  #send(e: QpEngine, data: Uint8Array, imm: number | undefined, id: number): Completion {
    const recv = this.#takeRecvCheck(e, data.length);
    if (data.length > 0) this.#put(e, { kind: 'pm', addr: recv.addr }, data);
    this.#deliverRecv(e, recv, { op: 'send', addr: recv.addr, byteLen: data.length, ...(imm === undefined ? {} : { imm }) });
    return { id, op: 'send', status: 'ok' };
  }

  #flush(e: QpEngine, wr: FlushWr, id: number): Completion {
    const need = wr.placement === 'persistent' ? Access.FLUSH_PERSISTENT : Access.FLUSH_GLOBAL;
    // The ranges to flush: one, or (a redirected FLUSH with `count`) one per pointer read.
    const ranges: Array<{ offset: number; len: number }> = [];
    if (wr.selectivity === 'mr') {
      const mr = this.#mrs.lookup(e.pd, wr.rkey);
      this.#mrs.check(e.pd, wr.rkey, mr.offset, 0, need);
      ranges.push({ offset: mr.offset, len: mr.len });
    } else if (wr.addrScratch !== undefined) {
      // Redirected FLUSH (pmrpc's extension): each range start is a pointer an earlier op of this
      // chain left in scratch — `count` of them, `stride` (8) bytes apart. Every pointer is checked (produced
      // by this chain, range inside the MR) before any line is flushed: all or nothing.
      const s = wr.addrScratch;
      const n = wr.count ?? 1;
      const stride = wr.stride ?? 8;
      const end = s + stride * (n - 1) + 8;
      if (end > e.scratch.length) throw new WrError(NicErrorCodes.OUT_OF_BOUNDS, `scratch access [${s}, ${end}) is outside the ${e.scratch.length}-byte scratch buffer`);
      for (let j = 0; j < n; j++) {
        const w = s + stride * j;
        for (let k = w; k < w + 8; k++) {
          if (e.produced[k] !== e.chain) {
            return { id, op: 'flush', status: 'failed', code: NicErrorCodes.REDIRECT_MISSING, message: `scratch [${w}, ${w + 8}) holds no pointer produced by an earlier op of this chain: nothing flushed` };
          }
        }
      }
      for (let j = 0; j < n; j++) {
        const ptr = readPtr(e.scratch, s + stride * j);
        if (!Number.isFinite(ptr)) throw new WrError(NicErrorCodes.OUT_OF_BOUNDS, `redirected flush pointer ${ptr} is outside every MR`);
        this.#mrs.check(e.pd, wr.rkey, ptr, wr.len!, need);
        ranges.push({ offset: ptr, len: wr.len! });
      }
    } else {
      this.#mrs.check(e.pd, wr.rkey, wr.addr!, wr.len!, need);
      ranges.push({ offset: wr.addr!, len: wr.len! });
    }
    this.#stats.flushes++;
    // Global: the QP's earlier updates reach host memory (visible). Persistent: the covered lines also reach media.
    this.#drainQp(e);
    if (wr.placement === 'persistent') for (const r of ranges) if (r.len > 0) this.region.persist(r.offset, r.len);
    return { id, op: 'flush', status: 'ok' };
  }

  #prismCas(e: QpEngine, wr: PrismCasWr, id: number): Completion {
    this.#drainQp(e);
    const data = wr.from !== undefined ? this.#load(e, wr.from, wr.len) : wr.data!;
    const t = this.#target(e, wr.at, wr.indirect === true, false, wr.targetRkey, wr.len, Access.REMOTE_ATOMIC, 'prismCas').target;
    const out = this.#redirectCheck(e, wr.redirect, wr.len);
    const old = this.#atomicLoad(e, t, wr.len);
    const swapped = casSucceeds(wr.mode, old, data, wr.compareMask);
    if (swapped) this.#put(e, t, casResult(old, data, wr.swapMask));
    return this.#output(e, { id, op: 'prismCas', status: 'ok', swapped }, old, out);
  }

  #allocate(e: QpEngine, wr: AllocateWr, id: number): Completion {
    this.#drainQp(e);
    const mr = this.#mrs.lookup(e.pd, wr.rkey);
    this.#mrs.check(e.pd, wr.rkey, mr.offset, 0, Access.REMOTE_WRITE);
    const data = wr.from !== undefined ? this.#load(e, wr.from, wr.len!) : wr.data!;
    const out = this.#redirectCheck(e, wr.redirect, 8);
    if (this.#allocRefused) return { id, op: 'allocate', status: 'failed', code: NicErrorCodes.ALLOC_REFUSED, message: 'ALLOCATE is refused until the server rebuilds its free lists' };
    const list = this.#freeLists.get(`${wr.rkey}/${wr.sizeBytes}`);
    if (list === undefined || list.head === list.queue.length) {
      return { id, op: 'allocate', status: 'failed', code: NicErrorCodes.ALLOC_EMPTY, message: `the free list of ${wr.sizeBytes}-byte buffers is empty` };
    }
    // What ALLOCATE writes stays in the buffer it pops: more would spill into the next buffer, another owner's item.
    invariant(data.length <= wr.sizeBytes, () => `ALLOCATE writes ${data.length} bytes into a ${wr.sizeBytes}-byte buffer`);
    const ptr = takeFree(list);
    if (data.length > 0) this.#put(e, { kind: 'pm', addr: ptr }, data);
    return this.#output(e, { id, op: 'allocate', status: 'ok' }, u64le(ptr), out);
  }

  // ---------------------------------------------------------------- addressing and checks

  /**
   * Resolves the target of an access of `len` bytes with `need` access: `loc` itself, or the
   * pointer (⟨ptr, bound⟩ when bounded) stored at `loc`. Every dereferenced word is checked too.
   */
  #target(e: QpEngine, loc: Loc, indirect: boolean, bounded: boolean, targetRkey: number | undefined, len: number, need: number, op: string): { target: Target; len: number } {
    if (!indirect) return { target: this.#checkLoc(e, loc, len, need), len };
    const word = this.#load(e, loc, bounded ? 16 : 8);
    const ptr = readPtr(word, 0);
    let n = len;
    if (bounded) {
      const bound = readPtr(word, 8);
      if (op === 'read') n = Math.min(len, bound);
      else if (len > bound) throw new WrError(NicErrorCodes.BOUND_EXCEEDED, `${op} of ${len} bytes exceeds the bound ${bound} stored at its target`);
    }
    const rkey = targetRkey ?? (isScratch(loc) ? undefined : loc.rkey);
    if (rkey === undefined) throw new WrError(NicErrorCodes.BAD_WR, 'a pointer read from scratch needs targetRkey');
    if (!Number.isFinite(ptr)) throw new WrError(NicErrorCodes.OUT_OF_BOUNDS, `dereferenced pointer ${ptr} is outside every MR`);
    return { target: this.#checkLoc(e, { rkey, addr: ptr }, n, need), len: n };
  }

  #checkLoc(e: QpEngine, loc: Loc, len: number, need: number): Target {
    if (isScratch(loc)) {
      if (loc.scratch + len > e.scratch.length) throw new WrError(NicErrorCodes.OUT_OF_BOUNDS, `scratch access [${loc.scratch}, ${loc.scratch + len}) is outside the ${e.scratch.length}-byte scratch buffer`);
      return { kind: 'scratch', off: loc.scratch };
    }
    this.#mrs.check(e.pd, loc.rkey, loc.addr, len, need);
    return { kind: 'pm', addr: loc.addr };
  }

  #atomicTarget(e: QpEngine, loc: Loc, need: number): Target {
    const t = this.#checkLoc(e, loc, 8, need);
    const a = t.kind === 'pm' ? t.addr : t.off;
    if (a % 8 !== 0) throw new WrError(NicErrorCodes.MISALIGNED, `8-byte atomic at ${a} is not 8-byte aligned`);
    return t;
  }

  /** A NIC read of `loc` (checked, REMOTE_READ): host visible memory, or scratch. */
  #load(e: QpEngine, loc: Loc, len: number): Uint8Array {
    const t = this.#checkLoc(e, loc, len, Access.REMOTE_READ);
    return t.kind === 'pm' ? this.region.load(t.addr, len) : e.scratch.slice(t.off, t.off + len);
  }

  /**
   * What the NIC's atomic unit reads: host memory overlaid with every undrained NIC write (of any
   * QP), so NIC atomics are atomic with respect to each other — and not to CPU stores, which the
   * undrained results will overwrite.
   */
  #atomicLoad(e: QpEngine, t: Target, len: number): Uint8Array {
    if (t.kind === 'scratch') return e.scratch.slice(t.off, t.off + len);
    const out = this.region.load(t.addr, len);
    const end = t.addr + len;
    const list = this.#cache.list;
    for (let i = this.#cache.head; i < list.length; i++) {
      const c = list[i]!;
      if (!c.live) continue;
      const cEnd = c.offset + c.bytes.length;
      if (c.offset >= end || cEnd <= t.addr) continue;
      const lo = Math.max(c.offset, t.addr);
      const hi = Math.min(cEnd, end);
      out.set(c.bytes.subarray(lo - c.offset, hi - c.offset), lo - t.addr);
    }
    return out;
  }

  #redirectCheck(e: QpEngine, redirect: number | undefined, len: number): number | undefined {
    if (redirect === undefined) return undefined;
    if (redirect + len > e.scratch.length) throw new WrError(NicErrorCodes.OUT_OF_BOUNDS, `redirect [${redirect}, ${redirect + len}) is outside the ${e.scratch.length}-byte scratch buffer`);
    return redirect;
  }

  #output(e: QpEngine, c: Completion, data: Uint8Array, redirect: number | undefined): Completion {
    if (redirect === undefined) {
      c.data = data; // c is this request's own, fresh object
      return c;
    }
    e.scratch.set(data, redirect);
    e.produced.fill(e.chain, redirect, redirect + data.length);
    return c;
  }

  #takeRecvCheck(e: QpEngine, len: number): PostedRecv {
    const r = e.recvQueue[0];
    if (r === undefined) throw new WrError(NicErrorCodes.NO_RECV, `QP ${e.qpn} has no posted receive buffer`);
    if (len > r.len) throw new WrError(NicErrorCodes.RECV_TOO_SMALL, `a ${len}-byte SEND does not fit the ${r.len}-byte receive buffer ${r.id}`);
    if (e.recvCq.length >= this.options.recvQueueMax) throw new WrError(NicErrorCodes.QUEUE_FULL, `QP ${e.qpn} receive completion queue is full`);
    return r;
  }

  /** Rule (ii): a receive completion only after the QP's earlier writes and the message itself are in host memory. */
  #deliverRecv(e: QpEngine, r: PostedRecv, c: Omit<RecvCompletion, 'qpn' | 'recvId'>): void {
    invariant(e.recvQueue[0] === r, () => 'the RECV completed is not the head of its queue');
    e.recvQueue.shift();
    this.#drainQp(e);
    e.recvCq.push({ qpn: e.qpn, recvId: r.id, ...c });
    this.#stats.recvCompletions++;
    e.recvNotify?.();
  }

  // ---------------------------------------------------------------- NIC cache and DMA

  #put(e: QpEngine, t: Target, bytes: Uint8Array): void {
    if (t.kind === 'scratch') {
      e.scratch.set(bytes, t.off);
      e.produced.fill(e.chain, t.off, t.off + bytes.length);
      return;
    }
    if (bytes.length === 0) return;
    const entry: CacheEntry = { seq: this.#seq++, qpn: e.qpn, offset: t.addr, bytes: this.#bytes.copy(bytes), qp: e, live: true };
    this.#cache.add(entry);
    e.entries.push(entry);
  }

  #drainQp(e: QpEngine): void {
    while (e.entries.length > 0) this.#drainEntry(e.entries[0]!);
  }

  #drainWhere(pred: (c: CacheEntry) => boolean): void {
    for (const c of this.#cache.values()) if (pred(c) && c.live) this.#drainEntry(c);
  }

  /** One entry to host memory. It stays in the cache until stored, so a crash point during the store still sees it undrained. */
  #drainEntry(c: CacheEntry): void {
    // (A QP destroyed is no longer live: as one no longer in the QP table.)
    const e = c.qp.live ? c.qp : undefined;
    // Per-QP order: an entry never drains before its QP's earlier entries.
    if (e !== undefined) while (e.entries[0] !== c && e.entries.length > 0) this.#drainEntry(e.entries[0]!);
    // Coherence across QPs: an older entry of another QP on overlapping bytes lands first, or it
    // would land later and revert this newer one (e.g. an atomic that read it through the overlay).
    // (The cache is walked in place, not copied: the drains below only mark entries older than c,
    // which the walk never revisits; see NicCache.)
    const end = c.offset + c.bytes.length;
    const list = this.#cache.list;
    for (let i = this.#cache.head; i < list.length; i++) {
      const o = list[i]!;
      if (o.seq >= c.seq) break; // the cache is in seq order
      if (o.live && o.qpn !== c.qpn && o.offset < end && c.offset < o.offset + o.bytes.length) this.#drainEntry(o);
    }
    // The recursion above may have drained c itself (an older entry it drained first pulled c's
    // QP up to and past c): then c is already in host memory, in order.
    if (!c.live) return;
    if (this.options.ddio) this.region.store(c.offset, c.bytes);
    else this.region.storeNonTemporal(c.offset, c.bytes, 'nic-drain', { qpn: c.qpn, offset: c.offset, len: c.bytes.length });
    this.#cache.remove(c);
    if (e !== undefined && e.entries[0] === c) e.entries.shift();
    this.#stats.cacheEntriesDrained++;
    this.#stats.bytesDrained += c.bytes.length;
    for (const l of this.#hostWriteListeners) l({ qpn: c.qpn, offset: c.offset, len: c.bytes.length });
  }

  /**
   * The undrained NIC cache as crash components: one per entry, over its 8-byte words. A word's
   * bytes are the word as it would be right after the entry drained (earlier entries included),
   * built over visible memory.
   */
  #crashComponents(): CrashComponent[] {
    const out: CrashComponent[] = [];
    const shadow = new Map<number, Uint8Array>();
    const { placement, ddio } = this.options;
    // 'ascending' without DDIO: each QP's DMA stream reaches media in order, so an image holds a
    // prefix of the QP's undrained words. With DDIO, drained words become dirty CPU lines, which
    // persist independently of each other: a prefix per entry and cache line.
    const perQp = new Map<number, CrashComponent>();
    for (const c of this.#cache.values()) {
      const pieces: CrashPiece[] = [];
      const end = c.offset + c.bytes.length;
      for (let w = c.offset & ~7; w < end; w += 8) {
        let word = shadow.get(w);
        if (word === undefined) {
          word = new Uint8Array(8);
          const avail = Math.min(8, this.region.sizeBytes - w);
          word.set(this.region.load(w, avail));
          shadow.set(w, word);
        }
        const lo = Math.max(w, c.offset);
        const hi = Math.min(w + 8, end);
        word.set(c.bytes.subarray(lo - c.offset, hi - c.offset), lo - w);
        pieces.push({ offset: w, bytes: word.slice() });
      }
      const source = `nic qp ${c.qpn} entry ${c.seq} [${c.offset}, ${end})`;
      if (placement === 'any') {
        out.push({ kind: 'subset', source, pieces });
      } else if (!ddio) {
        let q = perQp.get(c.qpn);
        if (q === undefined) {
          q = { kind: 'prefix', source: `nic qp ${c.qpn} DMA stream`, pieces: [] };
          perQp.set(c.qpn, q);
          out.push(q);
        }
        q.pieces.push(...pieces);
      } else {
        for (let i = 0; i < pieces.length; ) {
          const line = Math.floor(pieces[i]!.offset / LINE_BYTES);
          let j = i;
          while (j < pieces.length && Math.floor(pieces[j]!.offset / LINE_BYTES) === line) j++;
          out.push({ kind: 'prefix', source: `${source} line ${line}`, pieces: pieces.slice(i, j) });
          i = j;
        }
      }
    }
    return out;
  }
}

function errorCompletion(wr: unknown, index: number, code: string, message: string): Completion {
  const w = (typeof wr === 'object' && wr !== null ? wr : {}) as Partial<WorkRequest>;
  const id = Number.isInteger(w.id) ? w.id! : index;
  return { id, op: (w.op ?? 'write') as Completion['op'], status: 'error', code, message };
}

const RNIC_CHECKS: OptionChecks<RnicOptions> = {
  ddio: bool,
  drain: oneOf(['eager', 'lazy', 'onFlush']),
  placement: oneOf(['any', 'ascending']),
  lazyBound: intAtLeast(0),
  cacheEntriesMax: intAtLeast(1),
  scratchBytes: intAtLeast(0),
  recvQueueMax: intAtLeast(1),
  inboundMessagesMax: intAtLeast(1),
  entropy: must((v) => typeof (v as Partial<Entropy> | null | undefined)?.bytes === 'function', 'must have a bytes(n) method'),
};
