/** src/check — the linearizability checker (DESIGN §5) the crash tests judge histories with. */
export { checkLinearizable, kvModel, CHECK_DEFAULTS, type Model, type Operation, type CheckResult, type CheckOptions, type KvInput, type KvOutput } from './linearizability.js';
export { lostWrites, describeKvInput, lostAcknowledged, durablePrefixes, describeAckedLoss, type AckedPrefix, type AckedLoss } from './lost.js';
