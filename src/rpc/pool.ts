/**
 * Pool mode of the durable RPC server (DESIGN §4, docs/rpc.md "Worker pool"): the methods
 * registered `{ pooled: true }` compute their effects on worker threads (a Piscina instance) while
 * the owner thread keeps the one total order. Polled entries wait here in that order (FIFO per
 * client); an entry is dispatched when it may run beside what is in flight (disjoint keys, under
 * poolInFlightMax); answers are committed in dispatch order, and effects that overlap a concurrent
 * request's (keys that lied) are computed again, serially, inline. DurableRpcServer (server.ts)
 * owns the connections and the store; it hands this its polled entries and commits through
 * `host.process`.
 */
import type { EffectImage, Effects, RingEntry } from '../../recovery/index.js';
import type { PoolAnswer, PoolTask, RpcEffects, RpcPool, RpcRequest } from './handler.js';

/** A registered method as pool mode sees it. */
export interface PoolMethod {
  name: string;
  pooled: boolean;
  keys: ((request: RpcRequest) => readonly string[]) | undefined;
}

/** An entry's effects as committed (record) and as answered (status, bytes). */
export interface ComputedEffects {
  record: Effects;
  status: number;
  bytes: Uint8Array;
}

/** What pool mode needs of the server that owns the connections `C`. */
export interface PoolHost<C extends { clientId: number }> {
  pool: RpcPool;
  inFlightMax: number;
  serving(): boolean;
  method(id: number): PoolMethod | undefined;
  /** The connection was cut (it broke the protocol): its queued entries are dropped. */
  failed(c: C): boolean;
  /** The shared-memory part of a task (the region and the application area). */
  taskBase(): Pick<PoolTask, 'shared' | 'appOffset' | 'appBytes'>;
  /** The effects of an entry on the current application state, computed by `compute` (or inline by the handler). */
  effects(entry: RingEntry, compute?: () => RpcEffects): ComputedEffects;
  /** Commits and answers an entry (computed: its effects; undefined: computed inline now). */
  process(c: C, entry: RingEntry, computed?: ComputedEffects): void;
  /** Runs fn; a throw cuts c. */
  guarded(c: C, fn: () => void): void;
}

interface PoolTaskState<C> {
  c: C;
  entry: RingEntry;
  keys: ReadonlySet<string> | undefined;
  /** Tasks in flight when this one was dispatched (computed side by side with it). */
  concurrent: PoolTaskState<C>[];
  answer: PoolAnswer | undefined;
  images?: readonly EffectImage[];
}

function overlaps(a: readonly EffectImage[], b: readonly EffectImage[]): boolean {
  for (const x of a) for (const y of b) if (x.offset < y.offset + y.bytes.length && y.offset < x.offset + x.bytes.length) return true;
  return false;
}

export class PoolDispatch<C extends { clientId: number }> {
  /** Polled entries waiting for dispatch, in the one total order (FIFO per client). */
  #queue: Array<{ c: C; entry: RingEntry }> = [];
  /** Dispatched, in dispatch (= commit) order. */
  #inFlight: PoolTaskState<C>[] = [];
  /** Most pooled requests that were computing at once. */
  inFlightPeak = 0;
  /** Requests whose pooled effects overlapped a concurrent request's and were recomputed serially. */
  clashes = 0;

  constructor(readonly host: PoolHost<C>) {}

  /** Queues a pass's polled entries (in poll order) and dispatches what may run. */
  enqueue(c: C, polled: readonly RingEntry[]): void {
    for (const entry of polled) this.#queue.push({ c, entry });
    this.dispatch();
  }

  /** A request of this client waits here or computes (its slot may not be released yet). */
  holds(clientId: number): boolean {
    return this.#queue.some((q) => q.c.clientId === clientId) || this.#inFlight.some((t) => t.c.clientId === clientId);
  }

