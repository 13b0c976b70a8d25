// Packed RESULTs (RPC_RESULTS_IMM): a pass's RESULTs to one client in one notify, only to a client
// whose Hello says it reads them (AcceptRequest.packedResults). The codec round-trips and refuses
// a malformed pack whole; a packing client gets every answer, in order, in fewer notifies; a client
// that does not say so gets one RESULT a request, as before.
import t from 'tap';
import { createPrng, PmemRegion, seededEntropy, type Prng } from '../../pmem/index.js';
import { layoutBytes, RecoveryStore } from '../../recovery/index.js';
import { encodeFrame, MIN_FRAME_BYTES } from '../../src/transport/index.js';
import { QueuePair, type ServerMessage } from '../../flush/index.js';
import { connectInProcess, DurableRpcClient, RPC_RESULT_IMM, RPC_RESULTS_IMM } from '../../src/rpc/index.js';
import { decodeResult, decodeResults, encodeResult, RESULT_PACK_BYTES_MAX, ResultPack } from '../../src/rpc/wire.js';
import { decodeHelloPayload, encodeHelloPayload } from '../../src/server/index.js';
import { readU64, rig, SEED, settle } from './fixtures/rig.js';

t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/rpc/packed-results.test.ts)`);

type One = { seq: number; appliedSeq: number; status: number; bytes: Uint8Array };

function randomResults(prng: Prng, n: number): One[] {
  return Array.from({ length: n }, () => {
    const seq = prng.chance(0.5) ? prng.int(1, 0xffff_ffff) : prng.int(1, Number.MAX_SAFE_INTEGER);
    return { seq, appliedSeq: prng.int(0, seq), status: prng.u32(), bytes: Uint8Array.from({ length: prng.int(0, 150) }, () => prng.int(0, 255)) };
  });
}

t.test('a pack round-trips, in order; the pack is reused between frames', async (t) => {
  const prng = createPrng(SEED);
  const pack = new ResultPack();
  let bad = 0;
  for (let round = 0; round < 300; round++) {
    const want = randomResults(prng, prng.int(1, 40));
    for (const r of want) pack.add(r.seq, r.appliedSeq, r.status, r.bytes);
    if (pack.size !== want.length) bad++;
    const frame = pack.take();
    if (pack.size !== 0) bad++;
    // Each RESULT in the pack is the single RESULT's encoding, back to back.
    if (Buffer.compare(frame, Buffer.concat(want.map((r) => encodeResult(r)))) !== 0) bad++;
    const got: One[] = [];
    // (an offset view, as a message inside a larger buffer)
    const big = new Uint8Array(frame.length + 7);
    big.set(frame, 5);
    if (!decodeResults(big.subarray(5, 5 + frame.length), (seq, appliedSeq, status, bytes) => got.push({ seq, appliedSeq, status, bytes }))) bad++;
    if (got.length !== want.length || got.some((g, i) => g.seq !== want[i]!.seq || g.appliedSeq !== want[i]!.appliedSeq || g.status !== want[i]!.status || Buffer.compare(g.bytes, want[i]!.bytes) !== 0)) bad++;
  }
  t.equal(bad, 0, `seed ${SEED}: packs that did not round-trip`);
});

t.test('a malformed pack delivers nothing', async (t) => {
  const prng = createPrng(SEED + 1);
  const pack = new ResultPack();
  for (const r of randomResults(prng, 5)) pack.add(r.seq, r.appliedSeq, r.status, r.bytes);
  const frame = pack.take();
  let called = 0;
  const count = (): void => void called++;
  t.equal(decodeResults(new Uint8Array(0), count), false, 'an empty pack');
  t.equal(decodeResults(frame.subarray(0, frame.length - 1), count), false, 'the last RESULT cut short');
  t.equal(decodeResults(Buffer.concat([frame, new Uint8Array(3)]), count), false, 'trailing bytes');
  t.equal(decodeResults(frame.subarray(0, 23), count), false, 'half a header');
  const big = frame.slice();
  new DataView(big.buffer).setUint32(20, 0xffff_fff0, true);
  t.equal(decodeResults(big, count), false, 'a length word past the frame');
  t.equal(called, 0, 'no RESULT delivered from any of them');
});

t.test('the Hello says packedResults (default true); a non-boolean is a coded refusal', async (t) => {
  t.equal(decodeHelloPayload(encodeHelloPayload({})).packedResults, true, 'the library\'s client reads packed RESULTs');
  t.equal(decodeHelloPayload(encodeHelloPayload({ packedResults: false })).packedResults, false);
  t.equal(decodeHelloPayload(new TextEncoder().encode('{}')).packedResults, undefined, 'a Hello without it: one RESULT a request');
  t.throws(() => decodeHelloPayload(new TextEncoder().encode('{"packedResults":"yes"}')), { code: 'PMRPC_ERR_BAD_HANDSHAKE' });
});

for (const strategy of ['wflush', 'farm'] as const) {
  t.test(`${strategy}: a packing client gets a pass's RESULTs in one notify; one that does not say so, one RESULT a request`, async (t) => {
    const held: Array<() => void> = [];
    const { server, fabric, nic } = rig({ strategy, schedule: (fn) => held.push(fn) });
    // Every RESULT notify, by the QP it leaves on.
    const seen = new Map<number, { single: number; packs: number; inPacks: number; seqs: number[] }>();
    const attach = nic.attach.bind(nic);
    nic.attach = (qpn: number, sink: (m: ServerMessage, lazy?: boolean) => void) =>
      attach(qpn, (m, lazy) => {
        if (m.type === 'notify') {
          const s = seen.get(qpn) ?? { single: 0, packs: 0, inPacks: 0, seqs: [] };
          seen.set(qpn, s);
          if (m.imm === RPC_RESULT_IMM) {
            s.single++;
            s.seqs.push(decodeResult(m.data)!.seq);
          } else if (m.imm === RPC_RESULTS_IMM) {
            s.packs++;
            t.ok(decodeResults(m.data, (seq) => (s.inPacks++, s.seqs.push(seq))), 'a well-formed pack');
          }
        }
        sink(m, lazy);
      });
    server.start();
    const packing = connectInProcess(server, fabric);
    // An older client: its Hello says nothing of packed RESULTs.
    const { sqp, info } = server.accept();
    const plain = new DurableRpcClient(new QueuePair(fabric.connect(sqp)), info);
    const calls = [packing, plain].map((c) => Array.from({ length: 4 }, (_, i) => c.call('inc', new Uint8Array(4).fill(i))));
    // Let every request arrive before the server's CPU runs: each client's 4 are processed in one pass.
    await settle();
    for (let i = 0; i < 1000 && held.length > 0; i++) {
      held.shift()!();
      await settle(50);
    }
    const values = await Promise.all(calls.flat().map((c) => c.result));
    t.same(values.map((v) => Number(readU64(v))).sort((a, b) => a - b), [1, 2, 3, 4, 5, 6, 7, 8], 'every call answered, each applied once');
    const o = seen.get(sqp.qpn)!;
    const p = seen.get([...seen.keys()].find((q) => q !== sqp.qpn)!)!;
    t.equal(o.packs, 0, 'the client that did not say so gets no pack');
    t.equal(o.single, 4, '...but one RESULT a request');
    t.same(o.seqs, [1, 2, 3, 4], '...in order');
    t.ok(p.packs >= 1, `the packing client got ${p.packs} pack(s)`);
    t.ok(p.packs + p.single < 4, `fewer notifies than requests (${p.packs} packs, ${p.single} single)`);
    t.same(p.seqs, [1, 2, 3, 4], 'its RESULTs in order, each once');
    t.equal(packing.durableUpTo, 4, 'every request durable');
    server.close();
  });
}

