// Capacity (issue 25): with the default 1,024 index slots, 870 distinct keys (85%) fit whatever
// their names, and each reads back; a PUT of a new key that finds its two buckets full is
// PMRPC_ERR_KV_INDEX_FULL and loses nothing. Deterministic: the keys are the patterns below.
import t from 'tap';
import { KV_LAYOUT_DEFAULTS, KvErrorCodes, computeKvGeometry, keyBuckets, probeOrder, slotRuns, validateLayoutOptions } from '../../../src/apps/kv/index.js';
import { kvSetup, td, te } from './helpers.js';

const LAYOUT = { ...KV_LAYOUT_DEFAULTS, keyBytesMax: 16, classes: [{ sizeBytes: 64, count: 1024 }] };

const PATTERNS: Record<string, (i: number) => string> = {
  'key-<i>': (i) => `key-${i}`,
  'user:<i>': (i) => `user:${i}`,
  'k<i>': (i) => `k${i}`,
};

for (const [name, key] of Object.entries(PATTERNS)) {
  t.test(`870 keys named ${name} fit the default 1,024 slots and read back`, async (t) => {
    const s = await kvSetup({ layout: LAYOUT, regionBytes: 1 << 18 });
    t.equal(s.server.geometry.slotCount, 1024, "today's default slot count");
    const c = await s.client();
    for (let i = 0; i < 870; i++) await c.put(key(i), te.encode(`v${i}`));
    const r = await s.client();
    let wrong = 0;
    for (let i = 0; i < 870; i++) {
      if (td.decode((await r.get(key(i))) ?? new Uint8Array(0)) !== `v${i}`) wrong++;
      if (r.stats.lastOpRoundTrips !== 1) t.fail(`GET of ${key(i)}: ${r.stats.lastOpRoundTrips} round trips`);
    }
    t.equal(wrong, 0, 'every key reads back its value, each GET one round trip');
    t.equal(s.server.inspect().items.size, 870);
    t.same(s.server.inspect().problems, []);
  });
}

t.test('a new key whose two buckets are full: INDEX_FULL, and nothing is lost', async (t) => {
  const s = await kvSetup({ layout: LAYOUT, regionBytes: 1 << 18 });
  const c = await s.client();
  const written: string[] = [];
  let full: string | undefined;
  for (let i = 0; i < 1024 && full === undefined; i++) {
    try {
      await c.put(`x${i}`, te.encode(`v${i}`));
      written.push(`x${i}`);
    } catch (e) {
      t.equal((e as { code?: string }).code, KvErrorCodes.INDEX_FULL);
      full = `x${i}`;
    }
  }
  t.ok(full !== undefined, `the index filled (after ${written.length} keys)`);
  t.ok(written.length >= 870, `${written.length} keys (≥ 85% of 1,024) before the first INDEX_FULL`);
  const g = s.server.geometry;
  t.ok(probeOrder(g, te.encode(full!)).every((i) => s.server.inspect().items.size > 0 && [...s.server.inspect().items.values()].some((v) => v.slot === i)), "every slot of the refused key's two buckets holds another key");
  t.equal(await c.get(full!), undefined, 'the refused key is absent');
  for (const k of written) if (td.decode((await c.get(k)) ?? new Uint8Array(0)) !== `v${k.slice(1)}`) t.fail(`${k} lost`);
  t.equal(s.server.inspect().items.size, written.length, 'nothing lost');
  t.same(s.server.inspect().problems, []);
});

t.test('probe order: two distinct buckets interleaved; runs merge contiguous slots', async (t) => {
  const g = computeKvGeometry(0, validateLayoutOptions({}));
  t.equal(g.scheme, 'buckets');
  t.equal(g.bucketSlots, 16);
  const k = te.encode('some-key');
  const [a, b] = keyBuckets(g, k);
  t.not(a, b);
  const order = probeOrder(g, k);
  t.equal(order.length, 32);
  t.same(order.slice(0, 4), [a * 16, b * 16, a * 16 + 1, b * 16 + 1]);
  t.same(slotRuns([5, 3, 4, 9, 8, 20]), [{ first: 3, n: 3 }, { first: 8, n: 2 }, { first: 20, n: 1 }]);
  t.throws(() => validateLayoutOptions({ probeSlots: 5 }), new RangeError('probeSlots must be even (two buckets of probeSlots / 2 slots), got 5'));
  t.throws(() => validateLayoutOptions({ slotCount: 1000 }), new RangeError('slotCount must be a multiple of probeSlots / 2 (whole buckets of 16 slots), got 1000'));
  t.throws(() => validateLayoutOptions({ probeSlots: 66 }), new RangeError('probeSlots must be an integer in [2, min(64, slotCount)], got 66'));
});
