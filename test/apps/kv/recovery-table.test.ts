// PRISM-KV's recovery as data (src/apps/kv/recovery.ts, issue 26): the slot table covers every
// input with exactly one row, and every row is reached by an area whose index was written by hand
// into that row's state — then what recovery wrote (the slot words, in the cache and, for the
// table's `durable` rows, in the media a crash keeps), its report (row counts, repairs, rejected
// pointers, reachable / reclaimed) and a second, idempotent recovery are checked. A row with no
// state built here fails the test (coverage). Mutant skip-pointer-validation is the table with
// every slot word trusted (rows empty and item only: nothing written).
import t from 'tap';
import { readFileSync } from 'node:fs';
import { createPrng, PmemRegion, seededEntropy } from '../../../pmem/index.js';
import { Rnic } from '../../../flush/index.js';
import {
  allKvSlotInputs,
  decideKvSlot,
  decodeItem,
  decodeSlot,
  emptySlot,
  encodeItem,
  encodeSlot,
  KV_REJECTED_POINTERS,
  KV_SLOT_TABLE,
  matchingKvSlotRows,
  PrismKvServer,
  probeSequence,
  slotOffset,
  type KvFaults,
  type KvGeometry,
  type KvLayoutOptions,
  type SlotWord,
} from '../../../src/apps/kv/index.js';

const te = new TextEncoder();

t.test('every input matches exactly one row; every row is live; ids unique; table frozen', async (t) => {
  const inputs = allKvSlotInputs();
  t.equal(inputs.length, 8 * 2 * 2);
  for (const input of inputs) t.equal(matchingKvSlotRows(input).length, 1, `${JSON.stringify(input)} matches one row`);
  for (const row of KV_SLOT_TABLE) t.ok(inputs.some((i) => decideKvSlot(i) === row), `row ${row.id} matches some input`);
  t.equal(new Set(KV_SLOT_TABLE.map((r) => r.id)).size, KV_SLOT_TABLE.length);
  t.ok(Object.isFrozen(KV_SLOT_TABLE));
  t.same(new Set(KV_SLOT_TABLE.map((r) => r.action)), new Set(['keep', 'rewrite-empty', 'rewrite-from-item', 'link-dead-item', 'write-empty']), 'every action is used');
  for (const row of KV_SLOT_TABLE) t.ok(row.why.length > 20, `row ${row.id} says why`);
  t.same(KV_SLOT_TABLE.filter((r) => r.durable).map((r) => r.id), [...KV_REJECTED_POINTERS, 'rejected-no-spare'], 'only a rejected pointer\'s new word is persisted');
  t.same(KV_SLOT_TABLE.filter((r) => !r.reaches).map((r) => r.id), ['empty', 'torn-empty', 'rejected-no-spare'], 'the rows whose slot reaches no buffer');
  // Only the rejected pointers' rows read the spare; the rest decide the same with or without one.
  for (const input of inputs) {
    if (!(KV_REJECTED_POINTERS as readonly string[]).includes(input.pointer)) t.equal(decideKvSlot(input), decideKvSlot({ ...input, spare: input.spare === 'some' ? 'none' : 'some' }));
    else t.equal(decideKvSlot(input), decideKvSlot({ ...input, words: input.words === 'match' ? 'differ' : 'match' }), `${input.pointer}: a rejected pointer's words do not matter`);
  }
  t.throws(() => decideKvSlot({ pointer: 'bogus' as never, words: 'match', spare: 'some' }), /0 rows match/);
  t.equal(matchingKvSlotRows({ pointer: 'base', words: 'match', spare: 'some' }, [...KV_SLOT_TABLE, KV_SLOT_TABLE[0]!]).length, 2, 'an overlap is seen');
});

t.test("docs/kv.md's Recovery table names every row, in the table's order", async (t) => {
  const all = readFileSync(new URL('../../../docs/kv.md', import.meta.url), 'utf8');
  const from = all.indexOf('\n## Recovery');
  const doc = all.slice(from, all.indexOf('\n## ', from + 1));
  const ids = [...doc.matchAll(/^ *\| `([a-z-]+)` \|/gm)].map((m) => m[1]);
  t.same(ids, KV_SLOT_TABLE.map((r) => r.id));
});

const LAYOUT: Partial<KvLayoutOptions> = { slotCount: 16, probeSlots: 4, keyBytesMax: 16, classes: [{ sizeBytes: 64, count: 9 }], mailboxBuffers: 4 };

/** Durable stores, as a crash image holds them. */
function put(region: PmemRegion, at: number, b: Uint8Array): void {
  region.store(at, b);
  region.persist(at, b.length);
}

