// The wire codec: every message round-trips; malformed input is a coded error, never a crash.
import t from 'tap';
import fc from 'fast-check';
import { decodeMessage, encodeMessage, FrameReader, frameBytes, PROTOCOL_VERSION } from '../../src/transport/index.js';
import type { ClientMessage, Loc, ServerMessage, WorkRequest } from '../../flush/types.js';

const seed = Number(process.env.PMRPC_SEED ?? 1 + (Date.now() % 1_000_000));
t.comment(`fast-check seed ${seed} (replay: PMRPC_SEED=${seed})`);

const u32 = fc.integer({ min: 0, max: 0xffffffff });
const addr = fc.integer({ min: 0, max: 2 ** 40 });
const bytes = (max = 64) => fc.uint8Array({ maxLength: max });
const loc: fc.Arbitrary<Loc> = fc.oneof(fc.record({ rkey: u32, addr }), fc.record({ scratch: fc.integer({ min: 0, max: 1 << 20 }) }));
const flags = { id: fc.option(u32, { nil: undefined }), conditional: fc.option(fc.constant(true), { nil: undefined }), redirect: fc.option(fc.integer({ min: 0, max: 4096 }), { nil: undefined }), unsignaled: fc.option(fc.constant(true), { nil: undefined }) };
const opt = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });
const tru = opt(fc.constant(true as const));

const wr: fc.Arbitrary<WorkRequest> = fc.oneof(
  fc.record({ ...flags, op: fc.constantFrom('write' as const, 'writeImm' as const), to: loc, data: opt(bytes()), from: opt(loc), len: opt(u32), indirect: tru, bounded: tru, targetRkey: opt(u32), imm: opt(u32) }),
  fc.record({ ...flags, op: fc.constant('read' as const), from: loc, len: u32, indirect: tru, bounded: tru, targetRkey: opt(u32) }),
  fc.record({ ...flags, op: fc.constant('send' as const), data: bytes(), imm: opt(u32) }),
  fc.record({ ...flags, op: fc.constant('cas' as const), at: loc, compare: bytes(8), swap: bytes(8) }),
  fc.record({ ...flags, op: fc.constant('faa' as const), at: loc, add: bytes(8) }),
  fc.record({ ...flags, op: fc.constant('atomicWrite' as const), at: loc, value: bytes(8) }),
  fc.record({ ...flags, op: fc.constant('flush' as const), placement: fc.constantFrom('global' as const, 'persistent' as const), selectivity: fc.constantFrom('range' as const, 'mr' as const), rkey: u32, addr: opt(addr), len: opt(u32), addrScratch: opt(u32), count: opt(u32), stride: opt(u32) }),
  fc.record({ ...flags, op: fc.constant('prismCas' as const), mode: fc.constantFrom('eq' as const, 'ne' as const, 'lt' as const, 'le' as const, 'gt' as const, 'ge' as const), at: loc, indirect: tru, targetRkey: opt(u32), data: opt(bytes(32)), from: opt(loc), len: fc.integer({ min: 1, max: 32 }), compareMask: opt(bytes(32)), swapMask: opt(bytes(32)) }),
  fc.record({ ...flags, op: fc.constant('allocate' as const), rkey: u32, sizeBytes: u32, data: opt(bytes()), from: opt(loc), len: opt(u32) }),
) as fc.Arbitrary<WorkRequest>;

/** Drop undefined keys: the codec never produces them. */
function clean<T>(v: T): T {
  return JSON.parse(JSON.stringify(v, (_k, x) => (x instanceof Uint8Array ? { u8: [...x] } : x))) as T;
}

t.test('requests round-trip', async (t) => {
  fc.assert(
    fc.property(fc.record({ type: fc.constant('request' as const), qpn: u32, seq: u32, wrs: fc.array(wr, { maxLength: 6 }) }), (m: ClientMessage) => {
      const back = decodeMessage(encodeMessage(m));
      t.same(clean(back), clean(m));
      return true;
    }),
    { seed, numRuns: 300 },
  );
});

