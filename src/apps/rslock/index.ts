/** The lock-based replication baseline of PRISM-RS (DESIGN §5, §9): one-sided locks per block, majority quorums, standard verbs only. */
export * from './layout.js';
export { RsLockAppServer, type RsLockAddress, type RsLockRecoveryReport } from './server.js';
export { rslockApp, RSLOCK_APP_DEFAULTS, type RsLockAppOptions } from './app.js';
export { RsLockClient, RSLOCK_CLIENT_DEFAULTS, BOTH_SLOTS_BYTES_MAX, parseRsLockWelcome, type RsLockClientOptions, type RsLockClientStats, type RsLockReplica, RSLOCK_STYLES, type RsLockStyle } from './client.js';
export { RSLOCK_MUTANTS, findRsLockMutant, type RsLockFaults, type RsLockMutant } from './faults.js';
export { startLocalRsLock, type LocalRsLock } from './local.js';
export { RSLOCK_BLOCK_TABLE, RSLOCK_RECORDS_VALUES, RSLOCK_LINE_VALUES, decideRsLockBlock, matchingRsLockBlockRows, allRsLockBlockInputs, type RsLockBlockInput, type RsLockBlockRow } from './recovery.js';
