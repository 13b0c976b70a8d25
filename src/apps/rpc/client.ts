/**
 * The durable RPC app's client face over src/rpc: the Hello a client sends (nothing for a new
 * client; for a reconnect its id, the secret issued in its first Welcome, and the sequences whose
 * results it awaits) and the Welcome it reads back (the server's ConnectionInfo, which
 * DurableRpcClient checks again) — docs/wire.md. JSON, with result bytes in base64: a handshake
 * happens once per connection, so clarity beats size. The request path itself is
 * DurableRpcClient's (src/rpc/client.ts), per the strategy the Welcome names.
 */
import type { QueuePair } from '../../../flush/index.js';
import { DurableRpcClient, type AcceptRequest, type ConnectionInfo, type KnownResult, type RpcClientOptions } from '../../rpc/index.js';
import { badHandshake, isPositiveInt, parseHandshake } from './layout.js';

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

/** The Hello payload of a new client ({}) or of a reconnect (id, secret, awaited sequences). */
export function encodeHelloPayload(req: AcceptRequest): Uint8Array {
  // DurableRpcClient reads packed RESULTs: said unless the request says otherwise.
  return new TextEncoder().encode(JSON.stringify({ clientId: req.clientId, secret: req.secret, awaiting: req.awaiting === undefined ? undefined : awaitingRuns(req.awaiting), packedResults: req.packedResults ?? true }));
}

/** The server's ConnectionInfo from a Welcome payload (DurableRpcClient checks its fields again). */
export function decodeWelcomePayload(bytes: Uint8Array): ConnectionInfo {
  const o = parseHandshake(bytes, 'Welcome');
  if (!Array.isArray(o.results)) throw badHandshake('the Welcome carries no results array');
  const results: KnownResult[] = (o.results as Array<Record<string, unknown>>).map((r) => {
    if (r === null || typeof r !== 'object' || !isPositiveInt(r.seq) || !['ok', 'error', 'lost'].includes(r.status as string)) throw badHandshake('a malformed result in the Welcome');
    return { seq: r.seq as number, status: r.status as KnownResult['status'], ...(typeof r.bytes === 'string' ? { bytes: new Uint8Array(Buffer.from(r.bytes, 'base64')) } : {}) };
  });
  if (o.secret !== undefined && typeof o.secret !== 'string') throw badHandshake('the Welcome carries a secret that is not a string');
  return { ...(o as unknown as ConnectionInfo), results };
}

/** A durable RPC client of the rpc app on `qp`, from the Welcome its link received. */
export function rpcAppClient(qp: QueuePair, welcome: Uint8Array, options: Partial<RpcClientOptions> = {}): DurableRpcClient {
  return new DurableRpcClient(qp, decodeWelcomePayload(welcome), options);
}
