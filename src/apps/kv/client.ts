/**
 * The PRISM-KV client: GET, PUT and DELETE as NIC chains over any Link (QueuePair), no server CPU.
 *
 * GET    1 RTT: bounded indirect READ of the key's cached slot, else its home slot (the bound =
 *        the item's buffer size), then FLUSH(persistent) of that slot in the same message: what a
 *        GET returns is durable (DESIGN §5: a read never returns state a crash can take back). A
 *        slot once claimed is its key's for good, so a cached slot is exact wherever the key sits.
 *        Uncached, past home: the rest of the probe sequence (layout.ts probeSequence: groups of 4
 *        slots at hashed positions) in bounded stages (probeStages), each READs + FLUSHes.
 * PUT    1 RTT with a cached slot (slot index + version): WRITE scratch[8..24) ← (bound, version+1);
 *        ALLOCATE → redirect scratch[0]; FLUSH(persistent) heap (conditional); CAS 'gt' on the
 *        version word with dataIndirect from scratch (conditional); FLUSH(persistent) slot
 *        (conditional) — over the probe sequence from home to the slot, one FLUSH per run of
 *        contiguous slots, so the slots it went past (maybe claimed by a chain whose own FLUSH has
 *        not run) are durable too; READ scratch[0] (the allocated address, to return it if the CAS
 *        lost). Without a cached slot, 1 RTT (group 0) or more before it to locate the key.
 * DELETE the same chain with a tombstone item: a slot, once claimed by a key, stays that key's. A
 *        no-op when the key is absent (located first when only its free slot is cached).
 *
 * Dropped connections (options.reconnect): a chain whose connection dropped is posted again on a
 * new connection to the live server, except a PUT / DELETE chain, which may or may not have run (it
 * may even run later: the server's NIC executes what reached it). Its outcome is resolved first
 * (#resolve: a FLUSHed READ of the slot), so it takes effect once or the client says it is
 * indeterminate (PMRPC_ERR_KV_INDETERMINATE). Buffer returns are idempotent batches (apps/shared/returns.ts
 * ReturnSender), sent again after the reconnect.
 *
 * Why CAS 'gt' and not 'eq': PRISM's CAS has one operand for compare and swap; an 'eq' can only
 * swap bytes it does not compare. Versions of a slot only grow, so `seen + 1 > current` holds
 * exactly when current == seen: it is the eq-on-last-seen test, and it swaps the new version in.
 */
import { callable, cryptoEntropy, intIn, optional, PmrpcError, resolveOptions, systemClock, type Clock, type Entropy, type ErrorCode, type OptionChecks } from '../../../pmem/index.js';
import { NicErrorCodes, QueuePair, Wr, type Completion, type WorkRequest } from '../../../flush/index.js';
import { parseJsonBytes, untilReachable } from '../index.js';
import { NO_KV_FAULTS, type KvFaults } from './faults.js';
import {
  ITEM_HEADER_BYTES,
  KV_EPOCH_OFFSET,
  KV_HEADER_BYTES,
  KvErrorCodes,
  MAILBOX_BUFFER_BYTES,
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
  probeSequence,
  probeStages,
  slotOffset,
  slotRuns,
  type KvGeometry,
} from './layout.js';
import { RETURN_ACK_IMM, RETURN_IMM, RETURN_STALE_IMM } from './server.js';
import { ReturnSender, returnHeaderBytes } from '../shared/index.js';

/** How a client gets a new connection to its (live) server: undefined when not reachable now; a throw ends the wait. */
export type KvReconnect = () => { qp: QueuePair; welcome: Uint8Array } | undefined | Promise<{ qp: QueuePair; welcome: Uint8Array } | undefined>;

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
  /** The sender id of this client's return batches (unique among the server's clients, >= 1); default drawn from `entropy`. */
  clientId: number | undefined;
  entropy: Entropy;
  /** Time for the bounded reconnect waits (the logical clock in the explorer). */
  clock: Clock;
  /** Reconnects to the server when the connection dropped (undefined: an operation on a closed connection fails with PMRPC_ERR_LINK_CLOSED). */
  reconnect: KvReconnect | undefined;
  /** Longest wait for a reconnect, per attempt, before the operation fails. */
  reconnectWaitMs: number;
  /** Pause between reconnect tries (and between resolutions of a PUT whose answer a drop lost). */
  retryDelayMs: number;
  /** Reconnects one operation may make. */
  reconnectsMax: number;
}