t.test('responses and notifications round-trip', async (t) => {
  const completion = fc.record({
    id: u32,
    op: fc.constantFrom('write' as const, 'read' as const, 'prismCas' as const, 'allocate' as const, 'flush' as const),
    status: fc.constantFrom('ok' as const, 'failed' as const, 'skipped' as const, 'error' as const),
    code: opt(fc.string()),
    message: opt(fc.string()),
    data: opt(bytes()),
    swapped: opt(fc.boolean()),
  });
  const msg: fc.Arbitrary<ServerMessage> = fc.oneof(
    fc.record({ type: fc.constant('response' as const), qpn: u32, seq: u32, completions: fc.array(completion, { maxLength: 5 }) }),
    fc.record({ type: fc.constant('notify' as const), qpn: u32, data: bytes(), imm: opt(u32) }),
  ) as fc.Arbitrary<ServerMessage>;
  fc.assert(
    fc.property(msg, (m) => {
      t.same(clean(decodeMessage(encodeMessage(m))), clean(m));
      return true;
    }),
    { seed, numRuns: 300 },
  );
});

t.test('random bytes decode to a message or PMRPC_ERR_BAD_FRAME, never anything else', async (t) => {
  let bad = 0;
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 200 }), (b) => {
      try {
        decodeMessage(b);
      } catch (e) {
        bad++;
        return (e as { code?: string }).code === 'PMRPC_ERR_BAD_FRAME';
      }
      return true;
    }),
    { seed, numRuns: 2000 },
  );
  t.ok(bad > 0, `${bad} of 2000 random inputs were refused with PMRPC_ERR_BAD_FRAME`);
});

t.test('a frame without a message, a wr without an operation, an unsafe address: PMRPC_ERR_BAD_FRAME', async (t) => {
  t.throws(() => decodeMessage(new Uint8Array(0)), { code: 'PMRPC_ERR_BAD_FRAME' });
  // Frame{request{wrs:[{}]}}: field 1 (request) len 2, field 3 (wrs) len 0
  t.throws(() => decodeMessage(new Uint8Array([0x0a, 0x02, 0x1a, 0x00])), { code: 'PMRPC_ERR_BAD_FRAME', message: /wr 0 carries no known operation/ });
  const huge = encodeMessage({ type: 'request', qpn: 1, seq: 1, wrs: [{ op: 'read', from: { rkey: 1, addr: 0 }, len: 8 }] });
  t.ok(decodeMessage(huge));
  t.throws(() => decodeMessage(new Uint8Array([0x0a, 0x05, 0x08, 0x01, 0x10, 0x01, 0xff])), { code: 'PMRPC_ERR_BAD_FRAME' }, 'truncated');
});

t.test('unknown fields are skipped', async (t) => {
  const m = encodeMessage({ type: 'notify', qpn: 4, data: new Uint8Array([1]) });
  // Append field 99 (varint 7) to the Frame: tag = 99 << 3 | 0 = 792 = 0x98 0x06
  const withUnknown = new Uint8Array([...m, 0x98, 0x06, 0x07]);
  t.same(clean(decodeMessage(withUnknown)), clean({ type: 'notify', qpn: 4, data: new Uint8Array([1]) }));
});

t.test('FrameReader splits a stream at any chunking and bounds frame length', async (t) => {
  const frames = [new Uint8Array([1, 2, 3]), new Uint8Array(0), new Uint8Array(300).fill(9)];
  const stream = new Uint8Array(frames.reduce((n, f) => n + 4 + f.length, 0));
  let o = 0;
  for (const f of frames) {
    stream.set(frameBytes(f), o);
    o += 4 + f.length;
  }
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 1, max: 50 }), { minLength: 1, maxLength: 40 }), (cuts) => {
      const r = new FrameReader(1024);
      const out: number[][] = [];
      let p = 0;
      let k = 0;
      while (p < stream.length) {
        const n = cuts[k++ % cuts.length]!;
        for (const f of r.push(stream.slice(p, p + n))) out.push([...f]);
        p += n;
      }
      return JSON.stringify(out) === JSON.stringify(frames.map((f) => [...f])) && r.buffered === 0;
    }),
    { seed, numRuns: 200 },
  );
  const r = new FrameReader(100);
  t.throws(() => r.push(new Uint8Array([0xff, 0xff, 0xff, 0x7f])), { code: 'PMRPC_ERR_FRAME_TOO_LARGE' });
  t.throws(() => new FrameReader(0), { name: 'RangeError', message: 'maxFrameBytes must be a positive integer, got 0' });
});

