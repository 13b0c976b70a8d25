// Issue 10, "paths no crash reaches": a live reconnect's persist of the consumed entries before the
// resume point is handed out (src/rpc/server.ts accept). In pool mode entries are polled and in
// flight in the pool, not yet applied, when a client reconnects; the client counts everything
// before the resume point as durable. On the explorer (pool mode: a task finishes in a CPU pass of
// its own; every client reconnects live once, mid-stream), the fault switch skipReconnectPersist
// must show an acknowledged request lost, and the real server none. (Inline, without a pool, the
// step is a no-op: the reconnect's service pass applies every polled entry before the resume point.)
import t from 'tap';
import { explore, rpcExplorerApp, type RpcWorkloadOptions } from '../../src/testing/crash/index.js';

const SEED = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/testing/reconnect-persist.test.ts)`);

const SEEDS = 6;
const workload = (strategy: RpcWorkloadOptions['strategy'], skip: boolean): Partial<RpcWorkloadOptions> => ({
  strategy, requests: 24, clients: 3, pool: true, liveReconnect: true, ...(skip ? { rpcFaults: { skipReconnectPersist: true } } : {}),
});
// DDIO on: a polled entry not yet persisted sits in a volatile CPU line (off, a drained WRITE is on media already).
const pins = { ddio: true } as const;

for (const strategy of ['wflush', 'farm'] as const) {
  t.test(`${strategy}: without the reconnect persist, an acknowledged request is lost`, async (t) => {
    for (let seed = SEED; seed < SEED + SEEDS; seed++) {
      const r = await explore(rpcExplorerApp({ ...workload(strategy, true), resumeEvery: 0 }), { seed, imagesPerPoint: 2, violationsMax: 5, nested: false, pins });
      const v = r.violations.find((x) => /acknowledged request lost/.test(x.detail));
      if (v !== undefined) {
        t.pass(`seed ${seed}: ${r.violations.length} violations in ${r.imagesChecked} images; e.g. ${v.kind}: ${v.detail} — point ${v.point} (replay: PMRPC_SEED=${seed} npx tap test/testing/reconnect-persist.test.ts)`);
        return;
      }
      t.comment(`seed ${seed}: none in ${r.imagesChecked} images`);
    }
    t.fail(`no lost request on seeds ${SEED}..${SEED + SEEDS - 1}`);
  });

  t.test(`${strategy}: with it, none (same seeds, pool mode, live reconnects; resume after recovery, nested crashes)`, async (t) => {
    for (let seed = SEED; seed < SEED + 3; seed++) {
      const r = await explore(rpcExplorerApp(workload(strategy, false)), { seed, imagesPerPoint: 2, pins });
      t.same(r.violations.map((v) => `${v.kind}: ${v.detail}`), [], `seed ${seed}: ${r.imagesChecked} images (${r.nestedImagesChecked} nested), ${r.crashPoints} crash points`);
    }
  });
}
