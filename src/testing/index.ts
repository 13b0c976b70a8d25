/**
 * `pmrpc/testing` — the tools that prove a protocol durable (DESIGN §8): the linearizability
 * checker, the hardware-model litmus catalogue, the one crash explorer (simulated crashes of every
 * app, a violation's timeline) and real crash-restart runs, with their mutants and fault switches, and the PM crash-image
 * engines they are built on. Not needed to run a service; the root `pmrpc` does not export these.
 */

// The linearizability checker.
export { checkLinearizable, kvModel, CHECK_DEFAULTS, type Model, type Operation, type CheckResult, type CheckOptions, type KvInput, type KvOutput } from '../check/index.js';
// The Elle-style transactional checkers (list-append anomalies, bank, cycle).
export { checkListAppend, LIST_APPEND_DEFAULTS, type ListAppendTxn, type ListAppendMop, type ListAppendOptions, type ListAppendResult, type ListAppendStats, type ElleAnomaly, type ElleAnomalyKind, type CycleStep, type CheckerResult } from '../check/index.js';
export { checkBank, checkCycle, initialRing, BANK_DEFAULTS, CYCLE_DEFAULTS, type BankSnapshot, type BankOptions, type BankAnomaly, type BankResult, type CycleSnapshot, type CycleOptions, type CycleAnomaly, type CycleResult } from '../check/index.js';

// The hardware-model litmus catalogue.
export { litmusCatalogue, selectLitmus, LitmusErrorCodes, LITMUS_LAYERS, runLitmus, type Litmus, type LitmusLayer, type LitmusOutcome, type LitmusResult } from '../litmus/index.js';

// PM crash images (also in `pmrpc/pmem`).
export {
  crashImages,
  countImages,
  materialize,
  writeImageFile,
  CRASH_ENGINES,
  IMAGE_DEFAULTS,
  type CrashEngine,
  type CrashImage,
  type ImageChoice,
  type ImageOptions,
  type CrashState,
  type CrashPiece,
  type CrashComponent,
  type CrashContributor,
  type CrashPointKind,
  type CrashPointEvent,
} from '../../pmem/index.js';

// The one crash explorer (every app), its NIC configurations, seeds and sweeps, the apps' explorer
// workloads and checkers, and their mutants.
export * from './crash/index.js';
export { KV_MUTANTS, NO_KV_FAULTS, faultsFor, findKvMutant, listKvMutants, type KvFaults, type KvFaultName, type KvMutant } from '../apps/kv/index.js';
export { digestHandler, readDigestLog, DIGEST_HANDLERS, type DigestEntry } from '../apps/rpc/index.js';

// A picture of a violation: a self-contained HTML timeline, and the shortener of a failing history.
export * from './timeline/index.js';

// A test-only replicated register (an App on N nodes, src/apps/register) that exercises the explorer's multi-node paths.
export * from '../apps/register/index.js';

// Real crash-restart runs (SIGKILL of a serving process) and their workload and verifier.
export {
  runRealCrash,
  resolveRealCrashOptions,
  REAL_CRASH_DEFAULTS,
  HarnessErrorCodes,
  WORKLOAD_METHOD,
  WORKLOAD_HANDLERS,
  PAYLOAD_BYTES,
  workloadPayload,
  verifyDigestLog,
  type RealCrashOptions,
  type RealCrashReport,
  type RestartRecord,
  type ClientLedger,
  type DigestVerdict,
} from '../server/index.js';

// Test-only fault switches of each layer (what the mutants set; never set in production).
export { RPC_FAULT_NAMES, checkRpcFaults, type RpcFaults } from '../rpc/index.js';
export { FAULT_NAMES, NO_FAULTS, NO_ALLOCATOR_FAULTS, type RecoveryFaults, type AllocatorFaults } from '../../recovery/index.js';

// Modelled time: the cost model (profiles, parameters and their sources) the World charges events with.
export * from './model/index.js';

// The soak: an app's minimal deployment through N × its arena's capacity without a restart.
export { runSoak, soakPassed, SoakErrorCodes, SOAK_APPS, SOAK_DEFAULTS, type SoakApp, type SoakEntry, type SoakOptions, type SoakReport } from './soak.js';
