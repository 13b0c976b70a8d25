// Shared setup of the KV tests: a traced in-memory region with a KV area, its NIC, fabric and server.
import { createPrng, PmemRegion, seededEntropy, type PmemOptions } from '../../../pmem/index.js';
import { InProcessFabric, QueuePair, Rnic, type FabricOptions, type RnicOptions } from '../../../flush/index.js';
import { PrismKvClient, PrismKvServer, type KvClientOptions, type KvLayoutOptions, type KvServerOptions } from '../../../src/apps/kv/index.js';

export const SMALL_LAYOUT: Partial<KvLayoutOptions> = {
  slotCount: 64,
  probeSlots: 4,
  keyBytesMax: 32,
  classes: [
    { sizeBytes: 64, count: 64 },
    { sizeBytes: 128, count: 32 },
    { sizeBytes: 256, count: 16 },
  ],
  mailboxBuffers: 16,
};

export interface KvSetup {
  region: PmemRegion;
  nic: Rnic;
  fabric: InProcessFabric;
  server: PrismKvServer;
  client(options?: Partial<KvClientOptions>): Promise<PrismKvClient>;
}

export async function kvSetup(opts: { layout?: Partial<KvLayoutOptions>; nic?: Partial<RnicOptions>; fabric?: Partial<FabricOptions>; pmem?: Partial<PmemOptions>; server?: Partial<KvServerOptions>; seed?: number; regionBytes?: number } = {}): Promise<KvSetup> {
  const seed = opts.seed ?? 1;
  const region = PmemRegion.createInMemory(opts.regionBytes ?? 1 << 16, { tracing: true, entropy: seededEntropy(createPrng(seed)), ...opts.pmem });
  PrismKvServer.format(region, opts.layout ?? SMALL_LAYOUT);
  const nic = new Rnic(region, { drain: 'eager', entropy: seededEntropy(createPrng(seed + 1)), ...opts.nic });
  const fabric = new InProcessFabric(nic, opts.fabric);
  const server = PrismKvServer.open(region, nic, opts.server);
  const client = async (options: Partial<KvClientOptions> = {}): Promise<PrismKvClient> => {
    const sqp = server.accept();
    return PrismKvClient.connect(new QueuePair(fabric.connect(sqp)), server.address, options);
  };
  return { region, nic, fabric, server, client };
}

export const te = new TextEncoder();
export const td = new TextDecoder();
