/**
 * The one history cutter: a recorded history as a checker judges it at crash time `t`. An
 * operation called at or after `t` did not happen; one that returned before `t` (without an error)
 * is acknowledged and keeps its outcome; every other one was in flight when the crash came (or
 * failed without saying whether it took effect): pending, so it may or may not have happened.
 * The crash suites of kv, rs, the register (Operation histories: cutHistory) and tx (its records:
 * cutRecords with its own pending form) all cut here.
 */
import type { Operation } from './linearizability.js';

/** A recorded operation: when it was called, when it returned (undefined: never), and the error it returned with, if any. */
export interface Timed {
  call: number;
  ret: number | undefined;
  error?: unknown;
}

/**
 * The records called before `t`: those acknowledged before `t` (returned, no error) as they are,
 * the others as `pending` makes them (the outcome unknown). Order is kept.
 */
export function cutRecords<R extends Timed, P>(records: readonly R[], t: number, pending: (r: R) => P): Array<R | P> {
  return records.filter((r) => r.call < t).map((r) => (r.ret !== undefined && r.ret < t && r.error === undefined ? r : pending(r)));
}

/**
 * An Operation history as of time `t` (what the linearizability and lost-write checkers take):
 * completed operations keep their output; the rest have neither output nor return (they may or
 * may not have happened). Extra fields of the recorded operations (e.g. `error`) are dropped.
 */
export function cutHistory<I, O>(ops: ReadonlyArray<Operation<I, O> & { error?: unknown }>, t: number): Array<Operation<I, O>> {
  return cutRecords(ops, t, (op): Operation<I, O> => ({ client: op.client, input: op.input, output: undefined, call: op.call, ret: undefined })).map((op) => ({ client: op.client, input: op.input, output: op.output, call: op.call, ret: op.ret }));
}
