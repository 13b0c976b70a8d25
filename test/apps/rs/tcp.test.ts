// PRISM-RS over TCP: three node hosts serving the rs app on PM files (what `pmrpc serve --app rs`
// and cluster files run), an RsClient from a cluster spec (connectRsCluster) and from
// Cluster.connect; a replica stops and restarts on its file (recovery, new epoch) while the client
// goes on and reconnects; the restarted replica is repaired by reads.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NodeHost, NODE_APP_NAMES } from '../../../src/node/index.js';
import { Cluster, connectRsCluster, rsClientOfCluster } from '../../../src/cluster/index.js';
import type { RsServer } from '../../../src/apps/rs/index.js';

const te = new TextEncoder();
const td = new TextDecoder();
const appOptions = { layout: { blocks: 16 } };

t.test('rs is a node app', async (t) => {
  t.ok(NODE_APP_NAMES.includes('rs'));
});

t.test('3 replicas over TCP: write, read, a replica restarts on its file, reads repair it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-rs-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const start = (i: number, port = 0): Promise<NodeHost<RsServer>> => NodeHost.start<RsServer>({ app: 'rs', appOptions, pmPath: join(dir, `r${i}.pm`), create: true, sizeBytes: 4 << 20, port, nodeId: `r${i}` });
  const hosts = [await start(0), await start(1), await start(2)];
  t.teardown(async () => {
    for (const h of hosts) await h.close().catch(() => undefined);
  });
  const spec = { version: 1, nodes: hosts.map((h, i) => ({ id: `r${i}`, app: 'rs', host: '127.0.0.1', port: h.address().port, pm: join(dir, `r${i}.pm`) })) };
  const client = await connectRsCluster(spec, { client: { writerId: 1 } });
  t.equal(await client.read(0), null);
  await client.write(0, te.encode('a'));
  t.equal(td.decode((await client.read(0))!), 'a');
  // Replica 2 stops; writes go on at a majority.
  const port2 = hosts[2]!.address().port;
  await hosts[2]!.close();
  await client.write(0, te.encode('b'));
  await client.write(1, te.encode('c'));
  // It restarts on its file (recovery: a new epoch); the client reconnects before its next operation.
  hosts[2] = await start(2, port2);
  t.equal(hosts[2]!.server.epoch, 2n, 'recovered: epoch 2');
  t.equal(td.decode((await client.read(0))!), 'b');
  t.equal(td.decode((await client.read(1))!), 'c');
  await client.settle();
  for (const b of [0, 1]) {
    const v = hosts[2]!.server.value(b);
    t.ok(typeof v === 'object' && td.decode(v.value) === (b === 0 ? 'b' : 'c'), `the restarted replica was repaired (block ${b})`);
  }
  // Cluster.connect gives the raw connections; one RsClient over them.
  const cluster = await Cluster.connect(spec);
  const other = rsClientOfCluster(cluster, { writerId: 2 });
  await other.write(3, te.encode('d'));
  t.equal(td.decode((await client.read(3))!), 'd');
  await other.close();
  cluster.close();
  await client.close();
  for (const h of hosts) t.same(h.server.audit(), [], 'replica sound');
});
