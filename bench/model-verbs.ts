/**
 * Verb-level modelled runs: one node whose app only registers its region (remote read / write /
 * atomic / flush) and opens QPs, and a client posting chains of work requests — the smallest
 * scenario whose modelled time can be checked by hand against the cost model (tests), and the
 * calibration rows of `pmrpc reproduce` (plain WRITE, WRITE + READ).
 */
import { Access, Wr, type WorkRequest } from '../flush/index.js';
import type { AppServer } from '../src/apps/index.js';
import type { CostModel, VirtualTimeStats, World } from '../src/testing/index.js';
import { modelRegion, modelWorld } from './model-world.js';

export const VERBS_REGION_BYTES = 1 << 20;

/** Adds a node whose app registers the whole region (every access) and accepts any client; returns its rkey. */
export function addMemoryNode(world: World, seed: number, bytes = VERBS_REGION_BYTES): number {
  let rkey = 0;
  world.addNode(modelRegion(bytes, seed), (host): AppServer => {
    const pd = host.nic.allocPd();
    rkey = host.nic.registerMr(pd, 0, bytes, Access.ALL).rkey;
    return { app: 'memory', recover: () => ({ app: 'memory' }), accept: () => ({ qp: host.nic.createQp(pd), welcome: new Uint8Array(0) }), inspect: () => ({}), audit: () => [], close: () => undefined };
  });
  return rkey;
}

/** The modelled round trip (µs) of each chain, posted one after another by one client (each its own doorbell). */
export async function modelChains(model: Readonly<CostModel>, seed: number, ddio: boolean, chains: (rkey: number) => WorkRequest[][], qps = 1): Promise<{ us: number[][]; time: VirtualTimeStats | undefined }> {
  const world = modelWorld(model, seed, ddio);
  const rkey = addMemoryNode(world, seed);
  const us: number[][] = [];
  const runs = Array.from({ length: qps }, async (_, q) => {
    const { qp } = world.connect(0, new Uint8Array(0), q);
    const mine: number[] = [];
    us.push(mine);
    for (const chain of chains(rkey)) {
      const t0 = world.nowUs;
      await qp.postChain(chain);
      mine.push(world.nowUs - t0);
    }
  });
  const r = await world.settle(Promise.all(runs), 1_000_000);
  if (r.failed) throw r.error instanceof Error ? r.error : new Error(String(r.error));
  const time = world.timeStats();
  world.close();
  return { us, time };
}

/** Chains of the calibration rows: a 64 B WRITE; a 64 B WRITE + 1-byte READ of its last byte (read-after-write, pmem-bench). */
export const CALIBRATION_CHAINS = {
  write: (rkey: number): WorkRequest[][] => [[Wr.write({ rkey, addr: 4096 }, new Uint8Array(64))]],
  writeRead: (rkey: number): WorkRequest[][] => [[Wr.write({ rkey, addr: 4096 }, new Uint8Array(64)), Wr.read({ rkey, addr: 4096 + 63 }, 1)]],
  writeFlush: (rkey: number): WorkRequest[][] => [[Wr.write({ rkey, addr: 4096 }, new Uint8Array(64)), Wr.flush('persistent', rkey, { addr: 4096, len: 64 })]],
  read: (rkey: number): WorkRequest[][] => [[Wr.read({ rkey, addr: 4096 }, 64)]],
};
