// Invariants of PRISM-KV's persistent state (DESIGN §10.1):
// checked where the server CPU changes it — recovery's slot writes, the epoch, the free lists it
// posts, the buffers the return desk frees — before the bad state is written. Each case breaks the
// state under the code (a stray store, a corrupted buffer, a check skipped as a mutant skips it)
// and asserts PMRPC_ERR_INVARIANT and that PM (or the NIC's free lists) is unchanged; the correct
// code over the same state passes.
import t from 'tap';
import { createPrng, isInvariantError, PmemRegion, seededEntropy } from '../../../pmem/index.js';
import { Access, Rnic } from '../../../flush/index.js';
import { KV_EPOCH_OFFSET, ReturnDesk, decodeSlot, encodeItem, encodeSlot, slotOffset } from '../../../src/apps/kv/index.js';
import { checkKvLastResort, checkKvSlotRewrite, checkKvSlotWrite } from '../../../src/apps/kv/server.js';
import { kvSetup, te } from './helpers.js';

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    return (e as { code?: string }).code ?? `not coded: ${(e as Error).message}`;
  }
  return undefined;
}

t.test('a slot word recovery writes: empty, or an arena buffer boundary with its class as bound and its item\'s version', async (t) => {
  const { region, server } = await kvSetup();
  const g = server.geometry;
  const buf = g.classes[0]!.offset;
  region.store(buf, encodeItem({ key: te.encode('k'), value: te.encode('v'), version: 5n, tombstone: false }));
  const ok = { ptr: buf, bound: g.classes[0]!.sizeBytes, version: 5n };
  t.equal(codeOf(() => checkKvSlotWrite(region, g, 0, ok)), undefined, 'the slot of a valid item');
  t.equal(codeOf(() => checkKvSlotWrite(region, g, 0, { ptr: g.base, bound: 0, version: 0n })), undefined, 'an empty slot');
  const bad: Array<[string, number, { ptr: number; bound: number; version: bigint }]> = [
    ['an empty slot with a bound', 0, { ptr: g.base, bound: 64, version: 0n }],
    ['an empty slot with a version', 0, { ptr: g.base, bound: 0, version: 3n }],
    ['a pointer inside a buffer', 0, { ...ok, ptr: buf + 8 }],
    ['a pointer outside the arena', 0, { ...ok, ptr: g.mailboxOffset }],
    ['a bound of another class', 0, { ...ok, bound: 128 }],
    ['a version the item does not carry', 0, { ...ok, version: 6n }],
    ['a buffer that holds no valid item', 0, { ...ok, ptr: buf + g.classes[0]!.sizeBytes }],
    ['a slot past the index', g.slotCount, ok],
  ];
  for (const [what, i, s] of bad) t.equal(codeOf(() => checkKvSlotWrite(region, g, i, s)), 'PMRPC_ERR_INVARIANT', what);
});

t.test('recovery stops before linking a dead item that memory corrupted under it', async (t) => {
  const { region, server } = await kvSetup();
  const g = server.geometry;
  // A slot pointing inside a buffer: recovery rejects it and links a dead item in a reclaimed buffer.
  const rejected = encodeSlot({ ptr: g.classes[0]!.offset + 8, bound: 64, version: 1n });
  region.store(slotOffset(g, 3), rejected);
  // Memory under the server corrupts every store into the arena (the dead item arrives as zeros).
  const store = region.store.bind(region);
  region.store = (off: number, bytes: Uint8Array): void => store(off, off >= g.arenaOffset && off < g.arenaEnd ? new Uint8Array(bytes.length) : bytes);
  const epoch = region.loadU64(g.base + KV_EPOCH_OFFSET);
  const e = t.throws(() => server.recover()) as Error;
  t.ok(isInvariantError(e), `PMRPC_ERR_INVARIANT: ${e.message}`);
  t.match(e.message, /index slot 3 would hold version 1 for a buffer that holds no valid item/);
  t.same(region.load(slotOffset(g, 3), 24), rejected, 'the slot still holds the rejected word (not linked to garbage)');
  t.equal(region.loadU64(g.base + KV_EPOCH_OFFSET), epoch, 'no new epoch: the server never starts serving');
  // The correct path over the same state: the dead item is linked.
  region.store = store;
  const r = server.recover();
  t.equal(r.pointersRejected.length, 1);
  t.equal(decodeSlot(region.load(slotOffset(g, 3), 24)).version, 1n, 'slot 3 links a dead item');
  t.same(server.inspect().problems, []);
});

t.test('a slot rewrite: the slot still holds the word its row was decided on, and only a rejected pointer moves', async (t) => {
  const { region, server } = await kvSetup();
  const g = server.geometry;
  const buf = g.classes[0]!.offset;
  const held = encodeSlot({ ptr: buf, bound: 128, version: 5n });
  region.store(slotOffset(g, 2), held);
  const fromItem = { ptr: buf, bound: 64, version: 6n };
  const other = { ptr: buf + 64, bound: 64, version: 6n };
  t.equal(codeOf(() => checkKvSlotRewrite(region, g, 2, held, fromItem, 'rewrite-from-item')), undefined, 'a repair that keeps the ptr word');
  t.equal(codeOf(() => checkKvSlotRewrite(region, g, 2, held, other, 'link-dead-item')), undefined, 'a rejected pointer replaced');
  t.equal(codeOf(() => checkKvSlotRewrite(region, g, 2, held, { ptr: g.base, bound: 0, version: 0n }, 'write-empty')), undefined, 'a rejected pointer emptied');
  t.equal(codeOf(() => checkKvSlotRewrite(region, g, 2, held, other, 'rewrite-from-item')), 'PMRPC_ERR_INVARIANT', 'a repair that moves the ptr word');
  t.equal(codeOf(() => checkKvSlotRewrite(region, g, 2, held, { ptr: g.base, bound: 0, version: 0n }, 'rewrite-empty')), 'PMRPC_ERR_INVARIANT', 'a reset that empties a linked slot');
  t.equal(codeOf(() => checkKvSlotRewrite(region, g, 3, held, fromItem, 'rewrite-from-item')), 'PMRPC_ERR_INVARIANT', 'a slot that does not hold the decided word');
  t.same(region.load(slotOffset(g, 2), 24), held, 'the checks write nothing');
});

