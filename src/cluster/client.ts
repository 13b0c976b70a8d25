/**
 * `Cluster.connect`: one connection per node of a cluster, each speaking its app's handshake — a
 * RemoteRpcClient to an rpc node, a PRISM-KV (or Pilaf) client to a kv node. `connectPeer` is the
 * raw node-to-node link (a TcpLink with the same auth, the app's hello and welcome as bytes): what a
 * node uses to reach another (PRISM-TX's resolver will).
 */
import { PmrpcError, resolveOptions, systemClock, type Clock, defineErrorCodes, type ErrorCodesOf } from '../../pmem/index.js';
import { QueuePair } from '../../flush/index.js';
import { TcpLink } from '../transport/index.js';
import { connectKvClient, type KvClientOptions, type PilafClient, type PrismKvClient } from '../apps/kv/index.js';
import { RemoteRpcClient } from '../server/index.js';
import { nodeAppFlags } from '../node/index.js';
import { clusterNode, toClusterSpec, type ClusterNodeSpec, type ClusterSpec } from './spec.js';

export const ClusterClientErrorCodes = defineErrorCodes('cluster', {
  /** A node could not be reached (connect or handshake failed); the message names it. */
  NODE_UNREACHABLE: 'PMRPC_ERR_NODE_UNREACHABLE',
});

declare module '../../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof ClusterClientErrorCodes> {}
}

export interface ClusterConnectOptions {
  /** The token every node requires (resolveAuthToken(): a file or PMRPC_AUTH_TOKEN). */
  authToken: string | undefined;
  /** Connect only to these node ids (default: all). */
  nodes: readonly string[] | undefined;
  /** The client's name in the nodes' logs. */
  name: string;
  /** Options of the PRISM-KV clients. */
  kv: Partial<KvClientOptions>;
  clock: Clock;
}

export const CLUSTER_CONNECT_DEFAULTS: Readonly<ClusterConnectOptions> = Object.freeze({
  authToken: undefined,
  nodes: undefined,
  name: 'pmrpc-cluster',
  kv: Object.freeze({}),
  clock: systemClock,
});

/**
 * One node's connection, of the kind its app's record names (NodeAppFlags.connect: `client`).
 * The app names in this type are what callers narrow on (a kv node's app gives its kv client).
 */
export type NodeConnection =
  | { id: string; app: 'rpc'; client: 'rpc-client'; node: ClusterNodeSpec; rpc: RemoteRpcClient }
  | { id: string; app: 'kv'; client: 'kv-client'; node: ClusterNodeSpec; kv: PrismKvClient | PilafClient }
  /** An rs replica: the raw queue pair and welcome (src/apps/rs RsClient.fromCluster builds one client over all of them). */
  | { id: string; app: 'rs'; client: 'queue-pair'; node: ClusterNodeSpec; qp: QueuePair; welcome: Uint8Array };

/** A raw link to one node (node to node, or a client of an app this module does not wrap). */
export async function connectPeer(node: ClusterNodeSpec, options: { authToken?: string | undefined; hello?: Uint8Array; name?: string; clock?: Clock } = {}): Promise<{ link: TcpLink; welcome: Uint8Array }> {
  try {
    return await TcpLink.connect({ host: node.host, port: node.port, authToken: options.authToken, hello: options.hello ?? new Uint8Array(0), name: options.name ?? 'pmrpc-peer', clock: options.clock ?? systemClock });
  } catch (e) {
    throw new PmrpcError(ClusterClientErrorCodes.NODE_UNREACHABLE, `node ${node.id} (${node.app} at ${node.host}:${node.port}): ${(e as Error).message}`, { cause: e });
  }
}

/** Connects to one node with the client its app's record names (NodeAppFlags.connect). */
async function connectOne(node: ClusterNodeSpec, o: ClusterConnectOptions): Promise<NodeConnection> {
  const name = `${o.name}@${node.id}`;
  const { id, app } = node;
  switch (nodeAppFlags(app).connect) {
    case 'rpc-client':
      try {
        return { id, app, client: 'rpc-client', node, rpc: await RemoteRpcClient.connect({ host: node.host, port: node.port, authToken: o.authToken, name, clock: o.clock }) } as NodeConnection;
      } catch (e) {
        throw new PmrpcError(ClusterClientErrorCodes.NODE_UNREACHABLE, `node ${id} (${app} at ${node.host}:${node.port}): ${(e as Error).message}`, { cause: e });
      }
    case 'kv-client': {
      const { link, welcome } = await connectPeer(node, { authToken: o.authToken, name, clock: o.clock });
      try {
        return { id, app, client: 'kv-client', node, kv: await connectKvClient(new QueuePair(link), welcome, o.kv) } as NodeConnection;
      } catch (e) {
        link.close();
        throw e;
      }
    }
    case 'queue-pair': {
      const { link, welcome } = await connectPeer(node, { authToken: o.authToken, name, clock: o.clock });
      return { id, app, client: 'queue-pair', node, qp: new QueuePair(link), welcome } as NodeConnection;
    }
    default:
      throw new TypeError(`no client for app ${app}`);
  }
}

export class Cluster {
  readonly spec: ClusterSpec;
  #conns: Map<string, NodeConnection>;
  #closed = false;

  private constructor(spec: ClusterSpec, conns: NodeConnection[]) {
    this.spec = spec;
    this.#conns = new Map(conns.map((c) => [c.id, c]));
  }

  /** Connects to every node (or options.nodes) of a cluster file or spec; all or nothing. */
  static async connect(fileOrSpec: string | ClusterSpec | Record<string, unknown>, options: Partial<ClusterConnectOptions> = {}): Promise<Cluster> {
    // authToken, name and clock are checked by TcpLink.connect, kv by the KV client, the ids in nodes by clusterNode.
    const o = resolveOptions(CLUSTER_CONNECT_DEFAULTS, options, {});
    const spec = toClusterSpec(fileOrSpec);
    const nodes = o.nodes === undefined ? spec.nodes : o.nodes.map((id) => clusterNode(spec, id));
    const settled = await Promise.allSettled(nodes.map((n) => connectOne(n, o)));
    const ok = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const bad = settled.flatMap((s) => (s.status === 'rejected' ? [s.reason as Error] : []));
    if (bad.length > 0) {
      await Promise.all(ok.map((c) => closeConnection(c)));
      throw bad[0]!;
    }
    return new Cluster(spec, ok);
  }

  /** The connection to node `id`. */
  node(id: string): NodeConnection {
    const c = this.#conns.get(id);
    if (c === undefined) clusterNode(this.spec, id); // throws PMRPC_ERR_CLUSTER_UNKNOWN_NODE for a stranger
    if (c === undefined) throw new TypeError(`node ${id} was not connected (options.nodes)`);
    return c;
  }

  get connections(): NodeConnection[] {
    return [...this.#conns.values()];
  }

  /** Closes every connection; an rpc node's client says goodbye first (its slot is released). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all([...this.#conns.values()].map((c) => closeConnection(c)));
  }
}

async function closeConnection(c: NodeConnection): Promise<void> {
  if (c.client === 'rpc-client') await c.rpc.close();
  else if (c.client === 'queue-pair') c.qp.close();
  else c.kv.qp.close();
}
