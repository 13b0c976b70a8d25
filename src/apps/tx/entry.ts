/**
 * The package's `pmrpc/apps/tx` entry point: PRISM-TX (./index.ts) and its client over TCP,
 * `connectTxCluster` (src/cluster/tx-client.ts). A file apart from index.ts because src/cluster
 * imports this folder's index: re-exporting the cluster from there would be a cycle.
 */
export * from './index.js';
export { connectTxCluster, TxClusterClient, TX_CLUSTER_DEFAULTS, txShardSource, type TxClusterOptions, type TxShards, type TxShardSource } from '../../cluster/index.js';
