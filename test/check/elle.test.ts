// The Elle-style list-append checker: a hand-made history of each anomaly class is flagged with
// its kind (and a cycle as evidence for the cycle classes); valid histories, 'info' transactions
// included, pass; serial executions of random transactions pass and fail once a read is corrupted
// (fast-check, seeded).
import t from 'tap';
import fc from 'fast-check';
import { checkListAppend, type CycleStep, type KeyName, type ListAppendMop, type ListAppendResult, type ListAppendTxn, type TxnType } from '../../src/check/elle.js';

const r = (key: string, value: number[] | null): ListAppendMop => ({ f: 'r', key, value });
const a = (key: string, value: number): ListAppendMop => ({ f: 'append', key, value });
const tx = (id: number, type: TxnType, mops: ListAppendMop[], call?: number, ret?: number): ListAppendTxn => ({ id, process: id, type, mops, ...(call === undefined ? {} : { call }), ...(ret === undefined ? {} : { ret }) });
const ok = (id: number, ...mops: ListAppendMop[]): ListAppendTxn => tx(id, 'ok', mops);

const kinds = (res: ListAppendResult): string[] => [...new Set(res.anomalies.map((x) => x.kind))].sort();

/** The cycle closes, and each step's edge is one the checker found. */
function cycleOf(t: Tap.Test, res: ListAppendResult, kind: string): CycleStep[] {
  const an = res.anomalies.find((x) => x.kind === kind);
  t.ok(an, `${kind} reported: ${JSON.stringify(res.anomalies)}`);
  const c = an?.cycle ?? [];
  t.ok(c.length >= 2, `${kind} has a cycle as evidence`);
  for (let i = 0; i < c.length; i++) t.equal(c[i]!.to, c[(i + 1) % c.length]!.from, 'the cycle closes');
  return c;
}

t.test('G0: write cycle (two transactions append to x and y in opposite orders)', async (t) => {
  const h = [ok(1, a('x', 1), a('y', 1)), ok(2, a('x', 2), a('y', 2)), ok(3, r('x', [1, 2]), r('y', [2, 1]))];
  const res = checkListAppend(h);
  t.equal(res.valid, false);
  t.same(kinds(res), ['G0']);
  const c = cycleOf(t, res, 'G0');
  t.same(new Set(c.map((s) => s.edge)), new Set(['ww']));
  t.same(c.map((s) => s.from).sort(), [1, 2]);
});

t.test('G1a: a committed read of an aborted append', async (t) => {
  const res = checkListAppend([tx(1, 'fail', [a('x', 1)]), ok(2, r('x', [1]))]);
  t.equal(res.valid, false);
  t.same(kinds(res), ['G1a']);
  t.same(res.anomalies[0]!.txns, [1, 2]);
  t.match(res.anomalies[0]!.detail, /aborted transaction 1/);
});

t.test('G1b: a read of an intermediate append', async (t) => {
  const res = checkListAppend([ok(1, a('x', 1), a('x', 2)), ok(2, r('x', [1])), ok(3, r('x', [1, 2]))]);
  t.equal(res.valid, false);
  t.ok(kinds(res).includes('G1b'), JSON.stringify(res.anomalies));
  t.same(res.anomalies.find((x) => x.kind === 'G1b')!.txns, [1, 2]);
});

t.test('G1c: circular information flow (each reads the other\'s append)', async (t) => {
  const res = checkListAppend([ok(1, a('x', 1), r('y', [1])), ok(2, a('y', 1), r('x', [1]))]);
  t.equal(res.valid, false);
  t.same(kinds(res), ['G1c']);
  const c = cycleOf(t, res, 'G1c');
  t.same(new Set(c.map((s) => s.edge)), new Set(['wr']));
});

t.test('G-single: read skew (one rw edge in the cycle)', async (t) => {
  // T2 sees T1's append to y but not its append to x.
  const res = checkListAppend([ok(1, a('x', 1), a('y', 1)), ok(2, r('x', []), r('y', [1])), ok(3, r('x', [1]))]);
  t.equal(res.valid, false);
  t.same(kinds(res), ['G-single']);
  const c = cycleOf(t, res, 'G-single');
  t.same(c.map((s) => s.edge).sort(), ['rw', 'wr']);
  t.same(c.find((s) => s.edge === 'rw'), { from: 2, to: 1, edge: 'rw', key: 'x' });
});

