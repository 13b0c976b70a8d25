/**
 * From a checker's history to a picture: labels for the key-value model, timeline operations from
 * checker operations, and the shortest non-linearizable sub-history of a failing history.
 */
import { checkLinearizable, type KvInput, type KvOutput, type Model, type Operation } from '../../check/index.js';
import { shortenHistory, type ShortenOptions, type ShortenResult } from './shorten.js';
import type { TimelineOperation } from './render.js';

/** `put(k1, v3)`, `delete(k1)`, `get(k1) → v2`, `get(k1) → ∅` (absent), `get(k1) → ?` (cut). */
export function kvLabel(op: Operation<KvInput, KvOutput>): string {
  const i = op.input;
  switch (i.kind) {
    case 'put':
      return `put(${i.key}, ${i.value})`;
    case 'delete':
      return `delete(${i.key})`;
    case 'get':
      return `get(${i.key}) → ${op.ret === undefined || op.output === undefined ? '?' : op.output === null ? '∅' : op.output}`;
  }
}

/**
 * Timeline operations for checker operations. `highlight` names the operations to draw red: a
 * predicate, or a list of the very operation objects (e.g. the checker's `operations`).
 */
export function timelineOperations<I, O>(
  history: readonly Operation<I, O>[],
  label: (op: Operation<I, O>) => string,
  highlight?: readonly Operation<I, O>[] | ((op: Operation<I, O>) => boolean),
  node?: (op: Operation<I, O>) => number | undefined,
): TimelineOperation[] {
  const named = Array.isArray(highlight) ? new Set<Operation<I, O>>(highlight) : undefined;
  const isNamed = (op: Operation<I, O>): boolean => (typeof highlight === 'function' ? highlight(op) : named !== undefined && named.has(op));
  return history.map((op) => {
    const t: TimelineOperation = { client: op.client, call: op.call, ret: op.ret, label: label(op), highlight: isNamed(op) };
    const n = node?.(op);
    if (n !== undefined) t.node = n;
    return t;
  });
}

/**
 * A well-formedness rule for shortening key-value histories: a sub-history may not keep a read
 * whose answer it no longer explains — a get that returned v keeps the put(k, v) (values are
 * unique per write in pmrpc's workloads; with repeats, any one put of v will do), and a get that
 * returned absent keeps every delete of k. Without it, delta debugging happily "finds" a lone
 * get(k) → v (a value never written): a failure, but not the one that happened.
 */
export function kvWellFormed(history: readonly Operation<KvInput, KvOutput>[]): (ops: Operation<KvInput, KvOutput>[]) => boolean {
  const deletes = new Map<string, number>();
  for (const op of history) if (op.input.kind === 'delete') deletes.set(op.input.key, (deletes.get(op.input.key) ?? 0) + 1);
  return (ops) => {
    const puts = new Set<string>();
    const dels = new Map<string, number>();
    for (const op of ops) {
      if (op.input.kind === 'put') puts.add(`${op.input.key}\u0000${op.input.value}`);
      else if (op.input.kind === 'delete') dels.set(op.input.key, (dels.get(op.input.key) ?? 0) + 1);
    }
    for (const op of ops) {
      if (op.input.kind !== 'get' || op.ret === undefined || op.output === undefined) continue;
      if (op.output === null ? (dels.get(op.input.key) ?? 0) !== (deletes.get(op.input.key) ?? 0) : !puts.has(`${op.input.key}\u0000${op.output}`)) return false;
    }
    return true;
  };
}

/**
 * The shortest non-linearizable sub-history found by delta debugging, starting from the partition
 * (key) the checker rejects; a RangeError when the history is linearizable. A checker verdict of
 * 'unknown' (search bound) counts as passing, so the result is always a definite failure. Pass
 * `wellFormed` (e.g. `kvWellFormed(history)`) to keep what explains each read.
 */
export function shortestNonLinearizable<S, I, O>(
  model: Model<S, I, O>,
  history: readonly Operation<I, O>[],
  options: Partial<ShortenOptions> & { maxSteps?: number; wellFormed?: (ops: Operation<I, O>[]) => boolean } = {},
): ShortenResult<Operation<I, O>> {
  const checkOpts = options.maxSteps === undefined ? {} : { maxSteps: options.maxSteps };
  const shortenOpts: Partial<ShortenOptions> = options.maxAttempts === undefined ? {} : { maxAttempts: options.maxAttempts };
  const wellFormed = options.wellFormed ?? ((): boolean => true);
  const whole = checkLinearizable(model, [...history], checkOpts);
  if (whole.ok !== false) throw new RangeError(`shortestNonLinearizable needs a non-linearizable history; the checker says ${String(whole.ok)}`);
  // The checker's own operations for the failing partition are the objects of the history.
  const start = wellFormed(whole.operations) ? whole.operations : [...history];
  const r = shortenHistory(start, (ops) => wellFormed(ops) && checkLinearizable(model, ops, checkOpts).ok === false, shortenOpts);
  return { ...r, attempts: r.attempts + 1 };
}
