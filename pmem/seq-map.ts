/**
 * SeqMap: a map from integer keys — sequence numbers, which come and go in a sliding window — to
 * values, without a JavaScript Map's hash tables. Written by hand (no library does this; it is a
 * direct-indexed table with a fallback).
 *
 * Why not a Map: V8's Map moves to a new table each time it grows, shrinks or sweeps its deleted
 * entries, and links the old table to the new one (so a live iterator can follow); the old table
 * keeps the entries it had. A map whose entries come and go in bursts — a client's calls in flight
 * (all answered by one msync, then as many new ones) — changes tables every burst. Once one of
 * those tables has lived long enough to be promoted to the old generation, the scavenger treats it
 * as a root: it keeps its successor alive, which keeps the next, and every entry each of them held —
 * calls long settled, their promises, their bytes — until a full GC. Measured in bench sqlite's
 * pmrpc cell (docs/benchmarks.md, issue 29, session 31): 11 % of the young generation survived each
 * scavenge, 3 ms a scavenge; with the client's maps on SeqMap, 0.2 % and 0.5 ms.
 *
 * A key lives in slot `key mod capacity`; the capacity (a power of two) doubles when a key's slot
 * holds another live key, so keys that live within a window of that size never collide, and the
 * table never shrinks (a client's window is bounded: its ring slots and the calls that wait for
 * them). Keys that are not safe integers, or that would need a table past MAX_SLOTS, go to a Map on
 * the side. Iteration is in insertion order, over the entries present when the iteration started
 * and still present when reached (as a Map's, except that entries added meanwhile are not visited).
 */

/** Slots a table may grow to before colliding keys go to the side Map. */
const MAX_SLOTS = 1 << 16;

export class SeqMap<V> implements ReadonlyMap<number, V> {
  #keys: Float64Array;
  #values: Array<V | undefined>;
  /** Insertion stamp per slot (0: empty). */
  #stamps: Float64Array;
  #mask: number;
  #size = 0;
  #stamp = 0;
  /** Keys the table cannot hold: not safe integers, or past MAX_SLOTS of spread. */
  #side: Map<number, { value: V; stamp: number }> | undefined;

  constructor(initialSlots = 16) {
    let n = 1;
    while (n < initialSlots && n < MAX_SLOTS) n *= 2;
    this.#keys = new Float64Array(n);
    this.#values = new Array<V | undefined>(n).fill(undefined);
    this.#stamps = new Float64Array(n);
    this.#mask = n - 1;
  }

  get size(): number {
    return this.#size + (this.#side?.size ?? 0);
  }

