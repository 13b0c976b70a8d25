/**
 * The durable RPC server's methods (DESIGN §4): a method name's id on the wire, the registered
 * handlers by id, and the one way an entry's effects are computed — as committed (the record the
 * redo log keeps) and as answered (status, bytes). Used by DurableRpcServer (server.ts) on the live
 * path, by recovery's re-execution (start) and by pool mode (pool.ts).
 */
import { bool, callable, crc32c, isInvariantError, optional, PmrpcError, resolveOptions } from '../../pmem/index.js';
import { checkEffects, RECORD_HEADER_BYTES, type AppView, type Effects, type RecoveryStore, type RingEntry } from '../../recovery/index.js';
import { RpcErrorCodes } from './errors.js';
import type { RpcEffects, RpcHandler, RpcRequest } from './handler.js';
import type { ComputedEffects } from './pool.js';
import { encodeError, encodeKept, STATUS_ERROR, STATUS_OK } from './wire.js';

/** The method a client's goodbye is sent as (reserved: a handler cannot be registered under it). */
export const GOODBYE_METHOD = 'pmrpc.goodbye';

export interface MethodOptions {
  /** Compute this method's effects in the pool (the worker module must export the same handler under the same name). */
  pooled: boolean;
  /**
   * The keys a request touches (reads or writes). Requests run in parallel only when their keys are
   * disjoint; without keys a pooled request runs alone. The after-images of requests computed in
   * parallel are checked for overlap before they are applied; an overlap (keys that lied) makes the
   * later request compute again, serially, inline.
   */
  keys: ((request: RpcRequest) => readonly string[]) | undefined;
}

const METHOD_DEFAULTS: Readonly<MethodOptions> = Object.freeze({ pooled: false, keys: undefined });

/** A method name's id on the wire (CRC-32C of its UTF-8 bytes): client and server agree without a handshake. */
export function methodId(method: string): number {
  let id = METHOD_IDS.get(method);
  if (id === undefined) {
    id = crc32c(new TextEncoder().encode(method));
    // Bounded: a caller naming ever new methods pays the encoding, not memory.
    if (METHOD_IDS.size >= 1024) METHOD_IDS.clear();
    METHOD_IDS.set(method, id);
  }
  return id;
}

/** Ids of the method names seen (the client computes one per call). */
const METHOD_IDS = new Map<string, number>();

/** The goodbye's method id. */
export const GOODBYE_ID = methodId(GOODBYE_METHOD);

const METHOD_RE = /^[A-Za-z_][A-Za-z0-9_.:/-]{0,127}$/;

/** A registered method. */
export interface RegisteredMethod {
  name: string;
  handler: RpcHandler;
  pooled: boolean;
  keys: MethodOptions['keys'];
}

/** The server's registered methods, by id, and the effects of an entry under them. */
export class MethodTable {
  readonly #methods = new Map<number, RegisteredMethod>();
  readonly #store: RecoveryStore;
  readonly #keepResults: boolean;

  constructor(store: RecoveryStore, keepResults: boolean) {
    this.#store = store;
    this.#keepResults = keepResults;
  }

  /** Registers a handler (DurableRpcServer.register): `hasPool` whether pooled methods may be; `closed` whether the server is closed. */
  register(method: string, handler: RpcHandler, options: Partial<MethodOptions>, hasPool: boolean, closed: boolean): void {
    if (typeof method !== 'string' || !METHOD_RE.test(method)) throw new TypeError(`method must be a name matching ${METHOD_RE}, got ${String(method)}`);
    if (typeof handler !== 'function') throw new TypeError('handler must be a function');
    const { pooled, keys } = resolveOptions(METHOD_DEFAULTS, options, { pooled: bool, keys: optional(callable()) });
    if (pooled && !hasPool) throw new TypeError(`method ${method} is pooled but the server has no pool`);
    if (closed) throw new PmrpcError(RpcErrorCodes.NOT_SERVING, 'the server is closed');
    const id = methodId(method);
    if (id === GOODBYE_ID) throw new PmrpcError(RpcErrorCodes.METHOD_EXISTS, `method ${method} ${method === GOODBYE_METHOD ? 'is' : 'has the same id as'} the reserved ${GOODBYE_METHOD}`);
    const had = this.#methods.get(id);
    if (had !== undefined) throw new PmrpcError(RpcErrorCodes.METHOD_EXISTS, had.name === method ? `method ${method} is already registered` : `method ${method} has the same id as ${had.name}`);
    this.#methods.set(id, { name: method, handler, pooled, keys });
  }

  get(id: number): RegisteredMethod | undefined {
    return this.#methods.get(id);
  }

  /** The effects of an entry, as committed (record) and as answered (status, bytes). Never throws for a request's fault. */
  effects(entry: RingEntry, view: AppView, compute?: () => RpcEffects): ComputedEffects {
    const keep = this.#keepResults;
    if (entry.methodId === GOODBYE_ID) return { record: keep ? { images: [], result: encodeKept(STATUS_OK, new Uint8Array(0)) } : { images: [] }, status: STATUS_OK, bytes: new Uint8Array(0) };
    const m = this.#methods.get(entry.methodId);
    if (m === undefined) return this.failed(RpcErrorCodes.UNKNOWN_METHOD, `no method with id ${entry.methodId}`);
    let eff: RpcEffects;
    try {
      eff = compute !== undefined ? compute() : m.handler({ clientId: entry.clientId, seq: entry.seq, method: m.name, payload: entry.payload }, view);
    } catch (e) {
      if (isInvariantError(e)) throw e; // pmrpc's own state is wrong: not the request's fault (#fail halts)
      const err = e as { code?: unknown; message?: unknown };
      return this.failed(typeof err?.code === 'string' && err.code.startsWith('PMRPC_ERR_') ? err.code : RpcErrorCodes.HANDLER_FAILED, String(err?.message ?? e));
    }
    const result = eff?.result ?? new Uint8Array(0);
    // (No spread: one object of one shape per request.)
    const record: Effects = keep ? { images: eff?.images, result: encodeKept(STATUS_OK, result instanceof Uint8Array ? result : new Uint8Array(0)) } : { images: eff?.images };
    try {
      if (!(result instanceof Uint8Array)) throw new TypeError('effects.result must be a Uint8Array');
      checkEffects(record, this.#store.layout);
    } catch (e) {
      return this.failed(RpcErrorCodes.HANDLER_FAILED, `invalid effects: ${(e as Error).message}`);
    }
    return { record, status: STATUS_OK, bytes: result };
  }

  /** The effects of a request that failed: no images, the coded error as its result. */
  failed(code: string, message: string): ComputedEffects {
    const roomBytes = this.#store.geometry.recordBytes - RECORD_HEADER_BYTES - 8;
    const bytes = encodeError(code, message, Math.min(256, roomBytes - 1));
    return { record: this.#keepResults ? { images: [], result: encodeKept(STATUS_ERROR, bytes) } : { images: [] }, status: STATUS_ERROR, bytes };
  }
}
