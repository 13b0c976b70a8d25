/** Seed mixing of the explorer: one function, so every derived stream (scheduling, images, NIC) is independent and replayable. */
export function mix(a: number, b: number, c = 0, d = 0): number {
  let h = (a ^ Math.imul(b + 0x9e3779b9, 0x85ebca6b) ^ Math.imul(c + 0x7f4a7c15, 0xc2b2ae35) ^ Math.imul(d + 0x165667b1, 0x27d4eb2f)) | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h & 0x7fffffff;
}

/** Parses "A..B" (inclusive) or "A" into a list of seeds. */
export function parseSeedRange(s: string): number[] {
  const m = /^(-?\d+)(?:\.\.(-?\d+))?$/.exec(s.trim());
  if (m === null) throw new TypeError(`seeds must be A..B or A (integers), got ${s}`);
  const a = Number(m[1]);
  const b = m[2] === undefined ? a : Number(m[2]);
  if (!Number.isSafeInteger(a) || !Number.isSafeInteger(b) || b < a || b - a >= 100_000) throw new RangeError(`seeds must be A..B with A <= B and at most 100000 seeds, got ${s}`);
  return Array.from({ length: b - a + 1 }, (_, i) => a + i);
}
