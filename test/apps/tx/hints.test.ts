// Execution reads through location hints and round 2 after the report (docs/tx.md "Execution
// reads", "The commit is reported at the commit point"): a first read learns its neighbours'
// hints, later reads go straight to the item, a stale hint (another client's install) is noticed
// by the slot READ beside it and read again, a hint to a reused item never returns its value; and
// commit() reports before round 2 while the client still reads its own writes.
import t from 'tap';
import { PmemRegion } from '../../../pmem/index.js';
import { nicConfigFor, World } from '../../../src/testing/crash/index.js';
import { parseTxWelcome, TxClient, txApp, type ShardConn, type TxAppServer } from '../../../src/apps/tx/index.js';

const SEED = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/apps/tx/hints.test.ts)`);

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

t.test('the first read of a shard learns its window of hints; later reads are direct; a stale hint is read again', async (t) => {
  const { world, source } = cluster();
  const a = new TxClient(source(0), { client: 0, incarnation: 1, clock: world.clock, faults: {} });
  const b = new TxClient(source(1), { client: 1, incarnation: 1, clock: world.clock, faults: {} });
  await drive(world, async () => {
    await a.begin();
    for (const k of [0, 2, 4, 6]) await a.read(k); // all on shard 0
    a.rollback();
  });
  t.same(a.readChains, { direct: 3, indirect: 1, moved: 0 }, 'one indirect read (the window), then direct reads through the hints it left');
  // b writes key 2: a's hint for it now names the superseded item.
  const ob = await drive(world, async () => {
    await b.begin();
    await b.write(2, te.encode('new'));
    const o = await b.commit();
    await b.settled();
    return o;
  });
  t.equal(ob.status, 'committed');
  const v = await drive(world, async () => {
    await a.begin();
    const x = td.decode(await a.read(2));
    a.rollback();
    return x;
  });
  t.equal(v, 'new', 'the stale hint did not return the superseded value');
  t.same(a.readChains, { direct: 5, indirect: 1, moved: 1 }, 'the direct read saw the slot had moved on and read where it points now');
});

t.test('a hint to an item the shard handed out again never returns that item: the read checks it against the slot', async (t) => {
  const { world, server, source } = cluster(1);
  const a = new TxClient(source(0), { client: 0, incarnation: 1, clock: world.clock, faults: {} });
  const w = new TxClient(source(1), { client: 1, incarnation: 1, clock: world.clock, faults: {} });
  await drive(world, async () => {
    await a.begin();
    await a.read(0); // learns hints for keys 0..7
    a.rollback();
  });
  // Many commits to keys 1..7 (not 0): the old items come back to the free list and are reused.
  for (let i = 0; i < 40; i++) {
    await drive(world, async () => {
      await w.begin();
      const k = 1 + (i % 7);
      await w.write(k, te.encode(`w${i}`));
      await w.commit();
      await w.settled();
    });
  }
  await world.run(() => world.nodes[0]!.cpu.length === 0, 10_000); // the CPU's sweeps
  server(0).sweep(); // a last look once idle (items still in their grace period)
  t.ok(server(0).sweepStats.returned > 7, `superseded items were returned and reused (${server(0).sweepStats.returned} returned)`);
  const got = await drive(world, async () => {
    await a.begin();
    const out: string[] = [];
    for (let k = 1; k < KEYS_PER_SHARD; k++) out.push(td.decode(await a.read(k)));
    a.rollback();
    return out;
  });
  const last = new Map<number, string>();
  for (let i = 0; i < 40; i++) last.set(1 + (i % 7), `w${i}`);
  const want = Array.from({ length: KEYS_PER_SHARD - 1 }, (_, j) => last.get(j + 1));
  t.same(got, want, 'every key read its latest value, not what its stale hint named');
  t.ok(a.readChains.moved >= KEYS_PER_SHARD - 1, `every stale hint was read again (${a.readChains.moved} moved)`);
});

t.test('commit() reports at the commit point; round 2 completes after it; the client reads its own writes', async (t) => {
  const { world, server, source } = cluster();
  const installSource = source(2);
  const c = new TxClient(source(0), { client: 0, incarnation: 1, clock: world.clock, faults: {}, installSource });
  let installedAtReport = true;
  const own = await drive(world, async () => {
    await c.begin();
    await c.write(0, te.encode('x'));
    await c.write(1, te.encode('y'));
    const o = await c.commit();
    installedAtReport = server(0).value(0) !== undefined && td.decode(server(0).value(0)!.value) === 'x';
    t.equal(o.status, 'committed');
    await c.begin();
    const v = td.decode(await c.read(0)); // waits for round 2: read your writes
    c.rollback();
    return v;
  });
  t.notOk(installedAtReport, 'the install was not done when commit() reported (round 2 runs after it)');
  t.equal(own, 'x', 'the client read its own write');
  await drive(world, () => c.settled());
  for (const n of world.nodes) n.nic.drainAll();
  t.same([server(0).slot(0).lock, server(1).slot(0).lock], [0n, 0n], 'round 2 released the locks');
  t.equal(td.decode(server(1).value(0)!.value), 'y', 'key 1 (shard 1, slot 0) installed');
  await t.rejects(Promise.resolve().then(() => new TxClient(source(3), { client: 3, incarnation: 1, clock: world.clock, faults: {}, installSource: 5 as never })), TypeError, 'installSource must be a function');
});
