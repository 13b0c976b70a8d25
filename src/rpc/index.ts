/** src/rpc — durable RPC over the emulated RNIC and the recovery layer (DESIGN §4). */
export { RpcErrorCodes } from './errors.js';
export { RPC_STRATEGIES, RPC_STRATEGY_TABLE, rpcStrategy, type RpcStrategyRecord, ACK_STRATEGIES, SEND_STRATEGIES, COUPLED_STRATEGIES, COMPLETION_STRATEGIES, ALWAYS_CORRECT, checkStrategy, type RpcStrategy } from './strategies.js';
export {
  DurableRpcServer,
  RPC_SERVER_DEFAULTS,
  RPC_FAULT_NAMES,
  GOODBYE_METHOD,
  CLIENT_SECRET_BYTES,
  methodId,
  checkRpcFaults,
  type RpcServerOptions,
  type RpcFaults,
  type ConnectionInfo,
  type KnownResult,
  type AcceptRequest,
} from './server.js';
export { CONNST, CONN_TRANSITIONS, connTransition, type ConnState } from './conn-life.js';
export { DurableRpcClient, RPC_CLIENT_DEFAULTS, type RpcCall, type RpcClientOptions } from './client.js';
export { RPC_ACK_IMM, RPC_RESULT_IMM, RPC_RESULTS_IMM } from './wire.js';
export { connectInProcess, reconnectInProcess } from './inprocess.js';
export type { RpcHandler, RpcRequest, RpcEffects, RpcPool, PoolTask, PoolAnswer } from './handler.js';
export { rpcWorker } from './worker.js';
export type { MethodOptions } from './server.js';