t.test('numeric keys: read skew across keys 0 and 1; 1 and \'1\' are two keys', async (t) => {
  const num = (k: number, v: number[] | null): ListAppendMop => ({ f: 'r', key: k, value: v });
  const res = checkListAppend([ok(1, { f: 'append', key: 0, value: 1 }, { f: 'append', key: 1, value: 1 }), ok(2, num(0, []), num(1, [1]))]);
  t.same(kinds(res), ['G-single']);
  t.same(res.anomalies[0]!.cycle!.find((s) => s.edge === 'rw'), { from: 2, to: 1, edge: 'rw', key: 0 });
  t.equal(checkListAppend([ok(1, { f: 'append', key: 1, value: 1 }), ok(2, r('1', []))]).valid, true);
  t.throws(() => checkListAppend([ok(1, { f: 'r', key: null, value: [] } as never)]), new TypeError('history[0].mops[0].key must be a string or a number, got null'));
});

t.test('G-single: a lost update (both read the empty list, then append)', async (t) => {
  const res = checkListAppend([ok(1, r('x', []), a('x', 1)), ok(2, r('x', []), a('x', 2)), ok(3, r('x', [1, 2]))]);
  t.equal(res.valid, false);
  t.ok(kinds(res).includes('G-single'), JSON.stringify(res.anomalies));
});

t.test('G2: write skew (two rw edges in the cycle)', async (t) => {
  const h = [ok(1, r('x', []), r('y', []), a('x', 1)), ok(2, r('x', []), r('y', []), a('y', 1)), ok(3, r('x', [1]), r('y', [1]))];
  const res = checkListAppend(h);
  t.equal(res.valid, false);
  t.same(kinds(res), ['G2']);
  const c = cycleOf(t, res, 'G2');
  t.same(c.map((s) => s.edge), ['rw', 'rw']);
});

t.test('G2 is also found without a final read (appends no read shows come after the known order)', async (t) => {
  const res = checkListAppend([ok(1, r('x', []), r('y', []), a('x', 1)), ok(2, r('x', []), r('y', []), a('y', 1))]);
  t.same(kinds(res), ['G2']);
});

t.test('incompatible-order: two reads that are not prefixes of one order', async (t) => {
  const res = checkListAppend([ok(1, a('x', 1)), ok(2, a('x', 2)), ok(3, r('x', [1, 2])), ok(4, r('x', [2, 1]))]);
  t.equal(res.valid, false);
  t.same(kinds(res), ['incompatible-order']);
  t.equal(res.anomalies[0]!.key, 'x');
  t.same(res.anomalies[0]!.txns, [3, 4]);
});

t.test('internal: a read that disagrees with the transaction\'s own append', async (t) => {
  const res = checkListAppend([ok(1, a('x', 1), r('x', [])), ok(2, r('y', [5]), r('y', [])), tx(3, 'ok', [a('y', 5)])]);
  t.equal(res.valid, false);
  t.equal(res.stats.counts.internal, 2);
  t.ok(kinds(res).includes('internal'));
  t.match(res.anomalies.find((x) => x.kind === 'internal')!.detail, /transaction 1 read 'x' = \[\]/);
});

t.test('duplicate elements and garbage reads', async (t) => {
  const dup = checkListAppend([ok(1, a('x', 1)), ok(2, r('x', [1, 1]))]);
  t.same(kinds(dup), ['duplicate-elements']);
  const garbage = checkListAppend([ok(1, a('x', 1)), ok(2, r('x', [1, 7]))]);
  t.same(kinds(garbage), ['garbage-read']);
});

t.test('future reads: a transaction reads its own append before making it', async (t) => {
  const res = checkListAppend([ok(1, r('x', [1]), a('x', 1))]);
  t.equal(res.valid, false);
  t.same(kinds(res), ['future-read']);
  t.equal(res.anomalies[0]!.detail, "transaction 1 read 'x' = [1], including 1, which it appends only later");
  // Among other appends and after an earlier one of its own (not internal: it ends with 1).
  const inner = checkListAppend([ok(1, a('x', 1), r('x', [0, 1]), a('x', 0), a('x', 3))]);
  t.same(kinds(inner), ['future-read']);
  t.equal(inner.stats.counts['future-read'], 1);
  // After another transaction's appends; the future read gives no inference (no G1b, no cycle).
  const ext = checkListAppend([ok(1, a('x', 0)), ok(2, r('x', [0, 1]), a('x', 1)), ok(3, r('x', [0, 1]))]);
  t.same(kinds(ext), ['future-read']);
  // A read of an append made earlier is fine.
  t.equal(checkListAppend([ok(1, a('x', 1), r('x', [1]))]).valid, true);
});

