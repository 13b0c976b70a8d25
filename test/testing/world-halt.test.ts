// A broken invariant of pmrpc's own state (PMRPC_ERR_INVARIANT, DESIGN §10) in a pass a node's app
// runs — a CPU pass on the World's scheduler, or a microtask pass through AppHost.halt (the return
// mailboxes) — halts that node as its process would stop (exit 70): the World records it in
// `halts` and crashes the node; the error does not escape the run, and any other error does.
import t from 'tap';
import { invariant, PmemRegion } from '../../pmem/index.js';
import { guardedMicrotask, type AppHost, type AppServer } from '../../src/apps/index.js';
import { nicConfigFor, World } from '../../src/testing/crash/index.js';

function stubServer(): AppServer {
  return { app: 'stub', recover: () => ({ app: 'stub' }), accept: () => { throw new Error('no clients'); }, inspect: () => ({}), audit: () => [], close: () => {} };
}

async function runWith(pass: (host: AppHost) => void): Promise<{ world: World; status: string }> {
  const world = new World(nicConfigFor(1), 1);
  let host!: AppHost;
  world.addNode(PmemRegion.createInMemory(1 << 16), (h) => ((host = h), stubServer()));
  pass(host);
  const r = await world.run(() => world.nodes[0]!.crashed, 1000);
  world.close();
  return { world, status: r.status };
}

t.test('a CPU pass that breaks an invariant halts its node and is recorded', async (t) => {
  let after = false;
  const { world, status } = await runWith((host) => {
    host.schedule(() => invariant(false, () => 'free buffer 64 posted twice'));
    host.schedule(() => void (after = true));
  });
  t.equal(status, 'done');
  t.equal(world.nodes[0]!.crashed, true, 'the node is down');
  t.same(world.halts, [{ node: 0, detail: 'node 0 halted: PMRPC_ERR_INVARIANT: invariant violated: free buffer 64 posted twice' }]);
  t.equal(after, false, 'nothing the node scheduled runs after its halt');
});

t.test('a microtask pass through guardedMicrotask(host) halts the node the same way', async (t) => {
  const { world } = await runWith((host) => guardedMicrotask(host)(() => invariant(false, () => 'slot pointer outside the arena')));
  t.equal(world.nodes[0]!.crashed, true);
  t.equal(world.halts.length, 1);
  t.match(world.halts[0]!.detail, /PMRPC_ERR_INVARIANT: invariant violated: slot pointer outside the arena/);
});

t.test('an error that is not an invariant is not swallowed', async (t) => {
  await t.rejects(runWith((host) => host.schedule(() => { throw new RangeError('a bug in the pass'); })), new RangeError('a bug in the pass'));
  t.equal(guardedMicrotask({}), queueMicrotask, 'a host without halt (a node process) keeps the plain microtask: the process exits 70');
});
