// The multi-pointer redirected FLUSH (`count`, pmrpc's extension of IBTA FLUSH, docs/verbs.md
// "Redirected FLUSH"): shape checks, coded outcomes (all or nothing) and its modelled cost — one
// work request, one PCIe round trip plus the write-back of exactly its ranges' dirty lines.
// The crash-image litmus are in src/litmus/nic.ts (nic-*multi-redirected-flush*).
import t from 'tap';
import { Wr, u64le, type Completion, type WorkRequest } from '../../flush/index.js';
import { crashImages, materialize, PmemRegion } from '../../pmem/index.js';
import { modelChains } from '../../bench/index.js';
import { CX4_OPTANE, withCosts, wrCost } from '../../src/testing/index.js';
import { fill, setup } from './helpers.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/flush/redirected-flush-count.test.ts)`);

t.test('count: shape checks are exact TypeErrors on the client, PMRPC_ERR_BAD_WR at the NIC', async (t) => {
  const s = setup();
  const rk = s.mr.rkey;
  const cases: Array<[object, string]> = [
    [{ op: 'flush', placement: 'persistent', selectivity: 'range', rkey: rk, addrScratch: 0, count: 0, len: 8 }, 'count must be an integer in [1, 4096]'],
    [{ op: 'flush', placement: 'persistent', selectivity: 'range', rkey: rk, addrScratch: 0, count: 1.5, len: 8 }, 'count must be an integer in [1, 4096]'],
    [{ op: 'flush', placement: 'persistent', selectivity: 'range', rkey: rk, addrScratch: 0, count: 4097, len: 8 }, 'count must be an integer in [1, 4096]'],
    [{ op: 'flush', placement: 'persistent', selectivity: 'range', rkey: rk, addr: 0, count: 2, len: 8 }, 'count is only for a redirected flush (addrScratch)'],
    [{ op: 'flush', placement: 'persistent', selectivity: 'range', rkey: rk, addrScratch: 0, count: 2, stride: 12, len: 8 }, 'stride must be a multiple of 8 in [8, 4096]'],
    [{ op: 'flush', placement: 'persistent', selectivity: 'range', rkey: rk, addrScratch: 0, count: 2, stride: 0, len: 8 }, 'stride must be a multiple of 8 in [8, 4096]'],
    [{ op: 'flush', placement: 'persistent', selectivity: 'range', rkey: rk, addr: 0, stride: 16, len: 8 }, 'stride is only for a redirected flush (addrScratch)'],
    [{ op: 'flush', placement: 'persistent', selectivity: 'mr', rkey: rk, count: 2 }, 'count is only for a redirected flush (addrScratch)'],
  ];
  for (const [wr, msg] of cases) {
    t.throws(() => s.qp.postChain([wr as never]), new TypeError(`work request 0: ${msg}`));
    const q = s.nic.createQp(s.sqp.pd);
    let res: { completions: Completion[] } | undefined;
    const l = s.fabric.connect(q);
    l.onMessage((m) => (res = m as never));
    l.send({ type: 'request', qpn: q.qpn, seq: 0, wrs: [wr as never] });
    t.equal(res!.completions[0]!.code, 'PMRPC_ERR_BAD_WR', msg);
  }
  t.same(Wr.flushFrom('persistent', rk, { scratch: 8 }, 64), { op: 'flush', placement: 'persistent', selectivity: 'range', rkey: rk, addrScratch: 8, len: 64 }, 'no count: the single form, unchanged');
  t.same(Wr.flushFrom('persistent', rk, { scratch: 8, count: 3 }, 64, { conditional: true }), { op: 'flush', placement: 'persistent', selectivity: 'range', rkey: rk, addrScratch: 8, count: 3, len: 64, conditional: true });
});

/** Any image of the region's crash state at this moment without `v` in the 8 bytes at `at`. */
const canLose = (region: PmemRegion, at: number, v: bigint): boolean => {
  const st = region.crashState();
  for (const img of crashImages(st, { engine: 'exhaustive', maxImages: 4096 })) if (PmemRegion.openImage(materialize(st, img)).loadU64(at) !== v) return true;
  return false;
};

