// The digest handler's effects, byte for byte, against the form it had before issue 29's cut
// (DataView + BigInt per request): the same digest, counter and result for random requests.
import t from 'tap';
import { crc32c } from '../../pmem/index.js';
import { digestHandler, DIGEST_BYTES, LOG_BASE } from '../../src/apps/rpc/digest.js';
import type { AppView } from '../../recovery/index.js';

function reference(clientId: number, seq: number, payload: Uint8Array, n: number): { log: Uint8Array; counter: Uint8Array; result: Uint8Array } {
  const d = new Uint8Array(DIGEST_BYTES);
  const dv = new DataView(d.buffer);
  dv.setUint32(0, clientId, true);
  dv.setUint32(4, seq, true);
  dv.setUint32(8, crc32c(payload), true);
  dv.setUint32(12, n, true);
  const c = new Uint8Array(8);
  new DataView(c.buffer).setBigUint64(0, BigInt(n + 1), true);
  return { log: d, counter: c, result: d.slice(8, 16) };
}

t.test('digestHandler writes the bytes the DataView form wrote', (t) => {
  let x = 0x9e3779b9;
  const rnd = (): number => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return x >>> 0;
  };
  const counts = [0, 1, 255, 256, 65535, 0x7fff_ffff, 0xffff_fffe, 0xffff_ffff, 2 ** 40 + 7];
  for (let i = 0; i < 200; i++) {
    const n = i < counts.length ? counts[i]! : rnd() % 100_000;
    const payload = new Uint8Array(rnd() % 300);
    for (let k = 0; k < payload.length; k++) payload[k] = rnd() & 0xff;
    const clientId = rnd() % 4096;
    const seq = rnd();
    const view = { sizeBytes: Number.MAX_SAFE_INTEGER, loadU64: () => BigInt(n), loadU32: (off: number) => (off === 0 ? n % 2 ** 32 : Math.floor(n / 2 ** 32)) } as unknown as AppView;
    const eff = digestHandler({ clientId, seq, method: 'append-digest', payload }, view) as { images: Array<{ offset: number; bytes: Uint8Array }>; result: Uint8Array };
    const ref = reference(clientId, seq, payload, n);
    t.same([...eff.images[0]!.bytes], [...ref.log], `digest bytes, n=${n}`);
    t.equal(eff.images[0]!.offset, LOG_BASE + n * DIGEST_BYTES);
    t.same([...eff.images[1]!.bytes], [...ref.counter], `counter bytes, n=${n}`);
    t.equal(eff.images[1]!.offset, 0);
    t.same([...eff.result], [...ref.result], `result, n=${n}`);
    if (i >= counts.length && i > 40) break;
  }
  t.end();
});
