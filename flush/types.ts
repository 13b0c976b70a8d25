/**
 * The data that crosses a Link (DESIGN §6): work requests, completions and server-initiated
 * messages. Everything here is plain data — numbers, strings, booleans, Uint8Array, arrays and
 * plain objects — so that a TCP + protobuf transport can carry it unchanged. No bigint: 64-bit
 * operands travel as 8-byte little-endian Uint8Arrays; addresses are byte offsets into the
 * server's PM region (safe integers).
 */

/** Access flags of a memory region (bit set). */
export const Access = Object.freeze({
  REMOTE_READ: 1,
  REMOTE_WRITE: 2,
  REMOTE_ATOMIC: 4,
  FLUSH_GLOBAL: 8,
  FLUSH_PERSISTENT: 16,
  ALL: 31,
} as const);

/** A location on the server: registered memory (rkey + byte offset in the region) or the connection's scratch buffer. */
export type Loc = RemoteLoc | ScratchLoc;
export interface RemoteLoc {
  rkey: number;
  addr: number;
}
export interface ScratchLoc {
  scratch: number;
}

export type CasMode = 'eq' | 'ne' | 'lt' | 'le' | 'gt' | 'ge';
export const CAS_MODES: readonly CasMode[] = Object.freeze(['eq', 'ne', 'lt', 'le', 'gt', 'ge']);
export type FlushPlacement = 'global' | 'persistent';
export type FlushSelectivity = 'range' | 'mr';

/** Chaining flags (PRISM), valid on every work request. */
export interface ChainFlags {
  /** Client-chosen id, echoed in the completion. */
  id?: number;
  /** Run only if the previous work request of this QP succeeded (a CAS that did not swap is a failure). */
  conditional?: boolean;
  /** Write the output (READ data, CAS/FAA old value, ALLOCATE pointer) to this scratch offset instead of returning it. */
  redirect?: number;
  /**
   * No completion when it succeeds (a verbs work request posted without IBV_SEND_SIGNALED): the
   * Response of its message carries the completions of the signaled work requests and of every
   * one that did not succeed — so fewer completions than work requests, each named by its `id`.
   */
  unsignaled?: boolean;
}

/** WRITE / WRITE_WITH_IMM, with the PRISM options. */
export interface WriteWr extends ChainFlags {
  op: 'write' | 'writeImm';
  to: Loc;
  /** The payload; absent when `from` is given (dataIndirect). */
  data?: Uint8Array;
  /** dataIndirect: copy `len` bytes from here instead of carrying them. */
  from?: Loc;
  len?: number;
  /** addrIndirect: `to` holds an 8-byte pointer to the target. */
  indirect?: boolean;
  /** addrBounded: `to` holds ⟨ptr 8 B, bound 8 B⟩; a payload longer than the bound fails. */
  bounded?: boolean;
  /** rkey the dereferenced target must lie in (default: `to.rkey`). */
  targetRkey?: number;
  /** writeImm: the 32-bit immediate delivered with the receive completion. */
  imm?: number;
}

export interface ReadWr extends ChainFlags {
  op: 'read';
  from: Loc;
  len: number;
  /** `from` holds an 8-byte pointer to the data. */
  indirect?: boolean;
  /** `from` holds ⟨ptr, bound⟩: min(len, bound) bytes are read. */
  bounded?: boolean;
  targetRkey?: number;
}

export interface SendWr extends ChainFlags {
  op: 'send';
  data: Uint8Array;
  imm?: number;
}

/** Standard 8-byte atomics: aligned 8-byte target. Operands are 8-byte little-endian. */
export interface CasWr extends ChainFlags {
  op: 'cas';
  at: Loc;
  compare: Uint8Array;
  swap: Uint8Array;
}
export interface FaaWr extends ChainFlags {
  op: 'faa';
  at: Loc;
  add: Uint8Array;
}
export interface AtomicWriteWr extends ChainFlags {
  op: 'atomicWrite';
  at: Loc;
  value: Uint8Array;
}

export interface FlushWr extends ChainFlags {
  op: 'flush';
  placement: FlushPlacement;
  selectivity: FlushSelectivity;
  rkey: number;
  /** range selectivity only: the range start (exactly one of `addr`, `addrScratch`). */
  addr?: number;
  /**
   * range selectivity only, instead of `addr` (pmrpc's extension of IBTA FLUSH, docs/verbs.md): the
   * range start is the 8-byte little-endian pointer at this offset of the connection's scratch,
   * where an earlier op of the same chain redirected it (ALLOCATE's pointer, a READ's slot word).
   * A pointer this chain did not produce (the producing op failed or was skipped, or it is left
   * from another chain) completes 'failed' with PMRPC_ERR_REDIRECT_MISSING: nothing is flushed.
   */
  addrScratch?: number;
  /**
   * Redirected FLUSH only (pmrpc's extension, docs/verbs.md): how many pointers to read — at scratch
   * offsets `addrScratch + 8·j`, j < count — each flushing `len` bytes from it, all in MR `rkey`, as
   * one work request (one completion, one PCIe round trip). Every pointer must have been produced
   * by an earlier op of the same chain, or none is flushed (PMRPC_ERR_REDIRECT_MISSING). Absent: 1.
   */
  count?: number;
  /**
   * With `count`: the distance in bytes between the pointers (a multiple of 8, at least 8; absent:
   * 8), so that pointers redirected into the 4th word of 32-byte operands can be read in place.
   */
  stride?: number;
  len?: number;
}

