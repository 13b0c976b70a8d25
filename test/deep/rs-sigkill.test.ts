// Deep: PRISM-RS's real-crash test (test/apps/rs/sigkill.test.ts) at full scale — 51 SIGKILLs of
// replicas instead of npm test's 8. PMRPC_KILLS / PMRPC_SEED still override.
process.env.PMRPC_KILLS ??= '51';
await import('../apps/rs/sigkill.test.js');
