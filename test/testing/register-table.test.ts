// The replicated register's recovery as data (src/apps/register/recovery.ts, issue 26 item 4): the
// cell table covers every input with exactly one row, and every row is reached by a node whose PM
// was written by hand into that row's state — then what recovery wrote, its report (row counts,
// lost copies) and a second recovery of the recovered image are checked.
import t from 'tap';
import { createPrng, PmemRegion, seededEntropy, VirtualClock } from '../../pmem/index.js';
import { Rnic } from '../../flush/index.js';
import {
  allRegisterCellInputs,
  blockBytes,
  decideRegisterCell,
  encodeRecord,
  encodeWord,
  LOST_WORD,
  matchingRegisterCellRows,
  recordIndex,
  recordOffset,
  REGISTER_CELL_TABLE,
  REGISTER_HEADER_BYTES,
  registerApp,
  wordBytes,
  type RegisterAppServer,
} from '../../src/apps/register/index.js';

t.test('every input matches exactly one row; every row is live; ids unique; table frozen', async (t) => {
  const inputs = allRegisterCellInputs();
  t.equal(inputs.length, 3);
  for (const input of inputs) t.equal(matchingRegisterCellRows(input).length, 1, `${JSON.stringify(input)} matches one row`);
  for (const row of REGISTER_CELL_TABLE) t.ok(inputs.some((i) => decideRegisterCell(i) === row), `row ${row.id} matches some input`);
  t.equal(new Set(REGISTER_CELL_TABLE.map((r) => r.id)).size, REGISTER_CELL_TABLE.length);
  t.ok(Object.isFrozen(REGISTER_CELL_TABLE));
  for (const row of REGISTER_CELL_TABLE) t.ok(row.why.length > 20, `row ${row.id} says why`);
  t.throws(() => decideRegisterCell({ word: 'bogus' as never }), /0 rows match/);
  t.equal(matchingRegisterCellRows({ word: 'carried' }, [...REGISTER_CELL_TABLE, REGISTER_CELL_TABLE[0]!]).length, 2, 'an overlap is seen');
});

t.test('every row, built in PM: recovery writes what its row says, reports it, and a second recovery keeps it', async (t) => {
  const o = registerApp.resolveOptions({ registers: 5, writers: 2 });
  const region = PmemRegion.createInMemory(registerApp.minRegionBytes(o));
  registerApp.format(region, o);
  const open = (): RegisterAppServer => registerApp.open({ region, nic: new Rnic(region, { drain: 'eager' }), clock: new VirtualClock(), schedule: queueMicrotask, entropy: seededEntropy(createPrng(1)) }, o) as RegisterAppServer;
  const blockAt = (i: number): number => o.base + REGISTER_HEADER_BYTES + i * blockBytes(o.writers);
  const put = (at: number, b: Uint8Array): void => {
    region.store(at, b);
    region.persist(at, b.length);
  };
  // Register (state → row): 0 as formatted → sound; 1 a word whose record carries it → sound;
  // 2 LOST_WORD → lost; 3 a word naming a record never written → orphan; 4 a word naming a record out of range → orphan.
  const w1 = encodeWord({ ts: 2n, writer: 1n, record: recordIndex(1, 1) });
  put(blockAt(1) + recordOffset(recordIndex(1, 1)), encodeRecord(42n, w1));
  put(blockAt(1), wordBytes(w1));
  put(blockAt(2), wordBytes(LOST_WORD));
  put(blockAt(3), wordBytes(encodeWord({ ts: 3n, writer: 2n, record: recordIndex(2, 0) })));
  put(blockAt(4), wordBytes(encodeWord({ ts: 4n, writer: 1n, record: 2 * o.writers + 1 })));
  const s = open();
  const r = s.recover();
  t.same(r, { app: 'register', registers: 5, lostCopies: 2, rows: { sound: 2, lost: 1, orphan: 2 } }, 'one row per register, as built');
  t.same(s.cell(0), { ts: 0n, writer: 0n, value: 0n }, 'sound: the initial cell kept');
  t.same(s.cell(1), { ts: 2n, writer: 1n, value: 42n }, 'sound: the written cell kept');
  for (const i of [2, 3, 4]) t.equal(s.cell(i), undefined, `register ${i}: lost on this node`);
  for (const i of [3, 4]) t.same(region.load(blockAt(i), 8), wordBytes(LOST_WORD), `register ${i} (orphan): LOST_WORD written`);
  t.same(s.audit(), [], 'sound after recovery');
  s.close();
  const again = open();
  t.same(again.recover().rows, { sound: 2, lost: 3 }, 'a second recovery of the recovered image writes nothing');
  again.close();
});
