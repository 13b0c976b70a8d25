/**
 * `pmrpc/testing` — the tools that prove a protocol durable (DESIGN §8): the linearizability
 * checker, the hardware-model litmus catalogue, the crash-test engines (simulated RPC and KV
 * crashes, real crash-restart runs) with their mutants and fault switches, and the PM crash-image
 * engines they are built on. Not needed to run a service; the root `pmrpc` does not export these.
 */

// The linearizability checker.
export { checkLinearizable, kvModel, CHECK_DEFAULTS, type Model, type Operation, type CheckResult, type CheckOptions, type KvInput, type KvOutput } from '../check/index.js';

// The hardware-model litmus catalogue.
export { litmusCatalogue, runLitmus, type Litmus, type LitmusLayer, type LitmusOutcome, type LitmusResult } from '../litmus/index.js';

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

// The durable-RPC crash test (simulated crashes at every crash point) and its mutants.
export {
  runCrashTest,
  resolveCrashTestOptions,
  reproduceCommand,
  crashGeometry,
  digestHandler,
  readDigestLog,
  CRASH_TEST_DEFAULTS,
  MUTANTS,
  findMutant,
  type CrashTestOptions,
  type CrashTestResult,
  type Violation,
  type ImageEngine,
  type DigestEntry,
  type Mutant,
} from '../crash/index.js';

// The PRISM-KV crash test and its mutants.
export {
  runKvCrashTest,
  lostWrites,
  cutHistoryAt,
  KV_CRASH_DEFAULTS,
  KV_MUTANTS,
  NO_KV_FAULTS,
  faultsFor,
  listKvMutants,
  type KvCrashTestOptions,
  type KvCrashTestResult,
  type KvViolation,
  type KvViolationKind,
  type KvFaults,
  type KvFaultName,
  type KvMutant,
} from '../apps/kv/index.js';

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
