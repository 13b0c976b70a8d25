// Invariants of PRISM-RS's persistent state (DESIGN §10.1):
// checked where a replica's CPU changes it — recovery's slot writes and the epoch — before the bad
// state is written; the return path's (a buffer goes back only when no slot reaches it) is driven
// by mutant freeUncertainBlindly in drops.test.ts. Each case asserts PMRPC_ERR_INVARIANT and that
// PM is unchanged; the correct code over the same state passes.
import t from 'tap';
import { createPrng, PmemRegion, seededEntropy } from '../../../pmem/index.js';
import { LOST_TAG, RS_EPOCH_OFFSET, RS_ITEM_HEADER_BYTES, RsLocalCluster, computeRsGeometry, encodeRsItem, formatRs, validateRsLayout, type RsSlot } from '../../../src/apps/rs/index.js';
import { checkRsSlotWrite } from '../../../src/apps/rs/server.js';

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    return (e as { code?: string }).code ?? `not coded: ${(e as Error).message}`;
  }
  return undefined;
}

const LAYOUT = { blocks: 4, classes: [{ sizeBytes: 64, count: 8 }] };

t.test('a slot word recovery writes: empty or LOST, or an item of the block whose tag and length it carries', async (t) => {
  const bytes = Math.ceil(computeRsGeometry(0, validateRsLayout(LAYOUT)).totalBytes / 64) * 64;
  const region = PmemRegion.createInMemory(bytes, { entropy: seededEntropy(createPrng(3)) });
  const g = formatRs(region, LAYOUT, 0);
  const buf = g.classes[0]!.offset;
  const value = new TextEncoder().encode('abc');
  region.store(buf, encodeRsItem({ block: 1, tag: { ts: 2n, writer: 7n }, value }));
  const ok: RsSlot = { ptr: buf, bound: RS_ITEM_HEADER_BYTES + 3, tag: { ts: 2n, writer: 7n } };
  t.equal(codeOf(() => checkRsSlotWrite(region, g, 1, ok)), undefined, 'the slot of a valid item of the block');
  t.equal(codeOf(() => checkRsSlotWrite(region, g, 1, { ptr: g.base, bound: 0, tag: { ts: 0n, writer: 0n } })), undefined, 'an empty slot');
  t.equal(codeOf(() => checkRsSlotWrite(region, g, 1, { ptr: g.base, bound: 0, tag: LOST_TAG })), undefined, 'a LOST slot');
  const bad: Array<[string, number, RsSlot]> = [
    ['a newer tag than the item carries', 1, { ...ok, tag: { ts: 3n, writer: 7n } }],
    ['an older tag than the item carries', 1, { ...ok, tag: { ts: 1n, writer: 7n } }],
    ['another writer\'s tag', 1, { ...ok, tag: { ts: 2n, writer: 8n } }],
    ['a bound other than the item\'s length', 1, { ...ok, bound: 64 }],
    ['the item of another block', 2, ok],
    ['a pointer inside a buffer', 1, { ...ok, ptr: buf + 8 }],
    ['a buffer that holds no valid item', 1, { ...ok, ptr: buf + 64 }],
    ['an empty slot with a tag', 1, { ptr: g.base, bound: 0, tag: { ts: 2n, writer: 7n } }],
    ['an empty slot with a bound', 1, { ptr: g.base, bound: 35, tag: { ts: 0n, writer: 0n } }],
    ['a slot past the index', 4, ok],
  ];
  for (const [what, block, s] of bad) t.equal(codeOf(() => checkRsSlotWrite(region, g, block, s)), 'PMRPC_ERR_INVARIANT', what);
});

t.test('a replica\'s epoch only grows: a word that went back stops recovery before it is written', async (t) => {
  const c = RsLocalCluster.start({ replicas: 1, app: { layout: LAYOUT } });
  const s = c.server(0);
  const at = s.geometry.base + RS_EPOCH_OFFSET;
  t.equal(s.epoch, 1n);
  t.equal(s.recoverReplica().epoch, 2n, 'a recovery bumps it');
  s.region.storeU64(at, 0n); // a stray store
  t.equal(codeOf(() => s.recoverReplica()), 'PMRPC_ERR_INVARIANT', 'epoch 1 again after 2');
  t.equal(s.region.loadU64(at), 0n, 'the word is not written');
  t.equal(s.epoch, 2n);
  t.same(c.halts, [], 'recovery is not a CPU pass: it throws to its caller (the host stops)');
  await c.close();
});
