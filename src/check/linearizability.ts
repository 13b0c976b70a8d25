/**
 * A linearizability checker: Wing & Gong's search with Lowe's memoisation of
 * (linearised set, model state), partitioned by key (P-compositionality: a history is
 * linearizable iff each key's sub-history is). Written by hand because no maintained npm package
 * does this (porcupine and Knossos are Go and Clojure).
 *
 * An operation cut by a crash (no response: `ret === undefined`) may or may not have taken
 * effect: it is given a return time after every other event, so it can be linearised anywhere
 * after its call, including after everything else (which is the same as never happening, for
 * every observer). Such an operation's output is unknown and never checked.
 *
 * Every partition gets its own verdict (`keys`), each search within its own bounds: one refuted
 * partition makes the whole history non-linearizable whatever the other searches did (by default
 * the search stops there; `allKeys` decides the rest too); the history is 'unknown' only when no
 * partition is refuted and some search hit a bound.
 */
import { bool, intIn, positiveInt, resolveOptions } from '../../pmem/index.js';

export interface Operation<I, O> {
  /** Client or process id, for reports. */
  client: number;
  input: I;
  /** Output when the operation completed; undefined when the outcome is unknown. */
  output: O | undefined;
  /** Invocation time (any monotonic unit; ties are broken call-before-return). */
  call: number;
  /** Response time; undefined when the operation was cut by a crash (outcome unknown). */
  ret: number | undefined;
}

export interface Model<S, I, O> {
  init(): S;
  /**
   * Applies `input` to `state`. With a known `output`, returns the next state when the output is
   * what the sequential specification allows, or undefined when it is not. With `output`
   * undefined (unknown outcome), returns the next state as if the operation took effect.
   */
  step(state: S, input: I, output: O | undefined): S | undefined;
  /** A string that is equal for equal states (for memoisation). */
  key(state: S): string;
  /** The partition (e.g. the key) an operation belongs to; omit for a single partition. */
  partition?(input: I): string;
  /** For reports. */
  describe?(op: Operation<I, O>): string;
  /**
   * Optional: the operations of one partition that can be left out without changing its verdict
   * (each returns true to drop). Only operations cut by a crash may be dropped: a cut operation may
   * take effect or not, so one whose every effect no completed operation can observe is as good as
   * one that never happened — and each cut operation kept doubles the states the search may visit.
   */
  droppable?(op: Operation<I, O>, partition: readonly Operation<I, O>[]): boolean;
}

/** One partition's (key's) verdict. */
export interface KeyVerdict {
  key: string;
  ok: boolean | 'unknown';
}

export type CheckResult<I, O> =
  | { ok: true; explored: number; partitions: number; keys: KeyVerdict[] }
  /** `partition`, `operations`, `reason`: the first refuted partition (every one is in `keys`). */
  | { ok: false; explored: number; partitions: number; keys: KeyVerdict[]; partition: string; operations: Operation<I, O>[]; reason: string }
  /** `partition`, `reason`: the first undecided partition; no partition was refuted. */
  | { ok: 'unknown'; explored: number; partitions: number; keys: KeyVerdict[]; partition: string; reason: string };

export interface CheckOptions {
  /** Bound on search steps per partition; past it the partition is 'unknown' (never a false verdict). */
  maxSteps: number;
  /**
   * Bound on the memoised (linearised set, state) pairs per partition, which bounds the search's
   * memory; past it the partition is 'unknown'. At most 16,000,000 (a JavaScript Set holds 2^24).
   */
  maxCache: number;
  /**
   * Decide every partition. By default the search stops at the first refuted partition (the
   * history is then non-linearizable whatever the others say) and the partitions not decided by
   * then are listed as 'unknown' in `keys`.
   */
  allKeys: boolean;
}

/** The largest `maxCache` (below the 2^24 entries a JavaScript Set can hold). */
export const MAX_CACHE_LIMIT = 16_000_000;

export const CHECK_DEFAULTS: Readonly<CheckOptions> = Object.freeze({ maxSteps: 2_000_000, maxCache: 4_000_000, allKeys: false });

interface Entry<I, O> {
  op: Operation<I, O>;
  id: number;
  isCall: boolean;
  time: number;
  match: Entry<I, O> | undefined; // call -> its return entry
  prev: Entry<I, O> | undefined;
  next: Entry<I, O> | undefined;
}

