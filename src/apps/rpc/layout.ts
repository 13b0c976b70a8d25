/**
 * The durable RPC app's layout and codes (the app: app.ts, its server face: server.ts, its client
 * face: client.ts, its mutants: faults.ts, its workload: digest.ts).
 *
 * In PM, from offset 0 of the region, the recovery layout of DESIGN §3 (recovery/layout.ts; byte
 * offsets in docs/recovery.md): the superblock (magic, geometry, epoch, next client id), the
 * connection table (one line per connection slot: client id, applied sequence, release word,
 * secret hash), one ring of `ringSlots` × `slotBytes` per connection slot, the redo log of
 * `logRecords` × `recordBytes`, then the application area — every line the layout leaves
 * (rpcAppBytes). The rpc app names only the geometry (RpcAppLayout); recovery/ owns every word of
 * it, and the handlers change the application area only through the redo log. The digest
 * workload's log in the application area is digest.ts'.
 *
 * On the wire, the Hello and Welcome payloads of the handshake (docs/wire.md): JSON objects (the
 * client face encodes the Hello and decodes the Welcome, the server face the other way round);
 * their shared parsing and error code are here.
 */
import { defineErrorCodes, PmrpcError, type ErrorCodesOf } from '../../../pmem/index.js';
import { layoutBytes, type LayoutOptions } from '../../../recovery/index.js';

export const RpcAppErrorCodes = Object.freeze({
  /** The region is too small for the recovery layout (rings, log, and a minimal application area). */
  SIZE_TOO_SMALL: 'PMRPC_ERR_SIZE_TOO_SMALL',
} as const);

export const HandshakeErrorCodes = defineErrorCodes('server', {
  /** A Hello or Welcome payload that is not a valid RPC handshake. */
  BAD_HANDSHAKE: 'PMRPC_ERR_BAD_HANDSHAKE',
});

declare module '../../../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof HandshakeErrorCodes> {}
}

/** The recovery layout of an RPC app; the application area takes the rest of the region. */
export type RpcAppLayout = Omit<LayoutOptions, 'appBytes' | 'baseOffset'>;

/** The default geometry: 64 connection slots of 64 × 128-byte ring slots, a 256-record redo log of 256-byte records. */
export const RPC_APP_LAYOUT: Readonly<RpcAppLayout> = Object.freeze({ maxClients: 64, ringSlots: 64, slotBytes: 128, logRecords: 256, recordBytes: 256 });

/** Bytes of the layout without its application area. */
export function rpcFixedBytes(layout: RpcAppLayout): number {
  return layoutBytes({ ...layout, appBytes: 64 }) - 64;
}

/** The application-area bytes a region of `sizeBytes` leaves after `layout`. */
export function rpcAppBytes(layout: RpcAppLayout, sizeBytes: number): number {
  return Math.floor((sizeBytes - rpcFixedBytes(layout)) / 64) * 64;
}

// ── the handshake payloads (shared by client.ts and server.ts) ─────────────────────────────────────

/** The most sequences a reconnect's Hello may say it awaits. */
export const MAX_AWAITING = 1 << 16;

export function badHandshake(msg: string): PmrpcError {
  return new PmrpcError(HandshakeErrorCodes.BAD_HANDSHAKE, msg);
}

/** A handshake payload as a JSON object (empty bytes: {}); anything else is PMRPC_ERR_BAD_HANDSHAKE. */
export function parseHandshake(bytes: Uint8Array, what: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = bytes.length === 0 ? {} : JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw badHandshake(`the ${what} payload is not JSON`);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw badHandshake(`the ${what} payload is not an object`);
  return v as Record<string, unknown>;
}

/** A client id or sequence in a handshake: a positive safe integer. */
export const isPositiveInt = (v: unknown): boolean => Number.isSafeInteger(v) && (v as number) >= 1;
