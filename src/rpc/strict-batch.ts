/**
 * The strict batch of the durable RPC server (DESIGN §4, docs/recovery.md "Group commit"): on a
 * `strict` region backed by a file (every persist an msync), with inline handlers, one redo-log
 * batch's msync runs off the JS thread (PmemRegion.groupCommitAsync) while the next requests are
 * received. Two jobs, both here:
 *
 * - the batch's replies (RESULTs, ACKs) are held until that msync calls back, and leave in batch
 *   order (#held, releaseHeld) — never an answer before its msync;
 * - a CPU pass whose redo-log step depends on a batch not yet in a running msync, with no room in
 *   the log to skip the step, waits for that msync instead of syncing on the thread (defer), and
 *   the waiting passes of every connection run from its call back as one batch (#runDeferred),
 *   sharing the next msync.
 *
 * DurableRpcServer (server.ts) owns the connections and runs the passes; it hands this its batches.
 */
import type { PmemRegion } from '../../pmem/index.js';
import type { RecoveryStore } from '../../recovery/index.js';

/** What the strict batch needs of a connection: its client, and the steps of its pass waiting for an msync. */
export interface StrictConn {
  clientId: number;
  /**
   * A CPU pass of this connection waits for the msync its redo-log step depends on (defer); the
   * callers' beforeProcess steps wait with it. undefined: none waits.
   */
  deferred: Array<() => void> | undefined;
}

/** A connection's part of a CPU pass, and the step that goes first in its batch (its ACKs, a flush request's). */
export interface PassPart<C> {
  c: C;
  before: (() => void) | undefined;
}

/** What the strict batch needs of the server that owns the connections `C`. */
export interface StrictHost<C extends StrictConn> {
  region: PmemRegion;
  store: RecoveryStore;
  /** c is its client's current, open connection and the server serves: it may be polled. */
  runnable(c: C): boolean;
  /** Runs one CPU pass over these connections (one redo-log batch). */
  pass(parts: readonly PassPart<C>[]): void;
  /** Cuts c (a failed msync, a reply that threw). */
  fail(c: C, error: unknown): void;
  /** Sends a settled batch's replies of c, in order; `applied`: the credit its RESULTs carry. */
  send(c: C, replies: Array<() => void>, applied: number): void;
}

/** One batch's replies of one connection, held until its msync (syncAsync) calls back. */
interface HeldReplies<C> {
  c: C;
  replies: Array<() => void>;
  synced: boolean;
  failure: unknown;
  /**
   * The client's applied sequence when the batch was settled: the credit its RESULTs carry. Read
   * then, not when they leave — a later batch of the same client, settled while this one's msync
   * ran, is not synced yet (its msync is queued) and must not be credited by these RESULTs. -1:
   * read it when sending.
   */
  applied: number;
  /** region.syncMark() when the batch was settled: its replies depend on nothing drained after it (region.ackFor). */
  mark: number;
}

export class StrictBatch<C extends StrictConn> {
  readonly #host: StrictHost<C>;

  /**
   * Batches whose replies wait for their msync (syncAsync), oldest first. They leave in this order,
   * a batch once its msync called back or a later sync covered it — every reply still through the
   * region's ack gate; after a failed msync, none (the connection is cut).
   */
  #held: HeldReplies<C>[] = [];

  /**
   * The CPU passes waiting for one msync (defer), by the mark they wait for; they run as ONE batch
   * from its call back (#runDeferred). undefined: none waits.
   */
  #group: { mark: number; conns: C[] } | undefined;

  /** A releaseHeld is queued (a microtask after an msync's call back). */
  #releaseQueued = false;

  constructor(host: StrictHost<C>) {
    this.#host = host;
  }

