/**
 * The PRISM-RS client: an ABD multi-writer register per block over N replicas (f < N/2), every
 * step a NIC chain, no replica CPU on the data path (docs/rs.md has the why of each step).
 *
 * write(block, data)  1 RTT query: READ the slot on every replica; the highest tag of a majority
 *                     (a LOST slot does not answer). tag = ⟨max.ts + 1, writer id⟩.
 *                     1 RTT install, on every live replica (scratch receipt slot k, see RECEIPT_PTR):
 *                       WRITE the receipt ⟨serial, 0, bound, tag, no-CAS mark⟩; ALLOCATE(item) → redirect
 *                       to its ptr; redirected FLUSH(persistent) of exactly the item (conditional); CAS gt on the slot's
 *                       tag with ⟨ptr, bound, tag⟩ from the receipt, old value redirected into it
 *                       (conditional); READ the slot; FLUSH(persistent) the slot; READ the receipt (the
 *                       allocated buffer and the replaced slot: the one left unlinked goes back).
 *                     Answer lost (drop): the receipt is handed back after the reconnect (docs/rs.md).
 *                     A replica counts when that READ — FLUSHed in the same chain — shows a tag ≥ ours:
 *                     a CAS that did not swap may have compared against another QP's undrained
 *                     result (DESIGN §2.2), so a lost CAS alone proves nothing durable; such a replica
 *                     is re-READ + FLUSHed (bounded) until it counts. Returns at a majority.
 * read(block)         1 RTT: one chain per live replica, done at a majority. With a location hint (the
 *                     ⟨ptr, bound⟩ last seen in the slot): a direct READ of exactly the item, a READ of
 *                     the slot, FLUSH(persistent) the slot — the item counts only if it carries the tag
 *                     the slot shows. Without one (and always on one spare replica, when a majority is
 *                     live without it): a READ of the slot(s), a bounded indirect READ of the item,
 *                     the same FLUSH. A direct read whose slot moved answers the slot's (durable) tag;
 *                     the item of that tag may come from any replica (a tag names one value): the
 *                     spare's dereference, or the replica read again where its slot now points. If
 *                     the majority agrees, the value is durable there (each FLUSH) and is returned.
 *                     Else the highest item is installed (the write's chain, same tag) where it is
 *                     missing until a majority holds it durably (1 more RTT), then returned. Replicas
 *                     that answer later and are behind (or LOST) get the write-back too, in the
 *                     background: replicas converge.
 *
 * A replica that does not answer (link closed, QP in error, LOST slot) is skipped; fewer than a
 * majority → PMRPC_ERR_RS_NO_MAJORITY after a bounded wait on the injected clock (the operation may
 * or may not have happened). Before each operation a client reconnects (options.reconnect) to
 * replicas whose link closed.
 */
import { callable, cryptoEntropy, intIn, optional, PmrpcError, resolveOptions, systemClock, type Clock, type Entropy, type OptionChecks } from '../../../pmem/index.js';
import { NicErrorCodes, QueuePair, Wr, type Completion, type WorkRequest } from '../../../flush/index.js';
import { parseJsonBytes, untilReachable } from '../index.js';
import { NO_RS_FAULTS, type RsFaults } from './faults.js';
import {
  RS_ITEM_HEADER_BYTES,
  RS_INSTALL_RECEIPTS,
  RS_RECEIPT_BATCH_MAX,
  RS_RECEIPT_BYTES,
  RS_RECEIPT_NO_CAS,
  RS_RETURN_BATCH_MAX,
  RS_SLOT_BYTES,
  RsErrorCodes,
  ZERO_TAG,
  compareTags,
  computeRsGeometry,
  decodeRsItem,
  decodeRsSlot,
  encodeRsItem,
  isLostTag,
  rsClassOf,
  rsClassFor,
  rsSlotOffset,
  rsTagMask,
  validateRsLayout,
  type RsGeometry,
  type RsItem,
  type Tag,
} from './layout.js';
import { RS_RETURN_ACK_IMM, RS_RETURN_IMM, RS_RETURN_STALE_IMM } from './server.js';
import { ReturnSender } from '../kv/index.js';

/** One replica's connection: its queue pair and the welcome it sent. */
export interface RsReplicaConnection {
  qp: QueuePair;
  welcome: Uint8Array;
}

/** How a client gets a new connection to replica `i` (undefined: not reachable now). */
export type RsReconnect = (replica: number) => RsReplicaConnection | undefined | Promise<RsReplicaConnection | undefined>;

export interface RsClientOptions {
  /** The writer id in this client's tags (unique among the writers of the blocks, >= 1); default drawn from `entropy`. */
  writerId: number | undefined;
  entropy: Entropy;
  /** Time for the bounded waits (the logical clock in the explorer). */
  clock: Clock;
  /** Longest wait for a majority of replicas (before an operation, and for each quorum) before NO_MAJORITY. */
  majorityWaitMs: number;
  /** Pause between retries of a replica (recovering, CAS lost to an undrained result). */
  retryDelayMs: number;
  /** Re-reads (READ + FLUSH) of a replica whose CAS did not swap before it is given up for this operation. */
  countRetriesMax: number;
  /** Retries of a replica whose ALLOCATE was refused (recovering) or found no buffer. */
  allocRetriesMax: number;
  /** Re-reads of an item that fails its checksum. */
  readRetriesMax: number;
  /** Unlinked buffers held per replica before a return batch is sent. */
  returnBatch: number;
  /** Reconnects a replica whose link closed (a restarted node). */
  reconnect: RsReconnect | undefined;
  /** Called with each return batch sent (the crash suite replays old ones after a crash). */
  onReturnBatch: ((replica: number, payload: Uint8Array) => void) | undefined;
  /** Test-only fault switches. */
  faults: Partial<RsFaults>;
}

