// `pmrpc serve --kill-after-completions N` as a user runs it (issue 15 item 5): the server kills
// itself at its first media change once its N-th message to a client has left the process — a
// crash between acknowledgements the client holds and the write-back after them. Then what
// `pmrpc inspect` reads from the file (a dry-run recovery on a copy) is compared with what the
// client was told, through the one checker (src/check/lost.ts): `raw` with DDIO on lacks
// acknowledged requests (they were only in the dead process's volatile CPU-cache emulation),
// with DDIO off it holds them all. See real-crash-check.test.ts for the harness and the demo.
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RemoteRpcClient } from '../../dist/src/server/client.js';
import { WORKLOAD_METHOD, workloadPayload } from '../../dist/src/server/workload.js';
import { durablePrefixes, lostAcknowledged } from '../../dist/src/check/index.js';

const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npx tsc -p tsconfig.json\` (npm test does) first`);

for (const ddio of ['on', 'off'] as const) {
  t.test(`serve --strategy raw --ddio ${ddio} --kill-after-completions 30 under load: inspect after the kill ${ddio === 'on' ? 'lacks acknowledged requests' : 'holds every acknowledged request'}`, async (t) => {
    t.setTimeout(120_000); // the kill needs load after it is armed: a server left idle would never strike
    const dir = mkdtempSync(join(tmpdir(), 'pmrpc-ackkill-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const pm = join(dir, 'node.pm');
    const child = spawn(process.execPath, [MAIN, 'serve', '--create', '--pm', pm, '--size', '4M', '--port', '0', '--strategy', 'raw', '--ddio', ddio, '--kill-after-completions', '30', '--json'], { stdio: ['ignore', 'pipe', 'inherit'] });
    t.teardown(() => void (child.exitCode === null && child.signalCode === null && child.kill('SIGKILL')));
    const exit = new Promise<{ code: number | null; signal: string | null }>((res) => child.on('exit', (code, signal) => res({ code, signal })));
    const port = await new Promise<number>((res, rej) => {
      let buf = '';
      child.stdout!.on('data', (b: Buffer) => {
        buf += b.toString();
        if (buf.includes('\n')) res((JSON.parse(buf.slice(0, buf.indexOf('\n'))) as { port: number }).port);
      });
      void exit.then((e) => rej(new Error(`serve exited early: ${JSON.stringify(e)}`)));
    });
    const c = await RemoteRpcClient.connect({ port });
    let down = false;
    const dropped = new Promise<void>((res) => c.onDisconnect(() => res()));
    void dropped.then(() => (down = true));
    // Load until the kill: 32 calls in flight, each answer makes room for the next (bounded).
    let seq = 0;
    const issue = (): void => {
      if (down || seq >= 5000) return;
      void c.rpc.call(WORKLOAD_METHOD, workloadPayload(1, c.clientId, ++seq)).result.then(issue, () => undefined);
    };
    for (let i = 0; i < 32; i++) issue();
    await dropped;
    t.same(await exit, { code: null, signal: 'SIGKILL' }, 'the server killed itself');
    const acked = c.rpc.durableUpTo;
    c.close();
    const doc = JSON.parse(spawnSync(process.execPath, [MAIN, 'inspect', pm, '--json'], { encoding: 'utf8' }).stdout) as { connections: Array<{ clientId: number; resumeSeq: number }> };
    const losses = lostAcknowledged([{ clientId: c.clientId, ackedUpTo: acked }], durablePrefixes(doc.connections));
    t.comment(`DDIO ${ddio}: acknowledged up to ${acked}, inspect's resume point ${doc.connections[0]?.resumeSeq}`);
    t.ok(acked >= 1, `acknowledgements reached the client before the kill (${acked})`);
    if (ddio === 'on') t.ok(losses.length === 1 && losses[0]!.seqs.length > 0, `acknowledged and not in the file: ${losses[0]?.seqs.length ?? 0}`);
    else t.same(losses, [], 'every acknowledged request is in the durable prefix');
  });
}

t.test('serve --kill-after-completions 0 is refused', async (t) => {
  const r = spawnSync(process.execPath, [MAIN, 'serve', '--pm', join(tmpdir(), 'pmrpc-never-created.pm'), '--kill-after-completions', '0'], { encoding: 'utf8', timeout: 240_000 });
  t.equal(r.status, 1);
  t.match(r.stderr, /--kill-after-completions must be >= 1, got 0/);
});
