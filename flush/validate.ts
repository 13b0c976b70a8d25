/**
 * Shape checks of work requests. The client throws a TypeError with the message (a programmer
 * error); the NIC completes the request with PMRPC_ERR_BAD_WR (a link may bring anything).
 */
import { CAS_MODES, WR_OPS, type Loc, type WorkRequest } from './types.js';

/** Largest payload or read length of one work request. */
export const MAX_WR_BYTES = 16 * 1024 * 1024;
/** Most work requests in one message (one doorbell). */
export const MAX_WRS_PER_MESSAGE = 4096;
/** Widest PRISM CAS operand. */
export const MAX_CAS_BYTES = 32;
/** Most pointers one redirected FLUSH reads (`count`); the scratch buffer bounds it further, at the NIC. */
export const MAX_FLUSH_POINTERS = 4096;
/** Widest distance between two pointers of one redirected FLUSH (`stride`). */
export const MAX_FLUSH_STRIDE = 4096;

const isU32 = (x: unknown): boolean => Number.isInteger(x) && (x as number) >= 0 && (x as number) <= 0xffffffff;
const isLen = (x: unknown): boolean => Number.isSafeInteger(x) && (x as number) >= 0 && (x as number) <= MAX_WR_BYTES;
const isOff = (x: unknown): boolean => Number.isSafeInteger(x) && (x as number) >= 0;
const isBool = (x: unknown): boolean => x === undefined || typeof x === 'boolean';

function locError(name: string, loc: unknown): string | undefined {
  if (typeof loc !== 'object' || loc === null) return `${name} must be {rkey, addr} or {scratch}`;
  const l = loc as Record<string, unknown>;
  if ('scratch' in l) return isOff(l.scratch) ? undefined : `${name}.scratch must be a non-negative integer`;
  if (!isU32(l.rkey)) return `${name}.rkey must be a 32-bit unsigned integer`;
  if (!isOff(l.addr)) return `${name}.addr must be a non-negative safe integer`;
  return undefined;
}

function bytesError(name: string, b: unknown, len?: number): string | undefined {
  if (!(b instanceof Uint8Array)) return `${name} must be a Uint8Array`;
  if (b.length > MAX_WR_BYTES) return `${name} is longer than ${MAX_WR_BYTES} bytes`;
  if (len !== undefined && b.length !== len) return `${name} must be ${len} bytes, got ${b.length}`;
  return undefined;
}

/** Payload given inline (`data`) or by reference (`from` + `len`), exactly one of them. */
function payloadError(w: Record<string, unknown>): string | undefined {
  if (w.data !== undefined && w.from !== undefined) return `${String(w.op)}: give data or from, not both`;
  if (w.from !== undefined) return locError('from', w.from) ?? (isLen(w.len) ? undefined : 'from needs len, a non-negative integer');
  return bytesError('data', w.data);
}

