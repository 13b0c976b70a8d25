// The Pilaf baseline's recovery as data (src/apps/pilaf/recovery.ts, issue 26 item 4): the entry
// table covers every input with exactly one row, and every row is reached by an area whose index
// was written by hand into that row's state — then what recovery wrote, its report (row counts,
// rebuilt / cleared, reachable / reclaimed: a row's `reaches`) and a second, idempotent recovery
// are checked. Mutant clear-torn-entry is the table with a torn entry's ptr word taken as no item.
import t from 'tap';
import { createPrng, PmemRegion, seededEntropy, VirtualClock } from '../../../pmem/index.js';
import { Rnic } from '../../../flush/index.js';
import { kvApp, type KvAppOptions } from '../../../src/apps/kv/index.js';
import {
  allPilafSlotInputs,
  decidePilafSlot,
  decodePilafEntry,
  encodePilafEntry,
  matchingPilafSlotRows,
  PILAF_SLOT_TABLE,
  type PilafAppServer,
  type PilafFaults,
} from '../../../src/apps/pilaf/index.js';
import { encodeItem, itemBytes, slotOffset, type KvGeometry } from '../../../src/apps/shared/index.js';

const te = new TextEncoder();

t.test('every input matches exactly one row; every row is live; ids unique; table frozen', async (t) => {
  const inputs = allPilafSlotInputs();
  t.equal(inputs.length, 3 * 3 * 2);
  for (const input of inputs) t.equal(matchingPilafSlotRows(input).length, 1, `${JSON.stringify(input)} matches one row`);
  for (const row of PILAF_SLOT_TABLE) t.ok(inputs.some((i) => decidePilafSlot(i) === row), `row ${row.id} matches some input`);
  t.equal(new Set(PILAF_SLOT_TABLE.map((r) => r.id)).size, PILAF_SLOT_TABLE.length);
  t.ok(Object.isFrozen(PILAF_SLOT_TABLE));
  t.same(new Set(PILAF_SLOT_TABLE.map((r) => r.action)), new Set(['keep', 'write-tombstone', 'rewrite-from-item']), 'every action is used');
  for (const row of PILAF_SLOT_TABLE) t.ok(row.why.length > 20, `row ${row.id} says why`);
  t.same(PILAF_SLOT_TABLE.filter((r) => r.reaches).map((r) => r.id), ['item', 'item-repair', 'torn-item'], 'the rows whose entry keeps its buffer');
  t.throws(() => decidePilafSlot({ entry: 'bogus' as never, pointer: 'zero', words: 'match' }), /0 rows match/);
  t.equal(matchingPilafSlotRows({ entry: 'empty', pointer: 'zero', words: 'match' }, [...PILAF_SLOT_TABLE, PILAF_SLOT_TABLE[0]!]).length, 2, 'an overlap is seen');
});

const OPTS: KvAppOptions = kvApp.resolveOptions({ system: 'pilaf', layout: { slotCount: 16, probeSlots: 4, keyBytesMax: 16, classes: [{ sizeBytes: 64, count: 8 }], mailboxBuffers: 4 } });

function open(region: PmemRegion, pilafFaults: Partial<PilafFaults> = {}): PilafAppServer {
  const nic = new Rnic(region, { ddio: false });
  return kvApp.open({ region, nic, clock: new VirtualClock(), schedule: queueMicrotask, entropy: seededEntropy(createPrng(1)) }, { ...OPTS, pilafFaults }) as PilafAppServer;
}

/** Durable stores, as a crash image holds them. */
function put(region: PmemRegion, at: number, b: Uint8Array): void {
  region.store(at, b);
  region.persist(at, b.length);
}

/** An entry whose checksum fails (a crash cut its update): the ptr word kept, the crc flipped. */
function torn(e: { ptr: number; len: number; version: number }): Uint8Array {
  const b = encodePilafEntry(e);
  b[16] = b[16]! ^ 0xff;
  return b;
}

/**
 * One entry per state the table distinguishes, written by hand (slot: state → row):
 *   0, 9..15 never written                                  → empty
 *   1 a whole tombstone                                     → tombstone
 *   2 a torn entry over ptr 0                               → torn-delete
 *   3 a whole entry of item A (its length and version)      → item
 *   4 a whole entry of item B with an older version         → item-repair
 *   5 a torn entry whose ptr word names item C              → torn-item
 *   6 a whole entry pointing inside the header              → no-item
 *   7 a whole entry pointing at item A again (reached by 3) → no-item
 *   8 a torn entry pointing at an item with a flipped byte  → no-item
 */