export const RS_CLIENT_DEFAULTS: Readonly<RsClientOptions> = Object.freeze({
  writerId: undefined,
  entropy: cryptoEntropy,
  clock: systemClock,
  majorityWaitMs: 2000,
  retryDelayMs: 1,
  countRetriesMax: 16,
  allocRetriesMax: 16,
  readRetriesMax: 8,
  returnBatch: 16,
  reconnect: undefined,
  onReturnBatch: undefined,
  faults: Object.freeze({}),
});

const RS_CLIENT_CHECKS: OptionChecks<RsClientOptions> = {
  writerId: optional(intIn(1, Number.MAX_SAFE_INTEGER)),
  majorityWaitMs: intIn(1, 3_600_000),
  retryDelayMs: intIn(1, 60_000),
  countRetriesMax: intIn(0, 1024),
  allocRetriesMax: intIn(0, 1024),
  readRetriesMax: intIn(0, 1024),
  returnBatch: intIn(1, RS_RETURN_BATCH_MAX),
  reconnect: optional(callable()),
  onReturnBatch: optional(callable()),
};

export interface RsClientStats {
  writes: number;
  reads: number;
  /** Reads that wrote the highest value back because the majority disagreed. */
  writeBacks: number;
  /** Round trips of the last operation (query + install, or read [+ write-back]), on the critical path. */
  lastOpRoundTrips: number;
  /**
   * Read chains per replica, by kind: `direct` — a READ of the item where this client last saw it
   * (its location hint) beside a READ of the slot, validated by the item's tag; `indirect` — no hint:
   * the slot's READ beside a bounded indirect READ of its item; `moved` — a direct read whose item
   * no longer was the slot's (the slot moved since the hint: read again where the slot now points).
   */
  readChains: { direct: number; indirect: number; moved: number };
  /** Replicas re-read because their CAS did not swap and their READ showed an older tag. */
  countRetries: number;
  noMajority: number;
  returnRpcs: number;
  /**
   * Per replica: install chains posted on an open connection whose answer never came whole (the
   * connection dropped, or the QP failed, after the chain may have run). Each may leave one buffer
   * unlinked that this client cannot name (the one its ALLOCATE took if its CAS did not swap, or
   * the one its CAS replaced if it did): the chain's receipt (in the old QP's scratch) names it,
   * and the client hands the receipt back after its reconnect (a receipt return, docs/rs.md).
   */
  uncertainInstalls: number[];
  /** Per replica: receipts of uncertain installs the replica answered (it resolved them: the unlinked buffer is back on its free list). */
  uncertainResolved: number[];
  /** Per replica: receipts held now, not yet answered (the replica is down, or the client not reconnected yet): each may hold one buffer. */
  receiptsHeld: number[];
}

interface Replica {
  index: number;
  qp: QueuePair | undefined;
  rkey: number;
  geometry: RsGeometry | undefined;
  epoch: bigint;
  /** Its buffer returns and uncertain installs' receipts (idempotent batches, kept across a dropped connection: kv/returns.ts). */
  returns: ReturnSender;
  /** Scratch receipt slots of the current QP in use by install chains (RS_INSTALL_RECEIPTS of them). */
  busy: boolean[];
  /** Installs waiting for a receipt slot of the current QP. */
  slotWaiters: Array<() => void>;
  /**
   * Location hints: per block, the ⟨ptr, bound⟩ this client last saw in the replica's slot (a
   * read's, a query's or an install's READ of the slot). Only where to READ: what a read returns is
   * validated against the slot read in the same chain (docs/rs.md, "Direct reads"). Cleared on a
   * new connection.
   */
  hints: Map<number, { ptr: number; bound: number }>;
}

/**
 * An answer of a replica to a read: the tag its slot showed (FLUSHed in the same chain: durable
 * there) and the item (undefined: never written, or `tagOnly`); chains: round trips it took.
 * `tagOnly`: a direct read whose slot had moved — the slot's tag is known and durable, its item is
 * not in hand (the replica is read again where the slot now points; another replica's item with
 * the same tag is the same value: a tag names one value).
 */
interface ReadAnswer {
  tag: Tag;
  item: RsItem | undefined;
  chains: number;
  tagOnly?: true;
}

/**
 * The install chain's receipt in the connection's scratch (RS_RECEIPT_BYTES each, RS_INSTALL_RECEIPTS
 * per QP, one per install chain in flight): serial u64 | ALLOCATE's ptr u64 | bound u64 | writer u64 |
 * ts u64 (the CAS operand: ptr..ts) | the CAS's old slot value (32 B, redirected). The chain's first
 * WRITE sets serial, ptr 0 and an old value whose bound is RS_RECEIPT_NO_CAS (no slot has it): a
 * receipt shows whether the chain ran (serial), ALLOCATEd (ptr ≠ 0), ran its CAS (bound) and swapped
 * (the old tag below ours). After a drop the replica resolves it (RsServer, docs/rs.md).
 */
const RECEIPT_PTR = 8;
const RECEIPT_OLD = 40;

/** One uncertain install: which receipt of which (dead) QP, and the serial the chain wrote there. */
export interface RsReceipt {
  qpn: number;
  slot: number;
  serial: bigint;
}

