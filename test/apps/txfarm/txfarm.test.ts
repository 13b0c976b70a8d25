// The FaRM-style baseline (src/apps/txlock, app txfarm): a two-shard commit in LOCK + VALIDATE +
// COMMIT, a conflict that aborts and leaves nothing locked, and concurrent in-process workloads
// that must pass the Elle-style list-append check and the bank conservation check.
import t from 'tap';
import { farmFactory } from '../../../bench/tx-systems.js';
import { attempt, balanceBytes, balanceOf } from '../../../bench/tx-workloads.js';
import { baselineChecks } from '../txbaseline.js';
import { txfarmApp, type TxLockAppServer } from '../../../src/apps/txlock/index.js';

const SEED = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/apps/txfarm/txfarm.test.ts)`);

t.test('a two-shard commit: LOCK + VALIDATE + COMMIT, applied by the CPU, nothing left locked; a conflict aborts', async (t) => {
  const d = farmFactory.start({ shards: 2, keysPerShard: 4, clients: 2, value: 'balance', initialBalance: 10, items: 0, seed: SEED });
  try {
    const a = d.client(0);
    const b = d.client(1);
    const o = await attempt(a, async (x) => {
      const v0 = balanceOf(await x.read(0));
      await x.read(2);
      await x.write(1, balanceBytes(v0 + 5n));
    });
    t.equal(o.status, 'committed');
    t.equal(a.lastCommitRoundTrips(), 3, 'LOCK, VALIDATE, COMMIT');
    await new Promise((r) => setImmediate(r));
    const s1 = d.servers[1] as TxLockAppServer;
    t.equal(balanceOf(s1.obj(0).value!), 15n, 'key 1 (shard 1, index 0) applied');
    t.same([s1.obj(0).lock, (d.servers[0] as TxLockAppServer).obj(0).lock], [0n, 0n], 'unlocked');
    // b reads key 1, a commits a write of it, b's write of it fails its LOCK (version changed).
    await b.begin();
    const vb = balanceOf(await b.read(1));
    t.equal((await attempt(a, async (x) => x.write(1, balanceBytes(99n)))).status, 'committed');
    await new Promise((r) => setImmediate(r));
    await b.write(1, balanceBytes(vb + 1n));
    t.match(await b.commit(), { status: 'aborted', code: 'PMRPC_ERR_TX_CONFLICT' });
    t.equal(balanceOf(s1.obj(0).value!), 99n);
    t.equal(s1.obj(0).lock, 0n);
    t.same(s1.audit(), []);
  } finally {
    d.close();
  }
});

baselineChecks(t, farmFactory, txfarmApp as never, SEED);