function buildStates(): { region: PmemRegion; g: KvGeometry; bufs: number[]; lens: number[] } {
  const region = PmemRegion.createInMemory(kvApp.minRegionBytes(OPTS), { tracing: true });
  kvApp.format(region, OPTS);
  const probe = open(region);
  const g = probe.kv.geometry;
  probe.close();
  const c = g.classes[0]!;
  const bufs = [0, 1, 2, 3].map((i) => c.offset + i * c.sizeBytes);
  const lens: number[] = [];
  const item = (at: number, key: string, value: string, version: number): number => {
    const b = encodeItem({ key: te.encode(key), value: te.encode(value), version: BigInt(version), tombstone: false });
    put(region, at, b);
    return itemBytes(key.length, value.length);
  };
  const entry = (slot: number, b: Uint8Array): void => put(region, slotOffset(g, slot), b);
  entry(1, encodePilafEntry({ ptr: 0, len: 0, version: 3 }));
  entry(2, torn({ ptr: 0, len: 40, version: 5 }));
  lens.push(item(bufs[0]!, 'a', 'alpha', 6));
  entry(3, encodePilafEntry({ ptr: bufs[0]!, len: lens[0]!, version: 6 }));
  lens.push(item(bufs[1]!, 'b', 'beta', 7));
  entry(4, encodePilafEntry({ ptr: bufs[1]!, len: lens[1]!, version: 2 }));
  lens.push(item(bufs[2]!, 'c', 'gamma', 8));
  entry(5, torn({ ptr: bufs[2]!, len: lens[2]!, version: 8 }));
  entry(6, encodePilafEntry({ ptr: g.base + 64, len: 40, version: 4 }));
  entry(7, encodePilafEntry({ ptr: bufs[0]!, len: lens[0]!, version: 6 }));
  const bad = encodeItem({ key: te.encode('d'), value: te.encode('delta'), version: 9n, tombstone: false });
  bad[bad.length - 1] = bad[bad.length - 1]! ^ 0xff;
  put(region, bufs[3]!, bad);
  entry(8, torn({ ptr: bufs[3]!, len: bad.length, version: 9 }));
  return { region, g, bufs, lens };
}

const entryAt = (region: PmemRegion, g: KvGeometry, slot: number) => decodePilafEntry(region.load(slotOffset(g, slot), 32));

t.test('every row, built in PM: recovery writes what its row says, reports it, and is idempotent', async (t) => {
  const { region, g, bufs, lens } = buildStates();
  const s = open(region);
  const r = s.recover();
  t.same(r.rows, { empty: 8, tombstone: 1, 'torn-delete': 1, item: 1, 'item-repair': 1, 'torn-item': 1, 'no-item': 3 }, 'one row per entry, as built');
  t.match(r, { app: 'kv', system: 'pilaf', slotsScanned: 16, entriesRebuilt: 2, entriesCleared: 4, reachable: 3, reclaimed: 8 - 3 });
  t.same(s.recover(), r, 'a second recover() reports the same');
  const tombstone = { ptr: 0, len: 0, version: 1 };
  t.equal(entryAt(region, g, 0), 'empty', 'empty: kept');
  t.same(entryAt(region, g, 1), { ptr: 0, len: 0, version: 3 }, 'tombstone: kept as it was');
  t.same(entryAt(region, g, 2), tombstone, 'torn-delete: a whole tombstone');
  t.same(entryAt(region, g, 3), { ptr: bufs[0], len: lens[0], version: 6 }, 'item: kept');
  t.same(entryAt(region, g, 4), { ptr: bufs[1], len: lens[1], version: 7 }, "item-repair: the item's version");
  t.same(entryAt(region, g, 5), { ptr: bufs[2], len: lens[2], version: 8 }, 'torn-item: rebuilt from the item');
  for (const slot of [6, 7, 8]) t.same(entryAt(region, g, slot), tombstone, `slot ${slot} (no-item): cleared to a tombstone`);
  t.same(s.audit(), []);
  s.close();

  // Recovery of the recovered index changes nothing: every entry is now empty, a tombstone or a sound item.
  const again = open(region);
  const r2 = again.recover();
  t.same(r2.rows, { empty: 8, tombstone: 5, item: 3 });
  t.match(r2, { entriesRebuilt: 0, entriesCleared: 0, reachable: 3, reclaimed: 5 });
  again.close();
});

t.test('mutant clear-torn-entry: a torn entry whose ptr word names an item is cleared (the put is lost)', async (t) => {
  const { region, g } = buildStates();
  const s = open(region, { clearTornEntry: true });
  const r = s.recover();
  t.same(r.rows, { empty: 8, tombstone: 1, 'torn-delete': 1, item: 1, 'item-repair': 1, 'no-item': 4 }, 'slot 5 decided by row no-item, not torn-item');
  t.same(entryAt(region, g, 5), { ptr: 0, len: 0, version: 1 }, "item C's entry is gone");
  t.equal(r.reachable, 2);
  s.close();
});
