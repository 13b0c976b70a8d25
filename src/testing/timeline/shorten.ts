/**
 * Shortens a failing history for its picture: Zeller's delta debugging (ddmin) over the operations,
 * keeping a sub-history only while the checker still rejects it. Bounded in checker calls; the
 * result always fails (it is the input itself if nothing could be dropped). When the bound is not
 * reached the result is 1-minimal: dropping any single operation makes it pass.
 *
 * Dropping operations from a history is sound for a picture, not for a verdict: the shortened
 * history is a witness that the original failed — a smaller failing history that the checker
 * rejects for the same kind of reason — and the original history stays the one that was checked.
 */
import { intAtLeast, resolveOptions } from '../../../pmem/index.js';

export interface ShortenOptions {
  /** Bound on calls of the predicate (the initial check included). */
  maxAttempts: number;
}

export const SHORTEN_DEFAULTS: Readonly<ShortenOptions> = Object.freeze({ maxAttempts: 2000 });

export interface ShortenResult<T> {
  /** The shortest failing sub-history found, in the original order. */
  ops: T[];
  /** Predicate calls made. */
  attempts: number;
  /** True when no single operation can be dropped (not claimed when the bound cut the search). */
  minimal: boolean;
}

/**
 * Greedily drops operations while `stillFails` holds. `stillFails(ops)` must be true for the input
 * (a RangeError otherwise) and deterministic.
 */
export function shortenHistory<T>(history: readonly T[], stillFails: (ops: T[]) => boolean, options: Partial<ShortenOptions> = {}): ShortenResult<T> {
  const o = resolveOptions(SHORTEN_DEFAULTS, options, { maxAttempts: intAtLeast(1) });
  let attempts = 1;
  if (!stillFails([...history])) throw new RangeError('shortenHistory needs a failing history: the predicate holds no failure for the input');
  let cur = [...history];
  let n = 2;
  let boundHit = false;
  outer: while (cur.length >= 2) {
    const chunk = Math.ceil(cur.length / n);
    let reduced = false;
    // Try dropping each chunk (keep the complement); ddmin also tries keeping each chunk alone,
    // which for histories is rarely the answer and costs as much — the complements suffice.
    for (let start = 0; start < cur.length; start += chunk) {
      if (attempts >= o.maxAttempts) {
        boundHit = true;
        break outer;
      }
      const candidate = cur.slice(0, start).concat(cur.slice(start + chunk));
      if (candidate.length === 0) continue;
      attempts++;
      if (stillFails(candidate)) {
        cur = candidate;
        n = Math.max(n - 1, 2);
        reduced = true;
        break;
      }
    }
    if (!reduced) {
      if (chunk === 1) break; // every single drop tried and refused: 1-minimal
      n = Math.min(n * 2, cur.length);
    }
  }
  return { ops: cur, attempts, minimal: !boundHit };
}
