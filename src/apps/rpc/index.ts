/** The durable RPC app: the App contract over src/rpc (app.ts), its layout and codes, its server and client faces (with the handshake), its recovery decision tables (recovery.ts), its mutants, and the digest workload. */
export { rpcApp, RPC_APP_DEFAULTS, type RpcAppOptions } from './app.js';
export { RpcAppErrorCodes, HandshakeErrorCodes, RPC_APP_LAYOUT, rpcAppBytes, rpcFixedBytes, MAX_AWAITING, type RpcAppLayout } from './layout.js';
export { RpcAppServer, summarizeRecovery, decodeHelloPayload, encodeWelcomePayload, type RpcAppServerOptions, type RpcInspectView, type RpcRecoverySummary } from './server.js';
export { encodeHelloPayload, decodeWelcomePayload, rpcAppClient } from './client.js';
export { RPC_RECOVERY_TABLE, RPC_CONN_SLOT_TABLE, RPC_BEHIND_WORD_TABLE, RPC_REPLAY_BEHIND_WORD } from './recovery.js';
export { RPC_MUTANTS, findRpcMutant, type RpcMutant } from './faults.js';
export { DIGEST_BYTES, LOG_BASE, METHOD, DIGEST_HANDLERS, digestHandler, digestLogCapacity, readDigestLog, type DigestEntry } from './digest.js';
