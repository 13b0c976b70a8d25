/**
 * The PRISM-KV client: GET, PUT and DELETE as NIC chains over any Link (QueuePair), no server CPU.
 *
 * GET    1 RTT: bounded indirect READ of the key's home slot (the bound = the item's buffer size),
 *        then FLUSH(persistent) of that slot in the same message: what a GET returns is durable
 *        (DESIGN §5: a read never returns state a crash can take back).
 *        On a collision, 1 more: a chain of bounded indirect READs of the rest of the window + FLUSH.
 * PUT    1 RTT with a cached slot (slot index + version): WRITE scratch[8..24) ← (bound, version+1);
 *        ALLOCATE → redirect scratch[0]; FLUSH(persistent) heap (conditional); CAS 'gt' on the
 *        version word with dataIndirect from scratch (conditional); FLUSH(persistent) slot
 *        (conditional) — over the window from home to the slot, so the slots it went past (maybe
 *        claimed by a chain whose own FLUSH has not run) are durable too; READ scratch[0] (the
 *        allocated address, to return it if the CAS lost).
 *        Without a cached slot, 1 RTT before it to locate the key (chain of window READs).
 * DELETE the same chain with a tombstone item: a slot, once claimed by a key, stays that key's.
 *
 * Why CAS 'gt' and not 'eq': PRISM's CAS has one operand for compare and swap; an 'eq' can only
 * swap bytes it does not compare. Versions of a slot only grow, so `seen + 1 > current` holds
 * exactly when current == seen: it is the eq-on-last-seen test, and it swaps the new version in.
 */
import { callable, intIn, optional, PmrpcError, resolveOptions, type ErrorCode, type OptionChecks } from '../../../pmem/index.js';
import { NicErrorCodes, QueuePair, Wr, type Completion, type NotifyMessage, type WorkRequest } from '../../../flush/index.js';
import { NO_KV_FAULTS, type KvFaults } from './faults.js';
import {
  ITEM_HEADER_BYTES,
  KV_EPOCH_OFFSET,
  KV_HEADER_BYTES,
  KvErrorCodes,
  RETURN_BATCH_MAX,
  SLOT_BYTES,
  SLOT_CAS_BYTES,
  bytesEqual,
  classFor,
  decodeItem,
  decodeKvHeader,
  decodeSlot,
  encodeItem,
  homeSlot,
  itemBytes,
  slotOffset,
  type KvGeometry,
} from './layout.js';
import { RETURN_ACK_IMM, RETURN_IMM, RETURN_STALE_IMM } from './server.js';

export interface KvClientOptions {
  /** Replaced buffers held before a return RPC is sent. */
  returnBatch: number;
  /** Bound of CAS retries of one PUT / DELETE. */
  casRetriesMax: number;
  /** Bound of re-reads of an item that fails its checksum. */
  readRetriesMax: number;
  /** Test-only fault switches of the PUT chain. */
  faults: Partial<KvFaults>;
  /** Called with each return batch sent (the crash suite replays the last one after a crash). */
  onReturnBatch: ((payload: Uint8Array) => void) | undefined;
}

export const KV_CLIENT_DEFAULTS: Readonly<KvClientOptions> = Object.freeze({ returnBatch: 32, casRetriesMax: 16, readRetriesMax: 8, faults: Object.freeze({}), onReturnBatch: undefined });

export interface KvClientStats {
  /** Request messages posted (each one round trip), return RPCs included. */
  roundTrips: number;
  /** Round trips of the last get / put / delete (return RPCs not included). */
  lastOpRoundTrips: number;
  gets: number;
  puts: number;
  deletes: number;
  casRetries: number;
  readRetries: number;
  returnRpcs: number;
  returnsRefused: number;
}

interface SlotRef {
  slot: number;
  version: bigint;
}

