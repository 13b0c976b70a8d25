#!/usr/bin/env node
/** The pmrpc command line. Each command lives in its own module and registers itself here. */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { registerCrashTest } from './crash-test.js';
import { registerDemo } from './demo.js';
import { registerLitmus } from './litmus.js';
import { registerServe } from './serve.js';
import { registerFormat } from './format.js';
import { registerInspect } from './inspect.js';
import { registerCheck } from './check.js';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

const program = new Command();
program
  .name('pmrpc')
  .description('durable RPC and one-sided remote-memory protocols on emulated persistent memory and RDMA')
  .version(pkg.version)
  .showHelpAfterError();

registerServe(program);
registerFormat(program);
registerInspect(program);
registerCheck(program);
registerDemo(program);
registerLitmus(program);
// A `serve` child restarting after a crash does not load the launcher either.
if (!['serve', 'format', 'inspect', '_pmem-writer'].includes(process.argv[2] ?? '')) (await import('./cluster.js')).registerCluster(program);
// The bench suites pull in SQLite, HDR histograms and the benchmark matrix (~70 ms; vega loads only
// when a chart is drawn): a `serve` child restarting after a crash should not pay for them
// (restart time is part of the demo's recovery figures).
if (!['serve', 'format', 'inspect', '_pmem-writer'].includes(process.argv[2] ?? '')) (await import('./bench.js')).registerBench(program);
registerCrashTest(program);
// The reproduction table loads the bench suites too (modelled cells): not for a `serve` child either.
if (!['serve', 'format', 'inspect', '_pmem-writer'].includes(process.argv[2] ?? '')) (await import('./reproduce.js')).registerReproduce(program);
if (!['serve', 'format', 'inspect', '_pmem-writer'].includes(process.argv[2] ?? '')) (await import('./swarm.js')).registerSwarm(program);
if (!['serve', 'format', 'inspect', '_pmem-writer'].includes(process.argv[2] ?? '')) (await import('./soak.js')).registerSoak(program);

program.parseAsync(process.argv).catch((e: unknown) => {
  const err = e as { code?: string; message?: string };
  process.stderr.write(`pmrpc: ${err.message ?? String(e)}\n`);
  process.exitCode = err.code === 'PMRPC_ERR_AUTH_REQUIRED' ? 2 : 1;
});