t.test('count: one completion for n ranges; a range outside the MR or a scratch range past the buffer is an error, and nothing is flushed', async (t) => {
  const s = setup({ seed: SEED, nic: { drain: 'onFlush' }, fabric: { idleDrain: false } });
  const rk = s.mr.rkey;
  const at = [4096, 4608, 5120];
  const ptrs = new Uint8Array(24);
  at.forEach((a, j) => ptrs.set(u64le(a), 8 * j));
  const items = at.map((a, j) => Wr.write({ rkey: rk, addr: a }, u64le(0x10 + j)));
  const ok = await s.qp.postChain([...items, Wr.write({ scratch: 0 }, ptrs), Wr.flushFrom('persistent', rk, { scratch: 0, count: 3 }, 8)]);
  t.same(ok.map((c) => c.status), ['ok', 'ok', 'ok', 'ok', 'ok'], 'one FLUSH work request, one completion');
  for (const [j, a] of at.entries()) t.notOk(canLose(s.region, a, BigInt(0x10 + j)), `item ${j} at ${a} persisted`);

  // The third pointer names a range past the MR (its half of the region): the single form's error, before anything is flushed.
  const s2 = setup({ seed: SEED, nic: { drain: 'onFlush' }, fabric: { idleDrain: false } });
  const bad = new Uint8Array(24);
  bad.set(u64le(4096), 0);
  bad.set(u64le(4608), 8);
  bad.set(u64le(s2.mr.len - 4), 16);
  const single = await s2.qp.postChain([Wr.write({ scratch: 0 }, bad), Wr.flushFrom('persistent', s2.mr.rkey, { scratch: 16 }, 8)]);
  const s3 = setup({ seed: SEED, nic: { drain: 'onFlush' }, fabric: { idleDrain: false } });
  const cs = await s3.qp.postChain([Wr.write({ rkey: s3.mr.rkey, addr: 4096 }, u64le(7)), Wr.write({ scratch: 0 }, bad), Wr.flushFrom('persistent', s3.mr.rkey, { scratch: 0, count: 3 }, 8)]);
  t.same([cs[2]!.status, cs[2]!.code], ['error', single[1]!.code], 'the same error as the single form');
  t.equal(single[1]!.code, 'PMRPC_ERR_OUT_OF_BOUNDS');
  t.ok(canLose(s3.region, 4096, 7n), 'the first (valid) range was not flushed: all or nothing');

  // Scratch range [s, s + 8·count) past the buffer (256 bytes by default): OUT_OF_BOUNDS.
  const s4 = setup();
  const e = await s4.qp.postChain([Wr.write({ scratch: 240 }, fill(16, 0)), Wr.flushFrom('persistent', s4.mr.rkey, { scratch: 240, count: 3 }, 8)]);
  t.same([e[1]!.status, e[1]!.code], ['error', 'PMRPC_ERR_OUT_OF_BOUNDS']);
  // A missing pointer anywhere in the run: failed, QP unharmed.
  const s5 = setup();
  const f = await s5.qp.postChain([Wr.write({ scratch: 0 }, u64le(4096)), Wr.write({ scratch: 16 }, u64le(4096)), Wr.flushFrom('persistent', s5.mr.rkey, { scratch: 0, count: 3 }, 8), Wr.read({ scratch: 0 }, 8, { conditional: true })]);
  t.same(f.slice(2).map((c) => [c.status, c.code]), [['failed', 'PMRPC_ERR_REDIRECT_MISSING'], ['skipped', undefined]]);
  t.match(f[2]!.message, /scratch \[8, 16\)/, 'names the missing slot');
  t.equal((await s5.qp.postChain([Wr.read({ scratch: 0 }, 8)]))[0]!.status, 'ok', 'QP unharmed');
});

t.test('modelled time: an n-item gather costs one FLUSH round trip — exactly a range FLUSH over as many dirty lines — and less than n single redirected FLUSHes', async (t) => {
  const m = withCosts(CX4_OPTANE, { name: 'gather' });
  const n = 4;
  for (const ddio of [true, false]) {
    // Items scattered a few lines apart (gather) or side by side (one range over the same number of lines).
    const run = async (stride: number, flush: (rkey: number) => WorkRequest[]): Promise<number> => {
      const { us } = await modelChains(m, SEED, ddio, (rkey) => {
        const ptrs = new Uint8Array(8 * n);
        const writes = Array.from({ length: n }, (_, j) => {
          ptrs.set(u64le(4096 + stride * j), 8 * j);
          return Wr.write({ rkey, addr: 4096 + stride * j }, fill(64, j + 1));
        });
        return [[...writes, Wr.write({ scratch: 0 }, ptrs), ...flush(rkey)]];
      });
      return Math.round(us[0]![0]! * 1000);
    };
    const gather = await run(512, (rkey) => [Wr.flushFrom('persistent', rkey, { scratch: 0, count: n }, 64)]);
    const range = await run(64, (rkey) => [Wr.flushFrom('persistent', rkey, { scratch: 0, count: 1 }, 64 * n)]);
    const singles = await run(512, (rkey) => Array.from({ length: n }, (_, j) => Wr.flushFrom('persistent', rkey, { scratch: 8 * j }, 64)));
    t.comment(`ddio ${String(ddio)}: gather of ${n} ${gather} ns, one range over ${n} lines ${range} ns, ${n} single redirected FLUSHes ${singles} ns`);
    // requestBytes counts one WQE per work request: the gather and the range chain are the same size on the wire.
    t.equal(gather, range, `ddio ${String(ddio)}: the gather is charged as one FLUSH of its ${n} lines, to the nanosecond`);
    const rtt = wrCost(m, Wr.flushFrom('persistent', 1, { scratch: 0 }, 64)).latencyNs;
    t.ok(singles - gather >= (n - 1) * rtt, `ddio ${String(ddio)}: ${n} single FLUSHes cost at least ${n - 1} more FLUSH round trips (${rtt} ns each): ${singles} − ${gather} = ${singles - gather}`);
  }
  // Deterministic: the same seed, the same modelled time.
  const again = async (): Promise<number> => (await modelChains(m, SEED, true, (rkey) => [[Wr.write({ scratch: 0 }, u64le(4096)), Wr.flushFrom('persistent', rkey, { scratch: 0, count: 1 }, 64)]])).us[0]![0]!;
  t.equal(await again(), await again());
});