/** A key whose probe sequence holds slot `slot` (`holds`), or does not. */
function keyFor(g: KvGeometry, slot: number, holds: boolean, prefix: string): Uint8Array {
  for (let n = 0; n < 10_000; n++) {
    const k = te.encode(`${prefix}${n}`);
    if (probeSequence(g, k).includes(slot) === holds) return k;
  }
  throw new Error(`no key for slot ${slot}`);
}

interface Built {
  region: PmemRegion;
  g: KvGeometry;
  /** slot → the row its state was built for. */
  states: Map<number, string>;
  /** The words written by hand (before recovery). */
  before: Map<number, SlotWord>;
  bufs: number[];
}

/**
 * One slot per state the table distinguishes, written by hand (slot: state → row); one class of 9
 * buffers, 4 linked (A, B, D1, D2) and 5 left for dead items — one fewer than the rejected slots:
 *   0, 12..15 never written                                               → empty
 *   1  ptr = base under bound 64, version 3 (a torn install)              → torn-empty
 *   2  item A (its key's sequence holds slot 2), its class and version    → item
 *   3  item B (version 7) under bound 128, version 5 (a wider, older word) → item-repair
 *   4  dead item D1, bound 64, version 1                                  → dead
 *   5  dead item D2 under version 9                                       → dead-repair
 *   6  a pointer into the KV header                                       → outside-arena
 *   7  a pointer 8 bytes into buffer 0                                    → misaligned
 *   8  item A again (slot 2 reached it first)                             → reached-twice
 *   9  a buffer whose item has a flipped byte                             → no-item
 *   10 a valid item of a key whose sequence does not hold slot 10         → off-sequence
 *   11 a pointer past the region; no buffer left by then                  → rejected-no-spare
 */
function buildStates(): Built {
  const region = PmemRegion.createInMemory(1 << 14, { tracing: true, entropy: seededEntropy(createPrng(3)) });
  const g = PrismKvServer.format(region, LAYOUT);
  const c = g.classes[0]!;
  const bufs = Array.from({ length: c.count }, (_, i) => c.offset + i * c.sizeBytes);
  const states = new Map<number, string>();
  const before = new Map<number, SlotWord>();
  const slot = (i: number, row: string, w: SlotWord): void => {
    states.set(i, row);
    before.set(i, w);
    put(region, slotOffset(g, i), encodeSlot(w));
  };
  const item = (at: number, key: Uint8Array, version: bigint, dead = false): Uint8Array => {
    const b = dead ? encodeItem({ key: new Uint8Array(0), value: new Uint8Array(0), version: 1n, tombstone: false, dead: true }) : encodeItem({ key, value: te.encode('value'), version, tombstone: false });
    put(region, at, b);
    return b;
  };
  for (const i of [0, 12, 13, 14, 15]) states.set(i, 'empty');
  slot(1, 'torn-empty', { ptr: g.base, bound: 64, version: 3n });
  item(bufs[0]!, keyFor(g, 2, true, 'a'), 6n);
  slot(2, 'item', { ptr: bufs[0]!, bound: 64, version: 6n });
  item(bufs[1]!, keyFor(g, 3, true, 'b'), 7n);
  slot(3, 'item-repair', { ptr: bufs[1]!, bound: 128, version: 5n });
  item(bufs[2]!, new Uint8Array(0), 1n, true);
  slot(4, 'dead', { ptr: bufs[2]!, bound: 64, version: 1n });
  item(bufs[3]!, new Uint8Array(0), 1n, true);
  slot(5, 'dead-repair', { ptr: bufs[3]!, bound: 64, version: 9n });
  slot(6, 'outside-arena', { ptr: g.base + 64, bound: 64, version: 2n });
  slot(7, 'misaligned', { ptr: bufs[0]! + 8, bound: 64, version: 6n });
  slot(8, 'reached-twice', { ptr: bufs[0]!, bound: 64, version: 6n });
  const bad = encodeItem({ key: keyFor(g, 9, true, 'd'), value: te.encode('value'), version: 4n, tombstone: false });
  bad[bad.length - 1] = bad[bad.length - 1]! ^ 0xff;
  put(region, bufs[4]!, bad);
  slot(9, 'no-item', { ptr: bufs[4]!, bound: 64, version: 4n });
  item(bufs[5]!, keyFor(g, 10, false, 'e'), 8n);
  slot(10, 'off-sequence', { ptr: bufs[5]!, bound: 64, version: 8n });
  slot(11, 'rejected-no-spare', { ptr: 1 << 20, bound: 64, version: 2n });
  return { region, g, states, before, bufs };
}

