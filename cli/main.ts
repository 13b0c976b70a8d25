#!/usr/bin/env node
/**
 * The pmrpc command line. Each command lives in its own module and registers itself here.
 *
 * Only the invoked command's module is loaded: `pmrpc serve` does not load the crash explorer, the
 * bench suites or SQLite (a `serve` child restarting after a crash pays only for what it runs, and
 * restart time is part of the demo's recovery figures). `pmrpc`, `pmrpc --help` and an unknown
 * command load them all, to list them.
 */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';

type Register = (program: Command) => void;

/** Command name → its module's register function, in the order `--help` lists them. */
const COMMANDS: ReadonlyArray<readonly [names: readonly string[], load: () => Promise<Register>]> = [
  [['serve'], async () => (await import('./serve.js')).registerServe],
  [['format'], async () => (await import('./format.js')).registerFormat],
  [['inspect'], async () => (await import('./inspect.js')).registerInspect],
  [['check'], async () => (await import('./check.js')).registerCheck],
  [['demo', '_pmem-writer'], async () => (await import('./demo.js')).registerDemo],
  [['litmus'], async () => (await import('./litmus.js')).registerLitmus],
  [['cluster'], async () => (await import('./cluster.js')).registerCluster],
  [['bench'], async () => (await import('./bench.js')).registerBench],
  [['crash-test'], async () => (await import('./crash-test.js')).registerCrashTest],
  [['reproduce'], async () => (await import('./reproduce.js')).registerReproduce],
  [['swarm'], async () => (await import('./swarm.js')).registerSwarm],
  [['soak'], async () => (await import('./soak.js')).registerSoak],
];

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

const program = new Command();
program
  .name('pmrpc')
  .description('durable RPC and one-sided remote-memory protocols on emulated persistent memory and RDMA')
  .version(pkg.version)
  .showHelpAfterError();

const invoked = process.argv[2] ?? '';
const one = COMMANDS.find(([names]) => names.includes(invoked));
for (const [, load] of one === undefined ? COMMANDS : [one]) (await load())(program);

program.parseAsync(process.argv).catch((e: unknown) => {
  const err = e as { code?: string; message?: string };
  process.stderr.write(`pmrpc: ${err.message ?? String(e)}\n`);
  process.exitCode = err.code === 'PMRPC_ERR_AUTH_REQUIRED' ? 2 : 1;
});
