// PRISM extensions: indirect / bounded READ and WRITE, dataIndirect, ALLOCATE, enhanced CAS (every
// mode, masks, widths), chains with conditional and redirect, durable chains.
import t from 'tap';
import { CAS_MODES, Wr, bigintToLe, casSucceeds, leToBigint, u64le, type CasMode, type Completion } from '../../flush/index.js';
import { crashImages, materialize, HEADER_BYTES, PmemRegion, type CrashState } from '../../pmem/index.js';
import { fill, setup } from './helpers.js';

const ptrBound = (ptr: number, bound: number): Uint8Array => {
  const b = new Uint8Array(16);
  b.set(u64le(ptr), 0);
  b.set(u64le(bound), 8);
  return b;
};

t.test('indirect and bounded READ', async (t) => {
  const s = setup();
  const rk = s.mr.rkey;
  s.region.store(1024, Uint8Array.from({ length: 16 }, (_, i) => i + 1));
  s.region.store(0, u64le(1024));
  s.region.store(64, ptrBound(1024, 5));
  t.same(await s.qp.read({ rkey: rk, addr: 0 }, 4, { indirect: true }), Uint8Array.of(1, 2, 3, 4));
  t.same(await s.qp.read({ rkey: rk, addr: 64 }, 8, { bounded: true }), Uint8Array.of(1, 2, 3, 4, 5), 'min(len, bound) bytes');
  t.same(await s.qp.read({ rkey: rk, addr: 64 }, 3, { bounded: true }), Uint8Array.of(1, 2, 3));
  s.region.store(200, u64le(1032));
  t.same(await s.qp.read({ scratch: 0 }, 8), new Uint8Array(8));
  await s.qp.write({ scratch: 16 }, u64le(1028));
  t.same(await s.qp.read({ scratch: 16 }, 2, { indirect: true, targetRkey: rk }), Uint8Array.of(5, 6), 'a pointer held in scratch, with targetRkey');
});

t.test('indirect and bounded WRITE, dataIndirect from memory and from scratch', async (t) => {
  const s = setup();
  const rk = s.mr.rkey;
  s.region.store(0, u64le(2048));
  s.region.store(64, ptrBound(3072, 8));
  await s.qp.write({ rkey: rk, addr: 0 }, fill(4, 9), { indirect: true });
  t.same(s.region.load(2048, 4), fill(4, 9));
  await s.qp.write({ rkey: rk, addr: 64 }, fill(8, 7), { bounded: true });
  t.same(s.region.load(3072, 8), fill(8, 7));
  await s.qp.post(Wr.writeFrom({ rkey: rk, addr: 4096 }, { rkey: rk, addr: 2048 }, 4));
  t.same(s.region.load(4096, 4), fill(4, 9));
  await s.qp.write({ scratch: 32 }, fill(6, 3));
  await s.qp.post(Wr.writeFrom({ rkey: rk, addr: 0 }, { scratch: 32 }, 6, { indirect: true }));
  t.same(s.region.load(2048, 6), fill(6, 3), 'addrIndirect + dataIndirect together');
});

t.test('a buffer is on a free list at most once: posting one already there is a broken invariant, after its ALLOCATE it may come back', async (t) => {
  const s = setup();
  const rk = s.mr.rkey;
  s.nic.postFreeBuffers(s.mr, 64, [8192, 8256]);
  t.throws(() => s.nic.postFreeBuffers(s.mr, 64, [8320, 8192]), { code: 'PMRPC_ERR_INVARIANT' }, 'already on the list');
  t.throws(() => s.nic.postFreeBuffers(s.mr, 64, [8384, 8384]), { code: 'PMRPC_ERR_INVARIANT' }, 'twice in one post');
  s.nic.postFreeBuffers(s.mr, 128, [8192]); // another size class is another list
  const c = await s.qp.post(Wr.allocate(rk, 64, fill(4, 1)));
  t.same([c.status, leToBigint(c.data!)], ['ok', 8192n]);
  s.nic.postFreeBuffers(s.mr, 64, [8192]); // allocated, so it may be returned
  const order: bigint[] = [];
  for (let i = 0; i < 5; i++) {
    const d = await s.qp.post(Wr.allocate(rk, 64, fill(4, 2)));
    if (d.status === 'ok') order.push(leToBigint(d.data!));
  }
  t.same(order, [8256n, 8320n, 8384n, 8192n], 'FIFO, each buffer once (the refused posts added what they added before the duplicate)');
  let n = 0;
  for (let i = 0; i < 3000; i++) s.nic.postFreeBuffers(s.mr, 8, [8 * i]);
  for (let i = 0; i < 2500; i++) if ((await s.qp.post(Wr.allocate(rk, 8, new Uint8Array(0)))).status === 'ok') n++;
  t.equal(n, 2500);
  t.equal(s.nic.freeBufferCount(s.mr, 8), 500, 'the count stays exact across compactions of the consumed prefix');
});