t.test('nothing committed is unknown, not valid', async (t) => {
  for (const [name, h] of [
    ['empty', []],
    ['only an aborted append', [tx(1, 'fail', [a('x', 1)])]],
    ['only an indeterminate append nobody read', [tx(1, 'info', [a('x', 1)])]],
  ] as Array<[string, ListAppendTxn[]]>) {
    const res = checkListAppend(h);
    t.equal(res.valid, 'unknown', name);
    t.equal(res.reason, 'nothing committed: no transaction is known to have committed', name);
  }
  t.equal(checkListAppend([ok(1, a('x', 1))]).valid, true, 'one committed transaction is checked');
});

t.test('duplicate appends are reported: unknown alone, no inference from that key', async (t) => {
  const res = checkListAppend([ok(1, a('x', 1)), ok(2, a('x', 1)), ok(3, r('x', [1]))]);
  t.equal(res.valid, 'unknown');
  t.same(kinds(res), ['duplicate-appends']);
  t.equal(res.reason, '1 appended value repeat on a key: appended values must be unique per key');
  t.equal(res.anomalies[0]!.detail, "transaction 2 appends 1 to 'x', already appended by transaction 1: appended values must be unique per key, so nothing is inferred from 'x'");
  t.same(res.anomalies[0]!.txns, [1, 2]);
  const same = checkListAppend([ok(1, a('x', 1), a('x', 1))]);
  t.same(kinds(same), ['duplicate-appends']);
  t.match(same.anomalies[0]!.detail, /already appended earlier in the same transaction/);
  // Other keys are still checked, and per-transaction checks still run on the tainted key.
  const other = checkListAppend([ok(1, a('x', 1)), ok(2, a('x', 1)), tx(3, 'fail', [a('y', 5)]), ok(4, r('y', [5]))]);
  t.equal(other.valid, false);
  t.same(kinds(other), ['G1a', 'duplicate-appends']);
  const internal = checkListAppend([ok(1, a('x', 1), r('x', [])), ok(2, a('x', 1))]);
  t.equal(internal.valid, false);
  t.same(kinds(internal), ['duplicate-appends', 'internal']);
});

t.test('G1a is counted per read; a read with duplicates still orders its first occurrences', async (t) => {
  const g1a = checkListAppend([ok(1, r('x', [1]), a('x', 2)), ok(2, r('x', [1, 2])), tx(3, 'fail', [a('x', 1)])]);
  t.equal(g1a.stats.counts.G1a, 2);
  // [1, 2, 1]: 1 was appended before 2, so T1 -ww-> T2 and, with T2 -wr-> T1 on y, a G1c.
  const dup = checkListAppend([ok(1, a('x', 1), r('y', [1])), ok(2, a('x', 2), a('y', 1)), ok(3, r('x', [1, 2, 1]))]);
  t.same(kinds(dup), ['G1c', 'duplicate-elements']);
});

t.test('real-time edges: a stale read is serializable but not strictly serializable', async (t) => {
  // T1 appended and returned before T2 began; T2 still read the empty list.
  const h = [tx(1, 'ok', [a('x', 1)], 0, 1), tx(2, 'ok', [r('x', [])], 2, 3)];
  t.equal(checkListAppend(h).valid, true, 'serializable (T2 before T1)');
  const res = checkListAppend(h, { realtime: true });
  t.equal(res.valid, false);
  t.same(kinds(res), ['G-single-realtime']);
  t.same(cycleOf(t, res, 'G-single-realtime').map((s) => s.edge).sort(), ['rt', 'rw']);
  // Touching intervals are concurrent.
  t.equal(checkListAppend([tx(1, 'ok', [a('x', 1)], 0, 2), tx(2, 'ok', [r('x', [])], 2, 3)], { realtime: true }).valid, true);
});

