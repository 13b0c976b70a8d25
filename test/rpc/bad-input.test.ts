// Bad input: an unknown method, an oversized payload, a handler that throws or returns invalid
// effects, a client that disconnects mid-request, a client that writes beyond its credits: coded
// errors or documented behaviour, nothing lost, the server keeps serving the others.
import t from 'tap';
import { PmrpcError, type ErrorCode } from '../../pmem/index.js';
import { QueuePair, Wr } from '../../flush/index.js';
import { encodeEntry } from '../../recovery/index.js';
import { connectInProcess, methodId } from '../../src/rpc/index.js';
import { readU64, rig, SEED, settle } from './fixtures/rig.js';

t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/rpc/bad-input.test.ts)`);

for (const strategy of ['wflush', 'srflush', 'darpc'] as const) {
  t.test(`${strategy}: unknown method, throwing handler, invalid effects -> coded error results; the stream goes on`, async (t) => {
    const { server, fabric } = rig({ strategy });
    server.register('boom', () => {
      throw new Error('kaboom');
    });
    server.register('coded', () => {
      throw new PmrpcError('PMRPC_ERR_APP_REFUSED' as ErrorCode, 'not today'); // an app's own code, not one of pmrpc's
    });
    server.register('outside', () => ({ images: [{ offset: 1 << 20, bytes: new Uint8Array(8) }] }));
    server.start();
    const c = connectInProcess(server, fabric);
    const a = c.call('nope', new Uint8Array(4));
    const b = c.call('boom', new Uint8Array(4));
    const d = c.call('coded', new Uint8Array(4));
    const e = c.call('outside', new Uint8Array(4));
    const f = c.call('inc', new Uint8Array(4));
    await t.rejects(a.result, { code: 'PMRPC_ERR_UNKNOWN_METHOD' });
    await t.rejects(b.result, { code: 'PMRPC_ERR_HANDLER_FAILED', message: /kaboom/ });
    await t.rejects(d.result, { code: 'PMRPC_ERR_APP_REFUSED', message: /not today/ });
    await t.rejects(e.result, { code: 'PMRPC_ERR_HANDLER_FAILED', message: /invalid effects/ });
    t.equal(Number(readU64(await f.result)), 1, 'the next request is served; failed ones had no effects');
    for (const x of [a, b, d, e, f]) await t.resolves(x.durable, 'failed requests are durable (and applied, with no effects)');
    server.close();
  });
}

t.test('a payload larger than a ring slot is refused at the call; nothing is sent', async (t) => {
  const { server, fabric } = rig();
  server.start();
  const c = connectInProcess(server, fabric);
  t.equal(c.maxPayloadBytes, 96);
  t.throws(() => c.call('inc', new Uint8Array(97)), { code: 'PMRPC_ERR_TOO_LARGE' });
  const ok = c.call('inc', new Uint8Array(96));
  t.equal(ok.seq, 1, 'the refused call took no sequence number');
  t.equal(Number(readU64(await ok.result)), 1);
  server.close();
});

t.test('a client that disconnects mid-request: its promises reject PMRPC_ERR_DISCONNECTED, the others are served', async (t) => {
  const { server, fabric, store } = rig({ strategy: 'wrflush' });
  server.start();
  const a = connectInProcess(server, fabric);
  const b = connectInProcess(server, fabric);
  const pa = [0, 1, 2].map(() => a.call('inc', new Uint8Array(8)));
  a.close();
  for (const x of pa) await t.rejects(x.durable, { code: 'PMRPC_ERR_DISCONNECTED' });
  for (const x of pa) await t.rejects(x.result, { code: 'PMRPC_ERR_DISCONNECTED' });
  t.throws(() => a.call('inc', new Uint8Array(1)), { code: 'PMRPC_ERR_DISCONNECTED' });
  const pb = [0, 1, 2].map(() => b.call('inc', new Uint8Array(8)));
  await Promise.all(pb.map((x) => x.result));
  t.equal(store.conn.appliedSeq(b.clientId), 3, 'the other client is served');
  // Documented: what a client posted before it disconnected may still be applied (it was sent).
  t.ok(store.conn.appliedSeq(a.clientId) <= 3);
  server.close();
});

t.test('a client writing beyond its credits is cut off with a coded error; the others are served', async (t) => {
  const { server, fabric, store } = rig({ strategy: 'wflush' });
  server.start();
  const good = connectInProcess(server, fabric);
  const { sqp, info } = server.accept();
  const qp = new QueuePair(fabric.connect(sqp));
  // Sequence 5 (lap 2) into the slot of sequence 1: a valid entry that is not the expected one.
  const bytes = encodeEntry({ clientId: info.clientId, seq: 5, methodId: methodId('inc'), payload: new Uint8Array(8) }, info);
  await qp.postChain([Wr.write({ rkey: info.rkey, addr: info.ringOffset }, bytes)]);
  await settle();
  t.equal(server.connectionErrors.length, 1);
  t.equal((server.connectionErrors[0]!.error as { code: string }).code, 'PMRPC_ERR_RING_OVERRUN');
  t.equal(store.conn.appliedSeq(info.clientId), 0, 'nothing of the bad client applied');
  // Outside its ring: the NIC refuses it (the MR covers only the client's ring).
  const c = await qp.post(Wr.write({ rkey: info.rkey, addr: 0 }, new Uint8Array(8)));
  t.equal(c.code, 'PMRPC_ERR_OUT_OF_BOUNDS');
  const r = await good.call('inc', new Uint8Array(8)).result;
  t.equal(Number(readU64(r)), 1, 'the good client is served');
  server.close();
});
