/**
 * N rslock replicas in this process, each on its own in-memory region, NIC and in-process fabric:
 * what the tests and `pmrpc bench rs` run the baseline on (over TCP, each replica is a node host:
 * `pmrpc serve --app rslock`, and a client connects one TcpLink per replica).
 */
import { createPrng, PmemRegion, seededEntropy, systemClock, type Clock } from '../../../pmem/index.js';
import { InProcessFabric, QueuePair, Rnic, type FabricOptions, type RnicOptions } from '../../../flush/index.js';
import { rslockApp, type RsLockAppOptions } from './app.js';
import type { RsLockAppServer } from './server.js';
import { RsLockClient, type RsLockClientOptions } from './client.js';

export interface LocalRsLock {
  readonly replicas: readonly RsLockAppServer[];
  readonly regions: readonly PmemRegion[];
  readonly nics: readonly Rnic[];
  /** A new client with one QP per replica. */
  client(options?: Partial<RsLockClientOptions>): RsLockClient;
  close(): void;
}

export function startLocalRsLock(n: number, options: { app?: Partial<RsLockAppOptions>; nic?: Partial<RnicOptions>; fabric?: Partial<FabricOptions>; seed?: number; clock?: Clock } = {}): LocalRsLock {
  if (!Number.isSafeInteger(n) || n < 1 || n > 15) throw new RangeError(`replicas must be an integer in [1, 15], got ${String(n)}`);
  const o = rslockApp.resolveOptions(options.app ?? {});
  const seed = options.seed ?? 1;
  const regions: PmemRegion[] = [];
  const nics: Rnic[] = [];
  const replicas: RsLockAppServer[] = [];
  const fabrics: InProcessFabric[] = [];
  for (let i = 0; i < n; i++) {
    const region = PmemRegion.createInMemory(rslockApp.minRegionBytes(o), { entropy: seededEntropy(createPrng(seed * 97 + i)) });
    rslockApp.format(region, o);
    const nic = new Rnic(region, { ...options.nic, entropy: seededEntropy(createPrng(seed * 89 + i)) });
    const server = rslockApp.open({ region, nic, clock: options.clock ?? systemClock, schedule: queueMicrotask, entropy: seededEntropy(createPrng(seed * 83 + i)) }, o);
    server.recover();
    regions.push(region);
    nics.push(nic);
    replicas.push(server);
    fabrics.push(new InProcessFabric(nic, { ...options.fabric, ...(options.fabric?.delivery === 'seeded' ? { seed: seed * 79 + i } : {}) }));
  }
  let clients = 0;
  return {
    replicas,
    regions,
    nics,
    client(co: Partial<RsLockClientOptions> = {}): RsLockClient {
      const c = clients++;
      const links = replicas.map((r, i) => {
        const { qp, welcome } = r.accept(new Uint8Array(0));
        return { qp: new QueuePair(fabrics[i]!.connect(qp)), welcome };
      });
      return RsLockClient.connect(links, { prng: createPrng(seed * 1009 + c), clock: options.clock ?? systemClock, ...co });
    },
    close(): void {
      for (const r of replicas) r.close();
      for (const nic of nics) nic.close();
    },
  };
}
