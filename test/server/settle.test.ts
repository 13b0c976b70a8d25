// Clients settle when the server stops (issue 25, item 6): an orderly stop (SIGTERM: the node
// sends every connection a Goodbye PMRPC_ERR_SERVER_CLOSED) settles every pending call of a
// RemoteRpcClient with that code; a drop without a reconnect settles them after reconnectWindowMs.
import t from 'tap';
import net from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NodeHost } from '../../src/node/index.js';
import { RemoteRpcClient } from '../../src/server/index.js';
import { DIGEST_HANDLERS } from '../../src/apps/rpc/index.js';
import { WORKLOAD_METHOD, workloadPayload } from '../../src/server/workload.js';
import { connectKvClient } from '../../src/apps/kv/index.js';
import { connectPeer, connectRsCluster } from '../../src/cluster/index.js';
import { QueuePair } from '../../flush/index.js';
import { spawnServe } from '../node/serve-child.js';


type Settled = { ok: boolean; code?: string };
const settle = (p: Promise<unknown>): Promise<Settled> => p.then(() => ({ ok: true }), (e: unknown) => ({ ok: false, code: (e as { code?: string }).code }));

/** Resolves with the promises' outcomes, or with 'timeout' after `ms` (a bound, not a speed claim). */
async function within<T>(ms: number, p: Promise<T>): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const r = await Promise.race([p, new Promise<'timeout'>((res) => (timer = setTimeout(() => res('timeout'), ms)))]);
  clearTimeout(timer);
  return r;
}

/** A PM file with the app formatted (made in this process: `serve` then only opens it). */
async function pmFile(t: Tap.Test, app: 'rpc' | 'kv'): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-settle-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const pm = join(dir, `${app}.pm`);
  const node = await NodeHost.start({ app, pmPath: pm, create: true, appOptions: app === 'rpc' ? { handlers: DIGEST_HANDLERS } : {} });
  await node.close();
  return pm;
}

async function serve(t: Tap.Test, args: string[]): Promise<{ port: number; stop: () => void; exited: Promise<number | null> }> {
  const s = await spawnServe(t, ['--json', ...args]);
  return { port: s.start.port, stop: () => s.child.kill('SIGTERM'), exited: s.exited };
}

t.test('a RemoteRpcClient\'s 32 pending calls all settle after the server\'s SIGTERM (a real `pmrpc serve`)', async (t) => {
  const pm = await pmFile(t, 'rpc');
  const s = await serve(t, ['--pm', pm, '--app', 'rpc']);
  const client = await RemoteRpcClient.connect({ port: s.port, name: 'settle' });
  t.teardown(() => client.close({ goodbyeTimeoutMs: 0 }));
  const calls = Array.from({ length: 32 }, () => {
    const c = client.rpc.call(WORKLOAD_METHOD, workloadPayload(7, client.clientId, client.rpc.durableUpTo + 1));
    return Promise.all([settle(c.durable), settle(c.result)]);
  });
  s.stop();
  const outcomes = await within(60_000, Promise.all(calls));
  t.not(outcomes, 'timeout', 'every call settled within 10 s of SIGTERM');
  if (outcomes === 'timeout') return;
  const codes = new Set(outcomes.flat().filter((o) => !o.ok).map((o) => o.code));
  t.ok([...codes].every((c) => c === 'PMRPC_ERR_SERVER_CLOSED'), `a call not answered settles with PMRPC_ERR_SERVER_CLOSED (codes seen: ${[...codes].join(', ') || 'none'})`);
  t.equal(await s.exited, 0, 'the server exits 0');
  t.throws(() => client.rpc.call(WORKLOAD_METHOD, new Uint8Array(32)), { code: 'PMRPC_ERR_DISCONNECTED' }, 'the client is closed afterwards');
});

t.test('calls pending when the node closes reject with PMRPC_ERR_SERVER_CLOSED (none answered)', async (t) => {
  const node = await NodeHost.start({ app: 'rpc', pmPath: undefined, sizeBytes: 4 << 20, appOptions: { handlers: DIGEST_HANDLERS } });
  const client = await RemoteRpcClient.connect({ port: node.address().port });
  // Issued in the same turn as the close: the server's Goodbye leaves before it reads any of them.
  const calls = Array.from({ length: 32 }, (_, i) => settle(client.rpc.call(WORKLOAD_METHOD, workloadPayload(1, client.clientId, i + 1)).result));
  await node.close();
  const outcomes = await within(60_000, Promise.all(calls));
  t.not(outcomes, 'timeout', 'every call settled');
  if (outcomes === 'timeout') return;
  t.same(new Set(outcomes.map((o) => o.code)), new Set(['PMRPC_ERR_SERVER_CLOSED']), 'each with the Goodbye\'s code');
  t.equal(client.connected, false);
});

