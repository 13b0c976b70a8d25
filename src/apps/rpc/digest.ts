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

/** The workload's handler: not idempotent (appends at the counter's position, bumps the counter on another line). */
export const digestHandler: RpcHandler = (req, view) => {
  const n = Number(view.loadU64(0));
  if (LOG_BASE + (n + 1) * DIGEST_BYTES > view.sizeBytes) throw new Error('digest log full');
  const d = new Uint8Array(DIGEST_BYTES);
  const dv = new DataView(d.buffer);
  dv.setUint32(0, req.clientId, true);
  dv.setUint32(4, req.seq, true);
  dv.setUint32(8, crc32c(req.payload), true);
  dv.setUint32(12, n, true);
  const c = new Uint8Array(8);
  new DataView(c.buffer).setBigUint64(0, BigInt(n + 1), true);
  return { images: [{ offset: LOG_BASE + n * DIGEST_BYTES, bytes: d }, { offset: 0, bytes: c }], result: d.slice(8, 16) };
};

/** One entry of the digest log, as digestHandler wrote it. */
export interface DigestEntry {
  clientId: number;
  seq: number;
  payloadCrc: number;
  /** The log position the handler recorded (equals the entry's index unless effects were mixed). */
  position: number;
}

/**
 * Reads the digest log (the one place that decodes what digestHandler encodes): its entries, or
 * `overflow` when the counter points past the log's capacity (a corrupt counter).
 */
export function readDigestLog(view: AppView): { entries: DigestEntry[]; overflow?: { counter: number; capacity: number } } {
  const n = Number(view.loadU64(0));
  const capacity = Math.floor((view.sizeBytes - LOG_BASE) / DIGEST_BYTES);
  if (n > capacity) return { entries: [], overflow: { counter: n, capacity } };
  const entries: DigestEntry[] = [];
  for (let i = 0; i < n; i++) {
    const d = view.load(LOG_BASE + i * DIGEST_BYTES, DIGEST_BYTES);
    const dv = new DataView(d.buffer, d.byteOffset, DIGEST_BYTES);
    entries.push({ clientId: dv.getUint32(0, true), seq: dv.getUint32(4, true), payloadCrc: dv.getUint32(8, true), position: dv.getUint32(12, true) });
  }
  return { entries };
}

/** The handlers a node serving the digest workload registers. */
export const DIGEST_HANDLERS: Readonly<Record<string, RpcHandler>> = Object.freeze({ [METHOD]: digestHandler });
