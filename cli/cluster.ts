/**
 * `pmrpc cluster up|status|kill|restart|down FILE`: the local launcher of a cluster file (DESIGN §6).
 * Nodes whose host is this machine run as detached `pmrpc serve` processes, one per PM file; the
 * others are run by their host's process manager (docs/deploy.md) and only listed and probed.
 *
 * State (docs/cli.md): a directory — `--state-dir`, default `.<file name>.state/` beside the
 * cluster file — holding per node `<id>.pid` (the serve process), `<id>.out` (its stdout: the one
 * start line) and `<id>.log` (its stderr). Every wait is bounded (`--timeout-ms`).
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { PmrpcError, defineErrorCodes, type ErrorCodesOf } from '../pmem/index.js';
import { layoutFlagArgs } from './layout-flags.js';
import { clusterNode, isLocalNode, loadClusterFile, type ClusterNodeSpec, type ClusterSpec } from '../src/cluster/index.js';
import { CliErrorCodes, intOption, log, printJson, report } from './output.js';
import { APP_FLAGS } from './serve.js';
import { nodeAppFlags } from '../src/node/index.js';

const MAIN = fileURLToPath(new URL('./main.js', import.meta.url));

export const LauncherErrorCodes = defineErrorCodes('cli', {
  /** A node did not print its start line within --timeout-ms, or exited first. */
  NODE_START_FAILED: 'PMRPC_ERR_NODE_START_FAILED',
  /** kill / restart of a node this host does not run. */
  NODE_NOT_LOCAL: 'PMRPC_ERR_NODE_NOT_LOCAL',
  /** kill of a node that is not running. */
  NODE_NOT_RUNNING: 'PMRPC_ERR_NODE_NOT_RUNNING',
  /** restart of a node that is still running (kill it first: a crash, or down: in order). */
  NODE_RUNNING: 'PMRPC_ERR_NODE_RUNNING',
  /** A process that did not exit within --timeout-ms of its signal. */
  NODE_STOP_TIMEOUT: 'PMRPC_ERR_NODE_STOP_TIMEOUT',
});

declare module '../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof LauncherErrorCodes> {}
}

export type NodeState = 'serving' | 'down' | 'starting';

export interface NodeStatus {
  id: string;
  app: string;
  host: string;
  port: number;
  pm: string;
  pid: number | null;
  state: NodeState;
}

interface ClusterOpts {
  stateDir?: string;
  authTokenFile?: string;
  timeoutMs: number;
  json?: boolean;
}

