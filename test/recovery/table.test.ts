// recovery/table.ts: the row matcher every decision table (ring, connection slots, PRISM-RS slots) uses.
import t from 'tap';
import { allCombinations, decideRow, matchRows, type When } from '../../recovery/index.js';

type In = { a: 'x' | 'y'; b: 1 | 2 | 3 };
const rows: Array<{ id: string; when: When<In> }> = [
  { id: 'x-any', when: { a: ['x'] } },
  { id: 'y-low', when: { a: ['y'], b: [1, 2] } },
  { id: 'y-3', when: { a: ['y'], b: [3] } },
];

t.test('allCombinations is the product of the value lists, in order', async (t) => {
  const all = allCombinations<In>({ a: ['x', 'y'], b: [1, 2, 3] });
  t.equal(all.length, 6);
  t.same(all[0], { a: 'x', b: 1 });
  t.same(all[5], { a: 'y', b: 3 });
});

t.test('an omitted input matches any value; every input here has exactly one row', async (t) => {
  for (const i of allCombinations<In>({ a: ['x', 'y'], b: [1, 2, 3] })) t.equal(matchRows(rows, i).length, 1, JSON.stringify(i));
  t.equal(decideRow('t', rows, { a: 'x', b: 3 }).id, 'x-any');
  t.equal(decideRow('t', rows, { a: 'y', b: 2 }).id, 'y-low');
});

t.test('a gap or an overlap in a table is an invariant error naming the table and the input', async (t) => {
  t.throws(() => decideRow('gappy', rows.slice(0, 2), { a: 'y', b: 3 }), { code: 'PMRPC_ERR_INVARIANT', message: /gappy: 0 rows match/ });
  t.throws(() => decideRow('overlapping', [...rows, { id: 'dup', when: {} }], { a: 'x', b: 1 }), { code: 'PMRPC_ERR_INVARIANT', message: /overlapping: 2 rows match/ });
});