/** PRISM enhanced CAS: 1..32-byte operands, masks, comparison modes. */
export interface PrismCasWr extends ChainFlags {
  op: 'prismCas';
  mode: CasMode;
  at: Loc;
  /** targetIndirect: `at` holds an 8-byte pointer to the target. */
  indirect?: boolean;
  targetRkey?: number;
  /** Operand (len bytes); absent when `from` is given (dataIndirect). */
  data?: Uint8Array;
  from?: Loc;
  len: number;
  /** Default all ones. */
  compareMask?: Uint8Array;
  /** Default all ones. */
  swapMask?: Uint8Array;
}

/** PRISM ALLOCATE: pop a buffer of `sizeBytes` from the server-posted free list of MR `rkey`, write data, return its address. */
export interface AllocateWr extends ChainFlags {
  op: 'allocate';
  rkey: number;
  sizeBytes: number;
  data?: Uint8Array;
  from?: Loc;
  len?: number;
}

export type WorkRequest = WriteWr | ReadWr | SendWr | CasWr | FaaWr | AtomicWriteWr | FlushWr | PrismCasWr | AllocateWr;
export type WrOp = WorkRequest['op'];
export const WR_OPS: readonly WrOp[] = Object.freeze(['write', 'writeImm', 'read', 'send', 'cas', 'faa', 'atomicWrite', 'flush', 'prismCas', 'allocate']);

/**
 * 'ok': done. 'failed': executed, did not succeed, QP unharmed (ALLOCATE from an empty or refused
 * list). 'skipped': a conditional request whose predecessor did not succeed. 'error': the request
 * failed (code says why) and the QP is now in the error state; every later request on it
 * completes 'error' with PMRPC_ERR_WR_FLUSHED.
 */
export type CompletionStatus = 'ok' | 'failed' | 'skipped' | 'error';

export interface Completion {
  id: number;
  op: WrOp;
  status: CompletionStatus;
  code?: string;
  message?: string;
  /** READ data; CAS / FAA / PRISM CAS old value; ALLOCATE pointer (8 bytes LE). Absent when redirected. */
  data?: Uint8Array;
  /** CAS / PRISM CAS: whether the swap happened. */
  swapped?: boolean;
}

/** Client → server: one doorbell = one message = any number of work requests (a chain). */
export interface RequestMessage {
  type: 'request';
  qpn: number;
  seq: number;
  wrs: WorkRequest[];
}

/** Server → client: the completions of one request message, in order. */
export interface ResponseMessage {
  type: 'response';
  qpn: number;
  seq: number;
  completions: Completion[];
}

/**
 * Server → client, initiated by the server CPU: a reply or acknowledgement (pmrpc does not emulate
 * client memory, so a server WRITE or SEND to the client arrives as this message).
 */
export interface NotifyMessage {
  type: 'notify';
  qpn: number;
  data: Uint8Array;
  imm?: number;
}

export type ClientMessage = RequestMessage;
export type ServerMessage = ResponseMessage | NotifyMessage;

/**
 * The client end of a connection to one server QP (DESIGN §6). Implementations: the in-process
 * fabric (flush/link.ts) and, later, the TCP + protobuf transport (src/transport).
 * `send` never throws for a remote failure: failures come back as completions.
 */
export interface Link {
  /** The server QP this link reaches. */
  readonly qpn: number;
  readonly closed: boolean;
  send(msg: ClientMessage): void;
  /** Sets the single handler of server messages (responses and notifications). */
  onMessage(handler: (msg: ServerMessage) => void): void;
  close(): void;
  /**
   * Back-pressure (optional): false while the link's send buffer is full. A QueuePair then holds
   * new messages (in order) until whenWritable() resolves, instead of failing them.
   */
  readonly writable?: boolean;
  /** Resolves once the link can take more; rejects (PMRPC_ERR_LINK_CLOSED) if it closes first. */
  whenWritable?(): Promise<void>;
  /** Runs `fn` once when the link closes (with the cause, or undefined after close()). Returns its remover. */
  onClose?(fn: (err: Error | undefined) => void): () => void;
  /**
   * true: the chains sent cross a wire and the NIC decodes (and checks) them anew, so the verbs
   * layer does not mark them checked (validate.ts markChecked: one WeakSet entry per chain, for a
   * NIC in this process only). Absent or false: the NIC may be in this process.
   */
  readonly remote?: boolean;
  /**
   * The requests outstanding on this link are kept by the QueuePair that posts on it (optional):
   * the QP hands over its map once, at construction, and from then on registers each request
   * (before send) and retires it (its response, or the close) there alone — the link reads the
   * map (e.g. TcpLink, to answer the requests sent when the connection drops) and keeps none of
   * its own.
   */
  adoptRequests?(requests: ReadonlyMap<number, OutstandingRequest>): void;
}

/** A request outstanding on a link, as the link sees it: its chain, and whether the link took it (a message held for back-pressure is not sent yet). */
export interface OutstandingRequest {
  readonly wrs: readonly WorkRequest[];
  readonly sent: boolean;
}

/** A receive completion on the server: a SEND's payload placed in a posted buffer, or a WRITE_WITH_IMM's immediate. */
export interface RecvCompletion {
  qpn: number;
  /** The id given to postRecv. */
  recvId: number;
  op: 'send' | 'writeImm';
  /** Where the SEND's payload was placed (region offset) and how long it is; 0 for writeImm. */
  addr: number;
  byteLen: number;
  imm?: number;
}
