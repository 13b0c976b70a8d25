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

t.test('a shard file opened as another shard (or shard count) than it was formatted as is refused', async (t) => {
  const { PmemRegion } = await import('../../../pmem/index.js');
  const { Rnic } = await import('../../../flush/index.js');
  const o = txApp.resolveOptions({ shard: 1, shards: 2, keysPerShard: 2, clients: 2, items: 8 });
  const region = PmemRegion.createInMemory(txApp.minRegionBytes(o) + 64);
  txApp.format(region, o);
  const nics: InstanceType<typeof Rnic>[] = [];
  t.teardown(() => nics.forEach((n) => n.detach()));
  const host = () => {
    const nic = new Rnic(region);
    nics.push(nic);
    return { region, nic, clock: { nowMs: () => 0, nowNs: () => 0n, setTimer: () => ({ cancel() {} }) }, schedule: queueMicrotask, entropy: { fill: (b: Uint8Array) => b.fill(1) } };
  };
  t.throws(() => txApp.open(host() as never, txApp.resolveOptions({})), { code: TxErrorCodes.SHARD_MISMATCH, message: /the file is shard 1 of 2, the options say shard 0 of 1/ }, 'started without --cluster');
  t.throws(() => txApp.open(host() as never, { ...o, shard: 0 }), { code: TxErrorCodes.SHARD_MISMATCH }, 'another place among the tx nodes');
  t.throws(() => txApp.open(host() as never, { ...o, shards: 3 }), { code: TxErrorCodes.SHARD_MISMATCH }, 'another shard count');
  t.doesNotThrow(() => txApp.open(host() as never, o), 'the shard it was formatted as opens');
});
