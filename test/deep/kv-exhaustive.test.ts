// Small-scope exhaustive mode (src/testing/crash/exhaustive.ts) on PRISM-KV: every interleaving
// (sleep-set POR) and every image tuple at every crash point of 2 clients x (PUT + GET) on 1 node,
// keys racing for one probe sequence (seed 16, DDIO on). The register's exhaustive runs are in
// test/testing/exhaustive.test.ts (npm test) and test/deep/register-exhaustive.test.ts.
import t from 'tap';
import { exploreExhaustive, kvExplorerApp } from '../../src/testing/crash/index.js';

t.comment('seed 16 (replay: npx tap test/deep/kv-exhaustive.test.ts; a violation prints its pmrpc crash-test command)');
t.setTimeout(1_200_000);

// Before the GET chain FLUSHed what it read (DESIGN §5), this found a GET of a value a crash took
// back on its 3rd interleaving.
t.test('PRISM-KV, 2 clients x (PUT + GET) on 1 node', async (t) => {
  const r = await exploreExhaustive(() => kvExplorerApp({ clients: 2, opsPerClient: 2, keys: 2 }), { seed: 16, pins: { ddio: true } });
  t.comment(`seed 16: ${JSON.stringify(r.statesExplored)}; ${r.violations[0]?.detail ?? 'no violation'}${r.violations[0] ? `\n  reproduce: ${r.violations[0].replay}` : ''}`);
  t.same(r.violations.map((v) => v.kind), [], 'no violation');
});
