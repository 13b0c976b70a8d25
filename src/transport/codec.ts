/**
 * The wire codec: flush/ messages (plain data) ↔ protobuf frames (proto/pmrpc.proto), and the
 * length-delimited framing of a byte stream. protobufjs by reflection (the .proto is loaded once
 * at start-up).
 *
 * Every frame is checked on decode: a frame that protobuf cannot parse, that lacks a required
 * field, or that names an unknown operation is a PmrpcError PMRPC_ERR_BAD_FRAME; a length prefix
 * past the bound is PMRPC_ERR_FRAME_TOO_LARGE. Unknown fields are skipped, as protobuf does.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { PmrpcError } from '../../pmem/index.js';
import { fastDecode, fastEncodeFramed, fastFrameSize, fastWriteFrame } from './fastcodec.js';
import type {
  CasMode,
  ClientMessage,
  Completion,
  CompletionStatus,
  Loc,
  ServerMessage,
  WorkRequest,
  WrOp,
} from '../../flush/index.js';

export const BAD_FRAME = 'PMRPC_ERR_BAD_FRAME';
export const FRAME_TOO_LARGE = 'PMRPC_ERR_FRAME_TOO_LARGE';

/** The connection-setup protocol version this codec speaks (Hello.version / Welcome.version). */
export const PROTOCOL_VERSION = 1;
/** Bounds of the handshake's strings: a peer cannot make the other side hold megabytes of names. */
export const AUTH_TOKEN_CHARS_MAX = 1024;
export const CLIENT_NAME_CHARS_MAX = 256;
export const GOODBYE_MESSAGE_CHARS_MAX = 4096;
const CODE_PATTERN = /^PMRPC_ERR_[A-Z0-9_]{1,64}$/;

/** Client -> server, first frame of a connection. */
export interface HelloMessage {
  type: 'hello';
  version: number;
  /** '' when the client has none. */
  authToken: string;
  clientName: string;
  /** Largest frame the client accepts. */
  maxFrameBytes: number;
  /** Opaque application payload for the server's accept callback. */
  payload: Uint8Array;
}

/** Server -> client, the answer to an accepted Hello. */
export interface WelcomeMessage {
  type: 'welcome';
  version: number;
  qpn: number;
  /** Largest frame the server accepts. */
  maxFrameBytes: number;
  /** Opaque application payload chosen by the accept callback. */
  payload: Uint8Array;
}

/** Either side, just before it closes the connection: a PMRPC_ERR_ code and why. */
export interface GoodbyeMessage {
  type: 'goodbye';
  code: string;
  message: string;
}

export type ControlMessage = HelloMessage | WelcomeMessage | GoodbyeMessage;
/** Everything a frame can carry. */
export type WireMessage = ClientMessage | ServerMessage | ControlMessage;

/** Default bound on one frame: a request of many 64 KiB payloads fits; a bogus length does not. */
export const MAX_FRAME_BYTES_DEFAULT = 16 * 1024 * 1024;

function protoPath(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  for (const up of ['../..', '../../..']) {
    const p = join(here, up, 'proto', 'pmrpc.proto');
    if (existsSync(p)) return p;
  }
  throw new Error('pmrpc: proto/pmrpc.proto not found beside the package');
}

let frameType: protobuf.Type | undefined;
/** The schema's Frame type (every type reachable from it resolved). For decoder.ts. */
export function Frame(): protobuf.Type {
  if (frameType === undefined) {
    const root = protobuf.loadSync(protoPath());
    root.resolveAll();
    frameType = root.lookupType('pmrpc.wire.Frame');
  }
  return frameType;
}

const CAS_MODES: CasMode[] = ['eq', 'ne', 'lt', 'le', 'gt', 'ge'];
const STATUSES: CompletionStatus[] = ['ok', 'failed', 'skipped', 'error'];
const OPS = new Set<WrOp>(['write', 'writeImm', 'read', 'send', 'cas', 'faa', 'atomicWrite', 'flush', 'prismCas', 'allocate']);

export type Obj = Record<string, unknown>;

function bad(message: string): never {
  throw new PmrpcError(BAD_FRAME, message);
}

// ------------------------------------------------------------------ encode

function locOut(l: Loc): Obj {
  return 'scratch' in l ? { scratch: l.scratch } : { remote: { rkey: l.rkey, addr: l.addr } };
}

