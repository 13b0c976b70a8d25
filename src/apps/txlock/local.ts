/**
 * S shards of a transaction app in this process (PRISM-TX, or a baseline), each on its own
 * in-memory region, NIC and in-process fabric: what the baselines' tests and `pmrpc bench tx`
 * run on. Over TCP each shard is a node host (`pmrpc serve --app tx|txfarm|txford`).
 */
import { createPrng, PmemRegion, seededEntropy, systemClock, type Clock } from '../../../pmem/index.js';
import { InProcessFabric, QueuePair, Rnic, type FabricOptions, type RnicOptions } from '../../../flush/index.js';
import type { App, AppServer } from '../index.js';

export interface LocalShards<S extends AppServer> {
  readonly servers: readonly S[];
  readonly regions: readonly PmemRegion[];
  readonly nics: readonly Rnic[];
  /** A new connection to shard s: its QP and the welcome. */
  connect(shard: number): { qp: QueuePair; welcome: Uint8Array };
  close(): void;
}

/** `options(s)` are shard s's app options (they must name shard s of `shards`). */
export function startLocalShards<O extends object, S extends AppServer>(
  app: App<O>,
  shards: number,
  options: (shard: number) => Partial<O>,
  o: { nic?: Partial<RnicOptions>; fabric?: Partial<FabricOptions>; seed?: number; clock?: Clock } = {},
): LocalShards<S> {
  if (!Number.isSafeInteger(shards) || shards < 1 || shards > 32) throw new RangeError(`shards must be an integer in [1, 32], got ${String(shards)}`);
  const seed = o.seed ?? 1;
  const regions: PmemRegion[] = [];
  const nics: Rnic[] = [];
  const servers: S[] = [];
  const fabrics: InProcessFabric[] = [];
  for (let i = 0; i < shards; i++) {
    const ao = app.resolveOptions(options(i));
    const region = PmemRegion.createInMemory(Math.ceil(app.minRegionBytes(ao) / 4096) * 4096 + 4096, { entropy: seededEntropy(createPrng(seed * 97 + i)) });
    app.format(region, ao);
    const nic = new Rnic(region, { ...o.nic, entropy: seededEntropy(createPrng(seed * 89 + i)) });
    const server = app.open({ region, nic, clock: o.clock ?? systemClock, schedule: queueMicrotask, entropy: seededEntropy(createPrng(seed * 83 + i)) }, ao) as S;
    server.recover();
    regions.push(region);
    nics.push(nic);
    servers.push(server);
    fabrics.push(new InProcessFabric(nic, { ...o.fabric, ...(o.fabric?.delivery === 'seeded' ? { seed: seed * 79 + i } : {}) }));
  }
  return {
    servers,
    regions,
    nics,
    connect(shard: number) {
      const { qp, welcome } = servers[shard]!.accept(new Uint8Array(0));
      return { qp: new QueuePair(fabrics[shard]!.connect(qp)), welcome };
    },
    close(): void {
      for (const s of servers) s.close();
      for (const nic of nics) nic.close();
    },
  };
}
