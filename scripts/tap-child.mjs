// Loaded in every test process (package.json "tap"."node-arg"). tap's runner starts each test
// process with @tapjs/processinfo, which records every loaded file (for coverage and `tap
// --changed`, both unused here) and, through process-on-spawn, injects itself into every process a
// test spawns: ~1.2 s of CPU for each `pmrpc` child a test starts, most of `npm test`'s time in
// the files that drive the CLI. Children a test spawns start as a user's would: without it.
import processOnSpawn from 'process-on-spawn';

processOnSpawn.removeAllListeners();
const kept = (process.env.NODE_OPTIONS ?? '').split(/\s+/).filter((o) => o !== '' && !o.includes('@tapjs/processinfo'));
if (kept.length > 0) process.env.NODE_OPTIONS = kept.join(' ');
else delete process.env.NODE_OPTIONS;
for (const k of Object.keys(process.env)) if (k.startsWith('_TAPJS_PROCESSINFO_')) delete process.env[k];
