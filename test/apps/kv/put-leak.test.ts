// A PUT / DELETE that fails (INDEX_FULL, CONTENDED, lost CASes) must not keep an arena buffer: after
// flushReturns() on every client, the arena items in use are exactly the items the index reaches,
// and every key the index holds was written (a DELETE of an absent key whose free slot a GET cached
// used to install a tombstone there: a slot and an item for a key never written).
import t from 'tap';
import { createPrng, PmrpcError } from '../../../pmem/index.js';
import type { KvLayoutOptions } from '../../../src/apps/kv/index.js';
import { kvSetup, te } from './helpers.js';

const seed = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
const seeds = process.env.PMRPC_SEEDS !== undefined ? Number(process.env.PMRPC_SEEDS) : process.env.PMRPC_SEED !== undefined ? 1 : 12;
t.comment(`seeds ${seed}..${seed + seeds - 1} (replay one: PMRPC_SEED=<seed> npx tap test/apps/kv/put-leak.test.ts)`);

const LAYOUT: Partial<KvLayoutOptions> = { slotCount: 16, probeSlots: 4, keyBytesMax: 16, classes: [{ sizeBytes: 64, count: 64 }, { sizeBytes: 128, count: 64 }], mailboxBuffers: 8 };

t.test('concurrent PUTs / DELETEs of more keys than the index holds: no buffer stays allocated unlinked', async (t) => {
  const codes = new Map<string, number>();
  for (let s = seed; s < seed + seeds; s++) {
    const n = await kvSetup({ layout: LAYOUT, seed: s, fabric: { delivery: 'seeded', seed: s } });
    const prng = createPrng(s * 7919 + 3);
    const clients = await Promise.all([0, 1, 2, 3].map((i) => n.client({ clientId: i + 1, casRetriesMax: s % 3, returnBatch: 4 })));
    const keys = Array.from({ length: 40 }, (_, i) => `k${i}`);
    const errors: string[] = [];
    const written = new Set<string>();
    await Promise.all(
      clients.flatMap((c) => [c, c]).map(async (c) => {
        for (let j = 0; j < 30; j++) {
          const k = keys[prng.int(0, keys.length - 1)]!;
          try {
            const op = prng.int(0, 5);
            if (op === 0) await c.delete(k);
            else if (op === 1) await c.get(k);
            else {
              await c.put(k, te.encode(`${k}-${j}`.padEnd(prng.int(0, 1) === 0 ? 4 : 60, '.')));
              written.add(k);
            }
          } catch (e) {
            if (!(e instanceof PmrpcError)) throw e;
            errors.push(e.code);
            codes.set(e.code, (codes.get(e.code) ?? 0) + 1);
          }
        }
      }),
    );
    for (const c of clients) await c.flushReturns();
    const capacity = n.server.arenaClasses.reduce((a, c) => a + c.count, 0);
    const free = [...n.server.freeLists().values()].reduce((a, l) => a + l.length, 0);
    const held = n.server.inspect();
    const audit = n.server.auditAllocator();
    t.same(held.problems, [], `seed ${s}: the index is sound`);
    t.equal(capacity - free, held.items.size, `seed ${s}: arena items in use (${capacity - free}) == keys the index holds (${held.items.size}); errors ${errors.length}`);
    t.same([audit.leaked, audit.doubleFree, audit.freeAndReachable], [[], [], []], `seed ${s}: allocator audit clean`);
    const strays = [...held.items.keys()].map((h) => Buffer.from(h, 'hex').toString()).filter((k) => !written.has(k));
    t.same(strays, [], `seed ${s}: every key the index holds had a PUT that succeeded (a DELETE of an absent key claims nothing)`);
    t.same(clients.map((c) => c.pendingReturns), [0, 0, 0, 0], `seed ${s}: no return held`);
  }
  t.comment(`errors over all seeds: ${[...codes].map(([c, k]) => `${c} ${k}`).join(', ')}`);
  t.ok((codes.get('PMRPC_ERR_KV_INDEX_FULL') ?? 0) > 0, 'the index filled (INDEX_FULL seen)');
  t.ok((codes.get('PMRPC_ERR_KV_CONTENDED') ?? 0) > 0, 'CAS retries ran out (CONTENDED seen)');
});

t.test('a DELETE of an absent key whose free slot a GET cached claims no slot and no item', async (t) => {
  const n = await kvSetup({ layout: LAYOUT });
  const c = await n.client();
  const free = (): number => [...n.server.freeLists().values()].reduce((a, l) => a + l.length, 0);
  const before = free();
  t.equal(await c.get('never'), undefined, 'absent (its first free slot is now cached)');
  await c.delete('never');
  t.equal(c.stats.lastOpRoundTrips, 1, 'the locating READ only');
  await c.flushReturns();
  t.equal(free(), before, 'no arena item taken');
  t.equal(n.server.inspect().items.size, 0, 'no slot claimed (no tombstone of a key never written)');
  await c.put('never', te.encode('now'));
  t.equal(c.stats.lastOpRoundTrips, 1, 'the PUT still finds the cached free slot: 1 RTT');
  await c.delete('never');
  t.equal(await c.get('never'), undefined);
  await c.flushReturns();
  t.same([...n.server.inspect().items.keys()], [Buffer.from('never').toString('hex')], 'its tombstone');
  t.equal(free(), before - 1, 'one item: the tombstone');
});
