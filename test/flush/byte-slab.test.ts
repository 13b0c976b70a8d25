// ByteSlab (issue 29): the NIC cache's and the RPC client's per-request copies over 64 bytes are
// views carved from 64-KiB slabs instead of one off-heap ArrayBuffer each. A view must behave as a
// fresh array would: zeroed, of the length asked, disjoint from every other view, and (the NIC's
// copies) independent of the bytes it was copied from.
import t from 'tap';
import { ByteSlab, Wr } from '../../flush/index.js';
import { encodeEntry } from '../../recovery/index.js';
import { fill, setup } from './helpers.js';

t.test('views are zeroed, of the length asked, disjoint; long ones get their own array', async (t) => {
  const slab = new ByteSlab(256, 100);
  const views: Uint8Array[] = [];
  for (const n of [80, 65, 1, 100, 90, 72]) {
    const v = slab.alloc(n);
    t.equal(v.length, n);
    t.ok(v.every((b) => b === 0), `a view of ${n} bytes is zeroed`);
    v.fill(0xaa);
    views.push(v);
  }
  // Writing every view whole did not touch another: each still reads all 0xaa, and a rewrite of one leaves the rest.
  views[0]!.fill(0x11);
  t.ok(views.slice(1).every((v) => v.every((b) => b === 0xaa)), 'views do not overlap');
  t.equal(slab.alloc(101).byteOffset, 0, 'over maxBytes: an array of its own');
  const src = fill(96, 7);
  const c = slab.copy(src);
  src.fill(9);
  t.ok(c.every((b) => b === 7), 'a copy does not follow its source');
  t.equal(slab.copy(fill(64, 3)).byteLength, 64);
});

t.test('encodeEntry into a slab view gives the bytes of a fresh array', async (t) => {
  const slab = new ByteSlab();
  const geometry = { slotBytes: 256, ringSlots: 8 };
  for (const n of [0, 5, 32, 48, 200]) {
    const req = { clientId: 3, methodId: 77, seq: 11, payload: fill(n, n + 1) };
    t.same(encodeEntry(req, geometry, (k) => slab.alloc(k)), encodeEntry(req, geometry), `payload of ${n} bytes`);
  }
});

t.test('the NIC cache keeps its own copy of a written entry over 64 bytes (the sender may reuse its buffer)', async (t) => {
  const s = setup({ nic: { drain: 'onFlush' }, fabric: { idleDrain: false } });
  const a = fill(80, 1);
  const b = fill(80, 2);
  await s.qp.postChain([Wr.write({ rkey: s.mr.rkey, addr: 0 }, a), Wr.write({ rkey: s.mr.rkey, addr: 128 }, b)]);
  t.equal(s.nic.cacheEntries, 2);
  a.fill(0xee);
  b.fill(0xee);
  s.nic.drainAll();
  t.ok(s.region.load(0, 80).every((x) => x === 1), 'the first entry landed as written');
  t.ok(s.region.load(128, 80).every((x) => x === 2), 'the second entry landed as written');
});