  /** Drops the queued entries of connection c (cut, then replaced): they would never be dispatched. */
  drop(c: C): void {
    this.#queue = this.#queue.filter((q) => q.c !== c);
  }

  /**
   * Dispatches queued entries while they may run beside what is in flight: FIFO per client; an
   * entry of another client may overtake a blocked one (the dispatch order is the total order, and
   * commits follow it). Inline methods and pooled ones without keys run alone and are barriers:
   * nothing after them is dispatched before them.
   */
  dispatch(): void {
    const host = this.host;
    if (!host.serving()) return;
    const waiting = new Set<number>();
    for (let i = 0; i < this.#queue.length; ) {
      const { c, entry } = this.#queue[i]!;
      if (host.failed(c)) {
        this.#queue.splice(i, 1);
        continue;
      }
      if (waiting.has(c.clientId)) {
        i++;
        continue;
      }
      const m = host.method(entry.methodId);
      if (m === undefined || !m.pooled) {
        if (i > 0 || this.#inFlight.length > 0) return;
        this.#queue.shift();
        host.guarded(c, () => host.process(c, entry));
        continue;
      }
      const req: RpcRequest = { clientId: entry.clientId, seq: entry.seq, method: m.name, payload: entry.payload };
      let keys: readonly string[] | undefined;
      try {
        keys = m.keys?.(req);
      } catch {
        keys = undefined; // a keys function that throws: the request runs alone
      }
      const ks = keys === undefined ? undefined : new Set(keys);
      if (ks === undefined && (i > 0 || this.#inFlight.length > 0)) return;
      const blocked = this.#inFlight.length >= host.inFlightMax || this.#inFlight.some((t) => t.keys === undefined || [...ks!].some((k) => t.keys!.has(k)));
      if (blocked) {
        waiting.add(c.clientId);
        i++;
        continue;
      }
      this.#queue.splice(i, 1);
      const task: PoolTaskState<C> = { c, entry, keys: ks, concurrent: [...this.#inFlight], answer: undefined };
      this.#inFlight.push(task);
      if (this.#inFlight.length > this.inFlightPeak) this.inFlightPeak = this.#inFlight.length;
      host.pool.run({ ...host.taskBase(), method: m.name, clientId: entry.clientId, seq: entry.seq, payload: ownBuffer(entry.payload) }).then(
        (a) => this.#answered(task, a),
        (e: unknown) => this.#answered(task, { ok: false, code: undefined, message: `worker failed: ${String((e as Error)?.message ?? e)}` }),
      );
    }
  }

  #answered(task: PoolTaskState<C>, answer: PoolAnswer): void {
    task.answer = answer;
    if (!this.host.serving()) return;
    // Commit in dispatch order: the head first.
    while (this.#inFlight.length > 0 && this.#inFlight[0]!.answer !== undefined) {
      const t = this.#inFlight.shift()!;
      this.host.guarded(t.c, () => this.#commit(t));
    }
    this.dispatch();
  }

  #commit(t: PoolTaskState<C>): void {
    const a = t.answer!;
    let computed: ComputedEffects;
    if (!a.ok) {
      computed = this.host.effects(t.entry, () => {
        throw Object.assign(new Error(a.message), a.code === undefined ? {} : { code: a.code });
      });
    } else {
      computed = this.host.effects(t.entry, () => a.effects);
      // Checked before apply: requests computed side by side must not write the same bytes.
      // If they do (their keys lied), this one is computed again now, serially, inline.
      t.images = computed.record.images;
      const clash = t.concurrent.some((o) => o.images !== undefined && overlaps(o.images, computed.record.images));
      if (clash) {
        this.clashes++;
        computed = this.host.effects(t.entry);
      }
    }
    this.host.process(t.c, t.entry, computed);
  }
}

/**
 * `bytes` with a buffer of its own: a polled payload is a view into a shared slab (recovery/ring.ts),
 * and posting a view to a worker copies its whole buffer (structured clone), not the view's bytes.
 */
function ownBuffer(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
}
