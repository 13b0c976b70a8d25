/**
 * The hand-written fast path of the wire codec (issue 16) for the per-request frames: Request,
 * Response and Notify, and the work requests of a Request. proto/pmrpc.proto stays the contract and
 * protobufjs (codec.ts) the reference: the fast path produces exactly protobufjs's bytes, and decodes
 * exactly what the reference decodes — or declines (returns undefined) and the caller uses the
 * reference. It declines whatever it was not written for: values outside their field's domain
 * (a uint32 that is not an integer in [0, 2³²), non-ASCII strings, unknown CAS modes …), and on
 * decode any frame that is not in the canonical form protobufjs writes (unknown or repeated fields,
 * an unexpected wire type, a varint longer than its type needs, a length past its message). So a
 * malformed frame always reaches the reference decoder, which gives its coded error
 * (PMRPC_ERR_BAD_FRAME); test/transport/fastcodec.test.ts checks both directions with fast-check.
 */
import type { ClientMessage, Completion, CompletionStatus, Loc, ServerMessage, WorkRequest, WrOp } from '../../flush/index.js';

/** What the fast path decodes; it is handed any frame's message (codec.ts WireMessage) to encode. */
type WireMessageFast = ClientMessage | ServerMessage;
type Encodable = WireMessageFast | { type: 'hello' | 'welcome' | 'goodbye' };

/** Tests only: `enabled = false` sends everything through the reference codec (to compare both). */
export const FAST_CODEC = { enabled: true };

// ------------------------------------------------------------------ encode

/** Sizes of the nested messages, in pre-order, from the sizing pass to the writing pass. */
/**
 * The sizing pass's nested sizes, sizes[0, sizesLen): kept between frames and refilled from 0
 * (an array's `length = 0` drops its backing store, which the next push allocates again: garbage
 * per frame encoded).
 */
const sizes: number[] = [];
let sizesLen = 0;
let sizeAt = 0;
let buf: Uint8Array = new Uint8Array(0);
let pos = 0;

function vlen(v: number): number {
  if (v < 0x80) return 1;
  if (v < 0x4000) return 2;
  if (v < 0x200000) return 3;
  if (v < 0x10000000) return 4;
  if (v < 0x800000000) return 5;
  if (v < 0x40000000000) return 6;
  if (v < 0x2000000000000) return 7;
  return 8;
}