t.test('valid histories pass, with info and fail transactions', async (t) => {
  const cases: Array<[string, ListAppendTxn[]]> = [
    ['reads of nothing', [ok(1, r('x', [])), ok(2, r('x', null))]],
    ['serial appends and reads', [ok(1, a('x', 1), r('x', [1])), ok(2, r('x', [1]), a('x', 2), a('y', 1)), ok(3, r('x', [1, 2]), r('y', [1]))]],
    ['a read of own appends after an external prefix', [ok(1, a('x', 1)), ok(2, a('x', 2), a('x', 3), r('x', [1, 2, 3]))]],
    ['an info append that happened', [tx(1, 'info', [a('x', 1)]), ok(2, r('x', [1]))]],
    ['an info append that did not happen', [tx(1, 'info', [a('x', 1)]), ok(2, r('x', [])), ok(3, a('x', 2)), ok(4, r('x', [2]))]],
    ['a failed append nobody read', [tx(1, 'fail', [a('x', 1)]), ok(2, a('x', 2)), ok(3, r('x', [2]))]],
    ['an info transaction\'s reads are ignored', [tx(1, 'info', [r('x', [99]), a('x', 1)]), ok(2, r('x', [1]))]],
  ];
  for (const [name, h] of cases) {
    const res = checkListAppend(h, { realtime: false });
    t.equal(res.valid, true, `${name}: ${JSON.stringify(res.anomalies)}`);
  }
  // An info transaction that never returned may take effect after a later transaction began.
  const late = [tx(1, 'info', [a('x', 1)], 0), tx(2, 'ok', [r('x', [])], 5, 6), tx(3, 'ok', [r('x', [1])], 7, 8)];
  t.equal(checkListAppend(late, { realtime: true }).valid, true);
  // … even when its client gave up (ret) before the later transaction began.
  const gaveUp = [tx(1, 'info', [a('x', 1)], 0, 1), tx(2, 'ok', [r('x', [])], 5, 6), tx(3, 'ok', [r('x', [1])], 7, 8)];
  t.equal(checkListAppend(gaveUp, { realtime: true }).valid, true);
});

t.test('bad input is a TypeError or RangeError with an exact message', async (t) => {
  t.throws(() => checkListAppend('x' as never), new TypeError('history must be an array, got x'));
  t.throws(() => checkListAppend([{ id: 1, process: 0, type: 'maybe', mops: [] } as never]), new TypeError("history[0].type must be 'ok', 'fail' or 'info', got maybe"));
  t.throws(() => checkListAppend([ok(1), ok(1)]), new RangeError('history[1].id 1 repeats history[0].id: transaction ids must be unique'));
  t.throws(() => checkListAppend([ok(1, { f: 'w', key: 'x', value: 1 } as never)]), new TypeError("history[0].mops[0].f must be 'r' or 'append', got w"));
  t.throws(() => checkListAppend([ok(1, r('x', ['a'] as never))]), new TypeError('history[0].mops[0].value must be an array of numbers or null, got a'));
  t.throws(() => checkListAppend([ok(1)], { realtime: true }), new TypeError('history[0].call must be a finite number when options.realtime is set, got undefined'));
  t.throws(() => checkListAppend([tx(1, 'ok', [], 5)], { realtime: true }), new TypeError('history[0].ret must be a finite number for an ok transaction when options.realtime is set, got undefined'));
  t.throws(() => checkListAppend([tx(1, 'ok', [], 5, 4)]), new RangeError('history[0].ret must be a finite number >= call, got 4'));
  t.throws(() => checkListAppend([], { maxEdges: 0 }), new RangeError('maxEdges must be a positive integer, got 0'));
});

t.test('past maxEdges the result is unknown, never a verdict', async (t) => {
  const h = [ok(1, a('x', 1)), ok(2, a('x', 2)), ok(3, a('x', 3)), ok(4, r('x', [1, 2, 3]))];
  t.equal(checkListAppend(h).valid, true);
  const res = checkListAppend(h, { maxEdges: 2 });
  t.equal(res.valid, 'unknown');
  t.match(res.reason, /maxEdges = 2/);
  // An anomaly found before the bound is still a verdict.
  t.equal(checkListAppend([...h, ok(5, r('x', [9]))], { maxEdges: 2 }).valid, false);
});

t.test('anomalies are listed up to maxReportsPerKind and all counted', async (t) => {
  const h: ListAppendTxn[] = [];
  for (let i = 0; i < 20; i++) h.push(tx(2 * i, 'fail', [a(`k${i}`, 1)]), ok(2 * i + 1, r(`k${i}`, [1])));
  const res = checkListAppend(h, { maxReportsPerKind: 3 });
  t.equal(res.anomalies.length, 3);
  t.equal(res.stats.counts.G1a, 20);
});

