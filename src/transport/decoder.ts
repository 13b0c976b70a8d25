/**
 * Incremental decoding of the frames a server receives (DESIGN §6, "untrusted until bound"): a frame
 * is decoded in steps of a bounded amount of work, so that no frame — however it is built — holds
 * the event loop for more than one step. `decodeMessage` (codec.ts) decodes a whole frame at once;
 * it stays the reference: for every frame that this decoder accepts, both give the same message
 * (test/transport/decoder.test.ts).
 *
 * Work is counted in units: one per protobuf field read (tag), plus WR_DECODE_UNITS per work request
 * turned into a flush/ WorkRequest. The bounds below make the total work of one frame finite and
 * small whatever its size: a Frame or a Request with more than FIELDS_MAX other fields, a Request
 * with more than MAX_WRS_PER_MESSAGE work requests, a work request of more than WR_FIELDS_MAX
 * fields (nested ones included) or nested deeper than NESTING_MAX is PMRPC_ERR_BAD_FRAME, found
 * after at most that many fields — a 16 MiB frame of empty work requests is refused after its
 * 4097th, not decoded into eight million objects.
 */
import protobuf from 'protobufjs';
import { PmrpcError } from '../../pmem/index.js';
import { MAX_WRS_PER_MESSAGE, type WorkRequest } from '../../flush/index.js';
import { BAD_FRAME, decodeMessage, Frame, wrIn, type Obj, type WireMessage } from './codec.js';
import { TransportErrorCodes } from './errors.js';
import { fastDecode, fastDecodedFields, fastDecodedWrFields, fastDecodeWr } from './fastcodec.js';

const HANDSHAKE = TransportErrorCodes.HANDSHAKE;

/** Fields of a Frame or a Request other than its work requests (unknown ones included). */
export const FIELDS_MAX = 64;
/** Fields of one work request, its nested messages included (a real one has fewer than 20). */
export const WR_FIELDS_MAX = 256;
/** Depth of nested messages inside one work request (WorkRequest → Write → Loc → Remote is 3). */
const NESTING_MAX = 8;
/** Units charged for turning one work request into an object (besides its fields). */
export const WR_DECODE_UNITS = 16;

const FRAME_REQUEST = 1;
const FRAME_HELLO = 4;
const FRAME_KINDS = ['', 'request', 'response', 'notify', 'hello', 'welcome', 'goodbye'];
/** Frame fields (proto/pmrpc.proto): 1 request … 6 goodbye. */
const FRAME_FIELDS = 6;
const REQ_QPN = 1;
const REQ_SEQ = 2;
const REQ_WRS = 3;
const WIRE_VARINT = 0;
const WIRE_LEN = 2;

function bad(message: string): never {
  throw new PmrpcError(BAD_FRAME, message);
}

let wrTypeCache: protobuf.Type | undefined;
function WrType(): protobuf.Type {
  wrTypeCache ??= Frame().lookupType('pmrpc.wire.WorkRequest');
  return wrTypeCache;
}

/** Skips a field of wire type `wt` (groups are not part of the schema: refused). */
function skip(r: protobuf.Reader, wt: number): void {
  if (wt === 3 || wt === 4) bad(`wire type ${wt} (group) at offset ${r.pos}`);
  r.skipType(wt);
}

/**
 * Counts the fields of the message of type `type` in r[pos, end) (nested messages included),
 * refusing more than `left` of them or a nesting deeper than NESTING_MAX. Returns how many.
 */
function countFields(r: protobuf.Reader, end: number, type: protobuf.Type, left: number, depth: number): number {
  if (depth > NESTING_MAX) bad(`a ${type.name} nests messages deeper than ${NESTING_MAX}`);
  let n = 0;
  while (r.pos < end) {
    if (++n > left) bad(`a ${type.name} has too many fields (a work request at most ${WR_FIELDS_MAX}, nested ones included; a control message ${FIELDS_MAX})`);
    const tag = r.uint32();
    const id = tag >>> 3;
    const wt = tag & 7;
    if (id === 0) bad(`field number 0 at offset ${r.pos}`);
    const f = type.fieldsById[id];
    const sub = f?.resolvedType;
    if (wt === WIRE_LEN && sub instanceof protobuf.Type && !f!.repeated) {
      const len = r.uint32();
      const subEnd = r.pos + len;
      if (subEnd > end) bad(`a nested message runs past its parent at offset ${r.pos}`);
      n += countFields(r, subEnd, sub, left - n, depth + 1);
      if (r.pos !== subEnd) bad(`a nested message ends at ${r.pos}, not ${subEnd}`);
    } else skip(r, wt);
  }
  if (r.pos > end) bad(`a field runs past its message at offset ${end}`);
  return n;
}

