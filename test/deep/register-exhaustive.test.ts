// Small-scope exhaustive mode on the register on 2 nodes (client 0 writes once, client 1 reads
// once): every interleaving (sleep-set POR) and every image tuple at every crash point. The
// correct protocol passes, and the exploration completes within the bound.
// Measured when written (seed 1, DDIO on): with POR 1568 interleavings (1336 of them cut asleep),
// 5744 crash points, 9448 image tuples, ~25 s; without POR, interleavings alone pass 50,000
// (refused at statesMax 50,000 after ~110 s): a reduction factor above 30.
import t from 'tap';
import { exploreExhaustive, registerExplorerApp } from '../../src/testing/crash/index.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (PMRPC_SEED=<n> to replay another)`);

t.test('register on 2 nodes: every interleaving and image, no violation', async (t) => {
  const r = await exploreExhaustive(() => registerExplorerApp({ nodes: 2, clients: 2, opsPerClient: 1, pattern: 'writer-reader' }), { seed: SEED, pins: { ddio: true }, statesMax: 100_000 });
  t.comment(`seed ${SEED}: ${JSON.stringify(r.statesExplored)}, ${r.sleepBlocked} runs cut asleep, depth ${r.maxDepth}`);
  t.equal(r.complete, true, 'every interleaving explored');
  t.same(r.violations.map((v) => `${v.kind}: ${v.detail} (${v.replay})`), []);
  t.ok(r.statesExplored.crashPoints > 100, 'crash points checked');
  t.ok(r.statesExplored.images >= r.statesExplored.crashPoints, 'every image of each');
});
