// PRISM-KV's index capacity (issue 25 item 4): a key's probe sequence is groups of 4 contiguous
// slots at hashed positions (layout version 2), so the index fills to ≥ 85% whatever the key names;
// a version-1 area (one contiguous window) still opens and works.
import t from 'tap';
import { PmemRegion } from '../../../pmem/index.js';
import { InProcessFabric, QueuePair, Rnic } from '../../../flush/index.js';
import {
  KV_LAYOUT_DEFAULTS,
  KvErrorCodes,
  PrismKvClient,
  PrismKvServer,
  computeKvGeometry,
  decodeKvHeader,
  encodeKvHeader,
  homeSlot,
  probeSequence,
  probeStages,
  slotRuns,
  validateLayoutOptions,
  type KvGeometry,
  type KvLayoutOptions,
} from '../../../src/apps/kv/index.js';
import { te, td } from './helpers.js';

const PATTERNS: Record<string, (i: number) => string> = {
  'key-<i>': (i) => `key-${i}`,
  'user:<i>': (i) => `user:${i}`,
  'k<i>': (i) => `k${i}`,
  'key:<i>': (i) => `key:${i}`,
  'x<i>': (i) => `x${i}`,
};

/** Keys placed as clients place them (the first free slot of each key's sequence, slots never given back) until one does not fit. */
function fill(g: KvGeometry, name: (i: number) => string): { fitted: number; positions: number[] } {
  const used = new Uint8Array(g.slotCount);
  const positions: number[] = [];
  for (let i = 0; ; i++) {
    const seq = probeSequence(g, te.encode(name(i)));
    const p = seq.findIndex((s) => used[s] === 0);
    if (p < 0) return { fitted: i, positions };
    used[seq[p]!] = 1;
    positions.push(p);
  }
}

