/** src/testing/crash — the one crash explorer (DESIGN §8): scheduler, crash points, images, recovery, checkers per app. */
export { explore, mergeReports, replayCommand, resolveExploreOptions, EXPLORE_DEFAULTS, type ExplorerApp, type ExploreOptions, type ExploreReport, type ExplorerViolation, type ImageEngine } from './explorer.js';
export { World, WorldNode, quiesce, type RunResult, type StepChoice, type Chooser, type Turn } from './world.js';
export { nicConfigFor, configName, checkPins, rnicOptions, DRAIN_CHOICES, type NicConfig, type NicPins, type DrainChoice } from './config.js';
export { mix, parseSeedRange } from './seeds.js';
export { rpcExplorerApp, resolveRpcWorkload, checkDigests, RPC_WORKLOAD_DEFAULTS, type RpcWorkloadOptions, type RpcSnapshot } from './rpc.js';
export { MUTANTS, findMutant, type Mutant } from './rpc-mutants.js';
export { lostWrites } from '../../check/index.js';
export { kvExplorerApp, resolveKvWorkload, cutHistoryAt, KV_WORKLOAD_DEFAULTS, KV_CRASH_LAYOUT, type KvWorkloadOptions, type KvOp } from './kv.js';
export { sweep, exploreSeed, appOf, type SweepSpec, type SweepOptions, type CountedReport } from './sweep.js';
export { registerExplorerApp, resolveRegisterWorkload, lostRegisterWrites, cutRegisterHistory, REGISTER_MUTANTS, REGISTER_WORKLOAD_DEFAULTS, type RegisterWorkloadOptions, type RegisterMutant, type RegisterOp, type RegisterSystem } from './register.js';
export { runCrashPlan, planFor, parsePlan, formatPlan, type CrashPlan, type CrashEvent, type CrashRunResult } from './multi.js';
export { exploreExhaustive, resolveExhaustiveOptions, parseSchedule, exhaustiveConfig, independent, ExhaustiveErrorCodes, EXHAUSTIVE_DEFAULTS, type ExhaustiveOptions, type ExhaustiveReport, type ExhaustiveViolation, type StatesExplored } from './exhaustive.js';
export { withDistinctImages, type Counted } from './distinct.js';
export { recoveryExplorerApp, resolveRecoveryWorkload, RecoveryAppServer, recoveryDigestHandler, mediaImage, visibleImage, RECOVERY_WORKLOAD_DEFAULTS, RECOVERY_CRASH_GEOMETRY, type RecoveryWorkloadOptions, type RecoveryExplorerApp } from './recovery.js';
export { timelineInput, writeViolationTimelines, type Picture, type PicturedProblem, type PicturedViolation } from './picture.js';
export { txExplorerApp, resolveTxWorkload, cutTxHistory, checkAppendHistory, checkBankHistory, checkAppendSerializable, TX_WORKLOAD_DEFAULTS, TX_CLI_DEFAULTS, AGENT_SCANS_MAX, BANK_BALANCE, type TxWorkloadOptions, type TxRecord, type TxMop, type TxExplorerApp } from './tx.js';
export { rsExplorerApp, resolveRsWorkload, cutRsHistory, RS_WORKLOAD_DEFAULTS, RS_CRASH_LAYOUT, RS_MAJORITY_WAIT_MS, type RsWorkloadOptions, type RsOp, type RsExplorerApp } from './rs.js';
export { rslockExplorerApp, RSLOCK_WORKLOAD_DEFAULTS, TORN_VALUE, type RsLockWorkloadOptions } from './rslock.js';
