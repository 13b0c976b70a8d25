// The explorer's KV workload (src/testing/crash/kv.ts, docs/kv.md "The explorer's workload"): what
// the plain sweep needs it to set up, checked on the index it leaves — round 0's keys claim slots
// 5, 6, 7 of their group 0; in rounds 1 and 2 one slot of group 0 is left (8, then 4), so one key
// claims it and the others go on to their groups 1; the hot key sits at home 0 and the retired
// key's tombstone at slot 2, the first tombstone the index links (the one the media error hits).
import t from 'tap';
import { buildWorld, kvExplorerApp, mixedSchedule, nicConfigFor, resolveSchedule, startWorkload } from '../../../src/testing/crash/index.js';
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
