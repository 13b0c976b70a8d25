// The FORD-style baseline (src/apps/txlock, app txford): a two-shard commit in R1 (undo log +
// validation) + R2 (in place + COMMITTED), a conflict that aborts and leaves nothing locked, and concurrent in-process workloads
// that must pass the Elle-style list-append check and the bank conservation check.
import t from 'tap';
import { fordFactory } from '../../../bench/tx-systems.js';
import { baselineChecks, twoShardCommit } from '../txbaseline.js';
import { txfordApp } from '../../../src/apps/txlock/index.js';

const SEED = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/apps/txford/txford.test.ts)`);

twoShardCommit(t, fordFactory, { name: 'R1 (undo log + validation) + R2 (in place + COMMITTED), unlocked asynchronously', roundTrips: 2, roundTripsWhat: 'R1 and R2 (the unlock is not waited for)', conflictAt: 'write', seed: SEED });

baselineChecks(t, fordFactory, txfordApp as never, SEED);
