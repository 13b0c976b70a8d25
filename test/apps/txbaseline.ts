// What the FaRM-style and FORD-style baselines' tests share: hosting by a node, and the concurrent
// in-process workloads that must pass the Elle-style list-append check and the bank conservation check.
import type { Test } from 'tap';
import type { TxSystemFactory } from '../../bench/tx-systems.js';
import { runAppendCheck, runBankCheck } from '../../bench/tx-workloads.js';
import type { App } from '../../src/apps/index.js';
import { NODE_APPS } from '../../src/node/index.js';

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
