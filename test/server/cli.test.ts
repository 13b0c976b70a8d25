// `pmrpc serve` and `pmrpc inspect` as a user runs them (dist/ is built by pretest): the one JSON
// line of --port 0, the auth refusal (exit 2, PMRPC_ERR_AUTH_REQUIRED), SIGTERM, a restart that
// recovers, inspect (human and --json) never modifying the file, a foreign file refused (exit 1).
import t from 'tap';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RemoteRpcClient } from '../../dist/src/server/client.js';
import { WORKLOAD_METHOD, workloadPayload } from '../../dist/src/server/workload.js';

const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npx tsc -p tsconfig.json\` (npm test does) first`);

const children: ChildProcess[] = [];
t.teardown(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

function serve(args: string[]): Promise<{ child: ChildProcess; line: Record<string, unknown>; exit: Promise<{ code: number | null; signal: string | null }> }> {
  const child = spawn(process.execPath, [MAIN, 'serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const exit = new Promise<{ code: number | null; signal: string | null }>((res) => child.on('exit', (code, signal) => res({ code, signal })));
  return new Promise((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (b: Buffer) => {
      buf += b.toString();
      const nl = buf.indexOf('\n');
      if (nl >= 0) resolve({ child, line: JSON.parse(buf.slice(0, nl)) as Record<string, unknown>, exit });
    });
    void exit.then((e) => reject(new Error(`serve exited early: ${JSON.stringify(e)}`)));
  });
}

const sha = (p: string): string => createHash('sha256').update(readFileSync(p)).digest('hex');

t.test('serve --port 0, durable calls, SIGTERM; restart recovers; inspect reads without writing', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-serve-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const pm = join(dir, 'node.pm');
  const s1 = await serve(['--create', '--pm', pm, '--size', '4M', '--port', '0', '--strategy', 'wrflush', '--keep-results', '--json']);
  t.match(s1.line, { host: '127.0.0.1', pid: s1.child.pid, strategy: 'wrflush', recovered: { created: true } });
  t.ok(Number.isInteger(s1.line.port) && (s1.line.port as number) > 0, `port ${s1.line.port}`);
  const c = await RemoteRpcClient.connect({ port: s1.line.port as number });
  const calls = Array.from({ length: 50 }, (_, i) => c.rpc.call(WORKLOAD_METHOD, workloadPayload(5, c.clientId, i + 1)));
  await Promise.all(calls.map((x) => x.result));
  t.equal(c.rpc.durableUpTo, 50);
  // The server stops first: the client never says goodbye, so its slot is still in the file.
  s1.child.kill('SIGTERM');
  t.same(await s1.exit, { code: 0, signal: null }, 'SIGTERM: orderly exit 0');
  await c.close();

  const before = sha(pm);
  const human = spawnSync(process.execPath, [MAIN, 'inspect', pm], { encoding: 'utf8' });
  t.equal(human.status, 0, human.stderr);
  t.match(human.stdout, /connections: 1\n\s+client 1 \(slot 0\): applied 50/);
  t.match(human.stdout, /recovery would: replay 0 records, invalidate 0 slots, re-execute 0 requests/);
  const json = spawnSync(process.execPath, [MAIN, 'inspect', pm, '--json'], { encoding: 'utf8' });
  t.equal(json.status, 0);
  const doc = JSON.parse(json.stdout) as { header: { sizeBytes: number }; connections: Array<{ clientId: number; ring: { durableUnprocessed: number }; resumeSeq: number }>; appCounter: string; layout: { epoch: number } };
  t.equal(doc.header.sizeBytes, 4 << 20);
  t.same(doc.connections.map((x) => [x.clientId, x.ring.durableUnprocessed, x.resumeSeq]), [[1, 0, 51]]);
  t.equal(doc.appCounter, '50', 'the workload counter: 50 digests');
  t.equal(sha(pm), before, 'inspect never modifies the file');

  // A restart on the same file recovers it; the client reconnects as itself and resumes at 51.
  const s2 = await serve(['--pm', pm, '--port', '0', '--strategy', 'wrflush', '--json']);
  // The node host recovers every open of the App contract, the first one included: each start bumps the epoch once.
  const epoch1 = (s1.line.recovered as { epoch: number }).epoch;
  t.match(s2.line, { node: 'node', app: 'rpc', pm, recovered: { created: false, epoch: epoch1 + 1 } });
  s2.child.kill('SIGKILL'); // a crash right after recovery
  t.equal((await s2.exit).signal, 'SIGKILL');
  const after = JSON.parse(spawnSync(process.execPath, [MAIN, 'inspect', pm, '--json'], { encoding: 'utf8' }).stdout) as typeof doc;
  t.equal(after.layout.epoch, epoch1 + 1, 'the recovery before the crash was durable');
  t.equal(after.appCounter, '50');
});

t.test('a non-loopback host without --auth-token: exit 2 naming PMRPC_ERR_AUTH_REQUIRED, no file created', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-serve-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const pm = join(dir, 'x.pm');
  const r = spawnSync(process.execPath, [MAIN, 'serve', '--pm', pm, '--host', '0.0.0.0', '--port', '0'], { encoding: 'utf8', timeout: 240_000 });
  t.equal(r.status, 2);
  t.match(r.stderr, /PMRPC_ERR_AUTH_REQUIRED/);
  t.equal(r.stdout, '');
  t.notOk(existsSync(pm), 'refused before the file is touched');
});

t.test('--kill-after-events: the server SIGKILLs itself after that many persistence events', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-serve-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const pm = join(dir, 'k.pm');
  const s = await serve(['--create', '--pm', pm, '--size', '4M', '--port', '0', '--kill-after-events', '200', '--json']);
  const c = await RemoteRpcClient.connect({ port: s.line.port as number });
  const dropped = new Promise<void>((res) => c.onDisconnect(() => res()));
  for (let i = 1; i <= 200; i++) c.rpc.call(WORKLOAD_METHOD, workloadPayload(1, c.clientId, i));
  await dropped;
  t.same(await s.exit, { code: null, signal: 'SIGKILL' });
  const doc = JSON.parse(spawnSync(process.execPath, [MAIN, 'inspect', pm, '--json'], { encoding: 'utf8' }).stdout) as { appCounter: string; connections: Array<{ resumeSeq: number }> };
  t.ok(Number(doc.appCounter) < 200, `${doc.appCounter} applied before the kill`);
  t.ok(doc.connections[0]!.resumeSeq - 1 >= c.rpc.durableUpTo, `resume point ${doc.connections[0]!.resumeSeq} covers every acknowledgement (${c.rpc.durableUpTo})`);
  c.close();
});

t.test('inspect: a foreign file and a missing file are refused with a code, exit 1, untouched', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-inspect-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const foreign = join(dir, 'foreign');
  writeFileSync(foreign, Buffer.alloc(8192, 7));
  const before = sha(foreign);
  const r = spawnSync(process.execPath, [MAIN, 'inspect', foreign], { encoding: 'utf8' });
  t.equal(r.status, 1);
  t.match(r.stderr, /PMRPC_ERR_NOT_A_REGION/);
  t.equal(sha(foreign), before);
  const m = spawnSync(process.execPath, [MAIN, 'inspect', join(dir, 'nope')], { encoding: 'utf8' });
  t.equal(m.status, 1);
  t.match(m.stderr, /PMRPC_ERR_IO/);
});