function opt(o: Obj, k: string, v: unknown): void {
  if (v !== undefined) o[k] = v;
}

function wrOut(wr: WorkRequest): Obj {
  const o: Obj = { conditional: wr.conditional === true, unsignaled: wr.unsignaled === true };
  opt(o, 'id', wr.id);
  opt(o, 'redirect', wr.redirect);
  switch (wr.op) {
    case 'write':
    case 'writeImm': {
      const w: Obj = { withImm: wr.op === 'writeImm', to: locOut(wr.to), indirect: wr.indirect === true, bounded: wr.bounded === true };
      opt(w, 'data', wr.data);
      if (wr.from) w.from = locOut(wr.from);
      opt(w, 'len', wr.len);
      opt(w, 'targetRkey', wr.targetRkey);
      opt(w, 'imm', wr.imm);
      o.write = w;
      break;
    }
    case 'read': {
      const r: Obj = { from: locOut(wr.from), len: wr.len, indirect: wr.indirect === true, bounded: wr.bounded === true };
      opt(r, 'targetRkey', wr.targetRkey);
      o.read = r;
      break;
    }
    case 'send':
      o.send = { data: wr.data, ...(wr.imm !== undefined ? { imm: wr.imm } : {}) };
      break;
    case 'cas':
      o.cas = { at: locOut(wr.at), compare: wr.compare, swap: wr.swap };
      break;
    case 'faa':
      o.faa = { at: locOut(wr.at), add: wr.add };
      break;
    case 'atomicWrite':
      o.atomicWrite = { at: locOut(wr.at), value: wr.value };
      break;
    case 'flush': {
      const f: Obj = { placement: wr.placement === 'persistent' ? 1 : 0, selectivity: wr.selectivity === 'mr' ? 1 : 0, rkey: wr.rkey };
      opt(f, 'addr', wr.addr);
      opt(f, 'addrScratch', wr.addrScratch);
      opt(f, 'count', wr.count);
      opt(f, 'stride', wr.stride);
      opt(f, 'len', wr.len);
      o.flush = f;
      break;
    }
    case 'prismCas': {
      const c: Obj = { mode: CAS_MODES.indexOf(wr.mode), at: locOut(wr.at), indirect: wr.indirect === true, len: wr.len };
      opt(c, 'targetRkey', wr.targetRkey);
      opt(c, 'data', wr.data);
      if (wr.from) c.from = locOut(wr.from);
      opt(c, 'compareMask', wr.compareMask);
      opt(c, 'swapMask', wr.swapMask);
      o.prismCas = c;
      break;
    }
    case 'allocate': {
      const a: Obj = { rkey: wr.rkey, sizeBytes: wr.sizeBytes };
      opt(a, 'data', wr.data);
      if (wr.from) a.from = locOut(wr.from);
      opt(a, 'len', wr.len);
      o.allocate = a;
      break;
    }
  }
  return o;
}

function completionOut(c: Completion): Obj {
  const o: Obj = { id: c.id, op: c.op, status: STATUSES.indexOf(c.status) };
  opt(o, 'code', c.code);
  opt(o, 'message', c.message);
  opt(o, 'data', c.data);
  opt(o, 'swapped', c.swapped);
  return o;
}

/**
 * Encodes one message as a protobuf Frame (no length prefix): the fast path (fastcodec.ts) for
 * Request, Response and Notify, the same bytes as the reference below; the reference otherwise.
 */
export function encodeMessage(msg: WireMessage): Uint8Array {
  const f = fastEncodeFramed(msg);
  return f !== undefined ? f.subarray(4) : encodeMessageReference(msg);
}

/** One message as a length-prefixed frame, ready for the socket (one buffer, no second copy). */
export function encodeFrame(msg: WireMessage): Uint8Array {
  return fastEncodeFramed(msg) ?? frameBytes(encodeMessageReference(msg));
}

/** The message sizeFrame sized through the reference encoder, and its frame (for writeSizedFrame). */
let refSized: WireMessage | undefined;
let refFramed: Uint8Array | undefined;

/**
 * The bytes of `msg`'s length-prefixed frame (encodeFrame's length) without allocating it: a writer
 * that gathers frames in a buffer of its own (the server's per-connection output) sizes a frame,
 * makes room, then writes it there with writeSizedFrame(msg, …) — before encoding anything else.
 */
