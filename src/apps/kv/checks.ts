/** Option checks shared by the KV modules (internal: not exported from the folder's index). */
/** RangeError unless a non-negative multiple of 64 (the offset of a KV area): the shared KV area's check. */
export { kvBase } from '../shared/index.js';
