// The decision table covers every input combination with exactly one row.
import t from 'tap';
import { allBehindWordInputs, allInputs, BEHIND_WORD_TABLE, decide, decideBehindWord, DECISION_TABLE, matchingBehindWordRows, matchingRows } from '../../recovery/index.js';

t.test('every input matches exactly one row', async (t) => {
  const inputs = allInputs();
  t.equal(inputs.length, 2 * 3 * 3 * 4);
  let bad = 0;
  for (const input of inputs) {
    const rows = matchingRows(input);
    if (rows.length !== 1) {
      bad++;
      t.fail(`${JSON.stringify(input)} matches ${rows.map((r) => r.id).join(', ') || 'no row'}`);
    }
  }
  t.equal(bad, 0, 'complete and without overlap');
});

t.test('every row matches some input; ids unique; table frozen', async (t) => {
  const inputs = allInputs();
  for (const row of DECISION_TABLE) t.ok(inputs.some((i) => decide(i) === row), `row ${row.id} is not dead`);
  t.equal(new Set(DECISION_TABLE.map((r) => r.id)).size, DECISION_TABLE.length);
  t.ok(Object.isFrozen(DECISION_TABLE));
  t.same(new Set(DECISION_TABLE.map((r) => r.action)), new Set(['replay', 'reexecute', 'skip', 'invalidate', 'refuse']), 'every action is used');
});

t.test('a table with a gap or an overlap is caught by decide', async (t) => {
  t.throws(() => decide({ checksum: 'valid', lap: 'expected', seq: 'next', record: 'bogus' as never }), /0 rows match/);
  const dup = [...DECISION_TABLE, DECISION_TABLE[0]!];
  t.equal(matchingRows({ checksum: 'valid', lap: 'expected', seq: 'next', record: 'applied' }, dup).length, 2);
});

t.test('spot checks', async (t) => {
  t.equal(decide({ checksum: 'invalid', lap: 'other', seq: 'next', record: 'complete-unapplied' }).action, 'replay', 'a record is replayed even when its entry was never durable');
  t.equal(decide({ checksum: 'valid', lap: 'expected', seq: 'pastGap', record: 'none' }).action, 'invalidate');
  t.equal(decide({ checksum: 'valid', lap: 'expected', seq: 'inPrefix', record: 'incomplete' }).action, 'reexecute');
  t.equal(decide({ checksum: 'valid', lap: 'expected', seq: 'inPrefix', record: 'applied' }).action, 'refuse');
});

t.test('records behind the applied word: every input matches exactly one row, every row is used', async (t) => {
  const inputs = allBehindWordInputs();
  t.equal(inputs.length, 3);
  for (const i of inputs) t.equal(matchingBehindWordRows(i).length, 1, `record ${i.record}`);
  for (const row of BEHIND_WORD_TABLE) t.ok(inputs.some((i) => decideBehindWord(i) === row), `row ${row.id} matches some input`);
  t.ok(Object.isFrozen(BEHIND_WORD_TABLE));
  t.same(BEHIND_WORD_TABLE.filter((r) => r.action === 'replay').map((r) => r.id), ['replay-behind-word'], 'only a complete unapplied record is replayed');
  t.throws(() => decideBehindWord({ record: 'none' as never }), /0 rows match/);
});