/** The replica address in an rs welcome. */
export function parseRsWelcome(welcome: Uint8Array): { rkey: number; base: number; epoch: bigint; geometry: RsGeometry } {
  const w = parseJsonBytes(welcome);
  if (w === undefined || w.app !== 'rs' || !Number.isSafeInteger(w.rkey) || !Number.isSafeInteger(w.base) || typeof w.epoch !== 'string' || !/^\d+$/.test(w.epoch) || w.layout === null || typeof w.layout !== 'object') {
    throw new PmrpcError(RsErrorCodes.NOT_FORMATTED, 'the welcome is not an RS address {app, rkey, base, epoch, layout}');
  }
  let geometry: RsGeometry;
  try {
    geometry = computeRsGeometry(w.base as number, validateRsLayout(w.layout as object));
  } catch (e) {
    throw new PmrpcError(RsErrorCodes.NOT_FORMATTED, `the welcome's layout is not valid: ${(e as Error).message}`, { cause: e });
  }
  return { rkey: w.rkey as number, base: w.base as number, epoch: BigInt(w.epoch), geometry };
}

export class RsClient {
  readonly options: Readonly<RsClientOptions>;
  readonly faults: Readonly<RsFaults>;
  readonly writerId: bigint;
  readonly replicas: number;
  #r: Replica[];
  #geometry: RsGeometry | undefined;
  #background = new Set<Promise<unknown>>();
  #closed = false;
  #rtts = 0;
  /**
   * The highest timestamp this writer has put in a tag. A new write's ts exceeds it as well as the
   * query's max: a write of ours that ended indeterminate (NO_MAJORITY) may hold its tag on a
   * minority the next query does not reach, and the same tag on a different value makes replicas
   * disagree under one tag (reads then flip between the two values).
   */
  #lastTs = 0n;
  /** Install chains numbered so far (a receipt's serial; 0 is never one: a fresh scratch holds zeros). */
  #installs = 0n;
  #stats: RsClientStats = { writes: 0, reads: 0, writeBacks: 0, lastOpRoundTrips: 0, readChains: { direct: 0, indirect: 0, moved: 0 }, countRetries: 0, noMajority: 0, returnRpcs: 0, uncertainInstalls: [], uncertainResolved: [], receiptsHeld: [] };

