/**
 * Invariant checkers of two classic transactional workloads (hand-written, like the list-append
 * checker in elle.ts):
 *
 * - **Bank** (Jepsen's bank test): transfers move money between a fixed set of accounts, so the
 *   sum of the balances is constant. Every committed snapshot read (a read-only transaction that
 *   read every account) and the final state (e.g. read after recovery) must show every account,
 *   no other, the fixed total and (unless allowed) no negative balance.
 * - **Cycle** (FoundationDB's Cycle workload): N keys form one ring, each holding the name of the
 *   next; a transaction reads three consecutive links a → b → c → d and rewrites them
 *   a → c → b → d, which keeps one ring of N. Every committed read of all keys, and the final
 *   state, must be a single cycle through all N keys.
 *
 * Both take the whole history or just its snapshots: entries whose `type` is not 'ok', or whose
 * snapshot is null / absent (transfers, swaps), are skipped — an uncommitted or indeterminate
 * transaction's reads prove nothing. With nothing to check (no committed snapshot, no final
 * state) the result is 'unknown', which callers count as a failure.
 *
 * A snapshot is a plain object or a Map; account and key names may be strings or numbers and are
 * compared as strings (so 1 and '1' are one name). Balances are numbers, or bigints when `total`
 * is a bigint.
 */
import { bool, must, positiveInt, resolveOptions } from '../../pmem/index.js';
import { AnomalyList, isFiniteNumber, show, type CheckerResult, type TxnId, type TxnType } from './report.js';

export type Name = string | number;
/** A read of several names: a plain object or a Map. */
export type Snapshot<V> = Readonly<Record<string, V>> | ReadonlyMap<Name, V>;
export type Balance = number | bigint;

/** A bank history entry: `balances` is a committed read of all the accounts (null / absent: not a snapshot). */
export interface BankSnapshot {
  id: TxnId;
  type: TxnType;
  balances?: Snapshot<Balance> | null | undefined;
}

export interface BankOptions {
  /** Every account. */
  accounts: readonly Name[];
  /** The constant sum of the balances (a bigint: every balance must be a bigint). */
  total: Balance;
  /** The final state (read after the run / after recovery), checked like a snapshot. */
  final: Snapshot<Balance> | undefined;
  /** Balances may go negative (default false: a negative balance is an anomaly). */
  negative: boolean;
  maxReportsPerKind: number;
}

export type BankAnomalyKind = 'wrong-total' | 'missing-account' | 'unknown-account' | 'negative-balance';
export interface BankAnomaly {
  kind: BankAnomalyKind;
  /** The snapshot's transaction id, or 'final'. */
  id: TxnId;
  detail: string;
}
export interface SnapshotStats {
  /** Committed snapshots checked (the final state not included). */
  snapshots: number;
  /** Entries skipped: not 'ok', or no snapshot. */
  skipped: number;
  final: boolean;
  counts: Partial<Record<string, number>>;
}
export type BankResult = CheckerResult<BankAnomaly, SnapshotStats>;

export const BANK_DEFAULTS: Readonly<BankOptions> = Object.freeze({ accounts: [], total: 0, final: undefined, negative: false, maxReportsPerKind: 8 });

const isName = (x: unknown): x is Name => typeof x === 'string' || isFiniteNumber(x);
const names = must(
  (v) => Array.isArray(v) && v.length > 0 && v.every(isName) && new Set(v.map(String)).size === v.length,
  (v) => `must be a non-empty array of distinct names (strings or numbers), got ${show(v)}`,
);
const isBig = (v: unknown): v is bigint => typeof v === 'bigint';
const isSnapshot = (v: unknown): v is Snapshot<unknown> => v instanceof Map || (v !== null && typeof v === 'object' && !Array.isArray(v));
/** The snapshot's entries with string names. */
const entriesOf = <V>(s: Snapshot<V>): Array<[string, V]> => (s instanceof Map ? [...(s as ReadonlyMap<Name, V>)].map(([k, v]) => [String(k), v]) : Object.entries(s as Readonly<Record<string, V>>));
const showSnapshot = (s: Snapshot<unknown>): string => `{${entriesOf(s).map(([k, v]) => `${k}: ${String(v)}`).join(', ')}}`;
const snapshotValid = (v: unknown, check: (x: unknown) => boolean): boolean => isSnapshot(v) && entriesOf(v).every(([, x]) => check(x));
const snapshotOption = (check: (v: unknown) => boolean, what: string) =>
  must((v) => v === undefined || snapshotValid(v, check), (v) => `must be an object or Map of ${what}, got ${isSnapshot(v) ? showSnapshot(v) : show(v)}`);

