// One request outstanding over TCP (issue 16): a decoupled strategy's durable signal (the NIC's
// response to the FLUSH / READ / SEND chain, or the server CPU's ACK) must be on the socket — handed
// to the kernel, nothing corked or buffered — BEFORE the server CPU runs the handler (the redo log
// commit and the RESULT come after). Batching socket writes per event-loop turn must not hold the
// durable signal behind processing: with one request outstanding the client waits for exactly that
// signal, so processing would be added to every durable call. Event order only, no timing.
import t from 'tap';
import { createPrng, seededEntropy } from '../../pmem/index.js';
import type { RpcAppServer } from '../../src/apps/rpc/index.js';
import { NodeHost } from '../../src/node/index.js';
import type { RpcHandler, RpcStrategy } from '../../src/rpc/index.js';
import { RemoteRpcClient } from '../../src/server/index.js';

const seed = 16;
t.comment(`seed ${seed}`);

/** Frames the server sends before the handler runs: the Welcome, then the durable signal of the first call. */
const DURABLE_FRAMES: Partial<Record<RpcStrategy, number>> = {
  wflush: 2, // Welcome, the WRITE+FLUSH chain's Response
  sflush: 2, // Welcome, the SEND+FLUSH chain's Response
  raw: 2, // Welcome, the WRITE+READ chain's Response
  wrflush: 3, // Welcome, the WRITE's Response, the ACK
  srflush: 3, // Welcome, the SEND's Response, the ACK
};

for (const [strategy, frames] of Object.entries(DURABLE_FRAMES) as Array<[RpcStrategy, number]>) {
  t.test(`${strategy}: the durable signal has left the server when the handler runs`, async (t) => {
    let node: NodeHost<RpcAppServer> | undefined;
    const seen: Array<{ framesOut: number; outgoingBytes: number }> = [];
    const handler: RpcHandler = () => {
      const s = node!.tcp.connectionStats().find((c) => c.state === 'open')!;
      seen.push({ framesOut: s.framesOut, outgoingBytes: s.outgoingBytes });
      return { images: [], result: new Uint8Array([1]) };
    };
    node = await NodeHost.start<RpcAppServer>({
      app: 'rpc',
      pmPath: undefined,
      sizeBytes: 2 << 20,
      appOptions: { strategy, handlers: { m: handler } },
      entropy: seededEntropy(createPrng(seed)),
      region: { seed, entropy: seededEntropy(createPrng(seed + 1)) },
    });
    t.teardown(() => node!.close());
    const c = await RemoteRpcClient.connect({ port: node.address().port });
    t.teardown(() => c.close());
    const order: string[] = [];
    const call = c.rpc.call('m', new Uint8Array(8));
    const durable = call.durable.then(() => order.push('durable'));
    const result = call.result.then(() => order.push('result'));
    await Promise.all([durable, result]);
    t.equal(seen.length, 1, 'the handler ran once');
    t.equal(seen[0]!.framesOut, frames, `${frames} frames written before the handler ran`);
    t.equal(seen[0]!.outgoingBytes, 0, 'and none of them waits in a cork or a buffer');
    t.same(order, ['durable', 'result'], 'the client learns durability before the result');
  });
}

// A coupled strategy's reply is its durable signal, so it is never held for a later turn; but the
// replies of one settled batch follow one another with no processing between them (notify's
// `more`): they leave in one socket write, not one each (which cost farm and darpc a syscall per
// request, a baseline handicap the decoupled strategies do not have).
for (const strategy of ['farm', 'darpc'] as const) {
  t.test(`${strategy}: the replies of one batch leave in one socket write`, async (t) => {
    const { Socket } = await import('node:net');
    let node: NodeHost<RpcAppServer> | undefined;
    node = await NodeHost.start<RpcAppServer>({
      app: 'rpc',
      pmPath: undefined,
      sizeBytes: 2 << 20,
      appOptions: { strategy, handlers: { m: () => ({ images: [], result: new Uint8Array([1]) }) } },
      entropy: seededEntropy(createPrng(seed)),
      region: { seed, entropy: seededEntropy(createPrng(seed + 1)) },
    });
    t.teardown(() => node!.close());
    const port = node.address().port;
    const c = await RemoteRpcClient.connect({ port });
    t.teardown(() => c.close());
    await c.rpc.call('m', new Uint8Array(8)).result; // warm: the connection is set up
    const write = Socket.prototype.write;
    let serverWrites = 0;
    Socket.prototype.write = function (this: InstanceType<typeof Socket>, ...args: unknown[]) {
      if (this.localPort === port) serverWrites++;
      return (write as (...a: unknown[]) => boolean).apply(this, args);
    } as typeof write;
    t.teardown(() => {
      Socket.prototype.write = write;
    });
    const n = 16;
    const order: number[] = [];
    const calls = Array.from({ length: n }, (_, i) => c.rpc.call('m', new Uint8Array(8)).result.then(() => order.push(i)));
    await Promise.all(calls);
    Socket.prototype.write = write;
    t.same(order, Array.from({ length: n }, (_, i) => i), 'the replies arrive in request order');
    // Before: ≥ n writes (one per reply). The n requests may reach the server in a few reads, each
    // with its own NIC run and batch; a handful of writes at most.
    t.ok(serverWrites <= 4, `${serverWrites} server writes for ${n} replies sent together`);
  });
}
