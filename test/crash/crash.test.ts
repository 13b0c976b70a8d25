// The RPC app on the crash explorer (DESIGN §8): every durable strategy shows no violation over
// every crash point of a seeded workload, under the NIC configuration its seed draws; raw loses
// acknowledged requests with DDIO and keeps them without (the point of the flush primitives, §2.3).
import t from 'tap';
import { explore, resolveExploreOptions, rpcExplorerApp } from '../../src/testing/crash/index.js';
import { rpcStrategySweep } from './rpc-sweep.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/crash/crash.test.ts, or the pmrpc crash-test command printed with a violation)`);

// Every strategy at small scale (3 images per crash point); the 10,000-pair scale sweep is
// test/deep/rpc-crash-scale.test.ts. A loaded machine may take minutes; a timeout is not an assertion.
t.setTimeout(900_000);
rpcStrategySweep(t, { seed: SEED, imagesPerPoint: 3, minDistinct: 2_000 });

t.test('raw: violations with DDIO, none without', async (t) => {
  const on = await explore(rpcExplorerApp({ strategy: 'raw', requests: 14 }), { seed: SEED, pins: { ddio: true }, imagesPerPoint: 2, violationsMax: 3 });
  t.ok(on.violations.length > 0, `ddio on: ${on.violations.length} violations`);
  t.match(on.violations[0]!.detail, /acknowledged request lost/);
  t.match(on.violations[0]!.replay, /^pmrpc crash-test --app rpc --strategy raw .*--seed \d+ .*--ddio on.* --point \d+$/);
  const off = await explore(rpcExplorerApp({ strategy: 'raw', requests: 14 }), { seed: SEED, pins: { ddio: false, eviction: 0 }, imagesPerPoint: 2 });
  t.same(off.violations, [], 'ddio off: no violations');
});

t.test('a violation reproduces from its crash point alone', async (t) => {
  const o = { seed: SEED, pins: { ddio: true }, imagesPerPoint: 2, violationsMax: 1 } as const;
  const full = await explore(rpcExplorerApp({ strategy: 'raw', requests: 14 }), o);
  const v = full.violations[0]!;
  const one = await explore(rpcExplorerApp({ strategy: 'raw', requests: 14 }), { ...o, point: v.point });
  t.equal(one.crashPoints, 1, 'only that crash point');
  t.same(one.violations.map((x) => x.detail), [v.detail], 'the same violation');
});

t.test('two RPC nodes on one scheduler: image tuples, no violation', async (t) => {
  const app = rpcExplorerApp({ requests: 12, clients: 2, nodes: 2 });
  const r = await explore(app, { seed: SEED, imagesPerPoint: 2 });
  t.same(r.violations, []);
  t.equal(app.applied, 12);
  t.ok(r.imagesChecked > 0);
});

t.test('options are validated with exact messages', async (t) => {
  t.throws(() => rpcExplorerApp({ strategy: 'x' as never }), new TypeError('strategy must be one of wflush, sflush, wrflush, srflush, raw, gpspm, farm, darpc, none, got x'));
  t.throws(() => rpcExplorerApp({ requests: 0 }), new RangeError('requests must be an integer in [1, 100000], got 0'));
  t.throws(() => resolveExploreOptions({ engine: 'all' as never }), new TypeError("engine must be 'random' or 'exhaustive', got all"));
  t.throws(() => resolveExploreOptions({ point: -1 }), new RangeError('point must be a non-negative integer, got -1'));
  t.throws(() => resolveExploreOptions({ pins: { drain: 'never' as never } }), new TypeError('drain must be one of eager, lazy-small, lazy-large, onFlush, got never'));
});
