/** src/crash — the crash-test engine of `pmrpc crash-test` (DESIGN §8). */
export { runCrashTest, resolveCrashTestOptions, reproduceCommand, crashGeometry, digestHandler, CRASH_TEST_DEFAULTS, type CrashTestOptions, type CrashTestResult, type Violation, type ImageEngine } from './engine.js';
export { DIGEST_BYTES, LOG_BASE, METHOD as DIGEST_METHOD, readDigestLog, type DigestEntry } from './engine.js';
export { MUTANTS, findMutant, type Mutant } from './mutants.js';
