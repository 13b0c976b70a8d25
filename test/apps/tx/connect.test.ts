// PRISM-TX from the package over TCP (issue 25, item 6): connectTxCluster reaches every shard,
// allocates the client slot's incarnation from what the shards hold, and runs a bank transfer; a
// reused incarnation is its own coded error (PMRPC_ERR_TX_STALE_INCARNATION), not a conflict.
import t from 'tap';
import { NodeHost } from '../../../src/node/index.js';
import { connectTxCluster, type TxClusterClient } from '../../../src/cluster/index.js';
import { TxErrorCodes } from '../../../src/apps/tx/index.js';

const i64 = (n: bigint): Uint8Array => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigInt64(0, n, true);
  return b;
};
const num = (b: Uint8Array): bigint => new DataView(b.buffer, b.byteOffset, 8).getBigInt64(0, true);

async function shards(t: Tap.Test, n: number): Promise<Array<{ host: string; port: number }>> {
  const nodes = await Promise.all(
    Array.from({ length: n }, (_, shard) => NodeHost.start({ app: 'tx', pmPath: undefined, sizeBytes: 4 << 20, appOptions: { shard, shards: n, keysPerShard: 4, clients: 4, items: 64, value: 'balance', initialBalance: 100 } })),
  );
  t.teardown(() => Promise.all(nodes.map((x) => x.close())));
  return nodes.map((x) => x.address());
}

async function transfer(c: TxClusterClient, from: number, to: number, amount: bigint) {
  await c.begin();
  const a = num(await c.read(from));
  const b = num(await c.read(to));
  await c.write(from, i64(a - amount));
  await c.write(to, i64(b + amount));
  return c.commit();
}

async function balances(c: TxClusterClient, keys: number[]): Promise<bigint[]> {
  await c.begin();
  const out: bigint[] = [];
  for (const k of keys) out.push(num(await c.read(k)));
  c.rollback();
  return out;
}

t.test('a bank transfer over TCP; each connect of a slot gets the next incarnation', async (t) => {
  const addrs = await shards(t, 2);
  const c1 = await connectTxCluster(addrs, { client: 0 });
  t.equal(c1.incarnation, 1, 'a fresh slot starts at incarnation 1');
  t.match(await transfer(c1, 0, 1, 30n), { status: 'committed' }, 'keys 0 and 1 live on two shards');
  t.same(await balances(c1, [0, 1]), [70n, 130n]);
  c1.close();
  const c2 = await connectTxCluster(addrs, { client: 0 });
  t.equal(c2.incarnation, 2, 'the shards hold a transaction of incarnation 1: the next is 2');
  t.match(await transfer(c2, 1, 0, 5n), { status: 'committed' });
  t.same(await balances(c2, [0, 1]), [75n, 125n], 'money is conserved');
  c2.close();
  const other = await connectTxCluster(addrs, { client: 1 });
  t.equal(other.incarnation, 1, 'another slot has its own incarnations');
  other.close();
});

t.test('a reused incarnation is PMRPC_ERR_TX_STALE_INCARNATION (at commit for incarnation 1, at begin after)', async (t) => {
  const addrs = await shards(t, 2);
  const c1 = await connectTxCluster(addrs, { client: 2 });
  t.match(await transfer(c1, 0, 1, 1n), { status: 'committed' });
  c1.close();
  const again = await connectTxCluster(addrs, { client: 2, incarnation: 1 });
  t.match(await transfer(again, 0, 1, 1n), { status: 'aborted', code: TxErrorCodes.STALE_INCARNATION }, 'not PMRPC_ERR_TX_CONFLICT');
  await t.rejects(again.begin(), { code: TxErrorCodes.STALE_INCARNATION }, 'the client refuses to go on');
  again.close();
  const c2 = await connectTxCluster(addrs, { client: 2 });
  t.equal(c2.incarnation, 2);
  t.match(await transfer(c2, 1, 0, 1n), { status: 'committed' });
  c2.close();
  const reused = await connectTxCluster(addrs, { client: 2, incarnation: 2 });
  await t.rejects(reused.begin(), { code: TxErrorCodes.STALE_INCARNATION }, 'a later incarnation reads the slot first: refused at begin');
  reused.close();
  const c3 = await connectTxCluster(addrs, { client: 2 });
  t.equal(c3.incarnation, 3);
  t.same(await balances(c3, [0, 1]), [100n, 100n], 'the refused transfer changed nothing');
  c3.close();
});

t.test('bad options and unreachable shards are refused with codes', async (t) => {
  const addrs = await shards(t, 1);
  await t.rejects(connectTxCluster(addrs, { client: 256 }), RangeError);
  await t.rejects(connectTxCluster(addrs, { client: 4 }), RangeError, 'past the shards\' client slots');
  await t.rejects(connectTxCluster([], { client: 0 }), { code: TxErrorCodes.SHARD_UNAVAILABLE });
  await t.rejects(connectTxCluster([{ host: '127.0.0.1', port: 1 }], { client: 0, connectTimeoutMs: 300 }), { code: TxErrorCodes.SHARD_UNAVAILABLE, message: /shard 0 \(node shard0 at 127.0.0.1:1\) did not answer within 300 ms/ });
});

t.test('a client\'s transactions settle with a coded error when the shards stop (their Goodbye)', async (t) => {
  const nodes = await Promise.all(
    [0, 1].map((shard) => NodeHost.start({ app: 'tx', pmPath: undefined, sizeBytes: 4 << 20, appOptions: { shard, shards: 2, keysPerShard: 4, clients: 4, items: 64, value: 'balance', initialBalance: 100 } })),
  );
  const clients = await Promise.all([0, 1, 2, 3].map((client) => connectTxCluster(nodes.map((n) => n.address()), { client })));
  t.teardown(() => clients.forEach((c) => c.close()));
  // Every client mid-transfer while the shards shut down.
  const running = clients.map((c, i) =>
    transfer(c, i % 4, (i + 1) % 4, 1n).then(
      (o) => ({ settled: o.status, code: o.code }),
      (e: unknown) => ({ settled: 'threw', code: (e as { code?: string }).code }),
    ),
  );
  await Promise.all(nodes.map((n) => n.close()));
  let timer: NodeJS.Timeout | undefined;
  const outcomes = await Promise.race([Promise.all(running), new Promise<'timeout'>((res) => (timer = setTimeout(() => res('timeout'), 60_000)))]);
  clearTimeout(timer);
  t.not(outcomes, 'timeout', 'every transaction settled within 60 s (a bound on liveness, not on speed)');
  if (outcomes === 'timeout') return;
  for (const o of outcomes) t.ok(o.settled === 'committed' || (typeof o.code === 'string' && o.code.startsWith('PMRPC_ERR_')), `${o.settled} ${o.code ?? ''}`);
});
