/**
 * The durable-RPC handshake carried in the TCP Hello and Welcome payloads (docs/wire.md): the client
 * says who it is (nothing for a new client; for a reconnect its id, the secret issued in its first
 * Welcome, and the sequences whose results it awaits), the server answers with the ConnectionInfo
 * of DurableRpcServer.accept() (a new client's carries its secret). JSON, with
 * result bytes in base64: a handshake happens once per connection, so clarity beats size.
 */
import { PmrpcError, defineErrorCodes, type ErrorCodesOf } from '../../../pmem/index.js';
import type { AcceptRequest, ConnectionInfo, KnownResult } from '../../rpc/index.js';

export const HandshakeErrorCodes = defineErrorCodes('server', {
  /** A Hello or Welcome payload that is not a valid RPC handshake. */
  BAD_HANDSHAKE: 'PMRPC_ERR_BAD_HANDSHAKE',
});

declare module '../../../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof HandshakeErrorCodes> {}
}

const MAX_AWAITING = 1 << 16;

/**
 * Awaited sequences as runs: a lone sequence stays a number, a run of consecutive ones becomes
 * [first, last]. A reconnect's Hello must fit the server's pre-handshake bound (handshakeBytesMax,
 * 16 KiB by default), and the awaited sequences of a client are almost always one run.
 */
function awaitingRuns(seqs: readonly number[]): Array<number | [number, number]> {
  const sorted = [...seqs].sort((a, b) => a - b);
  const out: Array<number | [number, number]> = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    out.push(j === i ? sorted[i]! : [sorted[i]!, sorted[j]!]);
    i = j + 1;
  }
  return out;
}

export function encodeHelloPayload(req: AcceptRequest): Uint8Array {
  return new TextEncoder().encode(JSON.stringify({ clientId: req.clientId, secret: req.secret, awaiting: req.awaiting === undefined ? undefined : awaitingRuns(req.awaiting) }));
}

function bad(msg: string): PmrpcError {
  return new PmrpcError(HandshakeErrorCodes.BAD_HANDSHAKE, msg);
}

function parse(bytes: Uint8Array, what: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = bytes.length === 0 ? {} : JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw bad(`the ${what} payload is not JSON`);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw bad(`the ${what} payload is not an object`);
  return v as Record<string, unknown>;
}

const posInt = (v: unknown): boolean => Number.isSafeInteger(v) && (v as number) >= 1;

/** Server side: the client's accept request, validated (a bad one refuses the connection with a coded Goodbye). */
export function decodeHelloPayload(bytes: Uint8Array): AcceptRequest {
  const o = parse(bytes, 'Hello');
  const out: { clientId?: number; secret?: string; awaiting?: number[] } = {};
  if (o.clientId !== undefined) {
    if (!posInt(o.clientId)) throw bad(`clientId must be a positive integer, got ${String(o.clientId)}`);
    out.clientId = o.clientId as number;
  }
  if (o.secret !== undefined) {
    if (typeof o.secret !== 'string' || !/^[A-Za-z0-9_-]{1,1400}$/.test(o.secret)) throw bad('secret must be a base64url string (at most 1400 characters)');
    if (o.clientId === undefined) throw bad('secret without clientId');
    out.secret = o.secret;
  }
  if (o.awaiting !== undefined) {
    const what = `awaiting must be an array of positive integers and [first, last] runs, at most ${MAX_AWAITING} sequences in all`;
    if (!Array.isArray(o.awaiting) || o.awaiting.length > MAX_AWAITING) throw bad(what);
    const seqs: number[] = [];
    for (const r of o.awaiting as unknown[]) {
      if (posInt(r)) seqs.push(r as number);
      else if (Array.isArray(r) && r.length === 2 && posInt(r[0]) && posInt(r[1]) && (r[0] as number) <= (r[1] as number) && seqs.length + (r[1] as number) - (r[0] as number) < MAX_AWAITING) {
        for (let q = r[0] as number; q <= (r[1] as number); q++) seqs.push(q);
      } else throw bad(what);
      if (seqs.length > MAX_AWAITING) throw bad(what);
    }
    out.awaiting = seqs;
  }
  return out;
}

export function encodeWelcomePayload(info: ConnectionInfo): Uint8Array {
  return new TextEncoder().encode(
    JSON.stringify({ ...info, results: info.results.map((r) => ({ seq: r.seq, status: r.status, ...(r.bytes === undefined ? {} : { bytes: Buffer.from(r.bytes).toString('base64') }) })) }),
  );
}

/** Client side: the server's ConnectionInfo (DurableRpcClient checks its fields again). */
export function decodeWelcomePayload(bytes: Uint8Array): ConnectionInfo {
  const o = parse(bytes, 'Welcome');
  if (!Array.isArray(o.results)) throw bad('the Welcome carries no results array');
  const results: KnownResult[] = (o.results as Array<Record<string, unknown>>).map((r) => {
    if (r === null || typeof r !== 'object' || !posInt(r.seq) || !['ok', 'error', 'lost'].includes(r.status as string)) throw bad('a malformed result in the Welcome');
    return { seq: r.seq as number, status: r.status as KnownResult['status'], ...(typeof r.bytes === 'string' ? { bytes: new Uint8Array(Buffer.from(r.bytes, 'base64')) } : {}) };
  });
  if (o.secret !== undefined && typeof o.secret !== 'string') throw bad('the Welcome carries a secret that is not a string');
  return { ...(o as unknown as ConnectionInfo), results };
}
