// Deep: PRISM-TX's real-crash test (test/apps/tx/sigkill.test.ts) at full scale — 52 SIGKILLs of
// shard and client processes instead of npm test's 16. PMRPC_KILLS / PMRPC_SEED still override.
process.env.PMRPC_KILLS ??= '52';
await import('../apps/tx/sigkill.test.js');