/** What step() returns: the units of work it did, and the message once the frame is decoded. */
export interface DecodeStep {
  units: number;
  message: WireMessage | undefined;
}

/**
 * Decodes one frame in steps. step(units) does about `units` units of work (at least one field, or
 * one work request) and returns the message when the frame is complete; a malformed frame throws
 * PMRPC_ERR_BAD_FRAME from the step that finds it.
 */
export class FrameDecoder {
  readonly frame: Uint8Array;
  #r: protobuf.Reader;
  #phase: 'frame' | 'request' | 'wrs' | 'done' = 'frame';
  #messageField = 0;
  #messageStart = 0;
  #messageEnd = 0;
  #reqFields = 0;
  #qpn = 0;
  #seq = 0;
  /** [start, end) of each work request's bytes, flattened. */
  #wrRanges: number[] = [];
  #wrs: WorkRequest[] = [];

  /** `firstFrame`: a connection's first frame — anything but a Hello is PMRPC_ERR_HANDSHAKE, found before it is decoded. */
  constructor(frame: Uint8Array, options: { firstFrame?: boolean } = {}) {
    this.frame = frame;
    this.#r = protobuf.Reader.create(frame);
    this.#firstFrame = options.firstFrame === true;
  }

  readonly #firstFrame: boolean;

  /**
   * A whole Request frame in one call, when the fast codec reads it (canonical form) and it costs at
   * most `unitsMax`: the message and units `new FrameDecoder(frame).step(unitsMax)` would give (one
   * unit per field read, nested ones included, plus WR_DECODE_UNITS per work request), without a
   * decoder, a protobuf reader or range arrays per frame. Otherwise undefined: use a FrameDecoder
   * (the sliced, bounded path; a non-canonical frame gets its coded error there). Not for a
   * connection's first frame (a Hello). `into`: the step is written there and returned (a caller
   * decoding many frames keeps one, not an object per frame).
   */
  static decodeRequest(frame: Uint8Array, unitsMax: number, into?: DecodeStep): DecodeStep | undefined {
    const m = fastDecode(frame);
    if (m === undefined || m.type !== 'request' || m.wrs.length > MAX_WRS_PER_MESSAGE) return undefined;
    const units = fastDecodedFields() + WR_DECODE_UNITS * m.wrs.length;
    if (units > Math.max(1, unitsMax)) return undefined;
    if (into === undefined) return { units, message: m };
    into.units = units;
    into.message = m;
    return into;
  }

  get done(): boolean {
    return this.#phase === 'done';
  }

