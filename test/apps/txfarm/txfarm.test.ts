// The FaRM-style baseline (src/apps/txlock, app txfarm): a two-shard commit in LOCK + VALIDATE +
// COMMIT, a conflict that aborts and leaves nothing locked, and concurrent in-process workloads
// that must pass the Elle-style list-append check and the bank conservation check.
import t from 'tap';
import { farmFactory } from '../../../bench/tx-systems.js';
import { baselineChecks, twoShardCommit } from '../txbaseline.js';
import { txfarmApp } from '../../../src/apps/txlock/index.js';

const SEED = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/apps/txfarm/txfarm.test.ts)`);

twoShardCommit(t, farmFactory, { name: 'LOCK + VALIDATE + COMMIT, applied by the shard CPU', roundTrips: 3, roundTripsWhat: 'LOCK, VALIDATE, COMMIT', conflictAt: 'commit', seed: SEED });

baselineChecks(t, farmFactory, txfarmApp as never, SEED);