export function sizeFrame(msg: WireMessage): number {
  refSized = undefined;
  refFramed = undefined;
  const n = fastFrameSize(msg);
  if (n >= 0) return n;
  const f = frameBytes(encodeMessageReference(msg));
  refSized = msg;
  refFramed = f;
  return f.length;
}

/** Writes the frame sizeFrame(msg) just sized into dst at `at` (the same bytes as encodeFrame(msg)). */
export function writeSizedFrame(msg: WireMessage, dst: Uint8Array, at: number): void {
  if (refSized === msg && refFramed !== undefined) {
    dst.set(refFramed, at);
    refSized = undefined;
    refFramed = undefined;
    return;
  }
  fastWriteFrame(msg, dst, at);
}

/** The reference encoder: protobufjs by reflection over proto/pmrpc.proto. */
export function encodeMessageReference(msg: WireMessage): Uint8Array {
  let body: Obj;
  switch (msg.type) {
    case 'hello':
      body = { hello: { version: msg.version, authToken: msg.authToken, clientName: msg.clientName, maxFrameBytes: msg.maxFrameBytes, payload: msg.payload } };
      break;
    case 'welcome':
      body = { welcome: { version: msg.version, qpn: msg.qpn, maxFrameBytes: msg.maxFrameBytes, payload: msg.payload } };
      break;
    case 'goodbye':
      // Truncated rather than refused: a Goodbye is sent on the way out and must not fail.
      body = { goodbye: { code: msg.code, message: msg.message.slice(0, GOODBYE_MESSAGE_CHARS_MAX) } };
      break;
    case 'request':
      body = { request: { qpn: msg.qpn, seq: msg.seq, wrs: msg.wrs.map(wrOut) } };
      break;
    case 'response':
      body = { response: { qpn: msg.qpn, seq: msg.seq, completions: msg.completions.map(completionOut) } };
      break;
    case 'notify':
      body = { notify: { qpn: msg.qpn, data: msg.data, ...(msg.imm !== undefined ? { imm: msg.imm } : {}) } };
      break;
  }
  const F = Frame();
  return F.encode(F.fromObject(body)).finish();
}

// ------------------------------------------------------------------ decode

function num(v: unknown, what: string): number {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  return bad(`${what} is missing or not a safe integer`);
}

function maybeNum(v: unknown, what: string): number | undefined {
  return v === undefined || v === null ? undefined : num(v, what);
}

/** A proto3 `bytes` field: absent on the wire means empty. */
function bytes(v: unknown): Uint8Array {
  return maybeBytes(v) ?? new Uint8Array(0);
}

/** protobufjs hands Node Buffers; pass plain Uint8Array views (no copy) upward. */
function maybeBytes(v: unknown): Uint8Array | undefined {
  return v instanceof Uint8Array ? new Uint8Array(v.buffer, v.byteOffset, v.byteLength) : undefined;
}

function locIn(v: unknown, what: string): Loc {
  const l = v as Obj | undefined;
  if (!l) return bad(`${what} is missing`);
  if (l.remote) {
    const r = l.remote as Obj;
    return { rkey: num(r.rkey ?? 0, `${what}.rkey`), addr: num(r.addr ?? 0, `${what}.addr`) };
  }
  if (l.scratch !== undefined && l.scratch !== null) return { scratch: num(l.scratch, `${what}.scratch`) };
  return bad(`${what} names neither remote memory nor scratch`);
}

function maybeLoc(v: unknown, what: string): Loc | undefined {
  return v ? locIn(v, what) : undefined;
}

/** Copies only defined values, so decoded objects carry no `undefined` keys. */
function defined<T extends Obj>(o: T): T {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o;
}