/** undefined when `wr` is well formed, else why not. */
export function wrError(wr: unknown): string | undefined {
  if (typeof wr !== 'object' || wr === null) return 'a work request must be an object';
  const w = wr as Record<string, unknown>;
  if (!WR_OPS.includes(w.op as never)) return `op must be one of ${WR_OPS.join(', ')}, got ${String(w.op)}`;
  if (w.id !== undefined && !isU32(w.id)) return 'id must be a 32-bit unsigned integer';
  if (!isBool(w.conditional)) return 'conditional must be a boolean';
  if (!isBool(w.unsignaled)) return 'unsignaled must be a boolean';
  if (w.redirect !== undefined && !isOff(w.redirect)) return 'redirect must be a scratch offset (non-negative integer)';
  if (!isBool(w.indirect) || !isBool(w.bounded)) return 'indirect and bounded must be booleans';
  if (w.targetRkey !== undefined && !isU32(w.targetRkey)) return 'targetRkey must be a 32-bit unsigned integer';
  if (w.imm !== undefined && !isU32(w.imm)) return 'imm must be a 32-bit unsigned integer';
  const op = w.op as WorkRequest['op'];
  switch (op) {
    case 'write':
    case 'writeImm':
      if (op === 'write' && w.imm !== undefined) return "imm is only for op 'writeImm'";
      return locError('to', w.to) ?? payloadError(w);
    case 'read':
      return locError('from', w.from) ?? (isLen(w.len) ? undefined : `len must be an integer in [0, ${MAX_WR_BYTES}]`);
    case 'send':
      return bytesError('data', w.data);
    case 'cas':
      return locError('at', w.at) ?? bytesError('compare', w.compare, 8) ?? bytesError('swap', w.swap, 8);
    case 'faa':
      return locError('at', w.at) ?? bytesError('add', w.add, 8);
    case 'atomicWrite':
      return locError('at', w.at) ?? bytesError('value', w.value, 8);
    case 'flush':
      if (w.placement !== 'global' && w.placement !== 'persistent') return "placement must be 'global' or 'persistent'";
      if (w.selectivity !== 'range' && w.selectivity !== 'mr') return "selectivity must be 'range' or 'mr'";
      if (!isU32(w.rkey)) return 'rkey must be a 32-bit unsigned integer';
      if (w.addrScratch !== undefined) {
        if (w.selectivity !== 'range') return 'addrScratch is only for a range flush';
        if (w.addr !== undefined) return 'a range flush takes addr or addrScratch, not both';
        if (!isOff(w.addrScratch)) return 'addrScratch must be a scratch offset (non-negative integer)';
        if (!isLen(w.len)) return `a redirected flush needs len, an integer in [0, ${MAX_WR_BYTES}]`;
        if (w.count !== undefined && (!Number.isInteger(w.count) || (w.count as number) < 1 || (w.count as number) > MAX_FLUSH_POINTERS)) return `count must be an integer in [1, ${MAX_FLUSH_POINTERS}]`;
        if (w.stride !== undefined && (!Number.isInteger(w.stride) || (w.stride as number) < 8 || (w.stride as number) % 8 !== 0 || (w.stride as number) > MAX_FLUSH_STRIDE)) return `stride must be a multiple of 8 in [8, ${MAX_FLUSH_STRIDE}]`;
        return undefined;
      }
      if (w.count !== undefined) return 'count is only for a redirected flush (addrScratch)';
      if (w.stride !== undefined) return 'stride is only for a redirected flush (addrScratch)';
      if (w.selectivity === 'range' && (!isOff(w.addr) || !isOff(w.len))) return 'a range flush needs addr and len (non-negative integers)';
      return undefined;
    case 'prismCas': {
      if (!CAS_MODES.includes(w.mode as never)) return `mode must be one of ${CAS_MODES.join(', ')}`;
      if (!Number.isInteger(w.len) || (w.len as number) < 1 || (w.len as number) > MAX_CAS_BYTES) return `len must be an integer in [1, ${MAX_CAS_BYTES}]`;
      const len = w.len as number;
      return (
        locError('at', w.at) ??
        (w.from !== undefined ? (w.data !== undefined ? 'prismCas: give data or from, not both' : locError('from', w.from)) : bytesError('data', w.data, len)) ??
        (w.compareMask !== undefined ? bytesError('compareMask', w.compareMask, len) : undefined) ??
        (w.swapMask !== undefined ? bytesError('swapMask', w.swapMask, len) : undefined)
      );
    }
    case 'allocate': {
      if (!isU32(w.rkey)) return 'rkey must be a 32-bit unsigned integer';
      const s = w.sizeBytes as number;
      if (!Number.isInteger(s) || s < 8 || s > 1 << 30 || (s & (s - 1)) !== 0) return 'sizeBytes must be a power of two in [8, 2^30]';
      const e = payloadError(w);
      if (e !== undefined) return e;
      const n = w.from !== undefined ? (w.len as number) : (w.data as Uint8Array).length;
      return n > s ? `allocate: ${n} bytes of data do not fit a ${s}-byte buffer` : undefined;
    }
  }
}

/**
 * Chains whose every work request was checked by this process's verbs layer (QueuePair.postChain /
 * postChainWith) when posted carry this brand: a NIC in the same process (the in-process fabric,
 * the explorer's World) does not check them a second time. On the chain's array, which the
 * QueuePair owns from then on (postChain copies it; postChainWith's caller gives it up). A chain
 * that crossed a wire is a new array (decoded), never branded: the NIC checks it once, when it
 * arrives. (A brand, not a WeakSet of arrays: the set's add — an identity hash and an ephemeron
 * entry per chain — cost ≈ 0.5 µs a request in-process, docs/benchmarks.md.)
 */
const CHECKED: unique symbol = Symbol('pmrpc.chainChecked');

type Branded = { [CHECKED]?: true };

/** The verbs layer checked every work request of `wrs` (and gives the array up). */
export function markChecked(wrs: readonly WorkRequest[]): void {
  (wrs as Branded)[CHECKED] = true;
}

/**
 * The index of the first malformed work request of `wrs` and why (undefined: all well formed) —
 * one pass over the chain, skipped for a chain the verbs layer already checked (markChecked).
 */
export function chainError(wrs: readonly unknown[]): { index: number; why: string } | undefined {
  if ((wrs as Branded)[CHECKED] === true) return undefined;
  for (let i = 0; i < wrs.length; i++) {
    const why = wrError(wrs[i]);
    if (why !== undefined) return { index: i, why };
  }
  return undefined;
}

export function isScratch(loc: Loc): loc is { scratch: number } {
  return 'scratch' in loc;
}
