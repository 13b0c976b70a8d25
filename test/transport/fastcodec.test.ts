// The hand-written fast codec (src/transport/fastcodec.ts) against the protobufjs reference
// (codec.ts *Reference): for random messages the fast encoder writes exactly the reference's bytes
// (or declines), the fast decoder gives exactly the reference's message (or declines), and for
// malformed frames — truncated, bytes flipped, unknown or repeated fields, lengths past the frame —
// decodeMessage and the server's FrameDecoder give the same result or the same coded error as the
// reference, with the same work units; never a crash.
//
// Replay: PMRPC_SEED=<printed seed> npx tap test/transport/fastcodec.test.ts
import t from 'tap';
import fc from 'fast-check';
import type { Completion, WorkRequest } from '../../flush/index.js';
import { decodeMessage, decodeMessageReference, encodeFrame, encodeMessage, encodeMessageReference, frameBytes, type WireMessage } from '../../src/transport/index.js';
import { FrameDecoder } from '../../src/transport/decoder.js';
import { FAST_CODEC, fastDecode, fastEncodeFramed } from '../../src/transport/fastcodec.js';
import { plain } from './fixtures/helpers.js';

const seed = Number(process.env.PMRPC_SEED ?? Date.now() % 2 ** 31);
t.comment(`seed ${seed} (replay: PMRPC_SEED=${seed} npx tap test/transport/fastcodec.test.ts)`);

const u32 = fc.oneof(fc.constantFrom(0, 1, 127, 128, 0xffffffff), fc.integer({ min: 0, max: 0xffffffff }));
const loc = fc.oneof(fc.record({ rkey: u32, addr: fc.oneof(fc.constantFrom(0, 2 ** 53 - 1), fc.integer({ min: 0, max: 2 ** 40 })) }), fc.record({ scratch: u32 }));
const bytes = fc.uint8Array({ maxLength: 200 });
const opt = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });
const flags = { id: opt(u32), conditional: opt(fc.boolean()), redirect: opt(u32), unsignaled: opt(fc.boolean()) };
const rec = <T>(shape: Record<string, fc.Arbitrary<unknown>>) => fc.record(shape, { requiredKeys: [] }) as unknown as fc.Arbitrary<T>;
const wr: fc.Arbitrary<WorkRequest> = fc.oneof(
  fc.record({ ...flags, op: fc.constantFrom('write' as const, 'writeImm' as const), to: loc, data: opt(bytes), from: opt(loc), len: opt(u32), indirect: opt(fc.boolean()), bounded: opt(fc.boolean()), targetRkey: opt(u32), imm: opt(u32) }),
  fc.record({ ...flags, op: fc.constant('read' as const), from: loc, len: u32, indirect: opt(fc.boolean()), bounded: opt(fc.boolean()), targetRkey: opt(u32) }),
  fc.record({ ...flags, op: fc.constant('send' as const), data: bytes, imm: opt(u32) }),
  fc.record({ ...flags, op: fc.constant('cas' as const), at: loc, compare: bytes, swap: bytes }),
  fc.record({ ...flags, op: fc.constant('faa' as const), at: loc, add: bytes }),
  fc.record({ ...flags, op: fc.constant('atomicWrite' as const), at: loc, value: bytes }),
  fc.record({ ...flags, op: fc.constant('flush' as const), placement: fc.constantFrom('global' as const, 'persistent' as const), selectivity: fc.constantFrom('range' as const, 'mr' as const), rkey: u32, addr: opt(fc.integer({ min: 0, max: 2 ** 53 - 1 })), len: opt(u32), addrScratch: opt(u32), count: opt(u32), stride: opt(u32) }),
  fc.record({ ...flags, op: fc.constant('prismCas' as const), mode: fc.constantFrom('eq' as const, 'ge' as const), at: loc, data: opt(bytes), len: u32 }),
  fc.record({ ...flags, op: fc.constant('allocate' as const), rkey: u32, sizeBytes: u32, data: opt(bytes) }),
) as fc.Arbitrary<WorkRequest>;
const text = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 10 }));
const completion: fc.Arbitrary<Completion> = fc.record({
  id: u32,
  op: fc.constantFrom('write', 'writeImm', 'read', 'send', 'cas', 'faa', 'atomicWrite', 'flush', 'prismCas', 'allocate'),
  status: fc.constantFrom('ok', 'failed', 'skipped', 'error'),
  code: opt(fc.constantFrom('PMRPC_ERR_BAD_RKEY', 'PMRPC_ERR_X')),
  message: opt(text),
  data: opt(bytes),
  swapped: opt(fc.boolean()),
}) as fc.Arbitrary<Completion>;
const message: fc.Arbitrary<WireMessage> = fc.oneof(
  fc.record({ type: fc.constant('request' as const), qpn: u32, seq: u32, wrs: fc.array(wr, { maxLength: 6 }) }),
  fc.record({ type: fc.constant('response' as const), qpn: u32, seq: u32, completions: fc.array(completion, { maxLength: 6 }) }),
  fc.record({ type: fc.constant('notify' as const), qpn: u32, data: bytes, imm: opt(u32) }),
  fc.record({ type: fc.constant('goodbye' as const), code: fc.constant('PMRPC_ERR_X'), message: text }),
) as fc.Arbitrary<WireMessage>;
void rec;