const pct = (q: number, xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;

t.test('the probe sequence: group 0 is the home window, later groups hashed, no slot twice, stages and FLUSH runs', async (t) => {
  const g = computeKvGeometry(0, validateLayoutOptions({}));
  t.same([g.probeSlots, g.groupSlots, g.layoutVersion], [96, 4, 2], 'default: 24 groups of 4');
  const k = te.encode('user:1');
  const seq = probeSequence(g, k);
  const h = homeSlot(g, k);
  t.same(seq.slice(0, 4), [h, h + 1, h + 2, h + 3], 'group 0 = [home, home + 4)');
  t.equal(new Set(seq).size, seq.length, 'no slot twice');
  t.ok(seq.length > 80 && seq.length <= 96, `${seq.length} distinct slots`);
  t.ok(seq.every((s) => s >= 0 && s < g.slotCount));
  t.same(probeSequence(g, k), seq, 'deterministic');
  t.same(probeStages(96, 4), [[0, 1], [1, 8], [8, 24], [24, 40], [40, 56], [56, 72], [72, 88], [88, 96]], 'GET: home, rest of group 0 + group 1, then 16 at a time');
  t.same(probeStages(96, 4, 4), [[0, 4], [4, 20], [20, 36], [36, 52], [52, 68], [68, 84], [84, 96]], 'locate: group 0, then 16 at a time');
  t.same(probeStages(4, 4), [[0, 1], [1, 4]], 'one 4-slot group: home, then the rest of the window (as the version-1 window)');
  t.same(slotRuns([9, 3, 4, 5, 10, 20]), [{ first: 3, count: 3 }, { first: 9, count: 2 }, { first: 20, count: 1 }]);
  // A tiny index: groups overlap, the sequence is every slot at most once.
  const tiny = computeKvGeometry(0, validateLayoutOptions({ slotCount: 6, probeSlots: 96 }));
  const ts = probeSequence(tiny, k);
  t.ok(ts.length <= 6 && new Set(ts).size === ts.length && ts.every((s) => s < 6), `slotCount 6: ${ts.join(',')}`);
  const one = computeKvGeometry(0, validateLayoutOptions({ slotCount: 2, probeSlots: 96 }));
  t.equal(one.groupSlots, 2, 'groupSlots is at most slotCount');
});

t.test('fill to the first INDEX_FULL at 256, 1,024 and 16,384 slots: ≥ 85% under every key pattern (default probeSlots 96)', async (t) => {
  for (const slotCount of [256, 1024, 16384]) {
    const g = computeKvGeometry(0, validateLayoutOptions({ slotCount }));
    const line: string[] = [];
    const at85: number[] = [];
    for (const [p, name] of Object.entries(PATTERNS)) {
      const r = fill(g, name);
      line.push(`${p} ${((100 * r.fitted) / slotCount).toFixed(1)}%`);
      t.ok(r.fitted >= 0.85 * slotCount, `${slotCount} slots, ${p}: ${r.fitted} keys fit`);
      at85.push(...r.positions.slice(0, Math.floor(0.85 * slotCount)));
    }
    t.comment(`${slotCount} slots: ${line.join(', ')}; position in the sequence at 85% full: p50 ${pct(0.5, at85)}, p90 ${pct(0.9, at85)}, p99 ${pct(0.99, at85)}, max ${Math.max(...at85)}`);
  }
  // The version-1 window for comparison (what issue 25 measured): 14–34%.
  const w = computeKvGeometry(0, validateLayoutOptions({ probeSlots: 4 }));
  for (const [p, name] of Object.entries(PATTERNS)) t.ok(fill(w, name).fitted < 0.4 * 1024, `one 4-slot window, ${p}: ${fill(w, name).fitted} keys`);
});

async function node(layout: Partial<KvLayoutOptions>, v1 = false): Promise<{ server: PrismKvServer; client: () => Promise<PrismKvClient>; region: PmemRegion; nic: Rnic }> {
  const o = validateLayoutOptions(layout);
  const region = PmemRegion.createInMemory(Math.ceil(computeKvGeometry(0, o).totalBytes / 4096) * 4096);
  PrismKvServer.format(region, o);
  if (v1) {
    // What the version-1 code wrote: the same area, a header of version 1 (no group field).
    region.store(0, encodeKvHeader(computeKvGeometry(0, o, true)));
    region.persist(0, 128);
  }
  const nic = new Rnic(region, { drain: 'eager' });
  const fabric = new InProcessFabric(nic);
  const server = PrismKvServer.open(region, nic);
  return { server, region, nic, client: async () => PrismKvClient.connect(new QueuePair(fabric.connect(server.accept())), server.address) };
}

for (const pattern of ['key-<i>', 'user:<i>', 'k<i>']) {
  t.test(`default layout (1,024 slots): 870 keys ${pattern} PUT with no INDEX_FULL, each read back, also by a fresh (uncached) client`, async (t) => {
    const n = await node({});
    t.equal(n.server.geometry.slotCount, KV_LAYOUT_DEFAULTS.slotCount);
    const c = await n.client();
    const name = PATTERNS[pattern]!;
    for (let i = 0; i < 870; i++) await c.put(name(i), te.encode(`v${i}`));
    for (let i = 0; i < 870; i++) t.equal(td.decode((await c.get(name(i)))!), `v${i}`, `key ${i} reads back`, { diagnostic: false });
    t.equal(c.stats.lastOpRoundTrips, 1, 'a cached GET: 1 round trip wherever the key sits');
    const fresh = await n.client();
    let rtts = 0;
    let most = 0;
    for (let i = 0; i < 870; i++) {
      if (td.decode((await fresh.get(name(i)))!) !== `v${i}`) t.fail(`fresh client: ${name(i)}`);
      rtts += fresh.stats.lastOpRoundTrips;
      most = Math.max(most, fresh.stats.lastOpRoundTrips);
    }
    t.comment(`${pattern}: uncached GETs ${(rtts / 870).toFixed(2)} round trips on average, at most ${most}`);
    for (let i = 0; i < 870; i++) await fresh.get(name(i));
    t.equal(fresh.stats.lastOpRoundTrips, 1, 'then cached: 1 round trip');
    t.same(n.server.inspect().problems, [], 'every item in its key\'s probe sequence');
    t.equal(n.server.inspect().items.size, 870);
    // Recovery walks every key's whole sequence: nothing rejected after a restart.
    const again = PrismKvServer.open(n.region, n.nic);
    t.same([again.lastRecovery!.pointersRejected, again.lastRecovery!.reachable], [[], 870]);
    t.equal(c.stats.casRetries, 0);
  });
}

t.test('INDEX_FULL once every slot of a key\'s sequence is taken; DELETE of an absent key in a full sequence is a no-op', async (t) => {
  const n = await node({ slotCount: 8, probeSlots: 8, classes: [{ sizeBytes: 64, count: 16 }], keyBytesMax: 16, mailboxBuffers: 4 });
  const c = await n.client();
  let i = 0;
  let err: unknown;
  for (; i < 16 && err === undefined; i++) await c.put(`f${i}`, te.encode('x')).catch((e: unknown) => (err = e));
  t.match(err, { code: KvErrorCodes.INDEX_FULL });
  t.ok(i - 1 >= 6, `${i - 1} keys in 8 slots before INDEX_FULL`);
  await c.delete('never-there');
  t.same(n.server.inspect().problems, []);
});

t.test('a version-1 area (one contiguous window of probeSlots) keeps its window and works', async (t) => {
  const layout: Partial<KvLayoutOptions> = { slotCount: 32, probeSlots: 8, keyBytesMax: 16, classes: [{ sizeBytes: 64, count: 32 }], mailboxBuffers: 4 };
  const n = await node(layout, true);
  const g = n.server.geometry;
  t.same([g.layoutVersion, g.probeSlots, g.groupSlots], [1, 8, 8], 'decoded as version 1: one 8-slot window');
  const k = te.encode('a');
  const h = (() => {
    let x = 0x811c9dc5;
    for (const b of k) x = Math.imul(x ^ b, 0x01000193) >>> 0;
    return x % (32 - 8 + 1);
  })();
  t.same(probeSequence(g, k), [0, 1, 2, 3, 4, 5, 6, 7].map((j) => h + j), 'the window [fnv1a32 mod (slotCount − probeSlots + 1), + probeSlots)');
  // Keys of one home fill exactly its window, then INDEX_FULL.
  const same: string[] = [];
  for (let i = 0; same.length < 9; i++) if (homeSlot(g, te.encode(`w${i}`)) === h) same.push(`w${i}`);
  const c = await n.client();
  for (const w of same.slice(0, 8)) await c.put(w, te.encode(w));
  await t.rejects(c.put(same[8]!, te.encode('x')), { code: KvErrorCodes.INDEX_FULL });
  const items = n.server.inspect().items;
  t.same([...items.values()].map((x) => x.slot).sort((a, b) => a - b), [0, 1, 2, 3, 4, 5, 6, 7].map((j) => h + j));
  const fresh = await n.client();
  for (const w of same.slice(0, 8)) t.equal(td.decode((await fresh.get(w))!), w);
  t.equal(fresh.stats.lastOpRoundTrips, 2, 'uncached, past the home slot: home, then the rest of the window');
  // The header stays version 1 across a restart (recovery validates against the window).
  const again = PrismKvServer.open(n.region, n.nic);
  t.same(again.lastRecovery!.pointersRejected, []);
  t.equal(decodeKvHeader(n.region.load(0, 128), 0).layoutVersion, 1);
  t.same(again.inspect().problems, []);
});

t.test('headers: version 2 records the group width; a bad version or group field is NOT_FORMATTED', async (t) => {
  const o = validateLayoutOptions({ slotCount: 64 });
  const g = computeKvGeometry(0, o);
  const h = encodeKvHeader(g);
  t.equal(new DataView(h.buffer).getUint32(8, true), 2);
  t.equal(new DataView(h.buffer).getUint32(96, true), 4);
  t.same(decodeKvHeader(h, 0).groupSlots, 4);
  const bad = encodeKvHeader({ ...g, groupSlots: 3 });
  t.throws(() => decodeKvHeader(bad, 0), { code: KvErrorCodes.NOT_FORMATTED });
  const v3 = encodeKvHeader({ ...g, layoutVersion: 3 });
  t.throws(() => decodeKvHeader(v3, 0), { code: KvErrorCodes.NOT_FORMATTED, message: /version 3 is not supported/ });
  // A version-1 header with a window longer than version 1 allowed.
  const v1wide = encodeKvHeader(computeKvGeometry(0, validateLayoutOptions({ slotCount: 64, probeSlots: 32 }), true));
  t.throws(() => decodeKvHeader(v1wide, 0), { code: KvErrorCodes.NOT_FORMATTED, message: /version-1 .* 32-slot window/ });
});