export function checkLinearizable<S, I, O>(model: Model<S, I, O>, history: Operation<I, O>[], options: Partial<CheckOptions> = {}): CheckResult<I, O> {
  const o = resolveOptions(CHECK_DEFAULTS, options, { maxSteps: positiveInt, maxCache: intIn(1, MAX_CACHE_LIMIT), allKeys: bool });
  for (const op of history) {
    if (!Number.isFinite(op.call) || (op.ret !== undefined && (!Number.isFinite(op.ret) || op.ret < op.call))) {
      throw new RangeError(`operation of client ${op.client} has call ${op.call} and return ${op.ret}: need finite call <= return`);
    }
  }
  const parts = new Map<string, Operation<I, O>[]>();
  for (const op of history) {
    const p = model.partition ? model.partition(op.input) : '';
    let list = parts.get(p);
    if (!list) parts.set(p, (list = []));
    list.push(op);
  }
  if (model.droppable) {
    for (const [p, list] of parts) parts.set(p, list.filter((op) => op.ret !== undefined || !model.droppable!(op, list)));
  }
  // Iterative deepening over the partitions: every undecided one is searched afresh with a step
  // budget that grows fourfold per round up to maxSteps (a lone undecided partition gets maxSteps
  // at once). A refutation within a small budget is found before any other partition's search has
  // spent its whole bound; the rework costs at most a third of the last round's budget; one
  // memoisation cache is alive at a time.
  const verdicts = new Map<string, { ok: boolean | 'unknown'; reason?: string; longest: number }>();
  let explored = 0;
  let refuted: string | undefined;
  let budget = Math.min(FIRST_BUDGET, o.maxSteps);
  let pending = [...parts.keys()];
  while (pending.length > 0 && (o.allKeys || refuted === undefined)) {
    if (pending.length === 1) budget = o.maxSteps;
    const next: string[] = [];
    for (const p of pending) {
      const r = checkPartition(model, parts.get(p)!, budget, o.maxCache);
      explored += r.explored;
      if (r.verdict === 'unknown' && r.cacheFull !== true && budget < o.maxSteps) {
        next.push(p);
        continue;
      }
      verdicts.set(p, { ok: r.verdict, reason: r.verdict === 'unknown' ? r.reason : undefined, longest: r.longest });
      if (r.verdict === false && !o.allKeys) {
        refuted = p;
        break;
      }
      if (r.verdict === false) refuted ??= p;
    }
    pending = next;
    budget = Math.min(budget * 4, o.maxSteps);
  }
  const keys: KeyVerdict[] = [...parts.keys()].map((key) => ({ key, ok: verdicts.get(key)?.ok ?? 'unknown' }));
  const partitions = parts.size;
  if (refuted !== undefined) {
    const ops = parts.get(refuted)!;
    const longest = verdicts.get(refuted)!.longest;
    return { ok: false, explored, partitions, keys, partition: refuted, operations: ops, reason: `no linearization of the ${ops.length} operations on partition '${refuted}'; longest linearizable prefix: ${longest} operations` };
  }
  const undecided = keys.find((k) => k.ok === 'unknown');
  if (undecided) return { ok: 'unknown', explored, partitions, keys, partition: undecided.key, reason: verdicts.get(undecided.key)!.reason! };
  return { ok: true, explored, partitions, keys };
}

/** The first round's step budget per partition (then ×4 per round, up to maxSteps). */
const FIRST_BUDGET = 10_000;

interface PartitionResult {
  verdict: boolean | 'unknown';
  explored: number;
  longest: number;
  reason?: string;
  /** The memoisation bound stopped the search (more steps would not help). */
  cacheFull?: boolean;
}