t.test('a tight search bound still gives one cycle per component', async (t) => {
  const h = [ok(1, r('x', []), r('y', []), a('x', 1)), ok(2, r('x', []), r('y', []), a('y', 1)), ok(3, r('x', [1]), r('y', [1]))];
  const res = checkListAppend(h, { maxSearchSteps: 1 });
  t.equal(res.valid, false);
  t.equal(res.stats.searchTruncated, true);
  t.equal(res.anomalies.length, 1);
  t.ok(res.anomalies[0]!.cycle!.length >= 2);
});

// ------------------------------------------------------------- random serial executions

const seed = Number(process.env.PMRPC_SEED ?? 1 + (Date.now() % 1_000_000));
t.comment(`fast-check seed ${seed} (replay: PMRPC_SEED=${seed})`);

const KEYS = ['a', 'b', 'c'];
const mopArb = fc.record({ read: fc.boolean(), key: fc.constantFrom(...KEYS) });
const txnArb = fc.record({ mops: fc.array(mopArb, { minLength: 1, maxLength: 4 }), fate: fc.constantFrom('ok', 'ok', 'ok', 'ok', 'fail', 'info-applied', 'info-lost'), process: fc.integer({ min: 0, max: 3 }) });

/** Runs the transactions one after another on a map of lists; a final transaction reads every key. */
function serial(raw: Array<{ mops: Array<{ read: boolean; key: string }>; fate: string; process: number }>): ListAppendTxn[] {
  const store = new Map<KeyName, number[]>(KEYS.map((k) => [k, []]));
  let next = 1;
  const h: ListAppendTxn[] = raw.map((x, i) => {
    const applied = x.fate === 'ok' || x.fate === 'info-applied';
    const local = new Map([...store].map(([k, v]) => [k, [...v]]));
    const mops: ListAppendMop[] = x.mops.map((m) => {
      if (m.read) return { f: 'r', key: m.key, value: x.fate === 'ok' ? [...local.get(m.key)!] : null };
      const v = next++;
      local.get(m.key)!.push(v);
      return { f: 'append', key: m.key, value: v };
    });
    if (applied) for (const [k, v] of local) store.set(k, v);
    const type: TxnType = x.fate === 'ok' ? 'ok' : x.fate === 'fail' ? 'fail' : 'info';
    return { id: i, process: x.process, type, mops, call: 2 * i, ...(type === 'info' ? {} : { ret: 2 * i + 1 }) };
  });
  h.push({ id: 'final', process: 9, type: 'ok', mops: KEYS.map((k) => ({ f: 'r' as const, key: k, value: [...store.get(k)!] })), call: 2 * raw.length, ret: 2 * raw.length + 1 });
  return h;
}

/**
 * The history with one committed read made stale (its last element dropped), picked among the
 * reads whose last element an ok transaction `w` appended with `ok(w, reader)`; undefined if none.
 */
function staleRead(h: ListAppendTxn[], pick: number, ok: (w: ListAppendTxn, reader: ListAppendTxn) => boolean): ListAppendTxn[] | undefined {
  const writer = new Map<string, ListAppendTxn>();
  for (const x of h) for (const m of x.mops) if (m.f === 'append') writer.set(`${m.key}/${m.value}`, x);
  const cands: Array<[number, number]> = [];
  h.forEach((x, i) =>
    x.mops.forEach((m, j) => {
      if (m.f !== 'r' || x.type !== 'ok' || !m.value?.length) return;
      const w = writer.get(`${m.key}/${m.value[m.value.length - 1]}`)!;
      if (w.type === 'ok' && ok(w, x)) cands.push([i, j]);
    }),
  );
  if (cands.length === 0) return undefined;
  const [i, j] = cands[pick % cands.length]!;
  return h.map((x, k) => (k !== i ? x : { ...x, mops: x.mops.map((m, l) => (l !== j ? m : ({ ...m, value: (m.value as number[]).slice(0, -1) } as ListAppendMop))) }));
}

