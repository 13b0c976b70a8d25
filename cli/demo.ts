/**
 * `pmrpc demo`: the README's main job on an embedded default — a PM file in a temp dir, a real
 * `pmrpc serve` child process, clients sending durable RPCs over TCP (many in flight), SIGKILLs of
 * the server mid-load, restarts on the same file with recovery, clients reconnecting and resuming,
 * and a verification of the digest log in PM (src/server/crash-rpc.ts).
 */
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { randomSeed } from '../pmem/index.js';
import type { RpcStrategy } from '../src/rpc/index.js';
import { KV_REAL_CRASH, RPC_REAL_CRASH, runKvRealCrash, runRealCrash, type KvRealCrashReport, type RealCrashEntry, type RealCrashReport } from '../src/server/index.js';
import { crashApp, DEMO_APP_NAMES } from '../src/testing/crash/index.js';
import { runPmemWriter } from '../src/demo/index.js';
import { badOption, intOption, log, printJson, progressBar } from './output.js';
import { onOffOption, strategyOption } from './serve.js';

const MAIN = fileURLToPath(new URL('./main.js', import.meta.url));

export const DEMO_SECONDS_DEFAULT = 6;

type DemoRun = (opts: DemoOpts, seed: number, quiet: boolean) => Promise<void>;

/**
 * How the CLI presents a real-crash run (its flags → the entry's options, its report → the text),
 * by the run's entry: which apps have a demo, and what --app says of each, is the registry's
 * (src/testing/crash/apps.ts: a crash part's `demo` beside its `realCrash`).
 */
const DEMO_RUNS: ReadonlyMap<RealCrashEntry<never, unknown>, DemoRun> = new Map<RealCrashEntry<never, unknown>, DemoRun>([
  [RPC_REAL_CRASH as RealCrashEntry<never, unknown>, runRpcDemo],
  [KV_REAL_CRASH as RealCrashEntry<never, unknown>, runKvDemo],
]);

/** The apps of --app (the registry's, in its order). */
export const DEMO_APPS: readonly string[] = DEMO_APP_NAMES;

/** The demo of app `name`: what --app says of it and its run (a demo app whose run the CLI cannot present is a pmrpc bug). */
function demoOf(name: string): { help: string; run: DemoRun } {
  const part = crashApp(name);
  const run = part.realCrash === undefined ? undefined : DEMO_RUNS.get(part.realCrash as RealCrashEntry<never, unknown>);
  if (part.demo === undefined || run === undefined) throw new TypeError(`app ${name} has no demo the CLI can present`);
  return { help: part.demo.help, run };
}

interface DemoOpts {
  app: string;
  nodes?: number;
  strategy: RpcStrategy;
  clients: number;
  seconds: number;
  seed?: number;
  crashes: number;
  selfKills: number;
  ackKills: number;
  mortalClients: number;
  ddio: boolean;
  window: number;
  keep?: boolean;
  json?: boolean;
}

const VERDICT_TEXT: Record<RealCrashReport['verdict'], string> = {
  ok: 'OK — nothing acknowledged was lost (at any restart, before any resend, nor at the end), nothing applied twice',
  PMRPC_ERR_ACKED_LOST: 'FAIL (PMRPC_ERR_ACKED_LOST) — a request the client was told was durable is not in what the crash left',
  PMRPC_ERR_CRASH_VIOLATION: 'FAIL (PMRPC_ERR_CRASH_VIOLATION) — a request applied twice, out of FIFO order, with a wrong payload, or never',
  PMRPC_ERR_RUN_INCOMPLETE: 'FAIL (PMRPC_ERR_RUN_INCOMPLETE) — the run did not go through (see the errors), or no crash happened',
};

