/**
 * The handler of `bench flush` (shared by the owner thread, the pool worker and the TCP server
 * child): a busy loop of a given number of iterations over the payload that computes effects.
 *
 * The handler cost travels in the request (payload bytes 0..3 = iterations), so the workers and
 * the server process need no configuration. Each request writes one 8-byte digest at a slot chosen
 * by its sequence (`slotOf`), and declares that slot as its key: requests of one client with
 * different slots may compute side by side in the pool (a decoupled client has up to a ring of
 * them in flight; a coupled one has its outstanding requests only), and the keys are honest, so the
 * final state is that of a serial execution.
 */
import type { RpcHandler, RpcRequest } from '../src/rpc/index.js';

/** Digest slots per client (8 bytes each) and the area of one client. */
export const SLOTS_PER_CLIENT = 32;
export const CLIENT_AREA_BYTES = SLOTS_PER_CLIENT * 8;
/** Clients whose areas fit the application area (client ids wrap). */
export const CLIENT_AREAS = 16;
export const APP_BYTES = CLIENT_AREAS * CLIENT_AREA_BYTES;

export const METHOD = 'work';

function slotOffset(req: { clientId: number; seq: number }): number {
  return (req.clientId % CLIENT_AREAS) * CLIENT_AREA_BYTES + (req.seq % SLOTS_PER_CLIENT) * 8;
}

/** The key a request touches (its digest slot). */
export function keysOf(req: RpcRequest): string[] {
  return [`${req.clientId % CLIENT_AREAS}/${req.seq % SLOTS_PER_CLIENT}`];
}

/** The busy loop: `iterations` steps of FNV-1a over the payload bytes (at least one pass when iterations > 0). */
export function spin(payload: Uint8Array, iterations: number, seed: number): number {
  let h = (0x811c9dc5 ^ seed) | 0;
  const n = payload.length;
  for (let i = 0; i < iterations; i++) h = Math.imul(h ^ payload[i % n]!, 16777619);
  return h >>> 0;
}

export function iterationsOf(payload: Uint8Array): number {
  // Little-endian by hand: a DataView per request costs more than the rest of a no-op handler.
  return payload.length >= 4 ? (payload[0]! | (payload[1]! << 8) | (payload[2]! << 16) | (payload[3]! << 24)) >>> 0 : 0;
}

/** A payload of `bytes` (at least 4) carrying the handler cost in its first 4 bytes. */
export function makePayload(bytes: number, iterations: number, fill: number): Uint8Array {
  const p = new Uint8Array(Math.max(4, bytes));
  for (let i = 4; i < p.length; i++) p[i] = (i * 31 + fill) & 0xff;
  new DataView(p.buffer).setUint32(0, iterations >>> 0, true);
  return p;
}

export const work: RpcHandler = (req, view) => {
  const off = slotOffset(req);
  // The slot's low word (its previous hash); words by hand, no BigInt or DataView per request (as the rpc app's digest handler).
  const prev = view.loadU32(off);
  const h = spin(req.payload, iterationsOf(req.payload), prev ^ req.seq);
  const b = new Uint8Array(8);
  putU32(b, 0, h);
  putU32(b, 4, req.seq);
  return { images: [{ offset: off, bytes: b }], result: b };
};

function putU32(b: Uint8Array, at: number, v: number): void {
  b[at] = v & 0xff;
  b[at + 1] = (v >>> 8) & 0xff;
  b[at + 2] = (v >>> 16) & 0xff;
  b[at + 3] = (v >>> 24) & 0xff;
}

export const handlers: Record<string, RpcHandler> = { [METHOD]: work };
