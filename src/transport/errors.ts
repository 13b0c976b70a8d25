/**
 * The transport's error codes (docs/errors.md, docs/wire.md) and the helpers that turn a thrown
 * value into the code and message of a Goodbye.
 */
import { PmrpcError, defineErrorCodes, type ErrorCodesOf } from '../../pmem/index.js';
import { NicErrorCodes } from '../../flush/index.js';
import { BAD_FRAME, FRAME_TOO_LARGE } from './codec.js';

/** The codes of the transport (docs/wire.md). */
export const TransportErrorCodes = defineErrorCodes('transport', {
  /** A frame that does not decode, or a message the receiver does not expect at that point. */
  BAD_FRAME,
  /** A length prefix past the receiver's bound, or a message that cannot fit the peer's bound. */
  FRAME_TOO_LARGE,
  /** A server was asked to bind a non-loopback host without an auth token. */
  AUTH_REQUIRED: 'PMRPC_ERR_AUTH_REQUIRED',
  /** The Hello carried a wrong (or no) auth token. */
  AUTH: 'PMRPC_ERR_AUTH',
  /** The first frame of a connection was not a Hello (or the Welcome was not a Welcome). */
  HANDSHAKE: 'PMRPC_ERR_HANDSHAKE',
  /** No Hello (server) or no Welcome (client) within handshakeTimeoutMs. */
  HANDSHAKE_TIMEOUT: 'PMRPC_ERR_HANDSHAKE_TIMEOUT',
  /** The peers speak different protocol versions. */
  PROTOCOL_VERSION: 'PMRPC_ERR_PROTOCOL_VERSION',
  /** A Request named a QP other than the one its connection was given. */
  WRONG_QP: 'PMRPC_ERR_WRONG_QP',
  /** The server's accept callback refused the client (or returned something unusable). */
  REFUSED: 'PMRPC_ERR_REFUSED',
  /** accept() returned a QP that another live connection already reaches. */
  QP_IN_USE: 'PMRPC_ERR_QP_IN_USE',
  /** The server already holds maxConnections connections. */
  TOO_MANY_CONNECTIONS: 'PMRPC_ERR_TOO_MANY_CONNECTIONS',
  /** maxHandshakes connections were handshaking when another arrived: the oldest of them is closed. */
  TOO_MANY_HANDSHAKES: 'PMRPC_ERR_TOO_MANY_HANDSHAKES',
  /** Client: the send buffer is full past sendBufferBytesMax. Server: a client that does not read. */
  BACKPRESSURE: 'PMRPC_ERR_BACKPRESSURE',
  /** The server is shutting down (close()). */
  SERVER_CLOSED: 'PMRPC_ERR_SERVER_CLOSED',
  /** The TCP connection could not be opened. */
  CONNECT: 'PMRPC_ERR_CONNECT',
  /** The server could not bind its address. */
  LISTEN: 'PMRPC_ERR_LISTEN',
  /** The link is closed: what was outstanding can no longer complete. */
  LINK_CLOSED: NicErrorCodes.LINK_CLOSED,
  /** Too many requests outstanding on one link (outstandingMessagesMax). */
  QUEUE_FULL: NicErrorCodes.QUEUE_FULL,
  /** The server failed while executing a frame (a bug, or a closed region): that connection closes. */
  INTERNAL: 'PMRPC_ERR_INTERNAL',
  /** The connection's QP was destroyed (or the NIC closed) under it: a request could not be answered. */
  NO_SUCH_QP: NicErrorCodes.NO_SUCH_QP,
});

declare module '../../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof TransportErrorCodes> {}
}

/** The code a Goodbye carries for a thrown value: a PmrpcError's own, else `fallback`. */
export function codeOf(e: unknown, fallback: string): string {
  return e instanceof PmrpcError ? e.code : fallback;
}

export function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Strips a PmrpcError's "CODE: " prefix, so a Goodbye does not repeat its code in its message. */
export function bareMessage(e: unknown): string {
  const m = messageOf(e);
  return e instanceof PmrpcError && m.startsWith(`${e.code}: `) ? m.slice(e.code.length + 2) : m;
}