/** One decoded WorkRequest (protobufjs toObject form) as flush/'s WorkRequest. For decoder.ts. */
export function wrIn(o: Obj, i: number): WorkRequest {
  const flags = defined({ id: maybeNum(o.id, `wr ${i} id`), conditional: o.conditional === true ? true : undefined, redirect: maybeNum(o.redirect, `wr ${i} redirect`), unsignaled: o.unsignaled === true ? true : undefined });
  const w = `wr ${i}`;
  switch (o.op) {
    case 'write': {
      const x = o.write as Obj;
      return defined({
        ...flags,
        op: x.withImm ? 'writeImm' : 'write',
        to: locIn(x.to, `${w} to`),
        data: maybeBytes(x.data),
        from: maybeLoc(x.from, `${w} from`),
        len: maybeNum(x.len, `${w} len`),
        indirect: x.indirect ? true : undefined,
        bounded: x.bounded ? true : undefined,
        targetRkey: maybeNum(x.targetRkey, `${w} targetRkey`),
        imm: maybeNum(x.imm, `${w} imm`),
      }) as WorkRequest;
    }
    case 'read': {
      const x = o.read as Obj;
      return defined({ ...flags, op: 'read', from: locIn(x.from, `${w} from`), len: num(x.len ?? 0, `${w} len`), indirect: x.indirect ? true : undefined, bounded: x.bounded ? true : undefined, targetRkey: maybeNum(x.targetRkey, `${w} targetRkey`) }) as WorkRequest;
    }
    case 'send': {
      const x = o.send as Obj;
      return defined({ ...flags, op: 'send', data: maybeBytes(x.data) ?? new Uint8Array(0), imm: maybeNum(x.imm, `${w} imm`) }) as WorkRequest;
    }
    case 'cas': {
      const x = o.cas as Obj;
      return { ...flags, op: 'cas', at: locIn(x.at, `${w} at`), compare: bytes(x.compare), swap: bytes(x.swap) };
    }
    case 'faa': {
      const x = o.faa as Obj;
      return { ...flags, op: 'faa', at: locIn(x.at, `${w} at`), add: bytes(x.add) };
    }
    case 'atomicWrite': {
      const x = o.atomicWrite as Obj;
      return { ...flags, op: 'atomicWrite', at: locIn(x.at, `${w} at`), value: bytes(x.value) };
    }
    case 'flush': {
      const x = o.flush as Obj;
      return defined({
        ...flags,
        op: 'flush',
        placement: x.placement === 1 ? 'persistent' : 'global',
        selectivity: x.selectivity === 1 ? 'mr' : 'range',
        rkey: num(x.rkey ?? 0, `${w} rkey`),
        addr: maybeNum(x.addr, `${w} addr`),
        len: maybeNum(x.len, `${w} len`),
        addrScratch: maybeNum(x.addrScratch, `${w} addrScratch`),
        count: maybeNum(x.count, `${w} count`),
        stride: maybeNum(x.stride, `${w} stride`),
      }) as WorkRequest;
    }
    case 'prismCas': {
      const x = o.prismCas as Obj;
      const mode = CAS_MODES[num(x.mode ?? 0, `${w} mode`)];
      if (mode === undefined) return bad(`${w}: unknown CAS mode ${String(x.mode)}`);
      return defined({
        ...flags,
        op: 'prismCas',
        mode,
        at: locIn(x.at, `${w} at`),
        indirect: x.indirect ? true : undefined,
        targetRkey: maybeNum(x.targetRkey, `${w} targetRkey`),
        data: maybeBytes(x.data),
        from: maybeLoc(x.from, `${w} from`),
        len: num(x.len ?? 0, `${w} len`),
        compareMask: maybeBytes(x.compareMask),
        swapMask: maybeBytes(x.swapMask),
      }) as WorkRequest;
    }
    case 'allocate': {
      const x = o.allocate as Obj;
      return defined({ ...flags, op: 'allocate', rkey: num(x.rkey ?? 0, `${w} rkey`), sizeBytes: num(x.sizeBytes ?? 0, `${w} sizeBytes`), data: maybeBytes(x.data), from: maybeLoc(x.from, `${w} from`), len: maybeNum(x.len, `${w} len`) }) as WorkRequest;
    }
    default:
      return bad(`${w} carries no known operation`);
  }
}

function completionIn(o: Obj, i: number): Completion {
  const op = o.op as WrOp;
  if (!OPS.has(op)) bad(`completion ${i}: unknown op ${String(o.op)}`);
  const status = STATUSES[num(o.status ?? 0, `completion ${i} status`)];
  if (status === undefined) bad(`completion ${i}: unknown status ${String(o.status)}`);
  return defined({
    id: num(o.id ?? 0, `completion ${i} id`),
    op,
    status: status!,
    code: typeof o.code === 'string' ? o.code : undefined,
    message: typeof o.message === 'string' ? o.message : undefined,
    data: maybeBytes(o.data),
    swapped: typeof o.swapped === 'boolean' ? o.swapped : undefined,
  });
}

