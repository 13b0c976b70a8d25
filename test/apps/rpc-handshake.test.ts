/**
 * The rpc app's Hello payload: a reconnect's awaited sequences travel as runs, so that a client
 * with a large ring still fits the server's pre-handshake bound (handshakeBytesMax, 16 KiB).
 */
import t from 'tap';
import { decodeHelloPayload, encodeHelloPayload } from '../../src/apps/rpc/index.js';

t.test('awaited sequences round-trip, in runs, and a full 65,536-entry ring fits 16 KiB', async (t) => {
  const big = Array.from({ length: 65_536 }, (_, i) => 1_000 + i);
  const bytes = encodeHelloPayload({ clientId: 7, secret: 'a'.repeat(43), awaiting: big });
  t.ok(bytes.length < 16 * 1024 - 4, `a reconnect awaiting 65,536 sequences is ${bytes.length} bytes`);
  t.same(decodeHelloPayload(bytes).awaiting, big);
  const gappy = [9, 3, 4, 5, 20, 21, 40];
  t.same(decodeHelloPayload(encodeHelloPayload({ clientId: 1, awaiting: gappy })).awaiting, [3, 4, 5, 9, 20, 21, 40]);
  t.same(decodeHelloPayload(new TextEncoder().encode(JSON.stringify({ clientId: 1, awaiting: [1, 2, 3] }))).awaiting, [1, 2, 3], 'plain sequences still accepted');
});

t.test('a malformed or oversized awaited list is PMRPC_ERR_BAD_HANDSHAKE', async (t) => {
  const hello = (awaiting: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify({ clientId: 1, awaiting }));
  for (const bad of [[[5, 2]], [[0, 3]], [[1, 2, 3]], ['x'], [[1, 1e6]], [1.5], 'nope']) {
    t.throws(() => decodeHelloPayload(hello(bad)), { code: 'PMRPC_ERR_BAD_HANDSHAKE' }, JSON.stringify(bad));
  }
});
