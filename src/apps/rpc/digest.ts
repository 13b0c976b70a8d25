/**
 * The durable RPC app's workload handler (DESIGN §8, "the workload has teeth"): not idempotent —
 * it appends a digest of each request (client, sequence, payload checksum, position) to a log in the
 * application area and bumps a counter on another cache line — and the one reader of that log. The
 * crash explorer, the real-crash harness and `pmrpc serve` all use it.
 */
import { crc32c } from '../../../pmem/index.js';
import type { AppView } from '../../../recovery/index.js';
import type { RpcHandler } from '../../rpc/index.js';

export const DIGEST_BYTES = 16;
export const LOG_BASE = 64;
export const METHOD = 'append-digest';

/** Digest entries the log holds in an application area of `sizeBytes` (a ring: entry n goes to slot n mod capacity). */
export function digestLogCapacity(sizeBytes: number): number {
  return Math.max(0, Math.floor((sizeBytes - LOG_BASE) / DIGEST_BYTES));
}

/**
 * The workload's handler: not idempotent (appends at the counter's position, bumps the counter on
 * another line). The log is a ring of digestLogCapacity entries — request n's digest goes to slot
 * n mod capacity and records n (mod 2^32) as its position — so a node serves the workload for ever;
 * a reader sees the last `capacity` digests (readDigestLog).
 */
export const digestHandler: RpcHandler = (req, view) => {
  // The counter as two 32-bit words (no BigInt per request): < 2^53 (285 years at a million requests a second).
  const n = view.loadU32(4) * 0x1_0000_0000 + view.loadU32(0);
  const capacity = digestLogCapacity(view.sizeBytes);
  if (capacity === 0) throw new Error(`the application area (${view.sizeBytes} bytes) holds no digest entry`);
  // Three small fresh arrays, little-endian words written by hand: no DataView, no BigInt, no
  // subarray or slice per request (each costs several times a small allocation) — the same bytes
  // as before (issue 29's per-request objects).
  const digest = new Uint8Array(DIGEST_BYTES);
  const crc = crc32c(req.payload);
  const position = n % 0x1_0000_0000;
  putU32(digest, 0, req.clientId);
  putU32(digest, 4, req.seq);
  putU32(digest, 8, crc);
  putU32(digest, 12, position);
  const counter = new Uint8Array(8);
  const next = n + 1;
  putU32(counter, 0, next % 0x1_0000_0000);
  putU32(counter, 4, Math.floor(next / 0x1_0000_0000));
  // The result: the digest's bytes [8, 16) (payload checksum, position).
  const result = new Uint8Array(8);
  putU32(result, 0, crc);
  putU32(result, 4, position);
  return { images: [{ offset: LOG_BASE + (n % capacity) * DIGEST_BYTES, bytes: digest }, { offset: 0, bytes: counter }], result };
};

/** `v` (an unsigned 32-bit integer) at `at`, little-endian. */
function putU32(b: Uint8Array, at: number, v: number): void {
  b[at] = v & 0xff;
  b[at + 1] = (v >>> 8) & 0xff;
  b[at + 2] = (v >>> 16) & 0xff;
  b[at + 3] = (v >>> 24) & 0xff;
}

/** One entry of the digest log, as digestHandler wrote it. */
export interface DigestEntry {
  clientId: number;
  seq: number;
  payloadCrc: number;
  /** The log position the handler recorded, mod 2^32 (equals the entry's index unless effects were mixed). */
  position: number;
}

/**
 * Reads the digest log (the one place that decodes what digestHandler encodes): the digests still
 * in the ring, oldest first — `entries[i]` is request `first + i` of `counter` applied; `first` > 0
 * once the ring wrapped (the digests before it were overwritten: `evicted`).
 */
export function readDigestLog(view: AppView): { entries: DigestEntry[]; first: number; counter: number } {
  const counter = Number(view.loadU64(0));
  const capacity = digestLogCapacity(view.sizeBytes);
  const first = Math.max(0, counter - capacity);
  const entries: DigestEntry[] = [];
  for (let i = first; i < counter; i++) {
    const d = view.load(LOG_BASE + (i % capacity) * DIGEST_BYTES, DIGEST_BYTES);
    const dv = new DataView(d.buffer, d.byteOffset, DIGEST_BYTES);
    entries.push({ clientId: dv.getUint32(0, true), seq: dv.getUint32(4, true), payloadCrc: dv.getUint32(8, true), position: dv.getUint32(12, true) });
  }
  return { entries, first, counter };
}

/** The handlers a node serving the digest workload registers. */
export const DIGEST_HANDLERS: Readonly<Record<string, RpcHandler>> = Object.freeze({ [METHOD]: digestHandler });
