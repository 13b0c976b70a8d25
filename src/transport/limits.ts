/**
 * The transport's bounds (DESIGN §6: every queue and frame has one) and the checks of the options
 * that set them; the bound of a Response, checked before a Request executes.
 */
import type { Clock } from '../../pmem/index.js';
import { MAX_WR_BYTES, MAX_WRS_PER_MESSAGE, type RequestMessage } from '../../flush/index.js';
import { AUTH_TOKEN_CHARS_MAX } from './codec.js';

/** A frame bound smaller than this could not carry a handshake. */
export const MIN_FRAME_BYTES = 1024;
export const U32_MAX = 0xffffffff;
/** Upper bound of one completion's encoding without its data (ids, op, status, code, message). */
const COMPLETION_OVERHEAD_BYTES = 512;

export function resolve<T extends object>(defaults: Readonly<T>, options: Partial<T>): T {
  return { ...defaults, ...Object.fromEntries(Object.entries(options ?? {}).filter(([, v]) => v !== undefined)) } as T;
}

export function positiveInt(name: string, v: unknown): void {
  if (!Number.isSafeInteger(v) || (v as number) < 1) throw new RangeError(`${name} must be a positive integer, got ${String(v)}`);
}

export function positiveMs(name: string, v: unknown): void {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw new RangeError(`${name} must be a positive number of milliseconds, got ${String(v)}`);
}

export function frameBound(name: string, v: unknown): void {
  if (!Number.isSafeInteger(v) || (v as number) < MIN_FRAME_BYTES || (v as number) > U32_MAX) {
    throw new RangeError(`${name} must be an integer in [${MIN_FRAME_BYTES}, ${U32_MAX}], got ${String(v)}`);
  }
}

export function checkClock(clock: unknown): void {
  const c = clock as Partial<Clock> | null;
  if (c === null || typeof c !== 'object' || typeof c.setTimer !== 'function' || typeof c.nowMs !== 'function') throw new TypeError('clock must be a Clock (nowMs, setTimer)');
}

export function checkToken(token: unknown): void {
  if (token !== undefined && (typeof token !== 'string' || token.length === 0 || token.length > AUTH_TOKEN_CHARS_MAX)) {
    throw new TypeError(`authToken must be a non-empty string of at most ${AUTH_TOKEN_CHARS_MAX} characters`);
  }
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
