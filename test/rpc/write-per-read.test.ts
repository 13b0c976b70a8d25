// One socket write per pipelined socket read (issue 29): the server's frames a read of a pipelined
// burst produces — the NIC's Responses, the server CPU's ACKs (handed over inside the read's pump)
// and the RESULTs of the CPU passes its NIC run scheduled — leave in ONE write to that client,
// as the batched TCP echo answers each read with one write. (Before: two — the pump's durable
// signals at its end, the RESULTs at the end of the turn.) Counted by events, not time: the
// server socket's 'data' events and write() calls, in order. A read of one request (one call
// outstanding) keeps its durable signal ahead of processing (test/node/latency-order). The hold is
// the TcpNicServer option gatherReadRequestsMin, off by default (two writes a read: durable signals
// never wait for their burst's processing).
import t from 'tap';
import { Socket } from 'node:net';
import { createPrng, seededEntropy } from '../../pmem/index.js';
import type { RpcAppServer } from '../../src/apps/rpc/index.js';
import { NodeHost } from '../../src/node/index.js';
import type { RpcHandler, RpcStrategy } from '../../src/rpc/index.js';
import { RemoteRpcClient } from '../../src/server/index.js';

const seed = Number(process.env.PMRPC_SEED ?? 29);
t.comment(`seed ${seed} (replay: PMRPC_SEED=${seed} npx tap test/rpc/write-per-read.test.ts)`);

const BURST = 16;
const BURSTS = 4;

async function run(strategy: RpcStrategy, ddio: boolean, gatherReadRequestsMin?: number): Promise<{ reads: Array<{ requests: number; writes: number }>; results: number[][]; stats: { reads: number; writes: number } }> {
  const node = await NodeHost.start<RpcAppServer>({
    app: 'rpc',
    pmPath: undefined,
    sizeBytes: 2 << 20,
    ddio,
    ...(gatherReadRequestsMin === undefined ? {} : { tcp: { gatherReadRequestsMin } }),
    appOptions: { strategy, handlers: { m: ((req) => ({ images: [], result: req.payload.slice(0, 1) })) satisfies RpcHandler } },
    entropy: seededEntropy(createPrng(seed)),
    region: { seed, entropy: seededEntropy(createPrng(seed + 1)) },
  });
  const port = node.address().port;
  const c = await RemoteRpcClient.connect({ port });
  await c.rpc.call('m', new Uint8Array(8)).result; // warm: the connection is set up
  const framesIn = (): number => node.tcp.connectionStats().find((s) => s.state === 'open')!.framesIn;
  const reads: Array<{ requests: number; writes: number }> = [];
  const emit = Socket.prototype.emit;
  const write = Socket.prototype.write;
  Socket.prototype.emit = function (this: InstanceType<typeof Socket>, ev: string | symbol, ...args: unknown[]) {
    if (ev !== 'data' || this.localPort !== port) return (emit as (...a: unknown[]) => boolean).call(this, ev, ...args);
    const before = framesIn();
    const read = { requests: 0, writes: 0 };
    reads.push(read);
    try {
      return (emit as (...a: unknown[]) => boolean).call(this, ev, ...args);
    } finally {
      read.requests = framesIn() - before;
    }
  } as typeof emit;
  Socket.prototype.write = function (this: InstanceType<typeof Socket>, ...args: unknown[]) {
    if (this.localPort === port && reads.length > 0) reads.at(-1)!.writes++;
    return (write as (...a: unknown[]) => boolean).apply(this, args);
  } as typeof write;
  const results: number[][] = [];
  const s0 = node.tcp.connectionStats().find((s) => s.state === 'open')!;
  let stats = { reads: 0, writes: 0 };
  try {
    for (let b = 0; b < BURSTS; b++) {
      // Sent in one turn: the client's link gathers them into one write (one read on the server, or a few).
      const calls = Array.from({ length: BURST }, (_, i) => c.rpc.call('m', new Uint8Array(8).fill(b * BURST + i)));
      results.push(await Promise.all(calls.map(async (x) => (await x.result)[0]!)));
      await Promise.all(calls.map((x) => x.durable));
    }
    const s1 = node.tcp.connectionStats().find((s) => s.state === 'open')!;
    stats = { reads: s1.reads - s0.reads, writes: s1.writes - s0.writes };
  } finally {
    Socket.prototype.emit = emit;
    Socket.prototype.write = write;
    await c.close();
    await node.close();
  }
  return { reads, results, stats };
}

for (const [strategy, ddio] of [['wflush', false], ['srflush', true], ['wrflush', true], ['sflush', false]] as const) {
  t.test(`${strategy}: with gatherReadRequestsMin 2, a pipelined read is answered by one socket write`, async (t) => {
    const r = await run(strategy, ddio, 2);
    t.same(r.results, Array.from({ length: BURSTS }, (_, b) => Array.from({ length: BURST }, (_, i) => (b * BURST + i) & 0xff)), 'every call got its own result, in order');
    const bursts = r.reads.filter((x) => x.requests >= 2);
    t.ok(bursts.length >= 1, `${bursts.length} of ${r.reads.length} reads carried a pipelined burst (${r.reads.map((x) => x.requests).join(', ')} requests)`);
    // Before: 2 writes per read (the pump's Responses/ACKs, then the passes' RESULTs).
    for (const x of bursts) t.equal(x.writes, 1, `a read of ${x.requests} requests: ${x.writes} socket write(s) until the next read`);
    // connectionStats() counts the same (every read of this run carried requests).
    t.equal(r.stats.reads, r.reads.length, `connectionStats: ${r.stats.reads} reads`);
    t.equal(r.stats.writes, r.reads.reduce((a, x) => a + x.writes, 0), `connectionStats: ${r.stats.writes} writes`);
  });
}

t.test('wflush: by default (the hold off), a read costs two writes (its Responses, then its RESULTs): durable signals do not wait', async (t) => {
  const r = await run('wflush', false);
  const bursts = r.reads.filter((x) => x.requests >= 2);
  t.ok(bursts.length >= 1, `${bursts.length} reads carried a pipelined burst`);
  for (const x of bursts) t.equal(x.writes, 2, `a read of ${x.requests} requests: ${x.writes} socket writes`);
});