/** Validates the entries: an array of { id, type, [field]: object or Map of `check` values | null | undefined }. */
function validateEntries(history: unknown, field: string, check: (v: unknown) => boolean, what: string): void {
  if (!Array.isArray(history)) throw new TypeError(`history must be an array, got ${String(history)}`);
  history.forEach((e: unknown, i) => {
    const at = `history[${i}]`;
    if (e === null || typeof e !== 'object') throw new TypeError(`${at} must be an object, got ${String(e)}`);
    const x = e as Record<string, unknown>;
    if (typeof x.id !== 'string' && !isFiniteNumber(x.id)) throw new TypeError(`${at}.id must be a number or a string, got ${String(x.id)}`);
    if (x.type !== 'ok' && x.type !== 'fail' && x.type !== 'info') throw new TypeError(`${at}.type must be 'ok', 'fail' or 'info', got ${String(x.type)}`);
    const s = x[field];
    if (s !== undefined && s !== null && !snapshotValid(s, check)) throw new TypeError(`${at}.${field} must be an object or Map of ${what}, or null, got ${isSnapshot(s) ? showSnapshot(s) : show(s)}`);
  });
}

/** Checks bank conservation in every committed snapshot and the final state. */
export function checkBank(history: readonly BankSnapshot[], options: Partial<BankOptions> & Pick<BankOptions, 'accounts' | 'total'>): BankResult {
  const o = resolveOptions(BANK_DEFAULTS, options, {
    accounts: names,
    total: must((v) => isFiniteNumber(v) || isBig(v), (v) => `must be a finite number or a bigint, got ${String(v)}`),
    negative: bool,
    maxReportsPerKind: positiveInt,
  });
  const big = isBig(o.total);
  const isBalance = big ? isBig : isFiniteNumber;
  const what = big ? 'bigint balances (as total is a bigint)' : 'finite number balances';
  snapshotOption(isBalance, what)('final', o.final, o as unknown as Record<string, unknown>);
  validateEntries(history, 'balances', isBalance, what);
  const found = new AnomalyList<BankAnomaly, BankAnomalyKind>(o.maxReportsPerKind);
  const accounts = new Set(o.accounts.map(String));
  const check = (id: TxnId, snapshot: Snapshot<Balance>): void => {
    const balances = entriesOf(snapshot);
    const missing = coverage(found, id, balances, accounts, 'account');
    const sum = balances.reduce<Balance>((s, [a, b]) => (!accounts.has(a) ? s : big ? (s as bigint) + (b as bigint) : (s as number) + (b as number)), big ? 0n : 0);
    if (missing === 0 && sum !== o.total) found.add({ kind: 'wrong-total', id, detail: `snapshot ${show(id)} sums to ${sum}, not ${o.total}: ${showSnapshot(snapshot)}` });
    if (!o.negative) {
      const neg = balances.filter(([, b]) => b < 0);
      if (neg.length > 0) found.add({ kind: 'negative-balance', id, detail: `snapshot ${show(id)} has negative balance${neg.length > 1 ? 's' : ''} ${neg.map(([a, b]) => `${a} = ${b}`).join(', ')}` });
    }
  };
  return judge(history, (e) => e.balances, o.final, found, check);
}

/**
 * Runs `check` on every committed snapshot (`snapshot(e)`; entries not 'ok' or without one are
 * skipped) and on the final state; false with anomalies, 'unknown' with nothing checked.
 */
function judge<E extends { id: TxnId; type: TxnType }, V, A extends { kind: K }, K extends string>(
  history: readonly E[],
  snapshot: (e: E) => V | null | undefined,
  final: V | undefined,
  found: AnomalyList<A, K>,
  check: (id: TxnId, v: V) => void,
): CheckerResult<A, SnapshotStats> {
  const stats: SnapshotStats = { snapshots: 0, skipped: 0, final: final !== undefined, counts: found.counts };
  for (const e of history) {
    const v = e.type === 'ok' ? snapshot(e) : undefined;
    if (v === undefined || v === null) stats.skipped++;
    else {
      stats.snapshots++;
      check(e.id, v);
    }
  }
  if (final !== undefined) check('final', final);
  const anomalies = found.list;
  if (anomalies.length > 0) return { valid: false, anomalies, stats };
  if (stats.snapshots === 0 && !stats.final) return { valid: 'unknown', anomalies, stats, reason: 'no committed snapshot and no final state to check' };
  return { valid: true, anomalies, stats };
}