function open(region: PmemRegion, faults: Partial<KvFaults> = {}): PrismKvServer {
  return PrismKvServer.open(region, new Rnic(region, { entropy: seededEntropy(createPrng(4)) }), { deferRecovery: true, faults });
}

const wordAt = (region: PmemRegion, g: KvGeometry, i: number): SlotWord => decodeSlot(region.load(slotOffset(g, i), 24));

t.test('every row, built in PM: recovery writes what its row says, reports it, and is idempotent', async (t) => {
  const { region, g, states, before, bufs } = buildStates();
  // Coverage: a row with no state built here fails.
  for (const row of KV_SLOT_TABLE) t.ok([...states.values()].includes(row.id), `row ${row.id} has a state built in PM`);
  t.equal(states.size, g.slotCount, 'every slot is a built state');
  const s = open(region);
  const r = s.recover();
  const want: Record<string, number> = {};
  for (const id of states.values()) want[id] = (want[id] ?? 0) + 1;
  t.same(r.rows, want, 'one row per slot, as built');
  t.match(r, { slotsScanned: 16, slotsRepaired: 3 + 6, reachable: 4 + 5, reclaimed: 0 });
  t.same(
    r.pointersRejected.map((p) => [p.slot, p.verdict]),
    [[6, 'outside-arena'], [7, 'misaligned'], [8, 'reached-twice'], [9, 'bad-object'], [10, 'bad-object'], [11, 'outside-arena']],
    "the allocator's verdicts",
  );
  const media = PmemRegion.openImage(region.crashState().media, { tracing: false });
  const deadBufs = new Set<number>();
  for (const [i, id] of states) {
    const row = KV_SLOT_TABLE.find((x) => x.id === id)!;
    const w = wordAt(region, g, i);
    const old = before.get(i);
    switch (row.action) {
      case 'keep':
        t.same(w, old ?? emptySlot(g), `slot ${i} (${id}): kept`);
        break;
      case 'rewrite-empty':
        t.same(w, emptySlot(g), `slot ${i} (${id}): reset to empty`);
        break;
      case 'rewrite-from-item': {
        const item = decodeItem(region.load(old!.ptr, 64))!;
        t.same(w, { ptr: old!.ptr, bound: 64, version: item.version }, `slot ${i} (${id}): the ptr word kept, bound and version from its item`);
        break;
      }
      case 'link-dead-item': {
        t.not(w.ptr, old!.ptr, `slot ${i} (${id}): its pointer replaced`);
        t.ok(bufs.includes(w.ptr) && ![bufs[0], bufs[1], bufs[2], bufs[3]].includes(w.ptr), `slot ${i}: a buffer no other slot reached`);
        t.same({ bound: w.bound, version: w.version }, { bound: 64, version: 1n });
        t.equal(decodeItem(media.load(w.ptr, 64))?.dead, true, `slot ${i}: the dead item is durable`);
        deadBufs.add(w.ptr);
        break;
      }
      case 'write-empty':
        t.same(w, emptySlot(g), `slot ${i} (${id}): the last resort, empty`);
        break;
    }
    if (row.durable) t.same(decodeSlot(media.load(slotOffset(g, i), 24)), w, `slot ${i} (${id}): its new word is durable`);
  }
  t.equal(deadBufs.size, 5, 'five dead items, each in its own buffer');
  t.same(s.inspect().problems, []);
  t.same(s.auditAllocator(), { leaked: [], doubleFree: [], freeAndReachable: [], foreign: [] });
  t.same(s.freeLists().get(64), [], 'every buffer reachable: the free list is empty');

  // Recovery of the recovered index changes nothing: every slot is now empty, an item or a dead item.
  const recovered = region.load(slotOffset(g, 0), slotOffset(g, g.slotCount) - slotOffset(g, 0));
  const again = open(region);
  const r2 = again.recover();
  t.same(r2.rows, { empty: 7, item: 2, dead: 7 });
  t.match(r2, { slotsRepaired: 0, pointersRejected: [], reachable: 9, reclaimed: 0 });
  t.same(region.load(slotOffset(g, 0), recovered.length), recovered, 'the index is unchanged');
});

t.test('mutant skip-pointer-validation: every slot word trusted, nothing written', async (t) => {
  const { region, g, before } = buildStates();
  const r = open(region, { skipPointerValidation: true }).recover();
  t.same(r.rows, { empty: 6, item: 10 }, 'the base pointers count as empty, every other as an item');
  t.match(r, { slotsRepaired: 0, pointersRejected: [] });
  for (let i = 0; i < g.slotCount; i++) t.same(wordAt(region, g, i), before.get(i) ?? emptySlot(g), `slot ${i} as built`);
});
