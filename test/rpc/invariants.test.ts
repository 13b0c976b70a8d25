// Invariants of durable RPC where it hands out ring positions and sequences (DESIGN §10.1,
// pmem/errors.ts invariant()): the credit a RESULT carries (never past the client's applied
// sequence; never short of the request it answers), the sequences and the kept status the wire
// encodes, and the ring slot a client writes an entry into. Each case builds the violation — a
// fault switch skipping the step, as its mutant does, or a bad value handed to the code — and
// asserts PMRPC_ERR_INVARIANT with nothing sent or written: the server halts (it never answers a
// broken invariant as a request error), the client stops before its WRITE.
import t from 'tap';
import { QueuePair } from '../../flush/index.js';
import type { PmrpcError } from '../../pmem/index.js';
import { connectInProcess, DurableRpcClient, type RpcServerOptions, type RpcStrategy } from '../../src/rpc/index.js';
import { encodeAck, encodeKept, encodeResultOf, STATUS_ERROR, STATUS_OK } from '../../src/rpc/wire.js';
import { readU64, rig, SEED } from './fixtures/rig.js';

t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/rpc/invariants.test.ts)`);

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    return (e as { code?: string }).code ?? `not coded: ${(e as Error).message}`;
  }
  return undefined;
}

/** A server with `faults`, one client, one call: what stopped the server, and whether the call was answered. */
async function haltWith(t: Tap.Test, strategy: RpcStrategy, faults: RpcServerOptions['faults']) {
  let halted!: (e: PmrpcError) => void;
  const halt = new Promise<PmrpcError>((r) => (halted = r));
  const { server, fabric, store } = rig({ strategy, faults, onInvariant: (e) => halted(e) });
  server.start();
  const c = connectInProcess(server, fabric);
  let outcome = 'pending';
  c.call('inc', new Uint8Array(4)).result.then(() => (outcome = 'answered'), (e: { code?: string }) => (outcome = `rejected ${String(e.code)}`));
  // A bounded wait on the event (the halt), not on speed.
  let bound: NodeJS.Timeout | undefined;
  const error = await Promise.race([halt, new Promise<undefined>((r) => (bound = setTimeout(() => r(undefined), 60_000)))]);
  clearTimeout(bound);
  await new Promise((r) => setTimeout(r, 50));
  const counter = readU64(store.appView.load(0, 8));
  server.close();
  t.teardown(() => c.close());
  return { error, outcome, counter, halted: server.halted };
}

t.test('a RESULT never carries a credit past the client\'s applied sequence (early-credit)', async (t) => {
  const r = await haltWith(t, 'wflush', { earlyCredit: true });
  t.equal(r.error?.code, 'PMRPC_ERR_INVARIANT', 'the server halts');
  t.match(r.error?.message ?? '', /credit 2, past its applied sequence 1/);
  t.equal(r.halted, r.error, 'and records what stopped it');
  t.equal(r.outcome, 'pending', 'the RESULT with the early credit never left');
});

t.test('a RESULT answers only an applied request (reply-before-apply)', async (t) => {
  for (const strategy of ['farm', 'darpc'] as const) {
    const r = await haltWith(t, strategy, { replyBeforeApply: true });
    t.equal(r.error?.code, 'PMRPC_ERR_INVARIANT', `${strategy}: the server halts`);
    t.match(r.error?.message ?? '', /RESULT of sequence 1 before it is applied/);
    t.equal(r.outcome, 'pending', `${strategy}: the reply never left`);
    t.equal(r.counter, 0n, `${strategy}: nothing was committed after it (the application area is unchanged)`);
  }
});

t.test('the correct server answers with credits that hold (the same calls, no fault)', async (t) => {
  const { server, fabric } = rig({ strategy: 'farm', onInvariant: () => t.fail('no invariant breaks') });
  server.start();
  const c = connectInProcess(server, fabric);
  for (let i = 1; i <= 6; i++) t.equal(readU64(await c.call('inc', new Uint8Array(4)).result), BigInt(i));
  t.equal(server.halted, undefined);
  c.close();
  server.close();
});

t.test('the wire encodes only sequences and credits that are safe integers in range, and a known kept status', async (t) => {
  for (const [what, fn] of [
    ['ACK up to 0', () => encodeAck(0)],
    ['ACK up to -1', () => encodeAck(-1)],
    ['ACK up to 1.5', () => encodeAck(1.5)],
    ['RESULT of sequence 0', () => encodeResultOf(0, 0, STATUS_OK, new Uint8Array(0))],
    ['RESULT with credit -1', () => encodeResultOf(3, -1, STATUS_OK, new Uint8Array(0))],
    ['RESULT with credit 2^53', () => encodeResultOf(3, 2 ** 53, STATUS_OK, new Uint8Array(0))],
    ['a kept result with status 7', () => encodeKept(7, new Uint8Array(2))],
  ] as const) {
    t.equal(codeOf(fn), 'PMRPC_ERR_INVARIANT', what);
  }
  t.equal(encodeAck(1).length, 8);
  t.equal(encodeResultOf(3, 2, STATUS_ERROR, new Uint8Array(1)).length, 25);
  t.same(encodeKept(STATUS_ERROR, Uint8Array.of(5)), Uint8Array.of(STATUS_ERROR, 5));
});

t.test('a client never writes an entry larger than its ring slot (a reconnect with another geometry)', async (t) => {
  const { server, fabric, region } = rig();
  server.start();
  const c = connectInProcess(server, fabric);
  await c.call('inc', new Uint8Array(4)).result;
  // A call posted and not yet polled: a reconnect sends it again, into a ring of 64-byte slots.
  c.call('inc', new Uint8Array(60)).result.catch(() => undefined);
  const { sqp, info } = server.accept({ clientId: c.clientId, ...(c.secret === undefined ? {} : { secret: c.secret }), awaiting: c.awaiting });
  t.ok(info.resumeSeq <= 2, `the call is past the resume point ${info.resumeSeq}`);
  const ringBytes = info.ringSlots * info.slotBytes;
  const ring = region.load(info.ringOffset, ringBytes);
  const cache = server.nic.cacheEntries;
  t.equal(codeOf(() => c.reconnect(new QueuePair(fabric.connect(sqp)), { ...info, slotBytes: 64 })), 'PMRPC_ERR_INVARIANT', 'a 96-byte entry for a 64-byte slot');
  t.same(region.load(info.ringOffset, ringBytes), ring, 'the ring is unchanged');
  t.equal(server.nic.cacheEntries, cache, 'nothing reached the NIC');
  t.type(c, DurableRpcClient);
  c.close();
  server.close();
});