export function formatDemo(r: RealCrashReport, keep: boolean): string {
  const ackKills = r.incarnations.filter((i) => i.killAfterCompletions !== undefined && i.end === 'self').length;
  const lines = [
    `pmrpc demo — durable RPC over TCP with real crashes (strategy ${r.strategy}, DDIO ${r.ddio ? 'on' : 'off'}, ${r.clients} clients, seed ${r.seed})`,
    `  PM file:                          ${r.pmFile}${keep ? '' : ' (removed)'}`,
    `  requests acknowledged durable:    ${r.acked} (${Math.round(r.opsPerSecond)}/s over ${r.loadSeconds.toFixed(1)} s, restarts included)`,
    `  real crashes (SIGKILL):           ${r.crashes} (${r.externalKills} external at a seeded moment, ${r.selfKills - ackKills} self-kill after a seeded number of persistence events, ${ackKills} right after a seeded number of acknowledgements, before the next write-back)`,
    `  restart check (before any resend): ${r.restartChecks} client checks — what each client was told was durable vs the durable prefix the recovery reports; absent: ${r.lostAtRestart}`,
    `  clients that died with the server: ${r.mortalClients} (never resent; what they were told was durable must be in PM on its own; ${r.abandoned} unacknowledged requests abandoned)`,
    `  recovery (open + recover):        ${r.recoveryMs.toFixed(1)} ms mean; kill → serving again ${r.restartMs.toFixed(0)} ms mean (process start included)`,
    `  re-executed / replayed on recovery: ${r.replayed} (durable requests the crash cut before they were applied)`,
    `  applied (digests in PM):          ${r.applied} of ${r.sent} sent`,
    `  results: ${r.resultsOk} delivered, ${r.resultsLost} lost with the crash (PMRPC_ERR_RESULT_LOST), ${r.resultErrors} errors`,
    `  acknowledged but lost:            ${r.lost} (${r.lostAtRestart} at a restart, ${r.lostAtEnd} absent from the digest log at the end)`,
    `  applied twice (duplicates):       ${r.duplicates}`,
    `  out of FIFO order / corrupt:      ${r.outOfOrder} / ${r.corrupt}`,
  ];
  for (const e of r.errors) lines.push(`  error: ${e}`);
  for (const m of r.messages.slice(0, 5)) lines.push(`  violation: ${m}`);
  lines.push(`  verdict: ${VERDICT_TEXT[r.verdict]}`);
  lines.push(`  replay: pmrpc demo --strategy ${r.strategy} --ddio ${r.ddio ? 'on' : 'off'} --clients ${r.clients} --seconds ${r.loadSecondsAsked} --seed ${r.seed}`);
  return `${lines.join('\n')}\n`;
}

export function formatKvDemo(r: KvRealCrashReport): string {
  const ok = r.violations === 0 && r.crashes > 0;
  const lines = [
    `pmrpc demo --app kv — a PRISM-KV cluster of ${r.nodes.length} nodes over TCP with real crashes (seed ${r.seed})`,
    `  operations: ${r.operations} (${r.acknowledged} acknowledged, ${r.cut} cut by a crash) over ${r.loadSeconds.toFixed(1)} s`,
    `  real crashes (SIGKILL): ${r.crashes} (${r.externalKills} external in ${r.killRounds.length} rounds, ${r.selfKills} self-kills after a seeded number of persistence events)`,
  ];
  for (const k of r.killRounds) lines.push(`    at ${k.atS.toFixed(2)} s: killed ${k.nodes.map((n) => `kv${n}`).join(' + ')}`);
  for (const n of r.nodes) {
    lines.push(`  node kv${n.node}: ${n.operations} ops, ${n.crashes} crashes, recovery ${n.recoveryMs.toFixed(1)} ms mean; lost ${n.lost.length}; linearizable ${String(n.linearizable)}${n.linearizabilityReason ? ` (${n.linearizabilityReason})` : ''}; audit ${n.auditProblems.length === 0 ? 'clean' : n.auditProblems.join('; ')}`);
    for (const l of n.lost.slice(0, 3)) lines.push(`    lost: ${l}`);
  }
  for (const e of r.errors.slice(0, 5)) lines.push(`  error: ${e}`);
  lines.push(`  verdict: ${ok ? 'OK — nothing acknowledged was lost, every node durably linearizable, every file sound' : 'FAIL'}`);
  lines.push(`  replay: pmrpc demo --app kv --nodes ${r.nodes.length} --seed ${r.seed}`);
  return `${lines.join('\n')}\n`;
}