/** Reports the expected names a snapshot lacks (`missing-<noun>`) and those it has beyond them (`unknown-<noun>`); returns how many it lacks. */
function coverage<K extends string>(found: AnomalyList<{ kind: K; id: TxnId; detail: string }, K>, id: TxnId, entries: ReadonlyArray<[string, unknown]>, expected: ReadonlySet<string>, noun: 'account' | 'key'): number {
  const plural = (l: readonly string[]): string => `${noun}${l.length > 1 ? 's' : ''} ${l.map(show).join(', ')}`;
  const have = new Set(entries.map(([k]) => k));
  const missing = [...expected].filter((k) => !have.has(k));
  if (missing.length > 0) found.add({ kind: `missing-${noun}` as K, id, detail: `snapshot ${show(id)} lacks ${plural(missing)}` });
  const unknown = [...have].filter((k) => !expected.has(k));
  if (unknown.length > 0) found.add({ kind: `unknown-${noun}` as K, id, detail: `snapshot ${show(id)} has ${plural(unknown)}, not among the ${noun}s` });
  return missing.length;
}

// ---------------------------------------------------------------------------- the cycle workload

/** A cycle history entry: `values` is a committed read of all keys, each naming the next key (null / absent: not a snapshot). */
export interface CycleSnapshot {
  id: TxnId;
  type: TxnType;
  values?: Snapshot<Name> | null | undefined;
}

export interface CycleOptions {
  /** The ring's keys (at least 1). */
  keys: readonly Name[];
  /** The final state, checked like a snapshot. */
  final: Snapshot<Name> | undefined;
  maxReportsPerKind: number;
}

export type CycleAnomalyKind = 'missing-key' | 'unknown-key' | 'dangling-pointer' | 'not-one-cycle';
export interface CycleAnomaly {
  kind: CycleAnomalyKind;
  id: TxnId;
  detail: string;
}
export type CycleResult = CheckerResult<CycleAnomaly, SnapshotStats>;

export const CYCLE_DEFAULTS: Readonly<CycleOptions> = Object.freeze({ keys: [], final: undefined, maxReportsPerKind: 8 });

/** The initial ring: keys[i] → keys[i + 1], the last → keys[0]. */
export function initialRing<K extends Name>(keys: readonly K[]): Record<string, K> {
  return Object.fromEntries(keys.map((k, i) => [String(k), keys[(i + 1) % keys.length]!]));
}

/** Checks that every committed snapshot and the final state of the cycle workload is one ring of all keys. */
export function checkCycle(history: readonly CycleSnapshot[], options: Partial<CycleOptions> & Pick<CycleOptions, 'keys'>): CycleResult {
  const o = resolveOptions(CYCLE_DEFAULTS, options, { keys: names, final: snapshotOption(isName, 'key names (key → next key)'), maxReportsPerKind: positiveInt });
  validateEntries(history, 'values', isName, 'key names');
  const found = new AnomalyList<CycleAnomaly, CycleAnomalyKind>(o.maxReportsPerKind);
  const keys = new Set(o.keys.map(String));
  const check = (id: TxnId, snapshot: Snapshot<Name>): void => {
    const entries = entriesOf(snapshot);
    const values = new Map(entries.map(([k, v]) => [k, String(v)]));
    const missing = coverage(found, id, entries, keys, 'key');
    const dangling = [...values].filter(([k, v]) => keys.has(k) && !keys.has(v));
    if (dangling.length > 0) found.add({ kind: 'dangling-pointer', id, detail: `snapshot ${show(id)}: ${dangling.map(([k, v]) => `${k} → ${show(v)}`).join(', ')} point${dangling.length > 1 ? '' : 's'} outside the keys` });
    if (missing > 0 || dangling.length > 0) return;
    // Follow the ring from the first key: it must come back after exactly N steps, seeing every key.
    const start = String(o.keys[0]!);
    const seen = new Set<string>([start]);
    let at = values.get(start)!;
    while (at !== start && !seen.has(at)) {
      seen.add(at);
      at = values.get(at)!;
    }
    if (at !== start || seen.size !== keys.size) {
      const from = at === start ? `the cycle from ${show(start)} has ${seen.size} of ${keys.size} keys` : `from ${show(start)} the pointers fall into a loop at ${show(at)} that does not return`;
      found.add({ kind: 'not-one-cycle', id, detail: `snapshot ${show(id)} is not one ring: ${from}` });
    }
  };
  return judge(history, (e) => e.values, o.final, found, check);
}
