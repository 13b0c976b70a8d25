/**
 * bench hostile: what a hostile peer costs the other clients of a node (issue 15; DESIGN §6
 * "untrusted until bound"; docs/wire.md "What a peer can cost the server").
 *
 * A `pmrpc serve` child (rpc app, wflush, an auth token) and, in this process, a well-behaved
 * client that keeps `window` durable RPCs in flight over TCP. Phase by phase — none, then each
 * attack — it records every acknowledgement (call → durable): the longest gap between two
 * acknowledgements, p50/p99 latency, and the server's RSS (/proc/<pid>/status, sampled). Attacks:
 *   stranger   — peers without the token send, over and over, their largest frames: 16 MiB of
 *                empty work requests as a first frame (the issue's ~9 s stall), the largest first
 *                frame the server accepts (handshakeBytesMax − 4 bytes, not a Hello), and a Hello
 *                of that size with a wrong token;
 *   trusted    — a peer with the token and an rpc client id sends 16 MiB of empty work requests
 *                (refused at the 4097th), then a valid request of 4096 READs of 3 KiB (a 14 MiB
 *                response), over and over;
 *   idle       — hundreds of connections that never say Hello, kept coming; meanwhile the good
 *                client drops its connection and reconnects (it must get in; the none phase
 *                reconnects too, for comparison). The gap does not count the reconnect itself.
 * Target (issue 15): the longest gap between acknowledgements stays under 250 ms in every attack.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { RemoteRpcClient, WORKLOAD_METHOD, workloadPayload } from '../src/server/index.js';
import { TCP_SERVER_DEFAULTS } from '../src/transport/index.js';
import { barChart } from './charts.js';
import { machineDescription } from './measure.js';
import { histogram, MAIN, startChild, stopChild } from './tcp.js';
import type { BenchOptions, BenchReport, BenchSuite } from './types.js';

const TOKEN = 'bench-hostile-token';
const GAP_TARGET_MS = 250;
type Attack = 'none' | 'stranger' | 'trusted' | 'idle';
const ATTACKS: Attack[] = ['none', 'stranger', 'trusted', 'idle'];

interface Plan {
  window: number;
  phaseMs: number;
  idleConnections: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const PEER = fileURLToPath(new URL('./hostile-peer.js', import.meta.url));

interface AttackStats {
  rounds: number;
  goodbyes: Record<string, number>;
}

/** Starts the attackers in a child process; resolves once they run, with their stopper. */
function startAttack(attack: Exclude<Attack, 'none'>, port: number, idleConnections: number): Promise<{ stop: () => Promise<AttackStats> }> {
  const child = spawn(process.execPath, [PEER, JSON.stringify({ attack, port, token: TOKEN, idleConnections })], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines: string[] = [];
  let buf = '';
  let wake: (() => void) | undefined;
  child.stdout!.on('data', (b: Buffer) => {
    buf += b.toString('utf8');
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      lines.push(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
    }
    wake?.();
  });
  child.on('exit', () => wake?.());
  const line = async (k: number): Promise<string> => {
    while (lines.length <= k && child.exitCode === null) await new Promise<void>((r) => (wake = r));
    const l = lines[k];
    if (l === undefined) throw new Error(`bench hostile: the ${attack} peer exited (code ${child.exitCode})`);
    return l;
  };
  return line(0).then(() => ({
    stop: async () => {
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 30_000);
      try {
        return JSON.parse(await line(1)) as AttackStats;
      } finally {
        clearTimeout(t);
      }
    },
  }));
}

