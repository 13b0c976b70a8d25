/**
 * Modelled flush cells: the durable RPC app (src/apps/rpc, the same server and client as the
 * measured cells) on a World in modelled time. Each client keeps `outstanding` requests in flight
 * and issues the next when one is acknowledged (durable for a decoupled strategy, the reply for a
 * coupled one); the handler (the digest workload) charges `handlerUs` of CPU — to a second core
 * ('worker') when the cell's placement is 'pool', as the measured cells run it in a piscina worker.
 * All figures are modelled µs / modelled seconds.
 */
import { DIGEST_HANDLERS, METHOD, decodeWelcomePayload, encodeHelloPayload, rpcApp, type RpcAppOptions } from '../src/apps/rpc/index.js';
import { DurableRpcClient, type RpcHandler, type RpcStrategy } from '../src/rpc/index.js';
import type { CostModel, VirtualTimeStats } from '../src/testing/index.js';
import { latencyStats, modelRegion, modelWorld, perSecond, r3 } from './model-world.js';

export interface ModelFlushCell {
  strategy: RpcStrategy;
  payloadBytes: number;
  clients: number;
  outstanding: number;
  /** Handler CPU per request, µs (0: the profile's cpuHandlerUs). */
  handlerUs: number;
  placement: 'inline' | 'pool';
  ddio: boolean;
  ringSlots: number;
  /**
   * The handler: 'digest' (the crash suites' workload: 16 B of effects) or 'copy' — an object PUT
   * that copies the payload into its target object in the application area (what SC'21's and
   * pRDMA's servers do with a request: copy + flush into the target). Default 'digest'.
   */
  handler?: 'digest' | 'copy';
}

export interface ModelFlushResult {
  /** Requests acknowledged and processed per modelled second (after the warm-up share). */
  throughputPerSecond: number;
  /** Acknowledgement latency (durable; the reply for coupled strategies), modelled µs. */
  durableMeanUs: number;
  durableP50Us: number;
  durableP99Us: number;
  /** Result latency (processed and answered), modelled µs. */
  resultMeanUs: number;
  resultP50Us: number;
  resultP99Us: number;
  requests: number;
  /** Modelled µs from the first call to the last result. */
  spanUs: number;
  time: VirtualTimeStats | undefined;
}

/** Bytes a ring slot needs for `payloadBytes` (entry header + commit word, rounded to lines). */
function slotBytesFor(payloadBytes: number): number {
  return Math.ceil((payloadBytes + 128) / 64) * 64;
}

export async function modelFlushCell(cell: ModelFlushCell, model: Readonly<CostModel>, seed: number, requestsPerClient: number): Promise<ModelFlushResult> {
  const world = modelWorld(model, seed, cell.ddio);
  const handlerNs = (cell.handlerUs > 0 ? cell.handlerUs : model.cpuHandlerUs) * 1000;
  const digest = DIGEST_HANDLERS[METHOD]!;
  const total = cell.clients * requestsPerClient;
  const copy = cell.handler === 'copy';
  const digestBytes = Math.ceil((64 + 16 * (total + 8)) / 64) * 64 + 64;
  const objects = 16;
  const objectBytes = Math.ceil(cell.payloadBytes / 64) * 64;
  const handler: RpcHandler = (req, view) => {
    world.charge(handlerNs, cell.placement === 'pool' ? 'worker' : 'cpu');
    const e = digest(req, view);
    // The object PUT: the payload becomes the after-image of its target object (one of `objects`, by sequence).
    if (copy) e.images.push({ offset: digestBytes + (req.seq % objects) * objectBytes, bytes: req.payload });
    return e;
  };
  const recordBytes = copy ? Math.ceil((cell.payloadBytes + 512) / 64) * 64 : 256;
  const layout: RpcAppOptions['layout'] = { maxClients: cell.clients + 1, ringSlots: cell.ringSlots, slotBytes: slotBytesFor(cell.payloadBytes), logRecords: 16, recordBytes };
  const opts = rpcApp.resolveOptions({ strategy: cell.strategy, layout, handlers: { [METHOD]: handler }, appBytesMin: digestBytes + (copy ? objects * objectBytes : 0) });
  const region = modelRegion(rpcApp.minRegionBytes(opts) + 4096, seed);
  rpcApp.format(region, opts);
  world.addNode(region, (host) => rpcApp.open(host, opts)).server!.recover();

  const durable: number[] = [];
  const result: number[] = [];
  const warm = Math.floor(requestsPerClient / 5);
  let processed = 0;
  let tFirst = Number.NaN;
  let tWarm = Number.NaN;
  let settled = 0;
  let failed: unknown;
  const payload = new Uint8Array(cell.payloadBytes).fill(7);
  for (let k = 0; k < cell.clients; k++) {
    const { qp, welcome } = world.connect(0, encodeHelloPayload({}), k);
    const c = new DurableRpcClient(qp, decodeWelcomePayload(welcome));
    void (async () => {
      const inflight = new Set<Promise<void>>();
      for (let i = 0; i < requestsPerClient; i++) {
        while (inflight.size >= cell.outstanding) await Promise.race(inflight);
        const t0 = world.nowUs;
        if (Number.isNaN(tFirst)) tFirst = t0;
        const measured = i >= warm;
        if (i === warm && Number.isNaN(tWarm)) tWarm = t0;
        const call = c.call(METHOD, payload);
        const ack = cell.strategy === 'none' ? call.result : call.durable;
        const p: Promise<void> = ack.then(() => {
          if (measured) durable.push(world.nowUs - t0);
        });
        inflight.add(p);
        void p.finally(() => inflight.delete(p));
        call.result.then(
          () => {
            if (measured) {
              result.push(world.nowUs - t0);
              processed++;
            }
            settled++;
          },
          (e: unknown) => {
            failed ??= e;
            settled++;
          },
        );
      }
    })().catch((e: unknown) => {
      failed ??= e;
      settled = total;
    });
  }
  const run = await world.run(() => settled >= total || failed !== undefined, 5_000_000);
  if (failed !== undefined) throw failed instanceof Error ? failed : new Error(String(failed));
  if (run.status !== 'done') throw new Error(`modelled flush cell ${cell.strategy} ${cell.payloadBytes} B did not finish (${run.status} after ${run.steps} steps)`);
  const end = world.nowUs;
  world.close();
  const d = latencyStats(durable);
  const r = latencyStats(result);
  return {
    throughputPerSecond: perSecond(processed, end - (Number.isNaN(tWarm) ? tFirst : tWarm)),
    durableMeanUs: d.meanUs,
    durableP50Us: d.p50Us,
    durableP99Us: d.p99Us,
    resultMeanUs: r.meanUs,
    resultP50Us: r.p50Us,
    resultP99Us: r.p99Us,
    requests: total,
    spanUs: r3(end - tFirst),
    time: world.timeStats(),
  };
}