t.test('serial executions pass; one stale read or one read of an aborted append fails', async (t) => {
  let corrupted = 0;
  fc.assert(
    fc.property(fc.array(txnArb, { minLength: 1, maxLength: 14 }), fc.nat(), (raw, pick) => {
      const h = serial(raw);
      for (const realtime of [false, true]) {
        const res = checkListAppend(h, { realtime });
        if (res.valid !== true) throw new Error(`serial history rejected (realtime ${realtime}): ${JSON.stringify(res.anomalies)}\n${JSON.stringify(h)}`);
      }
      // Stale read: drop the last element of a committed read whose last element a committed
      // transaction that returned earlier appended — with real-time order that is a cycle.
      const bad = staleRead(h, pick, (w, x) => w !== x);
      if (bad) {
        const res = checkListAppend(bad, { realtime: true });
        if (res.valid !== false || !res.anomalies.some((an) => an.cycle || an.kind === 'internal')) throw new Error(`stale read not caught: ${JSON.stringify(res)}\n${JSON.stringify(bad)}`);
        corrupted++;
      }
      // Aborted read: the final read also shows an append of a failed transaction.
      const failed = h.find((x) => x.type === 'fail' && x.mops.some((m) => m.f === 'append'));
      if (failed) {
        const m = failed.mops.find((mm) => mm.f === 'append')!;
        const bad = h.map((x) => (x.id !== 'final' ? x : { ...x, mops: x.mops.map((mm) => (mm.key !== m.key ? mm : ({ ...mm, value: [...(mm.value as number[]), m.value as number] } as ListAppendMop))) }));
        const res = checkListAppend(bad);
        if (res.valid !== false || !res.anomalies.some((an) => an.kind === 'G1a')) throw new Error(`aborted read not caught: ${JSON.stringify(res)}`);
      }
      return true;
    }),
    { seed, numRuns: 300 },
  );
  t.ok(corrupted > 50, `${corrupted} corrupted histories rejected`);
});

t.test('concurrent executions that apply each transaction atomically inside its interval pass with real-time edges', async (t) => {
  const arb = fc.array(fc.record({ txn: txnArb, start: fc.integer({ min: 0, max: 40 }), len: fc.integer({ min: 1, max: 8 }), at: fc.double({ min: 0, max: 1, noNaN: true }) }), { minLength: 1, maxLength: 14 });
  let stale = 0;
  fc.assert(
    fc.property(arb, fc.nat(), (raw, pick) => {
      // Execute in the order of each transaction's instant; record real intervals.
      const order = raw.map((x, i) => ({ ...x, i, point: x.start + x.at * x.len })).sort((p, q) => p.point - q.point);
      const h = serial(order.map((x) => x.txn)).map((x, k) => {
        if (x.id === 'final') return { ...x, call: 1000, ret: 1001 };
        const o = order[k]!;
        return { ...x, id: o.i, call: o.start, ...(x.type === 'info' ? {} : { ret: o.start + o.len }) };
      });
      const res = checkListAppend(h, { realtime: true });
      if (res.valid !== true) throw new Error(`atomic-in-interval history rejected: ${JSON.stringify(res.anomalies)}\n${JSON.stringify(h)}`);
      // A stale read of an append whose ok writer returned before the reader was invoked fails.
      const bad = staleRead(h, pick, (w, x) => w !== x && w.ret! < x.call!);
      if (!bad) return true;
      const r2 = checkListAppend(bad, { realtime: true });
      if (r2.valid !== false) throw new Error(`stale read not caught: ${JSON.stringify(bad)}`);
      stale++;
      return true;
    }),
    { seed, numRuns: 300 },
  );
  t.ok(stale > 30, `${stale} stale reads caught`);
});

