// Across processes (issue 5, item 2): the server is a child process running the compiled code
// (test/transport/fixtures/nic-server.mjs); clients in this process reach it over 127.0.0.1.
// A SIGKILL of the server is a real crash: what a FLUSH(persistent) acknowledged is in the region
// file afterwards, a WRITE that was never flushed is not (DESIGN §2.1, eviction off).
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { QueuePair, Wr } from '../../flush/index.js';
import { PmemRegion, type PmrpcError } from '../../pmem/index.js';
import { TcpLink } from '../../src/transport/index.js';
import { fill } from './fixtures/helpers.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/nic-server.mjs', import.meta.url));
const COMPILED = fileURLToPath(new URL('../../dist/src/transport/index.js', import.meta.url));
if (!existsSync(COMPILED)) throw new Error(`${COMPILED} is missing: run \`npx tsc -p tsconfig.json\` (npm test does) first`);

const REGION = 1 << 16;

async function startServer(t: Tap.Test): Promise<{ child: ChildProcess; port: number; rkey: number; path: string; exited: Promise<{ code: number | null; signal: string | null }> }> {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-proc-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'pm');
  const child = spawn(process.execPath, [FIXTURE, path, String(REGION)], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<{ code: number | null; signal: string | null }>((res) => child.on('exit', (code, signal) => res({ code, signal })));
  const first = await new Promise<string>((res, rej) => {
    let buf = '';
    const timer = setTimeout(() => rej(new Error(`the server printed nothing in 60 s; stderr: ${stderr}`)), 60_000);
    child.stdout!.on('data', (c: Buffer) => {
      buf += c.toString();
      const nl = buf.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(timer);
        res(buf.slice(0, nl));
      }
    });
    child.on('exit', (code) => rej(new Error(`the server exited (${code}) before listening; stderr: ${stderr}`)));
  });
  const { port, rkey } = JSON.parse(first) as { port: number; rkey: number };
  return { child, port, rkey, path, exited };
}

t.test('a server in another process: verbs and flushes over TCP; SIGKILL keeps what FLUSH(persistent) acknowledged', async (t) => {
  const s = await startServer(t);
  const { link, welcome } = await TcpLink.connect({ port: s.port, name: 'parent' });
  const info = JSON.parse(new TextDecoder().decode(welcome)) as { rkey: number; name: string; pid: number };
  t.same([info.rkey, info.name, info.pid], [s.rkey, 'parent', s.child.pid], 'the Welcome comes from the child');
  const qp = new QueuePair(link);
  const { link: link2 } = await TcpLink.connect({ port: s.port, name: 'second' });
  const qp2 = new QueuePair(link2);
  const durable = fill(256, 0xd7);
  const volatile = fill(64, 0x5e);
  const cs = await qp.postChain([Wr.write({ rkey: s.rkey, addr: 4096 }, durable), Wr.flush('persistent', s.rkey, { addr: 4096, len: durable.length })]);
  t.same(cs.map((c) => c.status), ['ok', 'ok'], 'WRITE + FLUSH(persistent) in one frame');
  await qp2.write({ rkey: s.rkey, addr: 8192 }, volatile);
  t.same(await qp.read({ rkey: s.rkey, addr: 8192 }, 64), volatile, 'one client reads what the other wrote');
  t.equal((await qp2.faa({ rkey: s.rkey, addr: 0 }, 5n)) + (await qp.faa({ rkey: s.rkey, addr: 0 }, 1n)), 5n);
  const causes = [link, link2].map((l) => new Promise<PmrpcError | undefined>((res) => l.onClose(res)));
  s.child.kill('SIGKILL');
  t.same(await s.exited, { code: null, signal: 'SIGKILL' });
  t.same((await Promise.all(causes)).map((e) => e?.code), ['PMRPC_ERR_LINK_CLOSED', 'PMRPC_ERR_LINK_CLOSED'], 'both clients learn the connection is gone');
  const r = PmemRegion.open(s.path);
  t.teardown(() => r.close());
  t.same(r.load(4096, durable.length), durable, 'the flushed write survived the crash');
  t.same(r.load(8192, 64), new Uint8Array(64), 'the unflushed write did not (it was only in volatile memory)');
});

t.test('a server in another process shuts down on SIGTERM: clients hear PMRPC_ERR_SERVER_CLOSED', async (t) => {
  const s = await startServer(t);
  const { link } = await TcpLink.connect({ port: s.port });
  const qp = new QueuePair(link);
  await qp.write({ rkey: s.rkey, addr: 128 }, fill(8, 1));
  const cause = new Promise<PmrpcError | undefined>((res) => link.onClose(res));
  s.child.kill('SIGTERM');
  t.equal((await cause)?.code, 'PMRPC_ERR_SERVER_CLOSED');
  t.same(await s.exited, { code: 0, signal: null });
  const r = PmemRegion.open(s.path);
  t.teardown(() => r.close());
  t.same(r.load(128, 8), fill(8, 1), 'an orderly close writes everything back');
});
