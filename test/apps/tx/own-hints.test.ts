// A client's hints of the keys it wrote (docs/tx.md "Branch txhint32"): round 2 learns where
// its install put each new value — also when the next transaction has begun while round 2 runs
// (begin() clears the write set round 2 used to read them from) — and a read through such a hint
// still checks the item against the slot: superseded or reused, it is read again, never returned.
import t from 'tap';
import { PmemRegion } from '../../../pmem/index.js';
import { nicConfigFor, World } from '../../../src/testing/crash/index.js';
import { parseTxWelcome, TxClient, txApp, type ShardConn, type TxAppServer } from '../../../src/apps/tx/index.js';

const SEED = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/apps/tx/own-hints.test.ts)`);

const KEYS_PER_SHARD = 8;

function cluster(shards = 2): { world: World; server: (s: number) => TxAppServer; source: (c: number) => (s: number) => ShardConn | undefined } {
  const world = new World(nicConfigFor(SEED, { eviction: 0, ddio: true }), SEED);
  for (let n = 0; n < shards; n++) {
    const o = txApp.resolveOptions({ shard: n, shards, keysPerShard: KEYS_PER_SHARD, clients: 4, items: 64 });
    const region = PmemRegion.createInMemory(txApp.minRegionBytes(o) + 64, { tracing: false });
    txApp.format(region, o);
    world.addNode(region, (host) => txApp.open(host, o)).server!.recover();
  }
  const source = (c: number) => {
    const conns: ShardConn[] = [];
    return (s: number): ShardConn | undefined => {
      if (conns[s] === undefined || conns[s]!.qp.link.closed === true) {
        const { qp, welcome } = world.connect(s, new Uint8Array(0), c);
        conns[s] = parseTxWelcome(qp, welcome);
      }
      return conns[s];
    };
  };
  return { world, server: (s) => world.nodes[s]!.server as TxAppServer, source };
}

async function drive<T>(world: World, fn: () => Promise<T>): Promise<T> {
  let done = false;
  let out: T | undefined;
  let err: unknown;
  void fn().then(
    (v) => {
      out = v;
      done = true;
    },
    (e: unknown) => {
      err = e;
      done = true;
    },
  );
  const r = await world.run(() => done, 200_000);
  if (r.status !== 'done') throw new Error(`the world ${r.status}`);
  if (err !== undefined) throw err;
  return out as T;
}

const te = new TextEncoder();
const td = new TextDecoder();

t.test('the hint of a key the client wrote names its new item, though the next transaction began before round 2 ended', async (t) => {
  const { world, server, source } = cluster(1);
  const c = new TxClient(source(0), { client: 0, incarnation: 1, clock: world.clock, faults: {}, installSource: source(2) });
  await drive(world, async () => {
    await c.begin();
    await c.read(3); // the window: hints of keys 0..7, key 5's names its initial item
    await c.write(6, te.encode('first'));
    await c.commit();
    await c.settled(); // the H this client left is known: the next begin() reads nothing
  });
  const before = server(0).slot(5).ptr;
  const got = await drive(world, async () => {
    await c.begin();
    await c.write(5, te.encode('mine'));
    const o = await c.commit(); // reported at the commit point: round 2 still runs
    t.equal(o.status, 'committed');
    await c.begin(); // begins while round 2 runs (begin() does not wait for it)
    const v = td.decode(await c.read(5)); // waits for round 2 (read your writes), then reads through the hint
    c.rollback();
    return v;
  });
  t.equal(got, 'mine');
  t.not(server(0).slot(5).ptr, before, 'the install moved key 5 to a new item');
  t.same(c.readChains, { direct: 3, indirect: 1, moved: 0 }, 'key 6’s and key 5’s reads for update and the read of key 5 were direct; the read of key 5 went straight to the new item: its hint was not the superseded one');
});

t.test('a hint of the client’s own install that another client superseded, and whose item was reused, is read again, never returned', async (t) => {
  const { world, server, source } = cluster(1);
  const a = new TxClient(source(0), { client: 0, incarnation: 1, clock: world.clock, faults: {}, installSource: source(2) });
  const w = new TxClient(source(1), { client: 1, incarnation: 1, clock: world.clock, faults: {} });
  await drive(world, async () => {
    await a.begin();
    await a.write(4, te.encode('a'));
    await a.commit();
    await a.settled(); // a's hint of key 4: its own item
  });
  const mine = server(0).slot(4).ptr;
  // w supersedes key 4 again and again: a's item goes back to the free list and is handed out again.
  for (let i = 0; i < 40; i++) {
    await drive(world, async () => {
      await w.begin();
      await w.write(i % 2 === 0 ? 4 : 1 + (i % 7), te.encode(`w${i}`));
      await w.commit();
      await w.settled();
    });
  }
  await world.run(() => world.nodes[0]!.cpu.length === 0, 10_000); // the CPU's sweeps
  server(0).sweep();
  t.ok(server(0).sweepStats.returned > 1, `superseded items were returned (${server(0).sweepStats.returned})`);
  t.not(server(0).slot(4).ptr, mine, 'key 4 no longer points to the item a installed');
  const moved = a.readChains.moved;
  const got = await drive(world, async () => {
    await a.begin();
    const v = td.decode(await a.read(4));
    a.rollback();
    return v;
  });
  t.equal(got, 'w38', 'the read returned key 4’s latest value, not what a’s hint named');
  t.equal(a.readChains.moved, moved + 1, 'the hinted item did not match the slot: read again where the slot points');
});
