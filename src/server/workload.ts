/**
 * The real-crash workload: the crash test's non-idempotent handler (DESIGN §8: it appends a digest
 * of each request — client, sequence, payload checksum, position — to a log in the application
 * area and bumps a counter on another line), payloads that the verifier can recompute from
 * (seed, client, sequence), and the verifier that reads the digest log back from PM.
 */
import { crc32c } from '../../pmem/index.js';
import type { AppView } from '../../recovery/index.js';
import type { RpcHandler } from '../rpc/index.js';
import { describeAckedLoss, lostAcknowledged, type AckedLoss, type KvInput, type KvOutput, type Operation } from '../check/index.js';
import { digestHandler, DIGEST_BYTES, LOG_BASE, METHOD, readDigestLog } from '../apps/rpc/index.js';

export { DIGEST_BYTES, LOG_BASE };
/** The method the workload calls. */
export const WORKLOAD_METHOD = METHOD;
/** The handlers a node serving the workload registers. */
export const WORKLOAD_HANDLERS: Readonly<Record<string, RpcHandler>> = Object.freeze({ [METHOD]: digestHandler });
export const PAYLOAD_BYTES = 32;

/** The payload of (client, seq) under `seed`: 32 bytes of a hash chain, so a resent request carries the same bytes. */
export function workloadPayload(seed: number, clientId: number, seq: number): Uint8Array {
  // Byte stores, not a DataView: `out.buffer` would move the bytes off the V8 heap (one per call).
  const out = new Uint8Array(PAYLOAD_BYTES);
  let h = (seed ^ Math.imul(clientId, 0x9e3779b1) ^ Math.imul(seq, 0x85ebca6b)) >>> 0;
  for (let i = 0; i < PAYLOAD_BYTES; i += 4) {
    h ^= h >>> 16;
    h = Math.imul(h, 0x7feb352d);
    h ^= h >>> 15;
    h = Math.imul(h, 0x846ca68b);
    h ^= h >>> 16;
    const v = (h + i) >>> 0;
    out[i] = v & 0xff;
    out[i + 1] = (v >>> 8) & 0xff;
    out[i + 2] = (v >>> 16) & 0xff;
    out[i + 3] = v >>> 24;
  }
  return out;
}

/** What one client did, as it saw it. */
export interface ClientLedger {
  clientId: number;
  /** Highest sequence issued. */
  sentUpTo: number;
  /** Highest sequence the client was told is durable (acknowledged). */
  ackedUpTo: number;
  /**
   * The client died with the server (DESIGN §8: it never resends): what it sent past its
   * acknowledgements may be absent — abandoned, not an error; what it was told is durable must be there.
   */
  diedWithServer?: boolean;
}

export interface DigestVerdict {
  /** Requests applied (the log's counter). */
  applied: number;
  /** Digests overwritten since (the log is a ring): their requests are counted applied without being checked. */
  evicted: number;
  /** Acknowledged (durable) requests absent from the log. */
  lost: number;
  /** Requests applied more than once. */
  duplicates: number;
  /** Applied out of FIFO order or after a hole. */
  outOfOrder: number;
  /** Digests naming a request never sent, or with a payload other than the one sent, or at a wrong position. */
  corrupt: number;
  /** Requests sent and never applied (only an error when every call was answered). */
  unapplied: number;
  /** Requests sent, not acknowledged and not applied, by clients that died with the server (allowed). */
  abandoned: number;
  /** The acknowledged requests absent from the log, per client (`lost` counts them). */
  losses: AckedLoss[];
  /** The first few problems, in words. */
  messages: string[];
}

const MESSAGES_MAX = 20;

/** Reads the digest log and judges it against the clients' ledgers. Reads only. */
export function verifyDigestLog(view: AppView, seed: number, ledgers: readonly ClientLedger[]): DigestVerdict {
  const v: DigestVerdict = { applied: 0, evicted: 0, lost: 0, duplicates: 0, outOfOrder: 0, corrupt: 0, unapplied: 0, abandoned: 0, losses: [], messages: [] };
  const say = (m: string): void => {
    if (v.messages.length < MESSAGES_MAX) v.messages.push(m);
  };
  const log = readDigestLog(view);
  v.applied = log.counter;
  v.evicted = log.first;
  const byId = new Map(ledgers.map((l) => [l.clientId, l]));
  const seen = new Map<number, Set<number>>();
  const last = new Map<number, number>();
  /** Once the ring wrapped, a client's requests before its first digest in the ring were applied earlier (overwritten since): its seqs ≤ this count as applied. */
  const evictedUpTo = new Map<number, number>();
  for (const [i, { clientId: c, seq: s, payloadCrc: crc, position: idx }] of log.entries.entries()) {
    if (idx !== (log.first + i) % 0x1_0000_0000) {
      v.corrupt++;
      say(`digest ${log.first + i} records position ${idx} (effects of two requests mixed)`);
    }
    const l = byId.get(c);
    if (l === undefined || s < 1 || s > l.sentUpTo) {
      v.corrupt++;
      say(`digest ${log.first + i}: client ${c} seq ${s} was never sent`);
      continue;
    }
    if (crc32c(workloadPayload(seed, c, s)) !== crc) {
      v.corrupt++;
      say(`digest ${log.first + i}: client ${c} seq ${s} applied with a payload that is not the one sent (torn or stale)`);
    }
    let set = seen.get(c);
    if (set === undefined) seen.set(c, (set = new Set()));
    if (set.has(s)) {
      v.duplicates++;
      say(`client ${c} seq ${s} applied twice`);
      continue;
    }
    set.add(s);
    if (log.first > 0 && !last.has(c)) {
      evictedUpTo.set(c, s - 1);
      last.set(c, s - 1);
    }
    const prev = last.get(c) ?? 0;
    if (s !== prev + 1) {
      v.outOfOrder++;
      say(`client ${c} seq ${s} applied after ${prev} (FIFO broken)`);
    }
    last.set(c, Math.max(prev, s));
  }
  // A client with no digest left in a wrapped ring: all it sent was applied before the ring's window (unverifiable, counted in `evicted`).
  const applied = (c: number, s: number): boolean => seen.get(c)?.has(s) === true || s <= (evictedUpTo.get(c) ?? (log.first > 0 && !seen.has(c) ? Infinity : 0));
  v.losses = lostAcknowledged(ledgers, applied);
  for (const l of v.losses) {
    v.lost += l.seqs.length;
    say(describeAckedLoss(l, 'the digest log in PM'));
  }
  for (const l of ledgers) {
    const set = seen.get(l.clientId) ?? new Set<number>();
    for (let s = l.ackedUpTo + 1; s <= l.sentUpTo; s++) {
      if (set.has(s) || applied(l.clientId, s)) continue;
      if (l.diedWithServer === true) v.abandoned++;
      else v.unapplied++;
    }
  }
  return v;
}

// ---------------------------------------------------------------------------- the KV workload


/** The keys of node `node` in a KV cluster run: each key lives on one node, so each node's history is checked on its own. */
export function kvNodeKeys(node: number, count: number): string[] {
  return Array.from({ length: count }, (_, j) => `n${node}k${j}`);
}
