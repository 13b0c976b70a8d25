/**
 * Memory registration (DESIGN §2.2): protection domains and memory regions with access flags and
 * random 32-bit rkeys drawn from the injected Entropy. A QP reaches only the MRs of its own
 * protection domain; an rkey that is unknown, deregistered or of another PD is PMRPC_ERR_BAD_RKEY.
 */
import { PmrpcError, type Entropy, defineErrorCodes, type ErrorCodesOf } from '../pmem/index.js';
import { Access } from './types.js';

export const NicErrorCodes = defineErrorCodes('flush', {
  /** The rkey names no MR of this connection's protection domain (unknown, other PD, deregistered). */
  BAD_RKEY: 'PMRPC_ERR_BAD_RKEY',
  /** The MR lacks the access flag the request needs. */
  ACCESS: 'PMRPC_ERR_ACCESS',
  /** The access lies (partly) outside its MR or outside the scratch buffer. */
  OUT_OF_BOUNDS: 'PMRPC_ERR_OUT_OF_BOUNDS',
  /** An 8-byte atomic on an address that is not 8-byte aligned. */
  MISALIGNED: 'PMRPC_ERR_MISALIGNED',
  /** A malformed work request arrived (the NIC validates what the link brings). */
  BAD_WR: 'PMRPC_ERR_BAD_WR',
  /** Completed without executing: an earlier request moved the QP to the error state. */
  WR_FLUSHED: 'PMRPC_ERR_WR_FLUSHED',
  /** SEND / WRITE_WITH_IMM found no posted receive buffer. */
  NO_RECV: 'PMRPC_ERR_NO_RECV',
  /** SEND payload longer than the posted receive buffer. */
  RECV_TOO_SMALL: 'PMRPC_ERR_RECV_TOO_SMALL',
  /** A bounded WRITE longer than the bound stored at its target. */
  BOUND_EXCEEDED: 'PMRPC_ERR_BOUND_EXCEEDED',
  /** ALLOCATE: the free list of that size is empty (status 'failed', QP unharmed). */
  ALLOC_EMPTY: 'PMRPC_ERR_ALLOC_EMPTY',
  /** ALLOCATE refused until the server rebuilds its free lists after a crash (status 'failed'). */
  ALLOC_REFUSED: 'PMRPC_ERR_ALLOC_REFUSED',
  /** A redirected FLUSH's pointer word in scratch was not produced by an earlier op of its chain (status 'failed', nothing flushed, QP unharmed). */
  REDIRECT_MISSING: 'PMRPC_ERR_REDIRECT_MISSING',
  /** The QP number is unknown or the link is closed. */
  NO_SUCH_QP: 'PMRPC_ERR_NO_SUCH_QP',
  /** The link was closed: outstanding requests can no longer complete. */
  LINK_CLOSED: 'PMRPC_ERR_LINK_CLOSED',
  /** A QP's inbound queue or the NIC cache is full past its bound. */
  QUEUE_FULL: 'PMRPC_ERR_QUEUE_FULL',
  /** A client-side helper saw a completion that was not 'ok'. */
  WR_FAILED: 'PMRPC_ERR_WR_FAILED',
  /** A link's send() refused a message because its send buffer is full (src/transport's TcpLink); QueuePair holds it instead. */
  BACKPRESSURE: 'PMRPC_ERR_BACKPRESSURE',
  /** No unused rkey in 64 draws: the injected entropy source is not random. */
  RKEY_SPACE: 'PMRPC_ERR_RKEY_SPACE',
  /** A flush strategy's server half answered a flush request with a NACK. */
  FLUSH_REFUSED: 'PMRPC_ERR_FLUSH_REFUSED',
});

declare module '../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof NicErrorCodes> {}
}

export class ProtectionDomain {
  readonly id: number;
  constructor(id: number) {
    this.id = id;
  }
}

export interface MemoryRegion {
  readonly rkey: number;
  readonly pd: ProtectionDomain;
  /** Byte offset of the MR in the server's PM region. */
  readonly offset: number;
  readonly len: number;
  /** Bit set of Access flags. */
  readonly access: number;
}

