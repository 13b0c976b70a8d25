// The bank-conservation and FoundationDB-style cycle checkers: a valid and an invalid history of
// each, snapshots that prove nothing (aborted, indeterminate, transfers) skipped, nothing to check
// = unknown, and bad input as exact TypeErrors / RangeErrors.
import t from 'tap';
import { checkBank, checkCycle, initialRing, type BankSnapshot, type CycleSnapshot } from '../../src/check/bank.js';

const accounts = ['a', 'b', 'c'];

t.test('bank: conserved totals pass; transfers and uncommitted reads are skipped', async (t) => {
  const h: BankSnapshot[] = [
    { id: 1, type: 'ok', balances: { a: 10, b: 10, c: 10 } },
    { id: 2, type: 'ok' }, // a transfer: no snapshot
    { id: 3, type: 'ok', balances: { a: 5, b: 15, c: 10 } },
    { id: 4, type: 'info', balances: { a: 99, b: 0, c: 0 } }, // indeterminate: proves nothing
    { id: 5, type: 'fail', balances: null },
  ];
  const res = checkBank(h, { accounts, total: 30, final: { a: 0, b: 20, c: 10 } });
  t.equal(res.valid, true, JSON.stringify(res.anomalies));
  t.same(res.stats, { snapshots: 2, skipped: 3, final: true, counts: {} });
});

t.test('bank: a snapshot with a wrong total, a missing or unknown account, a negative balance', async (t) => {
  const h: BankSnapshot[] = [
    { id: 1, type: 'ok', balances: { a: 10, b: 10, c: 10 } },
    { id: 2, type: 'ok', balances: { a: 5, b: 10, c: 10 } }, // a transfer's debit without its credit
    { id: 3, type: 'ok', balances: { a: 20, b: 10 } },
    { id: 4, type: 'ok', balances: { a: -5, b: 25, c: 10, d: 0 } },
  ];
  const res = checkBank(h, { accounts, total: 30 });
  t.equal(res.valid, false);
  t.same(res.anomalies.map((x) => [x.kind, x.id]), [
    ['wrong-total', 2],
    ['missing-account', 3],
    ['unknown-account', 4],
    ['negative-balance', 4],
  ]);
  t.equal(res.anomalies[0]!.detail, 'snapshot 2 sums to 25, not 30: {a: 5, b: 10, c: 10}');
  t.same(checkBank([h[3]!], { accounts: [...accounts, 'd'], total: 30, negative: true }).valid, true, 'negative balances allowed by option');
  const lost = checkBank([h[0]!], { accounts, total: 30, final: { a: 10, b: 10, c: 0 } });
  t.same(lost.anomalies.map((x) => [x.kind, x.id]), [['wrong-total', 'final']], 'a final state after recovery that lost money');
});

t.test('bank: Maps, numeric account names and bigint balances', async (t) => {
  const ok = checkBank([{ id: 1, type: 'ok', balances: new Map([[0, 50n], [1, 50n]]) }], { accounts: [0, 1], total: 100n, final: new Map([[0, 100n], [1, 0n]]) });
  t.equal(ok.valid, true, JSON.stringify(ok.anomalies));
  const bad = checkBank([{ id: 1, type: 'ok', balances: new Map([[0, 50n], [1, 49n]]) }], { accounts: [0, 1], total: 100n });
  t.same(bad.anomalies, [{ kind: 'wrong-total', id: 1, detail: 'snapshot 1 sums to 99, not 100: {0: 50, 1: 49}' }]);
});

t.test('bank: nothing to check is unknown', async (t) => {
  const res = checkBank([{ id: 1, type: 'info', balances: { a: 30, b: 0, c: 0 } }], { accounts, total: 30 });
  t.equal(res.valid, 'unknown');
  t.equal(res.reason, 'no committed snapshot and no final state to check');
});

