// PRISM-TX's FLUSH ranges cover what the protocol relies on (src/apps/tx/client.ts commit): the
// prepare FLUSHes the slots its chain CASed and the record body, not the whole tables. A read-only
// participant's raised W is FLUSHed by nothing else — round 2 there only moves H to COMMITTED, and
// a COMMITTED record no longer makes recovery re-raise W (docs/tx.md R1', R5) — so after a crash
// that keeps only what was FLUSHed, W must still be at least T's timestamp (else a later writer
// with a smaller timestamp commits under T's read: a G-single cycle). The same for the installs.
import t from 'tap';
import { crashImages, materialize, PmemRegion } from '../../../pmem/index.js';
import { nicConfigFor, World } from '../../../src/testing/crash/index.js';
import { parseTxWelcome, TxClient, txApp, type ShardConn, type TxAppServer } from '../../../src/apps/tx/index.js';

const SEED = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/apps/tx/flush-ranges.test.ts)`);

const SHARDS = 2;
const optionsOf = (shard: number) => txApp.resolveOptions({ shard, shards: SHARDS, keysPerShard: 4, clients: 4, items: 32 });

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

t.test('after a commit, a crash keeps the read-only participant\'s raised W and the write participant\'s installs', async (t) => {
  // eviction 0, DDIO on: a line is durable only if some FLUSH wrote it back.
  const world = new World(nicConfigFor(SEED, { eviction: 0, ddio: true }), SEED);
  for (let s = 0; s < SHARDS; s++) {
    const o = optionsOf(s);
    const region = PmemRegion.createInMemory(txApp.minRegionBytes(o) + 64, { tracing: true });
    txApp.format(region, o);
    world.addNode(region, (host) => txApp.open(host, o)).server!.recover();
  }
  const server = (s: number): TxAppServer => world.nodes[s]!.server as TxAppServer;
  const conns: ShardConn[] = [];
  const source = (s: number): ShardConn | undefined => {
    if (conns[s] === undefined) {
      const { qp, welcome } = world.connect(s, new Uint8Array(0), 0);
      conns[s] = parseTxWelcome(qp, welcome);
    }
    return conns[s];
  };
  const c = new TxClient(source, { client: 0, incarnation: 1, clock: world.clock, faults: {} });
  // Keys 4 and 6 on shard 0 (slots 2, 3) written; keys 1 and 7 on shard 1 (slots 0, 3) only read:
  // the prepare's FLUSHes span slots that are not adjacent.
  const out = await drive(world, async () => {
    await c.begin();
    for (const k of [1, 7]) await c.read(k);
    for (const k of [4, 6]) {
      await c.read(k);
      await c.write(k, new TextEncoder().encode(`v${k}`));
    }
    const o = await c.commit();
    await c.settled(); // round 2 runs after commit() reports
    return o;
  });
  t.equal(out.status, 'committed');
  for (const n of world.nodes) n.nic.drainAll();
  const ts = server(0).slot(2).ct; // T's timestamp: the CT its install set (visible)
  t.ok(ts > 0n && server(1).slot(0).w === ts && server(1).slot(3).w === ts, 'visible: shard 1 W raised to ts');
  t.equal(server(1).record(0).h % 4n, 2n, 'shard 1: COMMITTED');
  const durable = (s: number): TxAppServer => {
    const st = world.nodes[s]!.region.crashState();
    const img = materialize(st, [...crashImages(st, { engine: 'none' })][0]!);
    world.crash(s);
    const node = world.restart(s, PmemRegion.openImage(img, {}), (host) => txApp.open(host, optionsOf(s)));
    (node.server as TxAppServer).recover();
    return node.server as TxAppServer;
  };
  const s1 = durable(1);
  for (const slot of [0, 3]) t.ok(s1.slot(slot).w >= ts, `shard 1 slot ${slot}: W ${s1.slot(slot).w} >= ts ${ts} after a crash (media only)`);
  const s0 = durable(0);
  for (const [slot, k] of [[2, 4], [3, 6]] as const) {
    t.equal(s0.slot(slot).ct, ts, `shard 0 slot ${slot}: CT = ts after a crash`);
    t.equal(new TextDecoder().decode(s0.value(slot)!.value), `v${k}`, `shard 0 slot ${slot}: the new value`);
  }
  t.same([...s0.audit(), ...s1.audit()], []);
});
