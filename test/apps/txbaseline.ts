// What the FaRM-style and FORD-style baselines' tests share: hosting by a node, and the concurrent
// in-process workloads that must pass the Elle-style list-append check and the bank conservation check.
import type { Test } from 'tap';
import type { TxSystemFactory } from '../../bench/tx-systems.js';
import { attempt, balanceBytes, balanceOf, runAppendCheck, runBankCheck } from '../../bench/tx-workloads.js';
import type { App } from '../../src/apps/index.js';
import type { TxLockAppServer } from '../../src/apps/txlock/index.js';
import { NODE_APPS } from '../../src/node/index.js';

/**
 * A two-shard commit (read key 0, read key 2, write key 1): its commit round trips, the value
 * applied, nothing left locked; then a conflict — b read key 1, a committed a write of it — that
 * aborts b (FaRM: at its LOCK; FORD: at the lock + speculative read of b's write), leaving a's value.
 */
export function twoShardCommit(t: Test, factory: TxSystemFactory, o: { name: string; roundTrips: number; roundTripsWhat: string; conflictAt: 'commit' | 'write'; seed: number }): void {
  t.test(`a two-shard commit: ${o.name}; nothing left locked; a conflict aborts at the ${o.conflictAt === 'commit' ? 'LOCK' : 'lock of the write'}`, async (t) => {
    const d = factory.start({ shards: 2, keysPerShard: 4, clients: 2, value: 'balance', initialBalance: 10, items: 0, seed: o.seed });
    try {
      const a = d.client(0);
      const b = d.client(1);
      const out = await attempt(a, async (x) => {
        const v0 = balanceOf(await x.read(0));
        await x.read(2);
        await x.write(1, balanceBytes(v0 + 5n));
      });
      t.equal(out.status, 'committed');
      t.equal(a.lastCommitRoundTrips(), o.roundTrips, o.roundTripsWhat);
      await new Promise((r) => setImmediate(r));
      const s1 = d.servers[1] as TxLockAppServer;
      t.equal(balanceOf(s1.obj(0).value!), 15n, 'key 1 (shard 1, index 0) applied');
      t.same([s1.obj(0).lock, (d.servers[0] as TxLockAppServer).obj(0).lock], [0n, 0n], 'unlocked');
      await b.begin();
      const vb = balanceOf(await b.read(1));
      t.equal((await attempt(a, async (x) => x.write(1, balanceBytes(99n)))).status, 'committed');
      await new Promise((r) => setImmediate(r));
      if (o.conflictAt === 'commit') {
        await b.write(1, balanceBytes(vb + 1n));
        t.match(await b.commit(), { status: 'aborted', code: 'PMRPC_ERR_TX_CONFLICT' }, 'the LOCK saw a new version');
      } else {
        await t.rejects(b.write(1, balanceBytes(vb + 1n)), { code: 'PMRPC_ERR_TX_CONFLICT' }, 'the lock + speculative read saw a new version');
      }
      t.equal(balanceOf(s1.obj(0).value!), 99n);
      t.equal(s1.obj(0).lock, 0n);
      t.same(s1.audit(), []);
    } finally {
      d.close();
    }
  });
}

export function baselineChecks(t: Test, factory: TxSystemFactory, app: App<object>, seed: number): void {
  t.test(`hosted by a node: the apps table names ${app.name}; options are checked`, async (t) => {
    t.equal(NODE_APPS[app.name], app);
    t.throws(() => app.resolveOptions({ clients: 0 } as object), RangeError);
  });

  t.test('concurrent list-append (4 clients, 2 shards): Elle-style check, atomicity, reads', async (t) => {
    const r = await runAppendCheck(factory, { shards: 2, clients: 4, txPerClient: 25, keys: 8, seed });
    t.same(r.problems, [], 'no anomaly');
    t.ok(r.committed > 20, `${r.committed} committed, ${r.aborted} aborted`);
    t.ok(r.aborted > 0, 'conflicts happened (the check saw contention)');
  });

  t.test('concurrent bank transfers with audits: the total is conserved', async (t) => {
    const r = await runBankCheck(factory, { shards: 2, clients: 4, txPerClient: 40, keys: 6, seed });
    t.same(r.problems, []);
    t.ok(r.committed > 20, `${r.committed} committed, ${r.aborted} aborted`);
    t.ok(r.history.some((h) => h.kind === 'audit' && h.type === 'ok'), 'some audit committed');
  });

  t.test('mutant skip-validation: the checks catch it (the workloads have teeth)', async (t) => {
    const bank = await runBankCheck(factory, { shards: 2, clients: 4, txPerClient: 40, keys: 6, seed, skipValidation: true });
    const append = await runAppendCheck(factory, { shards: 2, clients: 4, txPerClient: 25, keys: 8, seed, skipValidation: true });
    t.ok(bank.problems.length + append.problems.length > 0, `caught: ${[...bank.problems, ...append.problems].slice(0, 2).map((p) => p.kind).join(', ')}`);
  });
}