function str(v: unknown, what: string, maxChars: number): string {
  const x = v === undefined || v === null ? '' : v;
  if (typeof x !== 'string') return bad(`${what} is not a string`);
  if (x.length > maxChars) return bad(`${what} is longer than ${maxChars} characters`);
  return x;
}

/**
 * Decodes one Frame; anything malformed is PMRPC_ERR_BAD_FRAME. A canonical Request, Response or
 * Notify takes the fast path (fastcodec.ts; the same message as the reference), anything else —
 * every malformed frame included — the reference below.
 */
export function decodeMessage(frame: Uint8Array): WireMessage {
  return fastDecode(frame) ?? decodeMessageReference(frame);
}

/** The reference decoder: protobufjs by reflection, then the checks of this module. */
export function decodeMessageReference(frame: Uint8Array): WireMessage {
  const F = Frame();
  let o: Obj;
  try {
    o = F.toObject(F.decode(frame), { longs: Number, oneofs: true }) as Obj;
  } catch (e) {
    throw new PmrpcError(BAD_FRAME, `frame of ${frame.length} bytes does not parse: ${(e as Error).message}`, { cause: e });
  }
  switch (o.msg) {
    case 'request': {
      const r = o.request as Obj;
      return { type: 'request', qpn: num(r.qpn ?? 0, 'request qpn'), seq: num(r.seq ?? 0, 'request seq'), wrs: ((r.wrs as Obj[] | undefined) ?? []).map(wrIn) };
    }
    case 'response': {
      const r = o.response as Obj;
      return { type: 'response', qpn: num(r.qpn ?? 0, 'response qpn'), seq: num(r.seq ?? 0, 'response seq'), completions: ((r.completions as Obj[] | undefined) ?? []).map(completionIn) };
    }
    case 'notify': {
      const r = o.notify as Obj;
      return defined({ type: 'notify', qpn: num(r.qpn ?? 0, 'notify qpn'), data: maybeBytes(r.data) ?? new Uint8Array(0), imm: maybeNum(r.imm, 'notify imm') }) as ServerMessage;
    }
    case 'hello': {
      const r = o.hello as Obj;
      return {
        type: 'hello',
        version: num(r.version ?? 0, 'hello version'),
        authToken: str(r.authToken, 'hello authToken', AUTH_TOKEN_CHARS_MAX),
        clientName: str(r.clientName, 'hello clientName', CLIENT_NAME_CHARS_MAX),
        maxFrameBytes: num(r.maxFrameBytes ?? 0, 'hello maxFrameBytes'),
        payload: bytes(r.payload),
      };
    }
    case 'welcome': {
      const r = o.welcome as Obj;
      return { type: 'welcome', version: num(r.version ?? 0, 'welcome version'), qpn: num(r.qpn ?? 0, 'welcome qpn'), maxFrameBytes: num(r.maxFrameBytes ?? 0, 'welcome maxFrameBytes'), payload: bytes(r.payload) };
    }
    case 'goodbye': {
      const r = o.goodbye as Obj;
      const code = str(r.code, 'goodbye code', 80);
      // The code reaches the peer's error objects: only well-formed codes are believed.
      if (!CODE_PATTERN.test(code)) return bad(`goodbye code ${JSON.stringify(code.slice(0, 80))} is not a PMRPC_ERR_ code`);
      return { type: 'goodbye', code, message: str(r.message, 'goodbye message', GOODBYE_MESSAGE_CHARS_MAX) };
    }
    default:
      return bad('frame carries no message');
  }
}

// ------------------------------------------------------------------ framing

/** A 4-byte little-endian length prefix, then the frame. */
export function frameBytes(frame: Uint8Array): Uint8Array {
  const out = new Uint8Array(4 + frame.length);
  new DataView(out.buffer).setUint32(0, frame.length, true);
  out.set(frame, 4);
  return out;
}

