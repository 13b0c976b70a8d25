// The explorer's KV workload (src/testing/crash/kv.ts, docs/kv.md "The explorer's workload"): what
// the plain sweep needs it to set up, checked on the index it leaves — round 0's keys claim slots
// 5, 6, 7 of their group 0; in rounds 1 and 2 one slot of group 0 is left (8, then 4), so one key
// claims it and the others go on to their groups 1; the hot key sits at home 0 and the retired
// key's tombstone at slot 2, the first tombstone the index links (the one the media error hits).
import t from 'tap';
import { buildWorld, explore, kvDropShape, kvExplorerApp, mixedSchedule, nicConfigFor, planFor, PLAIN_CRASH_RUNS, resolveExploreOptions, resolveSchedule, runCrashPlan, startWorkload } from '../../../src/testing/crash/index.js';
import { ROUND_HOMES, QUIET_HOMES } from '../../../src/testing/crash/kv.js';
import { classOf, decodeItem, decodeSlot, homeSlot, slotOffset, type KvAppServer } from '../../../src/apps/kv/index.js';

const SEED = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/apps/kv/crash-workload.test.ts)`);
const td = new TextDecoder();

for (const seed of [SEED, SEED + 1]) {
  t.test(`seed ${seed}: rounds race in one group 0, the quiet corner holds the hot key and the retired tombstone`, async (t) => {
    const app = kvExplorerApp({});
    const world = buildWorld(app, nicConfigFor(seed), seed, 'explore', { schedule: resolveSchedule(mixedSchedule(seed)) });
    const wl = startWorkload(app, world, seed);
    const r = await world.run(() => wl.finished, 2_000_000);
    t.equal(r.status, 'done');
    t.equal(wl.error, undefined);
    const server = world.nodes[0]!.server as KvAppServer;
    const g = server.kv.geometry;
    const at = new Map<string, { slot: number; tombstone: boolean }>();
    let firstTombstone = -1;
    for (let i = 0; i < g.slotCount; i++) {
      const s = decodeSlot(world.nodes[0]!.region.load(slotOffset(g, i), 24));
      if (s.ptr === g.base) continue;
      const item = decodeItem(world.nodes[0]!.region.load(s.ptr, classOf(g, s.ptr)!.sizeBytes))!;
      at.set(td.decode(item.key), { slot: i, tombstone: item.tombstone });
      if (item.tombstone && firstTombstone < 0) firstTombstone = i;
    }
    const homeOf = (k: string): number => homeSlot(g, new TextEncoder().encode(k));
    const byHome = (h: number): string[] => [...at.keys()].filter((k) => homeOf(k) === h);
    t.same(ROUND_HOMES, [5, 5, 4]);
    const home5 = byHome(5).map((k) => at.get(k)!.slot).sort((a, b) => a - b);
    t.equal(home5.length, 6, 'six keys of rounds 0 and 1 share home 5');
    t.same(home5.slice(0, 4), [5, 6, 7, 8], 'they fill group 0 [5, 9)');
    t.ok(home5.slice(4).every((x) => x > 9 || x < 4), 'two of them went on to their groups 1');
    const home4 = byHome(4).map((k) => at.get(k)!.slot).sort((a, b) => a - b);
    // (A round-2 PUT may fail — its groups full, or no free buffer of its class — and be retried later or not.)
    t.ok(home4.length >= 2, `keys of round 2 at home 4 placed: ${home4.join(', ')}`);
    t.equal(home4[0], 4, 'one claimed slot 4, the last free one of group 0');
    t.ok(home4.slice(1).every((x) => x > 8), 'the others went on to their groups 1');
    const hot = byHome(QUIET_HOMES.hot);
    t.equal(hot.length, 1);
    t.match(at.get(hot[0]!), { slot: 0, tombstone: false }, 'the hot key at home 0, never deleted');
    t.equal(firstTombstone, QUIET_HOMES.retired, 'the retired key\'s tombstone at slot 2 is the first tombstone the index links');
    world.close();
  });
}

// The drop shape (kvDropShape, seeds ≡ 1 (mod 4)): a dropped client is slow to reconnect and the
// others read, then overwrite, the key the client before them last wrote — so a PUT whose answer a
// drop lost has run while its client is away, another client saw it and wrote over it. A client
// that posts such a PUT again as new (mutant retryUncertainPut) applies it a second time, and the
// plain sweep's crash runs (planFor with drops, as PLAIN_CRASH_RUNS runs them) show it.
t.test('the drop shape: seeds ≡ 1 (mod 4); its crash runs catch retryUncertainPut, the correct client passes them', async (t) => {
  t.same([1, 2, 3, 4, 5, 8, 9].map(kvDropShape), [true, false, false, false, true, false, true]);
  const seed = 1;
  const o = resolveExploreOptions({ seed, schedule: { mode: 'mixed' } });
  const points = (await explore(kvExplorerApp({ damageTombstone: true }), { seed, imagesPerPoint: 1, pointsMax: 1, nested: false, schedule: { mode: 'mixed' } })).crashPointsTotal;
  let caught: string | undefined;
  let uncertain = 0;
  for (let i = 0; i < (PLAIN_CRASH_RUNS.kv ?? 0) && caught === undefined; i++) {
    const plan = planFor(seed, i, points, 1, 3, true);
    const good = kvExplorerApp({ damageTombstone: true });
    const ok = await runCrashPlan(good, o, nicConfigFor(seed), plan);
    t.same(ok.problems, [], `run ${i}, correct: ${ok.events.filter((e) => /dropped/.test(e)).length} drops, no problem`);
    uncertain += good.uncertainInstalls();
    const bad = await runCrashPlan(kvExplorerApp({ mutant: 'retryUncertainPut', damageTombstone: true }), o, nicConfigFor(seed), plan);
    caught = bad.problems.find((p) => p.kind === 'linearizability')?.detail;
  }
  t.ok(uncertain > 0, `${uncertain} PUTs / DELETEs whose answer a drop lost (resolved by the correct client)`);
  t.match(caught, /no linearization/, `mutant retryUncertainPut caught by a crash run of seed ${seed}: ${caught?.slice(0, 200) ?? 'no'}`);
});

// Seed 17, crash run 35 (drops only, both on client 1): the first drop cuts the return batch a
// client sends as it restarts (flushReturns before its connection closes). flushReturns used to
// leave that batch unanswered and return; the restarted client never sent it, and its two buffers
// leaked ("at the end: 2 buffers leaked"). It now reconnects and sends it again.
t.test('a drop during a restart\'s return flush: the batch is sent again, nothing leaks (seed 17, crash run 35)', async (t) => {
  const seed = 17;
  const o = resolveExploreOptions({ seed, schedule: { mode: 'mixed' } });
  const points = (await explore(kvExplorerApp({ damageTombstone: true }), { seed, imagesPerPoint: 1, pointsMax: 1, nested: false, schedule: { mode: 'mixed' } })).crashPointsTotal;
  const plan = planFor(seed, 35, points, 1, 3, true);
  const r = await runCrashPlan(kvExplorerApp({ damageTombstone: true }), o, nicConfigFor(seed), plan);
  t.ok(r.events.filter((e) => /connection dropped/.test(e)).length >= 1, `drops: ${r.events.join('; ')}`);
  t.same(r.problems, [], 'no buffer leaked, no other problem');
});
