/**
 * The durable RPC layer's own messages on top of the verbs: server notifications (ACK, RESULT)
 * and the strategies' request shapes. A notification is one `ServerQp.notify` (a WRITE or SEND
 * from the server CPU to the client; a 'completion' crash point).
 */
import { PmrpcError, type ErrorCode } from '../../pmem/index.js';

/** imm of an RPC ACK: data = u64 sequence durable up to (cumulative). */
export const RPC_ACK_IMM = 0x52504341; // 'RPCA'
/** imm of an RPC RESULT: data = u64 seq, u64 applied sequence (the credit), u32 status, u32 length, bytes. */
export const RPC_RESULT_IMM = 0x52504352; // 'RPCR'

export const RESULT_HEADER_BYTES = 24;
export const STATUS_OK = 0;
export const STATUS_ERROR = 1;

export interface ResultMessage {
  seq: number;
  appliedSeq: number;
  status: number;
  bytes: Uint8Array;
}

export function encodeAck(seq: number): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt(seq), true);
  return b;
}

export function decodeAck(data: Uint8Array): number | undefined {
  if (data.length !== 8) return undefined;
  return Number(new DataView(data.buffer, data.byteOffset, 8).getBigUint64(0, true));
}

export function encodeResult(m: ResultMessage): Uint8Array {
  const b = new Uint8Array(RESULT_HEADER_BYTES + m.bytes.length);
  const dv = new DataView(b.buffer);
  dv.setBigUint64(0, BigInt(m.seq), true);
  dv.setBigUint64(8, BigInt(m.appliedSeq), true);
  dv.setUint32(16, m.status, true);
  dv.setUint32(20, m.bytes.length, true);
  b.set(m.bytes, RESULT_HEADER_BYTES);
  return b;
}

export function decodeResult(data: Uint8Array): ResultMessage | undefined {
  if (data.length < RESULT_HEADER_BYTES) return undefined;
  const dv = new DataView(data.buffer, data.byteOffset, data.length);
  const len = dv.getUint32(20, true);
  if (RESULT_HEADER_BYTES + len !== data.length) return undefined;
  return {
    seq: Number(dv.getBigUint64(0, true)),
    appliedSeq: Number(dv.getBigUint64(8, true)),
    status: dv.getUint32(16, true),
    bytes: data.slice(RESULT_HEADER_BYTES),
  };
}

/**
 * What an effect record keeps as a request's result (keepResults): a status byte then the
 * handler's result, or the error's "CODE: message" text.
 */
export function encodeKept(status: number, bytes: Uint8Array): Uint8Array {
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
