// Every bad cluster file is refused with its exact code before anything starts.
import t from 'tap';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClusterErrorCodes, loadClusterFile, parseClusterSpec, resolveAuthToken, Cluster } from '../../src/cluster/index.js';
import { cli } from './helpers.js';

const node = (over: Record<string, unknown> = {}): Record<string, unknown> => ({ id: 'a', app: 'kv', host: '127.0.0.1', port: 7000, pm: 'a.pm', ...over });
const doc = (nodes: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> => ({ version: 1, nodes, ...extra });

const cases: Array<[string, unknown, string, RegExp]> = [
  ['unknown app', doc([node({ app: 'nope' })]), ClusterErrorCodes.UNKNOWN_APP, /nodes\[0\]\.app: unknown app "nope"/],
  ['duplicate id', doc([node(), node({ port: 7001, pm: 'b.pm' })]), ClusterErrorCodes.DUPLICATE_ID, /nodes\[1\]\.id a is used twice/],
  ['duplicate port', doc([node(), node({ id: 'b', pm: 'b.pm' })]), ClusterErrorCodes.DUPLICATE_PORT, /both listen on 127\.0\.0\.1:7000/],
  ['duplicate pm', doc([node(), node({ id: 'b', port: 7001 })]), ClusterErrorCodes.DUPLICATE_PM, /share the PM file/],
  ['missing pm', doc([{ id: 'a', app: 'kv', port: 7000 }]), ClusterErrorCodes.MISSING_FIELD, /nodes\[0\]\.pm is missing/],
  ['missing nodes', { version: 1 }, ClusterErrorCodes.MISSING_FIELD, /nodes is missing/],
  ['missing version', { nodes: [node()] }, ClusterErrorCodes.MISSING_FIELD, /version is missing/],
  ['bad version', doc([node()], { version: 2 }), ClusterErrorCodes.BAD_FIELD, /version must be 1/],
  ['no nodes', doc([]), ClusterErrorCodes.BAD_FIELD, /nodes must be a non-empty array/],
  ['port 0', doc([node({ port: 0 })]), ClusterErrorCodes.BAD_FIELD, /port must be an integer in \[1, 65535\]/],
  ['bad id', doc([node({ id: '../x' })]), ClusterErrorCodes.BAD_FIELD, /id must match/],
  ['bad option value', doc([node({ options: { system: 'redis' } })]), ClusterErrorCodes.BAD_FIELD, /options\.system has a bad value/],
  ['unknown node field', doc([node({ prot: 1 })]), ClusterErrorCodes.UNKNOWN_FIELD, /nodes\[0\]\.prot is not a node field/],
  ['unknown option', doc([node({ options: { sise: 1 } })]), ClusterErrorCodes.UNKNOWN_FIELD, /options\.sise is not a node option/],
  ['unknown top field', doc([node()], { extra: 1 }), ClusterErrorCodes.UNKNOWN_FIELD, /unknown field extra/],
  ['token in the file', doc([node()], { authToken: 's3cret' }), ClusterErrorCodes.TOKEN_IN_FILE, /never holds the auth token/],
  ['token in a node', doc([node({ options: { token: 'x' } })]), ClusterErrorCodes.TOKEN_IN_FILE, /nodes\.0\.options\.token/],
  ['not an object', [1, 2], ClusterErrorCodes.BAD_FIELD, /a cluster file is a JSON object/],
];

for (const [name, d, code, msg] of cases) {
  t.test(`bad cluster file: ${name} → ${code}`, async (t) => {
    t.throws(() => parseClusterSpec(d), { code, message: msg });
  });
}

t.test('files: unreadable and not JSON; relative PM paths resolve beside the file', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-cluster-bad-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  t.throws(() => loadClusterFile(join(dir, 'absent.json')), { code: ClusterErrorCodes.UNREADABLE });
  writeFileSync(join(dir, 'x.json'), '{ nodes: ');
  t.throws(() => loadClusterFile(join(dir, 'x.json')), { code: ClusterErrorCodes.NOT_JSON });
  writeFileSync(join(dir, 'ok.json'), JSON.stringify(doc([node({ host: undefined })])));
  const s = loadClusterFile(join(dir, 'ok.json'));
  t.equal(s.nodes[0]!.pm, join(dir, 'a.pm'));
  t.equal(s.nodes[0]!.host, '127.0.0.1', 'host defaults to loopback');
  await t.rejects(Cluster.connect(s, { nodes: ['zz'] }), { code: ClusterErrorCodes.UNKNOWN_NODE });
});

t.test('the CLI refuses a bad file with its code, exit 1, and starts nothing', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-cluster-bad-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'dup.json');
  writeFileSync(file, JSON.stringify(doc([node({ pm: 'a.pm' }), node({ pm: 'b.pm', port: 7001 })])));
  const r = await cli(['cluster', 'up', file]);
  t.equal(r.code, 1);
  t.match(r.stderr, /PMRPC_ERR_CLUSTER_DUPLICATE_ID/);
  t.notOk(existsSync(join(dir, '.dup.state')), 'no state dir: nothing was started');
  t.notOk(existsSync(join(dir, 'a.pm')), 'no PM file was created');
  writeFileSync(file, JSON.stringify(doc([node()])));
  const k = await cli(['cluster', 'kill', file, 'zz']);
  t.equal(k.code, 1);
  t.match(k.stderr, /PMRPC_ERR_CLUSTER_UNKNOWN_NODE/);
});

t.test('the auth token: a token file, else PMRPC_AUTH_TOKEN; never the cluster file', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-token-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'tok'), 'from-file\n');
  t.equal(resolveAuthToken({ authTokenFile: join(dir, 'tok') }, { PMRPC_AUTH_TOKEN: 'from-env' }), 'from-file');
  t.equal(resolveAuthToken({}, { PMRPC_AUTH_TOKEN: 'from-env' }), 'from-env');
  t.equal(resolveAuthToken({}, {}), undefined);
  writeFileSync(join(dir, 'empty'), '\n');
  t.throws(() => resolveAuthToken({ authTokenFile: join(dir, 'empty') }, {}), { code: 'PMRPC_ERR_BAD_TOKEN_FILE' });
  t.throws(() => resolveAuthToken({ authTokenFile: join(dir, 'absent') }, {}), { code: 'PMRPC_ERR_BAD_TOKEN_FILE' });
});
