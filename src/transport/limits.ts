/**
 * The transport's bounds (DESIGN §6: every queue and frame has one) and the checks of the options
 * that set them; the bound of a Response, checked before a Request executes.
 */
import { intIn, must, optional, positiveInt, type Clock, type OptionCheck } from '../../pmem/index.js';
import { MAX_WR_BYTES, MAX_WRS_PER_MESSAGE, type RequestMessage } from '../../flush/index.js';
import { AUTH_TOKEN_CHARS_MAX } from './codec.js';

/** A frame bound smaller than this could not carry a handshake. */
export const MIN_FRAME_BYTES = 1024;
export const U32_MAX = 0xffffffff;
/** Upper bound of one completion's encoding without its data (ids, op, status, code, message). */
const COMPLETION_OVERHEAD_BYTES = 512;

/** RangeError unless an integer in [MIN_FRAME_BYTES, 2^32 − 1] (a frame bound). */
export const frameBound: OptionCheck = intIn(MIN_FRAME_BYTES, U32_MAX);

/** TypeError unless a Clock. */
export const clockCheck: OptionCheck = must((c) => {
  const x = c as Partial<Clock> | null;
  return x !== null && typeof x === 'object' && typeof x.setTimer === 'function' && typeof x.nowMs === 'function';
}, 'must be a Clock (nowMs, setTimer)');

/** TypeError unless undefined or a non-empty string of at most AUTH_TOKEN_CHARS_MAX characters. */
export const authTokenCheck: OptionCheck = optional(must((v) => typeof v === 'string' && v.length > 0 && v.length <= AUTH_TOKEN_CHARS_MAX, `must be a non-empty string of at most ${AUTH_TOKEN_CHARS_MAX} characters`));

/** A positive integer, and at least the option `lower` (a hard bound above a high-water mark). */
export function positiveIntAtLeast(lower: string): OptionCheck {
  return (name, v, all) => {
    positiveInt(name, v, all);
    if ((v as number) < (all[lower] as number)) throw new RangeError(`${name} (${String(v)}) must be >= ${lower} (${String(all[lower])})`);
  };
}

/** The largest Response a Request can produce: checked before executing, so a reply never exceeds the client's frame bound. */
export function responseBoundBytes(msg: RequestMessage): number {
  const n = Math.min(msg.wrs.length, MAX_WRS_PER_MESSAGE);
  let bytes = 64;
  for (let i = 0; i < n; i++) {
    const w = msg.wrs[i]!;
    // A READ longer than MAX_WR_BYTES is refused by the NIC (BAD_WR) and returns no data.
    const data = w.op === 'read' ? (w.len <= MAX_WR_BYTES ? w.len : 0) : w.op === 'prismCas' ? Math.min(w.len, 64) : 8;
    bytes += COMPLETION_OVERHEAD_BYTES + data;
  }
  return bytes;
}
