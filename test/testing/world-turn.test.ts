// World.turn (DESIGN §7, injected scheduling): the explorer's scheduler awaits an injected turn
// after every step instead of the global event loop. The default (pmem/runtime.ts macrotaskTurn)
// and a wrapper around it drive the same run: same steps, same deliveries, same history.
import t, { type Test } from 'tap';
import { createPrng, macrotaskTurn, PmemRegion, seededEntropy } from '../../pmem/index.js';
import { kvExplorerApp, mix, nicConfigFor, World } from '../../src/testing/crash/index.js';

const SEED = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/testing/world-turn.test.ts)`);

async function runOnce(t: Test, wrap: boolean): Promise<{ steps: number; deliveries: number; turns: number; history: string }> {
  const app = kvExplorerApp({ opsPerClient: 8 });
  const config = nicConfigFor(SEED);
  const world = new World(config, SEED);
  let turns = 0;
  if (wrap) world.turn = () => (turns++, macrotaskTurn());
  const region = PmemRegion.createInMemory(app.regionBytes, { tracing: true, lineModel: config.lineModel, seed: mix(SEED, 0x7e, 0), eviction: config.eviction, entropy: seededEntropy(createPrng(mix(SEED, 3, 0))) });
  app.format(region, 0);
  world.addNode(region, (host) => app.open(host, 0)).server!.recover();
  let done = false;
  void app.workload(world, createPrng(mix(SEED, 0))).then(() => void (done = true));
  const r = await world.run(() => done, 1_000_000);
  world.close();
  t.equal(r.status, 'done');
  return { steps: world.steps, deliveries: world.deliveries, turns, history: JSON.stringify(app.history()) };
}

t.test('an injected turn drives the run; the run is the same as with the default', async (t) => {
  const a = await runOnce(t, false);
  const b = await runOnce(t, true);
  t.ok(b.turns > b.steps, `${b.turns} turns for ${b.steps} steps (one after each step, one at the start)`);
  t.equal(b.steps, a.steps);
  t.equal(b.deliveries, a.deliveries);
  t.equal(b.history, a.history, 'same history');
});