/** Thrown inside the NIC engine and turned into an error completion. */
export class WrError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

export function accessName(flag: number): string {
  switch (flag) {
    case Access.REMOTE_READ:
      return 'REMOTE_READ';
    case Access.REMOTE_WRITE:
      return 'REMOTE_WRITE';
    case Access.REMOTE_ATOMIC:
      return 'REMOTE_ATOMIC';
    case Access.FLUSH_GLOBAL:
      return 'FLUSH_GLOBAL';
    case Access.FLUSH_PERSISTENT:
      return 'FLUSH_PERSISTENT';
    default:
      return `0x${flag.toString(16)}`;
  }
}

/** The NIC's MR table. */
export class MrTable {
  #byKey = new Map<number, MemoryRegion>();
  #entropy: Entropy;
  #regionBytes: number;
  #pds = 0;

  constructor(entropy: Entropy, regionBytes: number) {
    this.#entropy = entropy;
    this.#regionBytes = regionBytes;
  }

  allocPd(): ProtectionDomain {
    return new ProtectionDomain(++this.#pds);
  }

  register(pd: ProtectionDomain, offset: number, len: number, access: number): MemoryRegion {
    if (!(pd instanceof ProtectionDomain)) throw new TypeError('pd must be a ProtectionDomain from allocPd()');
    if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(len) || offset < 0 || len <= 0 || offset + len > this.#regionBytes) {
      throw new RangeError(`MR [${offset}, ${offset + len}) must be a non-empty range inside the region [0, ${this.#regionBytes})`);
    }
    if (!Number.isInteger(access) || access < 0 || access > Access.ALL) {
      throw new RangeError(`access must be a bit set of Access flags (0..${Access.ALL}), got ${String(access)}`);
    }
    let rkey = 0;
    // A collision with a live key would let one grant alias another: draw again (bounded).
    for (let tries = 0; tries < 64; tries++) {
      const b = this.#entropy.bytes(4);
      rkey = (b[0]! | (b[1]! << 8) | (b[2]! << 16) | (b[3]! << 24)) >>> 0;
      if (rkey !== 0 && !this.#byKey.has(rkey)) break;
      rkey = 0;
    }
    if (rkey === 0) throw new PmrpcError(NicErrorCodes.RKEY_SPACE, 'could not draw an unused rkey in 64 tries: the entropy source is not random');
    const mr: MemoryRegion = Object.freeze({ rkey, pd, offset, len, access });
    this.#byKey.set(rkey, mr);
    return mr;
  }

  deregister(mr: MemoryRegion): void {
    if (this.#byKey.get(mr.rkey) === mr) this.#byKey.delete(mr.rkey);
  }

  /** The MR of `rkey` in `pd` covering [addr, addr+len) with `need` access, or a WrError. */
  check(pd: ProtectionDomain, rkey: number, addr: number, len: number, need: number): MemoryRegion {
    const mr = this.lookup(pd, rkey);
    if ((mr.access & need) !== need) {
      throw new WrError(NicErrorCodes.ACCESS, `MR rkey 0x${rkey.toString(16)} lacks ${accessName(need)} access`);
    }
    if (!Number.isSafeInteger(addr) || !Number.isSafeInteger(len) || len < 0 || addr < mr.offset || addr + len > mr.offset + mr.len) {
      throw new WrError(NicErrorCodes.OUT_OF_BOUNDS, `access [${addr}, ${addr + len}) is outside MR rkey 0x${rkey.toString(16)} [${mr.offset}, ${mr.offset + mr.len})`);
    }
    return mr;
  }

  lookup(pd: ProtectionDomain, rkey: number): MemoryRegion {
    const mr = Number.isInteger(rkey) ? this.#byKey.get(rkey) : undefined;
    if (mr === undefined || mr.pd !== pd) throw new WrError(NicErrorCodes.BAD_RKEY, `rkey 0x${Number(rkey).toString(16)} is not registered in this connection's protection domain`);
    return mr;
  }
}