const hex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

/** The outcome of a decode: the message (as plain data) or the error's code. */
function outcome(fn: () => unknown): string {
  try {
    return JSON.stringify(plain(fn()));
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    if (typeof code !== 'string') throw new Error(`an uncoded error: ${String(e)}`);
    return `error ${code}`;
  }
}

/** The server's decoder, whole frame, 50 units a step: the message or the code, and the units spent. */
function stepped(frame: Uint8Array): string {
  const d = new FrameDecoder(frame);
  let spent = 0;
  for (let i = 0; i < 100_000; i++) {
    let r;
    try {
      r = d.step(50);
    } catch (e) {
      const code = (e as { code?: unknown }).code;
      if (typeof code !== 'string') throw new Error(`an uncoded error: ${String(e)}`);
      return `error ${code} after ${spent} units`;
    }
    spent += r.units;
    if (r.message !== undefined) return `${JSON.stringify(plain(r.message))} in ${spent} units`;
  }
  throw new Error('no progress');
}

function withReference<T>(fn: () => T): T {
  FAST_CODEC.enabled = false;
  try {
    return fn();
  } finally {
    FAST_CODEC.enabled = true;
  }
}

t.test('encode: the fast path writes the reference bytes, byte for byte (or declines)', async (t) => {
  let fast = 0;
  let n = 0;
  await fc.assert(
    fc.property(message, (m) => {
      n++;
      const ref = encodeMessageReference(m);
      const f = fastEncodeFramed(m);
      if (f !== undefined) {
        fast++;
        if (hex(f) !== hex(frameBytes(ref))) throw new Error(`fast ${hex(f)}\nref  ${hex(frameBytes(ref))}`);
      }
      if (hex(encodeMessage(m)) !== hex(ref)) throw new Error('encodeMessage differs from the reference');
      if (hex(encodeFrame(m)) !== hex(frameBytes(ref))) throw new Error('encodeFrame differs from the reference');
    }),
    { seed, numRuns: 1500 },
  );
  t.ok(fast > n / 3, `${fast} of ${n} messages took the fast path`);
});

