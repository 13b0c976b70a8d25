/**
 * Modelled app cells: PRISM-KV vs Pilaf-style and PRISM-RS vs lock-based, the real servers and
 * clients (src/apps/kv, src/apps/rs, src/apps/rslock) on a World in modelled time. Closed-loop
 * clients, one operation at a time each; latencies in modelled µs, throughput in operations per
 * modelled second. Nothing here is wall clock.
 */
import { createPrng } from '../pmem/index.js';
import { connectKvClient, kvApp } from '../src/apps/kv/index.js';
import { RsClient, rsApp } from '../src/apps/rs/index.js';
import { RsLockClient, rslockApp } from '../src/apps/rslock/index.js';
import type { CostModel, VirtualTimeStats, World } from '../src/testing/index.js';
import { latencyStats, mean, modelRegion, modelWorld, perSecond, r3 } from './model-world.js';
import { prismRsBenchLayout } from './rs-systems.js';
import { KV_BENCH_LAYOUT, KV_BENCH_REGION_BYTES } from './kv-common.js';

export interface ModelOpsResult {
  opsPerSecond: number;
  meanUs: number;
  p50Us: number;
  p99Us: number;
  /** Mean latency of the reads / GETs alone, and of the writes / PUTs alone (NaN: none). */
  readMeanUs: number;
  writeMeanUs: number;
  ops: number;
  time: VirtualTimeStats | undefined;
}

interface Store {
  read(key: number): Promise<unknown>;
  write(key: number, value: Uint8Array): Promise<void>;
}

/** Loads every key (not timed), then runs `clients` closed loops of `opsPerClient` operations; the first fifth of each is warm-up. */
async function closedLoop(world: World, stores: Store[], o: { keys: number; valueBytes: number; readPct: number; opsPerClient: number; seed: number; load: boolean }): Promise<ModelOpsResult> {
  const value = new Uint8Array(o.valueBytes).fill(5);
  const drive = async (p: Promise<unknown>, what: string): Promise<void> => {
    const r = await world.settle(p, 50_000_000);
    if (r.failed) throw r.error instanceof Error ? r.error : new Error(String(r.error));
    if (r.status !== 'done') throw new Error(`modelled ${what} did not finish (${r.status})`);
  };
  if (o.load) await drive((async () => {
    for (let k = 0; k < o.keys; k++) await stores[0]!.write(k, value);
  })(), 'load');
  const all: number[] = [];
  const reads: number[] = [];
  const writes: number[] = [];
  const warm = Math.floor(o.opsPerClient / 5);
  let tWarm = Number.NaN;
  let counted = 0;
  await drive(Promise.all(stores.map(async (s, c) => {
    const prng = createPrng(o.seed * 31 + c);
    for (let i = 0; i < o.opsPerClient; i++) {
      const key = prng.int(0, o.keys - 1);
      const isRead = prng.int(0, 99) < o.readPct;
      if (i === warm && Number.isNaN(tWarm)) tWarm = world.nowUs;
      const t0 = world.nowUs;
      if (isRead) await s.read(key);
      else await s.write(key, value);
      if (i >= warm) {
        const dt = world.nowUs - t0;
        all.push(dt);
        (isRead ? reads : writes).push(dt);
        counted++;
      }
    }
  })), 'workload');
  return {
    opsPerSecond: perSecond(counted, world.nowUs - tWarm),
    ...latencyStats(all),
    readMeanUs: r3(mean(reads)),
    writeMeanUs: r3(mean(writes)),
    ops: all.length,
    time: world.timeStats(),
  };
}

export interface ModelKvCell {
  system: 'prism' | 'pilaf';
  clients: number;
  readPct: number;
  keys: number;
  valueBytes: number;
}

