/**
 * pmrpc — the public API: what a user building a durable service needs. The PM device, the RNIC
 * (verbs, queue pairs, flush strategies), the recovery store, durable RPC (server, client,
 * in-process and TCP links, handler pool), the node host and its remote client, and the errors.
 *
 * Everything else has its own entry point:
 *   `pmrpc/pmem`, `pmrpc/flush`, `pmrpc/recovery` — each layer whole (crash images, verbs' wire
 *     types, ring and redo-log internals, the recovery decision table, …);
 *   `pmrpc/transport` — the wire codec (frames, messages) under the TCP link;
 *   `pmrpc/testing` — checkers, litmus, crash-test engines, mutants and fault switches;
 *   `pmrpc/apps/kv` — PRISM-KV and its Pilaf-style baseline;
 *   `pmrpc/apps/tx` — PRISM-TX (shards, TxClient, TxResolver; over TCP: connectTxCluster, here too);
 *   `pmrpc/apps/rs` — PRISM-RS (RsClient, rsApp, RsLocalCluster; over TCP: connectRsCluster here).
 */

// pmem/ — the PM device, errors, injected time and randomness.
export {
  ErrorCodes,
  PmrpcError,
  PmrpcIoError,
  isPmrpcError,
  isInvariantError,
  VirtualClock,
  systemClock,
  createPrng,
  seededEntropy,
  cryptoEntropy,
  randomSeed,
  LINE_BYTES,
  MAX_REGION_BYTES,
  PmemRegion,
  PmemReadView,
  PMEM_DEFAULTS,
  type ErrorCode,
  type Clock,
  type TimerHandle,
  type Prng,
  type Entropy,
  type PmemOptions,
  type PersistenceDomain,
  type PmemStats,
} from '../pmem/index.js';

// flush/ — the RNIC: memory registration, queue pairs, verbs, in-process fabric, flush strategies.
export {
  Access,
  NicErrorCodes,
  ProtectionDomain,
  Rnic,
  ServerQp,
  RNIC_DEFAULTS,
  InProcessFabric,
  InProcessLink,
  FABRIC_DEFAULTS,
  QueuePair,
  QUEUE_PAIR_DEFAULTS,
  Wr,
  ok,
  WR_OPS,
  CpuPoller,
  CPU_POLLER_DEFAULTS,
  StrategyServer,
  FlushClient,
  FLUSH_STRATEGIES,
  type MemoryRegion,
  type RnicOptions,
  type RnicStats,
  type DrainPolicy,
  type PlacementOrder,
  type FabricOptions,
  type DeliveryMode,
  type QueuePairOptions,
  type Link,
  type WorkRequest,
  type WrOp,
  type Completion,
  type CompletionStatus,
  type RecvCompletion,
  type Loc,
  type RemoteLoc,
  type FlushPlacement,
  type FlushSelectivity,
  type CpuPollerOptions,
  type StrategyServerOptions,
  type FlushClientOptions,
  type FlushStrategy,
  type PersistResult,
} from '../flush/index.js';

// recovery/ — the recovery store (rings, redo log, recovery) and its layout.
export {
  RecoveryStore,
  STORE_DEFAULTS,
  RecoveryErrorCodes,
  RecoveryRefusedError,
  LAYOUT_DEFAULTS,
  computeGeometry,
  layoutBytes,
  maxPayloadBytes,
  type StoreOptions,
  type ClientInfo,
  type RecoveryReport,
  type ClientRecovery,
  type AppView,
  type Handler,
  type EffectImage,
  type Effects,
  type LayoutOptions,
  type Geometry,
} from '../recovery/index.js';

// src/rpc — durable RPC.
export {
  RpcErrorCodes,
  RPC_STRATEGIES,
  ACK_STRATEGIES,
  SEND_STRATEGIES,
  COUPLED_STRATEGIES,
  COMPLETION_STRATEGIES,
  ALWAYS_CORRECT,
  checkStrategy,
  DurableRpcServer,
  RPC_SERVER_DEFAULTS,
  DurableRpcClient,
  RPC_CLIENT_DEFAULTS,
  connectInProcess,
  reconnectInProcess,
  rpcWorker,
  type RpcStrategy,
  type RpcServerOptions,
  type MethodOptions,
  type ConnectionInfo,
  type KnownResult,
  type AcceptRequest,
  type RpcCall,
  type RpcClientOptions,
  type RpcHandler,
  type RpcRequest,
  type RpcEffects,
  type RpcPool,
  type PoolTask,
  type PoolAnswer,
} from './rpc/index.js';

// src/transport — the TCP link and server.
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

// src/server — a durable RPC node over TCP, its remote client, and the PM-file inspector.
export {
  RpcNode,
  RPC_NODE_DEFAULTS,
  NODE_LAYOUT,
  ServerErrorCodes,
  HandshakeErrorCodes,
  nodeAppBytes,
  RemoteRpcClient,
  REMOTE_CLIENT_DEFAULTS,
  type RpcNodeOptions,
  type RecoverySummary,
  type RemoteClientOptions,
} from './server/index.js';

// src/node, src/cluster — the node host (one process, one PM file, one app) and clusters of nodes (DESIGN §6).
export { NodeHost, NODE_HOST_DEFAULTS, formatNodeFile, type FormatNodeFileOptions, NODE_APPS, NODE_APP_NAMES, NodeErrorCodes, appByName, resolveAuthToken, AUTH_TOKEN_ENV, AuthErrorCodes, type NodeHostOptions, type NodeRecovery, type NodeStartLine, type AnyApp } from './node/index.js';
// `pmrpc inspect` / `pmrpc check` for every app, and the wrong-app refusal (src/apps identify.ts).
export { inspectFile, checkFile, InspectErrorCodes, type InspectReport, type CheckReport, type FileProblem } from './node/index.js';
export { AppErrorCodes } from './apps/index.js';
export { connectRsCluster, rsClientOfCluster, type RsClusterOptions } from './cluster/index.js';
// PRISM-TX over TCP (docs/tx.md): a transaction client of a cluster's tx shards.
// The rest of PRISM-TX (TxClient, txShardSource, TxErrorCodes, …) is in `pmrpc/apps/tx`: the root stays under 100 names.
export { connectTxCluster, TxClusterClient, type TxClusterOptions, type TxShards, type TxShardSource } from './cluster/index.js';
export { type TxOutcome, type TxStatus } from './apps/tx/index.js';
export { Cluster, connectPeer, CLUSTER_CONNECT_DEFAULTS, ClusterClientErrorCodes, ClusterErrorCodes, parseClusterSpec, loadClusterFile, clusterNode, isLocalNode, type ClusterSpec, type ClusterNodeSpec, type ClusterNodeOptions, type ClusterConnectOptions, type NodeConnection } from './cluster/index.js';
