// Real crash-restart for the coupled baselines (farm, darpc: the reply after processing is the
// acknowledgement): see real-crash.test.ts.
//
// Replay: PMRPC_SEED=<printed seed> npx tap test/deep/rpc-real-crash-coupled.test.ts
import { realCrashSuite } from '../server/real-crash-suite.js';

realCrashSuite('test/deep/rpc-real-crash-coupled.test.ts', ['farm', 'darpc']);