t.test('a drop without Goodbye: pending calls wait for a reconnect, then settle after reconnectWindowMs', async (t) => {
  const node = await NodeHost.start({ app: 'rpc', pmPath: undefined, sizeBytes: 4 << 20, appOptions: { handlers: DIGEST_HANDLERS } });
  t.teardown(() => node.close());
  await t.rejects(RemoteRpcClient.connect({ port: node.address().port, reconnectWindowMs: -1 }), RangeError);
  // A proxy between client and node: destroying its sockets is a drop without a Goodbye (as a crash is).
  const sockets: net.Socket[] = [];
  let muted = false;
  const proxy = net.createServer((inbound) => {
    const outbound = net.connect(node.address().port, '127.0.0.1');
    sockets.push(inbound, outbound);
    inbound.on('error', () => {});
    outbound.on('error', () => {});
    inbound.pipe(outbound);
    outbound.on('data', (d: Buffer) => void (muted || inbound.write(d)));
  });
  await new Promise<void>((res) => proxy.listen(0, '127.0.0.1', res));
  t.teardown(() => proxy.close());
  const client = await RemoteRpcClient.connect({ port: (proxy.address() as net.AddressInfo).port, reconnectWindowMs: 200 });
  const dropped = new Promise<void>((res) => client.onDisconnect(() => res()));
  muted = true;
  // The proxy forwards the requests but never the answers: they stay pending until the drop.
  const calls = Array.from({ length: 32 }, (_, i) => settle(client.rpc.call(WORKLOAD_METHOD, workloadPayload(2, client.clientId, i + 1)).result));
  await new Promise((res) => setTimeout(res, 50));
  for (const s of sockets) s.destroy();
  await dropped;
  t.equal(client.connected, false, 'disconnected: the calls wait for a reconnect');
  const outcomes = await within(60_000, Promise.all(calls));
  t.not(outcomes, 'timeout', 'every call settled');
  if (outcomes === 'timeout') return;
  t.same(new Set(outcomes.map((o) => o.code)), new Set(['PMRPC_ERR_DISCONNECTED']), 'none was answered: each settles with PMRPC_ERR_DISCONNECTED');
});

t.test('a PRISM-KV client\'s 32 pending operations all settle after the server\'s SIGTERM', async (t) => {
  const pm = await pmFile(t, 'kv');
  const s = await serve(t, ['--pm', pm, '--app', 'kv']);
  const { link, welcome } = await connectPeer({ id: 'kv', app: 'kv', host: '127.0.0.1', port: s.port, options: {} } as never, { name: 'settle-kv' });
  const kv = await connectKvClient(new QueuePair(link), welcome);
  t.teardown(() => kv.qp.close());
  const ops = Array.from({ length: 32 }, (_, i) => settle(kv.put(`k${i}`, new Uint8Array([i]))));
  s.stop();
  const outcomes = await within(60_000, Promise.all(ops));
  t.not(outcomes, 'timeout', 'every operation settled within 10 s of SIGTERM');
  if (outcomes === 'timeout') return;
  const codes = new Set(outcomes.filter((o) => !o.ok).map((o) => o.code));
  t.ok([...codes].every((c) => c === 'PMRPC_ERR_SERVER_CLOSED' || c === 'PMRPC_ERR_LINK_CLOSED'), `failed ones carry the link's code (seen: ${[...codes].join(', ') || 'none'})`);
  t.equal(await s.exited, 0);
});

t.test('a PRISM-RS client\'s 32 pending writes all settle when its replicas stop (their Goodbye)', async (t) => {
  const nodes = await Promise.all([0, 1, 2].map(() => NodeHost.start({ app: 'rs', pmPath: undefined, sizeBytes: 4 << 20 })));
  const spec = { version: 1, nodes: nodes.map((n, i) => ({ id: `r${i}`, app: 'rs', host: '127.0.0.1', port: n.address().port, pm: `/unused/r${i}.pm` })) };
  const rs = await connectRsCluster(spec, { name: 'settle-rs', client: { majorityWaitMs: 500 } });
  t.teardown(() => rs.close());
  const writes = Array.from({ length: 32 }, (_, i) => settle(rs.write(i % 8, new Uint8Array([i]))));
  await Promise.all(nodes.map((n) => n.close()));
  const outcomes = await within(60_000, Promise.all(writes));
  t.not(outcomes, 'timeout', 'every write settled within 10 s');
  if (outcomes === 'timeout') return;
  const codes = new Set(outcomes.filter((o) => !o.ok).map((o) => o.code));
  t.ok([...codes].every((c) => typeof c === 'string' && c.startsWith('PMRPC_ERR_')), `failed ones carry a code (seen: ${[...codes].join(', ') || 'none'})`);
});