  /** The slot of an integer key (mod the capacity, for keys past 2^32 too). */
  #slot(key: number): number {
    return key <= 0x7fffffff ? key & this.#mask : (key % (this.#mask + 1)) >>> 0;
  }

  get(key: number): V | undefined {
    if (Number.isSafeInteger(key) && key >= 0) {
      const i = this.#slot(key);
      if (this.#stamps[i] !== 0 && this.#keys[i] === key) return this.#values[i];
    }
    return this.#side?.get(key)?.value;
  }

  has(key: number): boolean {
    if (Number.isSafeInteger(key) && key >= 0) {
      const i = this.#slot(key);
      if (this.#stamps[i] !== 0 && this.#keys[i] === key) return true;
    }
    return this.#side?.has(key) ?? false;
  }

  set(key: number, value: V): this {
    const side = this.#side;
    if (side !== undefined && side.has(key)) {
      side.get(key)!.value = value;
      return this;
    }
    if (!Number.isSafeInteger(key) || key < 0) return this.#toSide(key, value);
    for (;;) {
      const i = this.#slot(key);
      if (this.#stamps[i] === 0) {
        this.#keys[i] = key;
        this.#values[i] = value;
        this.#stamps[i] = ++this.#stamp;
        this.#size++;
        return this;
      }
      if (this.#keys[i] === key) {
        this.#values[i] = value; // an update keeps the key's place in the order
        return this;
      }
      if (this.#mask + 1 >= MAX_SLOTS) return this.#toSide(key, value);
      this.#grow();
    }
  }

  delete(key: number): boolean {
    if (Number.isSafeInteger(key) && key >= 0) {
      const i = this.#slot(key);
      if (this.#stamps[i] !== 0 && this.#keys[i] === key) {
        this.#stamps[i] = 0;
        this.#values[i] = undefined;
        this.#size--;
        return true;
      }
    }
    return this.#side?.delete(key) ?? false;
  }

  clear(): void {
    this.#stamps.fill(0);
    this.#values.fill(undefined);
    this.#size = 0;
    this.#side = undefined;
  }

  #toSide(key: number, value: V): this {
    (this.#side ??= new Map()).set(key, { value, stamp: ++this.#stamp });
    return this;
  }

  /** Doubles the table, every entry to its new slot (distinct keys of one old slot differ by a multiple of the old capacity; in the new one they may still collide: grown again). */
  #grow(): void {
    const keys = this.#keys;
    const values = this.#values;
    const stamps = this.#stamps;
    let n = (this.#mask + 1) * 2;
    for (;;) {
      const k2 = new Float64Array(n);
      const v2 = new Array<V | undefined>(n).fill(undefined);
      const s2 = new Float64Array(n);
      const mask = n - 1;
      let ok = true;
      for (let j = 0; j < keys.length && ok; j++) {
        if (stamps[j] === 0) continue;
        const i = (keys[j]! % n) >>> 0;
        if (s2[i] !== 0) ok = false;
        else {
          k2[i] = keys[j]!;
          v2[i] = values[j];
          s2[i] = stamps[j]!;
        }
      }
      if (ok || n >= MAX_SLOTS) {
        if (!ok) {
          // Past MAX_SLOTS the table keeps what fits and the rest goes to the side Map (rare: a window that wide).
          this.#refill(keys, values, stamps, MAX_SLOTS);
          return;
        }
        this.#keys = k2;
        this.#values = v2;
        this.#stamps = s2;
        this.#mask = mask;
        return;
      }
      n *= 2;
    }
  }

  #refill(keys: Float64Array, values: Array<V | undefined>, stamps: Float64Array, n: number): void {
    this.#keys = new Float64Array(n);
    this.#values = new Array<V | undefined>(n).fill(undefined);
    this.#stamps = new Float64Array(n);
    this.#mask = n - 1;
    this.#size = 0;
    for (let j = 0; j < keys.length; j++) {
      if (stamps[j] === 0) continue;
      const i = (keys[j]! % n) >>> 0;
      if (this.#stamps[i] === 0) {
        this.#keys[i] = keys[j]!;
        this.#values[i] = values[j];
        this.#stamps[i] = stamps[j]!;
        this.#size++;
      } else (this.#side ??= new Map()).set(keys[j]!, { value: values[j] as V, stamp: stamps[j]! });
    }
  }

  /** The entries now, oldest insertion first: [key, stamp, slot or -1 for the side Map]. */
  #order(): Array<[number, number, number]> {
    const out: Array<[number, number, number]> = [];
    const stamps = this.#stamps;
    for (let j = 0; j < stamps.length; j++) if (stamps[j] !== 0) out.push([this.#keys[j]!, stamps[j]!, j]);
    if (this.#side !== undefined) for (const [k, e] of this.#side) out.push([k, e.stamp, -1]);
    out.sort((a, b) => a[1] - b[1]);
    return out;
  }

  /** The entry still present with this stamp when the iteration reaches it. */
  #live(key: number, stamp: number, slot: number): { value: V } | undefined {
    if (slot >= 0 && slot < this.#stamps.length && this.#stamps[slot] === stamp && this.#keys[slot] === key) return { value: this.#values[slot] as V };
    const e = this.#side?.get(key);
    return e !== undefined && e.stamp === stamp ? { value: e.value } : undefined;
  }

  *entries(): MapIterator<[number, V]> {
    for (const [k, s, j] of this.#order()) {
      const e = this.#live(k, s, j);
      if (e !== undefined) yield [k, e.value];
    }
  }

  *keys(): MapIterator<number> {
    for (const [k] of this.entries()) yield k;
  }

  *values(): MapIterator<V> {
    for (const [, v] of this.entries()) yield v;
  }

  [Symbol.iterator](): MapIterator<[number, V]> {
    return this.entries();
  }

  forEach(fn: (value: V, key: number, map: ReadonlyMap<number, V>) => void, thisArg?: unknown): void {
    for (const [k, v] of this.entries()) fn.call(thisArg, v, k, this);
  }
}
