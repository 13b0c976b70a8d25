// Real crash-restart for the strategies whose server CPU persists, then acknowledges (wrflush,
// srflush, gpspm): see real-crash.test.ts.
//
// Replay: PMRPC_SEED=<printed seed> npx tap test/server/real-crash-cpu.test.ts
import { realCrashSuite } from './real-crash-suite.js';

realCrashSuite('test/server/real-crash-cpu.test.ts', ['wrflush', 'srflush', 'gpspm']);