t.test('bank: bad input', async (t) => {
  t.throws(() => checkBank([], { accounts: [], total: 1 }), new TypeError('accounts must be a non-empty array of distinct names (strings or numbers), got []'));
  t.throws(() => checkBank([], { accounts: ['1', 1], total: 1 }), new TypeError("accounts must be a non-empty array of distinct names (strings or numbers), got ['1', 1]"));
  t.throws(() => checkBank([], { accounts, total: NaN }), new TypeError('total must be a finite number or a bigint, got NaN'));
  t.throws(() => checkBank([], { accounts, total: 1, final: { a: 'x' } as never }), new TypeError('final must be an object or Map of finite number balances, got {a: x}'));
  t.throws(() => checkBank([], { accounts, total: 1n, final: { a: 1 } }), new TypeError('final must be an object or Map of bigint balances (as total is a bigint), got {a: 1}'));
  t.throws(() => checkBank([{ id: 1, type: 'ok', balances: { a: '1' } as never }], { accounts, total: 1 }), new TypeError('history[0].balances must be an object or Map of finite number balances, or null, got {a: 1}'));
  t.throws(() => checkBank([{ id: 1, type: 'done' as never }], { accounts, total: 1 }), new TypeError("history[0].type must be 'ok', 'fail' or 'info', got done"));
});

// ---------------------------------------------------------------- the cycle workload

const keys = ['k0', 'k1', 'k2', 'k3', 'k4'];

/** FoundationDB's Cycle transaction: a → b → c → d becomes a → c → b → d. */
function swap(ring: Record<string, string>, a: string): Record<string, string> {
  const b = ring[a]!;
  const c = ring[b]!;
  const d = ring[c]!;
  return { ...ring, [a]: c, [c]: b, [b]: d };
}

t.test('cycle: the initial ring and rings after swaps pass', async (t) => {
  const h: CycleSnapshot[] = [{ id: 0, type: 'ok', values: initialRing(keys) }];
  let ring = initialRing(keys);
  for (let i = 1; i <= 20; i++) {
    ring = swap(ring, keys[(i * 3) % keys.length]!);
    h.push({ id: i, type: 'ok', values: ring }, { id: `swap${i}`, type: 'ok' });
  }
  h.push({ id: 'torn', type: 'info', values: { ...ring, k0: 'k0' } }); // indeterminate: skipped
  const res = checkCycle(h, { keys, final: ring });
  t.equal(res.valid, true, JSON.stringify(res.anomalies));
  t.equal(res.stats.snapshots, 21);
  t.same(initialRing(['x', 'y']), { x: 'y', y: 'x' });
});

t.test('cycle: a half-applied swap splits the ring; missing and dangling keys', async (t) => {
  const ring = initialRing(keys);
  // Only a → c written: k0 → k2 → k3 → k4 → k0, and k1 → k2 hangs off the ring.
  const torn = { ...ring, k0: 'k2' };
  // a → c and c → b written, b → d not: k0 → k2 → k1 → k2 …, a loop that never returns to k0.
  const loop = { ...ring, k0: 'k2', k2: 'k1' };
  const h: CycleSnapshot[] = [
    { id: 1, type: 'ok', values: torn },
    { id: 2, type: 'ok', values: loop },
    { id: 3, type: 'ok', values: { k0: 'k1', k1: 'k2', k2: 'k3', k3: 'k4' } },
    { id: 4, type: 'ok', values: { ...ring, k4: 'k9' } },
  ];
  const res = checkCycle(h, { keys });
  t.equal(res.valid, false);
  t.same(res.anomalies.map((x) => [x.kind, x.id]), [
    ['not-one-cycle', 1],
    ['not-one-cycle', 2],
    ['missing-key', 3],
    ['dangling-pointer', 4],
  ]);
  t.equal(res.anomalies[0]!.detail, "snapshot 1 is not one ring: the cycle from 'k0' has 4 of 5 keys");
  t.equal(res.anomalies[1]!.detail, "snapshot 2 is not one ring: from 'k0' the pointers fall into a loop at 'k2' that does not return");
  t.equal(checkCycle([], { keys, final: torn }).valid, false, 'a final state is checked too');
  t.equal(checkCycle([], { keys }).valid, 'unknown');
  t.throws(() => checkCycle([{ id: 1, type: 'ok', values: { k0: null } as never }], { keys }), new TypeError('history[0].values must be an object or Map of key names, or null, got {k0: null}'));
  // Numeric keys in a Map.
  t.equal(checkCycle([{ id: 1, type: 'ok', values: new Map([[0, 2], [2, 1], [1, 0]]) }], { keys: [0, 1, 2] }).valid, true);
  t.equal(checkCycle([{ id: 1, type: 'ok', values: new Map([[0, 1], [1, 0], [2, 2]]) }], { keys: [0, 1, 2] }).valid, false);
});
