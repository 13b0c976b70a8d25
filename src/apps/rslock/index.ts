/** The lock-based replication baseline of PRISM-RS (DESIGN §5, §9): one-sided locks per block, majority quorums, standard verbs only. */
export * from './layout.js';
export { rslockApp, RsLockAppServer, RSLOCK_APP_DEFAULTS, type RsLockAppOptions, type RsLockAddress } from './app.js';
export { RsLockClient, RSLOCK_CLIENT_DEFAULTS, BOTH_SLOTS_BYTES_MAX, RSLOCK_MUTANTS, type RsLockFaults, parseRsLockWelcome, type RsLockClientOptions, type RsLockClientStats, type RsLockReplica, RSLOCK_STYLES, type RsLockStyle } from './client.js';
export { startLocalRsLock, type LocalRsLock } from './local.js';
