// The lock-based baseline's replica recovery as data (src/apps/rslock/recovery.ts, issue 26 item
// 4): the block table covers every input with exactly one row, and every row is reached by a
// replica whose PM was written by hand into that row's state — then what recovery wrote, its
// report (row counts, lock lines re-derived, lost copies) and a second recovery of the recovered
// image (every block sound) are checked.
import t from 'tap';
import { createPrng, PmemRegion, seededEntropy, VirtualClock } from '../../../pmem/index.js';
import { Rnic } from '../../../flush/index.js';
import {
  allRsLockBlockInputs,
  decideRsLockBlock,
  decodeLockLine,
  decodeRecord,
  encodeLockLine,
  encodeRecord,
  LOCK_LINE_BYTES,
  lockOffset,
  matchingRsLockBlockRows,
  RSLOCK_BLOCK_TABLE,
  rslockApp,
  slotOffset,
  type RsLockAppServer,
} from '../../../src/apps/rslock/index.js';

t.test('every input matches exactly one row; every row is live; ids unique; table frozen', async (t) => {
  const inputs = allRsLockBlockInputs();
  t.equal(inputs.length, 2 * 2);
  for (const input of inputs) t.equal(matchingRsLockBlockRows(input).length, 1, `${JSON.stringify(input)} matches one row`);
  for (const row of RSLOCK_BLOCK_TABLE) t.ok(inputs.some((i) => decideRsLockBlock(i) === row), `row ${row.id} matches some input`);
  t.equal(new Set(RSLOCK_BLOCK_TABLE.map((r) => r.id)).size, RSLOCK_BLOCK_TABLE.length);
  t.ok(Object.isFrozen(RSLOCK_BLOCK_TABLE));
  for (const row of RSLOCK_BLOCK_TABLE) t.ok(row.why.length > 20, `row ${row.id} says why`);
  t.throws(() => decideRsLockBlock({ records: 'bogus' as never, lock: 'matches' }), /0 rows match/);
  t.equal(matchingRsLockBlockRows({ records: 'some', lock: 'matches' }, [...RSLOCK_BLOCK_TABLE, RSLOCK_BLOCK_TABLE[0]!]).length, 2, 'an overlap is seen');
});

const OPTS = rslockApp.resolveOptions({ blocks: 6, blockBytes: 64 });

function open(region: PmemRegion): RsLockAppServer {
  const nic = new Rnic(region, { ddio: false });
  return rslockApp.open({ region, nic, clock: new VirtualClock(), schedule: queueMicrotask, entropy: seededEntropy(createPrng(1)) }, OPTS) as RsLockAppServer;
}

/** Durable stores, as a crash image holds them. */
function put(region: PmemRegion, at: number, b: Uint8Array): void {
  region.store(at, b);
  region.persist(at, b.length);
}

const te = new TextEncoder();

/**
 * One block per state the table distinguishes, written by hand (block: state → row):
 *   0 as formatted (version 0 in slot 0, the line free)              → sound
 *   1 version 3 in slot 1, the line publishes it                      → sound
 *   2 a lock held at the crash                                         → lock-rederived
 *   3 version 5 FLUSHed in slot 1, the line still names version 4 in 0 → lock-rederived (takes 5)
 *   4 both slots torn, the line names version 0 in slot 0               → lost
 *   5 both slots torn, the line names version 2 in slot 1               → lost-relock
 */
function buildStates(): { region: PmemRegion; torn: Uint8Array } {
  const region = PmemRegion.createInMemory(rslockApp.minRegionBytes(OPTS), { tracing: true });
  rslockApp.format(region, OPTS);
  const probe = open(region);
  const g = probe.geometry;
  probe.close();
  const record = (b: number, slot: 0 | 1, version: bigint, value: string): void => put(region, slotOffset(g, b, slot), encodeRecord({ version, data: te.encode(value) }));
  const line = (b: number, version: bigint, slot: 0 | 1, locked = false): void => put(region, lockOffset(g, b), encodeLockLine({ version, slot, locked }, 77n));
  const torn = encodeRecord({ version: 9n, data: te.encode('torn') });
  torn[12] = torn[12]! ^ 0xff;
  record(1, 1, 3n, 'three');
  line(1, 3n, 1);
  line(2, 0n, 0, true);
  record(3, 0, 4n, 'four');
  record(3, 1, 5n, 'five');
  line(3, 4n, 0);
  for (const b of [4, 5]) for (const slot of [0, 1] as const) put(region, slotOffset(g, b, slot), torn);
  line(5, 2n, 1);
  return { region, torn };
}

t.test('every row, built in PM: recovery writes what its row says, reports it, and a second recovery finds every block sound', async (t) => {
  const { region } = buildStates();
  const s = open(region);
  const g = s.geometry;
  const r = s.recover();
  t.same(r, { app: 'rslock', blocks: 6, lockLinesRederived: 3, lostCopies: 2, rows: { sound: 2, 'lock-rederived': 2, lost: 1, 'lost-relock': 1 } }, 'one row per block, as built');
  const lineOf = (b: number) => decodeLockLine(region.load(lockOffset(g, b), LOCK_LINE_BYTES));
  t.same(lineOf(0), { version: 0n, slot: 0, locked: false }, 'sound: kept');
  t.same(lineOf(1), { version: 3n, slot: 1, locked: false }, 'sound: kept');
  t.same(lineOf(2), { version: 0n, slot: 0, locked: false }, 'lock-rederived: the held lock released');
  t.same(lineOf(3), { version: 5n, slot: 1, locked: false }, 'lock-rederived: the FLUSHed, unpublished version 5 is taken');
  for (const b of [4, 5]) {
    t.same(lineOf(b), { version: 0n, slot: 0, locked: false }, `block ${b}: the line publishes version 0 in slot 0`);
    t.same(decodeRecord(region.load(slotOffset(g, b, 0), g.slotBytes), g.blockBytes), { version: 0n, data: new Uint8Array(0) }, `block ${b}: an empty version-0 record (a lost copy)`);
  }
  t.same(s.audit(), [], 'the recovered replica is sound');
  s.close();

  const again = open(region);
  t.same(again.recover().rows, { sound: 6 }, 'recovery of the recovered image changes nothing');
  again.close();
});
