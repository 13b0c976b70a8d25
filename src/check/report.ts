/** What the transactional checkers share: their result shape and a per-kind capped anomaly list. */

export type TxnType = 'ok' | 'fail' | 'info';
export type TxnId = number | string;

export interface CheckerResult<A, S> {
  /** 'unknown': the check could not decide (a bound was exceeded, nothing to check) — count it as a failure. */
  valid: boolean | 'unknown';
  anomalies: A[];
  stats: S;
  /** Why the result is 'unknown'. */
  reason?: string;
}

/** Collects anomalies: counts every one per kind, lists at most `maxPerKind` of each. */
export class AnomalyList<A extends { kind: K }, K extends string> {
  readonly list: A[] = [];
  readonly counts: Partial<Record<K, number>> = {};
  constructor(private readonly maxPerKind: number) {}
  add(a: A): void {
    const c = (this.counts[a.kind] ?? 0) + 1;
    this.counts[a.kind] = c;
    if (c <= this.maxPerKind) this.list.push(a);
  }
}

/** A value for messages: strings quoted, arrays bracketed. */
export const show = (v: unknown): string =>
  typeof v === 'string' ? `'${v}'` : Array.isArray(v) ? `[${v.map(show).join(', ')}]` : v !== null && typeof v === 'object' ? JSON.stringify(v) : String(v);
export const isFiniteNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** A list for messages, long ones elided in the middle. */
export function showList(v: readonly number[], max = 12): string {
  if (v.length <= max) return `[${v.join(', ')}]`;
  const h = Math.floor(max / 2);
  return `[${v.slice(0, h).join(', ')}, … ${v.length - 2 * h} more …, ${v.slice(-h).join(', ')}]`;
}