const SCRATCH_PTR = 0;
const SCRATCH_META = 8;
const VERSION_MASK = (() => {
  const m = new Uint8Array(SLOT_CAS_BYTES);
  m.fill(0xff, 16, 24);
  return m;
})();
const NO_MASK = new Uint8Array(SLOT_CAS_BYTES);
const encoder = new TextEncoder();

type Located = { kind: 'found'; ref: SlotRef; item: ReturnType<typeof decodeItem> & object } | { kind: 'free'; ref: SlotRef } | { kind: 'full' };

export class PrismKvClient {
  readonly qp: QueuePair;
  readonly rkey: number;
  readonly geometry: KvGeometry;
  readonly options: Readonly<KvClientOptions>;
  readonly faults: Readonly<KvFaults>;
  #epoch: bigint;
  #cache = new Map<string, SlotRef>();
  #pendingReturns: number[] = [];
  #returning: Promise<void> | undefined;
  #notifyWaiter: { resolve: (m: NotifyMessage) => void; reject: (e: Error) => void } | undefined;
  #stats: KvClientStats = { roundTrips: 0, lastOpRoundTrips: 0, gets: 0, puts: 0, deletes: 0, casRetries: 0, readRetries: 0, returnRpcs: 0, returnsRefused: 0 };
  #opRtts = 0;
  #maxRead: number;

  /** Reads the KV header (geometry, epoch) over the QP: one READ, not counted against an operation. */
  static async connect(qp: QueuePair, address: { rkey: number; base: number }, options: Partial<KvClientOptions> = {}): Promise<PrismKvClient> {
    if (!(qp instanceof QueuePair)) throw new TypeError('qp must be a QueuePair');
    if (address === null || typeof address !== 'object' || !Number.isSafeInteger(address.rkey) || !Number.isSafeInteger(address.base)) throw new TypeError('address must be { rkey, base } (integers)');
    const o = resolveClientOptions(options);
    const h = await qp.read({ rkey: address.rkey, addr: address.base }, KV_HEADER_BYTES);
    const g = decodeKvHeader(h, address.base);
    const epoch = new DataView(h.buffer, h.byteOffset).getBigUint64(KV_EPOCH_OFFSET, true);
    return new PrismKvClient(qp, address.rkey, g, epoch, o);
  }

  private constructor(qp: QueuePair, rkey: number, g: KvGeometry, epoch: bigint, o: KvClientOptions) {
    this.qp = qp;
    this.rkey = rkey;
    this.geometry = g;
    this.options = Object.freeze(o);
    this.faults = Object.freeze({ ...NO_KV_FAULTS, ...o.faults });
    this.#epoch = epoch;
    this.#maxRead = g.classes[g.classes.length - 1]!.sizeBytes;
    qp.onNotify((m) => {
      const w = this.#notifyWaiter;
      this.#notifyWaiter = undefined;
      w?.resolve(m);
    });
    // A reply that will never come (the connection died after the SEND completed) must not hang the caller.
    qp.onClose((err) => {
      const w = this.#notifyWaiter;
      this.#notifyWaiter = undefined;
      w?.reject(err);
    });
  }

