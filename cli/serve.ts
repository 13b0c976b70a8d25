/** `pmrpc serve`: one node — an app (rpc, kv) on a PM file, served over TCP (src/node). */
import type { Command } from 'commander';
import { defineErrorCodes, ErrorCodes, exitWithParent, isInvariantError, PmemRegion, PmrpcError, type ErrorCodesOf } from '../pmem/index.js';
import { RPC_STRATEGIES, type RpcStrategy } from '../src/rpc/index.js';
import { KV_SYSTEMS, NODE_APP_FLAGS, NODE_APP_NAMES, NodeHost, appByName, nodeAppFlags, resolveAuthToken, type NodeAppFlag, type NodeAppName } from '../src/node/index.js';
import { NodeMetrics, authFailureLogger } from '../src/node/index.js';
import { badOption, intOption, log } from './output.js';
import { startTxShardAgent, txNodeAppOptions, type TxShardAgent } from '../src/cluster/index.js';
import { addLayoutFlags, layoutAppOptions, type LayoutFlags } from './layout-flags.js';

export const ServeErrorCodes = defineErrorCodes('cli', {
  /** `serve --size` on an existing PM file whose size differs (the size is fixed when the file is formatted). */
  SIZE_MISMATCH: 'PMRPC_ERR_SIZE_MISMATCH',
  /** A `serve` / `format` flag that does not apply to the app (e.g. `--strategy` with `--app kv`). */
  OPTION_NOT_APPLICABLE: 'PMRPC_ERR_OPTION_NOT_APPLICABLE',
});

declare module '../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof ServeErrorCodes> {}
}

/** Parses a byte count: an integer, optionally with a K/M/G (KiB, MiB, GiB) suffix. A malformed or unsafe one is PMRPC_ERR_REGION_SIZE. */
export function sizeOption(name: string): (v: string) => number {
  return (v: string) => {
    const m = /^(\d+)\s*([kmg]i?b?)?$/i.exec(v.trim());
    if (!m) throw new PmrpcError(ErrorCodes.REGION_SIZE, `--${name} must be a byte count such as 16777216 or 16M, got ${v}`);
    const mult = m[2] === undefined ? 1 : { k: 1 << 10, m: 1 << 20, g: 1 << 30 }[m[2][0]!.toLowerCase() as 'k' | 'm' | 'g'];
    const n = Number(m[1]) * mult;
    if (!Number.isSafeInteger(n)) throw new PmrpcError(ErrorCodes.REGION_SIZE, `--${name} is too large: ${v}`);
    return n;
  };
}

/** The flag of each app-specific option (its attribute name). */
const FLAG_OF: Readonly<Record<NodeAppFlag, string>> = Object.freeze({ strategy: '--strategy', keepResults: '--keep-results', maxClients: '--max-clients', leaseMs: '--lease-ms', system: '--system', cluster: '--cluster' });

/** The flags of `serve` / `format` that configure one app only (option attribute name -> the apps it applies to), from the node registry (NODE_APP_FLAGS). */
export const APP_FLAGS: Readonly<Record<string, { flag: string; apps: readonly string[] }>> = Object.freeze(
  Object.fromEntries(
    (Object.keys(FLAG_OF) as NodeAppFlag[]).map((name) => [name, { flag: FLAG_OF[name], apps: NODE_APP_NAMES.filter((a) => NODE_APP_FLAGS[a as NodeAppName].flags.includes(name)) }]),
  ),
);

/** Parses `--system` (the kv app's: KV_SYSTEMS). */
export function systemOption(v: string): string {
  if (!(KV_SYSTEMS as readonly string[]).includes(v)) throw new TypeError(`--system must be ${KV_SYSTEMS.join(' or ')}, got ${v}`);
  return v;
}

/** PMRPC_ERR_OPTION_NOT_APPLICABLE for a flag given on the command line that does not configure `app`. */
export function refuseForeignFlags(cmd: Command, app: string): void {
  for (const [name, { flag, apps }] of Object.entries(APP_FLAGS)) {
    if (cmd.getOptionValueSource(name) !== 'cli' || apps.includes(app)) continue;
    throw new PmrpcError(ServeErrorCodes.OPTION_NOT_APPLICABLE, `${flag} applies to the ${apps.join(' and ')} app${apps.length > 1 ? 's' : ''}, not to ${app}: drop it`);
  }
}

