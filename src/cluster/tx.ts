/**
 * PRISM-TX over TCP (docs/tx.md): the shards of a cluster are its tx nodes in file order (shard
 * i = the i-th tx node). `txShardSource` is how a client, or a shard's resolver agent, reaches
 * them: one node-to-node link per shard (`connectPeer`), reconnected in the background after the
 * node restarts (undefined while it is down — TxClient and TxResolver wait, bounded).
 * `startTxShardAgent` is what a tx node runs beside its clients (`pmrpc serve --cluster FILE`):
 * at start it resolves every transaction in doubt that this shard participates in (a restarted
 * shard), then one TxAgent pass per lease (a transaction whose client did not finish it).
 */
import { createServer } from 'node:net';
import { PmrpcError, systemClock, type Clock } from '../../pmem/index.js';
import { QueuePair } from '../../flush/index.js';
import { parseTxWelcome, TxAgent, TxErrorCodes, type ShardConn, type ShardSource, type TxFaults } from '../apps/tx/index.js';
import { nodeAppFlags } from '../node/index.js';
import { connectPeer } from './client.js';
import { clusterNode, toClusterSpec, type ClusterNodeSpec, type ClusterSpec } from './spec.js';

/** The tx nodes of a cluster (those whose app's record says clusterShard), in shard order. */
export function txShards(spec: ClusterSpec): ClusterNodeSpec[] {
  const nodes = spec.nodes.filter((n) => nodeAppFlags(n.app).clusterShard);
  if (nodes.length === 0) throw new PmrpcError(TxErrorCodes.SHARD_UNAVAILABLE, 'the cluster lists no tx node');
  return nodes;
}

/** The app options of tx node `id` of a cluster: its shard index and the shard count from the file, the rest from its node options. */
export function txNodeAppOptions(fileOrSpec: string | ClusterSpec | Record<string, unknown>, id: string): Record<string, unknown> {
  const spec = toClusterSpec(fileOrSpec);
  const node = clusterNode(spec, id);
  const shards = txShards(spec);
  // The rest from the node options, as the app's record reads them.
  return { shard: shards.findIndex((n) => n.id === id), shards: shards.length, ...(nodeAppFlags(node.app).clusterOptions?.(node.options as Record<string, unknown>) ?? {}) };
}

export interface TxShardSource {
  source: ShardSource;
  /** Closes every link; the source answers undefined afterwards. */
  close(): void;
}

/** One reconnecting link per tx node (see the file comment). */
export function txShardSource(fileOrSpec: string | ClusterSpec | Record<string, unknown>, options: { authToken?: string | undefined; name?: string; clock?: Clock } = {}): TxShardSource {
  const nodes = txShards(toClusterSpec(fileOrSpec));
  const clock = options.clock ?? systemClock;
  const conns: Array<ShardConn | undefined> = nodes.map(() => undefined);
  const pending: boolean[] = nodes.map(() => false);
  let closed = false;
  const dial = (s: number): void => {
    if (pending[s] || closed) return;
    pending[s] = true;
    void connectPeer(nodes[s]!, { authToken: options.authToken, name: `${options.name ?? 'pmrpc-tx'}@${nodes[s]!.id}`, clock })
      .then(({ link, welcome }) => {
        const qp = new QueuePair(link);
        if (closed) {
          qp.close();
          return;
        }
        try {
          conns[s] = parseTxWelcome(qp, welcome);
        } catch {
          qp.close();
        }
      })
      .catch(() => undefined)
      .finally(() => (pending[s] = false));
  };
  nodes.forEach((_, s) => dial(s));
  return {
    source: (s: number) => {
      if (closed || !Number.isInteger(s) || s < 0 || s >= nodes.length) return undefined;
      const c = conns[s];
      if (c !== undefined && c.qp.link.closed !== true) return c;
      conns[s] = undefined;
      dial(s);
      return undefined;
    },
    close(): void {
      closed = true;
      for (const c of conns) c?.qp.close();
    },
  };
}

export interface TxShardAgentOptions {
  authToken: string | undefined;
  clock: Clock;
  /** One agent pass per lease: a transaction in doubt in two passes in a row is resolved. */
  leaseMs: number;
  faults: Partial<TxFaults>;
  /** Progress lines (resolutions), e.g. to the node's log. */
  log: ((line: string) => void) | undefined;
}

export interface TxShardAgent {
  readonly agent: TxAgent;
  stop(): Promise<void>;
}

/** Runs the resolver agent of tx node `id` (see the file comment) until stop(). */
export function startTxShardAgent(fileOrSpec: string | ClusterSpec | Record<string, unknown>, id: string, options: Partial<TxShardAgentOptions> = {}): TxShardAgent {
  const spec = toClusterSpec(fileOrSpec);
  const shard = txShards(spec).findIndex((n) => n.id === id);
  if (shard < 0) throw new PmrpcError(TxErrorCodes.SHARD_UNAVAILABLE, `node ${id} is not a tx node of the cluster`);
  const clock = options.clock ?? systemClock;
  const leaseMs = options.leaseMs ?? 500;
  if (!Number.isSafeInteger(leaseMs) || leaseMs < 1) throw new RangeError(`leaseMs must be a positive integer, got ${String(leaseMs)}`);
  const links = txShardSource(spec, { authToken: options.authToken, name: `tx-agent-${id}`, clock });
  const agent = new TxAgent(links.source, { clock, faults: options.faults, shard });
  let stopped = false;
  let wake: (() => void) | undefined;
  const nap = (ms: number): Promise<void> =>
    new Promise((r) => {
      const t = clock.setTimer(ms, () => {
        wake = undefined;
        r();
      });
      wake = () => {
        t.cancel();
        r();
      };
    });
  const loop = (async () => {
    // A restart: what this shard's crash left in doubt is resolved now (every link up first, bounded).
    for (let i = 0; i < 100 && !stopped && txShards(spec).some((_, s) => links.source(s) === undefined); i++) await nap(20);
    let first = true;
    while (!stopped) {
      try {
        const before = agent.stats.resolved;
        if (first) {
          const r = await agent.resolveAll(8);
          first = r.left.length > 0;
        } else await agent.pass();
        if (agent.stats.resolved > before) options.log?.(`tx agent ${id}: resolved ${agent.stats.resolved - before} (committed ${agent.stats.committed}, aborted ${agent.stats.aborted}, finished ${agent.stats.finished} so far)`);
      } catch (e) {
        options.log?.(`tx agent ${id}: ${(e as Error).message}`);
      }
      if (!stopped) await nap(leaseMs);
    }
  })();
  return {
    agent,
    async stop(): Promise<void> {
      stopped = true;
      wake?.();
      links.close();
      await loop;
    },
  };
}

/** `n` ports free on 127.0.0.1 right now (held together, then released): a cluster file for a local run. */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: n }, () => new Promise<ReturnType<typeof createServer>>((res, rej) => {
      const s = createServer();
      s.once('error', rej);
      s.listen(0, '127.0.0.1', () => res(s));
    })),
  );
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}
