/** bench tcp's limit (issue 29): the batched echo client answers each data event with ONE write; the per-message echo stays beside it. */
import t from 'tap';
import { benchPayload, echoBytesOf, echoCell, EchoClientState } from '../../bench/tcp.js';
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

t.test('two writes: the client answers as batched, and counts only the echo bytes of a data event', async (t) => {
  const s = new EchoClientState(64, 'two-writes');
  t.same(s.onData(64 * 3), [3], 'one write of every message completed');
  const ack = (n: number) => Buffer.alloc(n, 0xaa);
  const echo = (n: number) => Buffer.alloc(n, 0x5a);
  t.equal(echoBytesOf(ack(16)), 0, 'acknowledgements only');
  t.equal(echoBytesOf(echo(128)), 128, 'echo only');
  t.equal(echoBytesOf(Buffer.concat([ack(16), echo(128)])), 128, 'a read\'s acknowledgements, then its echo');
  t.equal(echoBytesOf(Buffer.concat([echo(40), ack(24), echo(64), ack(8)])), 104, 'the tail of an echo, the next read\'s acknowledgements and echo, more acknowledgements');
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

t.test('the echo cells against a real echo server: batched writes ≤ 1 per data event, per-message 1 message per write, two writes an acknowledgement per message', async (t) => {
  const plan = { clients: 2, window: 8, warmMs: 50, cellMs: 300, latencyCellMs: 300 };
  const batched = await echoCell(plan, 64, 'batched');
  t.ok(batched.opsPerSecond > 0, `batched echo moved messages (${Math.round(batched.opsPerSecond)}/s)`);
  t.ok(batched.writesPerDataEvent > 0 && batched.writesPerDataEvent <= 1, `≤ 1 write per data event (${batched.writesPerDataEvent})`);
  t.ok(batched.messagesPerWrite >= 1, `≥ 1 message per write (${batched.messagesPerWrite})`);
  t.equal(batched.acksPerMessage, 0, 'the one-write echo server sends no acknowledgement');
  const perMessage = await echoCell(plan, 64, 'per-message');
  t.ok(perMessage.opsPerSecond > 0);
  t.equal(perMessage.messagesPerWrite, 1, 'one message per write');
  const two = await echoCell(plan, 64, 'two-writes');
  t.ok(two.opsPerSecond > 0, `two-write echo moved messages (${Math.round(two.opsPerSecond)}/s)`);
  t.ok(two.acksPerMessage > 0.9 && two.acksPerMessage < 1.1, `one acknowledgement per echoed message (${two.acksPerMessage})`);
  t.ok(two.writesPerDataEvent > 0 && two.writesPerDataEvent <= 1, `the client still writes ≤ 1 per data event (${two.writesPerDataEvent})`);
});