t.test('a snapshot-isolation store: only G2 (write skew) is ever reported, and it is found', async (t) => {
  // SI forbids G0, G1 and G-single; its anomalies are cycles with two adjacent rw edges (Fekete et al.).
  const arb = fc.array(fc.record({ txn: txnArb, start: fc.integer({ min: 0, max: 30 }), len: fc.integer({ min: 1, max: 10 }) }), { minLength: 2, maxLength: 12 });
  let g2 = 0;
  fc.assert(
    fc.property(arb, (raw) => {
      const store = new Map<KeyName, number[]>(KEYS.map((k) => [k, []]));
      const lastCommit = new Map<KeyName, number>();
      const snaps = new Map<number, Map<KeyName, number[]>>();
      const events = raw.flatMap((x, i) => [{ time: x.start, i, begin: true }, { time: x.start + x.len, i, begin: false }]).sort((p, q) => p.time - q.time || (p.begin === q.begin ? p.i - q.i : p.begin ? 1 : -1));
      const h: ListAppendTxn[] = [];
      let next = 1;
      for (const e of events) {
        const x = raw[e.i]!;
        if (e.begin) {
          snaps.set(e.i, new Map([...store].map(([k, v]) => [k, [...v]])));
          continue;
        }
        const local = snaps.get(e.i)!;
        const mops: ListAppendMop[] = x.txn.mops.map((m) => {
          if (m.read) return { f: 'r', key: m.key, value: [...local.get(m.key)!] };
          local.get(m.key)!.push(next);
          return { f: 'append', key: m.key, value: next++ };
        });
        const written = [...new Set(mops.filter((m) => m.f === 'append').map((m) => m.key))];
        const conflict = written.some((k) => (lastCommit.get(k) ?? -1) > x.start); // first committer wins
        if (conflict) {
          h.push({ id: e.i, process: e.i, type: 'fail', mops: mops.map((m) => (m.f === 'r' ? { ...m, value: null } : m)) });
          continue;
        }
        for (const m of mops) if (m.f === 'append') store.get(m.key)!.push(m.value);
        for (const k of written) lastCommit.set(k, e.time);
        h.push({ id: e.i, process: e.i, type: 'ok', mops });
      }
      h.push({ id: 'final', process: 99, type: 'ok', mops: KEYS.map((k) => ({ f: 'r' as const, key: k, value: [...store.get(k)!] })) });
      const res = checkListAppend(h);
      const ks = kinds(res);
      if (ks.some((k) => k !== 'G2')) throw new Error(`SI history shows ${ks.join(', ')}: ${JSON.stringify(res.anomalies)}\n${JSON.stringify(h)}`);
      if (ks.includes('G2')) g2++;
      return true;
    }),
    { seed, numRuns: 400 },
  );
  t.ok(g2 > 0, `write skew found in ${g2} of 400 SI histories`);
});

t.test('a read-committed store: never G0 or G1, and read skew / lost updates (G-single) are found', async (t) => {
  // Each read sees the latest committed state (plus the transaction's own appends); appends apply
  // at commit. Every ww and wr edge then follows commit order, so no G0 / G1; reads may skew, a
  // second read may differ from the first (internal), and a read of the transaction's own appends
  // need not be a prefix of the final order (incompatible-order).
  const arb = fc.array(fc.record({ txn: txnArb, start: fc.integer({ min: 0, max: 30 }), gaps: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 5, maxLength: 5 }) }), { minLength: 2, maxLength: 10 });
  let single = 0;
  fc.assert(
    fc.property(arb, (raw) => {
      const store = new Map<KeyName, number[]>(KEYS.map((k) => [k, []]));
      // Every micro-operation at its own instant, the commit after the last.
      const events = raw.flatMap((x, i) => {
        let time = x.start;
        const ev = x.txn.mops.map((_, j) => ({ time: (time += x.gaps[j]! + 0.5), i, j }));
        return [...ev, { time: time + 0.25, i, j: -1 }];
      });
      events.sort((p, q) => p.time - q.time || p.i - q.i || p.j - q.j);
      const mops: ListAppendMop[][] = raw.map(() => []);
      const pending: Array<Array<[string, number]>> = raw.map(() => []);
      let next = 1;
      for (const e of events) {
        if (e.j < 0) {
          for (const [k, v] of pending[e.i]!) store.get(k)!.push(v);
          continue;
        }
        const m = raw[e.i]!.txn.mops[e.j]!;
        if (m.read) mops[e.i]!.push({ f: 'r', key: m.key, value: [...store.get(m.key)!, ...pending[e.i]!.filter(([k]) => k === m.key).map(([, v]) => v)] });
        else {
          pending[e.i]!.push([m.key, next]);
          mops[e.i]!.push({ f: 'append', key: m.key, value: next++ });
        }
      }
      const h: ListAppendTxn[] = raw.map((_, i) => ({ id: i, process: i, type: 'ok', mops: mops[i]! }));
      h.push({ id: 'final', process: 99, type: 'ok', mops: KEYS.map((k) => ({ f: 'r' as const, key: k, value: [...store.get(k)!] })) });
      const res = checkListAppend(h);
      const ks = kinds(res);
      if (ks.some((k) => !['G-single', 'G2', 'internal', 'incompatible-order'].includes(k))) throw new Error(`read-committed history shows ${ks.join(', ')}: ${JSON.stringify(res.anomalies)}\n${JSON.stringify(h)}`);
      if (ks.includes('G-single')) single++;
      return true;
    }),
    { seed, numRuns: 400 },
  );
  t.ok(single > 0, `G-single found in ${single} of 400 read-committed histories`);
});
