// A resolver reads the participants of T at different moments (their QPs run at different speeds):
// one participant's view can predate T's prepare there (no H, or the H of an earlier transaction of
// the same client slot) while another's already shows COMMITTED(T). The commit point was reached,
// so that view is stale: the resolver reads again and rolls T forward, it does not throw
// PMRPC_ERR_TX_UNRESOLVED ("commit decided but shard 0 holds no record"). Found by the swarm
// (`pmrpc swarm --seeds 1..1 --app tx --no-crashes`, and seeds 56, 69, 110): no crash needed.
import t from 'tap';
import { PmemRegion } from '../../../pmem/index.js';
import { nicConfigFor, swarmRun, World, type StepChoice } from '../../../src/testing/crash/index.js';
import { parseTxWelcome, TxClient, TxResolver, txApp, type ShardConn, type TxAppServer, type TxOutcome } from '../../../src/apps/tx/index.js';

const SEED = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/apps/tx/stale-view.test.ts)`);

const te = new TextEncoder();
const td = new TextDecoder();

/** Two shards on one World; connections labelled by client (the resolver is client 3). */
function twoShards(): { world: World; server: (s: number) => TxAppServer; source: (c: number) => (s: number) => ShardConn | undefined } {
  const world = new World(nicConfigFor(SEED, { eviction: 0, ddio: true }), SEED);
  for (let n = 0; n < 2; n++) {
    const o = txApp.resolveOptions({ shard: n, shards: 2, keysPerShard: 2, clients: 4, items: 32 });
    const region = PmemRegion.createInMemory(txApp.minRegionBytes(o) + 64, { tracing: true });
    txApp.format(region, o);
    world.addNode(region, (host) => txApp.open(host, o)).server!.recover();
  }
  const source = (c: number) => {
    const conns: ShardConn[] = [];
    return (s: number): ShardConn | undefined => {
      if (conns[s] === undefined) {
        const { qp, welcome } = world.connect(s, new Uint8Array(0), c);
        conns[s] = parseTxWelcome(qp, welcome);
      }
      return conns[s];
    };
  };
  return { world, server: (s) => world.nodes[s]!.server as TxAppServer, source };
}

t.test('a resolver whose view of one participant predates T\'s prepare reads again and rolls T forward', async (t) => {
  const { world, server, source } = twoShards();
  const c = new TxClient(source(0), { client: 0, incarnation: 1, clock: world.clock, faults: {} });
  const resolver = new TxResolver(source(3), { clock: world.clock });
  let ready = false;
  void (async () => {
    await c.begin();
    await c.write(0, te.encode('x'));
    await c.write(1, te.encode('x'));
  })().then(() => void (ready = true));
  await world.run(() => ready, 100_000);
  const txid = c.nextTxid;
  // The resolver's QP to shard 0 runs first (its read sees no record of T there); its QP to shard 1
  // waits until the client's commit is over (its read sees COMMITTED(T) there).
  let committed: TxOutcome | undefined;
  const resolverQp = (ch: StepChoice, node: number): boolean => ch.client === 3 && ch.node === node;
  world.chooser = (choices) => {
    const first = choices.findIndex((ch) => resolverQp(ch, 0));
    if (first >= 0) return first;
    const i = choices.findIndex((ch) => committed !== undefined || !resolverQp(ch, 1));
    return i < 0 ? 0 : i;
  };
  let resolution: string | undefined;
  let error: string | undefined;
  void resolver.resolve(txid, 3n).then(
    (r) => void (resolution = r),
    (e: unknown) => void (error = String(e)),
  );
  void c.commit().then((o) => void (committed = o));
  const r = await world.run(() => (resolution !== undefined || error !== undefined) && committed !== undefined, 200_000);
  world.chooser = undefined;
  t.equal(r.status, 'done');
  t.match(committed, { status: 'committed', txid });
  t.equal(error, undefined, 'no PMRPC_ERR_TX_UNRESOLVED from a stale view');
  t.equal(resolution, 'committed', 'the resolver rolled the committed transaction forward (idempotent)');
  for (const n of world.nodes) n.nic.drainAll();
  t.same([td.decode(server(0).value(0)!.value), td.decode(server(1).value(0)!.value)], ['x', 'x']);
});

t.test('the swarm seeds that found it pass (no crashes: only QPs of different speeds; and with crashes)', async (t) => {
  for (const [seed, crashes] of [[1, false], [56, false], [56, true], [69, true], [110, true]] as const) {
    const r = await swarmRun(seed, 'tx', { crashes });
    t.same(r.failures, [], `pmrpc swarm --seeds ${seed}..${seed} --app tx${crashes ? '' : ' --no-crashes'}: ${r.failures.map((f) => f.violation).join('; ')}`);
  }
});