  get stats(): Readonly<KvClientStats> {
    return { ...this.#stats };
  }

  get epoch(): bigint {
    return this.#epoch;
  }

  /** Replaced buffers not yet returned. */
  get pendingReturns(): number {
    return this.#pendingReturns.length;
  }

  /** Largest value that fits a key of `keyBytes` bytes. */
  maxValueBytes(keyBytes: number): number {
    return this.#maxRead - ITEM_HEADER_BYTES - keyBytes;
  }

  // ---------------------------------------------------------------- GET

  async get(key: string | Uint8Array): Promise<Uint8Array | undefined> {
    const k = this.#key(key);
    const name = cacheName(key, k);
    this.#begin();
    this.#stats.gets++;
    try {
      const g = this.geometry;
      const home = homeSlot(g, k);
      for (let attempt = 0; attempt <= this.options.readRetriesMax; attempt++) {
        if (attempt > 0) this.#stats.readRetries++;
        const [c, fl] = await this.#post(this.#durableReads(home, 1));
        if (fl !== undefined) check(fl); // a value is returned only once its FLUSH completed
        const first = this.#classify(k, home, check(c!).data!);
        if (first === 'torn') continue;
        if (first !== 'other') return this.#answer(name, first);
        if (g.probeSlots === 1) return undefined;
        const cs = await this.#post(this.#durableReads(home + 1, g.probeSlots - 1));
        for (const x of cs.slice(g.probeSlots - 1)) check(x);
        let torn = false;
        for (let j = 0; j < g.probeSlots - 1; j++) {
          const r = this.#classify(k, home + 1 + j, check(cs[j]!).data!);
          if (r === 'torn') {
            torn = true;
            break;
          }
          if (r !== 'other') return this.#answer(name, r);
        }
        if (!torn) return undefined;
      }
      throw new PmrpcError(KvErrorCodes.CORRUPT, `the item of key ${show(k)} failed its checksum ${this.options.readRetriesMax + 1} times`);
    } finally {
      this.#end();
    }
  }

  #classify(k: Uint8Array, slot: number, data: Uint8Array): 'torn' | 'other' | { slot: number; item: ReturnType<typeof decodeItem> } {
    if (data.length === 0) return { slot, item: undefined }; // an empty slot ends the window: the key is absent
    const item = decodeItem(data);
    if (item === undefined) return 'torn';
    return bytesEqual(item.key, k) ? { slot, item } : 'other';
  }

  /**
   * Bounded READs of slots [first, first + n), then FLUSH(persistent) over those slots, in one
   * message: what the READs returned is durable before the client sees it (DESIGN §5). A READ sees
   * host memory — media or dirty CPU lines, never another QP's undrained NIC-cache entry (DESIGN
   * §2.2 (i)) — and FLUSH(persistent, range) writes back every dirty line of its range whoever
   * wrote it (§2.2 (iii)), so the slot words read are durable (or superseded by newer ones) once
   * it completes. The items they point at need no FLUSH: every writer's chain FLUSHes its item
   * before its CAS can make a pointer to it visible.
   */
  #durableReads(first: number, n: number): WorkRequest[] {
    const wrs: WorkRequest[] = [];
    for (let i = first; i < first + n; i++) wrs.push(Wr.read(this.#slot(i), this.#maxRead, { bounded: true }));
    if (!this.faults.getWithoutFlush) wrs.push(Wr.flush('persistent', this.rkey, { addr: slotOffset(this.geometry, first), len: n * SLOT_BYTES }));
    return wrs;
  }

  #answer(name: string, r: { slot: number; item: ReturnType<typeof decodeItem> }): Uint8Array | undefined {
    this.#cache.set(name, { slot: r.slot, version: r.item?.version ?? 0n });
    return r.item === undefined || r.item.tombstone ? undefined : r.item.value;
  }

  // ---------------------------------------------------------------- PUT / DELETE

  async put(key: string | Uint8Array, value: Uint8Array): Promise<void> {
    const k = this.#key(key);
    if (!(value instanceof Uint8Array)) throw new TypeError('value must be a Uint8Array');
    this.#sizeCheck(k, value.length);
    this.#begin();
    this.#stats.puts++;
    try {
      await this.#install(k, cacheName(key, k), value, false);
    } finally {
      this.#end();
    }
  }

  /** Deletes the key (a tombstone item; the slot stays the key's). A no-op when the key is absent. */
  async delete(key: string | Uint8Array): Promise<void> {
    const k = this.#key(key);
    this.#begin();
    this.#stats.deletes++;
    try {
      await this.#install(k, cacheName(key, k), new Uint8Array(0), true);
    } finally {
      this.#end();
    }
  }

