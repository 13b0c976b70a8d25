// The real-crash check has teeth (DESIGN §2.3, §8; issue 15 item 5). At each restart, before any
// client resends, what each client was told was durable must lie in the durable prefix the
// recovery reports; a client that dies with the server never resends. The server kills itself
// right after a seeded number of acknowledgements, at its first media change after them
// (`--kill-after-completions`): for `raw` with DDIO on the acknowledged entry is then only in the
// volatile CPU-cache emulation of the dead process — never written back to the mapped file — so
// the check must fail, every time; with DDIO off the READ's drain put it in the file first, and
// the check must pass.
//
// The mechanism alone (serve --kill-after-completions, then inspect) is in ack-kill.test.ts.
//
// Replay: PMRPC_SEED=<printed seed> npx tap test/server/real-crash-check.test.ts
import t from 'tap';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
// The compiled harness (as the CLI runs it): tap's TypeScript loader would slow the clients' hot path.
import { runRealCrash } from '../../dist/src/server/crash-rpc.js';

const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npx tsc -p tsconfig.json\` (npm test does) first`);
const SEED = Number(process.env.PMRPC_SEED ?? Date.now() % 2 ** 31);
t.comment(`real-crash-check seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/server/real-crash-check.test.ts)`);

// Only the acknowledgement kill: no external kill or event-count self-kill to blur what failed.
const FLAGS = ['--strategy', 'raw', '--seconds', '1', '--crashes', '0', '--self-kills', '0', '--ack-kills', '1', '--mortal-clients', '1', '--clients', '2', '--window', '32'];

t.test('pmrpc demo --strategy raw --ddio on: an acknowledged request is not in the recovered durable prefix — exit 1, PMRPC_ERR_ACKED_LOST', async (t) => {
  const out = await new Promise<{ code: number; stdout: string; stderr: string }>((res) => {
    execFile(process.execPath, [MAIN, 'demo', ...FLAGS, '--ddio', 'on', '--seed', String(SEED)], { timeout: 120_000 }, (err, stdout, stderr) => {
      res({ code: err === null ? 0 : Number((err as { code?: number }).code ?? 1), stdout, stderr });
    });
  });
  t.comment(out.stdout.trim().split('\n').filter((l) => /restart check|lost|died|violation|verdict/.test(l)).join('\n'));
  t.equal(out.code, 1, `exit 1: ${out.stderr.slice(-500)}`);
  t.match(out.stdout, /1 right after a seeded number of acknowledgements, before the next write-back/, 'the server killed itself right after an acknowledgement');
  t.match(out.stdout, /restart check \(before any resend\): [1-9]\d* client checks/, 'the report states the restart check');
  const lost = /acknowledged but lost: +(\d+) \((\d+) at a restart/.exec(out.stdout);
  t.ok(lost !== null && Number(lost[1]) > 0 && Number(lost[2]) > 0, `acknowledged requests lost, found at the restart before any resend: ${lost?.[0]}`);
  t.match(out.stdout, /violation: client \d+ was told durable up to \d+; the durable prefix recovered by incarnation 2 lacks/);
  t.match(out.stdout, /verdict: FAIL \(PMRPC_ERR_ACKED_LOST\)/, 'the coded verdict');
});

t.test('raw with DDIO off: the READ drained the entry into the file before it acknowledged — the check passes', async (t) => {
  const r = await runRealCrash({ mainScript: MAIN, strategy: 'raw', ddio: false, seed: SEED + 1, clients: 2, mortalClients: 1, seconds: 1, externalKills: 0, selfKills: 0, ackKills: 1, window: 32, sizeBytes: 4 << 20, drainSeconds: 20 });
  t.comment(`raw/DDIO off seed ${SEED + 1}: acked ${r.acked}, lost ${r.lost}, ${r.restartChecks} restart checks, ${r.mortalClients} died with the server`);
  t.equal(r.ackKills, 1, 'the server killed itself right after an acknowledgement');
  t.equal(r.restartChecks, 3, 'each client checked at the restart, the one that died with the server included');
  t.equal(r.mortalClients, 1, 'one client died with the server');
  t.same(r.errors, []);
  t.same(r.messages, []);
  t.equal(r.lost, 0);
  t.equal(r.verdict, 'ok');
  t.equal(r.applied + r.abandoned, r.sent, 'every request applied, but what the client that died with the server never had acknowledged');
});
