/**
 * Modelled TX cells (issue 14): PRISM-TX, the FaRM-style and the FORD-style baselines — the real
 * servers and clients (src/apps/tx, src/apps/txlock, built by bench/tx-systems.ts' txSystemApp and
 * txClientApi, as `bench tx` runs them) — on S nodes of a World in modelled time. Closed loops, one
 * transaction at a time per client; an aborted transaction is not retried (the next one is drawn),
 * as in `bench tx`. Latency of committed transactions (begin → outcome) in modelled µs, committed
 * transactions per modelled second. Nothing here is wall clock.
 */
import { createPrng } from '../pmem/index.js';
import type { CostModel, VirtualTimeStats } from '../src/testing/index.js';
import { latencyStats, modelRegion, modelWorld, perSecond, r3 } from './model-world.js';
import { txClientApi, txSystemApp, type TxSystemName } from './tx-systems.js';
import { attempt, smallBank, ycsbT, type TxWorkload, type TxWorkloadName } from './tx-workloads.js';

export interface ModelTxCell {
  system: TxSystemName;
  workload: TxWorkloadName;
  shards: number;
  clients: number;
  /** YCSB-T keys, or SmallBank accounts × 2 (over all shards). */
  keys: number;
  /** DDIO on the shards' NICs (`bench tx` runs with DDIO on). */
  ddio: boolean;
}

export interface ModelTxResult {
  commitsPerSecond: number;
  meanUs: number;
  p50Us: number;
  p99Us: number;
  commits: number;
  aborts: number;
  abortRate: number;
  time: VirtualTimeStats | undefined;
}

export function txWorkloadFor(name: TxWorkloadName, keys: number): TxWorkload {
  return name === 'smallbank' ? smallBank(Math.max(2, Math.floor(keys / 2))) : ycsbT(name, keys);
}

/** One cell: `clients` closed loops of `txPerClient` transactions each; the first fifth of each loop is warm-up. */
export async function modelTxCell(cell: ModelTxCell, model: Readonly<CostModel>, seed: number, txPerClient: number): Promise<ModelTxResult> {
  const w = txWorkloadFor(cell.workload, cell.keys);
  const world = modelWorld(model, seed, cell.ddio);
  const keysPerShard = Math.ceil(w.keys / cell.shards);
  const { app, options } = txSystemApp(cell.system, { shards: cell.shards, keysPerShard, clients: cell.clients, value: w.value, initialBalance: w.initialBalance, items: keysPerShard + cell.clients * txPerClient * 4 + 64 });
  for (let s = 0; s < cell.shards; s++) {
    const opts = app.resolveOptions(options(s) as never);
    const region = modelRegion(Math.ceil(app.minRegionBytes(opts) / 4096) * 4096 + 4096, seed * 97 + s);
    app.format(region, opts);
    world.addNode(region, (host) => app.open(host, opts)).server!.recover();
  }
  const lat: number[] = [];
  let commits = 0;
  let aborts = 0;
  const warm = Math.floor(txPerClient / 5);
  let tWarm = Number.NaN;
  try {
    const run = Promise.all(
      Array.from({ length: cell.clients }, async (_, c) => {
        const api = txClientApi(cell.system, (s) => world.connect(s, new Uint8Array(0), c), c, { clock: world.clock });
        const prng = createPrng(seed * 31 + c);
        for (let i = 0; i < txPerClient; i++) {
          if (i === warm && Number.isNaN(tWarm)) tWarm = world.nowUs;
          const body = w.next(prng);
          const t0 = world.nowUs;
          const out = await attempt(api, body);
          if (out.status !== 'committed' && out.code !== 'PMRPC_ERR_TX_CONFLICT') throw new Error(`modelled ${cell.system}: transaction failed (${out.code ?? out.status})`);
          if (i < warm) continue;
          if (out.status === 'committed') {
            commits++;
            lat.push(world.nowUs - t0);
          } else aborts++;
        }
      }),
    );
    const r = await world.settle(run, 50_000_000);
    if (r.failed) throw r.error instanceof Error ? r.error : new Error(String(r.error));
    if (r.status !== 'done') throw new Error(`modelled tx cell ${cell.system} did not finish (${r.status})`);
    const s = latencyStats(lat);
    return {
      commitsPerSecond: perSecond(commits, world.nowUs - tWarm),
      ...s,
      commits,
      aborts,
      abortRate: r3(commits + aborts > 0 ? aborts / (commits + aborts) : 0),
      time: world.timeStats(),
    };
  } finally {
    world.close();
  }
}