t.test('connection setup: Hello, Welcome and Goodbye round-trip', async (t) => {
  const control = fc.oneof(
    fc.record({ type: fc.constant('hello' as const), version: u32, authToken: fc.string({ maxLength: 64 }), clientName: fc.string({ maxLength: 64 }), maxFrameBytes: u32, payload: bytes(100) }),
    fc.record({ type: fc.constant('welcome' as const), version: u32, qpn: u32, maxFrameBytes: u32, payload: bytes(100) }),
    fc.record({ type: fc.constant('goodbye' as const), code: fc.stringMatching(/^PMRPC_ERR_[A-Z0-9_]{1,20}$/), message: fc.string({ maxLength: 100 }) }),
  );
  fc.assert(
    fc.property(control, (m) => {
      t.same(clean(decodeMessage(encodeMessage(m))), clean(m));
      return true;
    }),
    { seed, numRuns: 300 },
  );
});

t.test('connection setup: bounded strings, believable codes; a long Goodbye message is truncated, not refused', async (t) => {
  const hello = { type: 'hello' as const, version: PROTOCOL_VERSION, authToken: '', clientName: 'x'.repeat(257), maxFrameBytes: 1024, payload: new Uint8Array(0) };
  t.throws(() => decodeMessage(encodeMessage(hello)), { code: 'PMRPC_ERR_BAD_FRAME', message: 'PMRPC_ERR_BAD_FRAME: hello clientName is longer than 256 characters' });
  t.throws(() => decodeMessage(encodeMessage({ ...hello, clientName: '', authToken: 't'.repeat(1025) })), { code: 'PMRPC_ERR_BAD_FRAME', message: 'PMRPC_ERR_BAD_FRAME: hello authToken is longer than 1024 characters' });
  t.throws(() => decodeMessage(encodeMessage({ type: 'goodbye', code: 'EVIL', message: '' })), { code: 'PMRPC_ERR_BAD_FRAME', message: 'PMRPC_ERR_BAD_FRAME: goodbye code "EVIL" is not a PMRPC_ERR_ code' });
  const g = decodeMessage(encodeMessage({ type: 'goodbye', code: 'PMRPC_ERR_AUTH', message: 'm'.repeat(10_000) }));
  t.equal(g.type === 'goodbye' && g.message.length, 4096);
  const w = decodeMessage(new Uint8Array([0x2a, 0x00])); // Frame{welcome{}}: every field at its default
  t.same(clean(w), clean({ type: 'welcome', version: 0, qpn: 0, maxFrameBytes: 0, payload: new Uint8Array(0) }), 'defaults decode; the link checks version and bounds');
});

