/**
 * Profiles the in-process `bench flush` cell of issue 16's third target (in-process link,
 * in-memory region, DDIO on, inline no-op handler, 64 B, 1 client × 32 outstanding, ring 64
 * slots): run it under `--cpu-prof` and print the top self-time functions in µs of CPU per
 * processed request, over the measured window only (warm-up excluded).
 *
 *   node --cpu-prof --cpu-prof-dir /tmp/prof dist/bench/profile-inproc.js wflush 3 /tmp/prof
 *   node --cpu-prof --cpu-prof-dir /tmp/prof dist/bench/profile-inproc.js wrflush 3 /tmp/prof strict
 *     # `strict`: bench sqlite's pmrpc cell instead (file-backed strict region, 1 KiB, 1 client × 16)
 *   node dist/bench/profile-tcp.js --analyse /tmp/prof     # the same analysis as bench tcp's
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RpcStrategy } from '../src/rpc/index.js';
import { closeBenchPool, runCell, wallClock, type BenchClock } from './flush-cell.js';
import { HEADLINE } from './flush.js';

async function main(): Promise<void> {
  const strategy = (process.argv[2] ?? 'wflush') as RpcStrategy;
  const seconds = Number(process.argv[3] ?? 3);
  const profDir = process.argv[4] ?? mkdtempSync(join(tmpdir(), 'pmrpc-prof-'));
  const mono = (): number => Number(process.hrtime.bigint() / 1000n);
  // The measured window starts warmupMs after the cell's first reading of its clock.
  let from = 0;
  const clock: BenchClock = {
    ...wallClock,
    nowNs: () => {
      if (from === 0) from = mono() + 300_000;
      return wallClock.nowNs();
    },
  };
  const strict = process.argv[5] === 'strict';
  const r = await runCell(
    strict
      ? { ...HEADLINE, strategy, payloadBytes: 1024, clients: 1, outstanding: 16, handlerUs: 0, placement: 'inline', ddio: true, strict: true, msync: 'inline' }
      : { link: 'in-process', strategy, payloadBytes: 64, clients: 1, outstanding: 32, handlerUs: 0, placement: 'inline', ringSlots: 64, ddio: true },
    { warmupMs: 300, measureMs: seconds * 1000, drainMsMax: 10000 },
    1,
    clock,
  );
  await closeBenchPool();
  const requests = Math.round(r.throughputPerSecond * seconds);
  writeFileSync(join(profDir, 'window.json'), JSON.stringify({ strategy, from, to: from + seconds * 1e6, requests, serverPid: process.pid, clientPid: -1 }));
  console.log(`${strategy}: ${Math.round(r.throughputPerSecond)} /s processed, ${((r.cpuCores * 1e6) / r.throughputPerSecond).toFixed(1)} µs CPU per request; profiles in ${profDir}`);
}

void main();
