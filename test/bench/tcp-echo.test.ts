/** bench tcp's limit (issue 29): the batched echo client answers each data event with ONE write; the per-message echo stays beside it. */
import t from 'tap';
import { benchPayload, echoCell, EchoClientState } from '../../bench/tcp.js';
import { PAYLOAD_BYTES, workloadPayload } from '../../src/server/index.js';

t.test('batched: one write per data event, of every message the event completed', async (t) => {
  const s = new EchoClientState(64, 'batched');
  t.same(s.onData(64 * 2 + 32), [2], 'two and a half messages: one write of two');
  t.same(s.onData(16), [], 'still short of the third: no write');
  t.same(s.onData(16 + 64 * 5), [6], 'the third completes with five more: one write of six');
  t.same(s.onData(0), []);
});

t.test('per-message: one write per completed message', async (t) => {
  const s = new EchoClientState(64, 'per-message');
  t.same(s.onData(64 * 3 + 10), [1, 1, 1]);
  t.same(s.onData(54), [1]);
});

t.test('a message size that is not a positive integer is refused', async (t) => {
  t.throws(() => new EchoClientState(0, 'batched'), RangeError);
  t.throws(() => new EchoClientState(1.5, 'per-message'), RangeError);
});

t.test('bench payloads: the workload payload at its size, repeated to any other', async (t) => {
  t.same(benchPayload(7, 1, 2, PAYLOAD_BYTES), workloadPayload(7, 1, 2));
  const p = benchPayload(7, 1, 2, 48);
  t.equal(p.length, 48);
  t.same(p.subarray(0, PAYLOAD_BYTES), workloadPayload(7, 1, 2));
  t.same(p.subarray(PAYLOAD_BYTES), workloadPayload(7, 1, 2).subarray(0, 48 - PAYLOAD_BYTES));
});

t.test('the echo cells against a real echo server: batched writes ≤ 1 per data event, per-message 1 message per write', async (t) => {
  const plan = { clients: 2, window: 8, warmMs: 50, cellMs: 300, latencyCellMs: 300 };
  const batched = await echoCell(plan, 64, 'batched');
  t.ok(batched.opsPerSecond > 0, `batched echo moved messages (${Math.round(batched.opsPerSecond)}/s)`);
  t.ok(batched.writesPerDataEvent > 0 && batched.writesPerDataEvent <= 1, `≤ 1 write per data event (${batched.writesPerDataEvent})`);
  t.ok(batched.messagesPerWrite >= 1, `≥ 1 message per write (${batched.messagesPerWrite})`);
  const perMessage = await echoCell(plan, 64, 'per-message');
  t.ok(perMessage.opsPerSecond > 0);
  t.equal(perMessage.messagesPerWrite, 1, 'one message per write');
});
