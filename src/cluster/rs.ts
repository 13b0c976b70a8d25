/**
 * PRISM-RS clients over TCP: one RsClient over the rs nodes of a cluster file (nodes started by
 * the node host: `pmrpc serve --app rs`, `pmrpc cluster up`). Unlike Cluster.connect (all or
 * nothing), a replica that is down is tolerated (f < N/2) and reconnected before later operations.
 */
import { PmrpcError, systemClock, type Clock } from '../../pmem/index.js';
import { QueuePair } from '../../flush/index.js';
import { rsApp, RsClient, RsErrorCodes, type RsClientOptions, type RsReplicaConnection } from '../apps/rs/index.js';
import { connectPeer, type Cluster } from './client.js';
import { toClusterSpec, type ClusterSpec } from './spec.js';

export interface RsClusterOptions {
  authToken: string | undefined;
  /** The client's name in the nodes' logs. */
  name: string;
  /** Time for the TCP handshakes. */
  clock: Clock;
  client: Partial<RsClientOptions>;
}

/** One RsClient over every rs node of a cluster file or spec, in file order. */
export async function connectRsCluster(fileOrSpec: string | ClusterSpec | Record<string, unknown>, options: Partial<RsClusterOptions> = {}): Promise<RsClient> {
  const spec = toClusterSpec(fileOrSpec);
  const nodes = spec.nodes.filter((n) => n.app === rsApp.name);
  if (nodes.length === 0) throw new PmrpcError(RsErrorCodes.NO_MAJORITY, 'the cluster lists no rs node');
  const clock = options.clock ?? systemClock;
  const one = async (i: number): Promise<RsReplicaConnection | undefined> => {
    try {
      const { link, welcome } = await connectPeer(nodes[i]!, { authToken: options.authToken, name: `${options.name ?? 'pmrpc-rs'}@${nodes[i]!.id}`, clock });
      return { qp: new QueuePair(link), welcome };
    } catch {
      return undefined;
    }
  };
  const conns = await Promise.all(nodes.map((_, i) => one(i)));
  return new RsClient(conns, { clock, reconnect: one, ...options.client });
}

/** One RsClient over the rs connections of a connected Cluster (no reconnection: the Cluster owns the links). */
export function rsClientOfCluster(cluster: Cluster, options: Partial<RsClientOptions> = {}): RsClient {
  const conns = cluster.connections.flatMap((c) => (c.client === 'queue-pair' && c.app === rsApp.name ? [{ qp: c.qp, welcome: c.welcome }] : []));
  if (conns.length === 0) throw new PmrpcError(RsErrorCodes.NO_MAJORITY, 'the cluster has no rs connection');
  return new RsClient(conns, options);
}
