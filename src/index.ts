/**
 * pmrpc — the public API. Each layer is also importable on its own:
 * `pmrpc/pmem` (PM device), `pmrpc/flush` (RNIC, verbs, flush strategies, PRISM),
 * `pmrpc/recovery` (ring, redo log, recovery).
 */
export * from '../pmem/index.js';
export * from '../flush/index.js';
export * from '../recovery/index.js';
export { checkLinearizable, kvModel, CHECK_DEFAULTS, type Model, type Operation, type CheckResult, type CheckOptions, type KvInput, type KvOutput } from './check/linearizability.js';
export {
  encodeMessage,
  decodeMessage,
  FrameReader,
  frameBytes,
  MAX_FRAME_BYTES_DEFAULT,
  PROTOCOL_VERSION,
  type HelloMessage,
  type WelcomeMessage,
  type GoodbyeMessage,
  type ControlMessage,
  type WireMessage,
} from './transport/index.js';
export {
  TcpNicServer,
  TcpLink,
  TCP_SERVER_DEFAULTS,
  TCP_LINK_DEFAULTS,
  TransportErrorCodes,
  isLoopbackHost,
  type TcpNicServerOptions,
  type TcpLinkOptions,
  type HelloInfo,
  type AcceptResult,
  type DisconnectInfo,
  type ConnectionStats,
  type TcpServerStats,
} from './transport/index.js';
export { litmusCatalogue, runLitmus, type Litmus, type LitmusResult } from './litmus/index.js';
export * from './rpc/index.js';
export { runCrashTest, MUTANTS, CRASH_TEST_DEFAULTS, type CrashTestOptions, type CrashTestResult, type Violation, type Mutant } from './crash/index.js';
export {
  PrismKvServer,
  PrismKvClient,
  PilafServer,
  PilafClient,
  runKvCrashTest,
  KV_MUTANTS,
  KV_CRASH_DEFAULTS,
  KV_LAYOUT_DEFAULTS,
  KV_SERVER_DEFAULTS,
  KV_CLIENT_DEFAULTS,
  KvErrorCodes,
  type KvFaults,
  type KvFaultName,
  type KvMutant,
  type KvLayoutOptions,
  type KvServerOptions,
  type KvClientOptions,
  type KvClientStats,
  type KvRecoveryReport,
  type KvCrashTestOptions,
  type KvCrashTestResult,
  type KvViolation,
} from './apps/kv/index.js';
export * from './server/index.js';
export { inspectFile, type InspectReport } from './server/inspect.js';
// The node host (one process, one PM file, one app) and clusters of nodes (DESIGN §6).
export { NodeHost, NODE_HOST_DEFAULTS, NODE_APPS, NODE_APP_NAMES, NodeErrorCodes, appByName, resolveAuthToken, AUTH_TOKEN_ENV, AuthErrorCodes, type NodeHostOptions, type NodeRecovery, type NodeStartLine, type AnyApp } from './node/index.js';
export { Cluster, connectPeer, CLUSTER_CONNECT_DEFAULTS, ClusterClientErrorCodes, ClusterErrorCodes, parseClusterSpec, loadClusterFile, clusterNode, isLocalNode, type ClusterSpec, type ClusterNodeSpec, type ClusterNodeOptions, type ClusterConnectOptions, type NodeConnection } from './cluster/index.js';
