/**
 * One PRISM-TX shard (its App record, options and format are app.ts). Its CPU
 * recovers the TX area after a crash (the local rows of the decision table in docs/tx.md: repair what a
 * torn install left on a slot a PREPARED record holds, release every lock no PREPARED record
 * backs, rebuild the free list from what slots and PREPARED records reach) and posts the free list
 * to the NIC. Reads, prepares, validations, installs and the resolver's fences are NIC chains
 * (client.ts, resolver.ts): the shard's CPU is never on a transaction's path. Off the path, the
 * CPU sweeps the items clients marked dead (their transaction aborted, decided and durable) back
 * to the free list through the ReturnDesk KV and RS use (docs/tx.md "Reclamation", table A).
 */
import { Access, CpuPoller, type HostWriteEvent, type MemoryRegion, type ProtectionDomain, type Rnic, type ServerQp } from '../../../flush/index.js';
import { PmemRegion, PmrpcError } from '../../../pmem/index.js';
import { type ArenaClass } from '../../../recovery/index.js';
import { jsonBytes, type AcceptedClient, type AppHost, type AppProblem, type AppServer } from '../index.js';
import { ReturnDesk, type ReturnStats } from '../shared/index.js';
import { NO_TX_FAULTS, type TxFaults } from './faults.js';
import { recoverTxShard } from './recovery.js';
import {
  decodeBody,
  decodeItem,
  decodeSlot,
  decodeTxHeader,
  describeH,
  ENTRY_WRITE,
  H_PREPARED,
  hState,
  hTxid,
  ITEM_BYTES,
  ITEM_DEAD,
  ITEM_MARK_WORD,
  RECORD_BODY,
  RECORD_BYTES,
  recordOffset,
  SLOT_BYTES,
  slotOffset,
  TX_HEADER_BYTES,
  TxErrorCodes,
  txName,
  type RecordBody,
  type Slot,
  type TxAppOptions,
  type TxGeometry,
} from './layout.js';

/** No QP busy (the sweep's grace set when the NIC is idle). */
const NO_QPS: number[] = [];

/** Items returned to the free list per return pass at most apart (smaller arenas: items / 16; at once while the free list is short). */
export const RETURN_BATCH = 32;

/**
 * On an arena of at least POLL_BATCH_MIN_ITEMS items, the drained writes the CPU polls (a slot's
 * pointer word moved on, an item's dead mark) wake the CPU once POLL_BATCH of them are waiting (or
 * at once while the NIC's free list is short), not one pass per write: each is logged as it drains
 * with what it wrote (the slot's new pointer), so a second install on a slot before the sweep
 * looked still retires the first install's item (no leak). Smaller arenas wake at every such write.
 */
export const POLL_BATCH = 32;
export const POLL_BATCH_MIN_ITEMS = 64 * POLL_BATCH;

export interface TxRecoveryReport {
  prepared: string[];
  /** PREPARED records whose prepare never completed (body or item addresses not T's: row R2), fenced. */
  recordsFenced: string[];
  slotsRepaired: number;
  locksReleased: number;
  reachable: number;
  reclaimed: number;
  /** How many times each row of TX_RECOVERY_TABLE decided (row id → count). */
  rows: Record<string, number>;
}

/** What recover() returns (the node's start line, `pmrpc inspect`): the shard's TxRecoveryReport with its app and shard. */
export type TxShardRecoveryReport = { app: 'tx'; shard: number } & TxRecoveryReport;

/** The live reclamation of one shard (docs/tx.md "Live reclamation"). */
export interface TxSweepStats {
  /** CPU passes that looked at candidate items, slots or retired items. */
  sweeps: number;
  /** Items found marked dead (an aborted transaction's). */
  dead: number;
  /** Superseded values retired (a slot's pointer moved on, durably). */
  superseded: number;
  /** Dead items and superseded values given back to the free list (after their grace period). */
  returned: number;
  /** Items the ReturnDesk refused (reached by a slot or a PREPARED record, or already free). */
  refused: number;
  /** Items retired and still in their grace period now (a NIC chain in flight at retirement has not finished). */
  inGrace: number;
  /** Drained writes the CPU polls, logged as they drained: a slot's pointer word (an install) or an item's dead mark. */
  logged: number;
  /** Of those, the ones that woke the CPU poller (an event for a pass; the rest waited for a batch). */
  wakes: number;
}