function checkPartition<S, I, O>(model: Model<S, I, O>, ops: Operation<I, O>[], maxSteps: number, maxCache: number): PartitionResult {
  const n = ops.length;
  if (n === 0) return { verdict: true, explored: 0, longest: 0 };
  // Unknown outcomes return after everything else.
  const tEnd = ops.reduce((m, op) => Math.max(m, op.call, op.ret ?? op.call), -Infinity) + 1;
  const events: Entry<I, O>[] = [];
  ops.forEach((op, id) => {
    const call: Entry<I, O> = { op, id, isCall: true, time: op.call, match: undefined, prev: undefined, next: undefined };
    const ret: Entry<I, O> = { op, id, isCall: false, time: op.ret ?? tEnd, match: undefined, prev: undefined, next: undefined };
    call.match = ret;
    events.push(call, ret);
  });
  // Calls before returns at equal times: touching operations count as concurrent.
  events.sort((a, b) => a.time - b.time || (a.isCall === b.isCall ? a.id - b.id : a.isCall ? -1 : 1));
  const head: Entry<I, O> = { op: ops[0]!, id: -1, isCall: false, time: -Infinity, match: undefined, prev: undefined, next: undefined };
  let last = head;
  for (const e of events) {
    last.next = e;
    e.prev = last;
    last = e;
  }

  const lift = (e: Entry<I, O>): void => {
    e.prev!.next = e.next;
    if (e.next) e.next.prev = e.prev;
    const m = e.match!;
    m.prev!.next = m.next;
    if (m.next) m.next.prev = m.prev;
  };
  const unlift = (e: Entry<I, O>): void => {
    const m = e.match!;
    m.prev!.next = m;
    if (m.next) m.next.prev = m;
    e.prev!.next = e;
    if (e.next) e.next.prev = e;
  };

  // The linearised set as 16-bit words (a cache key is their characters), and each distinct model
  // state interned to a number: a cache key is short whatever the size of the state.
  const words = new Uint16Array(Math.ceil(n / 16));
  const setBit = (id: number, on: boolean): void => {
    if (on) words[id >> 4]! |= 1 << (id & 15);
    else words[id >> 4]! &= ~(1 << (id & 15));
  };
  const stateIds = new Map<string, number>();
  const cache = new Set<string>();
  const stack: Array<{ entry: Entry<I, O>; state: S }> = [];
  let state = model.init();
  let entry = head.next;
  let steps = 0;
  let longest = 0;
  const cacheKey = (s: S): string => {
    const k = model.key(s);
    let sid = stateIds.get(k);
    if (sid === undefined) stateIds.set(k, (sid = stateIds.size));
    let bits = '';
    if (words.length <= 4096) bits = String.fromCharCode.apply(null, words as unknown as number[]);
    else for (let i = 0; i < words.length; i += 4096) bits += String.fromCharCode.apply(null, words.subarray(i, i + 4096) as unknown as number[]);
    return bits + String.fromCharCode(sid & 0xffff, sid >>> 16);
  };

  while (head.next !== undefined) {
    if (++steps > maxSteps) return { verdict: 'unknown', explored: steps - 1, longest, reason: `search bound of ${maxSteps} steps reached` };
    if (entry === undefined) return { verdict: false, explored: steps, longest };
    if (entry.isCall) {
      const next = model.step(state, entry.op.input, entry.op.ret === undefined ? undefined : entry.op.output);
      let advanced = false;
      if (next !== undefined) {
        setBit(entry.id, true);
        const key = cacheKey(next);
        if (!cache.has(key)) {
          if (cache.size >= maxCache) return { verdict: 'unknown', explored: steps, longest, reason: `memoisation bound of ${maxCache} cached states reached`, cacheFull: true };
          cache.add(key);
          stack.push({ entry, state });
          state = next;
          lift(entry);
          longest = Math.max(longest, stack.length);
          entry = head.next;
          advanced = true;
        } else {
          setBit(entry.id, false);
        }
      }
      if (!advanced) entry = entry.next;
    } else {
      // A return whose call is not linearised yet: backtrack.
      if (stack.length === 0) return { verdict: false, explored: steps, longest };
      const top = stack.pop()!;
      state = top.state;
      setBit(top.entry.id, false);
      unlift(top.entry);
      entry = top.entry.next;
    }
  }
  return { verdict: true, explored: steps, longest };
}

// ------------------------------------------------------------------ a key-value register model

export type KvInput = { kind: 'put'; key: string; value: string } | { kind: 'delete'; key: string } | { kind: 'get'; key: string };
/** get: the value read, or null for absent; put / delete: null. */
export type KvOutput = string | null;

/** Per-key registers with put / delete / get; partitions by key. */
export const kvModel: Model<string | null, KvInput, KvOutput> = {
  init: () => null,
  step(state, input, output) {
    switch (input.kind) {
      case 'put':
        return input.value;
      case 'delete':
        return null;
      case 'get':
        if (output === undefined) return state; // an unknown read changes nothing
        return output === state ? state : undefined;
    }
  },
  key: (s) => (s === null ? '\u0000' : `=${s}`),
  partition: (input) => input.key,
  // A cut GET changes nothing; a cut PUT whose value no completed GET returned, or a cut DELETE when
  // no completed GET returned null, changes nothing any completed operation saw: leaving it out
  // keeps the verdict (a linearization that includes it has no read of its value before the next
  // write, so dropping it there is a linearization too).
  droppable: (op, partition) => {
    if (op.input.kind === 'get') return true;
    const written = op.input.kind === 'put' ? op.input.value : null;
    return !partition.some((o) => o.ret !== undefined && o.input.kind === 'get' && o.output === written);
  },
  describe: (op) => `client ${op.client} ${op.input.kind}(${op.input.key}${op.input.kind === 'put' ? `, ${op.input.value}` : ''}) -> ${op.ret === undefined ? '?' : String(op.output)} [${op.call}, ${op.ret ?? '∞'}]`,
};
