// The linearizability checker: histories it must accept, histories it must reject, and random
// histories of a real atomic register (always linearizable) — seeded.
import t from 'tap';
import fc from 'fast-check';
import { checkLinearizable, kvModel, type KvInput, type KvOutput, type Model, type Operation } from '../../src/check/linearizability.js';

type Op = Operation<KvInput, KvOutput>;
const put = (client: number, key: string, value: string, call: number, ret: number | undefined): Op => ({ client, input: { kind: 'put', key, value }, output: null, call, ret });
const del = (client: number, key: string, call: number, ret: number | undefined): Op => ({ client, input: { kind: 'delete', key }, output: null, call, ret });
const get = (client: number, key: string, output: string | null, call: number, ret: number | undefined): Op => ({ client, input: { kind: 'get', key }, output, call, ret });

const accept: Array<[string, Op[]]> = [
  ['empty history', []],
  ['sequential put then get', [put(1, 'a', 'x', 0, 1), get(2, 'a', 'x', 2, 3)]],
  ['read of absent key', [get(1, 'a', null, 0, 1)]],
  ['concurrent put and get may see the old value', [put(1, 'a', 'x', 0, 10), get(2, 'a', null, 1, 2)]],
  ['concurrent put and get may see the new value', [put(1, 'a', 'x', 0, 10), get(2, 'a', 'x', 1, 2)]],
  ['two concurrent puts, reads agree on one order', [put(1, 'a', 'x', 0, 5), put(2, 'a', 'y', 0, 5), get(3, 'a', 'x', 6, 7), get(3, 'a', 'x', 8, 9)]],
  ['delete makes the key absent', [put(1, 'a', 'x', 0, 1), del(1, 'a', 2, 3), get(2, 'a', null, 4, 5)]],
  ['put cut by a crash that took effect', [put(1, 'a', 'x', 0, undefined), get(2, 'a', 'x', 5, 6)]],
  ['put cut by a crash that did not take effect', [put(1, 'a', 'x', 0, undefined), get(2, 'a', null, 5, 6)]],
  ['keys are independent', [put(1, 'a', 'x', 0, 1), put(1, 'b', 'y', 2, 3), get(2, 'b', 'y', 4, 5), get(2, 'a', 'x', 4, 5)]],
  ['operations touching at one instant are concurrent', [put(1, 'a', 'x', 0, 5), get(2, 'a', null, 5, 6)]],
];

const reject: Array<[string, Op[]]> = [
  ['stale read after a completed put', [put(1, 'a', 'x', 0, 1), get(2, 'a', null, 2, 3)]],
  ['read of a value never written', [put(1, 'a', 'x', 0, 1), get(2, 'a', 'z', 2, 3)]],
  ['acknowledged put lost after a later read saw it', [put(1, 'a', 'x', 0, 1), get(2, 'a', 'x', 2, 3), get(2, 'a', null, 4, 5)]],
  ['reads disagree on the order of two puts', [put(1, 'a', 'x', 0, 10), put(2, 'a', 'y', 0, 10), get(3, 'a', 'x', 11, 12), get(3, 'a', 'y', 13, 14), get(4, 'a', 'x', 15, 16)]],
  ['new-old inversion: a read that starts after another ends sees an older value', [put(1, 'a', 'x', 0, 1), put(1, 'a', 'y', 2, 20), get(2, 'a', 'y', 3, 4), get(3, 'a', 'x', 5, 6)]],
  ['a crash-cut put cannot be seen before its call', [get(2, 'a', 'x', 0, 1), put(1, 'a', 'x', 2, undefined)]],
  ['delete ignored', [put(1, 'a', 'x', 0, 1), del(1, 'a', 2, 3), get(2, 'a', 'x', 4, 5)]],
  ['violation on one key among many', [put(1, 'b', 'q', 0, 1), get(1, 'b', 'q', 2, 3), put(1, 'a', 'x', 0, 1), get(2, 'a', null, 2, 3)]],
];

