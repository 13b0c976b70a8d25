/**
 * The durable RPC layer's own messages on top of the verbs: server notifications (ACK, RESULT)
 * and the strategies' request shapes. A notification is one `ServerQp.notify` (a WRITE or SEND
 * from the server CPU to the client; a 'completion' crash point).
 */
import { invariant, PmrpcError, type ErrorCode } from '../../pmem/index.js';

/** imm of an RPC ACK: data = u64 sequence durable up to (cumulative). */
export const RPC_ACK_IMM = 0x52504341; // 'RPCA'
/** imm of an RPC RESULT: data = u64 seq, u64 applied sequence (the credit), u32 status, u32 length, bytes. */
export const RPC_RESULT_IMM = 0x52504352; // 'RPCR'
/**
 * imm of packed RESULTs: data = RESULTs back to back (each as under RPC_RESULT_IMM, its own length
 * word: no padding). Sent only to a client whose Hello said it reads them (AcceptRequest.packedResults):
 * one notify for a pass's replies to one connection instead of one per request.
 */
export const RPC_RESULTS_IMM = 0x52504350; // 'RPCP'

/**
 * Most bytes of a pack's data: with its notify frame's few bytes (length prefix, tags, QP number,
 * imm) a pack stays under the smallest frame bound a client may declare (1,024 bytes: the
 * transport's MIN_FRAME_BYTES), so packing never makes a frame the client refuses. A RESULT that
 * would pass it starts the next pack; one larger than this alone goes as a single RESULT, as it
 * did before packing.
 */
export const RESULT_PACK_BYTES_MAX = 960;

export const RESULT_HEADER_BYTES = 24;
export const STATUS_OK = 0;
export const STATUS_ERROR = 1;

export interface ResultMessage {
  seq: number;
  appliedSeq: number;
  status: number;
  bytes: Uint8Array;
}

const TWO_32 = 0x1_0000_0000;

/** A sequence (a safe integer) as a little-endian u64: two u32 stores, no BigInt per message. */
function setU64(dv: DataView, at: number, v: number): void {
  dv.setUint32(at, v >>> 0, true);
  dv.setUint32(at + 4, Math.floor(v / TWO_32), true);
}

