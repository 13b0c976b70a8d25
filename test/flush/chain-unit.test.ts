// A chain is one unit on the emulated NIC (issue 27, item 4; docs/verbs.md "Chains"): checked once
// (when it arrives, or not again when this process's verbs layer checked it), executed in one NIC
// pass in immediate mode — with exactly the effects, completions and crash points of executing it
// work request by work request (the seeded fabric and the explorer still interleave inside it).
import t from 'tap';
import fc from 'fast-check';
import { Wr, leToBigint, readPtr, u64le, type Completion, type ServerMessage, type WorkRequest } from '../../flush/index.js';
import { chainError, markChecked } from '../../flush/validate.js';
import { fill, setup } from './helpers.js';

t.test('readPtr (no BigInt) decodes what the BigInt path decodes, Infinity past 2^53 − 1', async (t) => {
  const seed = Date.now() % 1_000_000;
  t.comment(`fast-check seed ${seed}`);
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 0, maxLength: 24 }), fc.nat(24), (b, off) => {
      const v = leToBigint(b.subarray(off, off + 8));
      const want = v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : Number.POSITIVE_INFINITY;
      return readPtr(b, off) === want;
    }),
    { seed, numRuns: 2000 },
  );
  t.equal(readPtr(u64le(Number.MAX_SAFE_INTEGER)), Number.MAX_SAFE_INTEGER);
  t.equal(readPtr(u64le(2n ** 53n)), Number.POSITIVE_INFINITY);
  t.equal(readPtr(Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)), Number.POSITIVE_INFINITY);
  t.equal(readPtr(u64le(0xdeadbeefn + (0x1234n << 32n))), 0xdeadbeef + 0x1234 * 2 ** 32);
});

t.test('chainError: the first malformed request in one pass; a chain the verbs layer checked is not checked again', async (t) => {
  const ok = Wr.read({ rkey: 1, addr: 0 }, 8);
  t.equal(chainError([ok, ok]), undefined);
  t.same(chainError([ok, { op: 'teleport' }, { op: 'nope' }]), { index: 1, why: 'op must be one of write, writeImm, read, send, cas, faa, atomicWrite, flush, prismCas, allocate, got teleport' });
  // What markChecked means: the verbs layer has checked this very array and given it up.
  const given: WorkRequest[] = [ok, { op: 'teleport' } as never];
  markChecked(given);
  t.equal(chainError(given), undefined, 'not checked a second time');
  t.not(chainError([...given]), undefined, 'a copy (a chain decoded from a wire) is checked');
});

t.test('a malformed request inside a chain from the link: the requests before it run, it fails BAD_WR, the rest are flushed', async (t) => {
  const s = setup();
  const rk = s.mr.rkey;
  const sqp = s.nic.createQp(s.sqp.pd);
  const link = s.fabric.connect(sqp);
  let res: ServerMessage | undefined;
  link.onMessage((m) => (res = m));
  link.send({ type: 'request', qpn: sqp.qpn, seq: 0, wrs: [Wr.write({ rkey: rk, addr: 0 }, fill(8, 3)), { op: 'teleport' } as never, Wr.write({ rkey: rk, addr: 64 }, fill(8, 4))] });
  const cs = (res as { completions: Completion[] }).completions;
  t.same(cs.map((c) => [c.status, c.code]), [['ok', undefined], ['error', 'PMRPC_ERR_BAD_WR'], ['error', 'PMRPC_ERR_WR_FLUSHED']]);
  t.same(s.region.load(0, 8), fill(8, 3), 'the request before it ran');
  t.same(s.region.load(64, 8), new Uint8Array(8), 'the one after it did not');
  t.equal(sqp.state, 'error');
});