for (const [name, h] of accept) {
  t.test(`accepts: ${name}`, async (t) => {
    const r = checkLinearizable(kvModel, h);
    t.equal(r.ok, true, JSON.stringify(r));
  });
}

for (const [name, h] of reject) {
  t.test(`rejects: ${name}`, async (t) => {
    const r = checkLinearizable(kvModel, h);
    t.equal(r.ok, false);
    if (r.ok === false) t.equal(r.partition, 'a', 'names the partition that failed');
  });
}

t.test('bad operation times are a RangeError', async (t) => {
  t.throws(() => checkLinearizable(kvModel, [put(1, 'a', 'x', 5, 1)]), { name: 'RangeError', message: 'operation of client 1 has call 5 and return 1: need finite call <= return' });
  t.throws(() => checkLinearizable(kvModel, [], { maxSteps: 0 }), new RangeError('maxSteps must be a positive integer, got 0'));
});

t.test('a search past its bound says unknown, never a verdict', async (t) => {
  const h: Op[] = [];
  for (let i = 0; i < 14; i++) h.push(put(i, 'a', `v${i}`, 0, 100));
  h.push(get(99, 'a', 'nope', 101, 102));
  const r = checkLinearizable(kvModel, h, { maxSteps: 50 });
  t.equal(r.ok, 'unknown');
  t.same(r.keys, [{ key: 'a', ok: 'unknown' }]);
});

/** 12 concurrent puts then a read of a value none wrote: refuted only after a search of ~2^12 states. */
const hard = (key: string): Op[] => {
  const h: Op[] = [];
  for (let i = 0; i < 12; i++) h.push(put(i, key, `v${i}`, 0, 100));
  h.push(get(99, key, 'nope', 101, 102));
  return h;
};

t.test('one refuted key makes the history false, whatever the other keys searches did', async (t) => {
  // Key 'a' comes first and exhausts the bound; key 'b' is refuted within it; key 'c' is fine.
  const h = [...hard('a'), put(1, 'b', 'x', 0, 1), get(2, 'b', null, 2, 3), put(1, 'c', 'y', 0, 1), get(2, 'c', 'y', 2, 3)];
  const all = checkLinearizable(kvModel, h, { maxSteps: 50, allKeys: true });
  t.equal(all.ok, false, JSON.stringify(all.keys));
  t.same(all.keys, [
    { key: 'a', ok: 'unknown' },
    { key: 'b', ok: false },
    { key: 'c', ok: true },
  ]);
  if (all.ok === false) {
    t.equal(all.partition, 'b');
    t.equal(all.operations.length, 2);
  }
  // By default the search stops at the refuted key: the keys not decided by then are unknown.
  const first = checkLinearizable(kvModel, h, { maxSteps: 50 });
  t.equal(first.ok, false);
  t.same(first.keys, [
    { key: 'a', ok: 'unknown' },
    { key: 'b', ok: false },
    { key: 'c', ok: 'unknown' },
  ]);
  // No key refuted, one undecided: unknown, naming it.
  const u = checkLinearizable(kvModel, [...hard('a'), put(1, 'c', 'y', 0, 1), get(2, 'c', 'y', 2, 3)], { maxSteps: 50 });
  t.equal(u.ok, 'unknown');
  t.same(u.keys, [
    { key: 'a', ok: 'unknown' },
    { key: 'c', ok: true },
  ]);
  if (u.ok === 'unknown') t.equal(u.reason, 'search bound of 50 steps reached');
  // With the default bound every key is decided; the quick refutation of 'b' is found first
  // (the budget per key grows round by round), though 'a' comes first.
  const d = checkLinearizable(kvModel, h, { allKeys: true });
  t.equal(d.ok, false);
  t.same(d.keys, [
    { key: 'a', ok: false },
    { key: 'b', ok: false },
    { key: 'c', ok: true },
  ]);
  if (d.ok === false) t.equal(d.partition, 'b', 'the first refuted key found is named');
  const quick = checkLinearizable(kvModel, h);
  t.ok(quick.ok === false && quick.explored < 12_000, `stops at the first refutation: ${quick.explored} steps`);
});