/** The app options of a node from the command line: a tx node of a cluster takes them from its cluster file, any other from serveAppOptions. */
export function nodeAppOptions(app: string, opts: LayoutFlags & { cluster?: string | undefined; node: string; strategy: RpcStrategy; keepResults?: boolean | undefined; system: string; maxClients?: number | undefined; leaseMs?: number | undefined }): object {
  const base = (nodeAppFlags(app).clusterShard && opts.cluster !== undefined
    ? txNodeAppOptions(opts.cluster, opts.node)
    : serveAppOptions(app, { strategy: opts.strategy, keepResults: opts.keepResults === true, system: opts.system, maxClients: opts.maxClients, leaseMs: opts.leaseMs })) as Record<string, unknown>;
  // Layout flags (--kv-slots, …) on top: they apply when the file is formatted.
  return { ...base, ...layoutAppOptions(app, opts, base) };
}

export function onOffOption(name: string): (v: string) => boolean {
  return (v: string) => {
    if (v === 'on') return true;
    if (v === 'off') return false;
    throw new TypeError(`--${name} must be on or off, got ${v}`);
  };
}

export function strategyOption(v: string): RpcStrategy {
  if (!(RPC_STRATEGIES as readonly string[]).includes(v)) throw new TypeError(`--strategy must be one of ${RPC_STRATEGIES.join(', ')}, got ${v}`);
  return v as RpcStrategy;
}

interface ServeOpts extends LayoutFlags {
  app: string;
  node: string;
  pm: string;
  size: number;
  create?: boolean;
  port: number;
  host: string;
  authToken?: string;
  authTokenFile?: string;
  ddio: boolean;
  strategy: RpcStrategy;
  system: string;
  keepResults?: boolean;
  maxClients?: number;
  leaseMs?: number;
  killAfterEvents?: number;
  killAfterCompletions?: number;
  strict?: boolean;
  journalBytes?: number;
  json?: boolean;
  cluster?: string;
  metricsPort?: number;
  metricsHost: string;
}

/** The app options `serve` builds from its flags (the rest are the app's defaults): NodeAppFlags.options. */
export function serveAppOptions(app: string, o: { strategy: RpcStrategy; keepResults: boolean; system: string; maxClients?: number | undefined; leaseMs?: number | undefined }): object {
  return nodeAppFlags(app).options(o);
}

/**
 * `--size` given on an existing, formatted PM file must be the file's size (it is fixed at
 * format): PMRPC_ERR_SIZE_MISMATCH otherwise. Read without locking (the lock is taken by the open).
 */
function checkSizeOfExisting(pm: string, size: number | undefined): void {
  if (size === undefined) return;
  let fileSize: number;
  try {
    fileSize = PmemRegion.readHeader(pm).sizeBytes;
  } catch {
    return; // missing, empty or damaged: the open says what is wrong
  }
  if (fileSize !== size) {
    throw new PmrpcError(ServeErrorCodes.SIZE_MISMATCH, `${pm} holds ${fileSize} data bytes, --size says ${size}: a PM file's size is fixed when it is formatted; drop --size (or give the file's size), or format a new file`);
  }
}