t.test('ALLOCATE pops the free list of its size class in order, writes the data, returns the address', async (t) => {
  const s = setup();
  const rk = s.mr.rkey;
  s.nic.postFreeBuffers(s.mr, 64, [8192, 8256]);
  s.nic.postFreeBuffers(s.mr, 256, [9216]);
  const c1 = await s.qp.post(Wr.allocate(rk, 64, fill(10, 1)));
  t.same([c1.status, leToBigint(c1.data!)], ['ok', 8192n]);
  t.same(s.region.load(8192, 10), fill(10, 1));
  const c2 = await s.qp.post(Wr.allocate(rk, 256, fill(200, 2)));
  t.equal(leToBigint(c2.data!), 9216n);
  t.equal(s.nic.freeBufferCount(s.mr, 64), 1);
  const c3 = await s.qp.post(Wr.allocate(rk, 256, fill(1, 2)));
  t.same([c3.status, c3.code], ['failed', 'PMRPC_ERR_ALLOC_EMPTY']);
  t.equal(s.sqp.state, 'ready', 'an empty list is a failure, not a QP error');
  s.nic.refuseAllocate();
  const c4 = await s.qp.post(Wr.allocate(rk, 64, fill(1, 2)));
  t.same([c4.status, c4.code], ['failed', 'PMRPC_ERR_ALLOC_REFUSED']);
  t.equal(s.nic.freeBufferCount(s.mr, 64), 1, 'a refused ALLOCATE pops nothing');
  s.nic.acceptAllocate();
  const c5 = await s.qp.post(Wr.allocate(rk, 64, new Uint8Array(0), { redirect: 40 }));
  t.equal(c5.data, undefined, 'redirected output is not returned');
  t.same(s.sqp.scratch().subarray(40, 48), u64le(8256));
  s.nic.clearFreeLists();
  t.equal(s.nic.freeBufferCount(s.mr, 64), 0);
});

t.test('enhanced CAS: every mode, unsigned little-endian, with the operand compared to the current value', async (t) => {
  const s = setup();
  const rk = s.mr.rkey;
  // current value 5; operand 3, 5, 7
  const expect: Record<CasMode, [boolean, boolean, boolean]> = {
    eq: [false, true, false],
    ne: [true, false, true],
    lt: [true, false, false],
    le: [true, true, false],
    gt: [false, false, true],
    ge: [false, true, true],
  };
  for (const mode of CAS_MODES) {
    const got: boolean[] = [];
    for (const operand of [3n, 5n, 7n]) {
      s.region.store(128, bigintToLe(5n, 16));
      const c = await s.qp.post(Wr.prismCas(mode, { rkey: rk, addr: 128 }, bigintToLe(operand, 16)));
      t.same(c.data, bigintToLe(5n, 16), 'returns the old value');
      t.equal(leToBigint(s.region.load(128, 16)), c.swapped ? operand : 5n);
      got.push(c.swapped === true);
    }
    t.same(got, expect[mode], mode);
  }
  // The most significant byte is the last: 0x0100 > 0x00ff.
  s.region.store(256, Uint8Array.of(0xff, 0x00));
  const c = await s.qp.post(Wr.prismCas('gt', { rkey: rk, addr: 256 }, Uint8Array.of(0x00, 0x01)));
  t.equal(c.swapped, true);
});

t.test('enhanced CAS masks: compare only the compare mask, write only the swap mask; 32-byte operands', async (t) => {
  const s = setup();
  const rk = s.mr.rkey;
  const target = Uint8Array.from({ length: 32 }, (_, i) => i);
  s.region.store(512, target);
  const data = new Uint8Array(32).fill(0xaa);
  data[0] = 0; // equal to target[0] under a mask of byte 0 only
  const cmp = new Uint8Array(32);
  cmp[0] = 0xff;
  const swap = new Uint8Array(32);
  swap.fill(0xff, 16, 32);
  const c = await s.qp.post(Wr.prismCas('eq', { rkey: rk, addr: 512 }, data, { compareMask: cmp, swapMask: swap }));
  t.equal(c.swapped, true);
  const after = s.region.load(512, 32);
  t.same(after.subarray(0, 16), target.subarray(0, 16), 'outside the swap mask: unchanged');
  t.same(after.subarray(16), fill(16, 0xaa), 'inside the swap mask: the operand');
  const c2 = await s.qp.post(Wr.prismCas('eq', { rkey: rk, addr: 512 }, fill(32, 1), { compareMask: cmp }));
  t.equal(c2.swapped, false);
  // pure helpers agree
  t.equal(casSucceeds('lt', Uint8Array.of(9), Uint8Array.of(3)), true);
  t.equal(casSucceeds('eq', Uint8Array.of(0x0f), Uint8Array.of(0xff), Uint8Array.of(0x0f)), true);
});