export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description('durable RPC between processes over TCP, a real SIGKILL of the server mid-load, restart and recovery on the same PM file, then a verification')
    .option('--app <name>', DEMO_APPS.map((a) => `${a} (${demoOf(a).help})`).join(' or '), (v: string) => {
      if (!DEMO_APPS.includes(v)) throw badOption(`--app must be ${DEMO_APPS.join(' or ')}, got ${v}`);
      return v;
    }, DEMO_APPS[0])
    .option('--nodes <n>', 'kv: nodes of the cluster, each a serve process on its own PM file (default 3)', intOption('nodes'))
    .option('--strategy <s>', 'remote-persistence strategy (wflush sflush wrflush srflush gpspm farm darpc raw)', strategyOption, 'wflush')
    .option('--clients <n>', 'clients (each keeps --window calls in flight)', intOption('clients'), 4)
    .option('--seconds <t>', 'seconds of load (crashes and restarts included)', (v: string) => {
      const n = Number(v);
      if (!(n > 0 && n <= 3600)) throw badOption(`--seconds must be a number in (0, 3600], got ${v}`);
      return n;
    }, DEMO_SECONDS_DEFAULT)
    .option('--seed <n>', 'seed of the payloads and kill moments (default random, printed)', intOption('seed'))
    .option('--crashes <n>', 'external SIGKILLs at seeded moments (kv: kill rounds, each of a seeded subset of the nodes)', intOption('crashes'), 1)
    .option('--self-kills <n>', 'server incarnations that SIGKILL themselves after a seeded number of persistence events', intOption('self-kills'), 1)
    .option('--ack-kills <n>', 'rpc: server incarnations that SIGKILL themselves right after a seeded number of acknowledgements, before the next write-back', intOption('ack-kills'), 1)
    .option('--mortal-clients <n>', 'rpc: clients that die with the server (never resend); a new one takes each one\'s place after the restart', intOption('mortal-clients'), 1)
    .option('--ddio <on|off>', 'rpc: DDIO of the server\'s NIC (on: NIC writes land in the volatile CPU cache)', onOffOption('ddio'), true)
    .option('--window <n>', 'calls in flight per client', intOption('window'), 96)
    .option('--keep', 'keep the PM file and print its path (then: pmrpc inspect FILE)')
    .option('--json', 'print one JSON document on stdout')
    .action(async (opts: DemoOpts) => {
      // Non-negative, so the printed replay command parses (a leading '-' would read as an option).
      const seed = (opts.seed ?? randomSeed()) >>> 0;
      await demoOf(opts.app).run(opts, seed, opts.json === true);
    });

  // The layer-1 PM writer of test/pmem/sigkill.test.ts: a child that persists records until killed.
  program
    .command('_pmem-writer', { hidden: true })
    .requiredOption('--pm <file>')
    .requiredOption('--records <n>', '', intOption('records'))
    .requiredOption('--seed <n>', '', intOption('seed'))
    .option('--report-every <n>', '', intOption('report-every'), 64)
    .action(async (opts: { pm: string; records: number; seed: number; reportEvery: number }) => {
      await runPmemWriter(opts.pm, opts.records, opts.seed, opts.reportEvery);
    });
}

/** The kv demo: a PRISM-KV cluster of serve processes, kill rounds of seeded subsets of the nodes. */
async function runKvDemo(opts: DemoOpts, seed: number, quiet: boolean): Promise<void> {
  if (!quiet) log(`pmrpc demo: PRISM-KV cluster of ${opts.nodes ?? 3} nodes, ${Math.min(opts.clients, 8)} clients, ${opts.seconds} s, seed ${seed}`);
  const r = await runKvRealCrash({
    mainScript: MAIN,
    nodes: opts.nodes ?? 3,
    clients: Math.min(opts.clients, 8),
    seconds: opts.seconds,
    seed,
    killRounds: opts.crashes,
    selfKills: opts.selfKills,
    keep: opts.keep === true,
    log: quiet ? undefined : (l) => log(`demo: ${l}`),
  });
  if (opts.json) printJson(r);
  else process.stdout.write(formatKvDemo(r));
  if (r.violations > 0 || r.crashes < 1) process.exitCode = 1;
}

/** The rpc demo: one serve process, SIGKILLs mid-load, restarts on the same file, a verification of the digest log. */
async function runRpcDemo(opts: DemoOpts, seed: number, quiet: boolean): Promise<void> {
  if (opts.nodes !== undefined && opts.nodes !== 1) throw badOption('--nodes applies to --app kv (the rpc demo runs one node)');
  const bar = quiet ? { update() {}, stop() {} } : progressBar('demo');
  if (!quiet) log(`pmrpc demo: strategy ${opts.strategy}, ${opts.clients} clients × ${opts.window} calls in flight, ${opts.seconds} s, seed ${seed}`);
  const r = await runRealCrash({
    mainScript: MAIN,
    strategy: opts.strategy,
    clients: opts.clients,
    seconds: opts.seconds,
    seed,
    externalKills: opts.crashes,
    selfKills: opts.selfKills,
    ackKills: opts.ackKills,
    mortalClients: opts.mortalClients,
    ddio: opts.ddio,
    window: opts.window,
    keep: opts.keep === true,
    onProgress: (p) => bar.update(Math.round(p.elapsedS * 10), Math.round(p.seconds * 10), `${p.acked} acked, ${p.crashes} crashes`),
    log: quiet || process.stderr.isTTY ? undefined : (l) => log(`demo: ${l}`),
  });
  bar.stop();
  if (opts.json) {
    const { incarnations, messages, ...rest } = r;
    printJson({ ...rest, messages, restarts: incarnations.map((i) => ({ end: i.end, killAfterEvents: i.killAfterEvents ?? null, killAfterCompletions: i.killAfterCompletions ?? null, restartMs: i.restartMs ?? null, recovered: i.recovered })) });
  } else process.stdout.write(formatDemo(r, opts.keep === true));
  if (r.verdict !== 'ok') process.exitCode = 1;
}
