// The per-strategy real-crash run of test/server/real-crash.test.ts (npm test) and
// test/deep/rpc-real-crash-cpu.test.ts, test/deep/rpc-real-crash-coupled.test.ts (npm run test:deep):
// see real-crash.test.ts.
import t from 'tap';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
// The compiled harness (as the CLI runs it): tap's TypeScript loader would slow the clients' hot path.
import { runRealCrash, type RealCrashOptions } from '../../dist/src/server/crash-rpc.js';
import type { RpcStrategy } from '../../dist/src/rpc/index.js';

const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

/** One short cycle per strategy: an acknowledgement kill, an external kill (and an event-count self-kill if it strikes first). */
export function realCrashSuite(file: string, strategies: readonly RpcStrategy[], extra: Partial<RealCrashOptions> = {}): void {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npx tsc -p tsconfig.json\` (npm test does) first`);
  const SEED = Number(process.env.PMRPC_SEED ?? Date.now() % 2 ** 31);
  t.comment(`real-crash seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap ${file})`);
  for (const [i, strategy] of strategies.entries()) {
    t.test(`${strategy}${extra.strict === true ? ' --strict' : ''}: a kill right after an acknowledgement and an external SIGKILL; every restart recovered what was acknowledged, nothing lost, nothing applied twice`, async (t) => {
      const seed = SEED + i;
      const r = await runRealCrash({ mainScript: MAIN, strategy, seed, clients: 2, mortalClients: 1, seconds: 1.5, externalKills: 1, selfKills: 1, selfKillEvents: [500, 4000], ackKills: 1, window: 64, sizeBytes: 4 << 20, drainSeconds: 20, ...extra });
      t.comment(`${strategy} seed ${seed}: acked ${r.acked}, applied ${r.applied}, crashes ${r.crashes} (${r.externalKills} external, ${r.selfKills} self, ${r.ackKills} of them right after an acknowledgement), ${r.restartChecks} restart checks, ${r.mortalClients} clients died with the server, re-executed ${r.replayed}, recovery ${r.recoveryMs.toFixed(1)} ms, ${Math.round(r.opsPerSecond)}/s`);
      t.equal(r.verdict, 'ok', 'the coded verdict');
      t.same(r.errors, [], 'the run itself went through (servers started, every call answered)');
      t.same(r.messages, [], 'no violation');
      t.equal(r.lost, 0, 'acknowledged and lost');
      t.equal(r.lostAtRestart, 0, 'every restart recovered what the clients had been told was durable');
      t.equal(r.ackKills, 1, 'the server killed itself right after an acknowledgement');
      t.ok(r.restartChecks >= 3, `every client checked at a restart (${r.restartChecks} checks)`);
      t.ok(r.mortalClients >= 1, `clients died with the server (${r.mortalClients})`);
      t.equal(r.duplicates, 0, 'applied twice');
      t.equal(r.outOfOrder + r.corrupt, 0, 'FIFO per client, digests intact');
      t.equal(r.unapplied, 0, 'every request sent was applied after the resumes');
      t.ok(r.externalKills >= 1, 'the external SIGKILL happened');
      t.ok(r.crashes >= 1 && r.incarnations.length === r.crashes + 1, `${r.crashes} crashes, ${r.incarnations.length} incarnations`);
      t.equal(r.incarnations.at(-1)?.end, 'stop', 'the last incarnation stopped in order (no process left)');
      t.ok(r.acked > 100, `pipelined load: ${r.acked} acknowledged`);
      t.equal(r.applied + r.abandoned, r.sent, 'applied = sent, but for what clients that died with the server never had acknowledged');
    });
  }
}