t.test('stride: pointers stride bytes apart (in place in 32-byte operands); only those 8 bytes of each must be this chain\'s', async (t) => {
  const s = setup({ seed: SEED, nic: { drain: 'onFlush' }, fabric: { idleDrain: false } });
  const rk = s.mr.rkey;
  const at = [4096, 4608, 5120];
  // Three 32-byte operands [a b c ptr]: the chain writes each operand's ptr word only.
  const items = at.map((a, j) => Wr.write({ rkey: rk, addr: a }, u64le(0x20 + j)));
  const ptrs = at.map((a, j) => Wr.write({ scratch: 32 * j + 24 }, u64le(a)));
  const ok = await s.qp.postChain([...items, ...ptrs, Wr.flushFrom('persistent', rk, { scratch: 24, count: 3, stride: 32 }, 8)]);
  t.same(ok.map((c) => c.status), ['ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok'], 'one FLUSH work request over three strided pointers');
  for (const [j, a] of at.entries()) t.notOk(canLose(s.region, a, BigInt(0x20 + j)), `item ${j} at ${a} persisted`);
  // The middle operand's ptr word not written by this chain: refused, nothing flushed.
  const s2 = setup({ seed: SEED, nic: { drain: 'onFlush' }, fabric: { idleDrain: false } });
  const items2 = at.map((a, j) => Wr.write({ rkey: s2.mr.rkey, addr: a }, u64le(0x30 + j)));
  const f = await s2.qp.postChain([...items2, Wr.write({ scratch: 24 }, u64le(at[0]!)), Wr.write({ scratch: 88 }, u64le(at[2]!)), Wr.flushFrom('persistent', s2.mr.rkey, { scratch: 24, count: 3, stride: 32 }, 8), Wr.read({ scratch: 0 }, 8, { conditional: true })]);
  t.equal(f[5]!.status, 'failed');
  t.equal(f[5]!.code, 'PMRPC_ERR_REDIRECT_MISSING');
  t.match(f[5]!.message, /scratch \[56, 64\)/, 'names the missing slot');
  t.ok(canLose(s2.region, at[0]!, 0x30n), 'the first item was not flushed (all or nothing)');
  t.equal(f[6]!.status, 'skipped', 'the conditional tail does not run');
  // The pointers must fit the scratch: the last one's 8 bytes, not a whole stride past it.
  const s3 = setup({ seed: SEED, nic: { drain: 'onFlush' }, fabric: { idleDrain: false } });
  const fits = await s3.qp.postChain([Wr.write({ rkey: s3.mr.rkey, addr: 4096 }, u64le(1)), ...[184, 216, 248].map((o) => Wr.write({ scratch: o }, u64le(4096))), Wr.flushFrom('persistent', s3.mr.rkey, { scratch: 184, count: 3, stride: 32 }, 8)]);
  t.equal(fits[4]!.status, 'ok', 'pointers at 184, 216, 248: the last ends at the 256-byte buffer\'s end');
  const s4 = setup({ seed: SEED, nic: { drain: 'onFlush' }, fabric: { idleDrain: false } });
  const e = await s4.qp.postChain([...[192, 224].map((o) => Wr.write({ scratch: o }, u64le(4096))), Wr.flushFrom('persistent', s4.mr.rkey, { scratch: 192, count: 3, stride: 32 }, 8)]);
  t.equal(e[2]!.status, 'error', 'a third pointer at 256 is past the 256-byte buffer');
  t.equal(e[2]!.code, 'PMRPC_ERR_OUT_OF_BOUNDS');
});
