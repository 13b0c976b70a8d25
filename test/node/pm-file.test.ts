// One owner per PM file, and `serve` apart from `pmrpc format` (issue 25 items 1, 2, 8): two
// `serve` on one file (the second exits 1 with PMRPC_ERR_FILE_LOCKED naming the first's pid, the
// first keeps acknowledging; a reader takes no lock); serve refuses a missing or empty file without
// --create; format refuses an existing file naming --force; flags of another app and a --size that
// differs from the file's are refused with codes.
import t from 'tap';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RemoteRpcClient } from '../../dist/src/server/client.js';
import { WORKLOAD_METHOD, workloadPayload } from '../../dist/src/server/workload.js';
import { PmemRegion } from '../../pmem/index.js';
import { formatNodeFile, NodeHost } from '../../src/node/index.js';
import { inspectFile } from '../../src/node/index.js';
import { sizeOption } from '../../cli/serve.js';

const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npx tsc -p tsconfig.json\` (npm test does) first`);

const children: ChildProcess[] = [];
t.teardown(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-pmfile-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function serve(args: string[]): Promise<{ child: ChildProcess; line: Record<string, unknown>; exit: Promise<{ code: number | null; signal: string | null }> }> {
  const child = spawn(process.execPath, [MAIN, 'serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const exit = new Promise<{ code: number | null; signal: string | null }>((res) => child.on('exit', (code, signal) => res({ code, signal })));
  let err = '';
  child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
  return new Promise((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (b: Buffer) => {
      buf += b.toString();
      const nl = buf.indexOf('\n');
      if (nl >= 0) resolve({ child, line: JSON.parse(buf.slice(0, nl)) as Record<string, unknown>, exit });
    });
    void exit.then((e) => reject(new Error(`serve exited early: ${JSON.stringify(e)} ${err}`)));
  });
}

function cli(args: string[]): { status: number | null; signal: string | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [MAIN, ...args], { encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

async function durableCalls(c: RemoteRpcClient, from: number, n: number): Promise<void> {
  const calls = Array.from({ length: n }, (_, i) => c.rpc.call(WORKLOAD_METHOD, workloadPayload(5, c.clientId, from + i)));
  await Promise.all(calls.map((x) => x.result));
}

t.test('two serve on one PM file: the second exits 1 with PMRPC_ERR_FILE_LOCKED naming the first, which keeps acknowledging', async (t) => {
  const pm = join(tempDir(), 'node.pm');
  const s1 = await serve(['--create', '--pm', pm, '--size', '4M', '--port', '0', '--json']);
  const c = await RemoteRpcClient.connect({ port: s1.line.port as number });
  await durableCalls(c, 1, 30);
  t.equal(c.rpc.durableUpTo, 30);
  const second = cli(['serve', '--create', '--pm', pm, '--port', '0', '--json']);
  t.equal(second.status, 1, 'second serve: exit 1');
  t.match(second.stderr, new RegExp(`PMRPC_ERR_FILE_LOCKED: ${pm.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is in use by process ${s1.child.pid}\\b`));
  t.equal(second.stdout, '', 'no start line');
  // A reader takes no lock: inspect reads the live file.
  t.doesNotThrow(() => inspectFile(pm), 'inspect is not refused by the owner\'s lock');
  await durableCalls(c, 31, 30);
  t.equal(c.rpc.durableUpTo, 60, 'the first serve acknowledged 30 more durable requests after the refusals');
  s1.child.kill('SIGTERM');
  t.same(await s1.exit, { code: 0, signal: null });
  await c.close();
  t.equal(inspectFile(pm).appCounter, '60', 'every acknowledged request is in the file');
  // The lock went with the process: a new owner starts.
  const s2 = await NodeHost.start({ app: 'rpc', pmPath: pm });
  t.equal(s2.recovery.created, false);
  await s2.close();
});

t.test('library: a second NodeHost on the same file in one process is refused; the lock goes with close()', async (t) => {
  const pm = join(tempDir(), 'lib.pm');
  const a = await NodeHost.start({ app: 'kv', pmPath: pm, create: true, sizeBytes: 1 << 20 });
  await t.rejects(NodeHost.start({ app: 'kv', pmPath: pm }), { code: 'PMRPC_ERR_FILE_LOCKED', message: new RegExp(`in use by process ${process.pid}\\b`) });
  t.throws(() => PmemRegion.open(pm), { code: 'PMRPC_ERR_FILE_LOCKED' });
  t.throws(() => PmemRegion.format(pm, 1 << 20, () => {}, { replace: true }), { code: 'PMRPC_ERR_FILE_LOCKED' }, 'format --force of a served file is refused');
  t.equal(PmemRegion.readHeader(pm).sizeBytes, 1 << 20, 'readHeader needs no lock');
  await a.close();
  const b = await NodeHost.start({ app: 'kv', pmPath: pm });
  t.equal(b.recovery.created, false);
  await b.close();
});

t.test('serve without --create: a missing file is PMRPC_ERR_PM_FILE_MISSING (never created), an empty one PMRPC_ERR_NOT_FORMATTED', async (t) => {
  const dir = tempDir();
  const missing = join(dir, 'missing.pm');
  const r = cli(['serve', '--pm', missing, '--app', 'kv']);
  t.equal(r.status, 1);
  t.match(r.stderr, /PMRPC_ERR_PM_FILE_MISSING: .* does not exist .*pmrpc format .* --app kv/);
  t.notOk(existsSync(missing), 'no file created');
  const empty = join(dir, 'empty.pm');
  writeFileSync(empty, '');
  const e = cli(['serve', '--pm', empty, '--app', 'kv']);
  t.equal(e.status, 1);
  t.match(e.stderr, /PMRPC_ERR_NOT_FORMATTED: .* is empty \(0 bytes\): not formatted; create it with `pmrpc format/);
  t.equal(statSync(empty).size, 0, 'the empty file is untouched');
  t.throws(() => inspectFile(empty), { code: 'PMRPC_ERR_NOT_FORMATTED' }, 'inspect says the same of an empty file');
  // format completes an empty file (nothing to lose) without --force; serve then starts.
  const f = cli(['format', empty, '--app', 'kv', '--size', '1M']);
  t.equal(f.status, 0, f.stderr);
  t.match(f.stdout, /^formatted .*empty\.pm: app kv, 1048576 data bytes, uuid /);
  const s = await NodeHost.start({ app: 'kv', pmPath: empty });
  t.equal(s.recovery.created, false);
  await s.close();
});

t.test('format refuses an existing file naming --force; --force replaces it; a header without an app layout is refused by serve naming the remedy', async (t) => {
  const dir = tempDir();
  const pm = join(dir, 'f.pm');
  t.equal(cli(['format', pm, '--app', 'rpc', '--size', '2M']).status, 0);
  const again = cli(['format', pm, '--app', 'rpc']);
  t.equal(again.status, 1);
  t.match(again.stderr, /PMRPC_ERR_REGION_EXISTS: .* already exists \(2101248 bytes\); .*format --force/);
  const forced = cli(['format', pm, '--app', 'kv', '--size', '1M', '--force', '--json']);
  t.equal(forced.status, 0, forced.stderr);
  t.match(JSON.parse(forced.stdout), { pm, app: 'kv', sizeBytes: 1 << 20 });
  t.equal(statSync(pm).size, 4096 + (1 << 20));
  // What an older pmrpc's interrupted first start left: a region header, no app layout.
  const half = join(dir, 'half.pm');
  PmemRegion.create(half, 1 << 20).close();
  const s = cli(['serve', '--pm', half, '--app', 'kv']);
  t.equal(s.status, 1);
  t.match(s.stderr, /PMRPC_ERR_KV_NOT_FORMATTED: .*holds no complete kv layout; .*`pmrpc format .*half\.pm --app kv --force`/);
  t.throws(() => formatNodeFile(half, 'kv', {}, 1 << 20), { code: 'PMRPC_ERR_REGION_EXISTS', message: /--force/ });
  formatNodeFile(half, 'kv', {}, 1 << 20, { replace: true });
  const ok = await NodeHost.start({ app: 'kv', pmPath: half });
  await ok.close();
  // Flags of another app are refused, by format and serve.
  const foreign = cli(['format', join(dir, 'g.pm'), '--app', 'kv', '--max-clients', '8']);
  t.match(foreign.stderr, /PMRPC_ERR_OPTION_NOT_APPLICABLE: --max-clients applies to the rpc app, not to kv/);
  t.notOk(existsSync(join(dir, 'g.pm')));
  const strat = cli(['serve', '--pm', half, '--app', 'kv', '--strategy', 'raw']);
  t.equal(strat.status, 1);
  t.match(strat.stderr, /PMRPC_ERR_OPTION_NOT_APPLICABLE: --strategy applies to the rpc app, not to kv: drop it/);
  const size = cli(['serve', '--pm', half, '--app', 'kv', '--size', '2M', '--port', '0']);
  t.equal(size.status, 1);
  t.match(size.stderr, /PMRPC_ERR_SIZE_MISMATCH: .*half\.pm holds 1048576 data bytes, --size says 2097152/);
  t.throws(() => sizeOption('size')('12Q'), { code: 'PMRPC_ERR_REGION_SIZE' });
  t.throws(() => sizeOption('size')('99999999999999999999'), { code: 'PMRPC_ERR_REGION_SIZE' });
});


t.test('serve --strict --journal-bytes: the journal beside the PM file is that size, 0 keeps none; bad values and the flag without --strict are PMRPC_ERR_BAD_OPTION', async (t) => {
  const dir = tempDir();
  for (const [flag, size] of [['64K', 65536], ['0', 0]] as const) {
    const pm = join(dir, `j${size}.pm`);
    const s = await serve(['--create', '--pm', pm, '--strict', '--journal-bytes', flag]);
    const c = await RemoteRpcClient.connect({ host: '127.0.0.1', port: s.line.port as number });
    await durableCalls(c, 1, 8);
    if (size === 0) t.notOk(existsSync(`${pm}.journal`), '--journal-bytes 0: no journal (the strict syncs msync the PM file)');
    else t.equal(statSync(`${pm}.journal`).size, size, `--journal-bytes ${flag}: a ${size}-byte journal`);
    await c.close();
    s.child.kill('SIGTERM');
    t.equal((await s.exit).code, 0);
  }
  for (const [args, message] of [
    [['--strict', '--journal-bytes', '5000'], /PMRPC_ERR_BAD_OPTION: --journal-bytes must be 0 \(no journal\) or a multiple of 4096 of at least 8192/],
    [['--strict', '--journal-bytes', '4K'], /PMRPC_ERR_BAD_OPTION: --journal-bytes must be 0/],
    [['--journal-bytes', '64K'], /PMRPC_ERR_BAD_OPTION: --journal-bytes applies with --strict only/],
  ] as const) {
    const pm = join(dir, 'bad.pm');
    const r = cli(['serve', '--create', '--pm', pm, ...args]);
    t.equal(r.status, 1, args.join(' '));
    t.match(r.stderr, message);
    t.notOk(existsSync(pm), `${args.join(' ')}: no file created`);
  }
});
