// PRISM-RS replica recovery as data (src/apps/rs/recovery.ts, docs/rs.md "Replica recovery"): the
// slot table covers every input with exactly one row, and every row is reached by a replica whose
// PM was written by hand into that row's state — then recovery's writes, its report, the free
// lists (a row's `reaches`) and a second, idempotent recovery are checked. Mutant skip-slot-repair
// is the table with every slot's words taken as consistent.
import t from 'tap';
import { createPrng, PmemRegion, seededEntropy, VirtualClock } from '../../../pmem/index.js';
import { Rnic } from '../../../flush/index.js';
import {
  allRsSlotInputs,
  decideRsSlot,
  decodeRsSlot,
  emptyRsSlot,
  encodeRsItem,
  encodeRsSlot,
  isLostTag,
  lostRsSlot,
  matchingRsSlotRows,
  rsApp,
  rsSlotOffset,
  RS_ITEM_HEADER_BYTES,
  RS_SLOT_TABLE,
  type RsFaults,
  type RsServer,
  type RsSlot,
} from '../../../src/apps/rs/index.js';

const te = new TextEncoder();
const reached: Record<string, number> = {};
const add = (rows: Record<string, number>): void => {
  for (const [k, v] of Object.entries(rows)) reached[k] = (reached[k] ?? 0) + v;
};

t.test('every input matches exactly one row; every row is live; ids unique; table frozen', async (t) => {
  const inputs = allRsSlotInputs();
  t.equal(inputs.length, 3 * 2);
  for (const input of inputs) t.equal(matchingRsSlotRows(input).length, 1, `${JSON.stringify(input)} matches one row`);
  for (const row of RS_SLOT_TABLE) t.ok(inputs.some((i) => decideRsSlot(i) === row), `row ${row.id} matches some input`);
  t.equal(new Set(RS_SLOT_TABLE.map((r) => r.id)).size, RS_SLOT_TABLE.length);
  t.ok(Object.isFrozen(RS_SLOT_TABLE));
  t.same(new Set(RS_SLOT_TABLE.map((r) => r.action)), new Set(['keep', 'rewrite-empty', 'rewrite-from-item', 'mark-lost']), 'every action is used');
  for (const row of RS_SLOT_TABLE) t.ok(row.why.length > 20, `row ${row.id} says why`);
  t.throws(() => decideRsSlot({ pointer: 'bogus' as never, words: 'consistent' }), /0 rows match/);
  t.equal(matchingRsSlotRows({ pointer: 'base', words: 'consistent' }, [...RS_SLOT_TABLE, RS_SLOT_TABLE[0]!]).length, 2, 'an overlap is seen');
});

const OPTS = rsApp.resolveOptions({ layout: { blocks: 8, classes: [{ sizeBytes: 64, count: 16 }, { sizeBytes: 128, count: 8 }], mailboxBuffers: 4 } });

/** A formatted replica region. */
function freshRegion(): PmemRegion {
  const region = PmemRegion.createInMemory(rsApp.minRegionBytes(OPTS), { tracing: true });
  rsApp.format(region, OPTS);
  return region;
}

/** The replica opened on `region` (recovery not run yet). */
function open(region: PmemRegion, faults: Partial<RsFaults> = {}): RsServer {
  const nic = new Rnic(region, { ddio: false });
  return rsApp.open({ region, nic, clock: new VirtualClock(), schedule: queueMicrotask, entropy: seededEntropy(createPrng(1)) }, { ...OPTS, faults }) as RsServer;
}

/** Durable stores, as a crash image holds them. */
function put(region: PmemRegion, at: number, b: Uint8Array): void {
  region.store(at, b);
  region.persist(at, b.length);
}

/**
 * One slot per state the table distinguishes, written by hand (block: state → row):
 *   0 empty                                   → empty
 *   1 LOST                                    → empty (kept LOST)
 *   2 ptr base, bound and tag of an install   → torn-empty
 *   3 an item of block 3, slot = the item's   → item
 *   4 an item of block 4, the slot's tag and bound torn (older ones) → item-repair
 *   5 a buffer holding an item of block 3     → lost (another block's item)
 *   6 a pointer outside the arena             → lost
 *   7 an item of block 7 with a flipped byte  → lost (bad checksum)
 */
