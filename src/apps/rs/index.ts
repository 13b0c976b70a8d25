/** PRISM-RS (DESIGN §5, docs/rs.md): a replicated block store, ABD over durable PRISM chains. */
export * from './layout.js';
export { RS_MUTANTS, NO_RS_FAULTS, findRsMutant, rsFaultsFor, listRsMutants, type RsFaults, type RsFaultName, type RsMutant } from './faults.js';
export { RsServer, formatRs, RS_RETURN_IMM, RS_RETURN_ACK_IMM, RS_RETURN_STALE_IMM, type RsRecoveryReport, type RsRecoverySummary } from './server.js';
export { RS_SLOT_TABLE, RS_POINTER_VALUES, RS_WORDS_VALUES, decideRsSlot, matchingRsSlotRows, allRsSlotInputs, type RsSlotInput, type RsSlotRow, type RsSlotAction, type RsPointerInput, type RsWordsInput } from './recovery.js';
export { rsApp, RS_APP_DEFAULTS, type RsAppOptions } from './app.js';
export { RsClient, RS_CLIENT_DEFAULTS, parseRsWelcome, type RsClientOptions, type RsClientStats, type RsReplicaConnection, type RsReconnect } from './client.js';
export { RsLocalCluster, RS_LOCAL_DEFAULTS, type RsLocalOptions } from './local.js';
