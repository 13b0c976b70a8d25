/** src/cluster — cluster files (nodes on one or many hosts), their validation, and clients of a whole cluster (DESIGN §6). */
export { ClusterErrorCodes, LayoutErrorCodes, LAYOUT_OPTION_APPS, layoutAppOptions, type LayoutOptions, parseClusterSpec, loadClusterFile, toClusterSpec, clusterNode, isLocalNode, type ClusterSpec, type ClusterNodeSpec, type ClusterNodeOptions } from './spec.js';
export { Cluster, connectPeer, CLUSTER_CONNECT_DEFAULTS, ClusterClientErrorCodes, type ClusterConnectOptions, type NodeConnection } from './client.js';
export { resolveAuthToken, AUTH_TOKEN_ENV, AuthErrorCodes } from '../node/index.js';
export { connectRsCluster, rsClientOfCluster, type RsClusterOptions } from './rs.js';
export { freePorts, txShards, txNodeAppOptions, txShardSource, startTxShardAgent, type TxShardSource, type TxShardAgent, type TxShardAgentOptions } from './tx.js';
export { connectTxCluster, TxClusterClient, TX_CLUSTER_DEFAULTS, type TxClusterOptions, type TxShards } from './tx-client.js';
export { runTxRealCrash, TX_REAL_CRASH, TX_REAL_CRASH_DEFAULTS, encodeAccount, decodeAccount, type TxRealCrashOptions, type TxRealCrashReport } from './tx-crash.js';
export { runRsRealCrash, RS_REAL_CRASH, RS_REAL_CRASH_DEFAULTS, type RsRealCrashOptions, type RsRealCrashReport } from './rs-crash.js';
