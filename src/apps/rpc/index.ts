/** The durable RPC app: the App contract over src/rpc, its handshake, and the digest workload. */
export { rpcApp, RpcAppServer, RPC_APP_DEFAULTS, RpcAppErrorCodes, rpcAppBytes, summarizeRecovery, type RpcAppOptions, type RpcInspectView, type RpcAppLayout, type RpcRecoverySummary } from './app.js';
export { DIGEST_BYTES, LOG_BASE, METHOD, DIGEST_HANDLERS, digestHandler, readDigestLog, type DigestEntry } from './digest.js';
export { encodeHelloPayload, decodeHelloPayload, encodeWelcomePayload, decodeWelcomePayload, HandshakeErrorCodes } from './handshake.js';
