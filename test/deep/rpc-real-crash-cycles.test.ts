// Real crash-restart, longer: repeated kill/restart cycles (3 external SIGKILLs at seeded moments,
// 2 seeded self-kills and 1 right after an acknowledgement) under load from 4 clients and 1 that
// dies with the server at each crash (a new one after each restart), for wflush and srflush, with
// the restart check at every restart. See real-crash.test.ts.
//
// Replay: PMRPC_SEED=<printed seed> npx tap test/deep/rpc-real-crash-cycles.test.ts
import t from 'tap';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
// The compiled harness (as the CLI runs it): tap's TypeScript loader would slow the clients' hot path.
import { runRealCrash } from '../../dist/src/server/crash-rpc.js';
import type { RpcStrategy } from '../../dist/src/rpc/index.js';

const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npx tsc -p tsconfig.json\` (npm test does) first`);
const SEED = Number(process.env.PMRPC_SEED ?? Date.now() % 2 ** 31);
t.comment(`real-crash-cycles seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/deep/rpc-real-crash-cycles.test.ts)`);

for (const [i, strategy] of (['wflush', 'srflush'] as RpcStrategy[]).entries()) {
  t.test(`${strategy}: 5 kill/restart cycles, clients reconnect and resume every time`, async (t) => {
    const seed = SEED + 100 + i;
    const r = await runRealCrash({ mainScript: MAIN, strategy, seed, clients: 4, seconds: 5, externalKills: 3, selfKills: 2, selfKillEvents: [1000, 6000], window: 96, sizeBytes: 4 << 20, drainSeconds: 20 });
    t.comment(`${strategy} seed ${seed}: acked ${r.acked} in ${r.loadSeconds.toFixed(1)} s, crashes ${r.crashes} (${r.externalKills} external, ${r.selfKills} self), re-executed ${r.replayed}, recovery ${r.recoveryMs.toFixed(1)} ms mean, restart ${r.restartMs.toFixed(0)} ms mean`);
    t.same(r.errors, []);
    t.same(r.messages, []);
    t.equal(r.verdict, 'ok');
    t.equal(r.lostAtRestart, 0, 'every restart recovered what the clients had been told was durable');
    t.ok(r.mortalClients >= 1, `clients died with the server (${r.mortalClients}; a replacement may join after the next crash already struck)`);
    t.equal(r.lost, 0, 'acknowledged and lost');
    t.equal(r.duplicates, 0, 'applied twice');
    t.equal(r.outOfOrder + r.corrupt + r.unapplied, 0);
    t.ok(r.crashes >= 4, `at least 4 kill/restart cycles (${r.crashes})`);
    t.equal(r.externalKills, 3);
    // A restart either recovered the same file, or was killed before it listened — by itself
    // (--kill-after-events counts the recovery's own persistence events) or by an external kill
    // that raced a self-kill's restart: a crash during recovery, which the next incarnation must
    // recover from.
    const restarts = r.incarnations.slice(1);
    const crashedInRecovery = restarts.filter((x) => x.recovered === undefined);
    t.ok(restarts.every((x) => (x.recovered !== undefined ? !x.recovered.created : x.end === 'self' || x.end === 'external')), 'every restart recovered the same file or crashed during its recovery');
    t.ok(restarts.at(-1)?.recovered !== undefined && !restarts.at(-1)!.recovered!.created, 'the last incarnation recovered the same file');
    t.comment(`${crashedInRecovery.length} restart(s) crashed during their own recovery`);
    t.equal(r.incarnations.at(-1)?.end, 'stop');
    // The load ran through the cycles (how much it acknowledged depends on the machine's load: no threshold).
    t.ok(r.acked > 0, `${r.acked} acknowledged`);
  });
}
