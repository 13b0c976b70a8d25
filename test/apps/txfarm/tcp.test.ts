// The baselines as node apps over TCP (what `pmrpc serve --app txfarm|txford` runs): two shards of
// each on PM files, a transfer committed over TcpLinks, then both shards stop and restart on their
// files: the committed values are there (durable before the commit returned), nothing is locked.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QueuePair } from '../../../flush/index.js';
import { NodeHost } from '../../../src/node/index.js';
import { TcpLink } from '../../../src/transport/index.js';
import { FarmTxClient, FordTxClient, parseTxLockWelcome, type TxLockAppServer, type TxLockConn } from '../../../src/apps/txlock/index.js';
import { attempt, balanceBytes, balanceOf } from '../../../bench/tx-workloads.js';

for (const app of ['txfarm', 'txford'] as const) {
  t.test(`${app}: two shards over TCP, a committed transfer survives a restart of both`, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), `pmrpc-${app}-`));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const start = (s: number, port = 0): Promise<NodeHost<TxLockAppServer>> =>
      NodeHost.start<TxLockAppServer>({ app, appOptions: { shard: s, shards: 2, keysPerShard: 4, clients: 2, value: 'balance', initialBalance: 50 }, pmPath: join(dir, `s${s}.pm`), create: true, sizeBytes: 1 << 20, port, nodeId: `s${s}` });
    const hosts = [await start(0), await start(1)];
    t.teardown(async () => {
      for (const h of hosts) await h.close().catch(() => undefined);
    });
    const conns: TxLockConn[] = [];
    for (const [s, h] of hosts.entries()) {
      const { link, welcome } = await TcpLink.connect({ port: h.address().port, name: `${app}-test-${s}` });
      conns.push(parseTxLockWelcome(new QueuePair(link), welcome));
    }
    const source = (s: number): TxLockConn | undefined => conns[s];
    const c = app === 'txfarm' ? new FarmTxClient(source, { client: 0, incarnation: 1 }) : new FordTxClient(source, { client: 0, incarnation: 1 });
    const api = { begin: () => c.begin(), read: (k: number, u?: boolean) => c.read(k, { forUpdate: u === true }), write: (k: number, v: Uint8Array) => c.write(k, v), commit: () => c.commit(), rollback: () => c.rollback(), lastCommitRoundTrips: () => c.lastRoundTrips };
    const o = await attempt(api, async (x) => {
      const a = balanceOf(await x.read(0, true));
      const b = balanceOf(await x.read(1, true));
      await x.write(0, balanceBytes(a - 7n));
      await x.write(1, balanceBytes(b + 7n));
    });
    t.equal(o.status, 'committed');
    // A read-only transaction sees the transfer (FaRM: once the shard CPU applied it; reads retry while it is locked).
    const seen = await attempt(api, async (x) => {
      t.same([balanceOf(await x.read(0)), balanceOf(await x.read(1))], [43n, 57n]);
    });
    t.equal(seen.status, 'committed');
    for (const conn of conns) conn.qp.close();
    const ports = hosts.map((h) => h.address().port);
    for (const h of hosts) await h.close();
    hosts[0] = await start(0, ports[0]);
    hosts[1] = await start(1, ports[1]);
    t.same([balanceOf(hosts[0]!.server.obj(0).value!), balanceOf(hosts[1]!.server.obj(0).value!)], [43n, 57n], 'the committed values are on the PM files');
    for (const h of hosts) {
      t.equal(h.server.obj(0).lock, 0n, 'nothing locked after recovery');
      t.same(h.server.audit(), []);
    }
  });
}
