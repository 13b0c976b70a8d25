// A restarted client reuses its record slot as a new incarnation (txids never repeat). Before its
// first prepare it must resolve any PREPARED record an earlier incarnation left in the slot: its
// prepare's H CAS replaces the slot's H, and a later txid in the slot tells every resolver (row D1)
// that the earlier transaction is final. Scenario: incarnation 1 reaches T1's commit point, round
// 2 lands on shard 0 only (its link to shard 1 drops), commit() returns 'committed', and the client
// dies before settling. Incarnation 2 then commits T2 on both shards; the agent resolves what is
// left. With the fault switch `reuseSlotUnsettled` T2 prepares over PREPARED(T1) on shard 1, the
// agent finds a later txid there (D1) and only releases T1's lock: T1's append to key 1 is lost
// (atomicity) — and the Elle-style check sees T2 read key 1 without T1's element.
import t from 'tap';
import { PmemRegion } from '../../../pmem/index.js';
import { checkAppendHistory, checkAppendSerializable, nicConfigFor, World, type TxRecord } from '../../../src/testing/crash/index.js';
import { parseTxWelcome, TxAgent, TxClient, txApp, txName, type ShardConn, type TxAppServer } from '../../../src/apps/tx/index.js';

const SEED = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
const SEEDS = process.env.PMRPC_SEED !== undefined ? [SEED] : [1, 2, 3, 4, 5];
t.comment(`seeds ${SEEDS.join(', ')} (replay one: PMRPC_SEED=N npx tap test/apps/tx/slot-reuse.test.ts)`);

const listBytes = (l: readonly number[]): Uint8Array => {
  const b = new Uint8Array(l.length * 4);
  l.forEach((x, i) => new DataView(b.buffer).setUint32(i * 4, x, true));
  return b;
};
const bytesList = (b: Uint8Array): number[] => Array.from({ length: b.length >> 2 }, (_, i) => new DataView(b.buffer, b.byteOffset, b.byteLength).getUint32(i * 4, true));

/** Runs `fn` on the world's scheduler to its end. */
async function drive<T>(world: World, fn: () => Promise<T>): Promise<T> {
  let done = false;
  let out: T | undefined;
  let err: unknown;
  void fn().then(
    (v) => void ((out = v), (done = true)),
    (e: unknown) => void ((err = e), (done = true)),
  );
  const r = await world.run(() => done, 400_000);
  if (r.status !== 'done') throw new Error(`the world ${r.status}`);
  if (err !== undefined) throw err;
  return out as T;
}

interface Run {
  problems: string[];
  t1: string;
  finals: Map<number, number[]>;
}

