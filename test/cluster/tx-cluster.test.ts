// A PRISM-TX cluster started by the launcher (DESIGN §6, docs/deploy.md): `pmrpc cluster up` on a
// file listing two tx nodes starts them as shards 0 and 1 of a 2-shard store (each `serve --cluster
// FILE`, running its resolver agent); a TxClient over TCP (txShardSource) runs seeded bank
// transfers and audits across both shards; a SIGKILL of shard 1 and `cluster restart` recover it;
// every committed audit and the final balances sum to the initial total (checkBank). Only
// 127.0.0.1; every wait is bounded.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPrng, systemClock } from '../../pmem/index.js';
import { decodeAccount, encodeAccount, parseClusterSpec, txShardSource } from '../../src/cluster/index.js';
import { serveArgs } from '../../cli/cluster.js';
import { TxClient } from '../../src/apps/tx/index.js';
import { checkBank } from '../../src/check/index.js';
import { cli, freePorts, killAll } from './helpers.js';

t.setTimeout(600_000);

const SEED = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/cluster/tx-cluster.test.ts)`);

const SHARDS = 2;
const KEYS_PER_SHARD = 4;
const ACCOUNTS = SHARDS * KEYS_PER_SHARD;
const BALANCE = 100n;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

t.test('the launcher starts a tx node as a shard of the file (--cluster) and passes leaseMs; a bad leaseMs is refused', async (t) => {
  const spec = parseClusterSpec({ version: 1, nodes: [{ id: 'r', app: 'rpc', port: 7001, pm: '/tmp/r.pm', options: { leaseMs: 5000 } }, { id: 'a', app: 'tx', port: 7002, pm: '/tmp/a.pm', options: { leaseMs: 250 } }] });
  const [r, a] = spec.nodes;
  const flag = (args: string[], f: string): string | undefined => (args.includes(f) ? args[args.indexOf(f) + 1] : undefined);
  t.equal(flag(serveArgs(a!, undefined, 'dir/c.json'), '--cluster'), join(process.cwd(), 'dir/c.json'), 'a tx node: --cluster, the absolute path of the file');
  t.equal(flag(serveArgs(a!, undefined, 'dir/c.json'), '--lease-ms'), '250');
  t.equal(flag(serveArgs(r!, undefined, 'dir/c.json'), '--cluster'), undefined, 'an rpc node: no --cluster');
  t.equal(flag(serveArgs(r!, undefined), '--lease-ms'), '5000');
  t.throws(() => serveArgs(a!, undefined), new TypeError('node a is a tx node: its serve command needs the cluster file'));
  t.throws(() => parseClusterSpec({ version: 1, nodes: [{ id: 'a', app: 'tx', port: 7002, pm: '/tmp/a.pm', options: { leaseMs: 0 } }] }), { code: 'PMRPC_ERR_CLUSTER_BAD_FIELD' });
});

t.test('cluster up starts a 2-shard TX cluster; bank transfers over TCP conserve the total, across a shard kill and restart', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-txcluster-'));
  const stateDir = join(dir, '.tx2.state');
  t.teardown(() => {
    killAll(stateDir);
    rmSync(dir, { recursive: true, force: true });
  });
  const [p1, p2] = await freePorts(2);
  const file = join(dir, 'tx2.json');
  const options = { sizeBytes: 1 << 20, keysPerShard: KEYS_PER_SHARD, txClients: 4, txItems: 256, txValue: 'balance', initialBalance: Number(BALANCE), leaseMs: 200 };
  writeFileSync(file, JSON.stringify({
    version: 1,
    name: 'tx-2',
    nodes: [
      { id: 's0', app: 'tx', host: '127.0.0.1', port: p1, pm: 'pm/s0.pm', options },
      { id: 's1', app: 'tx', host: '127.0.0.1', port: p2, pm: 'pm/s1.pm', options },
    ],
  }));
  const up = await cli(['cluster', 'up', file, '--json', '--timeout-ms', '60000']);
  t.equal(up.code, 0, `up: ${up.stderr}`);
  const upDoc = JSON.parse(up.stdout) as { nodes: Array<{ id: string; app: string; state: string; recovered: { created: boolean } }> };
  t.same(upDoc.nodes.map((n) => [n.id, n.app, n.state, n.recovered.created]), [['s0', 'tx', 'serving', true], ['s1', 'tx', 'serving', true]], 'both tx nodes serve, each on a new PM file');

  const links = txShardSource(file, { name: 'tx-cluster-test' });
  t.teardown(() => links.close());
  /** Bounded: both shards reachable (the source dials in the background). */
  const reachable = async (): Promise<boolean> => {
    for (let i = 0; i < 600; i++) {
      if (links.source(0) !== undefined && links.source(1) !== undefined) return true;
      await sleep(50);
    }
    return false;
  };
  t.ok(await reachable(), 'both shards reachable over TCP');
  t.same([links.source(0)!.shard, links.source(0)!.shards, links.source(1)!.shard, links.source(1)!.shards], [0, SHARDS, 1, SHARDS], 'each node is its own shard of a 2-shard store (its place among the tx nodes of the file)');

  const prng = createPrng(SEED >>> 0);
  const audits: Array<{ id: number; type: 'ok' | 'fail' | 'info'; balances: Map<number, bigint> | null }> = [];
  const outcomes = { committed: 0, aborted: 0, unknown: 0 };
  let incarnation = 0;
  /** `n` seeded transfers (and an audit every 4th) by a new incarnation of client slot 0. */
  const run = async (n: number): Promise<void> => {
    const c = new TxClient(links.source, { client: 0, incarnation: ++incarnation, clock: systemClock, faults: {} });
    for (let i = 0; i < n; i++) {
      await c.begin();
      if (i % 4 === 3) {
        const balances = new Map<number, bigint>();
        for (let k = 0; k < ACCOUNTS; k++) balances.set(k, decodeAccount(await c.read(k)).balance);
        const o = await c.commit();
        audits.push({ id: audits.length + 1, type: o.status === 'committed' ? 'ok' : o.status === 'aborted' ? 'fail' : 'info', balances: o.status === 'committed' ? balances : null });
        outcomes[o.status]++;
        continue;
      }
      // a on shard 0, b on shard 1: every transfer has both shards as participants.
      const a = 2 * prng.int(0, KEYS_PER_SHARD - 1);
      const b = 2 * prng.int(0, KEYS_PER_SHARD - 1) + 1;
      const x = BigInt(prng.int(1, 9));
      const txid = c.nextTxid;
      const va = decodeAccount(await c.read(a));
      const vb = decodeAccount(await c.read(b));
      await c.write(a, encodeAccount(va.balance - x, txid));
      await c.write(b, encodeAccount(vb.balance + x, txid));
      outcomes[(await c.commit()).status]++;
    }
  };
  await run(12);
  t.ok(outcomes.committed >= 9, `transfers and audits committed: ${JSON.stringify(outcomes)}`);

  // A crash of shard 1 and a restart through the launcher: it recovers and rejoins its cluster.
  const kill = await cli(['cluster', 'kill', file, 's1', '--json']);
  t.equal(kill.code, 0, kill.stderr);
  const restart = await cli(['cluster', 'restart', file, 's1', '--json', '--timeout-ms', '60000']);
  t.equal(restart.code, 0, restart.stderr);
  t.match(JSON.parse(restart.stdout), { node: 's1', app: 'tx', recovered: { created: false } }, 's1 restarts on its PM file');
  t.ok(await reachable(), 'shard 1 reachable again');
  await run(8);

  // The final balances: one read-only transaction over every account.
  const c = new TxClient(links.source, { client: 1, incarnation: 1, clock: systemClock, faults: {} });
  await c.begin();
  const final = new Map<number, bigint>();
  for (let k = 0; k < ACCOUNTS; k++) final.set(k, decodeAccount(await c.read(k)).balance);
  t.equal((await c.commit()).status, 'committed');
  const total = BALANCE * BigInt(ACCOUNTS);
  const res = checkBank(audits, { accounts: [...final.keys()], total, final, negative: true });
  t.equal(res.valid, true, `bank: ${JSON.stringify(res.anomalies)}; final ${[...final.values()].join(',')}; ${JSON.stringify(outcomes)}`);
  t.equal([...final.values()].reduce((s, v) => s + v, 0n), total, 'the final balances sum to the initial total');
  t.ok(audits.filter((a) => a.type === 'ok').length >= 3, 'committed audits checked');
  t.ok([...final.values()].some((v) => v !== BALANCE), 'transfers moved money');
  links.close();

  const down = await cli(['cluster', 'down', file, '--json']);
  t.equal(down.code, 0, down.stderr);
  t.same((JSON.parse(down.stdout) as { nodes: Array<{ id: string; stopped: string }> }).nodes.map((n) => [n.id, n.stopped]), [['s0', 'sigterm'], ['s1', 'sigterm']], 'down stops both shards in order');
});
