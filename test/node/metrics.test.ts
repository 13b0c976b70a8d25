// Metrics and health for operators (issue 25, item 9): /healthz, /readyz (503 until the node
// recovered and serves, 200 after), /metrics with pmrpc_ series that move with requests; a failed
// authentication is counted and logged — in process, and on a real `pmrpc serve --metrics-port 0`.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NodeHost, NodeMetrics, authFailureLogger } from '../../src/node/index.js';
import { RemoteRpcClient } from '../../src/server/index.js';
import { DIGEST_HANDLERS } from '../../src/apps/rpc/index.js';
import { WORKLOAD_METHOD, workloadPayload } from '../../src/server/workload.js';
import { VirtualClock } from '../../pmem/index.js';
import type { DisconnectInfo } from '../../src/transport/index.js';
import { spawnServe } from './serve-child.js';


const get = async (port: number, path: string): Promise<{ status: number; body: string }> => {
  const r = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: r.status, body: await r.text() };
};

/** The value of one series (name with its labels as printed), or undefined. */
function series(body: string, name: string): number | undefined {
  const line = body.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

t.test('in process: probes before and after recovery; counters move with requests; an auth failure is counted and logged', async (t) => {
  const metrics = await NodeMetrics.start({ port: 0 });
  t.teardown(() => metrics.close());
  t.equal((await get(metrics.port, '/healthz')).status, 200, '/healthz: the process is up');
  t.equal((await get(metrics.port, '/readyz')).status, 503, '/readyz: not recovered yet');
  const logged: string[] = [];
  const node = await NodeHost.start({ app: 'rpc', pmPath: undefined, sizeBytes: 4 << 20, authToken: 'sesame', appOptions: { handlers: DIGEST_HANDLERS }, onDisconnect: authFailureLogger((l) => logged.push(l)) });
  t.teardown(() => node.close());
  metrics.attach(node);
  t.equal((await get(metrics.port, '/readyz')).status, 200, '/readyz: recovered and serving');
  const before = (await get(metrics.port, '/metrics')).body;
  t.equal(series(before, 'pmrpc_requests_total{app="rpc",strategy="wflush"}') ?? 0, 0, 'no request yet');
  t.equal(series(before, 'pmrpc_ready'), 1);
  t.ok(series(before, 'pmrpc_recovery_seconds') !== undefined, 'recovery time');
  t.equal(series(before, 'pmrpc_recovery_replayed_entries'), 0, 'replayed entries (a fresh region: none)');

  const client = await RemoteRpcClient.connect({ port: node.address().port, authToken: 'sesame' });
  t.teardown(() => client.close({ goodbyeTimeoutMs: 0 }));
  const calls = Array.from({ length: 8 }, (_, i) => client.rpc.call(WORKLOAD_METHOD, workloadPayload(3, client.clientId, i + 1)));
  await Promise.all(calls.map((c) => c.durable));
  await Promise.all(calls.map((c) => c.result));
  const after = (await get(metrics.port, '/metrics')).body;
  // The client gathers the 8 calls of one synchronous run into one chain (one WRITE of their 8 ring slots, one
  // FLUSH): request frames and durable acknowledgements count chains, the NIC's work requests count each WR.
  t.ok((series(after, 'pmrpc_requests_total{app="rpc",strategy="wflush"}') ?? 0) >= 1, 'requests counted');
  t.ok((series(after, 'pmrpc_durable_acks_total{app="rpc",strategy="wflush"}') ?? 0) >= 1, 'durable acknowledgements counted');
  t.ok((series(after, 'pmrpc_durable_latency_seconds_count{app="rpc",strategy="wflush"}') ?? 0) >= 1, 'durable latencies observed');
  t.ok((series(after, 'pmrpc_nic_work_requests_total') ?? 0) >= 2, 'work requests: a WRITE and a FLUSH a chain');
  t.equal(series(after, 'pmrpc_clients_connected'), 1);
  t.ok((series(after, 'pmrpc_nic_flushes_total') ?? 0) >= 1, 'flushes (one per wflush chain)');
  t.ok(series(after, 'pmrpc_nic_cache_entries') !== undefined, 'NIC cache occupancy');
  t.equal(series(after, 'pmrpc_arena_used{app="rpc"}'), 1, 'arena use: one connection-table row');
  t.ok((series(after, 'pmrpc_arena_capacity{app="rpc"}') ?? 0) >= 1);

  await t.rejects(RemoteRpcClient.connect({ port: node.address().port, authToken: 'wrong', name: 'intruder' }), { code: 'PMRPC_ERR_AUTH' });
  // The server's side of the refused connection closes on its own schedule: wait (bounded) for the count.
  let failures = 0;
  for (let i = 0; i < 200 && failures < 1; i++) {
    failures = series((await get(metrics.port, '/metrics')).body, 'pmrpc_auth_failures_total') ?? 0;
    if (failures < 1) await new Promise((r) => setTimeout(r, 25));
  }
  t.equal(failures, 1, 'the auth failure is counted');
  t.equal(logged.length, 1, 'and logged once');
  t.match(logged[0], /^authentication failed: 127\.0\.0\.1:\d+: wrong auth token$/);
  t.equal((await get(metrics.port, '/nope')).status, 404);
  metrics.unready();
  t.equal((await get(metrics.port, '/readyz')).status, 503, 'shutting down: not ready');
});

t.test('without metrics the TCP server has no observer (nothing runs on the request path)', async (t) => {
  const node = await NodeHost.start({ app: 'rpc', pmPath: undefined, sizeBytes: 4 << 20, appOptions: { handlers: DIGEST_HANDLERS } });
  t.teardown(() => node.close());
  t.equal(node.tcp.observer, undefined);
});

t.test('the auth-failure log is rate-limited and says how many lines it held back', async (t) => {
  const clock = new VirtualClock();
  const lines: string[] = [];
  const log = authFailureLogger((l) => lines.push(l), { clock, perSecond: 2 });
  const info: DisconnectInfo = { qpn: undefined, clientName: '', remoteAddress: '10.0.0.9', remotePort: 4000, code: 'PMRPC_ERR_AUTH', message: 'wrong auth token', bytesIn: 10 };
  for (let i = 0; i < 5; i++) log(info);
  log({ ...info, code: 'PMRPC_ERR_LINK_CLOSED' });
  t.equal(lines.length, 2, 'two a second');
  clock.advanceMs(1000);
  log(info);
  t.equal(lines.length, 3);
  t.match(lines[2], /\(3 more held back\)$/);
});

t.test('`pmrpc serve --metrics-port 0`: metricsPort in the start line, /readyz 200, pmrpc_ series, auth failures logged on stderr', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-metrics-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const pm = join(dir, 'rpc.pm');
  await (await NodeHost.start({ app: 'rpc', pmPath: pm, create: true, appOptions: { handlers: DIGEST_HANDLERS } })).close();
  const served = await spawnServe(t, ['--pm', pm, '--port', '0', '--metrics-port', '0', '--auth-token', 'sesame']);
  const { child, exited } = served;
  const start = served.start as { port: number; metricsPort: number };
  t.ok(Number.isInteger(start.metricsPort) && start.metricsPort > 0, `metricsPort ${start.metricsPort}`);
  t.equal((await get(start.metricsPort, '/healthz')).status, 200);
  t.equal((await get(start.metricsPort, '/readyz')).status, 200, 'recovered and serving');
  const client = await RemoteRpcClient.connect({ port: start.port, authToken: 'sesame' });
  const c = client.rpc.call(WORKLOAD_METHOD, workloadPayload(4, client.clientId, 1));
  await c.durable;
  await c.result;
  await client.close();
  const body = (await get(start.metricsPort, '/metrics')).body;
  t.ok((series(body, 'pmrpc_requests_total{app="rpc",strategy="wflush"}') ?? 0) >= 1, 'requests counted');
  t.ok(body.split('\n').filter((l) => l.startsWith('# TYPE pmrpc_')).length >= 10, 'pmrpc_ series');
  await t.rejects(RemoteRpcClient.connect({ port: start.port, authToken: 'bad' }), { code: 'PMRPC_ERR_AUTH' });
  for (let i = 0; i < 200 && !served.stderr().includes('authentication failed'); i++) await new Promise((r) => setTimeout(r, 25));
  t.match(served.stderr(), /authentication failed: 127\.0\.0\.1:\d+/, 'logged on stderr');
  child.kill('SIGTERM');
  t.equal(await exited, 0, 'SIGTERM: exits 0 (the metrics server closes too)');
});
