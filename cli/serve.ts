/** `pmrpc serve`: one durable RPC node over TCP on a PM file (src/server/node.ts). */
import type { Command } from 'commander';
import { RPC_STRATEGIES, type RpcStrategy } from '../src/rpc/index.js';
import { RpcNode, WORKLOAD_HANDLERS } from '../src/server/index.js';
import { intOption, log } from './output.js';

/** Parses a byte count: an integer, optionally with a K/M/G (KiB, MiB, GiB) suffix. */
export function sizeOption(name: string): (v: string) => number {
  return (v: string) => {
    const m = /^(\d+)\s*([kmg]i?b?)?$/i.exec(v.trim());
    if (!m) throw new TypeError(`--${name} must be a byte count such as 16777216 or 16M, got ${v}`);
    const mult = m[2] === undefined ? 1 : { k: 1 << 10, m: 1 << 20, g: 1 << 30 }[m[2][0]!.toLowerCase() as 'k' | 'm' | 'g'];
    const n = Number(m[1]) * mult;
    if (!Number.isSafeInteger(n)) throw new TypeError(`--${name} is too large: ${v}`);
    return n;
  };
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

interface ServeOpts {
  pm: string;
  size: number;
  port: number;
  host: string;
  authToken?: string;
  ddio: boolean;
  strategy: RpcStrategy;
  keepResults?: boolean;
  killAfterEvents?: number;
  strict?: boolean;
  json?: boolean;
}

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('serve durable RPC over TCP on a PM file: create it, or open and recover it; SIGTERM shuts down in order, SIGKILL is a crash')
    .requiredOption('--pm <file>', 'the PM file (created when absent; an existing one is recovered)')
    .option('--size <bytes>', 'data bytes of a new PM file (K, M, G suffixes)', sizeOption('size'), 16 << 20)
    .option('--port <n>', 'TCP port; 0 picks a free one (printed)', intOption('port'), 0)
    .option('--host <h>', 'address to bind; anything but loopback requires --auth-token', '127.0.0.1')
    .option('--auth-token <t>', 'token every client must present (it crosses the wire in clear)')
    .option('--ddio <on|off>', 'DDIO: NIC writes land in the CPU cache (on) or in PM (off)', onOffOption('ddio'), true)
    .option('--strategy <s>', `remote-persistence strategy (${RPC_STRATEGIES.join(', ')})`, strategyOption, 'wflush')
    .option('--keep-results', 'keep each result in its effect record, so a result survives a crash')
    .option('--kill-after-events <n>', 'SIGKILL itself after this many persistence events (region crash points): a seeded real crash that replays', intOption('kill-after-events'))
    .option('--strict', 'msync on every drain (durability across a machine crash; slow)')
    .option('--json', 'logs off: only the one JSON line on stdout')
    .addHelpText('after', '\nOn listening it prints one JSON line on stdout: {"port", "host", "pid", "pmFile", "strategy", "ddio", "recovered": {...}}.\nThe node serves the demo workload (method append-digest). Exit 2: PMRPC_ERR_AUTH_REQUIRED.')
    .action(async (opts: ServeOpts) => {
      if (opts.port < 0 || opts.port > 65535) throw new RangeError(`--port must be in [0, 65535], got ${opts.port}`);
      if (opts.killAfterEvents !== undefined && opts.killAfterEvents < 1) throw new RangeError(`--kill-after-events must be >= 1, got ${opts.killAfterEvents}`);
      let events = 0;
      const limit = opts.killAfterEvents;
      const node = await RpcNode.start({
        pmPath: opts.pm,
        sizeBytes: opts.size,
        host: opts.host,
        port: opts.port,
        authToken: opts.authToken,
        ddio: opts.ddio,
        strategy: opts.strategy,
        keepResults: opts.keepResults === true,
        strict: opts.strict === true,
        handlers: WORKLOAD_HANDLERS,
        // A crash point is just before a media-changing event (or after a completion): dying here is a real crash at a replayable place.
        onCrashPoint: limit === undefined ? undefined : () => {
          if (++events >= limit) process.kill(process.pid, 'SIGKILL');
        },
      });
      const a = node.address();
      process.stdout.write(`${JSON.stringify({ port: a.port, host: a.host, pid: process.pid, pmFile: opts.pm, strategy: opts.strategy, ddio: opts.ddio, recovered: node.recovery })}\n`);
      if (!opts.json) {
        const r = node.recovery;
        log(`pmrpc serve: ${opts.pm} ${r.created ? 'created' : `recovered (epoch ${r.epoch}: ${r.replayed} records replayed, ${r.reexecuted} requests re-executed, ${r.invalidated} slots invalidated, ${r.recoveryMs.toFixed(1)} ms)`}`);
        log(`pmrpc serve: ${opts.strategy} on ${a.host}:${a.port} (pid ${process.pid}); SIGTERM to stop`);
      }
      await new Promise<void>((resolve) => {
        const stop = (): void => {
          process.off('SIGTERM', stop);
          process.off('SIGINT', stop);
          void node.close().then(resolve, (e: unknown) => {
            log(`pmrpc serve: shutdown failed: ${(e as Error).message}`);
            process.exitCode = 1;
            resolve();
          });
        };
        process.on('SIGTERM', stop);
        process.on('SIGINT', stop);
      });
      if (!opts.json) log('pmrpc serve: stopped');
    });
}
