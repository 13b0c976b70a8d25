/**
 * PRISM arithmetic (DESIGN §2.4) and little-endian helpers: enhanced CAS comparison with masks,
 * pointer words. Pure functions; the NIC engine (nic.ts) does the memory side.
 */
import { invariant } from '../pmem/index.js';
import type { CasMode } from './types.js';

/** Unsigned little-endian value of `b`. */
export function leToBigint(b: Uint8Array): bigint {
  let v = 0n;
  for (let i = b.length - 1; i >= 0; i--) v = (v << 8n) | BigInt(b[i]!);
  return v;
}

/** `v` as `len` little-endian bytes (mod 2^(8·len)). */
export function bigintToLe(v: bigint, len: number): Uint8Array {
  const out = new Uint8Array(len);
  let x = BigInt.asUintN(len * 8, v);
  for (let i = 0; i < len; i++) {
    out[i] = Number(x & 0xffn);
    x >>= 8n;
  }
  return out;
}

/** An 8-byte little-endian word holding `n` (a safe non-negative integer). */
export function u64le(n: number | bigint): Uint8Array {
  return bigintToLe(BigInt(n), 8);
}

/** The 8-byte little-endian word at `b[off]`, as a number when safe, else Infinity (an impossible address). */
export function readPtr(b: Uint8Array, off = 0): number {
  if (off < 0 || off + 8 > b.length) {
    // A short word (the bytes that are there): the general path.
    const v = leToBigint(b.subarray(off, off + 8));
    return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : Number.POSITIVE_INFINITY;
  }
  // Two 32-bit halves, no BigInt (one per pointer a NIC dereferences): safe while hi < 2^21.
  const lo = (b[off]! | (b[off + 1]! << 8) | (b[off + 2]! << 16)) + b[off + 3]! * 0x1000000;
  const hi = (b[off + 4]! | (b[off + 5]! << 8) | (b[off + 6]! << 16)) + b[off + 7]! * 0x1000000;
  return hi <= 0x1fffff ? hi * 0x100000000 + lo : Number.POSITIVE_INFINITY;
}

function and(a: Uint8Array, m: Uint8Array | undefined): bigint {
  const v = leToBigint(a);
  return m === undefined ? v : v & leToBigint(m);
}

/**
 * Whether an enhanced CAS succeeds: `(data & compareMask) MODE (*target & compareMask)`, unsigned
 * little-endian. So `gt` swaps when the operand is greater than the current value ("install if newer").
 */
export function casSucceeds(mode: CasMode, target: Uint8Array, data: Uint8Array, compareMask?: Uint8Array): boolean {
  // A short operand or mask compares fewer bytes than the target holds: a CAS would swap on a match of part of the word.
  invariant(data.length === target.length && (compareMask === undefined || compareMask.length === target.length), () => `CAS compare of a ${target.length}-byte target with a ${data.length}-byte operand and a ${compareMask?.length ?? 'full'}-byte mask`);
  const t = and(target, compareMask);
  const d = and(data, compareMask);
  switch (mode) {
    case 'eq':
      return d === t;
    case 'ne':
      return d !== t;
    case 'lt':
      return d < t;
    case 'le':
      return d <= t;
    case 'gt':
      return d > t;
    case 'ge':
      return d >= t;
  }
}

/** `(*target & ~swapMask) | (data & swapMask)`, byte by byte. */
export function casResult(target: Uint8Array, data: Uint8Array, swapMask?: Uint8Array): Uint8Array {
  // The installed word is built from a full operand and mask: a short one would install zeros over the target's tail.
  invariant(data.length === target.length && (swapMask === undefined || swapMask.length === target.length), () => `CAS install over a ${target.length}-byte target from a ${data.length}-byte operand and a ${swapMask?.length ?? 'full'}-byte mask`);
  const out = new Uint8Array(target.length);
  for (let i = 0; i < out.length; i++) {
    const m = swapMask === undefined ? 0xff : swapMask[i]!;
    out[i] = (target[i]! & ~m) | (data[i]! & m);
  }
  return out;
}
