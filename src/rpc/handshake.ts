/**
 * The server's side of the connection handshake's messages (DESIGN §4): what DurableRpcServer.accept
 * (server.ts) reads from a Hello — its awaited sequences, a reconnecting client's secret — and the
 * parts of its answer that are not a connection: a new client's secret and the results the server
 * still knows for the sequences a reconnecting client awaits.
 */
import { PmrpcError, type Entropy } from '../../pmem/index.js';
import type { RecoveryStore } from '../../recovery/index.js';
import { CLIENT_SECRET_BYTES, type AcceptRequest, type KnownResult } from './server-options.js';
import { decodeKept, STATUS_OK } from './wire.js';

/** A Hello's awaited sequences, checked (the request itself must be an object). */
export function checkAccept(request: AcceptRequest): readonly number[] {
  if (request === null || typeof request !== 'object') throw new TypeError(`request must be an object, got ${String(request)}`);
  const awaiting = request.awaiting ?? [];
  if (!Array.isArray(awaiting) || awaiting.some((s) => !Number.isSafeInteger(s) || s < 1)) throw new TypeError('awaiting must be an array of positive integers');
  if (request.packedResults !== undefined && typeof request.packedResults !== 'boolean') throw new TypeError(`packedResults must be a boolean, got ${String(request.packedResults)}`);
  return awaiting;
}

/** A new client's secret, from the injected entropy (DESIGN §7). */
export function newSecret(entropy: Entropy): Uint8Array {
  const bytes = entropy.bytes(CLIENT_SECRET_BYTES);
  if (!(bytes instanceof Uint8Array) || bytes.length !== CLIENT_SECRET_BYTES) throw new TypeError(`entropy.bytes(${CLIENT_SECRET_BYTES}) must return ${CLIENT_SECRET_BYTES} bytes`);
  return bytes;
}

/** A Hello's secret (base64url) as bytes; none or a malformed one is PMRPC_ERR_CLIENT_AUTH. */
export function decodeSecret(secret: unknown): Uint8Array {
  if (typeof secret !== 'string' || !/^[A-Za-z0-9_-]{1,1400}$/.test(secret)) {
    throw new PmrpcError('PMRPC_ERR_CLIENT_AUTH', 'a reconnect must present the client\'s secret (ConnectionInfo.secret of its registration)');
  }
  return new Uint8Array(Buffer.from(secret, 'base64url'));
}

/** For each awaited sequence at or below `applied`: its kept result, or 'lost'. */
export function knownResults(store: RecoveryStore, clientId: number, awaiting: readonly number[], applied: number): KnownResult[] {
  const results: KnownResult[] = [];
  for (const s of awaiting) {
    if (s > applied) continue;
    const kept = store.resultOf(clientId, s);
    // A record without a kept result (keepResults off) reads back as an empty result.
    if (kept === undefined || kept.length === 0) results.push({ seq: s, status: 'lost' });
    else {
      const k = decodeKept(kept);
      results.push({ seq: s, status: k.status === STATUS_OK ? 'ok' : 'error', bytes: k.bytes });
    }
  }
  return results;
}
