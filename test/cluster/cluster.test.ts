// The cluster launcher end to end (DESIGN §6): three local nodes (rpc, kv, kv) on their PM files,
// started detached by `pmrpc cluster up`; status; a SIGKILL of one (a crash) shows it down; a
// restart recovers it on its file; Cluster.connect reaches all three; down stops them in order.
// Only 127.0.0.1. Every wait is on an event (a start line, an exit) with a bound.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster } from '../../src/cluster/index.js';
import { METHOD } from '../../src/apps/rpc/index.js';
import { cli, freePorts, killAll } from './helpers.js';

// Nine CLI processes and three node processes: minutes on a loaded 2-core machine, not the default 120 s.
t.setTimeout(600_000);

const te = new TextEncoder();
const td = new TextDecoder();

interface Status {
  nodes: Array<{ id: string; app: string; host: string; port: number; pm: string; pid: number | null; state: string }>;
}

t.test('cluster up / status / kill / restart / Cluster.connect / down', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-cluster-'));
  const stateDir = join(dir, '.c3.state');
  t.teardown(() => {
    killAll(stateDir);
    rmSync(dir, { recursive: true, force: true });
  });
  const [p1, p2, p3] = await freePorts(3);
  const file = join(dir, 'c3.json');
  writeFileSync(file, JSON.stringify({
    version: 1,
    name: 'test-3',
    nodes: [
      { id: 'n1', app: 'rpc', host: '127.0.0.1', port: p1, pm: 'pm/n1.pm', options: { sizeBytes: 4 << 20, keepResults: true } },
      { id: 'n2', app: 'kv', host: '127.0.0.1', port: p2, pm: 'pm/n2.pm', options: { sizeBytes: 4 << 20 } },
      { id: 'n3', app: 'kv', host: '127.0.0.1', port: p3, pm: 'pm/n3.pm', options: { sizeBytes: 4 << 20 } },
    ],
  }));
  const status = async (): Promise<Record<string, string>> => {
    const r = await cli(['cluster', 'status', file, '--json']);
    const states: Record<string, string> = Object.fromEntries((JSON.parse(r.stdout) as Status).nodes.map((n) => [n.id, n.state]));
    const all = Object.values(states).every((s) => s === 'serving');
    t.equal(r.code, all ? 0 : 1, `status exits ${all ? 0 : 1}: ${JSON.stringify(states)} ${r.stderr}`);
    if (!all) t.match(r.stderr, /PMRPC_ERR_NODE_NOT_SERVING/, 'a node not serving is named on stderr');
    return states;
  };

  const up = await cli(['cluster', 'up', file, '--json', '--timeout-ms', '60000']);
  t.equal(up.code, 0, `up: ${up.stderr}`);
  const upDoc = JSON.parse(up.stdout) as { stateDir: string; nodes: Array<{ id: string; state: string; started: boolean; pid: number; recovered: { created: boolean } }> };
  t.equal(upDoc.stateDir, stateDir, 'the state dir is beside the cluster file');
  t.same(upDoc.nodes.map((n) => [n.id, n.state, n.started, n.recovered.created]), [['n1', 'serving', true, true], ['n2', 'serving', true, true], ['n3', 'serving', true, true]], 'up returns once the three nodes serve, each on a new file');
  t.same(await status(), { n1: 'serving', n2: 'serving', n3: 'serving' });

  // Something durable on each node before the crash.
  const c1 = await Cluster.connect(file);
  const n2 = c1.node('n2');
  if (n2.app !== 'kv') throw new Error('n2 is a kv node');
  await n2.kv.put('k', te.encode('before-crash'));
  c1.close();

  const kill = await cli(['cluster', 'kill', file, 'n2', '--json']);
  t.equal(kill.code, 0, kill.stderr);
  t.match(JSON.parse(kill.stdout), { id: 'n2', signal: 'SIGKILL' });
  t.same(await status(), { n1: 'serving', n2: 'down', n3: 'serving' }, 'after the kill, n2 is down and the others serve');
  const again = await cli(['cluster', 'kill', file, 'n2']);
  t.equal(again.code, 1);
  t.match(again.stderr, /PMRPC_ERR_NODE_NOT_RUNNING/);

  const restart = await cli(['cluster', 'restart', file, 'n2', '--json', '--timeout-ms', '60000']);
  t.equal(restart.code, 0, restart.stderr);
  t.match(JSON.parse(restart.stdout), { node: 'n2', app: 'kv', port: p2, recovered: { created: false } }, 'n2 restarts on its file and recovers it');
  t.same(await status(), { n1: 'serving', n2: 'serving', n3: 'serving' });
  const twice = await cli(['cluster', 'restart', file, 'n2']);
  t.equal(twice.code, 1);
  t.match(twice.stderr, /PMRPC_ERR_NODE_RUNNING/, 'a running node is not started twice');

  const c = await Cluster.connect(file);
  t.same(c.connections.map((x) => [x.id, x.app]), [['n1', 'rpc'], ['n2', 'kv'], ['n3', 'kv']], 'Cluster.connect reaches all three');
  for (const x of c.connections) {
    if (x.app === 'rpc') {
      const call = x.rpc.rpc.call(METHOD, te.encode('hello'));
      await call.durable;
      await call.result;
      t.pass(`${x.id}: a durable call`);
    } else {
      if (x.app !== 'kv') throw new Error(`${x.id}: app ${x.app}, expected kv`);
      if (x.id === 'n2') t.equal(td.decode((await x.kv.get('k'))!), 'before-crash', 'n2 kept its acknowledged put across the SIGKILL');
      await x.kv.put('k2', te.encode(x.id));
      t.equal(td.decode((await x.kv.get('k2'))!), x.id, `${x.id}: put and get`);
    }
  }
  c.close();

  const down = await cli(['cluster', 'down', file, '--json', '--timeout-ms', '60000']);
  t.equal(down.code, 0, down.stderr);
  t.same((JSON.parse(down.stdout) as { nodes: Array<{ id: string; stopped: string }> }).nodes.map((n) => [n.id, n.stopped]), [['n1', 'sigterm'], ['n2', 'sigterm'], ['n3', 'sigterm']], 'down stops each in order with SIGTERM');
  t.same(await status(), { n1: 'down', n2: 'down', n3: 'down' });
});
