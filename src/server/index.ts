/** src/server — a durable RPC node over TCP (`pmrpc serve`), its client, inspect, and real crash-restart runs. */
export { RpcNode, RPC_NODE_DEFAULTS, NODE_LAYOUT, ServerErrorCodes, nodeAppBytes, type RpcNodeOptions, type RecoverySummary } from './node.js';
export { RemoteRpcClient, REMOTE_CLIENT_DEFAULTS, type RemoteClientOptions } from './client.js';
export { encodeHelloPayload, decodeHelloPayload, encodeWelcomePayload, decodeWelcomePayload, HandshakeErrorCodes } from '../apps/rpc/index.js';
/** The inspector moved to src/node (every app); re-exported here for the rpc node's users. */
export { inspectFile, type InspectReport } from '../node/index.js';
export { WORKLOAD_METHOD, WORKLOAD_HANDLERS, PAYLOAD_BYTES, workloadPayload, verifyDigestLog, kvNodeKeys, type ClientLedger, type DigestVerdict } from './workload.js';
export { Supervisor, Wakeup, MIN_SERVE_MS, HarnessErrorCodes, pause, stopAll, crashesOf, seedCheck, runRealCrashApp, type RealCrashEntry, type RealCrashPlan, type RealCrashRun, type RealCrashRunOptions, type RealCrashNode, type KillStep, type SupervisorOptions, type KillPlan, type RestartRecord, type RealCrashVerdict, type Up } from './supervisor.js';
export { runRealCrash, RPC_REAL_CRASH, resolveRealCrashOptions, REAL_CRASH_DEFAULTS, type RealCrashOptions, type RealCrashReport } from './crash-rpc.js';
export { runKvRealCrash, KV_REAL_CRASH, resolveKvRealCrashOptions, KV_REAL_CRASH_DEFAULTS, type KvRealCrashOptions, type KvRealCrashReport, type KvNodeReport } from './crash-kv.js';
