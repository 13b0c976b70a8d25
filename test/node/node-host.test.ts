// The node host (src/node): any app on one PM file (or in memory), one start line, coded refusals
// before the file is touched, and the node-to-node link (connectPeer) with the same auth.
import t from 'tap';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { QueuePair } from '../../flush/index.js';
import { createPrng, seededEntropy } from '../../pmem/index.js';
import { NodeHost } from '../../src/node/index.js';
import { connectPeer, parseClusterSpec } from '../../src/cluster/index.js';
import { connectKvClient, type KvAppServer } from '../../src/apps/kv/index.js';
import { RemoteRpcClient, RpcNode, WORKLOAD_HANDLERS, WORKLOAD_METHOD } from '../../src/server/index.js';

const seed = 3;
t.comment(`seed ${seed}`);
const te = new TextEncoder();
const td = new TextDecoder();

t.test('a kv node in memory with a token: a peer with the token reaches it, one without is refused', async (t) => {
  const node = await NodeHost.start<KvAppServer>({ app: 'kv', pmPath: undefined, sizeBytes: 1 << 20, authToken: 'tok', nodeId: 'kv-a', entropy: seededEntropy(createPrng(seed)) });
  t.teardown(() => node.close());
  const line = node.startLine();
  t.match(line, { node: 'kv-a', app: 'kv', host: '127.0.0.1', pm: null, recovered: { created: true } });
  const spec = parseClusterSpec({ version: 1, nodes: [{ id: 'kv-a', app: 'kv', port: line.port, pm: 'unused.pm' }] });
  const { link, welcome } = await connectPeer(spec.nodes[0]!, { authToken: 'tok', name: 'peer' });
  const kv = await connectKvClient(new QueuePair(link), welcome);
  await kv.put('x', te.encode('1'));
  t.equal(td.decode((await kv.get('x'))!), '1', 'the peer link carries the app');
  kv.qp.close();
  await t.rejects(connectPeer(spec.nodes[0]!, { authToken: 'wrong' }), { code: 'PMRPC_ERR_NODE_UNREACHABLE' });
  await t.rejects(connectPeer(spec.nodes[0]!, {}), { code: 'PMRPC_ERR_NODE_UNREACHABLE' });
});

t.test('refusals come before the file is touched', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-node-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const pm = join(dir, 'n.pm');
  await t.rejects(NodeHost.start({ app: 'nope', pmPath: pm }), { code: 'PMRPC_ERR_UNKNOWN_APP' });
  await t.rejects(NodeHost.start({ app: 'rpc', pmPath: pm, create: true, sizeBytes: 4096 }), { code: 'PMRPC_ERR_SIZE_TOO_SMALL' });
  await t.rejects(NodeHost.start({ app: 'kv', pmPath: pm, host: '10.1.2.3' }), { code: 'PMRPC_ERR_AUTH_REQUIRED' });
  await t.rejects(NodeHost.start({ app: 'kv', pmPath: pm, appOptions: { system: 'redis' } }), TypeError);
  await t.rejects(NodeHost.start({ app: undefined as never, pmPath: pm }), new TypeError('app must be an App or an app name'));
  await t.rejects(NodeHost.start({ app: 'kv', pmPath: '' }), new TypeError('pmPath must be a non-empty string (or undefined: in memory)'));
  await t.rejects(NodeHost.start({ app: 'kv', pmPath: pm, port: 70000 }), new RangeError('port must be an integer in [0, 65535], got 70000'));
  await t.rejects(NodeHost.start({ app: 'kv', pmPath: pm, nodeId: '' }), new TypeError('nodeId must be a non-empty string, got '));
  await t.rejects(NodeHost.start({ app: 'kv', pmPath: pm, appOptions: null as never }), new TypeError('appOptions must be an object'));
  await t.rejects(RpcNode.start({ pmPath: '', handlers: WORKLOAD_HANDLERS }), new TypeError('pmPath must be a non-empty string'));
  await t.rejects(RpcNode.start({ pmPath: pm, handlers: WORKLOAD_HANDLERS, keepResults: 1 as never }), new TypeError('keepResults must be a boolean, got 1'));
  await t.rejects(NodeHost.start({ app: 'rpc', pmPath: pm, host: '0.0.0.0', authToken: '' }), { code: 'PMRPC_ERR_BAD_AUTH_TOKEN', message: /the auth token is empty/ });
  await t.rejects(NodeHost.start({ app: 'rpc', pmPath: pm, authToken: 'x'.repeat(1025) }), { code: 'PMRPC_ERR_BAD_AUTH_TOKEN' });
  await t.rejects(NodeHost.start({ app: 'rpc', pmPath: pm, tcp: { maxConnections: 0 } }), new RangeError('maxConnections must be a positive integer, got 0'));
  t.notOk(existsSync(pm), 'no file was created');
});

t.test('pmrpc serve --host 0.0.0.0 --auth-token \'\': a coded error, exit 1, no file', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-node-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const pm = join(dir, 'n.pm');
  const main = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
  const r = spawnSync(process.execPath, [main, 'serve', '--pm', pm, '--host', '0.0.0.0', '--auth-token', ''], { encoding: 'utf8', timeout: 240_000, env: { ...process.env, PMRPC_AUTH_TOKEN: '' } });
  t.equal(r.status, 1);
  t.match(r.stderr, /^pmrpc: PMRPC_ERR_BAD_AUTH_TOKEN: the auth token is empty/);
  t.notMatch(r.stderr, /TypeError/);
  t.notOk(existsSync(pm), 'no file was created');
});

t.test('RpcNode is the rpc app on the node host: a file survives a restart', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-node-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const pm = join(dir, 'rpc.pm');
  const a = await RpcNode.start({ pmPath: pm, create: true, sizeBytes: 2 << 20, handlers: WORKLOAD_HANDLERS });
  t.equal(a.recovery.created, true);
  t.equal(a.host.app.name, 'rpc');
  const c = await RemoteRpcClient.connect({ port: a.address().port });
  const call = c.rpc.call(WORKLOAD_METHOD, new Uint8Array(32));
  await call.durable;
  await call.result;
  c.close();
  await a.close();
  const b = await RpcNode.start({ pmPath: pm, handlers: WORKLOAD_HANDLERS });
  t.equal(b.recovery.created, false);
  t.equal(b.recovery.epoch, a.recovery.epoch + 1, 'each start recovers once');
  t.same(b.recovery.clients.map((x) => x.appliedSeq), [1], 'the applied call is in the file');
  await b.close();
});
