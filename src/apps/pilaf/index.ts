/**
 * The Pilaf-style KV baseline (DESIGN §5 / §9): GET by one-sided READs with self-verifying
 * checksums, PUT and DELETE by RPC to the server CPU. It runs as the kv app's system 'pilaf'
 * (`--system pilaf`); `pmrpc/apps/kv` re-exports it.
 */
export { PILAF_MAGIC, PILAF_REQUEST_IMM, PILAF_REPLY_IMM, encodePilafEntry, decodePilafEntry, computePilafGeometry, type PilafEntry } from './layout.js';
export { PilafServer, PILAF_SERVER_DEFAULTS, type PilafServerOptions } from './server.js';
export { PilafClient, type PilafClientStats } from './client.js';
export { PilafAppServer, PILAF_KV_SYSTEM } from './app.js';
export { PILAF_MUTANTS, NO_PILAF_FAULTS, findPilafMutant, pilafFaultsFor, type PilafFaults, type PilafFaultName, type PilafMutant } from './faults.js';