  async #install(k: Uint8Array, name: string, value: Uint8Array, tombstone: boolean): Promise<void> {
    const g = this.geometry;
    const cls = classFor(g, itemBytes(k.length, value.length))!;
    const f = this.faults;
    let refilled = false;
    for (let attempt = 0; attempt <= this.options.casRetriesMax; attempt++) {
      let ref = this.#cache.get(name);
      if (ref === undefined) {
        const loc = await this.#locate(k);
        if (loc.kind === 'full') {
          if (tombstone) return;
          throw new PmrpcError(KvErrorCodes.INDEX_FULL, `every slot of the probe window of key ${name} belongs to another key`);
        }
        if (tombstone && loc.kind === 'free') return; // absent: nothing to delete (no slot of the window ever held the key)
        if (tombstone && loc.kind === 'found' && loc.item.tombstone) {
          // Deleted already — but maybe by a chain whose FLUSH has not run: the tombstone must be
          // durable before this DELETE is acknowledged as done (one more round trip, only here).
          if (!f.deleteNoopWithoutFlush) check((await this.#post([Wr.flush('persistent', this.rkey, { addr: slotOffset(g, homeSlot(g, k)), len: (loc.ref.slot - homeSlot(g, k) + 1) * SLOT_BYTES })]))[0]!);
          return;
        }
        ref = loc.ref;
      }
      const version = ref.version + 1n;
      const item = encodeItem({ key: k, value, version, tombstone });
      const meta = new Uint8Array(16);
      new DataView(meta.buffer).setBigUint64(0, BigInt(cls.sizeBytes), true);
      new DataView(meta.buffer).setBigUint64(8, version, true);
      const slotLoc = this.#slot(ref.slot);
      const chain: WorkRequest[] = [Wr.write({ scratch: SCRATCH_META }, meta), Wr.allocate(this.rkey, cls.sizeBytes, item, { redirect: SCRATCH_PTR })];
      if (!f.dropHeapFlush) chain.push(Wr.flush('persistent', this.rkey, { addr: cls.offset, len: cls.sizeBytes * cls.count }, { conditional: true }));
      const casAt = chain.length;
      chain.push(
        f.blindCas
          ? Wr.prismCasFrom('eq', slotLoc, { scratch: SCRATCH_PTR }, SLOT_CAS_BYTES, { conditional: !f.unconditionalCas, compareMask: NO_MASK })
          : Wr.prismCasFrom('gt', slotLoc, { scratch: SCRATCH_PTR }, SLOT_CAS_BYTES, { conditional: !f.unconditionalCas, compareMask: VERSION_MASK }),
      );
      const flushAt = chain.length;
      // The index FLUSH covers the window from home to the slot: the slots this PUT went past
      // (claimed by other keys, maybe by chains whose own FLUSH has not run yet: their CAS results
      // are in host memory, where this FLUSH reaches them) are durable before it is acknowledged —
      // else a crash could empty one and end the probe before this key (DESIGN §5).
      const from = f.narrowIndexFlush ? ref.slot : homeSlot(g, k);
      if (!f.dropIndexFlush) chain.push(Wr.flush('persistent', this.rkey, { addr: slotOffset(g, from), len: (ref.slot - from + 1) * SLOT_BYTES }, { conditional: true }));
      chain.push(Wr.read({ scratch: SCRATCH_PTR }, 8));
      const cs = await this.#post(chain);
      const alloc = check(cs[1]!);
      const cas = check(cs[casAt]!);
      if (cas.status === 'ok' && cas.swapped === true) {
        if (!f.dropIndexFlush) check(cs[flushAt]!);
        const old = decodeSlot(cas.data!);
        if (old.ptr !== g.base && old.ptr > 0) this.#pendingReturns.push(old.ptr);
        this.#cache.set(name, { slot: ref.slot, version });
        if (this.#pendingReturns.length >= this.options.returnBatch) await this.flushReturns();
        return;
      }
      if (alloc.status !== 'ok') {
        if (alloc.code === NicErrorCodes.ALLOC_REFUSED) throw new PmrpcError(KvErrorCodes.RECOVERING, 'the server is rebuilding its free lists after a crash; retry later');
        if (refilled || this.#pendingReturns.length === 0) throw new PmrpcError(KvErrorCodes.FULL, `no free ${cls.sizeBytes}-byte buffer`);
        refilled = true;
        await this.flushReturns();
        attempt--;
        continue;
      }
      // A concurrent writer moved the slot: the new buffer was never linked; give it back.
      const got = check(cs[cs.length - 1]!).data!;
      const mine = Number(new DataView(got.buffer, got.byteOffset, got.byteLength).getBigUint64(0, true));
      this.#pendingReturns.push(mine);
      this.#stats.casRetries++;
      // A slot that held this key holds it for good (slots are never handed to another key), so
      // the CAS's old value is the version to try next: no re-read. A slot that was free may have
      // gone to another key: locate again.
      const now = cas.status === 'ok' ? decodeSlot(cas.data!) : undefined;
      if (ref.version > 0n && now !== undefined && now.ptr !== g.base) this.#cache.set(name, { slot: ref.slot, version: now.version });
      else this.#cache.delete(name);
    }
    throw new PmrpcError(KvErrorCodes.CONTENDED, `key ${name}: ${this.options.casRetriesMax + 1} CAS attempts lost to concurrent writers`);
  }

  /** One round trip: the whole window, to find the key's slot or the first free slot. */
  async #locate(k: Uint8Array): Promise<Located> {
    const g = this.geometry;
    const home = homeSlot(g, k);
    for (let attempt = 0; attempt <= this.options.readRetriesMax; attempt++) {
      if (attempt > 0) this.#stats.readRetries++;
      const wrs: WorkRequest[] = [];
      for (let i = home; i < home + g.probeSlots; i++) wrs.push(Wr.read(this.#slot(i), this.#maxRead, { bounded: true }));
      const cs = await this.#post(wrs);
      let torn = false;
      for (let j = 0; j < cs.length; j++) {
        const data = check(cs[j]!).data!;
        if (data.length === 0) return { kind: 'free', ref: { slot: home + j, version: 0n } };
        const item = decodeItem(data);
        if (item === undefined) {
          torn = true;
          break;
        }
        if (bytesEqual(item.key, k)) return { kind: 'found', ref: { slot: home + j, version: item.version }, item };
      }
      if (!torn) return { kind: 'full' };
    }
    throw new PmrpcError(KvErrorCodes.CORRUPT, `the window of key ${show(k)} kept failing its checksum`);
  }

  // ---------------------------------------------------------------- the return RPC

  /** Sends every pending replaced buffer back to the server (batched SENDs, each one round trip). Returns how many the server took. */
  async flushReturns(): Promise<number> {
    while (this.#returning !== undefined) await this.#returning;
    let taken = 0;
    const run = async (): Promise<void> => {
      while (this.#pendingReturns.length > 0) {
        const ptrs = this.#pendingReturns.splice(0, Math.min(RETURN_BATCH_MAX, this.#pendingReturns.length));
        const payload = new Uint8Array(16 + ptrs.length * 8);
        const dv = new DataView(payload.buffer);
        dv.setBigUint64(0, this.#epoch, true);
        dv.setUint32(8, ptrs.length, true);
        ptrs.forEach((p, i) => dv.setBigUint64(16 + i * 8, BigInt(p), true));
        this.options.onReturnBatch?.(payload);
        const reply = new Promise<NotifyMessage>((resolve, reject) => (this.#notifyWaiter = { resolve, reject }));
        reply.catch(() => undefined); // awaited below unless the SEND itself fails
        this.#stats.roundTrips++;
        this.#stats.returnRpcs++;
        const [c] = await this.qp.postChain([Wr.send(payload, RETURN_IMM)]);
        check(c!);
        const m = await reply;
        const rdv = new DataView(m.data.buffer, m.data.byteOffset, m.data.byteLength);
        taken += m.data.length >= 8 ? rdv.getUint32(0, true) : 0;
        this.#stats.returnsRefused += m.data.length >= 8 ? rdv.getUint32(4, true) : ptrs.length;
        if (m.imm === RETURN_STALE_IMM) {
          // The server restarted: recovery reclaimed every unlinked buffer. Forget them and the slot cache.
          await this.refresh();
          return;
        }
        if (m.imm !== RETURN_ACK_IMM) throw new PmrpcError(KvErrorCodes.RETURN_REFUSED, `unexpected reply ${String(m.imm)} to a return batch`);
      }
    };
    this.#returning = run();
    try {
      await this.#returning;
    } finally {
      this.#returning = undefined;
    }
    return taken;
  }

  /** Re-reads the epoch; drops the slot cache and the pending returns when the server restarted. */
  async refresh(): Promise<void> {
    this.#stats.roundTrips++;
    const b = await this.qp.read({ rkey: this.rkey, addr: this.geometry.base + KV_EPOCH_OFFSET }, 8);
    const epoch = new DataView(b.buffer, b.byteOffset).getBigUint64(0, true);
    if (epoch !== this.#epoch) {
      this.#epoch = epoch;
      this.#cache.clear();
      this.#pendingReturns.length = 0;
    }
  }

  // ---------------------------------------------------------------- helpers

  #key(key: string | Uint8Array): Uint8Array {
    const k = typeof key === 'string' ? encoder.encode(key) : key;
    if (!(k instanceof Uint8Array)) throw new TypeError('key must be a string or a Uint8Array');
    if (k.length === 0 || k.length > this.geometry.keyBytesMax) throw new PmrpcError(KvErrorCodes.KEY_TOO_LONG, `a key holds 1..${this.geometry.keyBytesMax} bytes, got ${k.length}`);
    return k;
  }

  #sizeCheck(k: Uint8Array, valueLen: number): void {
    if (itemBytes(k.length, valueLen) > this.#maxRead) {
      throw new PmrpcError(KvErrorCodes.VALUE_TOO_LARGE, `an item of ${itemBytes(k.length, valueLen)} bytes (key ${k.length}, value ${valueLen}) exceeds the largest size class (${this.#maxRead} bytes)`);
    }
  }

  #slot(i: number): { rkey: number; addr: number } {
    return { rkey: this.rkey, addr: slotOffset(this.geometry, i) };
  }

  #begin(): void {
    this.#opRtts = 0;
  }

  #end(): void {
    this.#stats.lastOpRoundTrips = this.#opRtts;
  }

  #post(wrs: WorkRequest[]): Promise<Completion[]> {
    this.#stats.roundTrips++;
    this.#opRtts++;
    return this.qp.postChain(wrs);
  }
}

/** A completion that is not an error; 'error' (QP broken: bad rkey, out of bounds…) throws its code. */
function check(c: Completion): Completion {
  if (c.status === 'error') throw new PmrpcError((c.code ?? NicErrorCodes.WR_FAILED) as ErrorCode, `${c.op} failed: ${c.message ?? 'error'}`);
  return c;
}

/** The slot-cache key: the caller's string, or the hex of its bytes (a cache entry is only a hint: the CAS checks it). */
function cacheName(key: string | Uint8Array, k: Uint8Array): string {
  return typeof key === 'string' ? key : `#${show(k)}`;
}

function show(k: Uint8Array): string {
  return Buffer.from(k).toString('hex');
}

const KV_CLIENT_CHECKS: OptionChecks<KvClientOptions> = {
  returnBatch: intIn(1, RETURN_BATCH_MAX),
  casRetriesMax: intIn(0, 1024),
  readRetriesMax: intIn(0, 1024),
  onReturnBatch: optional(callable()),
};

function resolveClientOptions(options: Partial<KvClientOptions>): KvClientOptions {
  return resolveOptions(KV_CLIENT_DEFAULTS, options, KV_CLIENT_CHECKS);
}
