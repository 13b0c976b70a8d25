// The RPC app's crash sweep at scale (issue 10 item 8): the strategies that claim durability
// together check at least 10,000 distinct (crash point, image) pairs, 10 images per crash point.
// The small sweep is test/crash/crash.test.ts (npm test).
import t from 'tap';
import { rpcStrategySweep } from '../crash/rpc-sweep.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/deep/rpc-crash-scale.test.ts, or the pmrpc crash-test command printed with a violation)`);
t.setTimeout(1_200_000);
rpcStrategySweep(t, { seed: SEED, imagesPerPoint: 10, minDistinct: 10_000 });