export function registerServe(program: Command): void {
  const cmd = program
    .command('serve')
    .description('one node: host an app on a formatted PM file over TCP — open, lock and recover it; SIGTERM shuts down in order, SIGKILL is a crash')
    .requiredOption('--pm <file>', 'the PM file, made by `pmrpc format` (a missing or empty one is refused unless --create); an existing one is recovered')
    .option('--app <name>', `the app (${NODE_APP_NAMES.join(', ')})`, NODE_APP_NAMES[0])
    .option('--node <id>', 'the node id in the start line (a cluster file id)', 'node')
    .option('--create', 'create and format the PM file first when it is missing or empty (as `pmrpc format` does); an existing one is opened as always')
    .option('--size <bytes>', 'data bytes of a new PM file with --create (K, M, G suffixes; 64-byte multiple, at most 4G minus 4K); on an existing file it must match the file\'s size', sizeOption('size'), 16 << 20)
    .option('--port <n>', 'TCP port; 0 picks a free one (printed)', intOption('port'), 0)
    .option('--host <h>', 'address to bind; anything but loopback requires an auth token', '127.0.0.1')
    .option('--auth-token-file <file>', 'read the token every client must present from this file (else PMRPC_AUTH_TOKEN)')
    .option('--auth-token <t>', 'the token on the command line (visible in ps; prefer PMRPC_AUTH_TOKEN or --auth-token-file)')
    .option('--ddio <on|off>', 'DDIO: NIC writes land in the CPU cache (on) or in PM (off)', onOffOption('ddio'), true)
    .option('--strategy <s>', `rpc app: remote-persistence strategy (${RPC_STRATEGIES.join(', ')})`, strategyOption, 'wflush')
    .option('--keep-results', 'rpc app: keep each result in its effect record, so a result survives a crash')
    .option('--max-clients <n>', 'rpc app: connection slots (client table size) of a new PM file (default 64; an existing file keeps its own)', intOption('max-clients'))
    .option('--lease-ms <ms>', 'rpc app: a client silent this long may lose its slot to a new client when the table is full (default 60000)', intOption('lease-ms'))
    .option('--system <s>', 'kv app: prism (PRISM-KV) or pilaf (the Pilaf-style baseline)', systemOption, 'prism')
    .option('--kill-after-events <n>', 'SIGKILL itself after this many persistence events (region crash points): a seeded real crash that replays', intOption('kill-after-events'))
    .option('--kill-after-completions <n>', 'SIGKILL itself at the first media-changing crash point (drain, eviction, NIC drain into media) once its n-th completion (a message to a client: every strategy\'s acknowledgement is one) has left the process: a crash between acknowledgements and the write-back after them', intOption('kill-after-completions'))
    .option('--cluster <file>', 'tx app: the cluster file this node belongs to — its shard index and the shard count (its place among the tx nodes) and its options come from there, and the node runs the resolver agent over node-to-node links (--lease-ms: its pass period, default 300)')
    .option('--metrics-port <n>', 'serve Prometheus metrics (/metrics) and the probes /healthz and /readyz over HTTP on this port (0 picks one: metricsPort in the start line); off by default', intOption('metrics-port'))
    .option('--metrics-host <h>', 'address of the metrics server', '127.0.0.1')
    .option('--strict', 'msync on every drain (durability across a machine crash; slow)')
    .option('--journal-bytes <bytes>', 'with --strict: size of the journal beside the PM file (FILE.journal) that a strict sync appends to (K, M suffixes; a multiple of 4K, at least 8K; default 16M); 0: no journal, each sync msyncs the PM file\'s ranges', sizeOption('journal-bytes'))
    .option('--json', 'logs off: only the one JSON line on stdout');
  addLayoutFlags(cmd)
    .addHelpText('after', '\nOn listening it prints one JSON line on stdout: {"node", "app", "host", "port", "pid", "pm", "recovered": {...}, "recoveryMs", ..., "metricsPort" (with --metrics-port)}.\nWith --metrics-port: GET /metrics (Prometheus, pmrpc_* series), /healthz (200: the process is up), /readyz (200 once recovered and serving, 503 before and during shutdown).\nFailed authentications are logged on stderr (one line each, at most 10 a second).\nThe rpc app serves the demo workload (method append-digest); the kv app PRISM-KV (welcome {system, rkey, base}).\nThe process holds the PM file\'s exclusive lock while it runs: a second `serve` on it exits 1 with PMRPC_ERR_FILE_LOCKED (naming the holder\'s pid).\nA flag of another app (--strategy with --app kv, …) is refused: PMRPC_ERR_OPTION_NOT_APPLICABLE.\nLayout flags (--kv-slots, --kv-probe-slots, --kv-classes, --rs-blocks, --tx-items) apply when the file is created; an existing file keeps the layout its header records. A flag of another app is PMRPC_ERR_LAYOUT_WRONG_APP, a bad value PMRPC_ERR_BAD_LAYOUT, a layout larger than --size PMRPC_ERR_SIZE_TOO_SMALL.\nExit 2: PMRPC_ERR_AUTH_REQUIRED. Exit 70: PMRPC_ERR_INVARIANT (an invariant of pmrpc\'s own state broke: the node stopped before writing bad state; restart recovers from the file).')
    .action(async (opts: ServeOpts, command: Command) => {
      if (opts.port < 0 || opts.port > 65535) throw new RangeError(`--port must be in [0, 65535], got ${opts.port}`);
      if (opts.killAfterEvents !== undefined && opts.killAfterEvents < 1) throw new RangeError(`--kill-after-events must be >= 1, got ${opts.killAfterEvents}`);
      if (opts.killAfterCompletions !== undefined && opts.killAfterCompletions < 1) throw new RangeError(`--kill-after-completions must be >= 1, got ${opts.killAfterCompletions}`);
      if (opts.journalBytes !== undefined) {
        if (opts.strict !== true) throw badOption('--journal-bytes applies with --strict only (a strict region syncs through its journal)');
        const j = opts.journalBytes;
        if (!(j === 0 || (j >= 8192 && j % 4096 === 0))) throw badOption(`--journal-bytes must be 0 (no journal) or a multiple of 4096 of at least 8192 (8K), got ${j}`);
      }
      const app = appByName(opts.app);
      refuseForeignFlags(command, app.name);
      checkSizeOfExisting(opts.pm, command.getOptionValueSource('size') === 'cli' ? opts.size : undefined);
      let events = 0;
      const limit = opts.killAfterEvents;
      let completions = 0;
      let completionsArmed = false;
      const completionLimit = opts.killAfterCompletions;
      const txCluster = nodeAppFlags(app.name).clusterShard && opts.cluster !== undefined ? opts.cluster : undefined;
      // Run by the real-crash Supervisor: die with it (a killed test leaves no server behind).
      exitWithParent(true);
      // A broken invariant of pmrpc itself (PMRPC_ERR_INVARIANT, rethrown out of the event loop by
      // the RPC server) stops the node at once: nothing more is written; a restart recovers.
      process.on('uncaughtExceptionMonitor', (e) => {
        if (!isInvariantError(e)) return;
        process.stderr.write(`pmrpc: ${e.message}: the node stopped before writing bad state; restart recovers from the file\n`);
        process.exit(70);
      });
      // Metrics first: /healthz answers (and /readyz says 503) while the node recovers.
      if (opts.metricsPort !== undefined && (opts.metricsPort < 0 || opts.metricsPort > 65535)) throw new RangeError(`--metrics-port must be in [0, 65535], got ${opts.metricsPort}`);
      const metrics = opts.metricsPort === undefined ? undefined : await NodeMetrics.start({ host: opts.metricsHost, port: opts.metricsPort });
      const node = await NodeHost.start({
        app,
        appOptions: nodeAppOptions(app.name, opts),
        nodeId: opts.node,
        pmPath: opts.pm,
        create: opts.create === true,
        sizeBytes: opts.size,
        host: opts.host,
        port: opts.port,
        authToken: resolveAuthToken(opts),
        ddio: opts.ddio,
        strict: opts.strict === true,
        ...(opts.journalBytes === undefined ? {} : { region: { journalBytes: opts.journalBytes } }),
        onDisconnect: authFailureLogger((l) => log(`pmrpc serve: ${l}`)),
        // A crash point is just before a media-changing event (or after a completion): dying here is a real crash at a replayable place.
        onCrashPoint: limit === undefined && completionLimit === undefined ? undefined : (e) => {
          if (limit !== undefined && ++events >= limit) process.kill(process.pid, 'SIGKILL');
          // Armed one event-loop turn after the n-th message to a client (the turn's messages have
          // left the process: the client holds those acknowledgements), fired by the next media
          // change: what was acknowledged and not yet written back is lost (raw with DDIO on).
          if (completionLimit === undefined) return;
          if (e.kind === 'completion') {
            if (++completions === completionLimit) setImmediate(() => (completionsArmed = true));
          } else if (completionsArmed) process.kill(process.pid, 'SIGKILL');
        },
      }).catch(async (e: unknown) => {
        await metrics?.close(); // the HTTP server would keep a refused start alive
        throw e;
      });
      metrics?.attach(node);
      const line = { ...node.startLine(), ...(metrics === undefined ? {} : { metricsPort: metrics.port }) };
      const extra = nodeAppFlags(app.name).startLine({ ...opts, keepResults: opts.keepResults === true });
      // The handlers before the start line: a SIGTERM sent on reading it must find them (until a
      // listener exists, the kernel's default action kills the process: a crash, not a shutdown).
      let agent: TxShardAgent | undefined;
      const stopped = new Promise<void>((resolve) => {
        const stop = (): void => {
          process.off('SIGTERM', stop);
          process.off('SIGINT', stop);
          metrics?.unready();
          void (agent?.stop() ?? Promise.resolve()).then(() => node.close()).then(() => metrics?.close()).then(resolve, (e: unknown) => {
            log(`pmrpc serve: shutdown failed: ${(e as Error).message}`);
            process.exitCode = 1;
            resolve();
          });
        };
        process.on('SIGTERM', stop);
        process.on('SIGINT', stop);
      });
      process.stdout.write(`${JSON.stringify({ ...line, pid: process.pid, pmFile: opts.pm, ddio: opts.ddio, ...extra })}\n`);
      // A tx shard of a cluster resolves what it participates in: at start (a restart), then per lease.
      agent = txCluster === undefined ? undefined : startTxShardAgent(txCluster, opts.node, { authToken: resolveAuthToken(opts), leaseMs: opts.leaseMs ?? 300, log: opts.json ? undefined : log });
      if (!opts.json) {
        const r = node.recovery;
        log(`pmrpc serve: ${opts.pm} ${r.created ? 'created' : `recovered (${JSON.stringify({ ...r, clients: undefined })})`}`);
        log(`pmrpc serve: node ${opts.node}, app ${app.name} on ${line.host}:${line.port} (pid ${process.pid}); SIGTERM to stop`);
      }
      await stopped;
      if (!opts.json) log('pmrpc serve: stopped');
    });
}
