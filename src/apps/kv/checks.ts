/** Option checks shared by the KV modules (internal: not exported from the folder's index). */
import { must, type OptionCheck } from '../../../pmem/index.js';

/** RangeError unless a non-negative multiple of 64 (the offset of a KV area). */
export const kvBase: OptionCheck = must((v) => Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) % 64 === 0, (v) => `must be a non-negative multiple of 64, got ${String(v)}`, RangeError);