t.test('one pass (immediate) and step by step (seeded) give the same completions, memory and scratch for the same chains', async (t) => {
  const run = async (delivery: 'immediate' | 'seeded'): Promise<{ cs: Completion[][]; mem: Uint8Array; scratch: Uint8Array; stats: unknown }> => {
    const s = setup({ fabric: { delivery, seed: 5 }, nic: { drain: 'onFlush' } });
    const rk = s.mr.rkey;
    s.nic.postFreeBuffers(s.mr, 64, [4096, 4160, 4224]);
    s.region.store(512, u64le(1024));
    const chains: WorkRequest[][] = [
      [Wr.allocate(rk, 64, fill(40, 9), { redirect: 0 }), Wr.flushFrom('persistent', rk, { scratch: 0 }, 40, { conditional: true }), Wr.prismCasFrom('gt', { rkey: rk, addr: 256 }, { scratch: 0 }, 8, { conditional: true }), Wr.flush('persistent', rk, { addr: 256, len: 8 })],
      [Wr.read({ rkey: rk, addr: 512 }, 4, { indirect: true }), Wr.write({ rkey: rk, addr: 1024 }, fill(4, 6)), Wr.read({ rkey: rk, addr: 1024 }, 4)],
      [Wr.prismCas('eq', { rkey: rk, addr: 256 }, u64le(1)), Wr.write({ rkey: rk, addr: 2048 }, fill(8, 1), { conditional: true }), Wr.read({ rkey: rk, addr: 2048 }, 8)],
    ];
    const got = chains.map((c) => s.qp.postChain(c));
    if (delivery === 'seeded') s.fabric.run();
    const cs = await Promise.all(got);
    s.nic.drainAll();
    const st = s.nic.stats;
    return { cs, mem: s.region.load(0, 8192), scratch: s.sqp.scratch(), stats: { wrs: st.wrs, errors: st.errors, messages: st.messages, flushes: st.flushes } };
  };
  const a = await run('immediate');
  const b = await run('seeded');
  t.same(a.cs, b.cs, 'completions');
  t.same(a.mem, b.mem, 'memory');
  t.same(a.scratch, b.scratch, 'scratch');
  t.same(a.stats, b.stats, 'NIC counters');
  t.equal(a.cs[0]![2]!.swapped, true, 'the install chain swapped (the comparison is not vacuous)');
  t.same(a.cs[1]![2]!.data, fill(4, 6));
});

t.test('a crash point inside a chain executed in one pass: images between its requests, as step by step', async (t) => {
  // The sfence of the redirected FLUSH's persist is a crash point between the chain's ALLOCATE and its CAS:
  // at that point the item is being persisted and the slot is not yet written, in one pass too.
  const s = setup({ nic: { drain: 'onFlush', ddio: true } });
  const rk = s.mr.rkey;
  s.nic.postFreeBuffers(s.mr, 64, [4096]);
  const seen: string[] = [];
  s.region.setCrashPointHook((e) => {
    if (e.kind !== 'drain') return;
    seen.push(`item=${s.region.load(4096, 1)[0]} slot=${leToBigint(s.region.load(256, 8))}`);
  });
  await s.qp.postChain([Wr.allocate(rk, 64, fill(40, 9), { redirect: 0 }), Wr.flushFrom('persistent', rk, { scratch: 0 }, 40, { conditional: true }), Wr.prismCasFrom('gt', { rkey: rk, addr: 256 }, { scratch: 0 }, 8, { conditional: true }), Wr.flush('persistent', rk, { addr: 256, len: 8 })]);
  t.ok(seen.length >= 2, `drain points: ${seen.join(' | ')}`);
  t.equal(seen[0], 'item=9 slot=0', 'the item FLUSH runs before the CAS wrote the slot');
  t.equal(seen.at(-1), 'item=9 slot=4096', 'the slot FLUSH after it');
});

t.test('unsignaled work requests: no completion when they succeed, their error when they do not', async (t) => {
  const s = setup();
  const rk = s.mr.rkey;
  const sqp = s.nic.createQp(s.sqp.pd);
  const link = s.fabric.connect(sqp);
  const got: Completion[][] = [];
  link.onMessage((m) => {
    if (m.type === 'response') got.push(m.completions);
  });
  const w = (addr: number, v: number, rkey = rk): WorkRequest => ({ ...Wr.write({ rkey, addr }, fill(8, v)), unsignaled: true });
  // A gathered chain: three unsignaled WRITEs and a signaled FLUSH — one completion, the FLUSH's.
  link.send({ type: 'request', qpn: sqp.qpn, seq: 0, wrs: [w(0, 1), w(64, 2), w(128, 3), Wr.flush('persistent', rk, { addr: 0, len: 136 })] });
  t.same(got[0]!.map((c) => [c.id, c.op, c.status]), [[3, 'flush', 'ok']], 'only the signaled FLUSH answers (named by its index)');
  t.same([s.region.load(0, 8), s.region.load(64, 8), s.region.load(128, 8)], [fill(8, 1), fill(8, 2), fill(8, 3)], 'every unsignaled WRITE ran');
  // An unsignaled WRITE with a wrong rkey: its error completion, and the rest flushed with errors.
  link.send({ type: 'request', qpn: sqp.qpn, seq: 1, wrs: [w(192, 4), w(256, 5, rk + 999), w(320, 6), Wr.flush('persistent', rk, { addr: 192, len: 136 })] });
  t.same(got[1]!.map((c) => [c.id, c.status, c.code]), [[1, 'error', 'PMRPC_ERR_BAD_RKEY'], [2, 'error', 'PMRPC_ERR_WR_FLUSHED'], [3, 'error', 'PMRPC_ERR_WR_FLUSHED']], 'a failure always answers');
  t.same(s.region.load(192, 8), fill(8, 4), 'the WRITE before it ran');
  t.equal(chainError([{ ...Wr.read({ rkey: 1, addr: 0 }, 8), unsignaled: 'yes' } as never])?.why, 'unsignaled must be a boolean');
});