export const KV_CLIENT_DEFAULTS: Readonly<KvClientOptions> = Object.freeze({
  returnBatch: 32,
  casRetriesMax: 16,
  readRetriesMax: 8,
  faults: Object.freeze({}),
  onReturnBatch: undefined,
  clientId: undefined,
  entropy: cryptoEntropy,
  clock: systemClock,
  reconnect: undefined,
  reconnectWaitMs: 2000,
  retryDelayMs: 1,
  reconnectsMax: 8,
});

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
  /** New connections made after a drop. */
  reconnects: number;
  /**
   * PUT / DELETE chains posted whose answer a dropped connection lost (resolved by #resolve). Each
   * may leave one buffer unlinked that the client cannot name (the one its ALLOCATE took, or the one
   * its CAS replaced): it stays allocated until the server's next recovery, as a crashed client's.
   */
  uncertainInstalls: number;
  /** Operations that ended PMRPC_ERR_KV_INDETERMINATE. */
  indeterminate: number;
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
  readonly geometry: KvGeometry;
  readonly options: Readonly<KvClientOptions>;
  readonly faults: Readonly<KvFaults>;
  readonly clientId: bigint;
  #qp: QueuePair;
  #rkey: number;
  #epoch: bigint;
  #cache = new Map<string, SlotRef>();
  #returns: ReturnSender;
  #stats: KvClientStats = { roundTrips: 0, lastOpRoundTrips: 0, gets: 0, puts: 0, deletes: 0, casRetries: 0, readRetries: 0, returnRpcs: 0, returnsRefused: 0, reconnects: 0, uncertainInstalls: 0, indeterminate: 0 };
  #opRtts = 0;
  #reconnectsLeft = 0;
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
    this.#qp = qp;
    this.#rkey = rkey;
    this.geometry = g;
    this.options = Object.freeze(o);
    this.faults = Object.freeze({ ...NO_KV_FAULTS, ...o.faults });
    this.clientId = o.clientId !== undefined ? BigInt(o.clientId) : drawClientId(o.entropy);
    this.#epoch = epoch;
    this.#maxRead = g.classes[g.classes.length - 1]!.sizeBytes;
    this.#returns = new ReturnSender({
      imms: { batch: RETURN_IMM, ack: RETURN_ACK_IMM, stale: RETURN_STALE_IMM },
      batchMax: (MAILBOX_BUFFER_BYTES - returnHeaderBytes(true)) / 8,
      sender: this.clientId,
      dropUnanswered: this.faults.dropUnansweredReturns,
      onBatch: o.onReturnBatch,
    });
    this.#returns.attach(qp, epoch);
  }

  /** The current connection (a new one after each reconnect). */
  get qp(): QueuePair {
    return this.#qp;
  }

  get rkey(): number {
    return this.#rkey;
  }

  get stats(): Readonly<KvClientStats> {
    const r = this.#returns.stats;
    return { ...this.#stats, roundTrips: this.#stats.roundTrips + r.rpcs, returnRpcs: r.rpcs, returnsRefused: r.refused };
  }

  get epoch(): bigint {
    return this.#epoch;
  }

  /** Replaced buffers not yet returned (an unanswered batch's included). */
  get pendingReturns(): number {
    return this.#returns.held;
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
      for (let attempt = 0; attempt <= this.options.readRetriesMax; attempt++) {
        if (attempt > 0) this.#stats.readRetries++;
        // A cached slot first: a slot, once claimed by a key, stays that key's for good, so a slot
        // this client saw holding the key still holds it (1 READ + its FLUSH, wherever the key sits
        // in its sequence). The slots before it in the sequence were durably claimed by other keys
        // when it was cached (the FLUSHes of the operation that cached it) and stay theirs. A cached
        // slot that was the key's first free one and is still free: the key is absent; taken by
        // another key since: probe.
        const cached = this.#cache.get(name);
        if (cached !== undefined) {
          const cs = await this.#safe(this.#durableReads([cached.slot]));
          for (const x of cs.slice(1)) check(x); // a value is returned only once its FLUSH completed
          const r = this.#classify(k, cached.slot, check(cs[0]!).data!);
          if (r === 'torn') continue;
          if (r !== 'other' && (r.item !== undefined || cached.version === 0n)) return this.#answer(name, r);
          this.#cache.delete(name);
        }
        // Uncached: the probe sequence in stages (layout.ts probeStages): the home slot, then the
        // rest of group 0 with group 1, then 16 slots at a time, until the key or an empty slot.
        // (The sequence is computed only past the home slot: stage 1 needs homeSlot alone.)
        let seq: number[] | undefined;
        let torn = false;
        for (const [from, to] of probeStages(g.probeSlots, g.groupSlots)) {
          if (from > 0) seq ??= probeSequence(g, k);
          if (seq !== undefined && from >= seq.length) break;
          const slots = seq === undefined ? [homeSlot(g, k)] : seq.slice(from, to);
          const cs = await this.#safe(this.#durableReads(slots));
          for (const x of cs.slice(slots.length)) check(x);
          for (let j = 0; j < slots.length && !torn; j++) {
            const r = this.#classify(k, slots[j]!, check(cs[j]!).data!);
            if (r === 'torn') torn = true;
            else if (r !== 'other') return this.#answer(name, r);
          }
          if (torn) break;
        }
        if (!torn) return undefined;
      }
      throw new PmrpcError(KvErrorCodes.CORRUPT, `the item of key ${show(k)} failed its checksum ${this.options.readRetriesMax + 1} times`);
    } finally {
      this.#end();
    }
  }

  #classify(k: Uint8Array, slot: number, data: Uint8Array): 'torn' | 'other' | { slot: number; item: ReturnType<typeof decodeItem> } {
    if (data.length === 0) return { slot, item: undefined }; // an empty slot ends the probe: the key is absent
    const item = decodeItem(data);
    if (item === undefined) return 'torn';
    return bytesEqual(item.key, k) ? { slot, item } : 'other';
  }

  /**
   * Bounded READs of `slots`, then FLUSH(persistent) over those slots (one per run of contiguous
   * slots), in one message: what the READs returned is durable before the client sees it (DESIGN
   * §5). A READ sees host memory — media or dirty CPU lines, never another QP's undrained NIC-cache
   * entry (DESIGN §2.2 (i)) — and FLUSH(persistent, range) writes back every dirty line of its
   * range whoever wrote it (§2.2 (iii)), so the slot words read are durable (or superseded by newer
   * ones) once it completes. The items they point at need no FLUSH: every writer's chain FLUSHes
   * its item before its CAS can make a pointer to it visible. Completions: the READs, then the FLUSHes.
   */
  #durableReads(slots: readonly number[]): WorkRequest[] {
    const wrs: WorkRequest[] = slots.map((i) => Wr.read(this.#slot(i), this.#maxRead, { bounded: true }));
    if (!this.faults.getWithoutFlush) wrs.push(...this.#flushes(slots, false));
    return wrs;
  }

  /** FLUSH(persistent) over `slots`: one per run of contiguous slots (layout.ts slotRuns). */
  #flushes(slots: readonly number[], conditional: boolean): WorkRequest[] {
    return slotRuns(slots).map((r) => Wr.flush('persistent', this.rkey, { addr: slotOffset(this.geometry, r.first), len: r.count * SLOT_BYTES }, conditional ? { conditional: true } : {}));
  }

  /** The slots of the key's probe sequence up to and including `slot` (what a PUT that installs there went past). */
  #passed(k: Uint8Array, slot: number): number[] {
    const g = this.geometry;
    const home = homeSlot(g, k);
    // Group 0 is the sequence's first groupSlots slots (contiguous, never deduplicated).
    if (slot >= home && slot < home + g.groupSlots) return Array.from({ length: slot - home + 1 }, (_, j) => home + j);
    const seq = probeSequence(g, k);
    const at = seq.indexOf(slot);
    if (at < 0) throw new PmrpcError(KvErrorCodes.CORRUPT, `slot ${slot} is not in the probe sequence of key ${show(k)}`);
    return seq.slice(0, at + 1);
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
    /** A chain of this operation was posted with this slot and its answer lost with the connection: it may have installed the item at ref.version + 1. */
    let uncertain: SlotRef | undefined;
    for (let attempt = 0; attempt <= this.options.casRetriesMax; attempt++) {
      if (this.#qp.link.closed === true) await this.#ready(undefined); // a new connection (and rkey) before the chain is built
      let ref = this.#cache.get(name);
      // A DELETE never installs into a slot cached free (a GET that found the key absent): it would
      // claim the slot and an arena item for a key never written. It locates: absent, a no-op.
      if (tombstone && ref !== undefined && ref.version === 0n) ref = undefined;
      if (uncertain !== undefined) {
        ref = uncertain;
        const r = await this.#resolve(k, ref, value, tombstone);
        if (r === 'mine') {
          this.#cache.set(name, { slot: ref.slot, version: ref.version + 1n });
          return;
        }
        if (r === 'moved') {
          this.#stats.indeterminate++;
          throw new PmrpcError(KvErrorCodes.INDETERMINATE, `key ${name}: the connection dropped before the answer of a ${tombstone ? 'DELETE' : 'PUT'}, and its slot has moved on since: it may or may not have happened`);
        }
        if (r !== 'unchanged') {
          // Not ours, and it never will be (the slot's version passed the one our lost chain compares against).
          uncertain = undefined;
          if (r.version > 0n) this.#cache.set(name, { slot: ref.slot, version: r.version });
          else this.#cache.delete(name);
          continue;
        }
        // 'unchanged': the lost chain has not swapped (yet); the same-version chain below swaps at most once for both.
      }
      if (ref === undefined) {
        const loc = await this.#locate(k);
        if (loc.kind === 'full') {
          if (tombstone) return;
          throw new PmrpcError(KvErrorCodes.INDEX_FULL, `every slot of the probe sequence of key ${name} belongs to another key`);
        }
        if (tombstone && loc.kind === 'free') return; // absent: nothing to delete (no slot of the sequence ever held the key)
        if (tombstone && loc.kind === 'found' && loc.item.tombstone) {
          // Deleted already — but maybe by a chain whose FLUSH has not run: the tombstone must be
          // durable before this DELETE is acknowledged as done (one more round trip, only here).
          if (!f.deleteNoopWithoutFlush) for (const c of await this.#safe(this.#flushes(this.#passed(k, loc.ref.slot), false))) check(c);
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
      // The index FLUSH covers the probe sequence from the home slot to the slot, one FLUSH per
      // run of contiguous slots (each group range it went past, the last one up to the slot): the
      // slots this PUT went past (claimed by other keys, maybe by chains whose own FLUSH has not run
      // yet: their CAS results are in host memory, where this FLUSH reaches them) are durable
      // before it is acknowledged — else a crash could empty one and end the probe before this key
      // (DESIGN §5).
      const passed = f.narrowIndexFlush ? [ref.slot] : this.#passed(k, ref.slot);
      // (Mutant finalGroupIndexFlush: only the run that holds the slot.)
      const last = f.finalGroupIndexFlush ? slotRuns(passed).find((r) => ref!.slot >= r.first && ref!.slot < r.first + r.count)! : undefined;
      if (!f.dropIndexFlush) chain.push(...this.#flushes(last === undefined ? passed : passed.filter((x) => x >= last.first && x < last.first + last.count), true));
      const flushEnd = chain.length;
      chain.push(Wr.read({ scratch: SCRATCH_PTR }, 8));
      let cs: Completion[];
      try {
        cs = await this.#post(chain);
      } catch (e) {
        if (!this.#dropped(e)) throw e;
        // The chain may or may not have run (and may still run): resolved after the reconnect, before anything else.
        uncertain = f.retryUncertainPut ? undefined : ref; // the mutant posts it again as if new
        this.#stats.uncertainInstalls++;
        await this.#ready(e);
        continue;
      }
      const alloc = check(cs[1]!);
      const cas = check(cs[casAt]!);
      if (cas.status === 'ok' && cas.swapped === true) {
        for (const x of cs.slice(flushAt, flushEnd)) check(x);
        const old = decodeSlot(cas.data!);
        if (old.ptr !== g.base && old.ptr > 0) this.#returns.push(old.ptr);
        this.#cache.set(name, { slot: ref.slot, version });
        if (this.#returns.pending >= this.options.returnBatch) await this.flushReturns();
        return;
      }
      if (alloc.status !== 'ok') {
        if (alloc.code === NicErrorCodes.ALLOC_REFUSED) throw new PmrpcError(KvErrorCodes.RECOVERING, 'the server is rebuilding its free lists after a crash; retry later');
        if (refilled || this.#returns.held === 0) throw new PmrpcError(KvErrorCodes.FULL, `no free ${cls.sizeBytes}-byte buffer`);
        refilled = true;
        await this.flushReturns();
        attempt--;
        continue;
      }
      // A concurrent writer moved the slot: the new buffer was never linked; give it back.
      const got = check(cs[cs.length - 1]!).data!;
      const mine = Number(new DataView(got.buffer, got.byteOffset, got.byteLength).getBigUint64(0, true));
      this.#returns.push(mine);
      this.#stats.casRetries++;
      if (uncertain !== undefined) {
        // The slot is past the version we compare against (maybe by the lost chain, its result not drained yet): resolve again.
        await this.#sleep(this.options.retryDelayMs);
        continue;
      }
      // A slot that held this key holds it for good (slots are never handed to another key), so
      // the CAS's old value is the version to try next: no re-read. A slot that was free may have
      // gone to another key: locate again.
      const now = cas.status === 'ok' ? decodeSlot(cas.data!) : undefined;
      if (ref.version > 0n && now !== undefined && now.ptr !== g.base) this.#cache.set(name, { slot: ref.slot, version: now.version });
      else this.#cache.delete(name);
    }
    if (uncertain !== undefined) {
      this.#stats.indeterminate++;
      throw new PmrpcError(KvErrorCodes.INDETERMINATE, `key ${name}: the connection dropped before the answer of a ${tombstone ? 'DELETE' : 'PUT'}, and ${this.options.casRetriesMax + 1} attempts did not resolve it: it may or may not have happened`);
    }
    throw new PmrpcError(KvErrorCodes.CONTENDED, `key ${name}: ${this.options.casRetriesMax + 1} CAS attempts lost to concurrent writers`);
  }

  /**
   * The outcome of a PUT / DELETE chain whose answer a drop lost (it compared against `ref.version`
   * and installs ref.version + 1): a FLUSHed READ of the window from home to the slot (what it shows
   * is durable, as a GET's). 'mine': the slot holds the item we meant at that version (ours, or an
   * equal item of another writer — linearizable either way). A version other than ours there: ours
   * never swapped and never will. 'unchanged': the lost chain has not swapped so far (it may later).
   * 'moved': the slot went further, and whether ours was one of the steps cannot be told.
   */
  async #resolve(k: Uint8Array, ref: SlotRef, value: Uint8Array, tombstone: boolean): Promise<'mine' | 'unchanged' | 'moved' | { version: bigint }> {
    const passed = this.#passed(k, ref.slot);
    for (let attempt = 0; attempt <= this.options.readRetriesMax; attempt++) {
      if (attempt > 0) this.#stats.readRetries++;
      const wrs = [Wr.read(this.#slot(ref.slot), this.#maxRead, { bounded: true }), ...this.#flushes(passed, false)];
      const cs = await this.#safe(wrs);
      for (const x of cs.slice(1)) check(x);
      const data = check(cs[0]!).data!;
      if (data.length === 0) return ref.version === 0n ? 'unchanged' : 'moved';
      const item = decodeItem(data);
      if (item === undefined) continue; // torn: read again
      if (!bytesEqual(item.key, k)) return ref.version === 0n ? { version: 0n } : 'moved'; // a free slot another key claimed (locate again)
      if (item.version === ref.version) return 'unchanged';
      if (item.version !== ref.version + 1n) return 'moved';
      return item.tombstone === tombstone && bytesEqual(item.value, value) ? 'mine' : { version: item.version };
    }
    throw new PmrpcError(KvErrorCodes.CORRUPT, `the item of key ${show(k)} failed its checksum ${this.options.readRetriesMax + 1} times`);
  }

  /**
   * The probe sequence in stages (one round trip each: group 0 whole, then 16 slots at a time;
   * no FLUSH: the PUT chain's index FLUSH covers what it went past), to find the key's slot or the
   * first free slot.
   */
  async #locate(k: Uint8Array): Promise<Located> {
    const g = this.geometry;
    const home = homeSlot(g, k);
    let seq: number[] | undefined; // computed only past group 0 (the sequence's first groupSlots slots)
    for (let attempt = 0; attempt <= this.options.readRetriesMax; attempt++) {
      if (attempt > 0) this.#stats.readRetries++;
      let torn = false;
      for (const [from, to] of probeStages(g.probeSlots, g.groupSlots, g.groupSlots)) {
        if (from > 0) seq ??= probeSequence(g, k);
        if (seq !== undefined && from >= seq.length) break;
        const slots = seq === undefined ? Array.from({ length: to - from }, (_, j) => home + j) : seq.slice(from, to);
        const cs = await this.#safe(slots.map((i) => Wr.read(this.#slot(i), this.#maxRead, { bounded: true })));
        for (let j = 0; j < cs.length; j++) {
          const data = check(cs[j]!).data!;
          if (data.length === 0) return { kind: 'free', ref: { slot: slots[j]!, version: 0n } };
          const item = decodeItem(data);
          if (item === undefined) {
            torn = true;
            break;
          }
          if (bytesEqual(item.key, k)) return { kind: 'found', ref: { slot: slots[j]!, version: item.version }, item };
        }
        if (torn) break;
      }
      if (!torn) return { kind: 'full' };
    }
    throw new PmrpcError(KvErrorCodes.CORRUPT, `the probe sequence of key ${show(k)} kept failing its checksum`);
  }

  // ---------------------------------------------------------------- the return RPC

  /**
   * Sends every pending replaced buffer back to the server (idempotent batches, apps/shared/returns.ts
   * ReturnSender; reconnecting first when the connection dropped with returns held, and again when
   * it drops during this flush, leaving a batch unanswered: at most `reconnectsMax` reconnects).
   * Returns how many the server took.
   */
  async flushReturns(): Promise<number> {
    let accepted = 0;
    for (let round = 0; ; round++) {
      if (this.#returns.held > 0 && !this.#live() && this.options.reconnect !== undefined) {
        if (round === 0) this.#reconnectsLeft = this.options.reconnectsMax;
        try {
          await this.#ready(undefined);
        } catch {
          return accepted; // not reachable now: the returns stay held
        }
      }
      const r = await this.#returns.flush();
      accepted += r.accepted;
      // The server restarted: recovery reclaimed every unlinked buffer (the sender forgot them). Forget the slot cache.
      if (r.stale) await this.refresh();
      if (r.unexpected !== undefined) throw new PmrpcError(KvErrorCodes.RETURN_REFUSED, `unexpected reply ${String(r.unexpected)} to a return batch`);
      // The connection dropped during this flush (a batch unanswered, or buffers left): reconnect and send them again
      // (#ready throws once the reconnects are used up; a QP in the error state, not a drop, is not retried).
      if (this.#returns.held === 0 || this.#qp.link.closed !== true || this.options.reconnect === undefined) return accepted;
    }
  }

  /** Re-reads the epoch; drops the slot cache and the pending returns when the server restarted. */
  async refresh(): Promise<void> {
    this.#stats.roundTrips++;
    const b = await this.#qp.read({ rkey: this.#rkey, addr: this.geometry.base + KV_EPOCH_OFFSET }, 8);
    const epoch = new DataView(b.buffer, b.byteOffset).getBigUint64(0, true);
    if (epoch !== this.#epoch) {
      this.#epoch = epoch;
      this.#cache.clear();
      this.#returns.renew(epoch);
    }
  }

  // ---------------------------------------------------------------- connections

  #live(): boolean {
    return this.#qp.link.closed !== true && this.#qp.state !== 'error';
  }

  /** Whether `e` is the connection closing under a chain (a drop, when the client reconnects). */
  #dropped(e: unknown): boolean {
    return this.options.reconnect !== undefined && !this.faults.noReconnect && e instanceof PmrpcError && e.code === NicErrorCodes.LINK_CLOSED && this.#qp.link.closed === true;
  }

  /**
   * A live connection: the current one, or a new one (options.reconnect, bounded by reconnectsMax
   * per operation and reconnectWaitMs per reconnect). Throws `cause` (or LINK_CLOSED) when none.
   */
  async #ready(cause: unknown): Promise<void> {
    const { reconnect, clock, reconnectWaitMs, retryDelayMs } = this.options;
    // Without reconnects (or with the QP in the error state: a protocol failure, not a drop) the chain fails as it would.
    if (this.#qp.link.closed !== true || reconnect === undefined) return;
    const fail = (): Error => (cause instanceof Error ? cause : new PmrpcError(NicErrorCodes.LINK_CLOSED, `the connection to the KV server (QP ${this.#qp.qpn}) is closed`));
    if (this.faults.noReconnect || this.#reconnectsLeft <= 0) throw fail();
    this.#reconnectsLeft--;
    const up = await untilReachable(clock, reconnectWaitMs, retryDelayMs, async () => {
      const c = await reconnect();
      return c !== undefined && (await this.#attach(c));
    });
    if (!up) throw fail();
    this.#stats.reconnects++;
  }

  /** Takes a new connection: its welcome, then the header (epoch) over it. False when it closed meanwhile. */
  async #attach(c: { qp: QueuePair; welcome: Uint8Array }): Promise<boolean> {
    if (!(c.qp instanceof QueuePair)) throw new TypeError('reconnect must return { qp: QueuePair, welcome }');
    const w = parseJsonBytes(c.welcome);
    if (w === undefined || w.system !== 'prism' || w.base !== this.geometry.base || !Number.isSafeInteger(w.rkey)) {
      c.qp.close();
      throw new PmrpcError(KvErrorCodes.NOT_FORMATTED, 'the reconnect welcome is not the PRISM-KV area this client used');
    }
    let epoch: bigint;
    try {
      this.#stats.roundTrips++;
      const h = await c.qp.read({ rkey: w.rkey as number, addr: this.geometry.base }, KV_HEADER_BYTES);
      decodeKvHeader(h, this.geometry.base);
      epoch = new DataView(h.buffer, h.byteOffset).getBigUint64(KV_EPOCH_OFFSET, true);
    } catch (e) {
      if (e instanceof PmrpcError && e.code === NicErrorCodes.LINK_CLOSED) return false;
      throw e;
    }
    this.#qp = c.qp;
    this.#rkey = w.rkey as number;
    if (epoch !== this.#epoch) this.#cache.clear(); // the server restarted (the sender forgets its returns below)
    this.#epoch = epoch;
    this.#returns.attach(c.qp, epoch);
    return true;
  }

  #sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => this.options.clock.setTimer(ms, resolve));
  }

  /** A chain that may run twice (reads, FLUSHes): posted again on a new connection when the connection dropped under it. */
  async #safe(wrs: WorkRequest[]): Promise<Completion[]> {
    for (;;) {
      // Only when the link closed: an await here would let the caller's first chain go out a turn later.
      if (this.#qp.link.closed === true) await this.#ready(undefined);
      try {
        return await this.#post(wrs);
      } catch (e) {
        if (!this.#dropped(e)) throw e;
        await this.#ready(e);
      }
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
    this.#reconnectsLeft = this.options.reconnectsMax;
  }

  #end(): void {
    this.#stats.lastOpRoundTrips = this.#opRtts;
  }

  #post(wrs: WorkRequest[]): Promise<Completion[]> {
    this.#stats.roundTrips++;
    this.#opRtts++;
    return this.#qp.postChain(wrs);
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
  clientId: optional(intIn(1, Number.MAX_SAFE_INTEGER)),
  reconnect: optional(callable()),
  reconnectWaitMs: intIn(1, 3_600_000),
  retryDelayMs: intIn(1, 60_000),
  reconnectsMax: intIn(0, 1024),
};

function drawClientId(entropy: Entropy): bigint {
  const b = entropy.bytes(8);
  const v = new DataView(b.buffer, b.byteOffset, 8).getBigUint64(0, true) & ((1n << 62n) - 1n);
  return v === 0n ? 1n : v;
}

function resolveClientOptions(options: Partial<KvClientOptions>): KvClientOptions {
  return resolveOptions(KV_CLIENT_DEFAULTS, options, KV_CLIENT_CHECKS);
}