t.test('the memoisation cache is bounded: a huge maxSteps says unknown, never a RangeError', async (t) => {
  // Before the bound a maxSteps past 2^24 could fill the cache until Set threw "maximum size exceeded".
  const r = checkLinearizable(kvModel, hard('a'), { maxSteps: 1e12, maxCache: 1000 });
  t.comment(`explored ${r.explored}`);
  t.equal(r.ok, 'unknown');
  if (r.ok === 'unknown') t.equal(r.reason, 'memoisation bound of 1000 cached states reached');
  t.same(r.keys, [{ key: 'a', ok: 'unknown' }]);
  t.ok(r.explored > 1000, `explored ${r.explored} steps before the cache bound`);
  const big = checkLinearizable(kvModel, hard('a'), { maxSteps: 1e12 });
  t.equal(big.ok, false, 'the default cache bound leaves room to decide');
  t.throws(() => checkLinearizable(kvModel, [], { maxCache: 16_000_001 }), new RangeError('maxCache must be an integer in [1, 16000000], got 16000001'));
  t.throws(() => checkLinearizable(kvModel, [], { maxCache: 0 }), new RangeError('maxCache must be an integer in [1, 16000000], got 0'));
});

// A simulated atomic register: each operation takes effect at one random instant inside its
// interval, so the history is linearizable by construction. Some operations are cut by a crash.
const seed = Number(process.env.PMRPC_SEED ?? 1 + (Date.now() % 1_000_000));
t.comment(`fast-check seed ${seed} (replay: PMRPC_SEED=${seed})`);

t.test('histories of a real atomic register are accepted; a read of a never-written value is rejected', async (t) => {
  const opArb = fc.record({
    client: fc.integer({ min: 0, max: 3 }),
    kind: fc.constantFrom('put', 'get', 'delete'),
    key: fc.constantFrom('a', 'b'),
    start: fc.integer({ min: 0, max: 50 }),
    len: fc.integer({ min: 1, max: 10 }),
    at: fc.double({ min: 0, max: 1, noNaN: true }),
    crash: fc.boolean(),
  });
  fc.assert(
    fc.property(fc.array(opArb, { minLength: 1, maxLength: 9 }), (raw) => {
      const withPoint = raw.map((r, i) => ({ ...r, i, value: `v${i}`, point: r.start + r.at * r.len }));
      const store = new Map<string, string | null>();
      const outputs = new Map<number, KvOutput>();
      for (const r of [...withPoint].sort((a, b) => a.point - b.point)) {
        if (r.kind === 'put') store.set(r.key, r.value);
        else if (r.kind === 'delete') store.set(r.key, null);
        else outputs.set(r.i, store.get(r.key) ?? null);
      }
      const history: Op[] = withPoint.map((r) => {
        const cut = r.crash && r.kind !== 'get';
        const input: KvInput = r.kind === 'put' ? { kind: 'put', key: r.key, value: r.value } : { kind: r.kind as 'get' | 'delete', key: r.key };
        return { client: r.client, input, output: r.kind === 'get' ? outputs.get(r.i)! : null, call: r.start, ret: cut ? undefined : r.start + r.len };
      });
      const res = checkLinearizable(kvModel, history);
      // A read of a value nobody wrote can never be linearized.
      const g = history.findIndex((op) => op.input.kind === 'get');
      const flipped = history.map((op, k) => (k === g ? { ...op, output: 'never-written' } : op));
      return res.ok === true && (g < 0 || checkLinearizable(kvModel, flipped).ok === false);
    }),
    { seed, numRuns: 300 },
  );
  t.pass('300 random register histories accepted');
});

