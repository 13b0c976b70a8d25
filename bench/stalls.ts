/**
 * Stalls of a closed-loop load (probe-tcp.ts): the intervals in which no request completed. With
 * 2 × 32 calls in flight a healthy server completes one every few microseconds; a gap of
 * milliseconds between two completions is time in which the whole pipeline stood still (an msync
 * that took long, the server's thread off its CPU, a socket write that blocked). What the gaps add
 * up to is the share of the run a throughput figure lost to them.
 */

export interface StallSummary {
  /** Completions seen. */
  completions: number;
  /** Span from the first completion to the last, µs. */
  spanUs: number;
  /** Gaps between consecutive completions of at least minGapUs. */
  count: number;
  /** Their total, µs. */
  totalUs: number;
  /** The longest gap, µs (any length). */
  maxGapUs: number;
  /** totalUs ÷ spanUs (0 with fewer than two completions). */
  share: number;
  /** The first STALLS_LISTED stalls: [start (the completion before the gap), length], µs. */
  list: Array<[number, number]>;
}

/** How many stalls a summary lists (the count and total cover them all). */
export const STALLS_LISTED = 200;

/**
 * Stalls counted as completions come (probe-tcp's load): nothing kept per completion, so a long
 * run holds no growing array (a client process that keeps millions of entries changes its own
 * garbage collection, and with it the rate it drives — docs/benchmarks.md).
 */
export class StallTracker {
  readonly #minGapUs: number;
  #first = 0;
  #last = 0;
  #n = 0;
  #count = 0;
  #totalUs = 0;
  #maxGapUs = 0;
  readonly #list: Array<[number, number]> = [];

  constructor(minGapUs: number) {
    this.#minGapUs = minGapUs;
  }

  /** A completion at `us` (µs; a time earlier than the one before counts as no gap). */
  add(us: number): void {
    if (this.#n === 0) this.#first = us;
    else {
      const gap = us - this.#last;
      if (gap > this.#maxGapUs) this.#maxGapUs = gap;
      if (gap >= this.#minGapUs) {
        this.#count++;
        this.#totalUs += gap;
        if (this.#list.length < STALLS_LISTED) this.#list.push([this.#last, gap]);
      }
    }
    this.#last = us;
    this.#n++;
  }

  summary(): StallSummary {
    const spanUs = this.#n >= 2 ? this.#last - this.#first : 0;
    return { completions: this.#n, spanUs, count: this.#count, totalUs: this.#totalUs, maxGapUs: this.#maxGapUs, share: spanUs > 0 ? this.#totalUs / spanUs : 0, list: [...this.#list] };
  }
}

/** The stalls of a series of completion times (µs, in the order they were seen): StallTracker over it. */
export function stalls(completionsUs: ArrayLike<number>, minGapUs: number): StallSummary {
  const t = new StallTracker(minGapUs);
  for (let i = 0; i < completionsUs.length; i++) t.add(completionsUs[i]!);
  return t.summary();
}
