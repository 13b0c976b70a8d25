// PRISM-KV on the crash explorer (DESIGN §8): every crash point of a concurrent workload, seeded
// images, recovery, a second crash during recovery; checks of the index, the allocator, lost
// acknowledged writes and durable linearizability (undecided counts as a violation).
import t from 'tap';
import { configName, explore, kvExplorerApp, nicConfigFor, resolveKvWorkload } from '../../../src/testing/crash/index.js';

const seed = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${seed} (replay: PMRPC_SEED=${seed} npx tap test/apps/kv/crash.test.ts)`);

// Seed 2 draws eager drain + DDIO + idle drain, under which the explorer found a read that returned
// an in-flight PUT's value that the crash then took back, before the GET chain FLUSHed what it read.
for (const s of [seed, seed + 1]) {
  t.test(`the real protocol, seed ${s} (${configName(nicConfigFor(s))}): zero violations`, async (t) => {
    const app = kvExplorerApp({ opsPerClient: 12 });
    const r = await explore(app, { seed: s, imagesPerPoint: 2 });
    t.comment(`seed ${s}: ${r.crashPoints} crash points (${r.deliveryPoints} deliveries), ${r.imagesChecked} images, ${r.nestedImagesChecked} nested; first: ${r.violations[0]?.kind}: ${r.violations[0]?.detail} ${r.violations[0]?.replay ?? ''}`);
    t.ok(r.imagesChecked > 100 && r.nestedImagesChecked > 0);
    t.same(r.violations, [], 'no violation');
    t.equal(app.undecided, 0);
  });
}

t.test('the Pilaf-style baseline on the same explorer: zero violations', async (t) => {
  const r = await explore(kvExplorerApp({ system: 'pilaf', opsPerClient: 8 }), { seed, imagesPerPoint: 2 });
  t.same(r.violations, []);
  t.ok(r.imagesChecked > 0);
});

t.test('options are validated', async (t) => {
  t.throws(() => resolveKvWorkload({ mutant: 'nope' as never }), TypeError);
  t.throws(() => resolveKvWorkload({ clients: 9 }), new RangeError('clients must be an integer in [1, 6], got 9'));
});