t.test('a generic model: a counter with increments and reads', async (t) => {
  type CIn = { kind: 'inc' } | { kind: 'read' };
  const counter: Model<number, CIn, number | null> = {
    init: () => 0,
    step: (s, i, o) => (i.kind === 'inc' ? s + 1 : o === undefined || o === s ? s : undefined),
    key: (s) => String(s),
  };
  const ok = checkLinearizable(counter, [
    { client: 1, input: { kind: 'inc' }, output: null, call: 0, ret: 3 },
    { client: 2, input: { kind: 'inc' }, output: null, call: 1, ret: 4 },
    { client: 3, input: { kind: 'read' }, output: 1, call: 2, ret: 5 },
    { client: 3, input: { kind: 'read' }, output: 2, call: 6, ret: 7 },
  ]);
  t.equal(ok.ok, true);
  const bad = checkLinearizable(counter, [
    { client: 1, input: { kind: 'inc' }, output: null, call: 0, ret: 1 },
    { client: 3, input: { kind: 'read' }, output: 0, call: 2, ret: 3 },
  ]);
  t.equal(bad.ok, false);
});

// Cut operations that no completed operation can observe are left out of the search
// (Model.droppable): the verdict is the same as with them, and a history with many of them — every
// crash cuts the operations in flight — is decided instead of exhausting the bound.
const dropSeed = Number(process.env.PMRPC_SEED ?? 7);
t.test(`kvModel.droppable keeps every verdict (fast-check, seed ${dropSeed}; replay: PMRPC_SEED=${dropSeed})`, async (t) => {
  const { droppable: _d, ...plain } = kvModel;
  const plainModel: Model<string | null, KvInput, KvOutput> = plain;
  const opArb = fc.record({
    kind: fc.constantFrom('put', 'delete', 'get'),
    value: fc.constantFrom('a', 'b', 'c'),
    out: fc.constantFrom<string | null>('a', 'b', 'c', null),
    call: fc.integer({ min: 0, max: 20 }),
    len: fc.integer({ min: 0, max: 6 }),
    cut: fc.boolean(),
  });
  let refuted = 0;
  fc.assert(
    fc.property(fc.array(opArb, { minLength: 1, maxLength: 9 }), (raw) => {
      const h: Op[] = raw.map((r, i) => {
        const ret = r.cut ? undefined : r.call + r.len;
        if (r.kind === 'put') return put(i, 'x', r.value, r.call, ret);
        if (r.kind === 'delete') return del(i, 'x', r.call, ret);
        return get(i, 'x', r.cut ? null : r.out, r.call, ret);
      });
      const a = checkLinearizable(kvModel, h).ok;
      const b = checkLinearizable(plainModel, h).ok;
      if (b === false) refuted++;
      return a === b;
    }),
    { seed: dropSeed, numRuns: 600 },
  );
  t.ok(refuted > 0, `${refuted} of the random histories were refuted (the property saw both verdicts)`);
});

t.test('a key with many cut writes nobody read is decided, and a cut write that was read still counts', async (t) => {
  const h: Op[] = [put(0, 'x', 'v0', 0, 1)];
  for (let i = 1; i <= 40; i++) h.push(put(i, 'x', `lost${i}`, 2, undefined), get(100 + i, 'x', null, 2, undefined));
  h.push(get(200, 'x', 'v0', 3, 4));
  t.equal(checkLinearizable(kvModel, h).ok, true, '40 cut PUTs and 40 cut GETs: decided, linearizable');
  // The read of a cut PUT's value keeps that PUT: it must be placed, and here it cannot (it was
  // called after the read returned).
  const bad: Op[] = [put(0, 'x', 'v0', 0, 1), get(1, 'x', 'late', 2, 3), put(2, 'x', 'late', 4, undefined)];
  t.equal(checkLinearizable(kvModel, bad).ok, false, 'a read of a value written only later is refuted');
});
