// bench/probe-tcp.ts runs as docs/benchmarks.md shows it (`node dist/bench/probe-tcp.js wflush N [strict] [json]`): a
// serve child, two clients, the rate, the latency and the stalls of the window, one JSON line.
import t from 'tap';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const PROBE = fileURLToPath(new URL('../../dist/bench/probe-tcp.js', import.meta.url));

function probe(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [PROBE, ...args], { timeout: 60_000 }, (err, stdout, stderr) => (err === null ? resolve(stdout) : reject(new Error(`${err.message}\n${stderr}`))));
  });
}

t.test('one second of a plain and a strict serve: requests counted, the stall figures within their bounds', async (t) => {
  for (const strict of [false, true]) {
    const out = JSON.parse((await probe(['wflush', '1', ...(strict ? ['strict'] : []), 'bytes=48', 'json'])).trim()) as Record<string, unknown>;
    t.equal(out.strict, strict);
    t.equal(out.payloadBytes, 48);
    t.ok((out.requests as number) > 0, `${out.requests} requests`);
    t.same((out.perSecond as number[]).length, 1);
    t.equal((out.perSecond as number[])[0], out.requests, 'the one second holds every counted request');
    t.ok((out.p50us as number) > 0 && (out.p50us as number) <= (out.p99us as number) && (out.p99us as number) <= (out.maxUs as number), 'p50 ≤ p99 ≤ max');
    const share = out.stalledShare as number;
    t.ok(share >= 0 && share <= 1, `stalled share ${share}`);
    t.ok((out.stalls as number) >= 0 && (out.longestGapUs as number) >= 0);
    t.ok((out.stalls as number) === 0 || (out.longestGapUs as number) >= 2000, 'a stall is a gap of at least 2 ms');
    const frozen = out.frozenMsPerSecond as number;
    t.ok(frozen >= 0 && frozen <= 1000, `frozen ${frozen} ms a second`);
    // CPU a request, each side with its system part (the part is within the whole).
    for (const side of ['server', 'client']) {
      const all = out[`${side}CpuUsPerOp`] as number;
      const system = out[`${side}SystemUsPerOp`] as number;
      t.ok(typeof all === 'number' && typeof system === 'number' && all >= 0 && system >= 0 && system <= all, `${side} CPU ${all} µs a request, system ${system}`);
    }
  }
});

t.test("bench tcp's cell watched by the frozen-time canary (bench redis's cells): the canary's figures come back with the cell's", async (t) => {
  const { rpcCell } = await import('../../dist/bench/tcp.js');
  const cell = await rpcCell('wflush', { clients: 2, window: 8, warmMs: 200, cellMs: 300, latencyCellMs: 300 }, 1, 'result', { canary: true });
  t.ok(cell.opsPerSecond > 0);
  t.ok(cell.frozen !== undefined, 'frozen reported');
  // By order, not speed: the canary runs before the window opens (startCanary resolves once it runs) and wakes after it closes.
  t.ok(cell.frozen!.spanMs >= 300 - 2, `canary watched ${cell.frozen!.spanMs} ms around a 300 ms window`);
  t.ok(cell.frozen!.frozenMsPerSecond >= 0 && cell.frozen!.frozenMsPerSecond <= 1000);
  // The cell's CPU a request, each side with its system part within the whole.
  t.ok(cell.serverCpuUsPerOp !== null && cell.serverSystemUsPerOp !== null && cell.serverCpuUsPerOp >= 0 && cell.serverSystemUsPerOp! >= 0 && cell.serverSystemUsPerOp! <= cell.serverCpuUsPerOp!, `server ${cell.serverCpuUsPerOp} (system ${cell.serverSystemUsPerOp})`);
  t.ok(cell.clientCpuUsPerOp !== null && cell.clientSystemUsPerOp !== null && cell.clientCpuUsPerOp >= 0 && cell.clientSystemUsPerOp! >= 0 && cell.clientSystemUsPerOp! <= cell.clientCpuUsPerOp!, `client ${cell.clientCpuUsPerOp} (system ${cell.clientSystemUsPerOp})`);
  const plain = await rpcCell('wflush', { clients: 1, window: 4, warmMs: 200, cellMs: 200, latencyCellMs: 200 }, 1);
  t.equal(plain.frozen, undefined, 'no canary unless asked');
});
