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
 * the side. The slots in use are linked in insertion order (two typed arrays): iteration follows
 * the links, over the entries present when it started and still present when reached (as a Map's,
 * except that entries added meanwhile are not visited).
 */

/** Slots a table may grow to before colliding keys go to the side Map. */
const MAX_SLOTS = 1 << 16;

export class SeqMap<V> implements ReadonlyMap<number, V> {
  #keys: Float64Array;
  #values: Array<V | undefined>;
  /** Insertion stamp per slot (0: empty): an entry's place in the order, and its identity while an iteration runs. */
  #stamps: Float64Array;
  /** The slots in use in insertion order: a doubly linked list (-1: none). */
  #next: Int32Array;
  #prev: Int32Array;
  #head = -1;
  #tail = -1;
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
    this.#next = new Int32Array(n);
    this.#prev = new Int32Array(n);
    this.#mask = n - 1;
  }

  get size(): number {
    return this.#size + (this.#side?.size ?? 0);
  }

  /** The slot of an integer key (mod the capacity, for keys past 2^31 too). */
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
    if (!Number.isSafeInteger(key) || key < 0) return this.#toSide(key, value, ++this.#stamp);
    for (;;) {
      const i = this.#slot(key);
      if (this.#stamps[i] === 0) {
        this.#place(i, key, value, ++this.#stamp);
        return this;
      }
      if (this.#keys[i] === key) {
        this.#values[i] = value; // an update keeps the key's place in the order
        return this;
      }
      if (this.#mask + 1 >= MAX_SLOTS) return this.#toSide(key, value, ++this.#stamp);
      this.#grow();
    }
  }

  delete(key: number): boolean {
    if (Number.isSafeInteger(key) && key >= 0) {
      const i = this.#slot(key);
      if (this.#stamps[i] !== 0 && this.#keys[i] === key) {
        this.#unlink(i);
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
    this.#head = this.#tail = -1;
    this.#size = 0;
    this.#side = undefined;
  }

  /** An empty slot takes the entry, last in the order. */
  #place(i: number, key: number, value: V, stamp: number): void {
    this.#keys[i] = key;
    this.#values[i] = value;
    this.#stamps[i] = stamp;
    this.#prev[i] = this.#tail;
    this.#next[i] = -1;
    if (this.#tail >= 0) this.#next[this.#tail] = i;
    else this.#head = i;
    this.#tail = i;
    this.#size++;
  }

  #unlink(i: number): void {
    const p = this.#prev[i]!;
    const n = this.#next[i]!;
    if (p >= 0) this.#next[p] = n;
    else this.#head = n;
    if (n >= 0) this.#prev[n] = p;
    else this.#tail = p;
  }

  #toSide(key: number, value: V, stamp: number): this {
    (this.#side ??= new Map()).set(key, { value, stamp });
    return this;
  }

  /**
   * A larger table: the smallest power of two at least twice this one in which the entries' keys
   * take distinct slots (at most MAX_SLOTS: past it, the entries that collide go to the side
   * Map), filled in insertion order.
   */
  #grow(): void {
    const order = this.#slotsInOrder();
    const keys = this.#keys;
    let n = (this.#mask + 1) * 2;
    for (; n < MAX_SLOTS; n *= 2) {
      const used = new Uint8Array(n);
      let ok = true;
      for (let k = 0; k < order.length && ok; k++) {
        const i = (keys[order[k]!]! % n) >>> 0;
        if (used[i] === 1) ok = false;
        else used[i] = 1;
      }
      if (ok) break;
    }
    const values = this.#values;
    const stamps = this.#stamps;
    this.#keys = new Float64Array(n);
    this.#values = new Array<V | undefined>(n).fill(undefined);
    this.#stamps = new Float64Array(n);
    this.#next = new Int32Array(n);
    this.#prev = new Int32Array(n);
    this.#mask = n - 1;
    this.#head = this.#tail = -1;
    this.#size = 0;
    for (let k = 0; k < order.length; k++) {
      const j = order[k]!;
      const key = keys[j]!;
      const i = this.#slot(key);
      if (this.#stamps[i] === 0) this.#place(i, key, values[j] as V, stamps[j]!);
      else this.#toSide(key, values[j] as V, stamps[j]!);
    }
  }

  /** The slots in use, in insertion order. */
  #slotsInOrder(): number[] {
    const out: number[] = [];
    for (let i = this.#head; i >= 0; i = this.#next[i]!) out.push(i);
    return out;
  }

  /** The entry still present with this stamp when the iteration reaches it. */
  #live(key: number, stamp: number, slot: number): { value: V } | undefined {
    if (slot >= 0 && slot < this.#stamps.length && this.#stamps[slot] === stamp && this.#keys[slot] === key) return { value: this.#values[slot] as V };
    const e = this.#side?.get(key);
    return e !== undefined && e.stamp === stamp ? { value: e.value } : undefined;
  }

  *entries(): MapIterator<[number, V]> {
    // The order when the iteration starts: [key, stamp, slot (-1: the side Map)] — the table's
    // links as they are, merged with the side Map's entries by stamp when it has any.
    const order: number[] = [];
    for (let i = this.#head; i >= 0; i = this.#next[i]!) order.push(this.#keys[i]!, this.#stamps[i]!, i);
    const side = this.#side;
    if (side !== undefined && side.size > 0) {
      const all: Array<[number, number, number]> = [];
      for (let k = 0; k < order.length; k += 3) all.push([order[k]!, order[k + 1]!, order[k + 2]!]);
      for (const [key, e] of side) all.push([key, e.stamp, -1]);
      all.sort((a, b) => a[1] - b[1]);
      order.length = 0;
      for (const [key, stamp, slot] of all) order.push(key, stamp, slot);
    }
    for (let k = 0; k < order.length; k += 3) {
      const key = order[k]!;
      const slot = order[k + 2]!;
      if (slot >= 0) {
        // (An entry moved by a grow meanwhile keeps its stamp: looked up by its key.)
        const i = this.#stamps[slot] === order[k + 1] && this.#keys[slot] === key ? slot : Number.isSafeInteger(key) && key >= 0 ? this.#slot(key) : -1;
        if (i >= 0 && this.#stamps[i] === order[k + 1] && this.#keys[i] === key) {
          yield [key, this.#values[i] as V];
          continue;
        }
      }
      const e = this.#live(key, order[k + 1]!, -1);
      if (e !== undefined) yield [key, e.value];
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
