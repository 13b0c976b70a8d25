// Real crash-restart of `pmrpc serve --strict` (see real-crash.test.ts): an msync before every
// durable acknowledgement, the PM file written through its descriptor at the end of each group
// (pmem/region.ts, #writeMedia) instead of by stores into the mapping. A SIGKILL in the middle of a
// group leaves the file without that group's lines — nothing of it was acknowledged — and every
// restart must still recover everything the clients were told was durable. The self-kills strike at
// a media change (a drain), the acknowledgement kill right after an acknowledgement.
//
// Replay: PMRPC_SEED=<printed seed> npx tap test/server/real-crash-strict.test.ts
import { realCrashSuite } from './real-crash-suite.js';

realCrashSuite('test/server/real-crash-strict.test.ts', ['wflush', 'srflush'], { strict: true });
