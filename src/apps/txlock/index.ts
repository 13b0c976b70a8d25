/** The lock-based transaction baselines of PRISM-TX (docs/tx.md "Baselines"): FaRM-style and FORD-style commit on the same emulator and durability. */
export { txfarmApp, txfordApp, resolveTxLockAppOptions, TXLOCK_APP_DEFAULTS } from './app.js';
export { TxLockAppServer, type TxLockRecoveryReport } from './server.js';
export {
  TXLOCK_RECOVERY_TABLE,
  TXLOCK_LOG_H_VALUES,
  TXLOCK_LOG_BODY_VALUES,
  TXLOCK_PROTOCOL_VALUES,
  TXLOCK_ENTRY_LOCK_VALUES,
  TXLOCK_ENTRY_VERSION_VALUES,
  TXLOCK_OBJECT_LOCK_VALUES,
  allTxLockRecoveryInputs,
  checkTxLockRedoRecords,
  decideTxLockRecovery,
  matchingTxLockRecoveryRows,
  txLockRecoveryRows,
  type TxLockRecoveryRow,
  type TxLockRecoveryScope,
  type TxLockRecoveryAction,
  type TxLockLogInput,
  type TxLockEntryInput,
  type TxLockObjectInput,
} from './recovery.js';
export { TXLOCK_MUTANTS, type TxLockFaults, type TxLockMutant } from './faults.js';
export { FarmTxClient, FordTxClient, parseTxLockWelcome, READ_RETRIES_MAX, type TxLockConn, type TxLockSource, type TxLockClientOptions } from './client.js';
export { decodeHeader as decodeTxLockHeader, HEADER_BYTES as TXLOCK_HEADER_BYTES, ENTRIES_MAX as TXLOCK_ENTRIES_MAX, OBJ_BYTES as TXLOCK_OBJ_BYTES, type TxLockProtocol, type TxLockAppOptions } from './layout.js';
export { startLocalShards, type LocalShards } from './local.js';