t.test('recovery stops before rewriting a slot that changed after its row was decided', async (t) => {
  const { region, server } = await kvSetup();
  const g = server.geometry;
  // Two torn empty slots (row torn-empty): the first one's repair strays into the second.
  const torn = encodeSlot({ ptr: g.base, bound: 64, version: 3n });
  const stray = encodeSlot({ ptr: g.base, bound: 0, version: 7n });
  region.store(slotOffset(g, 1), torn);
  region.store(slotOffset(g, 2), torn);
  const store = region.store.bind(region);
  region.store = (off: number, bytes: Uint8Array): void => {
    store(off, bytes);
    if (off === slotOffset(g, 1)) store(slotOffset(g, 2), stray);
  };
  const epoch = region.loadU64(g.base + KV_EPOCH_OFFSET);
  const e = t.throws(() => server.recover()) as Error;
  t.ok(isInvariantError(e), `PMRPC_ERR_INVARIANT: ${e.message}`);
  t.match(e.message, /index slot 2 holds .*, not the word .* its row was decided on/);
  t.same(region.load(slotOffset(g, 2), 24), stray, 'slot 2 still holds the stray word: not rewritten from a stale decision');
  t.equal(region.loadU64(g.base + KV_EPOCH_OFFSET), epoch, 'no new epoch: the server never starts serving');
  // The correct path over the same state: both slots empty.
  region.store = store;
  region.store(slotOffset(g, 1), torn);
  region.store(slotOffset(g, 2), torn);
  const r = server.recover();
  t.equal(r.rows['torn-empty'], 2);
  t.same(server.inspect().problems, []);
});

t.test('the last resort: a rejected slot becomes empty only when no reclaimed buffer is left', async (t) => {
  const { region, server } = await kvSetup();
  const g = server.geometry;
  const rejected = encodeSlot({ ptr: g.classes[0]!.offset + 8, bound: 64, version: 1n });
  region.store(slotOffset(g, 3), rejected);
  t.equal(codeOf(() => checkKvLastResort(3, new Map([[64, []], [128, []]]))), undefined, 'no buffer left');
  t.equal(codeOf(() => checkKvLastResort(3, new Map([[64, []], [128, [g.classes[1]!.offset]]]))), 'PMRPC_ERR_INVARIANT', 'a buffer of another class left');
  t.same(region.load(slotOffset(g, 3), 24), rejected, 'the slot is unchanged');
  // The correct path: with buffers left, the rejected slot links a dead item (row misaligned), not the empty word.
  const r = server.recover();
  t.same(r.rows.misaligned, 1);
  t.not(decodeSlot(region.load(slotOffset(g, 3), 24)).ptr, g.base);
});

t.test('the epoch only grows: a word that went back stops recovery before it is written', async (t) => {
  const { region, server } = await kvSetup();
  const g = server.geometry;
  t.equal(server.epoch, 1n);
  t.equal(server.recover().epoch, 2n, 'a recovery bumps it');
  region.storeU64(g.base + KV_EPOCH_OFFSET, 0n); // a stray store
  t.equal(codeOf(() => server.recover()), 'PMRPC_ERR_INVARIANT', 'epoch 1 again after 2');
  t.equal(region.loadU64(g.base + KV_EPOCH_OFFSET), 0n, 'the word is not written');
  t.equal(server.epoch, 2n);
});

t.test('the return desk frees a buffer only when no slot reaches it, even on a path that skipped the check', async (t) => {
  const region = PmemRegion.createInMemory(4096, { entropy: seededEntropy(createPrng(5)) });
  const setup = (acceptStaleEpoch: boolean): { desk: ReturnDesk; count: () => number } => {
    const nic = new Rnic(region, { entropy: seededEntropy(createPrng(6)) });
    const mr = nic.registerMr(nic.allocPd(), 0, 4096, Access.ALL);
    const desk = new ReturnDesk({
      region,
      nic,
      mr,
      classes: [{ sizeBytes: 64, offset: 1024, count: 4 }],
      classOf: (p) => (p >= 1024 && p < 1280 && p % 64 === 0 ? 64 : undefined),
      isReachable: (p) => p === 1088, // a slot links buffer 1088
      acceptStaleEpoch,
    });
    desk.open(new Map([[64, [1024]]]), 1n);
    return { desk, count: () => nic.freeBufferCount(mr, 64) };
  };
  const checked = setup(false);
  t.same(checked.desk.giveBack([1088]), { accepted: 0, refused: 1 }, 'the check refuses the linked buffer');
  t.same(checked.desk.giveBack([1152]), { accepted: 1, refused: 0 }, 'an unlinked one goes back');
  t.equal(checked.count(), 2);
  // acceptStaleEpoch trusts the pointer (no reachability check): the invariant asks the index itself.
  const mutant = setup(true);
  t.equal(codeOf(() => mutant.desk.giveBack([1088])), 'PMRPC_ERR_INVARIANT', 'the linked buffer is not freed');
  t.equal(mutant.count(), 1, 'the NIC free list is unchanged');
  t.same(mutant.desk.giveBack([1152]), { accepted: 1, refused: 0 }, 'an unlinked buffer still goes back');
});