function buildStates(): { region: PmemRegion; bufs: Record<'item3' | 'item4' | 'stale3' | 'bad7', number>; item4: RsSlot } {
  const region = freshRegion();
  const probe = open(region);
  const g = probe.geometry;
  probe.close();
  const c64 = g.classes[0]!;
  const buf = (i: number): number => c64.offset + i * c64.sizeBytes;
  const bufs = { item3: buf(2), item4: buf(5), stale3: buf(7), bad7: buf(9) };
  const slot = (block: number, s: RsSlot): void => put(region, rsSlotOffset(g, block), encodeRsSlot(s));
  const item = (at: number, block: number, ts: bigint, value: string): Uint8Array => {
    const b = encodeRsItem({ block, tag: { ts, writer: 1n }, value: te.encode(value) });
    put(region, at, b);
    return b;
  };
  slot(1, lostRsSlot(g));
  slot(2, { ptr: g.base, bound: RS_ITEM_HEADER_BYTES + 3, tag: { ts: 9n, writer: 1n } });
  item(bufs.item3, 3, 4n, 'three');
  slot(3, { ptr: bufs.item3, bound: RS_ITEM_HEADER_BYTES + 5, tag: { ts: 4n, writer: 1n } });
  item(bufs.item4, 4, 6n, 'four');
  const item4 = { ptr: bufs.item4, bound: RS_ITEM_HEADER_BYTES + 4, tag: { ts: 6n, writer: 1n } };
  slot(4, { ptr: bufs.item4, bound: c64.sizeBytes, tag: { ts: 5n, writer: 1n } });
  item(bufs.stale3, 3, 3n, 'old');
  slot(5, { ptr: bufs.stale3, bound: RS_ITEM_HEADER_BYTES + 3, tag: { ts: 3n, writer: 1n } });
  slot(6, { ptr: g.base + 8, bound: 40, tag: { ts: 2n, writer: 1n } });
  const bad = item(bufs.bad7, 7, 2n, 'seven');
  bad[RS_ITEM_HEADER_BYTES] = bad[RS_ITEM_HEADER_BYTES]! ^ 0xff;
  put(region, bufs.bad7, bad);
  slot(7, { ptr: bufs.bad7, bound: RS_ITEM_HEADER_BYTES + 5, tag: { ts: 2n, writer: 1n } });
  return { region, bufs, item4 };
}

const isFree = (s: RsServer, ptr: number): boolean => [...s.freeLists().values()].some((l) => l.includes(ptr));

t.test('every row, built in PM: recovery writes what its row says, reports it, and is idempotent', async (t) => {
  const { region, bufs, item4 } = buildStates();
  const s = open(region);
  const g = s.geometry;
  const r = s.recover();
  add(r.rows);
  t.same(r.rows, { empty: 2, 'torn-empty': 1, item: 1, 'item-repair': 1, lost: 3 }, 'one row per slot, as built');
  t.equal(r.slotsScanned, 8);
  t.equal(r.slotsRepaired, 5, 'torn-empty, item-repair and the three lost slots were rewritten');
  t.equal(r.slotsLost, 3);
  t.equal(r.reachable, 2, 'the two item rows reach their buffers');
  t.equal(r.app, 'rs');
  t.equal(r.epoch, '1');
  t.same(s.lastRecovery!.rows, r.rows, 'the typed report carries the same rows');
  t.equal(s.lastRecovery!.epoch, 1n);

  t.same(s.slot(0), emptyRsSlot(g), 'empty: kept');
  t.ok(isLostTag(s.slot(1).tag) && s.slot(1).ptr === g.base, 'a LOST slot: kept LOST');
  t.same(s.slot(2), emptyRsSlot(g), 'torn-empty: rewritten empty');
  t.same(s.slot(3), { ptr: bufs.item3, bound: RS_ITEM_HEADER_BYTES + 5, tag: { ts: 4n, writer: 1n } }, 'item: kept');
  t.same(s.slot(4), item4, 'item-repair: bound and tag from the item, ptr kept');
  for (const b of [5, 6, 7]) t.same(s.slot(b), lostRsSlot(g), `block ${b}: marked LOST`);
  t.same(s.value(1), 'lost');
  t.same(s.value(5), 'lost');

  // `reaches`: the item rows' buffers are kept, the lost rows' buffers reclaimed.
  t.notOk(isFree(s, bufs.item3), 'row item keeps its buffer');
  t.notOk(isFree(s, bufs.item4), 'row item-repair keeps its buffer');
  t.ok(isFree(s, bufs.stale3), "row lost: another block's item is reclaimed");
  t.ok(isFree(s, bufs.bad7), 'row lost: a bad item is reclaimed');
  for (const row of RS_SLOT_TABLE.filter((x) => x.reaches)) t.ok(['item', 'item-repair'].includes(row.id), `${row.id} reaches`);
  t.same(s.audit(), [], 'the recovered replica is sound');
  s.close();

  // Recovery of the recovered image changes nothing: every slot is now empty, LOST or a sound item.
  const again = open(region);
  const r2 = again.recover();
  add(r2.rows);
  t.same(r2.rows, { empty: 6, item: 2 });
  t.equal(r2.slotsRepaired, 0);
  t.equal(r2.epoch, '2', 'a new epoch each recovery');
  again.close();
});

t.test('mutant skip-slot-repair: every slot taken as consistent — nothing repaired, the torn slots kept', async (t) => {
  const { region } = buildStates();
  const s = open(region, { skipSlotRepair: true });
  const g = s.geometry;
  const r = s.recover();
  t.same(r.rows, { empty: 3, item: 5 }, 'the torn empty slot counts as empty, every other pointer as an item');
  t.equal(r.slotsRepaired, 0);
  t.same(s.slot(2), { ptr: g.base, bound: RS_ITEM_HEADER_BYTES + 3, tag: { ts: 9n, writer: 1n } }, 'the torn slot is kept');
  t.ok(s.audit().length > 0, 'the audit sees what the mutant kept');
  s.close();
});

t.test('every row of the slot table is reached by a replica built in PM', async (t) => {
  t.comment(`rows reached: ${JSON.stringify(reached)}`);
  for (const row of RS_SLOT_TABLE) t.ok((reached[row.id] ?? 0) > 0, `row ${row.id} (${row.action}) reached`);
});