/**
 * Splits a byte stream into frames. A length past `maxFrameBytes` is PMRPC_ERR_FRAME_TOO_LARGE
 * (the stream cannot be resynchronised: the connection must close). Bounded memory: at most one
 * partial frame is buffered. A frame that arrives whole inside one chunk is a view of it (no copy);
 * one that spans chunks is copied into its own buffer piece by piece as the chunks arrive, so a
 * 16 MiB frame costs sixteen MiB of copying spread over its reads, never one 16 MiB copy at once.
 */
export class FrameReader {
  /** The bound on the next frame's length (a server raises it once a connection is trusted). */
  maxFrameBytes: number;
  /** Unconsumed bytes, in order (used while no frame is being assembled). */
  #chunks: Uint8Array[] = [];
  /** Bytes of #chunks[0] already consumed (frames are views into it: no subarray of the rest per frame). */
  #off = 0;
  #chunkBytes = 0;
  /** The frame being assembled across chunks, and how much of it has arrived. */
  #partial: Uint8Array | undefined;
  #filled = 0;

  constructor(maxFrameBytes = MAX_FRAME_BYTES_DEFAULT) {
    if (!Number.isSafeInteger(maxFrameBytes) || maxFrameBytes < 1) throw new RangeError(`maxFrameBytes must be a positive integer, got ${maxFrameBytes}`);
    this.maxFrameBytes = maxFrameBytes;
  }

  /** Bytes buffered toward the next frames. */
  get buffered(): number {
    return this.#chunkBytes + this.#filled;
  }

  /** Feeds bytes; returns every complete frame they finish. */
  push(chunk: Uint8Array): Uint8Array[] {
    this.append(chunk);
    const frames: Uint8Array[] = [];
    for (let f = this.next(); f !== undefined; f = this.next()) frames.push(f);
    return frames;
  }

  /** Feeds bytes without splitting them (next() takes the frames one at a time). */
  append(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    if (this.#partial !== undefined) {
      const n = Math.min(chunk.length, this.#partial.length - this.#filled);
      this.#partial.set(chunk.subarray(0, n), this.#filled);
      this.#filled += n;
      if (n === chunk.length) return;
      chunk = chunk.subarray(n);
    }
    this.#chunks.push(chunk);
    this.#chunkBytes += chunk.length;
  }

  /**
   * The next complete frame, or undefined if the buffered bytes do not finish one. A length prefix
   * past maxFrameBytes throws PMRPC_ERR_FRAME_TOO_LARGE as soon as its 4 bytes are in.
   */
  next(): Uint8Array | undefined {
    if (this.#partial !== undefined) {
      if (this.#filled < this.#partial.length) return undefined;
      const f = this.#partial;
      this.#partial = undefined;
      this.#filled = 0;
      return f;
    }
    if (this.#chunkBytes < 4) return undefined;
    let head = this.#chunks[0]!;
    let o = this.#off;
    if (head.length - o < 4) {
      // A split prefix: a few bytes.
      this.#chunks[0] = head.subarray(o);
      this.#chunks = [concat(this.#chunks)];
      this.#off = o = 0;
      head = this.#chunks[0]!;
    }
    const len = (head[o]! | (head[o + 1]! << 8) | (head[o + 2]! << 16) | (head[o + 3]! << 24)) >>> 0;
    if (len > this.maxFrameBytes) throw new PmrpcError(FRAME_TOO_LARGE, `frame length ${len} exceeds the bound of ${this.maxFrameBytes} bytes`);
    if (head.length - o >= 4 + len) {
      // The whole frame is inside the first chunk: a view of it.
      const f = head.subarray(o + 4, o + 4 + len);
      o += 4 + len;
      if (o === head.length) {
        this.#chunks.shift();
        o = 0;
      }
      this.#off = o;
      this.#chunkBytes -= 4 + len;
      return f;
    }
    // The frame spans chunks: assemble it in its own buffer, from what is here and what comes.
    const rest = this.#chunks;
    this.#chunks = [];
    this.#off = 0;
    this.#chunkBytes = 0;
    this.#partial = new Uint8Array(len);
    this.#filled = 0;
    this.append(rest[0]!.subarray(o + 4));
    for (let i = 1; i < rest.length; i++) this.append(rest[i]!);
    return this.next();
  }
}

function concat(chunks: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const c of chunks) n += c.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const c of chunks) {
    out.set(c, o);
    o += c.length;
  }
  return out;
}
