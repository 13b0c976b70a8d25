// PRISM-TX runs for ever (docs/tx.md "Live reclamation"): three shards with the default options and
// one client doing bank transfers, no crash, commit every transfer through five times the arena's
// items — superseded values go back to the free lists while the shards run, not at recovery.
import t from 'tap';
import { parseTxWelcome, TxClient, txApp, TX_APP_DEFAULTS, type ShardConn, type TxAppServer } from '../../../src/apps/tx/index.js';
import { startLocalShards } from '../../../src/apps/txlock/index.js';
import { createPrng } from '../../../pmem/index.js';

const SEED = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/apps/tx/runs-for-ever.test.ts)`);

const SHARDS = 3;

t.test('one client, default-option shards: every transfer of 5 × the arena commits', async (t) => {
  const local = startLocalShards<object, TxAppServer>(txApp as never, SHARDS, (shard) => ({ shard, shards: SHARDS, value: 'balance' }), { nic: { drain: 'eager' }, seed: SEED });
  t.teardown(() => local.close());
  const conns: ShardConn[] = [];
  const source = (s: number): ShardConn | undefined => conns[s];
  for (let s = 0; s < SHARDS; s++) {
    const { qp, welcome } = local.connect(s);
    conns[s] = parseTxWelcome(qp, welcome);
  }
  // As a user writes it: no clock (the system clock by default), no faults.
  const tx = new TxClient(source, { client: 0, incarnation: 1 });
  const keys = SHARDS * TX_APP_DEFAULTS.keysPerShard;
  const transfers = 5 * TX_APP_DEFAULTS.items;
  const prng = createPrng(SEED);
  const i64 = (v: bigint): Uint8Array => {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigInt64(0, v, true);
    return b;
  };
  const bal = (b: Uint8Array): bigint => new DataView(b.buffer, b.byteOffset, 8).getBigInt64(0, true);
  let committed = 0;
  const failures: string[] = [];
  for (let i = 0; i < transfers; i++) {
    const a = prng.int(0, keys - 1);
    const b = (a + 1 + prng.int(0, keys - 2)) % keys;
    await tx.begin();
    const va = bal(await tx.read(a));
    const vb = bal(await tx.read(b));
    await tx.write(a, i64(va - 1n));
    await tx.write(b, i64(vb + 1n));
    const o = await tx.commit();
    if (o.status === 'committed') committed++;
    else if (failures.length < 3) failures.push(`transfer ${i}: ${o.status} ${o.code ?? ''}`);
  }
  t.equal(committed, transfers, `every transfer committed (${committed} of ${transfers}; first failures: ${failures.join('; ') || 'none'})`);
  await tx.begin();
  let sum = 0n;
  for (let k = 0; k < keys; k++) sum += bal(await tx.read(k));
  tx.rollback();
  t.equal(sum, BigInt(keys * TX_APP_DEFAULTS.initialBalance), 'the total is conserved');
  for (const s of local.servers) t.same(s.audit(), [], `shard ${s.geometry.shard}: audit clean`);
});
