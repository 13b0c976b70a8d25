// A tx node's options from a cluster file (`pmrpc serve --app tx --cluster FILE`): shard index and
// count from its place among the tx nodes, the rest from its node options; coded refusals.
import t from 'tap';
import { parseClusterSpec, startTxShardAgent, txNodeAppOptions } from '../../../src/cluster/index.js';
import { TxErrorCodes, txApp } from '../../../src/apps/tx/index.js';

const spec = parseClusterSpec({
  version: 1,
  nodes: [
    { id: 'r0', app: 'rpc', port: 7001, pm: '/tmp/r0.pm' },
    { id: 'a', app: 'tx', port: 7002, pm: '/tmp/a.pm', options: { keysPerShard: 5, txValue: 'balance', initialBalance: 7, txClients: 6, txItems: 99 } },
    { id: 'b', app: 'tx', port: 7003, pm: '/tmp/b.pm' },
  ],
});

t.test('shard index and count come from the tx nodes, in file order; options pass through', async (t) => {
  t.same(txNodeAppOptions(spec, 'a'), { shard: 0, shards: 2, keysPerShard: 5, clients: 6, items: 99, value: 'balance', initialBalance: 7 });
  t.same(txNodeAppOptions(spec, 'b'), { shard: 1, shards: 2 });
  t.match(txApp.resolveOptions(txNodeAppOptions(spec, 'a')), { shard: 0, shards: 2, keysPerShard: 5, value: 'balance' });
});

t.test('coded refusals: an unknown node, a node that is not a tx node, a bad tx option in the file', async (t) => {
  t.throws(() => txNodeAppOptions(spec, 'zz'), { code: 'PMRPC_ERR_CLUSTER_UNKNOWN_NODE' });
  t.throws(() => startTxShardAgent(spec, 'r0'), { code: TxErrorCodes.SHARD_UNAVAILABLE });
  t.throws(() => parseClusterSpec({ version: 1, nodes: [{ id: 'a', app: 'tx', port: 7002, pm: '/tmp/a.pm', options: { txValue: 'gold' } }] }), { code: 'PMRPC_ERR_CLUSTER_BAD_FIELD' });
  t.throws(() => startTxShardAgent(spec, 'a', { leaseMs: 0 }), RangeError);
});
