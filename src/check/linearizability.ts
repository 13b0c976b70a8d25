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
 * Every partition is searched, each within its own bounds, and gets its own verdict (`keys`): one
 * refuted partition makes the whole history non-linearizable whatever the other searches did; the
 * history is 'unknown' only when no partition is refuted and some search hit a bound.
 */
import { intIn, positiveInt, resolveOptions } from '../../pmem/index.js';

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
}

/** The largest `maxCache` (below the 2^24 entries a JavaScript Set can hold). */
export const MAX_CACHE_LIMIT = 16_000_000;

export const CHECK_DEFAULTS: Readonly<CheckOptions> = Object.freeze({ maxSteps: 2_000_000, maxCache: 4_000_000 });

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
  const o = resolveOptions(CHECK_DEFAULTS, options, { maxSteps: positiveInt, maxCache: intIn(1, MAX_CACHE_LIMIT) });
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
  let explored = 0;
  const keys: KeyVerdict[] = [];
  let refuted: { p: string; ops: Operation<I, O>[]; longest: number } | undefined;
  let undecided: { p: string; reason: string } | undefined;
  for (const [p, ops] of parts) {
    const r = checkPartition(model, ops, o.maxSteps, o.maxCache);
    explored += r.explored;
    keys.push({ key: p, ok: r.verdict });
    if (r.verdict === false) refuted ??= { p, ops, longest: r.longest };
    else if (r.verdict === 'unknown') undecided ??= { p, reason: r.reason! };
  }
  const partitions = parts.size;
  if (refuted) {
    const { p, ops, longest } = refuted;
    return { ok: false, explored, partitions, keys, partition: p, operations: ops, reason: `no linearization of the ${ops.length} operations on partition '${p}'; longest linearizable prefix: ${longest} operations` };
  }
  if (undecided) return { ok: 'unknown', explored, partitions, keys, partition: undecided.p, reason: undecided.reason };
  return { ok: true, explored, partitions, keys };
}

function checkPartition<S, I, O>(model: Model<S, I, O>, ops: Operation<I, O>[], maxSteps: number, maxCache: number): { verdict: boolean | 'unknown'; explored: number; longest: number; reason?: string } {
  const n = ops.length;
  if (n === 0) return { verdict: true, explored: 0, longest: 0 };
  // Unknown outcomes return after everything else.
  const tEnd = Math.max(...ops.map((op) => Math.max(op.call, op.ret ?? op.call))) + 1;
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

  const linearized = new Uint8Array(n);
  const cache = new Set<string>();
  const stack: Array<{ entry: Entry<I, O>; state: S }> = [];
  let state = model.init();
  let entry = head.next;
  let steps = 0;
  let longest = 0;
  const bitsKey = (): string => {
    let s = '';
    for (let i = 0; i < n; i += 16) {
      let v = 0;
      for (let j = i; j < Math.min(n, i + 16); j++) v |= linearized[j]! << (j - i);
      s += String.fromCharCode(v + 32);
    }
    return s;
  };

  while (head.next !== undefined) {
    if (++steps > maxSteps) return { verdict: 'unknown', explored: steps - 1, longest, reason: `search bound of ${maxSteps} steps reached` };
    if (entry === undefined) return { verdict: false, explored: steps, longest };
    if (entry.isCall) {
      const next = model.step(state, entry.op.input, entry.op.ret === undefined ? undefined : entry.op.output);
      let advanced = false;
      if (next !== undefined) {
        linearized[entry.id] = 1;
        const key = `${bitsKey()}|${model.key(next)}`;
        if (!cache.has(key)) {
          if (cache.size >= maxCache) return { verdict: 'unknown', explored: steps, longest, reason: `memoisation bound of ${maxCache} cached states reached` };
          cache.add(key);
          stack.push({ entry, state });
          state = next;
          lift(entry);
          longest = Math.max(longest, stack.length);
          entry = head.next;
          advanced = true;
        } else {
          linearized[entry.id] = 0;
        }
      }
      if (!advanced) entry = entry.next;
    } else {
      // A return whose call is not linearised yet: backtrack.
      if (stack.length === 0) return { verdict: false, explored: steps, longest };
      const top = stack.pop()!;
      state = top.state;
      linearized[top.entry.id] = 0;
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
  describe: (op) => `client ${op.client} ${op.input.kind}(${op.input.key}${op.input.kind === 'put' ? `, ${op.input.value}` : ''}) -> ${op.ret === undefined ? '?' : String(op.output)} [${op.call}, ${op.ret ?? '∞'}]`,
};
