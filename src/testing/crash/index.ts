/** src/testing/crash — the one crash explorer (DESIGN §8): scheduler, crash points, images, recovery, checkers per app. */
export { explore, mergeReports, replayCommand, resolveExploreOptions, withAppDefaults, EXPLORE_DEFAULTS, type ExplorerApp, type ExploreOptions, type ExploreReport, type ExplorerViolation, type ImageEngine } from './explorer.js';
export { World, WorldNode, quiesce, type RunResult, type StepChoice, type Chooser, type Turn, type WorldOptions } from './world.js';
export { VirtualTime, type VirtualTimeStats } from './virtual-time.js';
export { nicConfigFor, durabilityConfig, configName, checkPins, rnicOptions, DRAIN_CHOICES, type NicConfig, type NicPins, type DrainChoice } from './config.js';
export { mix, parseSeedRange } from './seeds.js';
export { rpcExplorerApp, resolveRpcWorkload, checkDigests, RPC_WORKLOAD_DEFAULTS, type RpcWorkloadOptions, type RpcSnapshot } from './rpc.js';
/** The rpc app's mutants under their old names (src/apps/rpc/faults.ts: RPC_MUTANTS, findRpcMutant, RpcMutant). */
export { RPC_MUTANTS as MUTANTS, findRpcMutant as findMutant, type RpcMutant as Mutant } from '../../apps/rpc/index.js';
export { lostWrites, cutHistory, cutRecords } from '../../check/index.js';
export { kvExplorerApp, kvDropShape, resolveKvWorkload, KV_WORKLOAD_DEFAULTS, KV_CRASH_LAYOUT, type KvWorkloadOptions, type KvOp } from './kv.js';
export { sweep, exploreSeed, runPooled, type SweepOptions, type CountedReport } from './sweep.js';
export { appOf, txCrashSpec, plainTxShape, crashApp, swarmEntry, findMutantEntry, mutantName, crashAppHelp, listApps, CRASH_APPS, CRASH_APP_NAMES, DEMO_APP_NAMES, SWARM_APP_NAMES, RS_IMAGES_PER_POINT, type CrashApp, type CrashTestFlags, type MutantEntry, type SwarmEntry, type SpecExplore, type SweepSpec } from './apps.js';
export { registerExplorerApp, resolveRegisterWorkload, lostRegisterWrites, registerModel, REGISTER_WORKLOAD_DEFAULTS, type RegisterWorkloadOptions, type RegisterOp, type RegisterSystem, type RegisterInput, type RegisterOutput } from './register.js';
export { runCrashPlan, planFor, parsePlan, formatPlan, atGeometricGaps, MAJORITY_STORM, DROP_STORM, type CrashPlan, type CrashEvent, type CrashRunResult, type CrashRunHooks } from './multi.js';
export type { CrashShapes } from './types.js';
export { exploreExhaustive, resolveExhaustiveOptions, parseSchedule, exhaustiveConfig, independent, ExhaustiveErrorCodes, EXHAUSTIVE_DEFAULTS, type ExhaustiveOptions, type ExhaustiveReport, type ExhaustiveViolation, type StatesExplored } from './exhaustive.js';
export { withDistinctImages, type Counted } from './distinct.js';
export { recoveryExplorerApp, resolveRecoveryWorkload, RECOVERY_MUTANTS, recoveryMutantWorkload, type RecoveryMutant, plainRecoveryShape, RecoveryAppServer, recoveryDigestHandler, mediaImage, visibleImage, RECOVERY_WORKLOAD_DEFAULTS, RECOVERY_CRASH_GEOMETRY, type RecoveryWorkloadOptions, type RecoveryExplorerApp } from './recovery.js';
export { timelineInput, writeViolationTimelines, type Picture, type PicturedProblem, type PicturedViolation } from './picture.js';
export { txExplorerApp, resolveTxWorkload, cutTxHistory, checkAppendHistory, checkBankHistory, checkAppendSerializable, TX_WORKLOAD_DEFAULTS, TX_CLI_DEFAULTS, AGENT_SCANS_MAX, BANK_BALANCE, type TxWorkloadOptions, type TxRecord, type TxMop, type TxExplorerApp } from './tx.js';
export { rsExplorerApp, resolveRsWorkload, cutRsHistory, RS_WORKLOAD_DEFAULTS, RS_CRASH_LAYOUT, RS_MAJORITY_WAIT_MS, type RsWorkloadOptions, type RsOp, type RsExplorerApp } from './rs.js';
export { rslockExplorerApp, RSLOCK_WORKLOAD_DEFAULTS, TORN_VALUE, type RsLockWorkloadOptions } from './rslock.js';
export { swarm, swarmRun, swarmSeed, swarmReplay, paramsFor, parseMutant, resolveSwarmOptions, nsOfSeconds, SWARM_APPS, SWARM_DEFAULTS, SWARM_DEFAULT_SECONDS, SWARM_COST_PROFILE, LIVENESS_STEPS_MAX, LIVENESS_VIRTUAL_US, type SwarmApp, type SwarmOptions, type SwarmParams, type SwarmFailure, type SwarmAppResult, type SwarmSeedResult, type SwarmReport } from './swarm.js';
export { buildWorld, startWorkload, freshRegion, imageRegion, sampleRecoveryCrash, nestedImage, setRegionProbe, type RegionUse, type RegionProbeEvent, type BuildWorldOptions, type RunningWorkload } from './driver.js';
export { scheduleChooser, mixedSchedule, concreteSchedule, applySchedule, resolveSchedule, scheduleArgs, scheduleName, isPlainRandom, SCHEDULE_DEFAULTS, type ScheduleOptions } from './pct.js';
export { runMutants, mutantSweep, mutantTargets, plainSpec, formatMutants, allCaught, MUTANT_APPS, RS_PLAIN_IMAGES_PER_POINT, PLAIN_CRASH_RUNS, type MutantApp, type MutantTarget, type MutantResult, type MutantsReport } from './mutants.js';