t.test('redirected FLUSH: addrScratch is Flush field 6; a frame without it (an older peer) still decodes', async (t) => {
  const redirected: ClientMessage = { type: 'request', qpn: 3, seq: 9, wrs: [{ op: 'flush', placement: 'persistent', selectivity: 'range', rkey: 7, addrScratch: 16, len: 96, conditional: true }] };
  const back = decodeMessage(encodeMessage(redirected)) as ClientMessage;
  t.same(clean(back), clean(redirected), 'round trip');
  // An older peer's Flush: placement 1, rkey 7, addr 64, len 8 — fields 1, 3, 4, 5 only. Hand-built bytes.
  const flush = [0x08, 0x01, 0x18, 0x07, 0x20, 0x40, 0x28, 0x08];
  const wr = [0x82, 0x01, flush.length, ...flush]; // WorkRequest.flush = 16 (tag 0x82 0x01)
  const req = [0x08, 0x03, 0x10, 0x09, 0x1a, wr.length, ...wr]; // Request{qpn 3, seq 9, wrs}
  const frame = new Uint8Array([0x0a, req.length, ...req]); // Frame.request = 1
  const old = decodeMessage(frame) as ClientMessage;
  t.same(clean(old), clean({ type: 'request', qpn: 3, seq: 9, wrs: [{ op: 'flush', placement: 'persistent', selectivity: 'range', rkey: 7, addr: 64, len: 8 }] }));
  t.notOk('addrScratch' in old.wrs[0]!, 'no addrScratch in an old frame');
  // The new field is exactly field 6 (varint) of Flush: these bytes plus 0x30 0x10.
  const withField = [...flush, 0x30, 0x10];
  const wr2 = [0x82, 0x01, withField.length, ...withField];
  const req2 = [0x08, 0x03, 0x10, 0x09, 0x1a, wr2.length, ...wr2];
  const got = (decodeMessage(new Uint8Array([0x0a, req2.length, ...req2])) as ClientMessage).wrs[0] as { addrScratch?: number };
  t.equal(got.addrScratch, 16);
});

t.test('multi-pointer redirected FLUSH: count is Flush field 7; absent (an older peer) means 1', async (t) => {
  const multi: ClientMessage = { type: 'request', qpn: 3, seq: 9, wrs: [{ op: 'flush', placement: 'persistent', selectivity: 'range', rkey: 7, addrScratch: 16, count: 5, len: 64, conditional: true }] };
  const back = decodeMessage(encodeMessage(multi)) as ClientMessage;
  t.same(clean(back), clean(multi), 'round trip');
  t.equal((back.wrs[0] as { count?: number }).count, 5);
  // A single redirected FLUSH (no count) stays without it on the wire and after decoding.
  const single = decodeMessage(encodeMessage({ ...multi, wrs: [{ op: 'flush', placement: 'persistent', selectivity: 'range', rkey: 7, addrScratch: 16, len: 64 }] })) as ClientMessage;
  t.notOk('count' in single.wrs[0]!, 'no count when none was given');
  // Hand-built: Flush{placement 1, rkey 7, len 64, addr_scratch 16} then field 7 (varint) = 5.
  const flush = [0x08, 0x01, 0x18, 0x07, 0x28, 0x40, 0x30, 0x10];
  const frameOf = (f: number[]): Uint8Array => {
    const wr = [0x82, 0x01, f.length, ...f];
    const req = [0x08, 0x03, 0x10, 0x09, 0x1a, wr.length, ...wr];
    return new Uint8Array([0x0a, req.length, ...req]);
  };
  const old = (decodeMessage(frameOf(flush)) as ClientMessage).wrs[0] as { count?: number; addrScratch?: number };
  t.equal(old.addrScratch, 16);
  t.notOk('count' in old, 'an older peer sends no count: the NIC reads 1 pointer');
  const got = (decodeMessage(frameOf([...flush, 0x38, 0x05])) as ClientMessage).wrs[0] as { count?: number };
  t.equal(got.count, 5, 'count is field 7');
  const strided = (decodeMessage(frameOf([...flush, 0x38, 0x05, 0x40, 0x20])) as ClientMessage).wrs[0] as { count?: number; stride?: number };
  t.equal(strided.stride, 32, 'stride is field 8');
  t.notOk('stride' in got, 'absent stride: 8');
  const withStride: ClientMessage = { ...multi, wrs: [{ op: 'flush', placement: 'persistent', selectivity: 'range', rkey: 7, addrScratch: 24, count: 3, stride: 32, len: 64 }] };
  t.same(clean(decodeMessage(encodeMessage(withStride))), clean(withStride), 'stride round trip');
});