/** PRISM-KV or Pilaf on one node, `clients` closed loops. */
export async function modelKvCell(cell: ModelKvCell, model: Readonly<CostModel>, seed: number, opsPerClient: number): Promise<ModelOpsResult> {
  const world = modelWorld(model, seed, false);
  // The measured bench's layout and region (bench/kv-common.ts): the same cell, in modelled time.
  const opts = kvApp.resolveOptions({ system: cell.system, layout: KV_BENCH_LAYOUT });
  const region = modelRegion(Math.max(KV_BENCH_REGION_BYTES, Math.ceil(kvApp.minRegionBytes(opts) / 4096) * 4096), seed);
  kvApp.format(region, opts);
  world.addNode(region, (host) => kvApp.open(host, opts)).server!.recover();
  const stores: Store[] = [];
  for (let c = 0; c < cell.clients; c++) {
    const { qp, welcome } = world.connect(0, new Uint8Array(0), c);
    const p = connectKvClient(qp, welcome);
    let client: Awaited<typeof p> | undefined;
    const r = await world.settle(p.then((x) => void (client = x)), 1_000_000);
    if (r.failed || client === undefined) throw r.error instanceof Error ? r.error : new Error('kv client did not connect');
    const kc = client;
    stores.push({ read: (k) => kc.get(`k${k}`), write: (k, v) => kc.put(`k${k}`, v) });
  }
  try {
    return await closedLoop(world, stores, { keys: cell.keys, valueBytes: cell.valueBytes, readPct: cell.readPct, opsPerClient, seed, load: true });
  } finally {
    world.close();
  }
}

export interface ModelRsCell {
  /** 'lock-based': rslock style sigmod23; 'lock-paper': rslock style paper (lock → access → unlock). */
  system: 'prism-rs' | 'lock-based' | 'lock-paper';
  nodes: number;
  clients: number;
  readPct: number;
  blocks: number;
  blockBytes: number;
}

/** PRISM-RS or the lock-based baseline on `nodes` replicas, `clients` closed loops. */
export async function modelRsCell(cell: ModelRsCell, model: Readonly<CostModel>, seed: number, opsPerClient: number): Promise<ModelOpsResult> {
  const world = modelWorld(model, seed, false);
  const stores: Store[] = [];
  if (cell.system === 'prism-rs') {
    const opts = rsApp.resolveOptions({ layout: prismRsBenchLayout(cell.blocks, cell.blockBytes) });
    for (let n = 0; n < cell.nodes; n++) {
      const region = modelRegion(Math.ceil(rsApp.minRegionBytes(opts) / 4096) * 4096, seed + n);
      rsApp.format(region, opts);
      world.addNode(region, (host) => rsApp.open(host, opts)).server!.recover();
    }
    for (let c = 0; c < cell.clients; c++) {
      const conns = world.nodes.map((_, n) => world.connect(n, new Uint8Array(0), c));
      const rc = new RsClient(conns, { writerId: c + 1, clock: world.clock });
      stores.push({ read: (k) => rc.read(k), write: (k, v) => rc.write(k, v) });
    }
  } else {
    const opts = rslockApp.resolveOptions({ blocks: cell.blocks, blockBytes: cell.blockBytes });
    for (let n = 0; n < cell.nodes; n++) {
      const region = modelRegion(Math.ceil(rslockApp.minRegionBytes(opts) / 4096) * 4096, seed + n);
      rslockApp.format(region, opts);
      world.addNode(region, (host) => rslockApp.open(host, opts)).server!.recover();
    }
    for (let c = 0; c < cell.clients; c++) {
      const links = world.nodes.map((_, n) => world.connect(n, new Uint8Array(0), c));
      const lc = RsLockClient.connect(links, { style: cell.system === 'lock-paper' ? 'paper' : 'sigmod23', prng: createPrng(seed * 1009 + c), clock: world.clock });
      stores.push({ read: (k) => lc.read(k), write: (k, v) => lc.write(k, v) });
    }
  }
  try {
    return await closedLoop(world, stores, { keys: cell.blocks, valueBytes: cell.blockBytes, readPct: cell.readPct, opsPerClient, seed, load: true });
  } finally {
    world.close();
  }
}
