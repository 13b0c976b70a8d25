// `pmrpc demo --app kv --nodes 3` (DESIGN §8 "real crashes", src/server/crash-kv.ts runKvRealCrash):
// a PRISM-KV cluster of three serve processes, kill rounds of seeded subsets of the nodes plus a
// self-kill, restarts on each node's own file, then per node: nothing acknowledged lost, durably
// linearizable, the app's audit clean. Short on purpose; the seed is printed and replays.
import t from 'tap';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npx tsc -p tsconfig.json\` (npm test does) first`);
const SEED = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 11;
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/server/kv-cluster-crash.test.ts, or pmrpc demo --app kv --nodes 3 --seed ${SEED})`);
t.setTimeout(600_000);

t.test('demo --app kv --nodes 3: kills of node subsets, restarts, every node checked', async (t) => {
  const out = await new Promise<{ code: number; stdout: string; stderr: string }>((res) => {
    execFile(process.execPath, [MAIN, 'demo', '--app', 'kv', '--nodes', '3', '--seconds', '3', '--crashes', '2', '--self-kills', '1', '--seed', String(SEED), '--json'], { timeout: 300_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      res({ code: err === null ? 0 : Number((err as { code?: number }).code ?? 1), stdout, stderr });
    });
  });
  t.equal(out.code, 0, out.stderr.slice(-2000));
  const r = JSON.parse(out.stdout) as { seed: number; crashes: number; externalKills: number; violations: number; lost: number; acknowledged: number; errors: string[]; killRounds: Array<{ nodes: number[] }>; nodes: Array<{ node: number; linearizable: unknown; lost: string[]; auditProblems: string[]; operations: number }> };
  t.comment(`${r.acknowledged} acknowledged, ${r.crashes} crashes (${r.externalKills} external in ${r.killRounds.length} rounds: ${JSON.stringify(r.killRounds.map((k) => k.nodes))})`);
  t.equal(r.seed, SEED);
  t.equal(r.nodes.length, 3, 'three nodes');
  t.ok(r.externalKills >= 2, `kill rounds killed nodes (${r.externalKills})`);
  t.same(r.errors, [], 'no run errors');
  t.equal(r.lost, 0, 'nothing acknowledged lost');
  for (const n of r.nodes) {
    t.equal(n.linearizable, true, `node kv${n.node}: durably linearizable`);
    t.same(n.auditProblems, [], `node kv${n.node}: the app's audit of the final file is clean`);
    t.ok(n.operations > 0, `node kv${n.node} served operations (${n.operations})`);
  }
  t.equal(r.violations, 0);
});

// The checks have teeth: PRISM-KV clients whose PUT chain skips the FLUSH of the index slot
// (acknowledged before durable) must be caught — an acknowledged PUT lost, or a history that is
// not durably linearizable — once a kill round strikes.
t.test('the real-crash checks catch a mutant (dropIndexFlush: acknowledged before durable)', async (t) => {
  const { runKvRealCrash } = await import('../../dist/src/server/crash-kv.js');
  const seed = SEED + 1;
  // One node, so every kill round strikes it, after it acknowledged 3 PUTs (whatever the machine's
  // speed): the mutant loses what its incarnation acknowledged.
  const r = await runKvRealCrash({ mainScript: MAIN, nodes: 1, clients: 3, keysPerNode: 4, seconds: 3, seed, killRounds: 2, selfKills: 0, putsBeforeKill: 3, kvFaults: { dropIndexFlush: true } });
  const lost = r.nodes.reduce((a, n) => a + n.lost.length, 0);
  const nonLin = r.nodes.filter((n) => n.linearizable === false).length;
  t.comment(`mutant seed ${seed}: ${r.acknowledged} acknowledged, ${r.crashes} crashes, ${lost} lost, ${nonLin} non-linearizable nodes${lost > 0 ? ` (${r.nodes.flatMap((n) => n.lost)[0]})` : ''}`);
  t.ok(r.externalKills >= 2, 'the kill rounds happened');
  t.ok(lost > 0 || nonLin > 0, 'the mutant is caught');
});