t.test('encode: values outside a field’s domain go to the reference (same bytes or the same throw)', async (t) => {
  const odd: WireMessage[] = [
    { type: 'request', qpn: 2 ** 32 + 5, seq: -1, wrs: [] },
    { type: 'request', qpn: 1, seq: 1.5, wrs: [{ op: 'flush', placement: 'persistent', selectivity: 'range', rkey: 3, addr: 2 ** 60 }] },
    { type: 'response', qpn: 1, seq: 2, completions: [{ id: 1, op: 'write', status: 'bogus' as 'ok' }] },
    { type: 'response', qpn: 1, seq: 2, completions: [{ id: 1, op: 'write', status: 'ok', message: 'é ✓ \ud800' }] },
    { type: 'notify', qpn: 7, data: new Uint8Array(0), imm: 2 ** 33 },
  ];
  for (const m of odd) t.equal(outcome(() => hex(encodeMessage(m))), outcome(() => hex(encodeMessageReference(m))), m.type);
});

t.test('decode: the fast path gives the reference message for every frame the reference writes', async (t) => {
  let fast = 0;
  let n = 0;
  await fc.assert(
    fc.property(message, (m) => {
      n++;
      const frame = encodeMessageReference(m);
      const ref = outcome(() => decodeMessageReference(frame));
      const f = fastDecode(frame);
      if (f !== undefined) {
        fast++;
        if (JSON.stringify(plain(f)) !== ref) throw new Error(`fast ${JSON.stringify(plain(f))}\nref  ${ref}`);
      }
      if (outcome(() => decodeMessage(frame)) !== ref) throw new Error('decodeMessage differs from the reference');
      if (m.type === 'request' && stepped(frame) !== withReference(() => stepped(frame))) throw new Error(`FrameDecoder differs: ${stepped(frame)}\nvs ${withReference(() => stepped(frame))}`);
    }),
    { seed, numRuns: 1500 },
  );
  t.ok(fast > n / 3, `${fast} of ${n} frames took the fast path`);
});

/** A frame damaged in one of several ways. */
const damaged = fc
  .tuple(message, fc.integer({ min: 0, max: 5 }), fc.nat(), fc.nat(), fc.integer({ min: 0, max: 255 }))
  .map(([m, how, i, j, byte]) => {
    const f = Array.from(encodeMessageReference(m));
    const at = f.length === 0 ? 0 : i % f.length;
    switch (how) {
      case 0: // truncated
        return Uint8Array.from(f.slice(0, at));
      case 1: // one byte changed
        if (f.length > 0) f[at] = byte;
        return Uint8Array.from(f);
      case 2: // bytes inserted (an unknown or repeated field, a wrong tag)
        f.splice(at, 0, byte, j % 256);
        return Uint8Array.from(f);
      case 3: // a length (the byte after a tag) made huge
        if (f.length > 1) f.splice(Math.max(1, at), 1, 0xff, 0xff, 0xff, 0xff, 0x0f);
        return Uint8Array.from(f);
      case 4: // a repeated tail (duplicate fields)
        return Uint8Array.from([...f, ...f.slice(Math.min(at, f.length))]);
      default: // junk
        return Uint8Array.from({ length: i % 40 }, (_, k) => (byte * (k + 7) + j) & 0xff);
    }
  });

t.test('malformed frames: the same message or the same coded error as the reference, never a crash', async (t) => {
  let errors = 0;
  let n = 0;
  await fc.assert(
    fc.property(damaged, (frame) => {
      n++;
      const ref = outcome(() => decodeMessageReference(frame));
      if (ref.startsWith('error')) errors++;
      const got = outcome(() => decodeMessage(frame));
      if (got !== ref) throw new Error(`decodeMessage ${got}\nreference     ${ref}\nframe ${hex(frame)}`);
      const s = stepped(frame);
      const sr = withReference(() => stepped(frame));
      if (s !== sr) throw new Error(`FrameDecoder ${s}\nreference    ${sr}\nframe ${hex(frame)}`);
    }),
    { seed, numRuns: 3000 },
  );
  t.ok(errors > n / 4, `${errors} of ${n} damaged frames were refused (PMRPC_ERR_BAD_FRAME), the same way both paths`);
});
