/**
 * A client's connection life on the durable RPC server (DESIGN §4), as named states — the way
 * Linux rxe names its responder states (RESPST_*, with a name per state): one state per client of
 * the table, every change through `connTransition`, which refuses a step the table below does not
 * list with PMRPC_ERR_CONN_STATE (a server bug, never a client's doing: the server stops the step
 * instead of polling or answering a connection it must not).
 */
import { PmrpcError } from '../../pmem/index.js';
import type { MemoryRegion, ServerQp } from '../../flush/index.js';
import type { Ring } from '../../recovery/index.js';
import { RpcErrorCodes } from './errors.js';

export const CONNST = Object.freeze({
  /** No state here: not connected to this server since it started (a new client), or its slot released. */
  NONE: 'none',
  /** In the table from before the restart (recovery), no connection since: released after restartGraceMs when a slot is needed. */
  DORMANT: 'dormant',
  /** Connected: its current QP is polled, its requests committed and answered. */
  OPEN: 'open',
  /** Its current QP was cut (it broke the protocol, or the store refused): nothing more is polled; what was polled is still answered; a reconnect replaces it. */
  ERROR: 'error',
  /** It said goodbye: nothing more is polled or answered; the slot is released as soon as canRelease allows; a reconnect is refused. */
  CLOSING: 'closing',
} as const);

export type ConnState = (typeof CONNST)[keyof typeof CONNST];

/** The legal steps, from each state. */
export const CONN_TRANSITIONS: Readonly<Record<ConnState, readonly ConnState[]>> = Object.freeze({
  // accept (a new client, or a client in the table this server had no state for); start() after a
  // recovery; a goodbye found in the ring of a client with no state (released on the spot).
  none: ['open', 'dormant', 'closing'],
  dormant: ['open', 'closing', 'none'],
  // open → open: a reconnect replaces the connection.
  open: ['open', 'error', 'closing', 'none'],
  error: ['open', 'closing', 'none'],
  closing: ['none'],
});

/** One step of a client's connection life; an illegal one is PMRPC_ERR_CONN_STATE. */
export function connTransition(from: ConnState, to: ConnState, clientId: number): ConnState {
  if (!CONN_TRANSITIONS[from].includes(to)) throw new PmrpcError(RpcErrorCodes.CONN_STATE, `client ${clientId}: its connection cannot go from ${from} to ${to}`);
  return to;
}

/** A client's connection on the server: its QP, the MR over its ring, the ring, and where its pass stands. */
export interface Conn {
  clientId: number;
  sqp: ServerQp;
  mr: MemoryRegion;
  ring: Ring;
  stops: Array<() => void>;
  ackedUpTo: number;
  /** The client reads packed RESULTs (AcceptRequest.packedResults): a pass's replies leave in one notify. */
  packed: boolean;
  /** SEND strategies: the highest sequence whose receive buffer this connection has posted. */
  recvUpTo: number;
  /**
   * The CpuPoller pass (passId) in which a CPU pass of this connection polled its ring until it
   * found it empty: the pass's further doorbells of this connection (writes drained before the
   * pass began, one per request) would find it empty again, and are let go.
   */
  polledEmptyIn: number;
  /**
   * strict: a CPU pass of this connection waits for the msync its redo-log step depends on
   * (StrictBatch.defer); the callers' beforeProcess steps wait with it. undefined: none waits.
   */
  deferred: Array<() => void> | undefined;
}

/** A client's connection life (one state, above) and its current connection (none while dormant, after a drop, or closing). */
export interface Session {
  state: ConnState;
  conn: Conn | undefined;
}
