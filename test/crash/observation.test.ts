// Issue 10 item 4: an operation's outcome is in the history from the moment its completion is
// delivered to the client, and every delivery is a crash point. A tiny "cell" app with a buggy
// client shows it: the client posts WRITE(cell) and, right behind it on the same QP, a FLUSH, but
// treats the WRITE's completion as "durable". The bug is visible only between the WRITE's delivery
// and the FLUSH: judged there (the explorer), it is a lost acknowledged write under every drain
// policy; judged late, as the old engines did (continuations ran after the fabric went idle, by
// which time the FLUSH had run), it is never seen.
import t from 'tap';
import { Access, Wr } from '../../flush/index.js';
import { DRAIN_CHOICES, explore, type ExplorerApp, type World } from '../../src/testing/crash/index.js';
import { jsonBytes, parseJsonBytes, type AppHost, type AppServer } from '../../src/apps/app.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/crash/observation.test.ts)`);

function cellApp(): ExplorerApp<{ acked: boolean }> {
  let acked = false;
  const one = new Uint8Array(8).fill(0);
  one[0] = 1;
  return {
    name: 'cell',
    nodes: 1,
    regionBytes: 4096,
    format() {},
    open(host: AppHost): AppServer {
      const pd = host.nic.allocPd();
      const mr = host.nic.registerMr(pd, 0, 64, Access.ALL);
      return {
        app: 'cell',
        recover: () => ({ app: 'cell' }),
        accept: () => ({ qp: host.nic.createQp(pd), welcome: jsonBytes({ rkey: mr.rkey }) }),
        inspect: () => ({ cell: host.region.load(0, 1)[0] }),
        audit: () => [],
        close() {},
      };
    },
    async workload(world: World) {
      const { qp, welcome } = world.connect(0, new Uint8Array(0));
      const rkey = parseJsonBytes(welcome)!.rkey as number;
      const write = qp.postChain([Wr.write({ rkey, addr: 0 }, one)]);
      const flush = qp.postChain([Wr.flush('persistent', rkey, { addr: 0, len: 64 })]);
      await write;
      acked = true; // the bug: "durable" at the WRITE's completion, before the FLUSH behind it
      await flush;
    },
    snapshot: () => ({ acked }),
    checkLive: async () => [],
    async checkRecovered(world: World, snap) {
      const cell = world.nodes[0]!.region.load(0, 1)[0];
      return snap.acked && cell !== 1 ? [{ kind: 'lost', detail: 'the client was told its write is durable; the cell is 0 after recovery' }] : [];
    },
    replayArgs: () => '--app cell',
  };
}

for (const drain of DRAIN_CHOICES) {
  t.test(`drain ${drain}: judged at the delivery, the lost write is caught; judged late (old engines), it is not`, async (t) => {
    const pins = { drain, ddio: true, eviction: 0 } as const; // DDIO on and no unasked write-back: the WRITE is not durable before the FLUSH
    const now = await explore(cellApp(), { seed: SEED, pins, imagesPerPoint: 4 });
    t.ok(now.deliveryPoints >= 2, `${now.deliveryPoints} delivery crash points`);
    t.ok(now.violations.some((v) => v.kind === 'lost'), `caught: ${now.violations[0]?.detail ?? 'nothing'} (${now.violations[0]?.replay ?? ''})`);
    const late = await explore(cellApp(), { seed: SEED, pins, imagesPerPoint: 4, observe: 'late' });
    t.equal(late.deliveryPoints, 0, 'no delivery crash points when observing late');
    t.same(late.violations, [], `late observation misses it over ${late.imagesChecked} images`);
  });
}
