// Issue 10, "paths no crash reaches": a buffer return with a stale epoch for a buffer still linked
// from a slot of its key's probe window other than the home slot. The server decides whether a
// returned buffer may go back on a free list in checkReturn (recovery/allocator.ts), called by
// PrismKvServer's return RPC: a batch stamped with an earlier epoch is refused whole. The scenario
// (a script on the explorer) leaves client 0's last batch naming buffer c1, which client 1's PUT
// has since linked again at slot 1 — outside its key's home slot 0 — and the explorer replays that
// batch after recovery of every image. With the check, it is refused ('stale-epoch'); with the
// fault switch acceptStaleEpoch, c1 would go back on a free list while linked (a doubly-used
// buffer): the return desk's free-list invariant (a buffer goes back only when no slot reaches it)
// halts the node first — a violation of kind 'invariant' — or, without it, the audit finds the
// buffer free and reachable.
import t from 'tap';
import { QueuePair, Wr } from '../../../flush/index.js';
import { decodeSlot, homeSlot, RETURN_IMM, slotOffset } from '../../../src/apps/kv/index.js';
import { explore, kvExplorerApp, type KvWorkloadOptions } from '../../../src/testing/crash/index.js';
import { kvSetup, td, te } from './helpers.js';

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
    const v = r.violations.find((x) => (x.kind === 'allocator' && /freeAndReachable/.test(x.detail)) || (x.kind === 'invariant' && /would go back on a free list while a slot reaches it/.test(x.detail)));
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

// Within an epoch the server checks each returned pointer; "reachable" looks at every slot of the
// item's probe window (PrismKvServer #isReachable), not only the home slot. Not a crash path (a
// correct client never returns a linked buffer in its epoch): a misbehaving client's return of a
// buffer linked outside its home slot must be refused too.
t.test('a current-epoch return of a buffer linked outside its home slot is refused as reachable', async (t) => {
  const s = await kvSetup();
  const c = await s.client();
  const g = s.server.geometry;
  const seen = new Map<number, string>();
  let pair: [string, string] | undefined;
  for (let i = 0; pair === undefined; i++) {
    const k = `key${i}`;
    const h = homeSlot(g, te.encode(k));
    const other = seen.get(h);
    if (other !== undefined) pair = [other, k];
    else seen.set(h, k);
  }
  const [k1, k2] = pair;
  await c.put(k1, te.encode('one'));
  await c.put(k2, te.encode('two'));
  const home = homeSlot(g, te.encode(k2));
  const at = s.server.inspect().items.get(Buffer.from(k2).toString('hex'))!.slot;
  t.equal(at, home + 1, 'k2 sits one slot past its home');
  const ptr = decodeSlot(s.region.load(slotOffset(g, at), 24)).ptr;
  const payload = new Uint8Array(24);
  new DataView(payload.buffer).setBigUint64(0, s.server.epoch, true);
  new DataView(payload.buffer).setUint32(8, 1, true);
  new DataView(payload.buffer).setBigUint64(16, BigInt(ptr), true);
  const qp = new QueuePair(s.fabric.connect(s.server.accept()));
  const reply = new Promise<void>((resolve) => qp.onNotify(() => resolve()));
  await qp.postChain([Wr.send(payload, RETURN_IMM)]);
  await reply;
  t.same(s.server.stats.returnsRefused, { reachable: 1 });
  t.same(s.server.auditAllocator(), { leaked: [], doubleFree: [], freeAndReachable: [], foreign: [] });
  t.equal(td.decode((await c.get(k2))!), 'two');
});
