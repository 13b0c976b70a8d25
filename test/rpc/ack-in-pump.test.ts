// Receiver-persist strategies over TCP (issue 29): the server CPU polls, persists and ACKs what a
// NIC run brought at that run's end (Rnic.runEnded), inside the socket read's pump, so the ACK
// leaves in the same socket write as the run's Responses — and never before what it acknowledges
// is in PM media. Event order only, no timing: each ACK is checked against a crash image taken at
// the moment the server hands it to the transport, and the events of each call (the Response and
// the ACK handed over, the server's socket writes, the handler) are recorded in order.
import t from 'tap';
import { Socket } from 'node:net';
import { createPrng, seededEntropy } from '../../pmem/index.js';
import type { RpcAppServer } from '../../src/apps/rpc/index.js';
import { NodeHost } from '../../src/node/index.js';
import type { RpcFaults, RpcHandler } from '../../src/rpc/index.js';
import { decodeAck, RPC_ACK_IMM } from '../../src/rpc/wire.js';
import { RemoteRpcClient } from '../../src/server/index.js';

const seed = Number(process.env.PMRPC_SEED ?? 29);
t.comment(`seed ${seed} (replay: PMRPC_SEED=${seed} npx tap test/rpc/ack-in-pump.test.ts)`);

interface Run {
  /** Per ACK: the sequences it covers that were NOT in PM media when it was handed to the transport. */
  early: number[];
  acks: number;
  /** Events per call, in order. */
  events: string[][];
}

async function run(strategy: 'wrflush' | 'srflush', calls: number, rpcFaults?: RpcFaults): Promise<Run> {
  let node: NodeHost<RpcAppServer> | undefined;
  let events: string[] = [];
  const handler: RpcHandler = () => {
    events.push('handler');
    return { images: [], result: new Uint8Array([1]) };
  };
  node = await NodeHost.start<RpcAppServer>({
    app: 'rpc',
    pmPath: undefined,
    sizeBytes: 2 << 20,
    ddio: true, // a drained entry is visible, not durable, until the server CPU persists it
    appOptions: { strategy, handlers: { m: handler }, ...(rpcFaults === undefined ? {} : { rpcFaults }) },
    entropy: seededEntropy(createPrng(seed)),
    region: { seed, entropy: seededEntropy(createPrng(seed + 1)), tracing: true },
  });
  const port = node.address().port;
  const c = await RemoteRpcClient.connect({ port });
  const out: Run = { early: [], acks: 0, events: [] };
  const region = node.region;
  const store = node.server.rpc.store;
  let ackedUpTo = 0;
  node.tcp.observer = {
    request: () => {},
    message: (_qpn, m) => {
      if (m.type === 'response') events.push('response');
      if (m.type !== 'notify' || m.imm !== RPC_ACK_IMM) return;
      events.push('ack');
      out.acks++;
      const upTo = decodeAck(m.data)!;
      // What a crash now leaves: the media (tracing: pending lines are not in it).
      const st = region.crashState();
      const base = st.media.length - st.sizeBytes;
      const clientId = store.conn.entries()[0]!.clientId;
      for (let s = ackedUpTo + 1; s <= upTo; s++) {
        const off = store.entryOffset(clientId, s);
        const media = st.media.subarray(base + off, base + off + 32);
        const visible = region.load(off, 32);
        // The entry's header (commit word, lap, client, method, sequence, length) must be on media as it is in memory.
        if (!Buffer.from(media).equals(Buffer.from(visible))) out.early.push(s);
      }
      ackedUpTo = Math.max(ackedUpTo, upTo);
    },
  };
  const write = Socket.prototype.write;
  Socket.prototype.write = function (this: InstanceType<typeof Socket>, ...args: unknown[]) {
    if (this.localPort === port) events.push('write');
    return (write as (...a: unknown[]) => boolean).apply(this, args);
  } as typeof write;
  try {
    await c.rpc.call('m', new Uint8Array(8)).result; // warm: the connection is set up
    for (let i = 0; i < calls; i++) {
      events = [];
      const call = c.rpc.call('m', new Uint8Array(16).fill(i));
      await Promise.all([call.durable, call.result]);
      out.events.push([...events]);
    }
  } finally {
    Socket.prototype.write = write;
    await c.close();
    await node.close();
  }
  return out;
}

for (const strategy of ['wrflush', 'srflush'] as const) {
  t.test(`${strategy}: the ACK is taken at the NIC run's end, after its entry is in PM media, in the Responses' write`, async (t) => {
    const r = await run(strategy, 8);
    t.ok(r.acks >= 8, `${r.acks} ACKs`);
    t.same(r.early, [], 'every acknowledged entry was in PM media when its ACK was handed to the transport');
    // One call outstanding at a time: its Response and its ACK are handed over inside the pump and
    // leave in ONE socket write, before the handler runs; the RESULT is the second write.
    // (Before: response, write, ack, write, handler, write — the ACK in a write of its own.)
    for (const [i, ev] of r.events.entries()) t.same(ev, ['response', 'ack', 'write', 'handler', 'write'], `call ${i + 1}: ${ev.join(', ')}`);
  });

  t.test(`${strategy}: teeth — with the ACK sent before the persist at the run's end, the check above sees it`, async (t) => {
    const r = await run(strategy, 8, { ackBeforePersistInPump: true });
    t.ok(r.early.length > 0, `${r.early.length} entries acknowledged before they were in PM media`);
  });
}
