// Issue 10, "paths no crash reaches": a buffer return with a stale epoch for a buffer still linked
// from a slot of its key's probe window other than the home slot. The server decides whether a
// returned buffer may go back on a free list in checkReturn (recovery/allocator.ts), called by
// PrismKvServer's return RPC: a batch stamped with an earlier epoch is refused whole. The scenario
// (a script on the explorer) leaves client 0's last batch naming buffer c1, which client 1's PUT
// has since linked again at slot 1 — outside its key's home slot 0 — and the explorer replays that
// batch after recovery of every image. With the check, it is refused ('stale-epoch'); with the
// fault switch acceptStaleEpoch, c1 goes back on a free list while linked: a doubly-used buffer.
import t from 'tap';
import { explore, kvExplorerApp, type KvWorkloadOptions } from '../../../src/testing/crash/index.js';

const SEED = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/apps/kv/stale-return.test.ts)`);

// 128-byte items (the crash layout's 4-buffer class c0..c3); keys[0] and keys[2] share home slot 0.
const BIG = 80;
const SCRIPT: KvWorkloadOptions['script'] = [
  { client: 0, kind: 'put', key: 0, valueBytes: BIG }, // K0 -> c0 at slot 0 (its home)
  { client: 0, kind: 'put', key: 2, valueBytes: BIG }, // K2 -> c1 at slot 1 (home 0)
  { client: 0, kind: 'put', key: 2, valueBytes: BIG }, // K2 -> c2; c1 to return
  { client: 0, kind: 'put', key: 2, valueBytes: BIG }, // K2 -> c3; client 0's batch [c1, c2] returns
  { client: 1, kind: 'put', key: 2, valueBytes: BIG }, // K2 -> c1 again, at slot 1
  { client: 1, kind: 'get', key: 2 },
];
const workload = (mutant: KvWorkloadOptions['mutant']): Partial<KvWorkloadOptions> => ({ clients: 2, keys: 4, script: SCRIPT, mutant });
const SEEDS = 4;

t.test('mutant acceptStaleEpoch caught: a stale return puts a buffer linked outside its home slot back on a free list', async (t) => {
  for (let seed = SEED; seed < SEED + SEEDS; seed++) {
    const r = await explore(kvExplorerApp(workload('acceptStaleEpoch')), { seed, imagesPerPoint: 2, violationsMax: 500, nested: false });
    const v = r.violations.find((x) => x.kind === 'allocator' && /freeAndReachable/.test(x.detail));
    if (v !== undefined) {
      t.pass(`seed ${seed}: ${r.violations.length} violations in ${r.imagesChecked} images; e.g. ${v.kind}: ${v.detail} (point ${v.point}, image ${v.image})`);
      return;
    }
    t.comment(`seed ${seed}: ${r.violations.length} violations, none free-and-reachable, in ${r.imagesChecked} images: ${[...new Set(r.violations.map((x) => x.detail))].join("; ")}`);
  }
  t.fail(`no free-and-reachable buffer on seeds ${SEED}..${SEED + SEEDS - 1}`);
});

t.test('with the check: every stale return refused, no violation', async (t) => {
  for (let seed = SEED; seed < SEED + SEEDS; seed++) {
    const app = kvExplorerApp(workload(undefined));
    const r = await explore(app, { seed, imagesPerPoint: 2 });
    t.same(r.violations.map((v) => `${v.phase} ${v.kind}: ${v.detail}`), [], `seed ${seed}: ${r.imagesChecked} images + ${r.nestedImagesChecked} nested`);
    t.ok((app.staleReturnsRefused['stale-epoch'] ?? 0) > 0, `seed ${seed}: stale returns refused ${JSON.stringify(app.staleReturnsRefused)}`);
  }
});
