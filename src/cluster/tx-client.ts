/**
 * `connectTxCluster`: a PRISM-TX client over TCP (docs/tx.md "A client over TCP") — a TxClient on
 * a `txShardSource` (one reconnecting link per shard), with its incarnation allocated from what
 * the shards hold (TxClient.nextIncarnation) unless the caller gives one.
 */
import { PmrpcError, resolveOptions, systemClock, intIn, optional, must, nonEmptyString, positiveMs, type Clock, type OptionChecks } from '../../pmem/index.js';
import { TxClient, TxErrorCodes, txApp, type TxFaults } from '../apps/tx/index.js';
import { txShards, txShardSource, type TxShardSource } from './tx.js';
import { toClusterSpec, type ClusterNodeSpec, type ClusterSpec } from './spec.js';

export interface TxClusterOptions {
  /** This client's record slot on every shard (0 ≤ client < the shards' client slots): one process per slot at a time. */
  client: number;
  /** The slot's incarnation; undefined: the next one, read from the shards at connect (recommended). */
  incarnation: number | undefined;
  /** The token every node requires (resolveAuthToken(): a file or PMRPC_AUTH_TOKEN). */
  authToken: string | undefined;
  /** The client's name in the nodes' logs. */
  name: string;
  /** How long connectTxCluster waits for every shard to answer (PMRPC_ERR_TX_SHARD_UNAVAILABLE after). */
  connectTimeoutMs: number;
  clock: Clock;
  faults: Partial<TxFaults>;
}

export const TX_CLUSTER_DEFAULTS: Readonly<Omit<TxClusterOptions, 'client'>> = Object.freeze({
  incarnation: undefined,
  authToken: undefined,
  name: 'pmrpc-tx',
  connectTimeoutMs: 10_000,
  clock: systemClock,
  faults: Object.freeze({}),
});

const CHECKS: OptionChecks<TxClusterOptions> = {
  client: intIn(0, 255),
  incarnation: optional(intIn(0, 0xffff)),
  name: nonEmptyString,
  connectTimeoutMs: positiveMs,
  clock: must((v) => v !== null && typeof v === 'object' && typeof (v as Clock).setTimer === 'function', 'must be a Clock'),
};

/** A TxClient whose shards are reached over TCP; close() closes its links. */
export class TxClusterClient extends TxClient {
  readonly #links: TxShardSource;

  /** @internal use connectTxCluster() */
  constructor(links: TxShardSource, options: ConstructorParameters<typeof TxClient>[1]) {
    super(links.source, options);
    this.#links = links;
  }

  /** Closes every shard link (an open transaction is dropped: nothing of it was prepared). */
  close(): void {
    this.rollback();
    this.#links.close();
  }
}

/** The shards: a cluster file (its tx nodes in file order), a spec, or their addresses in shard order. */
export type TxShards = string | ClusterSpec | Record<string, unknown> | ReadonlyArray<{ host: string; port: number }>;

/**
 * Connects a PRISM-TX client to every shard: waits (bounded) until each answers, allocates the
 * client slot's next incarnation (unless options.incarnation), and returns the client.
 * PMRPC_ERR_TX_SHARD_UNAVAILABLE when a shard stays down.
 */
export async function connectTxCluster(shards: TxShards, options: Partial<TxClusterOptions> & Pick<TxClusterOptions, 'client'>): Promise<TxClusterClient> {
  const o = resolveOptions(TX_CLUSTER_DEFAULTS as Readonly<TxClusterOptions>, options, CHECKS);
  const spec = Array.isArray(shards) ? addressesSpec(shards as ReadonlyArray<{ host: string; port: number }>) : toClusterSpec(shards as string | ClusterSpec | Record<string, unknown>);
  const nodes = txShards(spec);
  const links = txShardSource(spec, { authToken: o.authToken, name: `${o.name}#${o.client}`, clock: o.clock });
  try {
    // Every shard up first (the links dial in the background), within connectTimeoutMs of the clock.
    const t0 = o.clock.nowMs();
    for (;;) {
      const down = nodes.findIndex((_, s) => links.source(s) === undefined);
      if (down < 0) break;
      if (o.clock.nowMs() - t0 >= o.connectTimeoutMs) throw new PmrpcError(TxErrorCodes.SHARD_UNAVAILABLE, `shard ${down} (node ${nodes[down]!.id} at ${nodes[down]!.host}:${nodes[down]!.port}) did not answer within ${o.connectTimeoutMs} ms`);
      await new Promise<void>((resolve) => o.clock.setTimer(5, resolve));
    }
    const incarnation = o.incarnation ?? (await TxClient.nextIncarnation(links.source, o.client, o.clock));
    return new TxClusterClient(links, { client: o.client, incarnation, clock: o.clock, faults: o.faults });
  } catch (e) {
    links.close();
    throw e;
  }
}

function addressesSpec(nodes: ReadonlyArray<{ host: string; port: number }>): ClusterSpec {
  if (nodes.length === 0) throw new PmrpcError(TxErrorCodes.SHARD_UNAVAILABLE, 'no shard address given');
  const spec: ClusterNodeSpec[] = nodes.map((n, i) => {
    if (n === null || typeof n !== 'object' || typeof n.host !== 'string' || !Number.isInteger(n.port)) throw new TypeError(`shard ${i} must be { host, port }`);
    return { id: `shard${i}`, app: txApp.name, host: n.host, port: n.port, pm: '', options: {} };
  });
  return { version: 1, name: 'tx-shards', nodes: spec, file: undefined } as ClusterSpec;
}