export function stateDirOf(spec: ClusterSpec, stateDir: string | undefined): string {
  if (stateDir !== undefined) return resolve(stateDir);
  const file = spec.file ?? resolve('cluster.json');
  return join(dirname(file), `.${basename(file).replace(/\.json$/i, '')}.state`);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function readPid(dir: string, id: string): number | undefined {
  try {
    const n = Number(readFileSync(join(dir, `${id}.pid`), 'utf8').trim());
    return Number.isSafeInteger(n) && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `pid` is a live (not zombie) `pmrpc serve` of this node's PM file (guards against pid reuse). */
export function nodeProcessAlive(pid: number | undefined, pm: string): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (/^\d+ \(.*\) Z/.test(stat)) return false; // a zombie: dead, not yet reaped
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return cmd.includes('serve') && cmd.includes(pm);
  } catch {
    return true; // no /proc (macOS): the signal probe is all there is
  }
}

/** Whether host:port accepts a TCP connection within `ms`. */
export function probePort(host: string, port: number, ms: number): Promise<boolean> {
  return new Promise((res) => {
    const s = connect({ host, port });
    const done = (ok: boolean): void => {
      clearTimeout(t);
      s.destroy();
      res(ok);
    };
    const t = setTimeout(() => done(false), ms);
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

export async function nodeStatus(dir: string, n: ClusterNodeSpec, probeMs = 1000): Promise<NodeStatus> {
  const base = { id: n.id, app: n.app, host: n.host, port: n.port, pm: n.pm };
  if (!isLocalNode(n)) return { ...base, pid: null, state: (await probePort(n.host, n.port, probeMs)) ? 'serving' : 'down' };
  const pid = readPid(dir, n.id);
  if (!nodeProcessAlive(pid, n.pm)) return { ...base, pid: null, state: 'down' };
  // Serving once it printed its start line (it listens before printing) and the port answers.
  const started = existsSync(join(dir, `${n.id}.out`)) && readFileSync(join(dir, `${n.id}.out`), 'utf8').includes('\n');
  return { ...base, pid: pid!, state: started && (await probePort(n.host, n.port, probeMs)) ? 'serving' : 'starting' };
}

/**
 * The serve command line of a node (the token never appears in it: env or --auth-token-file). A tx
 * node gets `--cluster FILE`: its shard index and the shard count are its place among the file's
 * tx nodes, and it runs the resolver agent over links to its peers.
 */
export function serveArgs(n: ClusterNodeSpec, authTokenFile: string | undefined, clusterFile?: string): string[] {
  const a = [MAIN, 'serve', '--app', n.app, '--create', '--node', n.id, '--pm', n.pm, '--host', n.host, '--port', String(n.port), '--json'];
  const o = n.options;
  if (nodeAppFlags(n.app).clusterShard) {
    if (clusterFile === undefined) throw new TypeError(`node ${n.id} is a ${n.app} node: its serve command needs the cluster file`);
    a.push('--cluster', resolve(clusterFile));
  }
  // Only the flags of this node's app (serve refuses another app's: PMRPC_ERR_OPTION_NOT_APPLICABLE).
  const applies = (name: string): boolean => APP_FLAGS[name]?.apps.includes(n.app) ?? true;
  if (o.leaseMs !== undefined && applies('leaseMs')) a.push('--lease-ms', String(o.leaseMs));
  if (o.sizeBytes !== undefined) a.push('--size', String(o.sizeBytes));
  if (o.ddio !== undefined) a.push('--ddio', o.ddio ? 'on' : 'off');
  if (o.strict === true) a.push('--strict');
  if (o.strategy !== undefined && applies('strategy')) a.push('--strategy', o.strategy);
  if (o.keepResults === true && applies('keepResults')) a.push('--keep-results');
  if (o.system !== undefined && applies('system')) a.push('--system', o.system);
  a.push(...layoutFlagArgs(o));
  if (authTokenFile !== undefined) a.push('--auth-token-file', resolve(authTokenFile));
  return a;
}

/** Starts one node detached; resolves with its start line once it serves (bounded by timeoutMs). */
export async function startNode(dir: string, n: ClusterNodeSpec, o: { authTokenFile?: string | undefined; clusterFile?: string | undefined; timeoutMs: number }): Promise<Record<string, unknown>> {
  mkdirSync(dir, { recursive: true });
  mkdirSync(dirname(n.pm), { recursive: true });
  const outPath = join(dir, `${n.id}.out`);
  const logPath = join(dir, `${n.id}.log`);
  rmSync(outPath, { force: true });
  const out = openSync(outPath, 'w');
  const err = openSync(logPath, 'a');
  let child;
  try {
    child = spawn(process.execPath, serveArgs(n, o.authTokenFile, o.clusterFile), { detached: true, stdio: ['ignore', out, err] });
  } finally {
    closeSync(out);
    closeSync(err);
  }
  const pid = child.pid;
  let exited: string | undefined;
  child.once('exit', (code, signal) => (exited = `code ${code}, signal ${signal}`));
  child.unref();
  if (pid === undefined) throw new PmrpcError(LauncherErrorCodes.NODE_START_FAILED, `node ${n.id}: the serve process did not start`);
  writeFileSync(join(dir, `${n.id}.pid`), `${pid}\n`);
  const deadline = Date.now() + o.timeoutMs;
  for (;;) {
    const text = existsSync(outPath) ? readFileSync(outPath, 'utf8') : '';
    const nl = text.indexOf('\n');
    if (nl >= 0) return JSON.parse(text.slice(0, nl)) as Record<string, unknown>;
    if (exited !== undefined || Date.now() > deadline) {
      const tail = existsSync(logPath) ? readFileSync(logPath, 'utf8').trim().split('\n').slice(-3).join(' | ') : '';
      if (exited === undefined) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      throw new PmrpcError(LauncherErrorCodes.NODE_START_FAILED, `node ${n.id} (${n.app} on ${n.pm}, ${n.host}:${n.port}) ${exited !== undefined ? `exited (${exited})` : `printed no start line within ${o.timeoutMs} ms`} before serving: ${tail}`);
    }
    await sleep(50);
  }
}

/** Waits (bounded) until `pid` is gone. */
async function waitGone(pid: number, pm: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (nodeProcessAlive(pid, pm)) {
    if (Date.now() > deadline) return false;
    await sleep(25);
  }
  return true;
}

function localNode(spec: ClusterSpec, id: string): ClusterNodeSpec {
  const n = clusterNode(spec, id);
  if (!isLocalNode(n)) throw new PmrpcError(LauncherErrorCodes.NODE_NOT_LOCAL, `node ${id} runs on ${n.host}, not on this host: its process manager starts and stops it there`);
  return n;
}

function printStatus(nodes: NodeStatus[]): void {
  for (const s of nodes) process.stdout.write(`${s.id.padEnd(10)} ${s.app.padEnd(4)} ${`${s.host}:${s.port}`.padEnd(22)} ${s.state.padEnd(8)} ${s.pid === null ? '-' : `pid ${s.pid}`}  ${s.pm}\n`);
}

export function registerCluster(program: Command): void {
  const cluster = program.command('cluster').description('start, probe, crash, restart and stop the local nodes of a cluster file (docs/cli.md, docs/deploy.md)');
  const common = (c: Command): Command =>
    c
      .option('--state-dir <dir>', 'pid files and start lines (default .<name>.state/ beside the cluster file)')
      .option('--timeout-ms <n>', 'bound of every wait (a start line, an exit)', intOption('timeout-ms'), 30_000)
      .option('--json', 'print one JSON document on stdout');

  common(cluster.command('up <file>').description('start the nodes of this host as detached processes; wait until each serves; return (they keep running)'))
    .option('--auth-token-file <file>', 'the nodes read their token from this file (else they inherit PMRPC_AUTH_TOKEN)')
    .action(async (file: string, opts: ClusterOpts) => {
      const spec = loadClusterFile(file);
      const dir = stateDirOf(spec, opts.stateDir);
      const started = new Map<string, Record<string, unknown>>();
      const failures: string[] = [];
      await Promise.all(
        spec.nodes.filter(isLocalNode).map(async (n) => {
          const s = await nodeStatus(dir, n);
          if (s.state !== 'down') return; // already running: left alone
          try {
            started.set(n.id, await startNode(dir, n, { authTokenFile: opts.authTokenFile, clusterFile: spec.file, timeoutMs: opts.timeoutMs }));
          } catch (e) {
            failures.push((e as Error).message);
          }
        }),
      );
      const nodes = await Promise.all(spec.nodes.map((n) => nodeStatus(dir, n)));
      const rows = nodes.map((s) => ({ ...s, started: started.has(s.id), recovered: started.get(s.id)?.recovered ?? null, recoveryMs: started.get(s.id)?.recoveryMs ?? null }));
      if (opts.json) printJson({ cluster: spec.name, stateDir: dir, nodes: rows, errors: failures });
      else {
        printStatus(nodes);
        for (const f of failures) log(`pmrpc cluster up: ${f}`);
      }
      if (failures.length > 0) process.exitCode = 1;
    });

  common(cluster.command('status <file>').description('each node: serving | starting | down (pid probe + TCP connect)'))
    .addHelpText('after', '\nExit status: 0 when every node serves; 1 otherwise (PMRPC_ERR_NODE_NOT_SERVING on stderr, after the status of every node).')
    .action(async (file: string, opts: ClusterOpts) => {
      const spec = loadClusterFile(file);
      const dir = stateDirOf(spec, opts.stateDir);
      const nodes = await Promise.all(spec.nodes.map((n) => nodeStatus(dir, n, Math.min(opts.timeoutMs, 2000))));
      if (opts.json) printJson({ nodes, serving: nodes.every((s) => s.state === 'serving') });
      else printStatus(nodes);
      const not = nodes.filter((s) => s.state !== 'serving');
      if (not.length > 0) {
        log(`pmrpc: ${CliErrorCodes.NODE_NOT_SERVING}: ${not.map((s) => `${s.id} ${s.state}`).join(', ')} (of ${nodes.length} nodes)`);
        process.exitCode = 1;
      }
    });

  common(cluster.command('kill <file> <node>').description('SIGKILL one local node: a crash (its PM file keeps what reached media)')).action(async (file: string, id: string, opts: ClusterOpts) => {
    const spec = loadClusterFile(file);
    const dir = stateDirOf(spec, opts.stateDir);
    const n = localNode(spec, id);
    const pid = readPid(dir, id);
    if (!nodeProcessAlive(pid, n.pm)) throw new PmrpcError(LauncherErrorCodes.NODE_NOT_RUNNING, `node ${id} is not running`);
    process.kill(pid!, 'SIGKILL');
    if (!(await waitGone(pid!, n.pm, opts.timeoutMs))) throw new PmrpcError(LauncherErrorCodes.NODE_STOP_TIMEOUT, `node ${id} (pid ${pid}) still runs ${opts.timeoutMs} ms after SIGKILL`);
    if (opts.json) printJson({ id, pid, signal: 'SIGKILL' });
    else report(`pmrpc cluster: node ${id} (pid ${pid}) SIGKILLed — a crash; \`pmrpc cluster restart ${file} ${id}\` recovers it`);
  });

  common(cluster.command('restart <file> <node>').description('start one local node again on its PM file (it recovers); refused while it runs'))
    .option('--auth-token-file <file>', 'the node reads its token from this file (else it inherits PMRPC_AUTH_TOKEN)')
    .action(async (file: string, id: string, opts: ClusterOpts) => {
      const spec = loadClusterFile(file);
      const dir = stateDirOf(spec, opts.stateDir);
      const n = localNode(spec, id);
      const pid = readPid(dir, id);
      if (nodeProcessAlive(pid, n.pm)) throw new PmrpcError(LauncherErrorCodes.NODE_RUNNING, `node ${id} is running (pid ${pid}): kill it (a crash) or bring the cluster down first`);
      const line = await startNode(dir, n, { authTokenFile: opts.authTokenFile, clusterFile: spec.file, timeoutMs: opts.timeoutMs });
      if (opts.json) printJson(line);
      else report(`pmrpc cluster: node ${id} serving again on ${n.host}:${n.port} (pid ${String(line.pid)}), recovered in ${Number(line.recoveryMs).toFixed(1)} ms`);
    });

  common(cluster.command('down <file>').description('stop the local nodes in order (SIGTERM, one after another, each waited for)')).action(async (file: string, opts: ClusterOpts) => {
    const spec = loadClusterFile(file);
    const dir = stateDirOf(spec, opts.stateDir);
    const nodes: Array<{ id: string; pid: number | null; stopped: 'sigterm' | 'sigkill' | 'not-running' }> = [];
    for (const n of spec.nodes.filter(isLocalNode)) {
      const pid = readPid(dir, n.id);
      if (!nodeProcessAlive(pid, n.pm)) {
        nodes.push({ id: n.id, pid: null, stopped: 'not-running' });
        rmSync(join(dir, `${n.id}.pid`), { force: true });
        continue;
      }
      process.kill(pid!, 'SIGTERM');
      let stopped: 'sigterm' | 'sigkill' = 'sigterm';
      if (!(await waitGone(pid!, n.pm, opts.timeoutMs))) {
        process.kill(pid!, 'SIGKILL');
        stopped = 'sigkill';
        await waitGone(pid!, n.pm, opts.timeoutMs);
      }
      rmSync(join(dir, `${n.id}.pid`), { force: true });
      nodes.push({ id: n.id, pid: pid!, stopped });
    }
    if (opts.json) printJson({ nodes });
    else for (const x of nodes) report(`pmrpc cluster down: ${x.id} ${x.stopped === 'not-running' ? 'was not running' : x.stopped === 'sigterm' ? `stopped in order (pid ${x.pid})` : `did not stop within ${opts.timeoutMs} ms: SIGKILLed (pid ${x.pid})`}`);
    if (nodes.some((x) => x.stopped === 'sigkill')) process.exitCode = 1;
  });
}
