// The picture of a violation: the timeline page has every lane, label and crash line, escapes
// what it draws; the shortener returns a smaller history the linearizability checker still rejects.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPrng } from '../../pmem/index.js';
import { checkLinearizable, kvModel, type KvInput, type KvOutput, type Operation } from '../../src/check/linearizability.js';
import { kvLabel, kvWellFormed, renderTimelineHtml, shortenHistory, shortestNonLinearizable, timelineOperations, writeTimeline, type TimelineInput } from '../../src/testing/timeline/index.js';

type Op = Operation<KvInput, KvOutput>;
const put = (client: number, key: string, value: string, call: number, ret: number | undefined): Op => ({ client, input: { kind: 'put', key, value }, output: null, call, ret });
const get = (client: number, key: string, output: string | null, call: number, ret: number | undefined): Op => ({ client, input: { kind: 'get', key }, output, call, ret });

const SEED = Number(process.env.PMRPC_SEED ?? 20240610);
t.comment(`seed ${SEED}`);

/** The core violation: a put of v2 acknowledged before a read that returns the older v1. */
const core = (): Op[] => [put(1, 'k1', 'v1', 0, 2), put(2, 'k1', 'v2', 3, 5), get(3, 'k1', 'v1', 6, 8)];

/** The core padded with irrelevant, linearizable operations on other keys and on k1 before it. */
function padded(seed: number): Op[] {
  const prng = createPrng(seed);
  const ops = core();
  for (let i = 0; i < 24; i++) {
    const client = prng.int(0, 3);
    const key = `p${prng.int(0, 2)}`;
    const call = 10 + i * 3 + prng.int(0, 2);
    // Sequential per key and consistent: a put then a get of the same value.
    ops.push(put(client, key, `x${i}`, call, call + 1), get((client + 1) % 4, key, `x${i}`, call + 2, call + 2));
  }
  // Cut operations too (outcome unknown): never needed for the failure.
  ops.push(put(0, 'p9', 'z', 90, undefined), get(-1, 'k1', 'v1', 1, 1.5));
  // Shuffle deterministically so the shortener cannot rely on order.
  for (let i = ops.length - 1; i > 0; i--) {
    const j = prng.int(0, i);
    [ops[i], ops[j]] = [ops[j]!, ops[i]!];
  }
  return ops;
}

const sample = (): TimelineInput => ({
  title: 'kv: durable linearizability violated',
  app: 'kv',
  seed: SEED,
  replay: 'pmrpc crash-test --app kv --seed 20240610 --crash-point 12 --image 3',
  violation: { kind: 'linearizability', detail: "no linearization of the 4 operations on partition 'k1'" },
  operations: [
    { client: 0, call: 0, ret: 4, label: 'put(k1, v1)' },
    { client: 0, call: 5, ret: 9, label: 'put(k1, v2)', highlight: true, node: 1 },
    { client: 1, call: 2, ret: 3, label: 'get(k1) → v1' },
    { client: 1, call: 6, ret: undefined, label: 'put(k2, <b>&"x"</b>)' },
    { client: 2, call: 7, ret: 8, label: 'get(k2) → ∅' },
    { client: -1, call: 12, ret: 13, label: 'get(k1) → v1', highlight: true },
  ],
  crashes: [{ time: 10, label: 'crash #12: node 1' }],
});