t.test('enhanced CAS: targetIndirect and dataIndirect', async (t) => {
  const s = setup();
  const rk = s.mr.rkey;
  s.region.store(0, u64le(640));
  s.region.store(700, fill(8, 4));
  const c = await s.qp.post(Wr.prismCasFrom('ne', { rkey: rk, addr: 0 }, { rkey: rk, addr: 700 }, 8, { indirect: true }));
  t.equal(c.swapped, true);
  t.same(s.region.load(640, 8), fill(8, 4));
});

t.test('chains: conditional follows the previous op of the QP; skipped ops make later conditionals skip too', async (t) => {
  const s = setup();
  const rk = s.mr.rkey;
  const at = { rkey: rk, addr: 64 };
  const cs = await s.qp.postChain([
    Wr.cas(at, 1n, 2n), // fails: value is 0
    Wr.write({ rkey: rk, addr: 128 }, fill(8, 1), { conditional: true }),
    Wr.write({ rkey: rk, addr: 136 }, fill(8, 1), { conditional: true }),
    Wr.write({ rkey: rk, addr: 144 }, fill(8, 1)),
    Wr.write({ rkey: rk, addr: 152 }, fill(8, 1), { conditional: true }),
  ]);
  t.same(
    cs.map((c) => c.status),
    ['ok', 'skipped', 'skipped', 'ok', 'ok'],
  );
  t.same(s.region.load(128, 32), new Uint8Array([...new Uint8Array(16), ...fill(16, 1)]));
  const next = await s.qp.post(Wr.write({ rkey: rk, addr: 160 }, fill(8, 1), { conditional: true }));
  t.equal(next.status, 'ok', 'the first op of a chain follows the last op of the previous chain');
  s.nic.postFreeBuffers(s.mr, 64, []);
  const [alloc, dep] = await s.qp.postChain([Wr.allocate(rk, 64, fill(8, 1)), Wr.write({ rkey: rk, addr: 168 }, fill(8, 1), { conditional: true })]);
  t.same([alloc!.status, dep!.status], ['failed', 'skipped'], 'a failed ALLOCATE fails the chain');
});

t.test('ALLOCATE → redirect → conditional CAS with dataIndirect installs an object in one round trip', async (t) => {
  const s = setup();
  const rk = s.mr.rkey;
  s.nic.postFreeBuffers(s.mr, 64, [8192]);
  const slot = { rkey: rk, addr: 256 };
  const obj = fill(40, 0x5c);
  const before = s.nic.stats.messages;
  const cs = await s.qp.postChain([Wr.allocate(rk, 64, obj, { redirect: 0 }), Wr.prismCasFrom('eq', slot, { scratch: 0 }, 8, { conditional: true, compareMask: new Uint8Array(8) })]);
  t.equal(s.nic.stats.messages - before, 1, 'one message');
  t.same(cs.map((c) => [c.status, c.swapped]), [
    ['ok', undefined],
    ['ok', true],
  ]);
  t.equal(s.region.loadU64(256), 8192n);
  t.same(await s.qp.read(slot, 40, { indirect: true }), obj, 'readers find the object through the slot');
  // With the list empty, the CAS is skipped and the slot keeps its pointer.
  const cs2 = await s.qp.postChain([Wr.allocate(rk, 64, obj, { redirect: 0 }), Wr.prismCasFrom('eq', slot, { scratch: 0 }, 8, { conditional: true, compareMask: new Uint8Array(8) })]);
  t.same(cs2.map((c) => c.status), ['failed', 'skipped']);
  t.equal(s.region.loadU64(256), 8192n);
});

/** Over every crash point of `run` and every image: when the slot holds the new pointer, is the object there? */
async function durableChainImages(withHeapFlush: boolean): Promise<{ pointerWithoutObject: number; pointerWithObject: number; images: number }> {
  const s = setup({ nic: { drain: 'onFlush' } });
  const rk = s.mr.rkey;
  s.nic.postFreeBuffers(s.mr, 64, [8192]);
  const states: CrashState[] = [];
  s.region.setCrashPointHook(() => states.push(s.region.crashState()));
  const obj = fill(16, 0x77);
  const chain = [
    Wr.allocate(rk, 64, obj, { redirect: 0 }),
    ...(withHeapFlush ? [Wr.flush('persistent', rk, { addr: 8192, len: 64 })] : []),
    Wr.prismCasFrom('eq', { rkey: rk, addr: 256 }, { scratch: 0 }, 8, { conditional: true, compareMask: new Uint8Array(8) }),
    Wr.flush('persistent', rk, { addr: 256, len: 8 }),
  ];
  const cs: Completion[] = await s.qp.postChain(chain);
  if (!cs.every((c) => c.status === 'ok')) throw new Error('chain failed');
  s.region.setCrashPointHook(undefined);
  let pointerWithoutObject = 0;
  let pointerWithObject = 0;
  let images = 0;
  for (const st of states) {
    for (const img of crashImages(st, { engine: 'exhaustive' })) {
      const b = materialize(st, img);
      images++;
      if (leToBigint(b.subarray(HEADER_BYTES + 256, HEADER_BYTES + 264)) !== 8192n) continue;
      const present = b.subarray(HEADER_BYTES + 8192, HEADER_BYTES + 8208).every((x) => x === 0x77);
      if (present) pointerWithObject++;
      else pointerWithoutObject++;
    }
  }
  return { pointerWithoutObject, pointerWithObject, images };
}

