// Real crashes of PRISM-RS replicas (issue 12 item 6), on the one real-crash loop
// (src/server/supervisor.ts runRealCrashApp) with PRISM-RS's part (src/cluster/rs-crash.ts
// RS_REAL_CRASH, its crash-test registry record's `realCrash`): three `pmrpc serve --app rs`
// processes on PM files, SIGKILLed during load — one replica at a time (f = 1) and all three at
// once — and restarted on the same file and port (recovery: slots validated, free lists rebuilt, a
// new epoch). Two clients write and read a few blocks the whole time and reconnect by themselves.
// Checkers over the whole history (an operation cut by a kill — NO_MAJORITY, a closed link — may or
// may not have happened): acknowledged writes survive (src/check/lost.ts), durable
// linearizability per block (WGL).
// PMRPC_KILLS sets the number of kills (default 8 in npm test: one replica at a time and all three at once; npm run test:deep runs 51: test/deep/rs-sigkill.test.ts); PMRPC_SEED the seeded choices.
import t from 'tap';
import { fileURLToPath } from 'node:url';

const seed = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
const KILLS = process.env.PMRPC_KILLS !== undefined ? Number(process.env.PMRPC_KILLS) : 8;
t.comment(`seed ${seed}, ${KILLS} kills (PMRPC_SEED / PMRPC_KILLS to change)`);
t.setTimeout(900_000);

// The compiled runner and CLI (the replicas run dist/cli/main.js).
const MAIN = fileURLToPath(new URL('../../../dist/cli/main.js', import.meta.url));
const { runRsRealCrash } = (await import(new URL('../../../dist/src/cluster/index.js', import.meta.url).href)) as typeof import('../../../src/cluster/index.js');

t.test(`SIGKILL of replicas under load (${KILLS} kills: f = 1 and all at once), restart, nothing acknowledged lost`, async (t) => {
  const r = await runRsRealCrash({ mainScript: MAIN, seed, kills: KILLS });
  t.same(r.errors, [], 'no replica died by itself or failed to start, no client error');
  t.ok(r.acknowledged > KILLS, `${r.acknowledged} operations acknowledged across ${r.kills} kills`);
  t.same(r.lost, [], 'no acknowledged write lost');
  t.equal(r.linearizable, true, r.linearizabilityReason ?? 'durably linearizable');
  t.equal(r.kills, KILLS);
  if (KILLS >= 5) t.ok(r.allAtOnce > 0, `every replica killed at once in some round (${r.allAtOnce} of the kills)`);
  t.equal(r.restarts.reduce((a, b) => a + b, 0), KILLS, `every kill was a real SIGKILL and restart (per replica: ${r.restarts.join(', ')})`);
  t.equal(r.violations, 0);
});
