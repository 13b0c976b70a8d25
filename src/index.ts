/**
 * pmrpc — the public API. Each layer is also importable on its own:
 * `pmrpc/pmem` (PM device), `pmrpc/flush` (RNIC, verbs, flush strategies, PRISM),
 * `pmrpc/recovery` (ring, redo log, recovery).
 */
export * from '../pmem/index.js';
export * from '../flush/index.js';
export * from '../recovery/index.js';
export { checkLinearizable, kvModel, CHECK_DEFAULTS, type Model, type Operation, type CheckResult, type CheckOptions, type KvInput, type KvOutput } from './check/linearizability.js';
export { encodeMessage, decodeMessage, FrameReader, frameBytes, MAX_FRAME_BYTES_DEFAULT } from './transport/codec.js';
export { litmusCatalogue, runLitmus, type Litmus, type LitmusResult } from './litmus/index.js';
