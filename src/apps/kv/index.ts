/** PRISM-KV (DESIGN §5): a durable key-value store on PRISM chains, and its Pilaf-style baseline. */
export * from './layout.js';
export { KV_MUTANTS, NO_KV_FAULTS, faultsFor, findKvMutant, listKvMutants, KV_SYSTEM_MUTANTS, type KvFaults, type KvFaultName, type KvMutant } from './faults.js';
export { PrismKvServer, KV_SERVER_DEFAULTS, RETURN_IMM, RETURN_ACK_IMM, RETURN_STALE_IMM, type KvServerOptions, type KvRecoveryReport, type KvServerStats, type SlotProblem } from './server.js';
export { PrismKvClient, KV_CLIENT_DEFAULTS, type KvClientOptions, type KvClientStats } from './client.js';
/** The Pilaf-style baseline lives in src/apps/pilaf (the kv app's system 'pilaf'); re-exported here for `pmrpc/apps/kv` users. */
export { PILAF_MUTANTS, findPilafMutant, type PilafFaults, type PilafMutant, PilafServer, PilafClient, PilafAppServer, PILAF_MAGIC, PILAF_SERVER_DEFAULTS, PILAF_REQUEST_IMM, PILAF_REPLY_IMM, encodePilafEntry, decodePilafEntry, type PilafServerOptions, type PilafClientStats } from '../pilaf/index.js';
export { kvApp, kvSystemReconnects, PrismKvAppServer, type KvAppServer, type KvAppRecoveryReport, type PrismKvAppRecoveryReport, KV_APP_DEFAULTS, connectKvClient, type KvAppOptions, type KvSystem } from './app.js';
/** The return-RPC mailbox and the buffer-return desk live in the shared apps module (src/apps/shared); re-exported here for `pmrpc/apps/kv` users. */
export { Mailbox, type MailboxBuffer, type MailboxStats } from '../shared/index.js';
export { encodeReturnBatch, encodeReceiptBatch, ReturnDesk, ReturnSender, type ReturnSenderConfig, type ReturnRound, RETURN_FLAG_IDEMPOTENT, RETURN_FLAG_RECEIPTS, returnHeaderBytes, type ReturnDeskConfig, type ReturnStats } from '../shared/index.js';
