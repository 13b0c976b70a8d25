// ACK and RESULT messages: decode(encode(m)) = m over random sequences (past 2^32), statuses and
// result lengths; wrong lengths are refused. The decoders read bytes without a DataView.
import t from 'tap';
import { createPrng } from '../../pmem/index.js';
import { decodeAck, decodeResult, encodeAck, encodeResult } from '../../src/rpc/wire.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/rpc/wire.test.ts)`);

t.test('round trip over random messages', async (t) => {
  const prng = createPrng(SEED);
  let bad = 0;
  for (let n = 0; n < 2000; n++) {
    const seq = prng.chance(0.5) ? prng.int(1, 0xffff_ffff) : prng.int(1, Number.MAX_SAFE_INTEGER);
    const appliedSeq = prng.int(0, seq);
    const status = prng.u32();
    const bytes = Uint8Array.from({ length: prng.int(0, 80) }, () => prng.int(0, 255));
    const ack = decodeAck(encodeAck(seq));
    // an offset view, as a message inside a larger buffer
    const enc = encodeResult({ seq, appliedSeq, status, bytes });
    const big = new Uint8Array(enc.length + 5);
    big.set(enc, 3);
    const r = decodeResult(big.subarray(3, 3 + enc.length));
    if (ack !== seq || r === undefined || r.seq !== seq || r.appliedSeq !== appliedSeq || r.status !== status || Buffer.compare(r.bytes, bytes) !== 0) bad++;
  }
  t.equal(bad, 0, `seed ${SEED}: messages that did not round-trip`);
  t.equal(decodeAck(new Uint8Array(7)), undefined);
  t.equal(decodeResult(new Uint8Array(23)), undefined);
  const enc = encodeResult({ seq: 1, appliedSeq: 1, status: 0, bytes: new Uint8Array(4) });
  t.equal(decodeResult(enc.subarray(0, enc.length - 1)), undefined, 'a length word that disagrees is refused');
});
