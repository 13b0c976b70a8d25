// Real crash-restart (DESIGN §8, issue 5 item 4): a `pmrpc serve` child process per incarnation on
// one PM file, clients in this process with many durable RPCs in flight over TCP (127.0.0.1), a
// self-kill after a seeded number of persistence events and an external SIGKILL at a seeded moment,
// restarts with recovery, clients reconnecting and resuming; then the digest log in PM is checked:
// nothing acknowledged lost, nothing applied twice, FIFO per client, every call answered.
// One short cycle per strategy that claims durability.
//
// Replay: PMRPC_SEED=<printed seed> npx tap test/server/real-crash.test.ts
import t from 'tap';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
// The compiled harness (as the CLI runs it): tap's TypeScript loader would slow the clients' hot path.
import { runRealCrash } from '../../dist/src/server/harness.js';
import type { RpcStrategy } from '../../dist/src/rpc/index.js';

const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npx tsc -p tsconfig.json\` (npm test does) first`);
const SEED = Number(process.env.PMRPC_SEED ?? Date.now() % 2 ** 31);
t.comment(`real-crash seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/server/real-crash.test.ts)`);

const STRATEGIES: RpcStrategy[] = ['wflush', 'sflush', 'wrflush', 'srflush', 'gpspm', 'farm', 'darpc'];

for (const [i, strategy] of STRATEGIES.entries()) {
  t.test(`${strategy}: a self-kill after seeded persistence events and an external SIGKILL; nothing acknowledged lost, nothing applied twice`, async (t) => {
    const seed = SEED + i;
    const r = await runRealCrash({ mainScript: MAIN, strategy, seed, clients: 3, seconds: 1.5, externalKills: 1, selfKills: 1, selfKillEvents: [500, 4000], window: 64, drainSeconds: 20 });
    t.comment(`${strategy} seed ${seed}: acked ${r.acked}, applied ${r.applied}, crashes ${r.crashes} (${r.externalKills} external, ${r.selfKills} self), re-executed ${r.replayed}, recovery ${r.recoveryMs.toFixed(1)} ms, ${Math.round(r.opsPerSecond)}/s`);
    t.same(r.errors, [], 'the run itself went through (servers started, every call answered)');
    t.same(r.messages, [], 'no violation');
    t.equal(r.lost, 0, 'acknowledged and lost');
    t.equal(r.duplicates, 0, 'applied twice');
    t.equal(r.outOfOrder + r.corrupt, 0, 'FIFO per client, digests intact');
    t.equal(r.unapplied, 0, 'every request sent was applied after the resumes');
    t.ok(r.externalKills >= 1, 'the external SIGKILL happened');
    t.ok(r.crashes >= 1 && r.incarnations.length === r.crashes + 1, `${r.crashes} crashes, ${r.incarnations.length} incarnations`);
    t.equal(r.incarnations.at(-1)?.end, 'stop', 'the last incarnation stopped in order (no process left)');
    t.ok(r.acked > 100, `pipelined load: ${r.acked} acknowledged`);
    t.equal(r.applied, r.sent, 'applied = sent');
  });
}