t.test('packs stay under the smallest frame bound a client may declare; a RESULT larger than a pack goes alone, in order', async (t) => {
  // The largest pack's notify frame, with the largest QP number and imm, against the transport's MIN_FRAME_BYTES.
  const full = new ResultPack();
  full.add(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, 0xffff_ffff, new Uint8Array(RESULT_PACK_BYTES_MAX - 24));
  t.equal(full.bytes, RESULT_PACK_BYTES_MAX);
  const frame = encodeFrame({ type: 'notify', qpn: 0xffff_ffff, data: full.take(), imm: RPC_RESULTS_IMM });
  t.ok(frame.length - 4 <= MIN_FRAME_BYTES, `the largest pack's frame: ${frame.length - 4} bytes (bound ${MIN_FRAME_BYTES})`);

  // A ring of 16 and results of 8 × payload[0] bytes: one pass answers 16 requests with 200-byte
  // results (224 bytes a RESULT: 4 a pack) and, in the middle, one of 1,000 bytes (alone).
  const geometry = { maxClients: 2, ringSlots: 16, slotBytes: 128, logRecords: 64, recordBytes: 128, appBytes: 1024 };
  const region = PmemRegion.createInMemory(layoutBytes(geometry), { tracing: true, entropy: seededEntropy(createPrng(SEED)) });
  RecoveryStore.format(region, geometry);
  const held: Array<() => void> = [];
  const { server, fabric, nic } = rig({ region, schedule: (fn) => held.push(fn) });
  server.register('sized', (req) => ({ images: [], result: new Uint8Array(8 * req.payload[0]!).fill(req.seq & 0xff) }));
  const frames: Array<{ imm: number; bytes: number; seqs: number[] }> = [];
  const attach = nic.attach.bind(nic);
  nic.attach = (qpn: number, sink: (m: ServerMessage, lazy?: boolean) => void) =>
    attach(qpn, (m, lazy) => {
      if (m.type === 'notify' && (m.imm === RPC_RESULT_IMM || m.imm === RPC_RESULTS_IMM)) {
        const seqs: number[] = [];
        if (m.imm === RPC_RESULT_IMM) seqs.push(decodeResult(m.data)!.seq);
        else decodeResults(m.data, (seq) => void seqs.push(seq));
        frames.push({ imm: m.imm!, bytes: m.data.length, seqs });
      }
      sink(m, lazy);
    });
  server.start();
  const c = connectInProcess(server, fabric);
  const calls = Array.from({ length: 16 }, (_, i) => c.call('sized', Uint8Array.of(i === 9 ? 125 : 25)));
  await settle();
  for (let i = 0; i < 1000 && held.length > 0; i++) {
    held.shift()!();
    await settle(50);
  }
  const results = await Promise.all(calls.map((k) => k.result));
  t.same(results.map((r) => r.length), calls.map((_, i) => (i === 9 ? 1000 : 200)), 'every result whole');
  t.same(frames.flatMap((f) => f.seqs), Array.from({ length: 16 }, (_, i) => i + 1), 'every RESULT once, in order');
  t.ok(frames.every((f) => f.imm === RPC_RESULT_IMM || f.bytes <= RESULT_PACK_BYTES_MAX), `no pack over ${RESULT_PACK_BYTES_MAX} bytes: ${frames.map((f) => f.bytes).join(', ')}`);
  t.same(frames.filter((f) => f.imm === RPC_RESULT_IMM).map((f) => f.seqs), [[10]], 'the 1,000-byte RESULT alone');
  t.ok(frames.filter((f) => f.imm === RPC_RESULTS_IMM).length >= 4, 'the others in packs of at most 4');
  server.close();
});
