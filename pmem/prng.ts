/**
 * Seeded randomness (DESIGN §7) over pure-rand, and entropy sources for identities (UUIDs, rkeys,
 * tokens). The crypto entropy source lives in pmem/runtime.ts; everything else is seeded.
 */
import prand from 'pure-rand';

export interface Prng {
  /** The seed this generator was made from (for printing and replay). */
  readonly seed: number;
  /** Uniform integer in [min, max] (inclusive; both safe integers, max - min < 2^32). */
  int(min: number, max: number): number;
  /** Uniform 32-bit unsigned integer. */
  u32(): number;
  /** Uniform float in [0, 1). */
  float(): number;
  /** true with probability p. */
  chance(p: number): boolean;
  /** A new independent generator derived from this one (for per-component streams). */
  fork(): Prng;
}

export interface Entropy {
  /** `n` random bytes. */
  bytes(n: number): Uint8Array;
}

class PureRandPrng implements Prng {
  readonly seed: number;
  #rng: prand.RandomGenerator;

  constructor(seed: number) {
    this.seed = seed;
    this.#rng = prand.xoroshiro128plus(seed);
  }

  int(min: number, max: number): number {
    return prand.unsafeUniformIntDistribution(min, max, this.#rng);
  }

  u32(): number {
    return this.int(0, 0xffffffff);
  }

  float(): number {
    // 53 random bits would be ideal; 32 are plenty for probabilities here.
    return this.u32() / 0x1_0000_0000;
  }

  chance(p: number): boolean {
    if (p <= 0) return false;
    if (p >= 1) return true;
    return this.float() < p;
  }

  fork(): Prng {
    return new PureRandPrng(this.u32() | 0);
  }
}

/** A seeded PRNG (xoroshiro128+). The seed is any 32-bit integer. */
export function createPrng(seed: number): Prng {
  if (!Number.isSafeInteger(seed)) throw new TypeError(`seed must be an integer, got ${seed}`);
  return new PureRandPrng(seed | 0);
}

/** Entropy drawn from a seeded PRNG: reproducible identities for tests and simulation. */
export function seededEntropy(prng: Prng): Entropy {
  return {
    bytes(n: number): Uint8Array {
      const out = new Uint8Array(n);
      for (let i = 0; i < n; i++) out[i] = prng.int(0, 255);
      return out;
    },
  };
}
