/** PRISM-TX (DESIGN §5, docs/tx.md): serializable, crash-safe distributed transactions on PRISM chains. */
export { txApp, resolveTxAppOptions, initialValue, TX_APP_DEFAULTS } from './app.js';
export { RETURN_BATCH, TxAppServer, type TxRecoveryReport, type TxShardRecoveryReport } from './server.js';
export type { TxAppOptions, TxValueKind } from './layout.js';
export { TxClient, TxResolver, parseTxWelcome, SHARD_WAITS_MAX, RESOLVE_ROUNDS_MAX, type ShardConn, type ShardSource, type TxOutcome, type TxStatus, type TxClientOptions, type Resolution } from './client.js';
export { TX_MUTANTS, NO_TX_FAULTS, txFaultsFor, type TxFaults, type TxFaultName, type TxMutant } from './faults.js';
export { TxErrorCodes, decodeTxHeader, TX_HEADER_BYTES, describeH, txName, makeTxid, txClient, ITEM_BYTES, VALUE_BYTES_MAX, ENTRIES_MAX, type TxGeometry } from './layout.js';
export { TxAgent, type TxAgentOptions } from './agent.js';
// The durable layout's encoders (tests construct each row of the decision tables with them).
export { computeTxGeometry, bodyPtrsOffset, encodeBody, encodeItem, encodeSlot, decodeItem, ITEM_HEADER_BYTES, type Item, recordOffset, slotOffset, hWord, hState, hTxid, H_FENCED, H_PREPARED, H_COMMITTED, H_ABORTED, ENTRY_WRITE, ENTRY_READ, RECORD_BODY, type RecordEntry } from './layout.js';
// The decision tables as data (docs/tx.md tables R and D).
export { TX_RECOVERY_TABLE, decideTxRecovery, matchingTxRecoveryRows, allTxRecoveryInputs, txRecoveryRows, type TxRecoveryRow, type TxRecoveryAction, type TxRecoveryScope } from './recovery.js';
export { TX_RESOLVER_TABLE, decideTxResolution, matchingTxResolutionRows, allTxResolutionInputs, type TxResolutionInput, type TxResolutionRow, type TxResolutionAction } from './resolution.js';