/** Items retired and not yet given back: a flag per item of the arena (no Set of offsets for them). */
class RetiredSet {
  readonly #flags: Uint8Array;
  readonly #base: number;
  /** Anything else the sweep retired (a pointer into the arena that is no item's start: the ReturnDesk refuses it). */
  readonly #other = new Set<number>();
  size = 0;
  constructor(items: number, base = 0) {
    this.#flags = new Uint8Array(items);
    this.#base = base;
  }
  #index(p: number): number {
    const i = (p - this.#base) / ITEM_BYTES;
    return Number.isInteger(i) && i >= 0 && i < this.#flags.length ? i : -1;
  }
  has(p: number): boolean {
    const i = this.#index(p);
    return i >= 0 ? this.#flags[i] === 1 : this.#other.has(p);
  }
  add(p: number): void {
    if (this.has(p)) return;
    const i = this.#index(p);
    if (i >= 0) this.#flags[i] = 1;
    else this.#other.add(p);
    this.size++;
  }
  delete(p: number): void {
    if (!this.has(p)) return;
    const i = this.#index(p);
    if (i >= 0) this.#flags[i] = 0;
    else this.#other.delete(p);
    this.size--;
  }
}

/** One shard opened on a region. */
export class TxAppServer implements AppServer {
  readonly app = 'tx';
  readonly geometry: TxGeometry;
  readonly region: PmemRegion;
  readonly mr: MemoryRegion;
  readonly faults: Readonly<TxFaults>;
  readonly #nic: Rnic;
  readonly #pd: ProtectionDomain;
  #qps: ServerQp[] = [];
  #recovered = false;
  #closed = false;
  #last: TxRecoveryReport | undefined;
  readonly #desk: ReturnDesk;
  readonly #poller: CpuPoller;
  /** Items whose mark word a drained NIC write marked dead since the last sweep (logged as the write drained). */
  #candidates = new Set<number>();
  /**
   * The pointer words drained NIC writes moved since the last sweep, in drain order: slot index,
   * then the pointer the write left (read as it drained). The sweep retires the item each move
   * replaced, so two moves of one slot before it looks retire both items.
   */
  #moves: number[] = [];
  /** Slots a drained NIC write left with W below CT (audit() reports them; at most 16 kept). */
  #drainProblems: AppProblem[] = [];
  /** Logged writes (#moves, #candidates) since the last sweep, and how many wake the CPU (1: every one). */
  #unpolled = 0;
  readonly #pollBatch: number;
  /** Per slot index: the item the CPU last saw installed there (visible memory). */
  #installed: number[] = [];
  /**
   * Per item of the arena (by index): how many slots #installed says point at it. Once every
   * drained write over a pointer word has been looked at (no poller event pending, no slot
   * candidate left), this is what the slot table reaches in visible memory: the ReturnDesk's
   * check reads it instead of a snapshot of the whole table.
   */
  #slotRefs = new Int32Array(0);
  /**
   * Items retired (dead: an aborted transaction's marked item, or a superseded value whose slot
   * moved on durably), in their grace period, by the pass that retired them: its items and the QPs
   * that had a chain queued or running on the NIC then. They are ready once each of those QPs has
   * been seen with no chain queued (every chain that could still reach them finished).
   */
  #grace: Array<{ items: number[]; waiting: Set<number> }> = [];
  /** Items whose grace period ended, waiting for a return batch. */
  #ready: number[] = [];
  /** Every item retired and not yet given back (in #grace or #ready). */
  #retired = new RetiredSet(0);
  /** A logged write (a pointer word or a dead mark) woke the CPU since the last pass end (the sweep runs at the pass's end). */
  #touched = false;
  readonly sweepStats: TxSweepStats = { sweeps: 0, dead: 0, superseded: 0, returned: 0, refused: 0, inGrace: 0, logged: 0, wakes: 0 };