  /**
   * Commits one batch (`run`: its redo-log steps, parts in order) with its msync off the thread; the
   * parts' replies are held until it calls back. Returns true if it is synced already (nothing new
   * to sync and nothing running, or a sync point on the way): the caller releases the replies
   * (releaseHeld) once it is out of the batch. A throw (the store refused) holds nothing.
   */
  commit(parts: ReadonlyArray<{ c: C; replies: Array<() => void> }>, run: () => void): boolean {
    const { region, store } = this.#host;
    const hs: HeldReplies<C>[] = parts.map((p) => ({ c: p.c, replies: p.replies, synced: false, failure: undefined, applied: -1, mark: -1 }));
    this.#held.push(...hs);
    let later = false; // a call back inside groupCommitAsync is released by the caller, outside the batch
    try {
      region.groupCommitAsync(() => {
        run();
        const mark = region.syncMark();
        for (const h of hs) {
          if (store.conn.has(h.c.clientId)) h.applied = store.conn.appliedSeq(h.c.clientId);
          h.mark = mark;
        }
      }, (err) => {
        for (const h of hs) {
          h.synced = true;
          h.failure = err;
        }
        // Written after the call back, not in it: the passes that waited for this msync (defer)
        // run in it and start the next msync first, so the socket writes of these replies overlap
        // that msync instead of delaying its start. They still leave only for a synced mark (ackFor).
        if (later && !this.#releaseQueued) {
          this.#releaseQueued = true;
          queueMicrotask(() => {
            this.#releaseQueued = false;
            this.releaseHeld();
          });
        }
      });
    } catch (e) {
      this.#held = this.#held.filter((h) => !hs.includes(h));
      throw e;
    }
    later = true;
    return hs[0]!.synced;
  }

  /** Sends the held replies whose msync called back, oldest batch first (stops at the first still syncing). */
  releaseHeld(): void {
    const held = this.#held;
    while (held.length > 0) {
      const h = held[0]!;
      if (!h.synced) return;
      held.shift();
      if (h.failure !== undefined) {
        this.#host.fail(h.c, h.failure);
        continue;
      }
      try {
        if (h.mark >= 0) this.#host.region.ackFor(h.mark, () => this.#host.send(h.c, h.replies, h.applied));
        else this.#host.send(h.c, h.replies, h.applied);
      } catch (e) {
        this.#host.fail(h.c, e);
      }
    }
  }

  /** The server closed: the held replies' connections are gone, nothing to answer. */
  clear(): void {
    this.#held = [];
  }

  /**
   * A CPU pass whose redo-log step (the lazy images and flags of the previous batch, written at this
   * batch's first commit) depends on a batch whose msync still runs off the thread runs at once if
   * that msync already holds the batch (PmemRegion.isOrdered: what the step writes reaches the file
   * only after it called back), or skips that step while the log has room (RedoLog.canLag), and would
   * otherwise — the batch still waiting for a queued msync, the pipeline at a quarter of the log —
   * sync it on the thread first (RedoLog.advanceMark). Instead the pass waits for that msync's call back
   * (PmemRegion.whenSynced) — the socket reads and NIC passes go on meanwhile, their msyncs queued —
   * and runs then, with whatever arrived in the ring by then. The passes of every connection waiting
   * for the same msync run together, as one redo-log batch with one msync (#runDeferred): two
   * connections whose requests came while one msync ran share the next instead of taking one each.
   * true: deferred (or joined a deferred pass of this connection).
   */
  defer(c: C, beforeProcess: (() => void) | undefined): boolean {
    if (c.deferred !== undefined) {
      if (beforeProcess !== undefined) c.deferred.push(beforeProcess);
      return true;
    }
    const { region, store } = this.#host;
    if (!region.syncing) return false;
    const mark = store.log.advanceMark;
    if (mark < 0 || region.isOrdered(mark) || store.log.canLag) return false;
    c.deferred = beforeProcess === undefined ? [] : [beforeProcess];
    const g = this.#group;
    if (g !== undefined && g.mark === mark) {
      g.conns.push(c);
      return true;
    }
    const group = { mark, conns: [c] };
    this.#group = group;
    // (A failed msync: the pass's own sync reports it, as it would have without the wait.)
    region.whenSynced(mark, () => this.#runDeferred(group));
    return true;
  }

  /** The passes of a deferred group, from its msync's call back: one batch for all of them (or deferred again, if another batch's msync now runs ahead of them). */
  #runDeferred(group: { mark: number; conns: C[] }): void {
    if (this.#group === group) this.#group = undefined;
    const parts: PassPart<C>[] = [];
    for (const c of group.conns) {
      const waiting = c.deferred ?? [];
      c.deferred = undefined;
      const before = waiting.length === 0 ? undefined : waiting.length === 1 ? waiting[0] : () => {
        for (const f of waiting) f();
      };
      if (!this.#host.runnable(c)) continue;
      // A batch committed since (a reconnect's or a release's pass) whose msync runs now: wait for it.
      if (this.defer(c, before)) continue;
      parts.push({ c, before });
    }
    if (parts.length > 0) this.#host.pass(parts);
  }
}
