/**
 * The worker side of the handler pool (DESIGN §4): a piscina worker module exports
 * `rpcWorker({ method: handler, ... })` as its default. Each task carries the owner region's
 * shared visible memory; the worker reads it through a read-only PmemReadView (it never stores)
 * and returns the effects. The owner validates them and commits them through the redo log, in
 * order. Handlers must be the same functions the owner registered (recovery re-runs them inline).
 */
import { PmemReadView } from '../../pmem/index.js';
import type { AppView } from '../../recovery/index.js';
import type { PoolAnswer, PoolTask, RpcHandler } from './handler.js';

const views = new WeakMap<SharedArrayBuffer, PmemReadView>();

function appView(task: PoolTask): AppView {
  let v = views.get(task.shared.buffer);
  if (v === undefined) {
    v = new PmemReadView(task.shared);
    views.set(task.shared.buffer, v);
  }
  const view = v;
  const inApp = (o: number, len: number): number => {
    if (!Number.isInteger(o) || !Number.isInteger(len) || o < 0 || len < 0 || o + len > task.appBytes) {
      throw Object.assign(new Error(`read [${o}, ${o + len}) is outside the application area [0, ${task.appBytes})`), { code: 'PMRPC_ERR_EFFECT_OUT_OF_BOUNDS' });
    }
    return task.appOffset + o;
  };
  return Object.freeze({
    sizeBytes: task.appBytes,
    load: (o: number, len: number) => view.load(inApp(o, len), len),
    loadU32: (o: number) => view.loadU32(inApp(o, 4)),
    loadU64: (o: number) => view.loadU64(inApp(o, 8)),
  });
}

/** The task function of a piscina worker module: `export default rpcWorker({ inc: incHandler })`. */
export function rpcWorker(handlers: Readonly<Record<string, RpcHandler>>): (task: PoolTask) => PoolAnswer {
  if (handlers === null || typeof handlers !== 'object') throw new TypeError('handlers must be an object of method: handler');
  for (const [k, h] of Object.entries(handlers)) if (typeof h !== 'function') throw new TypeError(`handler of ${k} must be a function`);
  return (task) => {
    const h = handlers[task.method];
    if (h === undefined) return { ok: false, code: 'PMRPC_ERR_UNKNOWN_METHOD', message: `the worker has no handler for ${task.method}` };
    try {
      const effects = h({ clientId: task.clientId, seq: task.seq, method: task.method, payload: task.payload }, appView(task));
      return { ok: true, effects };
    } catch (e) {
      const err = e as { code?: unknown; message?: unknown };
      return { ok: false, code: typeof err?.code === 'string' ? err.code : undefined, message: String(err?.message ?? e) };
    }
  };
}
