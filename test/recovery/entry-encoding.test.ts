// The ring entry's bytes are persisted: encodeEntry must give, byte for byte, what the encoder
// before the hot-path rewrite gave (DataView stores, the lap's CRC then the entry's), over random
// clients, sequences (laps, sequences past 2^32), methods and payloads.
import t from 'tap';
import { createPrng, crc32c } from '../../pmem/index.js';
import { encodeEntry, lapOf } from '../../recovery/index.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/recovery/entry-encoding.test.ts)`);

/** The reference encoder (as it was, without the argument checks). */
function reference(clientId: number, seq: number, methodId: number, payload: Uint8Array, ringSlots: number): Uint8Array {
  const b = new Uint8Array((32 + payload.length + 7) & ~7);
  const dv = new DataView(b.buffer);
  dv.setUint32(8, clientId, true);
  dv.setUint32(12, methodId, true);
  dv.setUint32(16, seq >>> 0, true);
  dv.setUint32(20, Math.floor(seq / 0x1_0000_0000), true);
  dv.setUint32(24, payload.length, true);
  b.set(payload, 32);
  const lap = lapOf(seq, ringSlots);
  const lapBytes = new Uint8Array(4);
  new DataView(lapBytes.buffer).setUint32(0, lap, true);
  dv.setUint32(0, crc32c(b, 8, 32 + payload.length, crc32c(lapBytes)), true);
  dv.setUint32(4, lap, true);
  return b;
}

t.test('encodeEntry equals the reference encoding byte for byte', async (t) => {
  const prng = createPrng(SEED);
  let bad = 0;
  for (let n = 0; n < 3000; n++) {
    const ringSlots = prng.int(1, 64);
    const slotBytes = 64 * prng.int(1, 8);
    const clientId = prng.int(1, 0xffff_ffff);
    const methodId = prng.u32();
    const seq = prng.chance(0.3) ? prng.int(1, ringSlots * 1000) : prng.int(1, Math.min(Number.MAX_SAFE_INTEGER, ringSlots * 0xffff_ffff));
    const payload = Uint8Array.from({ length: prng.int(0, slotBytes - 32) }, () => prng.int(0, 255));
    const got = encodeEntry({ clientId, seq, methodId, payload }, { slotBytes, ringSlots });
    const want = reference(clientId, seq, methodId, payload, ringSlots);
    if (got.length !== want.length || got.some((v, i) => v !== want[i])) {
      if (bad++ === 0) t.fail(`seed ${SEED} case ${n}: clientId ${clientId} seq ${seq} methodId ${methodId} payload ${payload.length} B differs`);
    }
  }
  t.equal(bad, 0, 'entries that differ');
});
