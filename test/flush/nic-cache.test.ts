// The NIC cache as an array walked from its head (flush/nic.ts NicCache, issue 29): checked against
// the Map keyed by seq it replaced (insertion order, delete while iterating), and the drain of an
// entry whose store's crash point detaches the NIC (a crash in the middle of a DMA drain).
//
// Replay a failure: PMRPC_SEED=<printed seed> npx tap test/flush/nic-cache.test.ts
import t from 'tap';
import fc from 'fast-check';
import assert from 'node:assert/strict';
import { NicCache } from '../../flush/nic.js';
import { u64le } from '../../flush/index.js';
import { setup } from './helpers.js';

const seed = Number(process.env.PMRPC_SEED ?? Date.now() % 2 ** 31);
t.comment(`nic-cache seed ${seed} (replay: PMRPC_SEED=${seed} npx tap test/flush/nic-cache.test.ts)`);

interface Entry {
  seq: number;
  live: boolean;
}

type Op = { kind: 'add' } | { kind: 'remove'; pick: number } | { kind: 'removeFirst' } | { kind: 'walkRemove'; pick: number; every: number } | { kind: 'clear' } | { kind: 'removeDead'; pick: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({ kind: 'add' as const }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'removeFirst' as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('walkRemove' as const), pick: fc.nat(), every: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('removeDead' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'clear' as const }) },
);

t.test('NicCache = a Map keyed by seq: same entries in the same order, same size and oldest, under adds, drains in any order, drains during a walk, clears', async (t) => {
  const runs = Number(process.env.PMRPC_MODEL_RUNS ?? 300);
  fc.assert(
    fc.property(fc.array(opArb, { minLength: 1, maxLength: 3000, size: 'max' }), (ops) => {
      const cache = new NicCache<Entry>();
      const ref = new Map<number, Entry>();
      const dead: Entry[] = [];
      let seq = 0;
      const drop = (e: Entry): void => {
        cache.remove(e);
        ref.delete(e.seq);
        dead.push(e);
      };
      for (const [i, op] of ops.entries()) {
        const live = [...ref.values()];
        switch (op.kind) {
          case 'add': {
            const e = { seq: seq++, live: true };
            cache.add(e);
            ref.set(e.seq, e);
            break;
          }
          case 'remove':
            if (live.length > 0) drop(live[op.pick % live.length]!);
            break;
          case 'removeFirst':
            if (cache.size > 0) drop(cache.first());
            break;
          case 'removeDead':
            // Draining an entry already gone (detach() dropped it meanwhile) changes nothing.
            if (dead.length > 0) cache.remove(dead[op.pick % dead.length]!);
            break;
          case 'walkRemove': {
            // As #drainEntry walks the entries older than c, draining some of them as it goes.
            if (live.length === 0) break;
            const c = live[op.pick % live.length]!;
            const seen: number[] = [];
            const list = cache.list;
            let n = 0;
            for (let k = cache.head; k < list.length; k++) {
              const o = list[k]!;
              if (o.seq >= c.seq) break;
              if (!o.live) continue;
              seen.push(o.seq);
              if (n++ % op.every === 0) drop(o);
            }
            assert.deepEqual(seen, live.filter((e) => e.seq < c.seq).map((e) => e.seq), `op ${i}: the walk saw other entries than the Map's`);
            break;
          }
          case 'clear':
            for (const e of ref.values()) dead.push(e);
            cache.clear();
            ref.clear();
            break;
        }
        assert.equal(cache.size, ref.size, `op ${i} (${op.kind}): size`);
        assert.deepEqual(cache.values().map((e) => e.seq), [...ref.keys()], `op ${i} (${op.kind}): entries or their order differ`);
        if (ref.size > 0) assert.equal(cache.first().seq, ref.keys().next().value, `op ${i}: the oldest entry differs`);
        for (const e of ref.values()) assert.ok(e.live, `op ${i}: an entry in the cache is not live`);
        assert.ok(cache.list.length - cache.head <= 4 * cache.size + 1025, `op ${i}: ${cache.list.length - cache.head} slots kept for ${cache.size} entries`);
      }
    }),
    { seed, numRuns: runs },
  );
  t.pass(`held for ${runs} random programs`);
});

t.test('a crash point of a DMA drain that detaches the NIC: the drain ends, the cache stays consistent', async (t) => {
  // DDIO off: each entry drains with a non-temporal store, whose 'nic-drain' crash point runs first.
  const s = setup({ nic: { ddio: false, drain: 'onFlush' }, fabric: { idleDrain: false } });
  await s.qp.write({ rkey: s.mr.rkey, addr: 0 }, u64le(1));
  await s.qp.write({ rkey: s.mr.rkey, addr: 64 }, u64le(2));
  await s.qp.write({ rkey: s.mr.rkey, addr: 128 }, u64le(3));
  t.equal(s.nic.cacheEntries, 3);
  let detached = 0;
  s.region.setCrashPointHook((e) => {
    if (e.kind === 'nic-drain' && detached++ === 0) s.nic.detach(); // the node crashes here
  });
  s.nic.drainAll();
  t.equal(s.nic.cacheEntries, 0, 'nothing left in the cache');
  t.equal(detached, 1, 'one drain reached its crash point: the others were dropped by the detach');
  t.equal(s.region.loadU64(64), 0n, 'an entry dropped by the detach never reaches host memory');
  s.region.setCrashPointHook(undefined);
  // The cache still works: a new entry goes in, drains, and leaves it empty.
  await s.qp.write({ rkey: s.mr.rkey, addr: 192 }, u64le(4));
  t.equal(s.nic.cacheEntries, 1);
  s.nic.drainAll();
  t.equal(s.nic.cacheEntries, 0);
  t.equal(s.region.loadU64(192), 4n);
});