  constructor(host: AppHost, o: TxAppOptions) {
    this.region = host.region;
    this.#nic = host.nic;
    this.faults = Object.freeze({ ...NO_TX_FAULTS, ...o.faults });
    if (o.base + TX_HEADER_BYTES > host.region.sizeBytes) throw new PmrpcError(TxErrorCodes.NOT_FORMATTED, `no TX header at ${o.base}: the region has ${host.region.sizeBytes} bytes`);
    this.geometry = decodeTxHeader(host.region.load(o.base, TX_HEADER_BYTES), o.base);
    if (o.base + this.geometry.totalBytes > host.region.sizeBytes) throw new PmrpcError(TxErrorCodes.NOT_FORMATTED, 'the TX area runs past the end of the region');
    // Keys are routed by key % shards: a file that is another shard (or of another shard count) than
    // its node is told to be would serve keys that are not its own.
    if (this.geometry.shard !== o.shard || this.geometry.shards !== o.shards) {
      throw new PmrpcError(TxErrorCodes.SHARD_MISMATCH, `the file is shard ${this.geometry.shard} of ${this.geometry.shards}, the options say shard ${o.shard} of ${o.shards} (a tx node of a cluster is started with --cluster FILE; its place among the file's tx nodes must not change)`);
    }
    host.nic.refuseAllocate();
    this.#pd = host.nic.allocPd();
    this.mr = host.nic.registerMr(this.#pd, o.base, this.geometry.totalBytes, Access.ALL);
    const g = this.geometry;
    this.#desk = new ReturnDesk({
      region: host.region,
      nic: host.nic,
      mr: this.mr,
      classes: this.arenaClasses,
      classOf: (p) => (p >= g.arenaOffset && p < g.arenaOffset + g.items * ITEM_BYTES ? ITEM_BYTES : undefined),
      isReachable: (p) => this.#reaches(p),
      acceptStaleEpoch: false,
    });
    // The sweep is driven by the NIC's notifications (a drained write touching an item's mark
    // word or a slot's pointer word), never by a timer or a spin loop; it runs at the end of the
    // CPU poller's pass that handled them (no pass of its own; on a large arena one pass per POLL_BATCH logged writes).
    this.#poller = new CpuPoller(host.nic, { schedule: host.schedule });
    this.#poller.onPassEnd(() => this.#passEnd());
    // The CPU polls two kinds of words: the slots' pointer words (an install moves one on) and the
    // items' mark words holding a dead mark (an aborted transaction's item). Only a drained write
    // over one of them is logged (its slot and the pointer it left, or the dead item) and may wake
    // the CPU (an event: a pass, its sweep at the pass's end); locks, checks, validations, records
    // and ALLOCATEs of live items cost the CPU nothing. Items in their grace period are looked at
    // again by the next sweep.
    this.#pollBatch = g.items >= POLL_BATCH_MIN_ITEMS ? POLL_BATCH : 1;
    const returnBatch = Math.min(RETURN_BATCH, Math.max(1, Math.floor(g.items / 16)));
    // Whether this logged write wakes the CPU: once a batch is waiting, or while the free list is short.
    const wake = (): boolean => {
      this.sweepStats.logged++;
      const w = ++this.#unpolled >= this.#pollBatch || this.#nic.freeBufferCount(this.mr, ITEM_BYTES) < 2 * returnBatch;
      if (w) this.sweepStats.wakes++;
      return w;
    };
    const overPtr = (e: HostWriteEvent): boolean => {
      const first = Math.max(0, Math.floor((e.offset - g.slotsOffset) / SLOT_BYTES));
      const last = Math.min(g.keys - 1, Math.floor((e.offset + e.len - 1 - g.slotsOffset) / SLOT_BYTES));
      let logged = false;
      for (let i = first; i <= last; i++) {
        const at = slotOffset(g, i);
        // W ≥ CT after every write a NIC op leaves on a slot (a lock, check, validation or install
        // CAS writes [W CT L ptr] in one op): a write that leaves W below CT is a protocol bug, seen
        // here as it drains — a later install's W := ts would hide it from an audit at the end.
        if (e.offset < at + 16 && e.offset + e.len > at && this.#drainProblems.length < 16) {
          const wHi = this.region.loadU32(at + 4);
          const ctHi = this.region.loadU32(at + 12);
          if (wHi < ctHi || (wHi === ctHi && this.region.loadU32(at) < this.region.loadU32(at + 8))) {
            this.#drainProblems.push({ kind: 'slot', detail: `key ${i * g.shards + g.shard}: a drained NIC write left W ${this.region.loadU64(at)} below CT ${this.region.loadU64(at + 8)}` });
          }
        }
        const p = at + 24;
        if (e.offset < p + 8 && e.offset + e.len > p) {
          // The pointer the write left (visible now; two 32-bit halves, no BigInt).
          this.#moves.push(i, this.region.loadU32(p) + this.region.loadU32(p + 4) * 2 ** 32);
          logged = true;
        }
      }
      return logged && wake();
    };
    const deadMark = (e: HostWriteEvent): boolean => {
      const first = Math.max(0, Math.floor((e.offset - g.arenaOffset) / ITEM_BYTES));
      const last = Math.min(g.items - 1, Math.floor((e.offset + e.len - 1 - g.arenaOffset) / ITEM_BYTES));
      let logged = false;
      for (let i = first; i <= last; i++) {
        const m = g.arenaOffset + i * ITEM_BYTES + ITEM_MARK_WORD;
        if (e.offset < m + 8 && e.offset + e.len > m && this.region.loadU64(m) >> 32n === ITEM_DEAD) {
          this.#candidates.add(g.arenaOffset + i * ITEM_BYTES);
          logged = true;
        }
      }
      return logged && wake();
    };
    // The sweep reads the log, not the slots: an event waiting for a later pass (a batch) loses no
    // move (the second install on a slot before the sweep looked retires the first one's item too).
    this.#poller.watchMemory({ offset: g.slotsOffset, len: g.keys * SLOT_BYTES, filter: overPtr }, () => this.#onWrite());
    this.#poller.watchMemory({ offset: g.arenaOffset, len: g.items * ITEM_BYTES, filter: deadMark }, () => this.#onWrite());
  }

  /** The arena: one size class. */
  get arenaClasses(): ArenaClass[] {
    return [{ sizeBytes: ITEM_BYTES, offset: this.geometry.arenaOffset, count: this.geometry.items }];
  }

  /** The ReturnDesk's counters (returns accepted, refused by reason). */
  get returnStats(): Readonly<ReturnStats> {
    return this.#desk.stats;
  }

  /** The NIC's free list of items (the ReturnDesk's mirror). */
  freeItems(): number[] {
    return this.#desk.freeLists().get(ITEM_BYTES) ?? [];
  }

  /** What the index reaches now (visible memory): every slot's item and the new items of PREPARED records. */
  #reachable(): Set<number> {
    const g = this.geometry;
    const out = new Set<number>();
    // One load of the slot table, the pointer words read in place.
    const t = this.region.load(g.slotsOffset, g.keys * SLOT_BYTES);
    const dv = new DataView(t.buffer, t.byteOffset, t.byteLength);
    for (let i = 0; i < g.keys; i++) out.add(Number(dv.getBigUint64(i * SLOT_BYTES + 24, true)));
    for (const body of this.prepared().values()) for (const e of body.entries) if (e.kind === ENTRY_WRITE && e.key % g.shards === g.shard) out.add(e.newPtr);
    return out;
  }

  /** A logged write woke the CPU (the filters above logged what it wrote as it drained): the sweep runs at this pass's end. */
  #onWrite(): void {
    this.#touched = true;
  }

  /** The end of a CPU poller pass: the sweep, if the pass's events touched a pointer word or a dead mark. */
  #passEnd(): void {
    if (!this.#touched) return;
    this.#touched = false;
    this.#inPass = true;
    try {
      this.sweep();
    } finally {
      this.#inPass = false;
    }
  }

  /**
   * The CPU's sweep (docs/tx.md "Live reclamation", tables A and S). Three steps, each in one place:
   * - **superseded values** (table S): a slot whose pointer moved on since the CPU last looked (an
   *   install, after its transaction's commit point) — the new pointer is made durable first (the
   *   CPU persists the slot: from now on no crash brings the old pointer back), then the old item
   *   is retired;
   * - **dead marks** (table A): a candidate item marked dead over a whole item (crc checked with
   *   the mark cleared) is retired — its mark was posted behind a durable H ≠ PREPARED(T);
   * - **grace period**: a retired item goes back to the free list, through the ReturnDesk (which
   *   refuses what a slot or a PREPARED record reaches, or what is free already), only once every
   *   QP that had a chain queued or running on the NIC when it was retired has been seen with none
   *   queued: no NIC operation that may still reach it is in flight. A dead mark is cleared in the
   *   same synchronous step as the return (no ALLOCATE runs in between).
   * Returns how many items went back.
   */
  sweep(): number {
    this.#byHand = this.#inPass ? false : true;
    return this.#sweep();
  }

  /** A sweep() called from outside a scheduled pass: its returns go at once (no batching). */
  #byHand = false;
  #inPass = false;

  #sweep(): number {
    if (!this.#recovered || this.#closed) return 0;
    const waiting = this.#candidates.size + this.#moves.length;
    if (waiting === 0 && this.#retired.size === 0) return 0;
    const g = this.geometry;
    const batch = Math.min(RETURN_BATCH, Math.max(1, Math.floor(g.items / 16)));
    let short: boolean | undefined;
    const freeShort = (): boolean => (short ??= this.#nic.freeBufferCount(this.mr, ITEM_BYTES) < 2 * batch);
    this.sweepStats.sweeps++;
    // The QPs with queued work, read once for the pass (nothing the pass does queues NIC work);
    // mostly none (a pass runs after the NIC calls that queued its events returned).
    let busyNow: number[] | undefined;
    const busy = (): number[] => (busyNow ??= this.#nic.idle ? NO_QPS : this.#nic.busyQps());
    // The items this pass retires share one grace set (a copy of the busy QPs: it shrinks as they
    // drain); with no QP busy (or the freeWithoutGrace mutant) they are ready at once.
    let retiring: { items: number[]; waiting: Set<number> } | undefined;
    const retire = (ptr: number): boolean => {
      if (ptr < g.arenaOffset || ptr >= g.arenaOffset + g.items * ITEM_BYTES || this.#retired.has(ptr)) return false;
      this.#retired.add(ptr);
      if (this.faults.freeWithoutGrace || busy().length === 0) this.#ready.push(ptr);
      else (retiring ??= { items: [], waiting: new Set(busy()) }).items.push(ptr);
      return true;
    };
    if (this.faults.skipReturns) this.#moves.length = 0; // live reclamation switched off (aborted items are never marked either)
    this.#unpolled = 0;
    if (this.#moves.length > 0) {
      const log = this.#moves;
      this.#moves = [];
      // The moves in drain order: each retires the item its slot held before it (the CPU's view,
      // #installed, follows the log), so every install's superseded item is retired once.
      // The moves that moved a pointer on, in place in the log: (new pointer, the one it replaced).
      let moved = 0;
      let slots: number[] | undefined;
      let one = -1;
      for (let k = 0; k < log.length; k += 2) {
        const i = log[k]!;
        const ptr = log[k + 1]!;
        const was = this.#installed[i]!;
        if (ptr === was || ptr === 0) continue;
        log[moved++] = ptr;
        log[moved++] = was;
        this.#installed[i] = ptr;
        if (one === -1) one = i;
        else if (one !== i) {
          slots ??= [one];
          if (!slots.includes(i)) slots.push(i);
        }
      }
      // The pointer that makes an old item dead is durable before the item is retired: every moved
      // slot is written back once (clwb; its pointer now is the last one logged), in slot order,
      // then one fence (sfence) for all of them.
      if (moved > 0 && !this.faults.freeWithoutPersist) {
        for (const i of slots === undefined ? [one] : slots.sort((x, y) => x - y)) this.region.flush(slotOffset(g, i), 40);
        this.region.drain();
      }
      for (let k = 0; k < moved; k += 2) {
        this.#slotRef(log[k + 1]!, -1);
        this.#slotRef(log[k]!, 1);
        retire(log[k + 1]!);
        this.sweepStats.superseded++;
      }
    }
    if (this.#candidates.size > 0) {
      const todo = [...this.#candidates].sort((a, b) => a - b);
      this.#candidates.clear();
      for (const ptr of todo) {
        if (this.#retired.has(ptr)) continue;
        const word = this.region.loadU64(ptr + ITEM_MARK_WORD);
        if (word >> 32n !== ITEM_DEAD) continue;
        // A whole item under the mark (its crc covers the mark: checked with the mark cleared).
        const bytes = this.region.load(ptr, ITEM_BYTES);
        new DataView(bytes.buffer, bytes.byteOffset).setUint32(ITEM_MARK_WORD + 4, 0, true);
        if (decodeItem(bytes) === undefined) continue;
        this.sweepStats.dead++;
        retire(ptr);
      }
    }
    if (retiring !== undefined) this.#grace.push(retiring);
    // Grace periods: a group is ready once none of its QPs has a chain queued.
    if (this.#grace.length > 0) {
      const now = new Set(busy());
      let kept = 0;
      for (const grp of this.#grace) {
        for (const q of grp.waiting) if (!now.has(q)) grp.waiting.delete(q);
        if (grp.waiting.size === 0) for (const p of grp.items) this.#ready.push(p);
        else this.#grace[kept++] = grp;
      }
      this.#grace.length = kept;
    }
    let returned = 0;
    // Returns go in batches (one check of what PREPARED records reach per batch): a pass returns
    // once RETURN_BATCH items are ready, or at once while the NIC's free list is short, or when
    // sweep() is called by hand (a last look once the shard is idle).
    if (this.#ready.length > 0 && (this.#ready.length >= batch || this.#byHand || freeShort())) {
      const ready = this.#ready.sort((a, b) => a - b);
      this.#ready = [];
      for (const p of ready) this.#retired.delete(p);
      // What slots and PREPARED records reach now (visible memory), for the batch: the slots by
      // #slotRefs when every drained pointer write has been looked at, else by a snapshot of the table.
      this.#reach = { prepared: this.#preparedItems(), slots: this.#moves.length === 0 ? undefined : this.#slotSnapshot() };
      try {
        returned = this.#desk.giveBack(ready, (ptr) => {
          // Same synchronous step as the return: no ALLOCATE runs in between. (The mark is the
          // word's high half: read as 32 bits, no BigInt unless there is one to clear.)
          if (this.region.loadU32(ptr + ITEM_MARK_WORD + 4) !== 0) this.region.storeU64(ptr + ITEM_MARK_WORD, BigInt(this.region.loadU32(ptr + ITEM_MARK_WORD)));
        }).accepted;
      } finally {
        this.#reach = undefined;
      }
      this.sweepStats.refused += ready.length - returned;
    }
    this.sweepStats.returned += returned;
    this.sweepStats.inGrace = this.#retired.size;
    return returned;
  }

  /** One more (+1) or one fewer (-1) slot points at item `p` (items of the arena only, aligned). */
  #slotRef(p: number, d: number): void {
    const g = this.geometry;
    const off = p - g.arenaOffset;
    if (off < 0 || off % ITEM_BYTES !== 0 || off >= g.items * ITEM_BYTES) return;
    this.#slotRefs[off / ITEM_BYTES]! += d;
  }

  /** The sweep's view for one return batch: the new items of PREPARED records, and a slot-table snapshot when #slotRefs may lag. */
  #reach: { prepared: Set<number>; slots: Set<number> | undefined } | undefined;

  /** Whether a slot or a PREPARED record of this shard reaches item `p` now (the ReturnDesk's check). */
  #reaches(p: number): boolean {
    const r = this.#reach;
    if (r === undefined) return this.#slotSnapshot().has(p) || this.#preparedItems().has(p);
    if (r.prepared.has(p)) return true;
    if (r.slots !== undefined) return r.slots.has(p);
    const off = p - this.geometry.arenaOffset;
    return off >= 0 && off % ITEM_BYTES === 0 && off < this.geometry.items * ITEM_BYTES && this.#slotRefs[off / ITEM_BYTES]! > 0;
  }

  /** Every item a slot points at now (visible memory: one load of the table, the pointer words read in place). */
  #slotSnapshot(): Set<number> {
    const g = this.geometry;
    const t = this.region.load(g.slotsOffset, g.keys * SLOT_BYTES);
    const dv = new DataView(t.buffer, t.byteOffset, t.byteLength);
    const out = new Set<number>();
    for (let i = 0; i < g.keys; i++) out.add(dv.getUint32(i * SLOT_BYTES + 24, true) + dv.getUint32(i * SLOT_BYTES + 28, true) * 2 ** 32);
    return out;
  }

  /**
   * The new items this shard's PREPARED records name (visible memory): every PREPARED H over a
   * body of its txid, without prepared()'s check that each address names T's own whole item (a
   * crc per item; a record that fails it names no item a sweep retired, and refusing more is safe).
   */
  #preparedItems(): Set<number> {
    const g = this.geometry;
    const out = new Set<number>();
    for (let c = 0; c < g.clients; c++) {
      const at = recordOffset(g, c);
      const h = this.region.loadU64(at);
      if (h === 0n || hState(h) !== H_PREPARED) continue;
      const body = decodeBody(this.region.load(at + RECORD_BODY, RECORD_BYTES - RECORD_BODY));
      if (body === undefined || body.txid !== hTxid(h)) continue;
      for (const e of body.entries) if (e.kind === ENTRY_WRITE && e.key % g.shards === g.shard) out.add(e.newPtr);
    }
    return out;
  }

  /** Items in use now: installed, in a PREPARED record, in flight (ALLOCATEd, not yet installed or returned), or in their grace period. */
  get itemsInUse(): number {
    return this.geometry.items - this.#nic.freeBufferCount(this.mr, ITEM_BYTES);
  }

  get lastRecovery(): TxRecoveryReport | undefined {
    return this.#last;
  }

  slot(index: number): Slot {
    return decodeSlot(this.region.load(slotOffset(this.geometry, index), SLOT_BYTES));
  }

  /** H of client slot c, and its body when H is PREPARED (undefined: torn or not of H's txid). */
  record(c: number): { h: bigint; body: RecordBody | undefined } {
    const at = recordOffset(this.geometry, c);
    const h = this.region.loadU64(at);
    const body = hState(h) === H_PREPARED && h !== 0n ? decodeBody(this.region.load(at + RECORD_BODY, RECORD_BYTES - RECORD_BODY)) : undefined;
    return { h, body: body !== undefined && body.txid === hTxid(h) ? body : undefined };
  }

  /** The PREPARED records of this shard: txid → body (torn ones are left out: recovery fences them, R2; audit reports them). */
  prepared(): Map<bigint, RecordBody> {
    const out = new Map<bigint, RecordBody>();
    for (let c = 0; c < this.geometry.clients; c++) {
      const r = this.record(c);
      if (r.h !== 0n && hState(r.h) === H_PREPARED && r.body !== undefined && (this.faults.recoveryTrustsRecord || this.#badItem(r.body) === undefined)) out.set(r.body.txid, r.body);
    }
    return out;
  }

  /**
   * The first write entry of `body` on this shard whose address does not name T's own new item
   * (an item of the arena, whole — crc — with the entry's key and T's ts), with what it names;
   * undefined: every one does. One (key, ts) names one item ever, so a stale address (an earlier
   * transaction's of the same client slot) never passes.
   */
  #badItem(body: RecordBody): { key: number; ptr: number; found: string } | undefined {
    const g = this.geometry;
    if (body.values === true) return undefined; // carries its values: decodeBody checked each (crc, key, ts)
    for (const e of body.entries) {
      if (e.kind !== ENTRY_WRITE || e.key % g.shards !== g.shard) continue;
      const inArena = e.newPtr >= g.arenaOffset && e.newPtr < g.arenaOffset + g.items * ITEM_BYTES && (e.newPtr - g.arenaOffset) % ITEM_BYTES === 0;
      const it = inArena ? decodeItem(this.region.load(e.newPtr, ITEM_BYTES)) : undefined;
      if (it === undefined || it.key !== e.key || it.ts !== body.ts) return { key: e.key, ptr: e.newPtr, found: inArena ? (it === undefined ? 'garbage' : `key ${it.key}, ts ${it.ts}`) : 'not an item of the arena' };
    }
    return undefined;
  }

  /**
   * Local recovery (docs/tx.md, table R: TX_RECOVERY_TABLE in recovery.ts, rows R1–R6): idempotent,
   * and a crash anywhere in it leaves an image that recovers the same way (every repair is a durable
   * store of a value derived from durable state that the repair does not change).
   */
  recover(): TxShardRecoveryReport {
    if (this.#last !== undefined) return { app: 'tx', shard: this.geometry.shard, ...this.#last };
    const g = this.geometry;
    this.#nic.refuseAllocate();
    const { free, ...report } = recoverTxShard({
      region: this.region,
      geometry: g,
      faults: this.faults,
      arenaClasses: this.arenaClasses,
      record: (c) => this.record(c),
      slot: (i) => this.slot(i),
      prepared: () => this.prepared(),
      badItem: (body) => this.#badItem(body),
    });
    this.#candidates.clear();
    this.#moves = [];
    this.#unpolled = 0;
    this.#retired = new RetiredSet(g.items, g.arenaOffset);
    this.#grace = [];
    this.#ready = [];
    this.#touched = false;
    this.#installed = Array.from({ length: g.keys }, (_, i) => this.slot(i).ptr);
    this.#slotRefs = new Int32Array(g.items);
    for (const p of this.#installed) this.#slotRef(p, 1);
    this.#desk.open(free, 1n);
    this.#recovered = true;
    this.#last = report;
    return { app: 'tx', shard: g.shard, ...this.#last };
  }

  accept(_hello: Uint8Array): AcceptedClient {
    if (!this.#recovered) throw new PmrpcError('PMRPC_ERR_NOT_RECOVERED', 'accept() before recover()');
    if (this.#closed) throw new PmrpcError(TxErrorCodes.BAD_STATE, 'the TX shard is closed');
    const qp = this.#nic.createQp(this.#pd);
    this.#qps.push(qp);
    const g = this.geometry;
    return { qp, welcome: jsonBytes({ app: 'tx', rkey: this.mr.rkey, shard: g.shard, shards: g.shards, keys: g.keys, clients: g.clients, slots: g.slotsOffset, records: g.recordsOffset, arena: g.arenaOffset, arenaBytes: g.items * ITEM_BYTES }) };
  }

  /** The installed value of slot `index` (visible memory), or undefined when its item is bad. */
  value(index: number): { ct: bigint; lock: bigint; value: Uint8Array } | undefined {
    const s = this.slot(index);
    const it = decodeItem(this.region.load(s.ptr, ITEM_BYTES));
    return it === undefined ? undefined : { ct: s.ct, lock: s.lock, value: it.value };
  }

  inspect(): Record<string, unknown> {
    const g = this.geometry;
    const records: string[] = [];
    for (let c = 0; c < g.clients; c++) {
      const { h } = this.record(c);
      if (h !== 0n) records.push(`client ${c}: ${describeH(h)}`);
    }
    const locked: string[] = [];
    for (let i = 0; i < g.keys; i++) {
      const s = this.slot(i);
      if (s.lock !== 0n) locked.push(`key ${i * g.shards + g.shard}: ${txName(s.lock)}`);
    }
    return { app: 'tx', shard: g.shard, shards: g.shards, keys: g.keys, clients: g.clients, records, locked, lastRecovery: this.#last, sweep: { ...this.sweepStats }, freeItems: this.freeItems().length };
  }

  audit(): AppProblem[] {
    const g = this.geometry;
    const out: AppProblem[] = [];
    const prepared = this.prepared();
    for (let c = 0; c < g.clients; c++) {
      const r = this.record(c);
      // R2 / R2': after recovery (which fences them) and while the shard runs (a chain writes the
      // body and the addresses before its H CAS), no PREPARED H stands over a body that is not T's
      // or over an address that does not name T's own item (key, ts).
      if (r.h !== 0n && hState(r.h) === H_PREPARED && r.body === undefined) out.push({ kind: 'record', detail: `client ${c}: ${describeH(r.h)} over a torn record body` });
      const bad = r.h !== 0n && hState(r.h) === H_PREPARED && r.body !== undefined ? this.#badItem(r.body) : undefined;
      if (bad !== undefined) out.push({ kind: 'record', detail: `client ${c}: ${describeH(r.h)} names item ${bad.ptr} for key ${bad.key}, which is not its new value (${bad.found})` });
    }
    out.push(...this.#drainProblems);
    const seen = new Set<number>();
    for (let i = 0; i < g.keys; i++) {
      const key = i * g.shards + g.shard;
      const s = this.slot(i);
      const inArena = s.ptr >= g.arenaOffset && s.ptr < g.arenaOffset + g.items * ITEM_BYTES && (s.ptr - g.arenaOffset) % ITEM_BYTES === 0;
      if (!inArena) {
        out.push({ kind: 'slot', detail: `key ${key}: pointer ${s.ptr} is not an item of the arena` });
        continue;
      }
      if (seen.has(s.ptr)) out.push({ kind: 'slot', detail: `key ${key}: item ${s.ptr} reached twice` });
      seen.add(s.ptr);
      const it = decodeItem(this.region.load(s.ptr, ITEM_BYTES));
      if (it === undefined) out.push({ kind: 'slot', detail: `key ${key}: the installed item at ${s.ptr} is garbage (checksum)` });
      else if (it.key !== key || it.ts !== s.ct) out.push({ kind: 'slot', detail: `key ${key}: item (key ${it.key}, ts ${it.ts}) does not match the slot (CT ${s.ct})` });
      if (s.w < s.ct) out.push({ kind: 'slot', detail: `key ${key}: W ${s.w} below CT ${s.ct}` });
    }
    // No double use: nothing the index or a PREPARED record reaches is on the free list.
    if (this.#recovered) {
      const reach = this.#reachable();
      for (const p of this.freeItems()) if (reach.has(p)) out.push({ kind: 'allocator', detail: `item ${p} is on the free list and reached (a slot or a PREPARED record names it)` });
    }
    return out;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#poller.close();
    for (const qp of this.#qps) this.#nic.destroyQp(qp.qpn);
    this.#qps = [];
  }
}

export { SLOT_BYTES };