/** Little-endian u32 read from bytes (the decoders: no DataView per message). */
function u32At(b: Uint8Array, at: number): number {
  return (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0;
}

function u64At(b: Uint8Array, at: number): number {
  return u32At(b, at + 4) * TWO_32 + u32At(b, at);
}

export function encodeAck(seq: number): Uint8Array {
  // A sequence is a safe integer ≥ 1: a negative or fractional one would encode as a huge u64 the client takes as durable.
  invariant(Number.isSafeInteger(seq) && seq >= 1, () => `ACK up to sequence ${seq}`);
  const b = new Uint8Array(8);
  setU64(new DataView(b.buffer), 0, seq);
  return b;
}

export function decodeAck(data: Uint8Array): number | undefined {
  if (data.length !== 8) return undefined;
  return u64At(data, 0);
}

/** Little-endian u32 store into bytes (the encoders of per-request messages: no DataView per message). */
function putU32(b: Uint8Array, at: number, v: number): void {
  b[at] = v & 0xff;
  b[at + 1] = (v >>> 8) & 0xff;
  b[at + 2] = (v >>> 16) & 0xff;
  b[at + 3] = (v >>> 24) & 0xff;
}

export function encodeResult(m: ResultMessage): Uint8Array {
  return encodeResultOf(m.seq, m.appliedSeq, m.status, m.bytes);
}

/** encodeResult without the message object (the server encodes one per request). */
export function encodeResultOf(seq: number, appliedSeq: number, status: number, bytes: Uint8Array): Uint8Array {
  invariant(Number.isSafeInteger(seq) && seq >= 1, () => `RESULT of sequence ${seq}`);
  // The credit: -1 would encode as 2^64 - 1, and the client would write over every entry of its ring not yet applied.
  invariant(Number.isSafeInteger(appliedSeq) && appliedSeq >= 0, () => `RESULT of sequence ${seq} with credit ${appliedSeq}`);
  const b = new Uint8Array(RESULT_HEADER_BYTES + bytes.length);
  putU32(b, 0, seq >>> 0);
  putU32(b, 4, Math.floor(seq / TWO_32));
  putU32(b, 8, appliedSeq >>> 0);
  putU32(b, 12, Math.floor(appliedSeq / TWO_32));
  putU32(b, 16, status);
  putU32(b, 20, bytes.length);
  if (bytes.length > 0) b.set(bytes, RESULT_HEADER_BYTES);
  return b;
}

export function decodeResult(data: Uint8Array): ResultMessage | undefined {
  if (data.length < RESULT_HEADER_BYTES) return undefined;
  const len = u32At(data, 20);
  if (RESULT_HEADER_BYTES + len !== data.length) return undefined;
  return {
    seq: u64At(data, 0),
    appliedSeq: u64At(data, 8),
    status: u32At(data, 16),
    bytes: data.slice(RESULT_HEADER_BYTES),
  };
}

/**
 * The RESULTs of a packed notify (RPC_RESULTS_IMM), one by one to `each`, in order — all or none:
 * the whole frame is checked first (every header whole, every length inside the frame, the last
 * ending where the frame does), so a malformed one delivers nothing and returns false.
 */
export function decodeResults(data: Uint8Array, each: (seq: number, appliedSeq: number, status: number, bytes: Uint8Array) => void): boolean {
  let p = 0;
  while (p < data.length) {
    if (p + RESULT_HEADER_BYTES > data.length) return false;
    p += RESULT_HEADER_BYTES + u32At(data, p + 20);
  }
  if (p !== data.length || p === 0) return false;
  for (p = 0; p < data.length; ) {
    const len = u32At(data, p + 20);
    const start = p + RESULT_HEADER_BYTES;
    each(u64At(data, p), u64At(data, p + 8), u32At(data, p + 16), data.slice(start, start + len));
    p = start + len;
  }
  return true;
}

/**
 * A run of RESULTs to one client gathered into one packed notify (RPC_RESULTS_IMM): add() each,
 * take() the frame's bytes (one buffer, written once) and start again. The arrays are kept between
 * runs (no object per RESULT).
 */
export class ResultPack {
  #seq: number[] = [];
  #applied: number[] = [];
  #status: number[] = [];
  #bytes: Uint8Array[] = [];
  #n = 0;
  #total = 0;

  get size(): number {
    return this.#n;
  }

  /** Bytes of the frame take() would return. */
  get bytes(): number {
    return this.#total;
  }

  add(seq: number, appliedSeq: number, status: number, bytes: Uint8Array): void {
    invariant(Number.isSafeInteger(seq) && seq >= 1, () => `RESULT of sequence ${seq}`);
    invariant(Number.isSafeInteger(appliedSeq) && appliedSeq >= 0, () => `RESULT of sequence ${seq} with credit ${appliedSeq}`);
    const i = this.#n++;
    this.#seq[i] = seq;
    this.#applied[i] = appliedSeq;
    this.#status[i] = status;
    this.#bytes[i] = bytes;
    this.#total += RESULT_HEADER_BYTES + bytes.length;
  }

  take(): Uint8Array {
    const b = new Uint8Array(this.#total);
    let p = 0;
    for (let i = 0; i < this.#n; i++) {
      const seq = this.#seq[i]!;
      const applied = this.#applied[i]!;
      const bytes = this.#bytes[i]!;
      putU32(b, p, seq >>> 0);
      putU32(b, p + 4, Math.floor(seq / TWO_32));
      putU32(b, p + 8, applied >>> 0);
      putU32(b, p + 12, Math.floor(applied / TWO_32));
      putU32(b, p + 16, this.#status[i]!);
      putU32(b, p + 20, bytes.length);
      p += RESULT_HEADER_BYTES;
      if (bytes.length > 64) b.set(bytes, p);
      else for (let k = 0; k < bytes.length; k++) b[p + k] = bytes[k]!;
      p += bytes.length;
      this.#bytes[i] = EMPTY; // (the results are not kept past the frame)
    }
    this.#n = 0;
    this.#total = 0;
    return b;
  }
}

const EMPTY = new Uint8Array(0);

/**
 * What an effect record keeps as a request's result (keepResults): a status byte then the
 * handler's result, or the error's "CODE: message" text.
 */
export function encodeKept(status: number, bytes: Uint8Array): Uint8Array {
  // The status byte goes into the effect record in PM: after a restart decodeKept reads any other value as an error.
  invariant(status === STATUS_OK || status === STATUS_ERROR, () => `a kept result with status ${status}`);
  const b = new Uint8Array(1 + bytes.length);
  b[0] = status;
  b.set(bytes, 1);
  return b;
}

export function decodeKept(kept: Uint8Array): { status: number; bytes: Uint8Array } {
  return { status: kept[0] ?? STATUS_ERROR, bytes: kept.slice(1) };
}

/** An error result's bytes: "CODE: message", UTF-8, cut to `maxBytes`. */
export function encodeError(code: string, message: string, maxBytes: number): Uint8Array {
  const full = new TextEncoder().encode(`${code}\n${message}`);
  return full.subarray(0, Math.max(0, maxBytes));
}

export function decodeError(bytes: Uint8Array): PmrpcError {
  const text = new TextDecoder().decode(bytes);
  const nl = text.indexOf('\n');
  const code = nl > 0 ? text.slice(0, nl) : 'PMRPC_ERR_HANDLER_FAILED';
  const message = nl > 0 ? text.slice(nl + 1) : text;
  return new PmrpcError(code.startsWith('PMRPC_ERR_') ? (code as ErrorCode) : 'PMRPC_ERR_HANDLER_FAILED', message);
}