async function scenario(seed: number, reuseSlotUnsettled: boolean): Promise<Run> {
  const faults = { reuseSlotUnsettled };
  const world = new World(nicConfigFor(seed, { eviction: 0, ddio: true }), seed);
  for (let n = 0; n < 2; n++) {
    const o = txApp.resolveOptions({ shard: n, shards: 2, keysPerShard: 2, clients: 4, items: 32, value: 'list' });
    const region = PmemRegion.createInMemory(txApp.minRegionBytes(o) + 64, { tracing: true });
    txApp.format(region, o);
    world.addNode(region, (host) => txApp.open(host, o)).server!.recover();
  }
  const connsOf: ShardConn[][] = [];
  /** Connections labelled `label` (one World client per incarnation / agent). */
  const source = (label: number) => {
    const conns: ShardConn[] = (connsOf[label] = []);
    return (s: number): ShardConn | undefined => {
      if (conns[s] === undefined || conns[s]!.qp.link.closed === true) {
        const { qp, welcome } = world.connect(s, new Uint8Array(0), label);
        conns[s] = parseTxWelcome(qp, welcome);
      }
      return conns[s];
    };
  };
  const history: TxRecord[] = [];
  let time = 0;
  /** One list-append transaction of client slot 0: appends `id` to `keys` after reading them. */
  const append = async (c: TxClient, id: number, keys: number[]): Promise<TxRecord> => {
    const rec: TxRecord = { id, process: 0, type: 'info', mops: [], kind: 'append', call: ++time, ret: undefined, txid: txName(c.nextTxid) };
    history.push(rec);
    await c.begin();
    for (const k of keys) {
      const l = bytesList(await c.read(k));
      rec.mops.push({ f: 'r', key: k, value: l });
      rec.mops.push({ f: 'append', key: k, value: id });
      await c.write(k, listBytes([...l, id]));
    }
    const o = await c.commit();
    rec.type = o.status === 'committed' ? 'ok' : o.status === 'aborted' ? 'fail' : 'info';
    rec.ret = ++time;
    return rec;
  };

  // Incarnation 1: T1 appends to key 0 (shard 0) and key 1 (shard 1). At the commit point its link
  // to shard 1 drops, so round 2 lands on shard 0 only; commit() still reports committed (the
  // commit point was reached) and the client dies before its next begin() would settle T1.
  const src1 = source(0);
  const c1 = new TxClient(src1, {
    client: 0,
    incarnation: 1,
    clock: world.clock,
    faults,
    afterPrepare: () => {
      connsOf[0]![1]!.qp.link.close();
      return Promise.resolve();
    },
  });
  const r1 = await drive(world, () => append(c1, 1, [0, 1]));
  for (const n of world.nodes) n.nic.drainAll();
  // What the dead incarnation left: shard 0 COMMITTED(T1) and installed, shard 1 PREPARED(T1), key 1 locked.
  const lockedOn1 = (world.nodes[1]!.server as TxAppServer).inspect().locked as string[];
  // Incarnation 2 of slot 0: T2 appends to key 2 (shard 0) and key 3 (shard 1): it touches none of T1's keys.
  const c2 = new TxClient(source(1), { client: 0, incarnation: 2, clock: world.clock, faults });
  const r2 = await drive(world, () => append(c2, 2, [2, 3]));
  // The agent (any shard's) resolves what is still in doubt.
  const agent = new TxAgent(source(2), { clock: world.clock, faults });
  const left = await drive(world, () => agent.resolveAll());
  for (const n of world.nodes) n.nic.drainAll();
  const finals = new Map<number, number[]>();
  for (let k = 0; k < 4; k++) finals.set(k, bytesList((world.nodes[k % 2]!.server as TxAppServer).value(Math.floor(k / 2))!.value));
  const problems = [
    ...(r1.type === 'ok' ? [] : [`setup: T1 ended ${r1.type}, not committed`]),
    ...(lockedOn1.length === 1 && lockedOn1[0]!.startsWith('key 1:') ? [] : [`setup: shard 1 locks ${JSON.stringify(lockedOn1)}, not key 1 (T1 held there)`]),
    ...(r2.type === 'ok' ? [] : [`T2 ended ${r2.type}`]),
    ...left.left.map((x) => `left in doubt: ${txName(x)}`),
    ...checkAppendHistory(history, finals).map((p) => `${p.kind}: ${p.detail}`),
    ...checkAppendSerializable(history, finals).map((p) => `${p.kind}: ${p.detail}`),
  ];
  world.close();
  return { problems, t1: r1.txid ?? '?', finals };
}

t.test('a reused client slot resolves its earlier incarnation first: checkers pass', async (t) => {
  for (const seed of SEEDS) {
    const r = await scenario(seed, false);
    t.same(r.problems, [], `seed ${seed}: finals ${JSON.stringify([...r.finals])}`);
    t.same([...r.finals], [[0, [1]], [1, [1]], [2, [2]], [3, [2]]], `seed ${seed}: T1 on keys 0, 1; T2 on keys 2, 3`);
  }
});

t.test('fault switch reuseSlotUnsettled (prepare over the earlier incarnation\'s PREPARED record): stopped by the H-edge invariant before its CAS', async (t) => {
  // H may move to another txid only from a final H (docs/tx.md "Invariants"): the prepare that
  // would replace PREPARED(T1) — and with it T1's roll forward on shard 1, an atomicity violation
  // before that invariant — is refused before its chain is posted.
  for (const seed of SEEDS) {
    await t.rejects(scenario(seed, true), { code: 'PMRPC_ERR_INVARIANT', message: /H would go from PREPARED\(T0\.1\.1\) to PREPARED\(T0\.2\.1\)/ }, `seed ${seed}`);
  }
});
