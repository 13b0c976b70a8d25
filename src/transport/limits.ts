/**
 * The transport's bounds (DESIGN §6: every queue and frame has one) and the checks of the options
 * that set them; the bound of a Response, checked before a Request executes.
 */
import { intIn, must, optional, positiveInt, type Clock, type OptionCheck } from '../../pmem/index.js';
import { MAX_WR_BYTES, MAX_WRS_PER_MESSAGE, type RequestMessage, type WorkRequest } from '../../flush/index.js';
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

/**
 * Bytes a connection may send before its Welcome (its Hello, length prefix included). A Hello is
 * a few scalars, a token (≤ 1024 characters), a name (≤ 256) and the application's payload: the
 * rpc app's reconnect names the sequences it awaits (≤ ringSlots + pendingCallsMax = 1,088 by
 * default, ≤ 10 KiB of JSON); 16 KiB holds that with room to spare.
 */
export const HANDSHAKE_BYTES_MAX_DEFAULT = 16 * 1024;

/**
 * Work units the server spends per turn of the event loop (decoder.ts: one per protobuf field,
 * 16 more per work request decoded; execUnits per work request executed). Measured on the 2-core
 * machine: ~0.1–0.3 µs per unit, so a turn holds the loop for a few milliseconds at most.
 */
export const TICK_UNITS_DEFAULT = 10_000;

/** Units charged for executing one work request: 16, plus one per KiB it moves. */
export function execUnits(wr: WorkRequest | undefined): number {
  if (wr === undefined) return 1;
  const w = wr as { data?: Uint8Array; len?: number };
  const bytes = Math.max(w.data?.length ?? 0, typeof w.len === 'number' && w.len <= MAX_WR_BYTES ? w.len : 0);
  return 16 + (bytes >> 10);
}
