/**
 * The Pilaf-style KV baseline (DESIGN §5 / §9): GET by one-sided READs with self-verifying
 * checksums, PUT and DELETE by RPC to the server CPU. It runs as the kv app's system 'pilaf'
 * (`--system pilaf`); `pmrpc/apps/kv` re-exports it.
 */
export { PILAF_MAGIC, PILAF_REQUEST_IMM, PILAF_REPLY_IMM, encodePilafEntry, decodePilafEntry, computePilafGeometry, type PilafEntry } from './layout.js';
export { PilafServer, PILAF_SERVER_DEFAULTS, type PilafServerOptions, type PilafRecovery } from './server.js';
export { PilafClient, type PilafClientStats } from './client.js';
export { PilafAppServer, PILAF_KV_SYSTEM, type PilafRecoveryReport } from './app.js';
export { PILAF_MUTANTS, NO_PILAF_FAULTS, findPilafMutant, pilafFaultsFor, type PilafFaults, type PilafFaultName, type PilafMutant } from './faults.js';
export { PILAF_SLOT_TABLE, PILAF_ENTRY_VALUES, PILAF_POINTER_VALUES, PILAF_WORDS_VALUES, decidePilafSlot, matchingPilafSlotRows, allPilafSlotInputs, type PilafSlotInput, type PilafSlotRow, type PilafEntryAction } from './recovery.js';
