// Real crash-restart for gpspm and the coupled baselines (farm, darpc): see real-crash.test.ts.
//
// Replay: PMRPC_SEED=<printed seed> npx tap test/server/real-crash-more.test.ts
import { realCrashSuite } from './real-crash-suite.js';

realCrashSuite('test/server/real-crash-more.test.ts', ['gpspm', 'farm', 'darpc']);
