// The region header is the one structure pmem/ writes of its own (DESIGN §10.1): only a header that
// decodeHeader accepts is ever written — a broken invariant (PMRPC_ERR_INVARIANT) leaves the bytes
// it would have overwritten untouched.
import t from 'tap';
import { HEADER_BYTES, decodeHeader, encodeHeader } from '../../pmem/header.js';

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    return (e as { code?: string }).code ?? `not coded: ${(e as Error).message}`;
  }
  return undefined;
}

t.test('encodeHeader writes only a header decodeHeader accepts', async (t) => {
  const uuid = new Uint8Array(16).fill(9);
  const out = new Uint8Array(HEADER_BYTES).fill(7);
  for (const [what, size, u, into] of [
    ['a size that is not a multiple of the line', 100, uuid, out],
    ['a zero size', 0, uuid, out],
    ['a size past 4 GiB - 4 KiB', 2 ** 32, uuid, out],
    ['a fractional size', 64.5, uuid, out],
    ['4 uuid bytes', 4096, new Uint8Array(4), out],
  ] as const) {
    t.equal(codeOf(() => encodeHeader(into, size, u)), 'PMRPC_ERR_INVARIANT', what);
    t.ok(out.every((x) => x === 7), `${what}: nothing written`);
  }
  t.equal(codeOf(() => encodeHeader(new Uint8Array(64), 4096, uuid)), 'PMRPC_ERR_INVARIANT', 'a buffer shorter than the header');
  encodeHeader(out, 4096, uuid);
  t.equal(decodeHeader(out, HEADER_BYTES + 4096, 'test').sizeBytes, 4096, 'a valid header reads back');
});

t.test('a crash image applies only pieces inside the region\'s data (never over its header or past its end)', async (t) => {
  const { PmemRegion, crashImages, materialize } = await import('../../pmem/index.js');
  const r = PmemRegion.createInMemory(4096, { tracing: true });
  r.store(64, new Uint8Array(16).fill(5));
  const state = r.crashState();
  const image = crashImages(state).next().value!;
  t.equal(codeOf(() => materialize(state, image)), undefined, 'the region\'s own pieces');
  const media = state.media.slice();
  const c = state.components[0]!;
  for (const [what, offset] of [['over the header', -8], ['past the end', 4096 - 4], ['a fractional offset', 64.5]] as const) {
    const bad = { ...state, components: [{ ...c, pieces: [...c.pieces, { offset, bytes: new Uint8Array(8).fill(9) }] }, ...state.components.slice(1)] };
    t.equal(codeOf(() => materialize(bad, image)), 'PMRPC_ERR_INVARIANT', what);
  }
  t.same(state.media, media, 'the media the images start from is unchanged');
  r.close();
});
