// Real crash-restart for the strategies whose server CPU persists, then acknowledges (wrflush,
// srflush, gpspm): see real-crash.test.ts.
//
// Replay: PMRPC_SEED=<printed seed> npx tap test/deep/rpc-real-crash-cpu.test.ts
import { realCrashSuite } from '../server/real-crash-suite.js';

realCrashSuite('test/deep/rpc-real-crash-cpu.test.ts', ['wrflush', 'srflush', 'gpspm']);