  /**
   * A client of the replicas behind `connections` (one per replica, in replica order; undefined for
   * a replica not reachable now — it is reconnected through options.reconnect before an operation).
   */
  constructor(connections: ReadonlyArray<RsReplicaConnection | undefined>, options: Partial<RsClientOptions> = {}) {
    if (!Array.isArray(connections) || connections.length === 0) throw new RangeError('connections must be a non-empty array (one per replica)');
    this.options = Object.freeze(resolveOptions(RS_CLIENT_DEFAULTS, options, RS_CLIENT_CHECKS));
    this.faults = Object.freeze({ ...NO_RS_FAULTS, ...this.options.faults });
    this.writerId = this.options.writerId !== undefined ? BigInt(this.options.writerId) : drawWriterId(this.options.entropy);
    this.replicas = connections.length;
    this.#stats.uncertainInstalls = connections.map(() => 0);
    this.#stats.uncertainResolved = connections.map(() => 0);
    this.#r = connections.map((_, i) => ({
      index: i,
      qp: undefined,
      rkey: 0,
      geometry: undefined,
      epoch: 0n,
      returns: new ReturnSender({
        imms: { batch: RS_RETURN_IMM, ack: RS_RETURN_ACK_IMM, stale: RS_RETURN_STALE_IMM },
        batchMax: RS_RETURN_BATCH_MAX,
        receiptBatchMax: RS_RECEIPT_BATCH_MAX,
        sender: this.writerId,
        dropUnanswered: this.faults.dropUnansweredReturns,
        onBatch: this.options.onReturnBatch === undefined ? undefined : (payload) => this.options.onReturnBatch!(i, payload),
      }),
      busy: [],
      slotWaiters: [],
      hints: new Map(),
    }));
    connections.forEach((c, i) => {
      if (c !== undefined) this.#attach(this.#r[i]!, c);
    });
  }

  get majority(): number {
    return Math.floor(this.replicas / 2) + 1;
  }

  get stats(): Readonly<RsClientStats> {
    return {
      ...this.#stats,
      readChains: { ...this.#stats.readChains },
      returnRpcs: this.#r.reduce((a, r) => a + r.returns.stats.rpcs, 0),
      uncertainInstalls: [...this.#stats.uncertainInstalls],
      uncertainResolved: [...this.#stats.uncertainResolved],
      receiptsHeld: this.#r.map((r) => r.returns.receiptsHeld),
    };
  }

  /** Blocks per replica (undefined until a replica was reached). */
  get blocks(): number | undefined {
    return this.#geometry?.blocks;
  }

  /** Largest value a block holds. */
  get maxValueBytes(): number | undefined {
    const g = this.#geometry;
    return g === undefined ? undefined : g.classes[g.classes.length - 1]!.sizeBytes - RS_ITEM_HEADER_BYTES;
  }

  /** Whether replica `i`'s connection is up. */
  isUp(i: number): boolean {
    const r = this.#r[i];
    return r?.qp !== undefined && r.qp.link.closed !== true && r.qp.state !== 'error';
  }

  // ---------------------------------------------------------------- write

  async write(block: number, data: Uint8Array): Promise<void> {
    if (!(data instanceof Uint8Array)) throw new TypeError('data must be a Uint8Array');
    await this.#begin();
    this.#checkBlock(block);
    const g = this.#geometry!;
    if (rsClassFor(g, data.length) === undefined) throw new PmrpcError(RsErrorCodes.VALUE_TOO_LARGE, `a value of ${data.length} bytes exceeds the largest size class (${g.classes[g.classes.length - 1]!.sizeBytes - RS_ITEM_HEADER_BYTES} bytes of value)`);
    this.#stats.writes++;
    const tags = await this.#quorum(
      this.#live().map((r) => this.#queryTag(r, block)),
      this.majority,
    );
    this.#rtts++;
    // Never a tag this writer used before (see #lastTs): its own indeterminate write may hide on a minority.
    const maxTs = tags.reduce((m, t) => (t.ts > m ? t.ts : m), this.faults.reuseOwnTag ? 0n : this.#lastTs);
    const tag: Tag = { ts: maxTs + 1n, writer: this.faults.noWriterId ? 0n : this.writerId };
    this.#lastTs = tag.ts;
    const item = encodeRsItem({ block, tag, value: data });
    await this.#quorum(
      this.#live().map((r) => this.#install(r, block, item, tag)),
      this.faults.minorityWrite ? 1 : this.majority,
    );
    this.#rtts++;
    this.#end();
  }

  // ---------------------------------------------------------------- read

  /** The block's value, or null when it was never written. */
  async read(block: number): Promise<Uint8Array | null> {
    await this.#begin();
    this.#checkBlock(block);
    this.#stats.reads++;
    // One replica reads through the slot (bounded indirect READ) when a majority is live without it:
    // a slot that moved since the others' hints is then answered in the same round trip.
    const live = this.#live();
    const deref = live.length > this.majority ? live[live.length - 1]!.index : -1;
    const early: Array<(a: ReadAnswer) => void> = [];
    const attempts = this.#r.map((r) => (this.#isLive(r) ? this.#readReplica(r, block, r.index === deref, (a) => early[r.index]?.(a)) : Promise.resolve(undefined)));
    const q = await this.#readQuorum(attempts, early);
    this.#rtts += q.chains;
    const max = q.max;
    const value = max.item === undefined ? null : max.item.value;
    if (this.faults.readWithoutWriteBack) {
      this.#end();
      return value;
    }
    const current = new Set(q.answers.filter((x) => compareTags(x.a.tag, max.tag) >= 0).map((x) => x.i));
    const writeBack = max.item !== undefined && current.size < this.majority;
    // Replicas converge: once every replica answered, the highest item of all goes (in the
    // background) wherever it is missing — a LOST slot of a restarted replica included — unless it
    // is the max the write-back below already installs everywhere.
    this.#track(this.#converge(block, attempts, writeBack ? max.tag : undefined));
    if (!writeBack || max.item === undefined) {
      this.#end();
      return value;
    }
    // Write-back: the majority disagreed; install the max where it is missing until a majority holds it durably.
    this.#stats.writeBacks++;
    const item = encodeRsItem(max.item);
    const tag = max.item.tag;
    const installs = this.#r
      .filter((r) => !current.has(r.index))
      .map((r) =>
        attempts[r.index]!.then((a) => {
          if (a === undefined) return undefined; // down
          if (a !== 'lost' && compareTags(a.tag, tag) >= 0) return true;
          return this.#install(r, block, item, tag);
        }),
      );
    await this.#quorum(installs, this.majority, current.size);
    this.#rtts++;
    this.#end();
    return value;
  }

  /**
   * A read's quorum: done once a majority of replicas answered (each answer's tag durable on its
   * replica) and the item of the highest tag among them is in hand — from any replica: a tag names
   * one value. A replica's later answer (its second chain after a moved slot) replaces its earlier
   * one (a replica's durable tag only grows). `chains`: the round trips on the path of the answer
   * that completed it. Rejects NO_MAJORITY when that became impossible or after majorityWaitMs.
   */
  #readQuorum(attempts: Array<Promise<ReadAnswer | 'lost' | undefined>>, early: Array<(a: ReadAnswer) => void>): Promise<{ answers: Array<{ i: number; a: ReadAnswer }>; max: ReadAnswer; chains: number }> {
    for (const p of attempts) this.#track(p);
    const need = this.majority;
    return new Promise((resolve, reject) => {
      const latest = new Map<number, ReadAnswer>();
      const items: ReadAnswer[] = [];
      let settled = 0;
      let done = false;
      const timer = this.options.clock.setTimer(this.options.majorityWaitMs, () => fail());
      const fail = (): void => {
        if (done) return;
        done = true;
        timer.cancel();
        this.#stats.noMajority++;
        reject(new PmrpcError(RsErrorCodes.NO_MAJORITY, `${latest.size} of ${this.replicas} replicas answered; a majority is ${need}`));
      };
      const check = (chains: number): void => {
        if (done || latest.size < need) return;
        let max: ReadAnswer | undefined;
        for (const a of latest.values()) if (max === undefined || compareTags(a.tag, max.tag) > 0) max = a;
        const full = max!.tagOnly !== true ? max! : items.find((x) => compareTags(x.tag, max!.tag) === 0);
        if (full === undefined) return;
        done = true;
        timer.cancel();
        resolve({ answers: [...latest].map(([i, a]) => ({ i, a })), max: full, chains });
      };
      const heard = (i: number, a: ReadAnswer): void => {
        const prev = latest.get(i);
        if (prev === undefined || prev.tagOnly === true || compareTags(a.tag, prev.tag) >= 0) latest.set(i, a);
        if (a.tagOnly !== true) items.push(a);
        check(a.chains);
      };
      attempts.forEach((p, i) => {
        early[i] = (a) => heard(i, a);
        void p.then(
          (a) => {
            settled++;
            if (a !== undefined && a !== 'lost') heard(i, a);
            else if (latest.get(i)?.tagOnly === true) latest.delete(i); // its item never came: not part of the quorum
            if (!done && settled === attempts.length) {
              // Every replica's last answer is in: the quorum is what they say, on the longest path among them.
              check([...latest.values()].reduce((m, x) => Math.max(m, x.chains), 1));
              if (!done) fail();
            }
          },
          () => {
            settled++;
            if (latest.get(i)?.tagOnly === true) latest.delete(i);
            if (!done && settled === attempts.length) fail();
          },
        );
      });
    });
  }

  /** After every replica answered a read: the highest item of all, installed where it is missing or older. */
  async #converge(block: number, attempts: Array<Promise<ReadAnswer | 'lost' | undefined>>, writtenBack: Tag | undefined): Promise<void> {
    const answers = await Promise.all(attempts);
    let best: RsItem | undefined;
    for (const a of answers) if (a !== undefined && a !== 'lost' && a.item !== undefined && (best === undefined || compareTags(a.item.tag, best.tag) > 0)) best = a.item;
    if (best === undefined || (writtenBack !== undefined && compareTags(best.tag, writtenBack) === 0)) return;
    const item = encodeRsItem(best);
    await Promise.all(
      answers.map((a, i) => {
        if (a === undefined || (a !== 'lost' && compareTags(a.tag, best.tag) >= 0)) return undefined;
        return this.#install(this.#r[i]!, block, item, best.tag);
      }),
    );
  }

  // ---------------------------------------------------------------- life cycle

  /**
   * Waits for background installs and write-backs, then sends every pending buffer return
   * (reconnecting, once, a replica whose link closed while it still holds returns for it).
   */
  async settle(): Promise<void> {
    while (this.#background.size > 0) await Promise.allSettled([...this.#background]);
    await Promise.allSettled(
      this.#r.map(async (r) => {
        if (!this.#closed && r.returns.held > 0 && !this.#isLive(r)) await this.#reconnect(r).catch(() => undefined);
        await this.#flushReturns(r);
      }),
    );
  }

  /** Settles, then closes every connection. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    await this.settle();
    this.#closed = true;
    for (const r of this.#r) r.qp?.close();
  }

  /** Closes every connection at once, mid-operation (a client crash: nothing is settled). */
  abort(): void {
    this.#closed = true;
    for (const r of this.#r) r.qp?.close();
  }

  // ---------------------------------------------------------------- replicas

  #attach(r: Replica, c: RsReplicaConnection): void {
    if (!(c.qp instanceof QueuePair)) throw new TypeError('a connection must hold a QueuePair');
    const w = parseRsWelcome(c.welcome);
    if (this.#geometry === undefined) this.#geometry = w.geometry;
    else if (this.#geometry.blocks !== w.geometry.blocks || JSON.stringify(this.#geometry.classes.map((x) => x.sizeBytes)) !== JSON.stringify(w.geometry.classes.map((x) => x.sizeBytes))) {
      c.qp.close();
      throw new PmrpcError(RsErrorCodes.GEOMETRY_MISMATCH, `replica ${r.index} has ${w.geometry.blocks} blocks and classes ${w.geometry.classes.map((x) => x.sizeBytes).join(',')}; the others ${this.#geometry.blocks} and ${this.#geometry.classes.map((x) => x.sizeBytes).join(',')}`);
    }
    r.qp = c.qp;
    // A new QP, a new scratch: every receipt slot is free (chains of the old QP keep theirs there).
    r.busy = [];
    for (const wake of r.slotWaiters.splice(0)) wake();
    r.hints.clear(); // a restarted replica may hold its blocks elsewhere (its rkey is new as well)
    r.rkey = w.rkey;
    r.geometry = w.geometry;
    r.epoch = w.epoch;
    // A different epoch: the replica restarted, and its recovery reclaimed every unlinked buffer (the sender forgets them).
    r.returns.attach(c.qp, w.epoch);
  }

  #isLive(r: Replica): boolean {
    return this.isUp(r.index);
  }

  #live(): Replica[] {
    return this.#r.filter((r) => this.#isLive(r));
  }

  /** Reconnects replicas that are down; waits (bounded, on the clock) until a majority is up. */
  async #begin(): Promise<void> {
    if (this.#closed) throw new PmrpcError(RsErrorCodes.CLOSED, 'the RS client is closed');
    this.#rtts = 0;
    const { clock, majorityWaitMs, retryDelayMs, reconnect } = this.options;
    const up = await untilReachable(clock, majorityWaitMs, retryDelayMs, async () => {
      if (reconnect !== undefined) {
        for (const r of this.#r) {
          if (this.#isLive(r)) continue;
          try {
            await this.#reconnect(r);
          } catch (e) {
            if (e instanceof PmrpcError && e.code === RsErrorCodes.GEOMETRY_MISMATCH) throw e;
            // not reachable now
          }
        }
      }
      return this.#live().length >= this.majority && this.#geometry !== undefined;
    });
    if (!up) {
      this.#stats.noMajority++;
      throw new PmrpcError(RsErrorCodes.NO_MAJORITY, `${this.#live().length} of ${this.replicas} replicas reachable for ${majorityWaitMs} ms; a majority is ${this.majority}`);
    }
  }

  /** One reconnect attempt of replica r (options.reconnect); returns held for it go out after. */
  async #reconnect(r: Replica): Promise<void> {
    const c = await this.options.reconnect?.(r.index);
    if (c === undefined) return;
    this.#attach(r, c);
    if ((r.returns.unanswered || r.returns.receiptsHeld > 0) && !r.returns.busy) this.#track(this.#flushReturns(r));
  }

  #end(): void {
    this.#stats.lastOpRoundTrips = this.#rtts;
  }

  #checkBlock(block: number): void {
    const n = this.#geometry!.blocks;
    if (!Number.isSafeInteger(block) || block < 0 || block >= n) throw new PmrpcError(RsErrorCodes.BAD_BLOCK, `block must be an integer in [0, ${n}), got ${String(block)}`);
  }

  #sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => this.options.clock.setTimer(ms, resolve));
  }

  #track(p: Promise<unknown>): void {
    const q = p.catch(() => undefined).finally(() => this.#background.delete(q));
    this.#background.add(q);
  }

  /**
   * Resolves with the answers once `need` attempts gave one (`already` count as given); rejects
   * NO_MAJORITY once that became impossible or after majorityWaitMs. Attempts still running go on
   * in the background (an install reaches every live replica).
   */
  #quorum<T>(attempts: Array<Promise<T | undefined>>, need: number, already = 0): Promise<T[]> {
    for (const p of attempts) this.#track(p);
    return new Promise((resolve, reject) => {
      const got: T[] = [];
      let failed = 0;
      let done = false;
      const total = attempts.length + already;
      const timer = this.options.clock.setTimer(this.options.majorityWaitMs, () => finish(false));
      const finish = (ok: boolean): void => {
        if (done) return;
        done = true;
        timer.cancel();
        if (ok) resolve(got);
        else {
          this.#stats.noMajority++;
          reject(new PmrpcError(RsErrorCodes.NO_MAJORITY, `${got.length + already} of ${this.replicas} replicas answered; a majority is ${need}`));
        }
      };
      if (already >= need) return finish(true);
      if (total < need) return finish(false);
      for (const p of attempts) {
        void p.then(
          (v) => {
            if (v === undefined) failed++;
            else got.push(v);
            if (got.length + already >= need) finish(true);
            else if (total - failed < need) finish(false);
          },
          () => {
            failed++;
            if (total - failed < need) finish(false);
          },
        );
      }
    });
  }

  /** Posts a chain; undefined when the replica did not answer (link closed, QP error). */
  async #post(r: Replica, wrs: WorkRequest[]): Promise<Completion[] | undefined> {
    const qp = r.qp;
    if (qp === undefined) return undefined;
    try {
      const cs = await qp.postChain(wrs);
      return cs.some((c) => c.status === 'error') ? undefined : cs;
    } catch {
      return undefined;
    }
  }

  #slotLoc(r: Replica, block: number): { rkey: number; addr: number } {
    return { rkey: r.rkey, addr: rsSlotOffset(r.geometry!, block) };
  }

  #slotFlush(r: Replica, block: number): WorkRequest {
    return Wr.flush('persistent', r.rkey, { addr: rsSlotOffset(r.geometry!, block), len: RS_SLOT_BYTES });
  }

  /** The write's query: READ the slot (no FLUSH needed: the tag only has to exceed every completed write's). */
  async #queryTag(r: Replica, block: number): Promise<Tag | undefined> {
    const cs = await this.#post(r, [Wr.read(this.#slotLoc(r, block), RS_SLOT_BYTES)]);
    const d = cs?.[0]?.data;
    if (d === undefined || d.length !== RS_SLOT_BYTES) return undefined;
    const s = decodeRsSlot(d);
    if (s.ptr !== r.geometry!.base) this.#learn(r, block, s);
    return isLostTag(s.tag) ? undefined : s.tag;
  }

  /**
   * One chain per attempt (docs/rs.md, "read"). With a location hint for the block: a direct READ of
   * exactly the item where the slot last pointed, then a READ of the slot, then FLUSH(persistent) of
   * the slot — the item counts only if it checks out and carries the tag the slot shows *after* it
   * was read (a tag names one value: the slot held that value then, and the FLUSH made the slot, or
   * a newer one, durable). Without a hint: a READ of the slot, then a bounded indirect READ of its
   * item, then the same FLUSH. Either way an empty or LOST slot is answered by the slot's READ, and
   * a slot that moved is read again where it now points. 'lost': the replica lost its copy.
   */
  async #readReplica(r: Replica, block: number, deref = false, onTag?: (a: ReadAnswer) => void): Promise<ReadAnswer | 'lost' | undefined> {
    const g = r.geometry!;
    const maxItem = g.classes[g.classes.length - 1]!.sizeBytes;
    const stats = this.#stats.readChains;
    for (let attempt = 0; attempt <= this.options.readRetriesMax; attempt++) {
      const chains = attempt + 1;
      const loc = this.#slotLoc(r, block);
      // The replica that reads through the slot this time (`deref`) READs only its slot beside the dereference.
      const hint = deref ? undefined : r.hints.get(block);
      // Without a hint, the slot's READ takes its window of slots: the hints of its neighbours, at no dependent step.
      const win = deref ? { first: block, count: 1 } : hint === undefined ? slotWindow(g, block) : undefined;
      const wrs: WorkRequest[] = win === undefined ? [Wr.read({ rkey: r.rkey, addr: hint!.ptr }, hint!.bound), Wr.read(loc, RS_SLOT_BYTES)] : [Wr.read({ rkey: r.rkey, addr: rsSlotOffset(g, win.first) }, win.count * RS_SLOT_BYTES), Wr.read(loc, maxItem, { bounded: true })];
      if (!this.faults.readWithoutFlush) wrs.push(this.#slotFlush(r, block));
      const cs = await this.#post(r, wrs);
      if (cs === undefined || cs.some((c) => c.status !== 'ok')) return undefined;
      if (hint !== undefined) {
        stats.direct++;
        const s = decodeRsSlot(cs[1]!.data!);
        if (s.ptr === g.base) {
          r.hints.delete(block);
          if (isLostTag(s.tag)) return 'lost';
          if ((s.bound === 0 && compareTags(s.tag, ZERO_TAG) === 0)) return { tag: { ...ZERO_TAG }, item: undefined, chains };
          continue;
        }
        const item = decodeRsItem(cs[0]!.data!);
        // Read before the slot and carrying the slot's tag: the slot's value, whichever buffer held it.
        if (item !== undefined && item.block === block && (this.faults.trustLocationHint || compareTags(item.tag, s.tag) === 0)) return { tag: item.tag, item, chains };
        stats.moved++;
        if (!this.#learn(r, block, s)) r.hints.delete(block);
        // The slot moved: its tag is durable here (the FLUSH), its item is where it now points —
        // which another replica's answer may already hold (the same tag, the same value).
        onTag?.({ tag: s.tag, item: undefined, chains, tagOnly: true });
        continue;
      }
      stats.indirect++;
      const slots = cs[0]!.data!;
      const at = (block - win!.first) * RS_SLOT_BYTES;
      const s = decodeRsSlot(slots.subarray(at, at + RS_SLOT_BYTES));
      for (let i = 0; i < win!.count; i++) {
        const b = win!.first + i;
        if (b === block || r.hints.has(b)) continue;
        const n = decodeRsSlot(slots.subarray(i * RS_SLOT_BYTES, (i + 1) * RS_SLOT_BYTES));
        if (n.ptr !== g.base) this.#learn(r, b, n);
      }
      const d = cs[1]!.data!;
      if (d.length === 0) {
        if (s.ptr !== g.base) continue; // the slot moved between the two READs: read again
        if (isLostTag(s.tag)) return 'lost';
        if ((s.bound === 0 && compareTags(s.tag, ZERO_TAG) === 0)) return { tag: { ...ZERO_TAG }, item: undefined, chains };
        continue;
      }
      const item = decodeRsItem(d);
      if (item === undefined || item.block !== block) continue; // torn or moving: read again
      if (compareTags(item.tag, s.tag) === 0) this.#learn(r, block, s);
      return { tag: item.tag, item, chains };
    }
    return undefined;
  }

  /**
   * Keeps ⟨ptr, bound⟩ of a slot READ as the block's location hint when it names a buffer of the
   * arena (aligned to its class) and a bound the class holds: a hint's READ then never leaves the
   * MR, whatever the slot showed (a READ outside it would fail the QP). False when it does not.
   */
  #learn(r: Replica, block: number, s: { ptr: number; bound: number }): boolean {
    const c = rsClassOf(r.geometry!, s.ptr);
    if (c === undefined || s.bound < RS_ITEM_HEADER_BYTES || s.bound > c.sizeBytes) return false;
    r.hints.set(block, { ptr: s.ptr, bound: s.bound });
    return true;
  }

  /**
   * The install chain on one replica (file comment). True once the replica durably holds a tag ≥
   * `tag`; undefined when it did not answer or the bounded retries ran out.
   */
  async #install(r: Replica, block: number, item: Uint8Array, tag: Tag): Promise<true | undefined> {
    const g = r.geometry!;
    const cls = rsClassFor(g, item.length - RS_ITEM_HEADER_BYTES)!;
    const f = this.faults;
    for (let attempt = 0; attempt <= this.options.allocRetriesMax; attempt++) {
      // A receipt slot of the current QP's scratch for this chain (waits while every one is in flight).
      const held = await this.#receiptSlot(r);
      if (held === undefined) return undefined;
      const off = held.slot * RS_RECEIPT_BYTES;
      const serial = ++this.#installs;
      const head = new Uint8Array(RS_RECEIPT_BYTES);
      const dv = new DataView(head.buffer);
      dv.setBigUint64(0, serial, true);
      dv.setBigUint64(RECEIPT_PTR + 8, BigInt(item.length), true); // the exact bound: a read moves the item, not its buffer
      dv.setBigUint64(RECEIPT_PTR + 16, tag.writer, true);
      dv.setBigUint64(RECEIPT_PTR + 24, tag.ts, true);
      dv.setBigUint64(RECEIPT_OLD + 8, RS_RECEIPT_NO_CAS, true);
      // Addressed afresh on every attempt: a wait may span a reconnect to a restarted replica (a new rkey).
      const loc = this.#slotLoc(r, block);
      const chain: WorkRequest[] = [Wr.write({ scratch: off }, head), Wr.allocate(r.rkey, cls.sizeBytes, item, { redirect: off + RECEIPT_PTR })];
      // Exactly the item: the redirected FLUSH takes its range start from the pointer ALLOCATE left in the receipt.
      if (!f.dropItemFlush) chain.push(Wr.flushFrom('persistent', r.rkey, { scratch: off + RECEIPT_PTR }, f.flushItemHeadOnly ? RS_ITEM_HEADER_BYTES : item.length, { conditional: true }));
      const casAt = chain.length;
      chain.push(Wr.prismCasFrom('gt', loc, { scratch: off + RECEIPT_PTR }, RS_SLOT_BYTES, { conditional: true, compareMask: rsTagMask(), redirect: off + RECEIPT_OLD }));
      const readAt = chain.length;
      chain.push(Wr.read(loc, RS_SLOT_BYTES));
      if (!f.dropSlotFlush) chain.push(this.#slotFlush(r, block));
      chain.push(Wr.read({ scratch: off + RECEIPT_PTR }, RS_RECEIPT_BYTES - RECEIPT_PTR));
      const open = this.#isLive(r);
      const cs = await this.#post(r, chain);
      // A chain whose answer was lost keeps its slot for the rest of its QP's life: the receipt stays as the chain left it.
      if (cs !== undefined) this.#freeReceiptSlot(r, held.qp, held.slot);
      else for (const wake of r.slotWaiters.splice(0)) wake(); // they find the QP down and give up
      if (cs === undefined) {
        if (open) {
          // The chain may have run: its receipt (the old QP's scratch) says what it left unlinked.
          this.#stats.uncertainInstalls[r.index]!++;
          r.returns.pushReceipt({ qpn: held.qp.qpn, slot: held.slot, serial });
        }
        return undefined;
      }
      const alloc = cs[1]!;
      const cas = cs[casAt]!;
      if (alloc.status !== 'ok') {
        // Refused (the replica is rebuilding its free lists) or no free buffer: give back what we hold, wait, retry.
        if (alloc.code !== NicErrorCodes.ALLOC_REFUSED && r.returns.pending > 0) await this.#flushReturns(r);
        await this.#sleep(this.options.retryDelayMs);
        continue;
      }
      const receipt = cs[cs.length - 1]!.data!;
      if (cas.status === 'ok' && cas.swapped === true) {
        const old = decodeRsSlot(receipt.slice(RECEIPT_OLD - RECEIPT_PTR, RECEIPT_OLD - RECEIPT_PTR + RS_SLOT_BYTES));
        if (old.ptr !== g.base && old.ptr > 0) this.#giveBack(r, old.ptr);
      } else {
        const mine = Number(new DataView(receipt.buffer, receipt.byteOffset, 8).getBigUint64(0, true));
        if (mine > 0) this.#giveBack(r, mine);
        if (f.countFailedCas && cas.status === 'ok') return true;
      }
      const seen = decodeRsSlot(cs[readAt]!.data!);
      if (seen.ptr !== g.base) this.#learn(r, block, seen);
      if (compareTags(seen.tag, tag) >= 0) return true;
      // The CAS lost to a tag we cannot see yet (another QP's result still in the NIC cache): re-READ + FLUSH until it shows.
      for (let k = 0; k < this.options.countRetriesMax; k++) {
        this.#stats.countRetries++;
        await this.#sleep(this.options.retryDelayMs);
        // The slot addressed after the wait: a stale rkey would fail the READ and move the new QP to the error state.
        const at = this.#slotLoc(r, block);
        const again = await this.#post(r, f.dropSlotFlush ? [Wr.read(at, RS_SLOT_BYTES)] : [Wr.read(at, RS_SLOT_BYTES), this.#slotFlush(r, block)]);
        if (again === undefined) return undefined;
        if (compareTags(decodeRsSlot(again[0]!.data!).tag, tag) >= 0) return true;
      }
      return undefined;
    }
    return undefined;
  }

  /** A free receipt slot of r's current QP (waits while all are in flight); undefined when r is down. */
  async #receiptSlot(r: Replica): Promise<{ qp: QueuePair; slot: number } | undefined> {
    for (;;) {
      const qp = r.qp;
      if (qp === undefined || !this.#isLive(r)) return undefined;
      for (let k = 0; k < RS_INSTALL_RECEIPTS; k++) {
        if (r.busy[k] === true) continue;
        r.busy[k] = true;
        return { qp, slot: k };
      }
      await new Promise<void>((resolve) => r.slotWaiters.push(resolve));
    }
  }

  #freeReceiptSlot(r: Replica, qp: QueuePair, slot: number): void {
    if (r.qp !== qp) return; // reattached since: the new QP's slots were freed then
    r.busy[slot] = false;
    r.slotWaiters.shift()?.();
  }

  // ---------------------------------------------------------------- buffer returns

  #giveBack(r: Replica, ptr: number): void {
    r.returns.push(ptr);
    if (r.returns.pending >= this.options.returnBatch && !r.returns.busy) this.#track(this.#flushReturns(r));
  }

  /**
   * Sends replica r's pending returns (kv/returns.ts ReturnSender: epoch-stamped, numbered batches,
   * one at a time). A batch whose answer does not come (the connection dropped; the replica may or
   * may not have taken it) is kept and sent again, with the same number, once r is reconnected: the
   * replica takes a number once per epoch, so nothing is freed twice and nothing leaks. A replica
   * that restarted (a new epoch) reclaimed every unlinked buffer itself: its batches are dropped.
   */
  async #flushReturns(r: Replica): Promise<void> {
    const round = await r.returns.flush();
    this.#stats.uncertainResolved[r.index]! += round.receiptsResolved;
  }
}

/**
 * The slots a read without a location hint READs beside its bounded indirect READ: the aligned
 * window of RS_SLOT_WINDOW slots holding the block's (clipped to the table). The bounded READ's
 * dereference is the chain's longest step, so the window costs the chain its bytes, not a step.
 */
export const RS_SLOT_WINDOW = 64;

function slotWindow(g: RsGeometry, block: number): { first: number; count: number } {
  const first = block - (block % RS_SLOT_WINDOW);
  return { first, count: Math.min(RS_SLOT_WINDOW, g.blocks - first) };
}

function drawWriterId(entropy: Entropy): bigint {
  const b = entropy.bytes(8);
  const v = new DataView(b.buffer, b.byteOffset, 8).getBigUint64(0, true) & ((1n << 62n) - 1n);
  return v === 0n ? 1n : v;
}