/** Writes a non-negative safe integer as a varint. */
function varint(v: number): void {
  if (v <= 0x7fffffff) {
    while (v > 0x7f) {
      buf[pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    buf[pos++] = v;
    return;
  }
  while (v >= 0x80) {
    buf[pos++] = (v % 0x80) | 0x80;
    v = Math.floor(v / 0x80);
  }
  buf[pos++] = v;
}

function u32(v: unknown): v is number {
  return typeof v === 'number' && v >>> 0 === v;
}

function u64(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/** A string the fast path writes (and reads): ASCII only, so its UTF-8 is its char codes. */
function ascii(s: unknown): s is string {
  if (typeof s !== 'string') return false;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

/** Thrown by a sizing function to decline; never escapes this module. */
const DECLINE = Symbol('decline');
function decline(): never {
  throw DECLINE;
}

/** A length-delimited field: tag + length + body. */
function ldLen(bodyLen: number): number {
  return 1 + vlen(bodyLen) + bodyLen;
}

/** The body of a Loc (pushes the size of its Remote). */
function sizeLoc(l: Loc): number {
  if ('scratch' in l) {
    if (!u32(l.scratch)) decline();
    return 1 + vlen(l.scratch);
  }
  if (!u32(l.rkey) || !u64(l.addr)) decline();
  const r = (l.rkey !== 0 ? 1 + vlen(l.rkey) : 0) + (l.addr !== 0 ? 1 + vlen(l.addr) : 0);
  sizes[sizesLen++] = r;
  return ldLen(r);
}

function writeLoc(tag: number, l: Loc): void {
  buf[pos++] = tag;
  if ('scratch' in l) {
    // Loc { scratch = 2 }
    const n = 1 + vlen(l.scratch);
    varint(n);
    buf[pos++] = 0x10;
    varint(l.scratch);
  } else {
    const r = sizes[sizeAt++]!;
    varint(1 + vlen(r) + r);
    buf[pos++] = 0x0a;
    varint(r);
    if (l.rkey !== 0) {
      buf[pos++] = 0x08;
      varint(l.rkey);
    }
    if (l.addr !== 0) {
      buf[pos++] = 0x10;
      varint(l.addr);
    }
  }
}

function optU32(v: unknown): number {
  if (v === undefined || v === null) return 0;
  if (!u32(v)) decline();
  return 1 + vlen(v);
}

function optBytes(v: unknown): number {
  if (v === undefined || v === null) return 0;
  if (!(v instanceof Uint8Array)) decline();
  return ldLen(v.length);
}

function reqBytes(v: unknown): number {
  if (!(v instanceof Uint8Array)) decline();
  return v.length === 0 ? 0 : ldLen(v.length);
}

function writeBytes(tag: number, v: Uint8Array): void {
  buf[pos++] = tag;
  varint(v.length);
  buf.set(v, pos);
  pos += v.length;
}

function writeU32(tag: number, v: number): void {
  buf[pos++] = tag;
  varint(v);
}

/** Size of one op message body (Write, Read, …) of a work request; pushes nested sizes. */
function sizeOp(wr: WorkRequest): number {
  const mark = sizesLen++;
  sizes[mark] = 0;
  let n = 0;
  switch (wr.op) {
    case 'write':
    case 'writeImm':
      if (wr.op === 'writeImm') n += 2;
      n += locField(wr.to);
      n += optBytes(wr.data);
      if (wr.from) n += locField(wr.from);
      n += optU32(wr.len);
      if (wr.indirect === true) n += 2;
      if (wr.bounded === true) n += 2;
      n += optU32(wr.targetRkey);
      n += optU32(wr.imm);
      break;
    case 'read':
      n += locField(wr.from);
      if (!u32(wr.len)) decline();
      if (wr.len !== 0) n += 1 + vlen(wr.len);
      if (wr.indirect === true) n += 2;
      if (wr.bounded === true) n += 2;
      n += optU32(wr.targetRkey);
      break;
    case 'send':
      n += reqBytes(wr.data);
      n += optU32(wr.imm);
      break;
    case 'cas':
      n += locField(wr.at) + reqBytes(wr.compare) + reqBytes(wr.swap);
      break;
    case 'faa':
      n += locField(wr.at) + reqBytes(wr.add);
      break;
    case 'atomicWrite':
      n += locField(wr.at) + reqBytes(wr.value);
      break;
    case 'flush':
      if (wr.placement === 'persistent') n += 2;
      if (wr.selectivity === 'mr') n += 2;
      if (!u32(wr.rkey)) decline();
      if (wr.rkey !== 0) n += 1 + vlen(wr.rkey);
      if (wr.addr !== undefined && wr.addr !== null) {
        if (!u64(wr.addr)) decline();
        n += 1 + vlen(wr.addr);
      }
      n += optU32(wr.len);
      n += optU32(wr.addrScratch);
      n += optU32(wr.count);
      n += optU32(wr.stride);
      break;
    default:
      decline(); // prismCas, allocate: the reference codec
  }
  sizes[mark] = n;
  return n;
}

/** A Loc field: tag + length + Loc body. */
function locField(l: Loc): number {
  if (l === null || typeof l !== 'object') decline();
  return ldLen(sizeLoc(l));
}

const OP_TAGS: Partial<Record<WrOp, number>> = { write: 10, writeImm: 10, read: 11, send: 12, cas: 13, faa: 14, atomicWrite: 15, flush: 16 };

function sizeWr(wr: WorkRequest): number {
  if (wr === null || typeof wr !== 'object') decline();
  const mark = sizesLen++;
  sizes[mark] = 0;
  let n = optU32(wr.id);
  if (wr.conditional === true) n += 2;
  n += optU32(wr.redirect);
  if (wr.unsignaled === true) n += 2;
  const body = sizeOp(wr);
  n += (OP_TAGS[wr.op]! < 16 ? 1 : 2) + vlen(body) + body; // fields 10..15: a 1-byte tag, 16: 2 bytes
  sizes[mark] = n;
  return n;
}

function writeWr(wr: WorkRequest): void {
  const n = sizes[sizeAt++]!;
  buf[pos++] = 0x1a; // Request.wrs = 3
  varint(n);
  if (wr.id !== undefined && wr.id !== null) writeU32(0x08, wr.id);
  if (wr.conditional === true) {
    buf[pos++] = 0x10;
    buf[pos++] = 1;
  }
  if (wr.redirect !== undefined && wr.redirect !== null) writeU32(0x18, wr.redirect);
  if (wr.unsignaled === true) {
    buf[pos++] = 0x20;
    buf[pos++] = 1;
  }
  const body = sizes[sizeAt++]!;
  const tag = OP_TAGS[wr.op]!;
  varint((tag << 3) | 2);
  varint(body);
  switch (wr.op) {
    case 'write':
    case 'writeImm':
      if (wr.op === 'writeImm') {
        buf[pos++] = 0x08;
        buf[pos++] = 1;
      }
      writeLoc(0x12, wr.to);
      if (wr.data !== undefined && wr.data !== null) writeBytes(0x1a, wr.data);
      if (wr.from) writeLoc(0x22, wr.from);
      if (wr.len !== undefined && wr.len !== null) writeU32(0x28, wr.len);
      if (wr.indirect === true) {
        buf[pos++] = 0x30;
        buf[pos++] = 1;
      }
      if (wr.bounded === true) {
        buf[pos++] = 0x38;
        buf[pos++] = 1;
      }
      if (wr.targetRkey !== undefined && wr.targetRkey !== null) writeU32(0x40, wr.targetRkey);
      if (wr.imm !== undefined && wr.imm !== null) writeU32(0x48, wr.imm);
      break;
    case 'read':
      writeLoc(0x0a, wr.from);
      if (wr.len !== 0) writeU32(0x10, wr.len);
      if (wr.indirect === true) {
        buf[pos++] = 0x18;
        buf[pos++] = 1;
      }
      if (wr.bounded === true) {
        buf[pos++] = 0x20;
        buf[pos++] = 1;
      }
      if (wr.targetRkey !== undefined && wr.targetRkey !== null) writeU32(0x28, wr.targetRkey);
      break;
    case 'send':
      if (wr.data.length !== 0) writeBytes(0x0a, wr.data);
      if (wr.imm !== undefined && wr.imm !== null) writeU32(0x10, wr.imm);
      break;
    case 'cas':
      writeLoc(0x0a, wr.at);
      if (wr.compare.length !== 0) writeBytes(0x12, wr.compare);
      if (wr.swap.length !== 0) writeBytes(0x1a, wr.swap);
      break;
    case 'faa':
      writeLoc(0x0a, wr.at);
      if (wr.add.length !== 0) writeBytes(0x12, wr.add);
      break;
    case 'atomicWrite':
      writeLoc(0x0a, wr.at);
      if (wr.value.length !== 0) writeBytes(0x12, wr.value);
      break;
    case 'flush':
      if (wr.placement === 'persistent') {
        buf[pos++] = 0x08;
        buf[pos++] = 1;
      }
      if (wr.selectivity === 'mr') {
        buf[pos++] = 0x10;
        buf[pos++] = 1;
      }
      if (wr.rkey !== 0) writeU32(0x18, wr.rkey);
      if (wr.addr !== undefined && wr.addr !== null) writeU32(0x20, wr.addr);
      if (wr.len !== undefined && wr.len !== null) writeU32(0x28, wr.len);
      if (wr.addrScratch !== undefined && wr.addrScratch !== null) writeU32(0x30, wr.addrScratch);
      if (wr.count !== undefined && wr.count !== null) writeU32(0x38, wr.count);
      if (wr.stride !== undefined && wr.stride !== null) writeU32(0x40, wr.stride);
      break;
    default:
      break;
  }
}

const STATUS_CODES = new Map<unknown, number>([['ok', 0], ['failed', 1], ['skipped', 2], ['error', 3]]);

function sizeCompletion(c: Completion): number {
  if (c === null || typeof c !== 'object') decline();
  let n = 0;
  if (!u32(c.id)) decline();
  if (c.id !== 0) n += 1 + vlen(c.id);
  if (!ascii(c.op)) decline();
  if (c.op.length !== 0) n += ldLen(c.op.length);
  const st = STATUS_CODES.get(c.status);
  if (st === undefined) decline();
  if (st !== 0) n += 2;
  if (c.code !== undefined && c.code !== null) {
    if (!ascii(c.code)) decline();
    n += ldLen(c.code.length);
  }
  if (c.message !== undefined && c.message !== null) {
    if (!ascii(c.message)) decline();
    n += ldLen(c.message.length);
  }
  n += optBytes(c.data);
  if (c.swapped !== undefined && c.swapped !== null) {
    if (typeof c.swapped !== 'boolean') decline();
    n += 2;
  }
  sizes[sizesLen++] = n;
  return n;
}

function writeAscii(tag: number, s: string): void {
  buf[pos++] = tag;
  varint(s.length);
  for (let i = 0; i < s.length; i++) buf[pos++] = s.charCodeAt(i);
}

function writeCompletion(c: Completion): void {
  const n = sizes[sizeAt++]!;
  buf[pos++] = 0x1a; // Response.completions = 3
  varint(n);
  if (c.id !== 0) writeU32(0x08, c.id);
  if (c.op.length !== 0) writeAscii(0x12, c.op);
  const st = STATUS_CODES.get(c.status)!;
  if (st !== 0) {
    buf[pos++] = 0x18;
    buf[pos++] = st;
  }
  if (c.code !== undefined && c.code !== null) writeAscii(0x22, c.code);
  if (c.message !== undefined && c.message !== null) writeAscii(0x2a, c.message);
  if (c.data !== undefined && c.data !== null) writeBytes(0x32, c.data);
  if (c.swapped !== undefined && c.swapped !== null) {
    buf[pos++] = 0x38;
    buf[pos++] = c.swapped ? 1 : 0;
  }
}

/**
 * The frame of a Request, Response or Notify with its 4-byte length prefix, byte for byte what
 * protobufjs writes for it (codec.ts `encodeMessageReference`) — or undefined: not one of these, or
 * a value the fast path does not handle; then the reference encodes it.
 */
export function fastEncodeFramed(msg: Encodable): Uint8Array | undefined {
  const n = fastFrameSize(msg);
  if (n < 0) return undefined;
  const out = Buffer.allocUnsafe(n);
  fastWriteFrame(msg, out, 0);
  return out;
}

/** The message fastFrameSize sized last and the size of its Frame body (for fastWriteFrame). */
let sizedMsg: Encodable | undefined;
let sizedBody = 0;

/**
 * The bytes of `msg`'s frame with its 4-byte length prefix, as fastEncodeFramed would write it, or
 * -1 (the fast path declines: the reference encodes it). A size ≥ 0 must be followed by
 * fastWriteFrame(msg, …) before any other encode (the sizing pass's nested sizes are kept for it).
 */
export function fastFrameSize(msg: Encodable): number {
  sizedMsg = undefined;
  if (!FAST_CODEC.enabled || msg === null || typeof msg !== 'object') return -1;
  sizesLen = 0;
  sizeAt = 0;
  let body: number;
  try {
    switch (msg.type) {
      case 'request': {
        if (!u32(msg.qpn) || !u32(msg.seq) || !Array.isArray(msg.wrs)) return -1;
        body = (msg.qpn !== 0 ? 1 + vlen(msg.qpn) : 0) + (msg.seq !== 0 ? 1 + vlen(msg.seq) : 0);
        for (const wr of msg.wrs) body += ldLen(sizeWr(wr));
        break;
      }
      case 'response': {
        if (!u32(msg.qpn) || !u32(msg.seq) || !Array.isArray(msg.completions)) return -1;
        body = (msg.qpn !== 0 ? 1 + vlen(msg.qpn) : 0) + (msg.seq !== 0 ? 1 + vlen(msg.seq) : 0);
        for (const c of msg.completions) body += ldLen(sizeCompletion(c));
        break;
      }
      case 'notify': {
        if (!u32(msg.qpn) || !(msg.data instanceof Uint8Array)) return -1;
        body = (msg.qpn !== 0 ? 1 + vlen(msg.qpn) : 0) + (msg.data.length !== 0 ? ldLen(msg.data.length) : 0) + optU32(msg.imm);
        break;
      }
      default:
        return -1;
    }
  } catch (e) {
    if (e === DECLINE) return -1;
    throw e;
  }
  sizedMsg = msg;
  sizedBody = body;
  return 4 + ldLen(body);
}

/** Writes the frame fastFrameSize(msg) just sized into dst at `at` (dst must hold its bytes there). */
export function fastWriteFrame(sized: Encodable, dst: Uint8Array, at: number): void {
  if (sizedMsg !== sized) throw new Error('fastcodec: fastWriteFrame without fastFrameSize of the same message');
  const msg = sized as WireMessageFast; // fastFrameSize sizes only these
  sizedMsg = undefined;
  const body = sizedBody;
  const frameLen = ldLen(body);
  const end = at + 4 + frameLen;
  if (end > dst.length) throw new RangeError(`fastcodec: a frame of ${4 + frameLen} bytes does not fit at ${at} of ${dst.length}`);
  dst[at] = frameLen & 0xff;
  dst[at + 1] = (frameLen >>> 8) & 0xff;
  dst[at + 2] = (frameLen >>> 16) & 0xff;
  dst[at + 3] = frameLen >>> 24;
  buf = dst;
  pos = at + 4;
  buf[pos++] = msg.type === 'request' ? 0x0a : msg.type === 'response' ? 0x12 : 0x1a;
  varint(body);
  if (msg.qpn !== 0) writeU32(0x08, msg.qpn);
  if (msg.type === 'request') {
    if (msg.seq !== 0) writeU32(0x10, msg.seq);
    for (const wr of msg.wrs) writeWr(wr);
  } else if (msg.type === 'response') {
    if (msg.seq !== 0) writeU32(0x10, msg.seq);
    for (const c of msg.completions) writeCompletion(c);
  } else {
    if (msg.data.length !== 0) writeBytes(0x12, msg.data);
    if (msg.imm !== undefined && msg.imm !== null) writeU32(0x18, msg.imm);
  }
  buf = EMPTY_OUT;
  if (pos !== end) throw new Error(`fastcodec: wrote ${pos - at} bytes of ${end - at}`);
}

const EMPTY_OUT = new Uint8Array(0);

// ------------------------------------------------------------------ decode

/** Set when the reader meets anything outside the canonical form: the caller declines. */
let off = false;
let rb: Uint8Array = new Uint8Array(0);
let rp = 0;
/** Tags read, nested ones included (the decoder's work units: decoder.ts countFields). */
let tags = 0;

/** A varint of at most `maxBytes` bytes, as a number (≤ 2⁵³ − 1), or -1 (and `off`). */
function rvar(end: number, maxBytes: number): number {
  let v = 0;
  let mul = 1;
  for (let i = 0; i < maxBytes; i++) {
    if (rp >= end) break;
    const b = rb[rp++]!;
    v += (b & 0x7f) * mul;
    if (b < 0x80) {
      if (v > Number.MAX_SAFE_INTEGER) break;
      return v;
    }
    mul *= 0x80;
  }
  off = true;
  return -1;
}

/** A uint32 varint (≤ 5 bytes, < 2³²). */
function ru32(end: number): number {
  const v = rvar(end, 5);
  if (v > 0xffffffff) off = true;
  return v;
}

/** A length-delimited field's [start, end), checked against its parent's end. */
function rlen(end: number): number {
  const n = ru32(end);
  if (off || rp + n > end) {
    off = true;
    return rp;
  }
  const a = rp;
  rp += n;
  return a;
}

function rtag(end: number): number {
  tags++;
  const t = rvar(end, 2);
  if (t <= 7) off = true; // field number 0 (or a read past the end)
  return t;
}

function readLoc(end: number): Loc | undefined {
  let remote: { rkey: number; addr: number } | undefined;
  let scratch: number | undefined;
  while (rp < end && !off) {
    const t = rtag(end);
    if (t === 0x0a && remote === undefined && scratch === undefined) {
      const a = rlen(end);
      const e = rp;
      rp = a;
      let rkey = 0;
      let addr = 0;
      let seen = 0;
      while (rp < e && !off) {
        const u = rtag(e);
        if (u === 0x08 && (seen & 1) === 0) {
          seen |= 1;
          rkey = ru32(e);
        } else if (u === 0x10 && (seen & 2) === 0) {
          seen |= 2;
          addr = rvar(e, 8);
        } else off = true;
      }
      remote = { rkey, addr };
    } else if (t === 0x10 && remote === undefined && scratch === undefined) {
      scratch = ru32(end);
    } else off = true;
  }
  if (off) return undefined;
  if (remote !== undefined) return remote;
  if (scratch !== undefined) return { scratch };
  off = true; // neither: the reference's error
  return undefined;
}

function readLocField(end: number): Loc | undefined {
  const a = rlen(end);
  if (off) return undefined;
  const e = rp;
  rp = a;
  const l = readLoc(e);
  if (rp !== e) off = true;
  return l;
}

function readBytes(end: number): Uint8Array {
  const a = rlen(end);
  if (off) return new Uint8Array(0);
  if (rp === a) return new Uint8Array(0);
  return new Uint8Array(rb.buffer, rb.byteOffset + a, rp - a);
}

function readBool(end: number): boolean {
  const v = rvar(end, 1);
  if (v > 1) off = true;
  return v === 1;
}

/** The body [rp, end) of an op message, into `o`. */
/** The fields of the op message readOp is reading (no closure per work request). */
let opFieldsSeen = 0;
function once(bit: number): boolean {
  if ((opFieldsSeen & bit) !== 0) {
    off = true;
    return false;
  }
  opFieldsSeen |= bit;
  return true;
}

function readOp(opTag: number, end: number, o: Record<string, unknown>): void {
  opFieldsSeen = 0;
  switch (opTag) {
    case 10: {
      // Write
      let withImm = false;
      let to: Loc | undefined;
      let data: Uint8Array | undefined;
      let from: Loc | undefined;
      let len: number | undefined;
      let indirect = false;
      let bounded = false;
      let targetRkey: number | undefined;
      let imm: number | undefined;
      while (rp < end && !off) {
        const t = rtag(end);
        if (t === 0x08 && once(1)) withImm = readBool(end);
        else if (t === 0x12 && once(2)) to = readLocField(end);
        else if (t === 0x1a && once(4)) data = readBytes(end);
        else if (t === 0x22 && once(8)) from = readLocField(end);
        else if (t === 0x28 && once(16)) len = ru32(end);
        else if (t === 0x30 && once(32)) indirect = readBool(end);
        else if (t === 0x38 && once(64)) bounded = readBool(end);
        else if (t === 0x40 && once(128)) targetRkey = ru32(end);
        else if (t === 0x48 && once(256)) imm = ru32(end);
        else off = true;
      }
      if (to === undefined) off = true;
      o.op = withImm ? 'writeImm' : 'write';
      o.to = to;
      if (data !== undefined) o.data = data;
      if (from !== undefined) o.from = from;
      if (len !== undefined) o.len = len;
      if (indirect) o.indirect = true;
      if (bounded) o.bounded = true;
      if (targetRkey !== undefined) o.targetRkey = targetRkey;
      if (imm !== undefined) o.imm = imm;
      return;
    }
    case 11: {
      // Read
      let from: Loc | undefined;
      let len = 0;
      let indirect = false;
      let bounded = false;
      let targetRkey: number | undefined;
      while (rp < end && !off) {
        const t = rtag(end);
        if (t === 0x0a && once(1)) from = readLocField(end);
        else if (t === 0x10 && once(2)) len = ru32(end);
        else if (t === 0x18 && once(4)) indirect = readBool(end);
        else if (t === 0x20 && once(8)) bounded = readBool(end);
        else if (t === 0x28 && once(16)) targetRkey = ru32(end);
        else off = true;
      }
      if (from === undefined) off = true;
      o.op = 'read';
      o.from = from;
      o.len = len;
      if (indirect) o.indirect = true;
      if (bounded) o.bounded = true;
      if (targetRkey !== undefined) o.targetRkey = targetRkey;
      return;
    }
    case 12: {
      // Send
      let data: Uint8Array | undefined;
      let imm: number | undefined;
      while (rp < end && !off) {
        const t = rtag(end);
        if (t === 0x0a && once(1)) data = readBytes(end);
        else if (t === 0x10 && once(2)) imm = ru32(end);
        else off = true;
      }
      o.op = 'send';
      o.data = data ?? new Uint8Array(0);
      if (imm !== undefined) o.imm = imm;
      return;
    }
    case 13:
    case 14:
    case 15: {
      // Cas { at, compare, swap }, Faa { at, add }, AtomicWrite { at, value }
      let at: Loc | undefined;
      let b2: Uint8Array | undefined;
      let b3: Uint8Array | undefined;
      while (rp < end && !off) {
        const t = rtag(end);
        if (t === 0x0a && once(1)) at = readLocField(end);
        else if (t === 0x12 && once(2)) b2 = readBytes(end);
        else if (t === 0x1a && opTag === 13 && once(4)) b3 = readBytes(end);
        else off = true;
      }
      if (at === undefined) off = true;
      if (opTag === 13) {
        o.op = 'cas';
        o.at = at;
        o.compare = b2 ?? new Uint8Array(0);
        o.swap = b3 ?? new Uint8Array(0);
      } else if (opTag === 14) {
        o.op = 'faa';
        o.at = at;
        o.add = b2 ?? new Uint8Array(0);
      } else {
        o.op = 'atomicWrite';
        o.at = at;
        o.value = b2 ?? new Uint8Array(0);
      }
      return;
    }
    case 16: {
      // Flush
      let placement = 0;
      let selectivity = 0;
      let rkey = 0;
      let addr: number | undefined;
      let len: number | undefined;
      let addrScratch: number | undefined;
      let count: number | undefined;
      let stride: number | undefined;
      while (rp < end && !off) {
        const t = rtag(end);
        if (t === 0x08 && once(1)) placement = rvar(end, 1);
        else if (t === 0x10 && once(2)) selectivity = rvar(end, 1);
        else if (t === 0x18 && once(4)) rkey = ru32(end);
        else if (t === 0x20 && once(8)) addr = rvar(end, 8);
        else if (t === 0x28 && once(16)) len = ru32(end);
        else if (t === 0x30 && once(32)) addrScratch = ru32(end);
        else if (t === 0x38 && once(64)) count = ru32(end);
        else if (t === 0x40 && once(128)) stride = ru32(end);
        else off = true;
      }
      if (placement > 1 || selectivity > 1) off = true;
      o.op = 'flush';
      o.placement = placement === 1 ? 'persistent' : 'global';
      o.selectivity = selectivity === 1 ? 'mr' : 'range';
      o.rkey = rkey;
      if (addr !== undefined) o.addr = addr;
      if (len !== undefined) o.len = len;
      if (addrScratch !== undefined) o.addrScratch = addrScratch;
      if (count !== undefined) o.count = count;
      if (stride !== undefined) o.stride = stride;
      return;
    }
    default:
      off = true;
  }
}

/** One WorkRequest from rb[rp, end) (its fields, not its tag and length). */
function readWr(end: number): WorkRequest | undefined {
  let id: number | undefined;
  let conditional = false;
  let redirect: number | undefined;
  let unsignaled = false;
  let out: Record<string, unknown> | undefined;
  let seen = 0;
  while (rp < end && !off) {
    const t = rtag(end);
    // The flags come before the op (protobufjs writes fields in number order); a flag after the op
    // is declined (the reference decodes it), so the work request is built once, in wrIn's key
    // order: the flags, then the op's fields.
    if (t === 0x08 && (seen & 1) === 0 && out === undefined) {
      seen |= 1;
      id = ru32(end);
    } else if (t === 0x10 && (seen & 2) === 0 && out === undefined) {
      seen |= 2;
      conditional = readBool(end);
    } else if (t === 0x18 && (seen & 4) === 0 && out === undefined) {
      seen |= 4;
      redirect = ru32(end);
    } else if (t === 0x20 && (seen & 8) === 0 && out === undefined) {
      seen |= 8;
      unsignaled = readBool(end);
    } else if ((t & 7) === 2 && t >>> 3 >= 10 && t >>> 3 <= 16 && out === undefined) {
      const a = rlen(end);
      if (off) break;
      out = {};
      if (id !== undefined) out.id = id;
      if (conditional) out.conditional = true;
      if (redirect !== undefined) out.redirect = redirect;
      if (unsignaled) out.unsignaled = true;
      const e = rp;
      rp = a;
      readOp(t >>> 3, e, out);
      if (rp !== e) off = true;
    } else off = true;
  }
  if (out === undefined || off) {
    off = true;
    return undefined;
  }
  return out as unknown as WorkRequest;
}

/**
 * The work request in frame[a, b) exactly as the reference decodes it (decoder.ts: countFields,
 * protobufjs, wrIn) with the number of protobuf fields it holds (nested ones included: the
 * decoder's units), or undefined: not in canonical form or an op the fast path does not handle.
 */
export function fastDecodeWr(frame: Uint8Array, a: number, b: number): WorkRequest | undefined {
  if (!FAST_CODEC.enabled) return undefined;
  off = false;
  tags = 0;
  rb = frame;
  rp = a;
  const wr = readWr(b);
  rb = EMPTY;
  if (off || wr === undefined || rp !== b) return undefined;
  return wr;
}

/** The fields (tags, nested ones included) fastDecode read in the frame it decoded last. */
export function fastDecodedFields(): number {
  return tags;
}

/** The fields (tags, nested ones included) of the work request fastDecodeWr decoded last. */
export function fastDecodedWrFields(): number {
  return tags;
}

const EMPTY = new Uint8Array(0);

const OPS: ReadonlySet<string> = new Set<WrOp>(['write', 'writeImm', 'read', 'send', 'cas', 'faa', 'atomicWrite', 'flush', 'prismCas', 'allocate']);
const STATUSES: CompletionStatus[] = ['ok', 'failed', 'skipped', 'error'];

function readAscii(end: number): string {
  const a = rlen(end);
  if (off) return '';
  let s = '';
  for (let i = a; i < rp; i++) {
    const c = rb[i]!;
    if (c > 0x7f) {
      off = true;
      return '';
    }
    s += String.fromCharCode(c);
  }
  return s;
}

function readCompletion(end: number): Completion | undefined {
  let id = 0;
  let op = '';
  let status = 0;
  let code: string | undefined;
  let message: string | undefined;
  let data: Uint8Array | undefined;
  let swapped: boolean | undefined;
  let seen = 0;
  while (rp < end && !off) {
    const t = rtag(end);
    if (t === 0x08 && (seen & 1) === 0) {
      seen |= 1;
      id = ru32(end);
    } else if (t === 0x12 && (seen & 2) === 0) {
      seen |= 2;
      op = readAscii(end);
    } else if (t === 0x18 && (seen & 4) === 0) {
      seen |= 4;
      status = rvar(end, 1);
    } else if (t === 0x22 && (seen & 8) === 0) {
      seen |= 8;
      code = readAscii(end);
    } else if (t === 0x2a && (seen & 16) === 0) {
      seen |= 16;
      message = readAscii(end);
    } else if (t === 0x32 && (seen & 32) === 0) {
      seen |= 32;
      data = readBytes(end);
    } else if (t === 0x38 && (seen & 64) === 0) {
      seen |= 64;
      swapped = readBool(end);
    } else off = true;
  }
  const st = STATUSES[status];
  if (off || !OPS.has(op) || st === undefined) {
    off = true;
    return undefined;
  }
  const c: Completion = { id, op: op as WrOp, status: st };
  if (code !== undefined) c.code = code;
  if (message !== undefined) c.message = message;
  if (data !== undefined) c.data = data;
  if (swapped !== undefined) c.swapped = swapped;
  return c;
}

/**
 * A Request, Response or Notify frame (no length prefix) exactly as codec.ts's reference decodes
 * it, or undefined: another kind of frame, or not in canonical form — the reference decides.
 */
export function fastDecode(frame: Uint8Array): WireMessageFast | undefined {
  if (!FAST_CODEC.enabled || !(frame instanceof Uint8Array)) return undefined;
  off = false;
  tags = 0;
  rb = frame;
  rp = 0;
  try {
    return decodeFrame(frame.length);
  } finally {
    rb = EMPTY;
  }
}

function decodeFrame(end: number): WireMessageFast | undefined {
  if (end === 0) return undefined;
  const kind = rtag(end);
  if (kind !== 0x0a && kind !== 0x12 && kind !== 0x1a) return undefined;
  const a = rlen(end);
  if (off || rp !== end) return undefined;
  const e = rp;
  rp = a;
  let qpn = 0;
  let seq = 0;
  let seen = 0;
  if (kind === 0x1a) {
    let data: Uint8Array | undefined;
    let imm: number | undefined;
    while (rp < e && !off) {
      const t = rtag(e);
      if (t === 0x08 && (seen & 1) === 0) {
        seen |= 1;
        qpn = ru32(e);
      } else if (t === 0x12 && (seen & 2) === 0) {
        seen |= 2;
        data = readBytes(e);
      } else if (t === 0x18 && (seen & 4) === 0) {
        seen |= 4;
        imm = ru32(e);
      } else off = true;
    }
    if (off || rp !== e) return undefined;
    return imm === undefined ? { type: 'notify', qpn, data: data ?? new Uint8Array(0) } : { type: 'notify', qpn, data: data ?? new Uint8Array(0), imm };
  }
  const items: unknown[] = [];
  while (rp < e && !off) {
    const t = rtag(e);
    if (t === 0x08 && (seen & 1) === 0) {
      seen |= 1;
      qpn = ru32(e);
    } else if (t === 0x10 && (seen & 2) === 0) {
      seen |= 2;
      seq = ru32(e);
    } else if (t === 0x1a) {
      const x = rlen(e);
      if (off) break;
      const ie = rp;
      rp = x;
      const item = kind === 0x0a ? readWr(ie) : readCompletion(ie);
      if (off || rp !== ie) off = true;
      items.push(item);
    } else off = true;
  }
  if (off || rp !== e) return undefined;
  return kind === 0x0a ? { type: 'request', qpn, seq, wrs: items as WorkRequest[] } : { type: 'response', qpn, seq, completions: items as Completion[] };
}
