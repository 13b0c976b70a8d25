import { defineErrorCodes, type ErrorCodesOf } from '../../pmem/index.js';
/** Operating failures of the durable RPC layer (docs/rpc.md lists them with when and what was touched). */
export const RpcErrorCodes = defineErrorCodes('rpc', {
  /** A durable request's result is not known after a server crash (results not kept, or its record was reused). */
  RESULT_LOST: 'PMRPC_ERR_RESULT_LOST',
  /** The server has no handler for the request's method (the request is still applied, with no effects). */
  UNKNOWN_METHOD: 'PMRPC_ERR_UNKNOWN_METHOD',
  /** The handler threw or returned invalid effects (the request is applied with no effects). */
  HANDLER_FAILED: 'PMRPC_ERR_HANDLER_FAILED',
  /** More calls waiting for ring credit than pendingCallsMax: nothing was sent. */
  CALLS_PENDING_FULL: 'PMRPC_ERR_CALLS_PENDING_FULL',
  /** The strategy never makes a request durable (`none`): `durable` rejects with this. */
  NEVER_DURABLE: 'PMRPC_ERR_NEVER_DURABLE',
  /** The client was closed, or its connection failed; requests not yet durable reject `durable` with this. */
  DISCONNECTED: 'PMRPC_ERR_DISCONNECTED',
  /** The server is not started (recovered) yet, or closed. */
  NOT_SERVING: 'PMRPC_ERR_NOT_SERVING',
  /** A method name registered twice, or two names with the same method id. */
  METHOD_EXISTS: 'PMRPC_ERR_METHOD_EXISTS',
  /** An illegal step of a client's connection life on the server (src/rpc/conn-life.ts): a server bug, stopped before it acts. */
  CONN_STATE: 'PMRPC_ERR_CONN_STATE',
});

declare module '../../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof RpcErrorCodes> {}
}
