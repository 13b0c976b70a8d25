// Shared setup of the flush/ tests: a traced in-memory region, its NIC, one PD, MRs and a client QP.
import { createPrng, PmemRegion, seededEntropy, type PmemOptions } from '../../pmem/index.js';
import { Access, InProcessFabric, QueuePair, Rnic, type FabricOptions, type MemoryRegion, type RnicOptions, type ServerQp } from '../../flush/index.js';

export interface Setup {
  region: PmemRegion;
  nic: Rnic;
  fabric: InProcessFabric;
  mr: MemoryRegion;
  sqp: ServerQp;
  qp: QueuePair;
  connect(): { sqp: ServerQp; qp: QueuePair };
}

export const REGION_BYTES = 1 << 16;

/** Region with one MR over its first half (all access by default). */
export function setup(opts: { nic?: Partial<RnicOptions>; fabric?: Partial<FabricOptions>; pmem?: Partial<PmemOptions>; access?: number; seed?: number } = {}): Setup {
  const seed = opts.seed ?? 1;
  const region = PmemRegion.createInMemory(REGION_BYTES, { tracing: true, entropy: seededEntropy(createPrng(seed)), ...opts.pmem });
  const nic = new Rnic(region, { entropy: seededEntropy(createPrng(seed + 1)), ...opts.nic });
  const fabric = new InProcessFabric(nic, opts.fabric);
  const pd = nic.allocPd();
  const mr = nic.registerMr(pd, 0, REGION_BYTES / 2, opts.access ?? Access.ALL);
  const connect = (): { sqp: ServerQp; qp: QueuePair } => {
    const sqp = nic.createQp(pd);
    return { sqp, qp: new QueuePair(fabric.connect(sqp)) };
  };
  const { sqp, qp } = connect();
  return { region, nic, fabric, mr, sqp, qp, connect };
}

export const bytes = (...xs: number[]): Uint8Array => Uint8Array.from(xs);
export const fill = (n: number, v: number): Uint8Array => new Uint8Array(n).fill(v);
