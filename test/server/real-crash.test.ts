// Real crash-restart (DESIGN §8, issue 5 item 4, issue 15 item 5): a `pmrpc serve` child process
// per incarnation on one PM file, clients in this process with many durable RPCs in flight over
// TCP (127.0.0.1) — one of them dies with the server (never resends) — a self-kill right after a
// seeded number of acknowledgements (before the next write-back), one after a seeded number of
// persistence events and an external SIGKILL at a seeded moment, restarts with recovery; at each
// restart, before any resend, every client's acknowledged prefix must lie in the recovered durable
// prefix; then the digest log in PM is checked: nothing acknowledged lost, nothing applied twice,
// FIFO per client, every call answered. One short cycle per strategy that claims durability
// (raw, which does not with DDIO on, is in real-crash-check.test.ts). Here the NIC persists (wflush,
// sflush); test/deep/rpc-real-crash-cpu.test.ts (in npm run test:deep): the server CPU persists, then acknowledges (wrflush, srflush,
// gpspm); test/deep/rpc-real-crash-coupled.test.ts: the coupled baselines (farm, darpc).
//
// Replay: PMRPC_SEED=<printed seed> npx tap test/server/real-crash.test.ts
import { realCrashSuite } from './real-crash-suite.js';

realCrashSuite('test/server/real-crash.test.ts', ['wflush', 'sflush']);
