/**
 * The size classes of an app's arena (PRISM-KV, Pilaf, PRISM-RS): buffers of 2^k bytes, `count` of
 * each, and the check every app's layout options run on its `classes` option.
 */
import type { OptionCheck } from '../../../pmem/index.js';

/** One size class of an arena: `count` buffers of `sizeBytes` (a power of two). */
export interface SizeClass {
  sizeBytes: number;
  count: number;
}

/** The check of a `classes` option: 1..max classes, increasing powers of two in [64, 2^20], counts in [1, 2^22]. */
export function sizeClassesCheck(max: number): OptionCheck {
  return (name, v) => {
    if (!Array.isArray(v) || v.length < 1 || v.length > max) throw new RangeError(`${name} must hold 1..${max} size classes`);
    let prev = 0;
    for (const c of v as Array<SizeClass | undefined>) {
      const s = c?.sizeBytes;
      if (!Number.isSafeInteger(s) || s! < 64 || s! > 1 << 20 || (s! & (s! - 1)) !== 0) throw new RangeError(`class sizeBytes must be a power of two in [64, 2^20], got ${String(s)}`);
      if (s! <= prev) throw new RangeError(`${name} must be in increasing sizeBytes order`);
      if (!Number.isSafeInteger(c!.count) || c!.count < 1 || c!.count > 1 << 22) throw new RangeError(`class count must be an integer in [1, 2^22], got ${String(c!.count)}`);
      prev = s!;
    }
  };
}
