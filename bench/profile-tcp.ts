/**
 * Profiles one `bench tcp` throughput cell (issue 16): a `pmrpc serve` child under `--cpu-prof`
 * and, in this process, the clients (2 × 32 in flight, as `bench tcp --quick`), for `seconds`
 * after a warm-up of ≥ 3,000 requests. Prints the top self-time functions of both processes in
 * µs of CPU per completed request (samples × interval ÷ requests, over the measured window only),
 * then the server's phases (PHASES: inclusive time of the pump, the CPU pass, the redo-log commit…;
 * a phase nested in another is counted in both — under `strict` the CPU pass runs inside the pump).
 *
 *   node --cpu-prof --cpu-prof-dir /tmp/prof dist/bench/profile-tcp.js wflush 4 /tmp/prof
 *   node --cpu-prof --cpu-prof-dir /tmp/prof dist/bench/profile-tcp.js wflush 4 /tmp/prof strict   # serve --strict
 *   node --cpu-prof --cpu-prof-dir /tmp/prof dist/bench/profile-tcp.js wflush 4 /tmp/prof bytes=48  # 48-B payloads (bench redis)
 *   node dist/bench/profile-tcp.js --analyse /tmp/prof     # top self time of every profile there
 *
 * The window (CLOCK_MONOTONIC µs, the clock of V8's profiles on Linux) and the request count are
 * written to window.json beside the profiles; the analysis counts only samples inside it.
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { RpcStrategy } from '../src/rpc/index.js';
import { PAYLOAD_BYTES, RemoteRpcClient } from '../src/server/index.js';
import { inclusiveTimes, phaseTimes, selfTimes, top, type Profile } from './profile-analysis.js';
import { closedLoop, MAIN, startChild, stopChild } from './tcp.js';
import { pinPair } from './placement.js';

async function main(): Promise<void> {
  const strategy = (process.argv[2] ?? 'wflush') as RpcStrategy;
  const seconds = Number(process.argv[3] ?? 4);
  const profDir = process.argv[4] ?? mkdtempSync(join(tmpdir(), 'pmrpc-prof-'));
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-prof-pm-'));
  const extra = process.argv.slice(5);
  const strict = extra.includes('strict');
  // `bytes=N`: request payload bytes (bench redis drives 48; default the workload's 32).
  const payloadBytes = Number(extra.find((a) => a.startsWith('bytes='))?.slice(6) ?? PAYLOAD_BYTES);
  const { child, port } = await startChild(['--cpu-prof', '--cpu-prof-dir', profDir, MAIN, 'serve', '--create', '--pm', join(dir, 'node.pm'), '--size', '64M', '--port', '0', '--strategy', strategy, '--json', ...(strict ? ['--strict'] : [])]);
  // Placed as bench tcp's cells: the clients on one CPU, the server on another (placement.ts).
  const placed = pinPair(child.pid);
  const clients: RemoteRpcClient[] = [];
  for (let k = 0; k < 2; k++) clients.push(await RemoteRpcClient.connect({ port, name: `prof-${k}` }));
  const load = closedLoop(clients, 32, payloadBytes, 1);
  const t0 = performance.now();
  while (load.completed() < 3000 || performance.now() - t0 < 1000) await new Promise((r) => setTimeout(r, 20));
  const mono = (): number => Number(process.hrtime.bigint() / 1000n);
  const from = mono();
  const d0 = load.completed();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const requests = load.completed() - d0;
  const to = mono();
  await load.stop();
  for (const c of clients) await c.close();
  await stopChild(child);
  placed.restore();
  writeFileSync(join(profDir, 'window.json'), JSON.stringify({ strategy, from, to, requests, serverPid: child.pid, clientPid: process.pid }));
  console.log(`${strategy}${strict ? ' strict' : ''} ${payloadBytes} B: ${requests} requests in ${seconds} s (${Math.round(requests / seconds)} /s); profiles in ${profDir}`);
}

function analyse(profDir: string): void {
  const w = JSON.parse(readFileSync(join(profDir, 'window.json'), 'utf8')) as { strategy: string; from: number; to: number; requests: number; serverPid: number; clientPid: number };
  console.log(`${w.strategy}: ${w.requests} requests in the window`);
  for (const f of readdirSync(profDir).filter((x) => x.endsWith('.cpuprofile'))) {
    const p = JSON.parse(readFileSync(join(profDir, f), 'utf8')) as Profile;
    const who = f.includes(`.${w.serverPid}.`) ? 'server' : f.includes(`.${w.clientPid}.`) ? 'client' : 'other';
    console.log(`${who} (${f})`);
    for (const line of top(selfTimes(p, w.from, w.to), w.requests, 25)) console.log(line);
    if (who === 'server') {
      console.log('  phases, inclusive µs/request:');
      for (const [name, us] of phaseTimes(inclusiveTimes(p, w.from, w.to), w.requests)) console.log(`  ${us.toFixed(2).padStart(7)}  ${name}`);
    }
  }
}

if (process.argv[2] === '--analyse') analyse(process.argv[3]!);
else void main();
