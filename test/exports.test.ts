// The package's entry points, as a user imports them (by package name, through package.json
// `exports`, from the compiled dist/ that `npm test` builds first): each subpath resolves and
// carries its names; the root keeps what a durable service needs and no longer the testing tools;
// the README's PM example runs as written and shows both images.
import t, { type Test } from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; exports: Record<string, unknown> };

// A consumer outside the package: node_modules/pmrpc → this checkout. Imports go through `exports`.
const consumer = mkdtempSync(join(tmpdir(), 'pmrpc-exports-'));
t.teardown(() => rmSync(consumer, { recursive: true, force: true }));
mkdirSync(join(consumer, 'node_modules'));
symlinkSync(ROOT, join(consumer, 'node_modules', pkg.name), 'dir');
writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));

/** Runs an ES module in the consumer and returns what it prints as JSON. */
function runInConsumer(name: string, source: string): unknown {
  const file = join(consumer, name);
  writeFileSync(file, source);
  const r = spawnSync(process.execPath, [file], { cwd: consumer, encoding: 'utf8', timeout: 240_000 });
  if (r.status !== 0) throw new Error(`${name} exited ${r.status} (${r.signal ?? ''}):\n${r.stderr}`);
  return JSON.parse(r.stdout) as unknown;
}

const SUBPATHS = Object.keys(pkg.exports).filter((k) => k !== './package.json');
const specifier = (subpath: string): string => (subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`);

const listed = runInConsumer(
  'list.mjs',
  `const out = {};\nfor (const s of ${JSON.stringify(SUBPATHS.map(specifier))}) out[s] = Object.keys(await import(s)).sort();\nconsole.log(JSON.stringify(out));\n`,
) as Record<string, string[]>;

const has = (t: Test, spec: string, names: readonly string[]): void => {
  const keys = new Set(listed[spec]);
  for (const n of names) t.ok(keys.has(n), `${spec} exports ${n}`);
};

t.test('every subpath of package.json exports resolves from dist/', async (t) => {
  t.same(Object.keys(listed).sort(), SUBPATHS.map(specifier).sort());
  for (const s of SUBPATHS) t.ok(listed[specifier(s)]!.length > 0, `${specifier(s)} has exports`);
  t.ok(SUBPATHS.includes('./testing') && SUBPATHS.includes('./apps/kv'), 'pmrpc/testing and pmrpc/apps/kv are entry points');
});

t.test('the root keeps what a durable service needs', async (t) => {
  has(t, 'pmrpc', [
    'PmemRegion', 'PmemReadView', 'PmrpcError', 'isPmrpcError', 'ErrorCodes', 'systemClock', 'createPrng',
    'Rnic', 'ProtectionDomain', 'Access', 'QueuePair', 'Wr', 'InProcessFabric', 'FLUSH_STRATEGIES', 'FlushClient', 'StrategyServer', 'NicErrorCodes',
    'RecoveryStore', 'RecoveryErrorCodes', 'RecoveryRefusedError', 'layoutBytes',
    'DurableRpcServer', 'DurableRpcClient', 'connectInProcess', 'reconnectInProcess', 'rpcWorker', 'RPC_STRATEGIES', 'RpcErrorCodes',
    'TcpLink', 'TcpNicServer', 'TransportErrorCodes',
    'RpcNode', 'RemoteRpcClient', 'ServerErrorCodes', 'HandshakeErrorCodes', 'inspectFile',
  ]);
});

t.test('the root no longer exports the testing tools, the apps or layer internals', async (t) => {
  const root = new Set(listed['pmrpc']);
  const gone = [
    'checkLinearizable', 'kvModel', 'litmusCatalogue', 'runLitmus', 'explore', 'MUTANTS', 'EXPLORE_DEFAULTS',
    'KV_MUTANTS', 'runRealCrash', 'WORKLOAD_HANDLERS', 'verifyDigestLog', 'RPC_FAULT_NAMES', 'checkRpcFaults',
    'NO_FAULTS', 'crashImages', 'materialize', 'PrismKvServer', 'PrismKvClient', 'PilafServer', 'DECISION_TABLE', 'decide',
    'encodeMessage', 'FrameReader', 'encodeHelloPayload',
  ];
  for (const n of gone) t.notOk(root.has(n), `pmrpc does not export ${n}`);
  t.ok(root.size < 100, `the root exports ${root.size} runtime names`);
});

t.test('pmrpc/testing carries the checkers, litmus, the crash explorer, timelines, the register and mutants', async (t) => {
  has(t, 'pmrpc/testing', [
    'checkLinearizable', 'kvModel', 'litmusCatalogue', 'runLitmus', 'explore', 'sweep', 'rpcExplorerApp', 'kvExplorerApp', 'MUTANTS', 'findMutant',
    'KV_MUTANTS', 'renderTimelineHtml', 'registerApp', 'runRealCrash', 'WORKLOAD_HANDLERS', 'verifyDigestLog', 'crashImages', 'materialize',
    'RPC_FAULT_NAMES', 'NO_FAULTS',
    'checkListAppend', 'checkBank', 'checkCycle',
  ]);
});

t.test('pmrpc/apps/kv carries PRISM-KV and its baseline; the layers and the transport their own', async (t) => {
  has(t, 'pmrpc/apps/kv', ['PrismKvServer', 'PrismKvClient', 'PilafServer', 'PilafClient', 'KvErrorCodes', 'KV_SERVER_DEFAULTS', 'KV_CLIENT_DEFAULTS']);
  has(t, 'pmrpc/apps/tx', ['TxClient', 'TxResolver', 'txApp', 'TxErrorCodes', 'connectTxCluster', 'TxClusterClient', 'txShardSource']);
  has(t, 'pmrpc', ['connectTxCluster', 'TxClusterClient']);
  has(t, 'pmrpc/transport', ['encodeMessage', 'decodeMessage', 'FrameReader', 'TcpLink', 'TcpNicServer']);
  has(t, 'pmrpc/pmem', ['PmemRegion', 'crashImages', 'materialize']);
  has(t, 'pmrpc/flush', ['Rnic', 'casSucceeds']);
  has(t, 'pmrpc/recovery', ['RecoveryStore', 'DECISION_TABLE', 'recover']);
});

t.test('one class, one identity: the root and the subpaths re-export the same bindings', async (t) => {
  const same = runInConsumer(
    'identity.mjs',
    [
      "import * as root from 'pmrpc';",
      "import * as pmem from 'pmrpc/pmem';",
      "import * as testing from 'pmrpc/testing';",
      "import * as kv from 'pmrpc/apps/kv';",
      'console.log(JSON.stringify([root.PmemRegion === pmem.PmemRegion, testing.crashImages === pmem.crashImages, testing.KV_MUTANTS === kv.KV_MUTANTS]));',
    ].join('\n'),
  );
  t.same(same, [true, true, true]);
});

/** The README's ```ts blocks that import `fromSpecifier`, in order. */
function readmeExample(fromSpecifier: string): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const block = blocks.find((b) => b.includes(`from '${fromSpecifier}';`));
  if (block === undefined) throw new Error(`README has no ts example importing ${fromSpecifier}`);
  return block;
}

// The README's durable RPC example (TypeScript, strict) is compiled and run by
// test/docs/code-blocks.test.ts, with every other ts block of the docs.

t.test("the README's PM example runs as written (pmrpc/pmem)", async (t) => {
  const example = readmeExample('pmrpc/pmem').replace("'a.pm'", JSON.stringify(join(consumer, 'a.pm')));
  const out = runInConsumer(
    'readme-pmem.mjs',
    example.replace(
      '// image.loadU64(0) === 42n in every image; image.loadU64(64) is 0n or 7n',
      'seen.add(`${image.loadU64(0)}/${image.loadU64(64)}`);',
    ).replace('const state = r.crashState();', 'const state = r.crashState();\nconst seen = new Set();') + '\nconsole.log(JSON.stringify([...seen].sort()));\n',
  );
  t.same(out, ['42/0', '42/7']);
});