t.test('the page has every lane, every label, the crash line and a header', async (t) => {
  const html = renderTimelineHtml(sample());
  t.match(html, /^<!doctype html>/);
  t.notMatch(html, /<script|src="http|href="http/, 'self-contained');
  for (const lane of ['client 0', 'client 1', 'client 2', 'after recovery']) t.ok(html.includes(`>${lane}</text>`), `lane ${lane}`);
  for (const label of ['put(k1, v1)', 'put(k1, v2)', 'get(k1) → v1', 'get(k2) → ∅']) t.ok(html.includes(label), `label ${label}`);
  t.ok(html.includes('crash #12: node 1'), 'crash label');
  t.equal((html.match(/<g class="crash">/g) ?? []).length, 1, 'one crash line');
  t.ok(html.includes('· cut'), 'the cut op is labelled cut');
  t.equal((html.match(/<g class="op hl/g) ?? []).length, 2, 'two highlighted ops');
  t.equal((html.match(/<g class="op[^"]*cut/g) ?? []).length, 1, 'one cut op');
  for (const s of ['pmrpc crash-test --app kv --seed 20240610', 'linearizability', String(SEED), 'kv: durable linearizability violated']) t.ok(html.includes(s), `header has ${s}`);
  t.equal(renderTimelineHtml(sample()), html, 'deterministic');
});

t.test('labels and header text are escaped', async (t) => {
  const input = sample();
  input.title = 'a <script>alert(1)</script> & "q"';
  input.violation = { kind: '<kind>', detail: 'x < y && y > "z"' };
  const html = renderTimelineHtml(input);
  t.notOk(html.includes('<b>'), 'no raw tag from a label');
  t.notOk(html.includes('<script>'), 'no raw tag from the title');
  t.ok(html.includes('put(k2, &lt;b&gt;&amp;&quot;x&quot;&lt;/b&gt;)'), 'label escaped');
  t.ok(html.includes('x &lt; y &amp;&amp; y &gt; &quot;z&quot;'), 'detail escaped');
  t.ok(html.includes('&lt;kind&gt;'), 'kind escaped');
});

t.test('bad operations are refused with exact messages', async (t) => {
  const input = sample();
  t.throws(() => renderTimelineHtml({ ...input, operations: [{ client: 0, call: 5, ret: 4, label: 'x' }] }), new RangeError('operations[0] has call 5 and return 4: need a finite return >= call'));
  t.throws(() => renderTimelineHtml({ ...input, operations: [{ client: 0.5, call: 0, ret: 1, label: 'x' }] }), new TypeError('operations[0].client must be an integer, got 0.5'));
  t.throws(() => renderTimelineHtml({ ...input, crashes: [{ time: Number.NaN, label: 'c' }] }), new RangeError('crashes[0].time must be a finite number, got NaN'));
});

t.test('writeTimeline writes the page', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-timeline-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const p = writeTimeline(join(dir, 'v.html'), sample());
  t.equal(readFileSync(p, 'utf8'), renderTimelineHtml(sample()));
});

t.test('the shortener keeps a smaller history that the checker still rejects', async (t) => {
  const history = padded(SEED);
  t.equal(checkLinearizable(kvModel, history).ok, false, 'the padded history fails');
  const r = shortestNonLinearizable(kvModel, history, { wellFormed: kvWellFormed(history) });
  t.ok(shortestNonLinearizable(kvModel, history).ops.length <= r.ops.length, 'without the rule it may find a different (smaller) failure');
  t.equal(checkLinearizable(kvModel, r.ops).ok, false, 'still fails');
  t.ok(r.ops.length < history.length, `smaller: ${r.ops.length} < ${history.length}`);
  t.equal(r.minimal, true);
  t.same(new Set(r.ops), new Set(core().map((c) => history.find((h) => JSON.stringify(h) === JSON.stringify(c))!)), 'exactly the three core ops');
  // 1-minimal: dropping any one op passes.
  const wf = kvWellFormed(history);
  for (let i = 0; i < r.ops.length; i++) {
    const less = r.ops.filter((_, j) => j !== i);
    t.ok(!wf(less) || checkLinearizable(kvModel, less).ok === true, `without op ${i} it passes or is ill-formed`);
  }
  t.ok(r.attempts < 200, `attempts ${r.attempts}`);
  // And it draws.
  const ops = timelineOperations(r.ops, kvLabel, () => true);
  const html = renderTimelineHtml({ ...sample(), operations: ops, crashes: [] });
  for (const o of r.ops) t.ok(html.includes(kvLabel(o)), kvLabel(o));
});

t.test('the shortener is bounded, keeps order, and refuses a passing history', async (t) => {
  const history = padded(SEED + 1);
  const fails = (ops: Op[]): boolean => checkLinearizable(kvModel, ops).ok === false;
  const r = shortenHistory(history, fails, { maxAttempts: 3 });
  t.equal(r.attempts, 3);
  t.equal(r.minimal, false);
  t.ok(fails(r.ops));
  const idx = r.ops.map((o) => history.indexOf(o));
  t.same(idx, [...idx].sort((a, b) => a - b), 'original order');
  t.throws(() => shortenHistory(core().slice(0, 2), fails), new RangeError('shortenHistory needs a failing history: the predicate holds no failure for the input'));
  t.throws(() => shortenHistory(history, fails, { maxAttempts: 0 }), new RangeError('maxAttempts must be an integer >= 1, got 0'));
  t.equal(shortenHistory(history, fails, { maxAttempts: undefined }).ops.length > 0, true, 'maxAttempts undefined takes the default');
  // A generic predicate: "contains both 3 and 7".
  const nums = Array.from({ length: 40 }, (_, i) => i);
  const g = shortenHistory(nums, (xs) => xs.includes(3) && xs.includes(7));
  t.same(g.ops, [3, 7]);
});

t.test('kvLabel', async (t) => {
  t.equal(kvLabel(put(0, 'k', 'v', 0, 1)), 'put(k, v)');
  t.equal(kvLabel(get(0, 'k', null, 0, 1)), 'get(k) → ∅');
  t.equal(kvLabel(get(0, 'k', 'v', 0, 1)), 'get(k) → v');
  t.equal(kvLabel(get(0, 'k', 'v', 0, undefined)), 'get(k) → ?');
  t.equal(kvLabel({ client: 0, input: { kind: 'delete', key: 'k' }, output: null, call: 0, ret: 1 }), 'delete(k)');
});