t.test('durable chain: with FLUSH(persistent) on the heap before the CAS, no crash image has the pointer without the object', async (t) => {
  const good = await durableChainImages(true);
  t.ok(good.images > 0 && good.pointerWithObject > 0);
  t.equal(good.pointerWithoutObject, 0);
  const bad = await durableChainImages(false);
  t.ok(bad.pointerWithoutObject > 0, 'without the heap flush, some image has a durable pointer to a missing object');
});

t.test('redirected FLUSH: shape checks are exact TypeErrors on the client, PMRPC_ERR_BAD_WR at the NIC', async (t) => {
  const s = setup();
  const rk = s.mr.rkey;
  const cases: Array<[object, string]> = [
    [{ op: 'flush', placement: 'persistent', selectivity: 'mr', rkey: rk, addrScratch: 0, len: 8 }, 'addrScratch is only for a range flush'],
    [{ op: 'flush', placement: 'persistent', selectivity: 'range', rkey: rk, addr: 0, addrScratch: 0, len: 8 }, 'a range flush takes addr or addrScratch, not both'],
    [{ op: 'flush', placement: 'persistent', selectivity: 'range', rkey: rk, addrScratch: -1, len: 8 }, 'addrScratch must be a scratch offset (non-negative integer)'],
    [{ op: 'flush', placement: 'persistent', selectivity: 'range', rkey: rk, addrScratch: 0 }, 'a redirected flush needs len, an integer in [0, 16777216]'],
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
});

t.test('redirected FLUSH: coded outcomes — missing input is failed (QP unharmed), a bad pointer or scratch offset is an error', async (t) => {
  const s = setup({ nic: { drain: 'onFlush' } });
  const rk = s.mr.rkey;
  s.nic.postFreeBuffers(s.mr, 64, [4096]);
  // Never produced in this chain: 'failed', REDIRECT_MISSING, the QP goes on.
  const [miss, tail] = await s.qp.postChain([Wr.flushFrom('persistent', rk, { scratch: 0 }, 64), Wr.write({ rkey: rk, addr: 0 }, u64le(1), { conditional: true })]);
  t.equal(miss!.status, 'failed');
  t.equal(miss!.code, 'PMRPC_ERR_REDIRECT_MISSING');
  t.equal(tail!.status, 'skipped');
  t.equal(s.qp.state, 'ready');
  // Produced by this chain's ALLOCATE: ok, and the item is on media.
  const [, fl] = await s.qp.postChain([Wr.allocate(rk, 64, fill(64, 7), { redirect: 0 }), Wr.flushFrom('persistent', rk, { scratch: 0 }, 64)]);
  t.equal(fl!.status, 'ok');
  const st = s.region.crashState();
  let images = 0;
  for (const img of crashImages(st, { engine: 'exhaustive', maxImages: 256 })) {
    images++;
    t.same(PmemRegion.openImage(materialize(st, img)).load(4096, 64), fill(64, 7), 'the item in every crash image');
  }
  t.ok(images > 0);
  // A pointer this chain wrote into scratch, outside the MR: PMRPC_ERR_OUT_OF_BOUNDS (QP error).
  const q2 = s.connect().qp;
  const [, oob] = await q2.postChain([Wr.write({ scratch: 16 }, u64le(1 << 20)), Wr.flushFrom('persistent', rk, { scratch: 16 }, 8)]);
  t.equal(oob!.code, 'PMRPC_ERR_OUT_OF_BOUNDS');
  t.equal(q2.state, 'error');
  // A scratch offset past the scratch buffer: PMRPC_ERR_OUT_OF_BOUNDS.
  const q3 = s.connect().qp;
  const [past] = await q3.postChain([Wr.flushFrom('persistent', rk, { scratch: 252 }, 8)]);
  t.equal(past!.code, 'PMRPC_ERR_OUT_OF_BOUNDS');
});
