// The FORD-style baseline (src/apps/txlock, app txford): a two-shard commit in R1 (undo log +
// validation) + R2 (in place + COMMITTED), a conflict that aborts and leaves nothing locked, and concurrent in-process workloads
// that must pass the Elle-style list-append check and the bank conservation check.
import t from 'tap';
import { fordFactory } from '../../../bench/tx-systems.js';
import { attempt, balanceBytes, balanceOf } from '../../../bench/tx-workloads.js';
import { baselineChecks } from '../txbaseline.js';
import { txfordApp, type TxLockAppServer } from '../../../src/apps/txlock/index.js';

const SEED = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/apps/txford/txford.test.ts)`);

t.test('a two-shard commit: R1 (undo log + validation) + R2 (in place + COMMITTED), unlocked asynchronously; a conflict aborts at the lock', async (t) => {
  const d = fordFactory.start({ shards: 2, keysPerShard: 4, clients: 2, value: 'balance', initialBalance: 10, items: 0, seed: SEED });
  try {
    const a = d.client(0);
    const b = d.client(1);
    const o = await attempt(a, async (x) => {
      const v0 = balanceOf(await x.read(0));
      await x.read(2);
      await x.write(1, balanceBytes(v0 + 5n));
    });
    t.equal(o.status, 'committed');
    t.equal(a.lastCommitRoundTrips(), 2, 'R1 and R2 (the unlock is not waited for)');
    await new Promise((r) => setImmediate(r));
    const s1 = d.servers[1] as TxLockAppServer;
    t.equal(balanceOf(s1.obj(0).value!), 15n, 'key 1 (shard 1, index 0) applied');
    t.same([s1.obj(0).lock, (d.servers[0] as TxLockAppServer).obj(0).lock], [0n, 0n], 'unlocked');
    // b reads key 1, a commits a write of it, b's write of it fails its LOCK (version changed).
    await b.begin();
    const vb = balanceOf(await b.read(1));
    t.equal((await attempt(a, async (x) => x.write(1, balanceBytes(99n)))).status, 'committed');
    await new Promise((r) => setImmediate(r));
    await t.rejects(b.write(1, balanceBytes(vb + 1n)), { code: 'PMRPC_ERR_TX_CONFLICT' }, 'the lock + speculative read saw a new version');
    t.equal(balanceOf(s1.obj(0).value!), 99n);
    t.equal(s1.obj(0).lock, 0n);
    t.same(s1.audit(), []);
  } finally {
    d.close();
  }
});

baselineChecks(t, fordFactory, txfordApp as never, SEED);
