/**
 * The types a handler and the handler pool share (DESIGN §4). They live here, apart from
 * server.ts and worker.ts, so that those two import this file and not each other.
 */
import type { AppView, EffectImage } from '../../recovery/index.js';

/** A request as a handler sees it. */
export interface RpcRequest {
  clientId: number;
  seq: number;
  method: string;
  /**
   * The request's bytes, copied out of the ring: a view (its byteOffset may be non-zero and its
   * buffer shared with other requests' payloads — read it through the view, e.g.
   * `new DataView(p.buffer, p.byteOffset, p.byteLength)`). Yours to keep.
   */
  payload: Uint8Array;
}

/** What a handler returns: after-images of the application area (offsets relative to it) and a result. */
export interface RpcEffects {
  images: EffectImage[];
  result?: Uint8Array;
}

/**
 * Computes a request's effects from the current state of the application area (read-only view).
 * It must not store anything: the server applies the after-images through the redo log, so it may
 * run again at recovery over the same state (it is not required to be idempotent).
 */
export type RpcHandler = (request: RpcRequest, view: AppView) => RpcEffects;

/** One pooled request, as the owner posts it to a worker: the owner region's shared memory and the request. */
export interface PoolTask {
  shared: { buffer: SharedArrayBuffer; sizeBytes: number };
  appOffset: number;
  appBytes: number;
  method: string;
  clientId: number;
  seq: number;
  payload: Uint8Array;
}

/** A worker's answer: the handler's effects, or its error (code and message, as they cross threads). */
export type PoolAnswer = { ok: true; effects: RpcEffects } | { ok: false; code: string | undefined; message: string };

/** What DurableRpcServer needs of a pool: a Piscina instance (or anything with its run()). */
export interface RpcPool {
  run(task: PoolTask): Promise<PoolAnswer>;
}