  step(unitsMax: number): DecodeStep {
    if (this.#phase === 'done') throw new TypeError('step(): the frame is already decoded');
    try {
      return this.#step(Math.max(1, unitsMax));
    } catch (e) {
      this.#phase = 'done';
      if (e instanceof PmrpcError) throw e;
      throw new PmrpcError(BAD_FRAME, `frame of ${this.frame.length} bytes does not parse: ${(e as Error).message}`, { cause: e });
    }
  }

  #step(unitsMax: number): DecodeStep {
    let units = 0;
    if (this.#phase === 'frame') {
      units += this.#scanFrame();
      if (this.#firstFrame && this.#messageField !== FRAME_HELLO) {
        this.#phase = 'done';
        throw new PmrpcError(HANDSHAKE, `the first frame must be a Hello, got ${FRAME_KINDS[this.#messageField] ?? 'no message'}`);
      }
      if (this.#messageField !== FRAME_REQUEST) {
        this.#phase = 'done';
        // A handshake or control message (or a kind the server refuses anyway): a handful of
        // scalars and strings, bounded by the connection's frame bound; counted, then decoded whole.
        if (this.#messageField !== 0) {
          const r = protobuf.Reader.create(this.frame);
          r.pos = this.#messageStart;
          const type = Frame().fieldsById[this.#messageField]!.resolvedType as protobuf.Type;
          units += countFields(r, this.#messageEnd, type, FIELDS_MAX, 0);
        }
        this.#phase = 'done';
        return { units: units + 1, message: decodeMessage(this.frame) };
      }
      this.#phase = 'request';
      this.#r.pos = this.#messageStart;
    }
    const r = this.#r;
    if (this.#phase === 'request') {
      const end = this.#messageEnd;
      while (r.pos < end && units < unitsMax) {
        units++;
        const tag = r.uint32();
        const id = tag >>> 3;
        const wt = tag & 7;
        if (id === 0) bad(`field number 0 at offset ${r.pos}`);
        if (id === REQ_WRS) {
          if (wt !== WIRE_LEN) bad(`request field wrs has wire type ${wt}`);
          if (this.#wrRanges.length / 2 >= MAX_WRS_PER_MESSAGE) bad(`a request carries more than ${MAX_WRS_PER_MESSAGE} work requests`);
          const len = r.uint32();
          const a = r.pos;
          if (a + len > end) bad(`work request ${this.#wrRanges.length / 2} runs past its request`);
          r.skip(len);
          this.#wrRanges.push(a, a + len);
          continue;
        }
        if (++this.#reqFields > FIELDS_MAX) bad(`a request has more than ${FIELDS_MAX} fields besides its work requests`);
        if (id === REQ_QPN || id === REQ_SEQ) {
          if (wt !== WIRE_VARINT) bad(`request field ${id} has wire type ${wt}`);
          // uint32 fields, read as protobufjs reads them (the last occurrence wins).
          const v = r.uint32();
          if (id === REQ_QPN) this.#qpn = v;
          else this.#seq = v;
        } else skip(r, wt);
      }
      if (r.pos < end) return { units, message: undefined };
      if (r.pos > end) bad('a field runs past the request');
      this.#phase = 'wrs';
    }
    // this.#phase === 'wrs'
    const ranges = this.#wrRanges;
    const W = WrType();
    while (this.#wrs.length * 2 < ranges.length && units < unitsMax) {
      const i = this.#wrs.length;
      const a = ranges[2 * i]!;
      const b = ranges[2 * i + 1]!;
      // The fast path (a canonical work request): the same work request and field count as below.
      const fast = fastDecodeWr(this.frame, a, b);
      if (fast !== undefined) {
        units += fastDecodedWrFields() + WR_DECODE_UNITS;
        this.#wrs.push(fast);
        continue;
      }
      const rw = protobuf.Reader.create(this.frame);
      rw.pos = a;
      units += countFields(rw, b, W, WR_FIELDS_MAX, 0) + WR_DECODE_UNITS;
      const o = W.toObject(W.decode(this.frame.subarray(a, b)), { longs: Number, oneofs: true }) as Obj;
      this.#wrs.push(wrIn(o, i));
    }
    if (this.#wrs.length * 2 < ranges.length) return { units, message: undefined };
    this.#phase = 'done';
    return { units, message: { type: 'request', qpn: this.#qpn, seq: this.#seq, wrs: this.#wrs } };
  }

  /** The Frame's own fields (at most FIELDS_MAX): exactly one message of the oneof, unknown fields skipped. Returns the units. */
  #scanFrame(): number {
    const r = this.#r;
    let n = 0;
    while (r.pos < r.len) {
      if (++n > FIELDS_MAX) bad(`a frame has more than ${FIELDS_MAX} fields`);
      const tag = r.uint32();
      const id = tag >>> 3;
      const wt = tag & 7;
      if (id === 0) bad(`field number 0 at offset ${r.pos}`);
      if (id >= 1 && id <= FRAME_FIELDS) {
        if (wt !== WIRE_LEN) bad(`frame field ${id} has wire type ${wt}`);
        if (this.#messageField !== 0) bad('a frame carries more than one message');
        const len = r.uint32();
        this.#messageField = id;
        this.#messageStart = r.pos;
        this.#messageEnd = r.pos + len;
        if (this.#messageEnd > r.len) bad(`the message runs past the frame (${this.#messageEnd} > ${r.len})`);
        r.skip(len);
      } else skip(r, wt);
    }
    if (r.pos > r.len) bad('a field runs past the frame');
    return n;
  }
}
