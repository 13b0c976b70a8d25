// SeqMap (pmem/seq-map.ts), the sequence-keyed map of the client's calls and of a QueuePair's
// outstanding requests, against a JavaScript Map as the model: random runs of set, delete, get,
// has, clear and iteration over keys in a sliding window (as sequence numbers are), with keys past
// 2^32, far apart (its side Map) and not integers mixed in.
// Replay a failure: PMRPC_SEED=<printed seed> npx tap test/pmem/seq-map.test.ts
import t from 'tap';
import fc from 'fast-check';
import { SeqMap } from '../../pmem/index.js';

const seed = Number(process.env.PMRPC_SEED ?? Date.now() % 2 ** 31);
t.comment(`seq-map seed ${seed} (replay: PMRPC_SEED=${seed} npx tap test/pmem/seq-map.test.ts)`);

type Op = { kind: 'add' } | { kind: 'settle'; back: number } | { kind: 'odd'; key: number } | { kind: 'drop'; key: number } | { kind: 'update'; back: number } | { kind: 'clear' };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 8, arbitrary: fc.constant<Op>({ kind: 'add' }) },
  { weight: 8, arbitrary: fc.nat({ max: 300 }).map<Op>((back) => ({ kind: 'settle', back })) },
  { weight: 2, arbitrary: fc.nat({ max: 40 }).map<Op>((back) => ({ kind: 'update', back })) },
  {
    weight: 1,
    arbitrary: fc
      .oneof(fc.constant(2 ** 32 - 1), fc.constant(2 ** 32), fc.constant(2 ** 53 - 1), fc.integer({ min: 0, max: 2 ** 40 }), fc.constant(-1), fc.constant(0.5), fc.constant(Number.NaN))
      .map<Op>((key) => ({ kind: 'odd', key })),
  },
  { weight: 1, arbitrary: fc.integer({ min: -2, max: 2 ** 33 }).map<Op>((key) => ({ kind: 'drop', key })) },
  { weight: 1, arbitrary: fc.constant<Op>({ kind: 'clear' }) },
);

t.test('the same answers as a Map, in the same order, over random runs', async (t) => {
  let runs = 0;
  fc.assert(
    fc.property(fc.nat({ max: 2 ** 32 + 5 }), fc.array(op, { maxLength: 600 }), (start, ops) => {
      runs++;
      const model = new Map<number, string>();
      const m = new SeqMap<string>();
      let next = start;
      let v = 0;
      for (const o of ops) {
        switch (o.kind) {
          case 'add': {
            const val = `v${v++}`;
            model.set(next, val);
            m.set(next, val);
            next++;
            break;
          }
          case 'settle':
          case 'update': {
            const key = next - 1 - o.back;
            if (o.kind === 'settle') {
              if (m.delete(key) !== model.delete(key)) return false;
            } else if (model.has(key)) {
              const val = `u${v++}`;
              model.set(key, val);
              m.set(key, val);
            }
            break;
          }
          case 'odd': {
            const val = `o${v++}`;
            model.set(o.key, val);
            m.set(o.key, val);
            break;
          }
          case 'drop':
            if (m.delete(o.key) !== model.delete(o.key)) return false;
            break;
          case 'clear':
            model.clear();
            m.clear();
            break;
        }
        if (m.size !== model.size) return false;
      }
      for (const k of [...model.keys(), next, next - 1, start, 2 ** 32, -1]) {
        if (m.get(k) !== model.get(k) || m.has(k) !== model.has(k)) return false;
      }
      const a = [...m];
      const b = [...model];
      if (JSON.stringify(a) !== JSON.stringify(b)) return false;
      if (JSON.stringify([...m.keys()]) !== JSON.stringify([...model.keys()])) return false;
      if (JSON.stringify([...m.values()]) !== JSON.stringify([...model.values()])) return false;
      const seen: Array<[number, string]> = [];
      m.forEach((val, key) => seen.push([key, val]));
      return JSON.stringify(seen) === JSON.stringify(b);
    }),
    { seed, numRuns: 300 },
  );
  t.equal(runs >= 300, true, `${runs} runs`);
});

t.test('a window of sequence numbers far past 2^32 keeps its place; a window wider than the table grows it', async (t) => {
  const m = new SeqMap<number>(4);
  const base = 2 ** 40 + 7;
  for (let i = 0; i < 1000; i++) m.set(base + i, i); // 1000 live keys: the table grows to hold them
  t.equal(m.size, 1000);
  t.equal(m.get(base + 999), 999);
  t.equal(m.get(base + 1000), undefined);
  for (let i = 0; i < 1000; i += 2) m.delete(base + i);
  t.same([...m.keys()].slice(0, 3), [base + 1, base + 3, base + 5], 'insertion order after deletes');
  // Far apart: 2^16 slots cannot hold both in distinct slots of the key mod capacity — the side Map does.
  m.set(base + 2 ** 20 + 1, -1);
  t.equal(m.get(base + 2 ** 20 + 1), -1);
  t.equal(m.get(base + 1), 1);
  t.equal(m.size, 501);
});

t.test('iteration skips an entry deleted after it started, as a Map does', async (t) => {
  const m = new SeqMap<string>();
  for (let i = 10; i < 15; i++) m.set(i, `v${i}`);
  const visited: number[] = [];
  for (const [k] of m) {
    visited.push(k);
    if (k === 11) {
      m.delete(12);
      m.delete(10); // already visited
    }
  }
  t.same(visited, [10, 11, 13, 14]);
  t.same([...m.keys()], [11, 13, 14]);
});