function rssBytes(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

interface PhaseResult {
  attack: Attack;
  acks: number;
  gapMaxMs: number;
  p50us: number;
  p99us: number;
  rssMaxBytes: number;
  attackRounds: number;
  goodbyes: Record<string, number>;
  reconnectMs?: number;
  reconnectRetries?: number;
}

async function runPhases(plan: Plan, seed: number, progress: BenchOptions['progress']): Promise<{ phases: PhaseResult[]; rssStartBytes: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-bench-hostile-'));
  const { child, port } = await startChild([MAIN, 'serve', '--create', '--pm', join(dir, 'node.pm'), '--size', '64M', '--port', '0', '--strategy', 'wflush', '--json'], { ...process.env, PMRPC_AUTH_TOKEN: TOKEN });
  const pid = child.pid!;
  const client = await RemoteRpcClient.connect({ port, authToken: TOKEN, name: 'good' });
  try {
    // The good client: `window` calls in flight; each acknowledgement (durable) is timed.
    let acks: number[] = [];
    let h = histogram();
    let stopped = false;
    let seq = 0;
    let inflight = 0;
    const issue = (): void => {
      while (!stopped && inflight < plan.window && client.connected) {
        const t0 = performance.now();
        const call = client.rpc.call(WORKLOAD_METHOD, workloadPayload(seed, client.clientId, ++seq));
        inflight++;
        call.durable.then(
          () => {
            const now = performance.now();
            acks.push(now);
            h.recordValue(Math.max(1, Math.round((now - t0) * 1000)));
          },
          () => undefined,
        );
        call.result.then(
          () => {
            inflight--;
            issue();
          },
          () => {
            inflight--;
          },
        );
      }
    };
    issue();
    await sleep(300);
    const rssStartBytes = rssBytes(pid);
    const phases: PhaseResult[] = [];
    let i = 0;
    for (const attack of ATTACKS) {
      progress(i++, ATTACKS.length, attack);
      let rssMax = rssBytes(pid);
      const sampler = setInterval(() => (rssMax = Math.max(rssMax, rssBytes(pid))), 50);
      const attacker = attack === 'none' ? undefined : await startAttack(attack, port, plan.idleConnections);
      acks = [];
      h = histogram();
      const t0 = performance.now();
      let reconnectMs: number | undefined;
      let reconnectRetries = 0;
      let window: [number, number] | undefined;
      if (attack === 'idle' || attack === 'none') {
        // Mid-phase, the good client drops its connection and reconnects (through the crowd of idle
        // connections in the idle phase; the none phase gives the reconnect time to compare with).
        await sleep(plan.phaseMs / 2);
        const r0 = performance.now();
        // A client refused by a full handshake pool (PMRPC_ERR_TOO_MANY_HANDSHAKES) tries again.
        for (;;) {
          try {
            await client.reconnect();
            break;
          } catch (e) {
            if ((e as { code?: string }).code !== 'PMRPC_ERR_TOO_MANY_HANDSHAKES' || ++reconnectRetries > 50) throw e;
            await sleep(20);
          }
        }
        const r1 = performance.now();
        reconnectMs = Math.round(r1 - r0);
        window = [r0, r1];
        issue();
        await sleep(plan.phaseMs / 2);
      } else await sleep(plan.phaseMs);
      const t1 = performance.now();
      const stats: AttackStats = (await attacker?.stop()) ?? { rounds: 0, goodbyes: {} };
      clearInterval(sampler);
      // The longest gap between acknowledgements, not counting the reconnect itself (reported apart).
      let gap = 0;
      let prev = t0;
      for (const a of acks) {
        const skipped = window !== undefined && prev <= window[1] && a >= window[0] ? window[1] - window[0] : 0;
        gap = Math.max(gap, a - prev - skipped);
        prev = a;
      }
      gap = Math.max(gap, t1 - prev);
      phases.push({
        attack,
        acks: acks.length,
        gapMaxMs: Math.round(gap * 10) / 10,
        p50us: h.getValueAtPercentile(50),
        p99us: h.getValueAtPercentile(99),
        rssMaxBytes: rssMax,
        attackRounds: stats.rounds,
        goodbyes: stats.goodbyes,
        ...(reconnectMs === undefined ? {} : { reconnectMs, reconnectRetries }),
      });
    }
    stopped = true;
    progress(ATTACKS.length, ATTACKS.length, 'done');
    return { phases, rssStartBytes };
  } finally {
    client.close();
    await stopChild(child);
    rmSync(dir, { recursive: true, force: true });
  }
}

const mib = (b: number): string => `${(b / (1 << 20)).toFixed(0)} MiB`;

export const hostileBench: BenchSuite = {
  name: 'hostile',
  description: 'a well-behaved durable-RPC client over TCP while hostile peers attack the node (oversized first frames, maximal trusted frames, idle connections): longest gap between acknowledgements, p50/p99, server RSS',
  async run(o: BenchOptions): Promise<BenchReport> {
    const plan: Plan = o.quick ? { window: 8, phaseMs: 2000, idleConnections: 100 } : { window: 8, phaseMs: 6000, idleConnections: 300 };
    const { phases, rssStartBytes } = await runPhases(plan, o.seed, o.progress);
    const base = phases.find((p) => p.attack === 'none')!;
    const ratios: Record<string, number> = {};
    const summary: string[] = [];
    summary.push(`pmrpc bench hostile${o.quick ? ' --quick' : ''} — pmrpc serve (rpc app, wflush, auth token) in a child process; the good client and the attackers here, over 127.0.0.1`);
    summary.push(`good client: ${plan.window} durable RPCs in flight; ${plan.phaseMs} ms per phase; ${machineDescription().cpus} CPUs, Node ${process.version}; server defaults (handshakeBytesMax ${TCP_SERVER_DEFAULTS.handshakeBytesMax}, maxHandshakes ${TCP_SERVER_DEFAULTS.maxHandshakes}, tickUnits ${TCP_SERVER_DEFAULTS.tickUnits})`);
    summary.push(`server RSS at start ${mib(rssStartBytes)}; target: longest gap between acknowledgements < ${GAP_TARGET_MS} ms under every attack`);
    summary.push('');
    summary.push(`${'attack'.padEnd(9)} ${'acks'.padEnd(7)} ${'gap max'.padEnd(10)} ${'p50'.padEnd(9)} ${'p99'.padEnd(10)} ${'p99 ÷ none'.padEnd(11)} ${'RSS max'.padEnd(9)} attack rounds (goodbyes)`);
    for (const p of phases) {
      const r = base.p99us > 0 ? p.p99us / base.p99us : 0;
      if (p.attack !== 'none') {
        ratios[`${p.attack}_p99_over_none`] = Math.round(r * 1000) / 1000;
        ratios[`${p.attack}_gap_ms`] = p.gapMaxMs;
      }
      summary.push(`${p.attack.padEnd(9)} ${String(p.acks).padEnd(7)} ${`${p.gapMaxMs} ms`.padEnd(10)} ${`${p.p50us} µs`.padEnd(9)} ${`${p.p99us} µs`.padEnd(10)} ${(p.attack === 'none' ? '—' : `×${r.toFixed(2)}`).padEnd(11)} ${mib(p.rssMaxBytes).padEnd(9)} ${p.attackRounds} ${JSON.stringify(p.goodbyes)}${p.reconnectMs === undefined ? '' : `; reconnect ${p.reconnectMs} ms (${p.reconnectRetries} retries)`}`);
    }
    const worst = Math.max(...phases.filter((p) => p.attack !== 'none').map((p) => p.gapMaxMs));
    ratios.worst_gap_ms = worst;
    summary.push('');
    summary.push(`longest gap under attack: ${worst} ms (target < ${GAP_TARGET_MS} ms: ${worst < GAP_TARGET_MS ? 'met' : 'NOT met'}); the gap with no attack: ${base.gapMaxMs} ms`);
    const charts = [
      barChart('gap', 'longest gap between acknowledgements of a well-behaved client, per attack (ms)', phases.map((p) => ({ name: p.attack, gapMs: p.gapMaxMs })), { x: 'name', y: 'gapMs', yTitle: 'longest gap (ms)' }),
      barChart('latency', 'call → durable latency of the well-behaved client, per attack', phases.flatMap((p) => [{ name: p.attack, percentile: 'p50', us: p.p50us }, { name: p.attack, percentile: 'p99', us: p.p99us }]), { x: 'name', y: 'us', yTitle: 'latency (µs)', group: 'percentile' }),
    ];
    return {
      suite: 'hostile',
      config: { ...machineDescription(), quick: o.quick, plan, gapTargetMs: GAP_TARGET_MS, rssStartBytes, server: 'pmrpc serve (child process), rpc app, wflush, ddio on, auth token', serverDefaults: { handshakeBytesMax: TCP_SERVER_DEFAULTS.handshakeBytesMax, maxHandshakes: TCP_SERVER_DEFAULTS.maxHandshakes, handshakeTimeoutMs: TCP_SERVER_DEFAULTS.handshakeTimeoutMs, tickUnits: TCP_SERVER_DEFAULTS.tickUnits, maxFrameBytes: TCP_SERVER_DEFAULTS.maxFrameBytes } },
      rows: phases.map((p) => ({ cell: 'phase', name: p.attack, ...p })),
      ratios,
      summary,
      charts,
    };
  },
};
