// One outstanding-request map (issue 26 item 5): a QueuePair hands its map to the TcpLink it posts
// on (Link.adoptRequests); a request is registered and retired there only, and the link reads it —
// its `outstanding`, and the Responses it makes up for the requests sent when the connection drops.
import t from 'tap';
import net from 'node:net';
import { QueuePair, Wr, type Completion } from '../../flush/index.js';
import { TcpLink } from '../../src/transport/index.js';
import { decodeMessage, encodeMessage, FrameReader, frameBytes, PROTOCOL_VERSION, type WireMessage } from '../../src/transport/index.js';
import { until } from './fixtures/helpers.js';

/** A server that says Welcome, then hands each request frame to `onRequest` (it answers, or not). */
async function fakeServer(onRequest: (m: Extract<WireMessage, { type: 'request' }>, s: net.Socket) => void) {
  const sockets: net.Socket[] = [];
  const srv = net.createServer((s) => {
    sockets.push(s);
    s.on('error', () => {});
    const r = new FrameReader(16 << 20);
    let hello = false;
    s.on('data', (c: Buffer) => {
      for (const f of r.push(new Uint8Array(c))) {
        const m = decodeMessage(f);
        if (!hello) {
          hello = true;
          s.write(frameBytes(encodeMessage({ type: 'welcome', version: PROTOCOL_VERSION, qpn: 7, maxFrameBytes: 16 << 20, payload: new Uint8Array(0) })));
        } else if (m.type === 'request') onRequest(m, s);
      }
    });
  });
  await new Promise<void>((res) => srv.listen(0, '127.0.0.1', res));
  return {
    port: (srv.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((res) => {
        for (const s of sockets) s.destroy();
        srv.close(() => res());
      }),
  };
}

const ok = (m: Extract<WireMessage, { type: 'request' }>) => frameBytes(encodeMessage({ type: 'response', qpn: m.qpn, seq: m.seq, completions: m.wrs.map((w, i) => ({ id: w.id ?? i, op: w.op, status: 'ok' as const })) }));

t.test("the QP's map is the link's: registered and retired once, read by the link on a close", async (t) => {
  const seen: Array<Extract<WireMessage, { type: 'request' }>> = [];
  let sock: net.Socket | undefined;
  const fake = await fakeServer((m, s) => {
    seen.push(m);
    sock = s;
  });
  t.teardown(() => fake.close());
  const { link } = await TcpLink.connect({ port: fake.port });
  const qp = new QueuePair(link);
  const results: Completion[][] = [];
  const posts = [0, 1, 2].map((i) => qp.postChain([Wr.read({ rkey: 1, addr: 0 }, 8, { id: 10 + i })]).then((cs) => results.push(cs)));
  t.equal(qp.outstanding, 3, 'the QP registered three');
  t.equal(link.outstanding, 3, 'the link reads the same three');
  await until(() => seen.length === 3, 5000, 'the three requests at the server');
  sock!.write(ok(seen[1]!));
  await until(() => results.length === 1, 5000, 'the answer to the second');
  t.equal(qp.outstanding, 2, 'its response retired it in the QP');
  t.equal(link.outstanding, 2, 'and so on the link');
  sock!.end(frameBytes(encodeMessage({ type: 'goodbye', code: 'PMRPC_ERR_INTERNAL', message: 'boom' })));
  await Promise.all(posts);
  t.match(results.slice(1), [[{ id: 10, status: 'error', code: 'PMRPC_ERR_LINK_CLOSED' }], [{ id: 12, status: 'error', code: 'PMRPC_ERR_LINK_CLOSED' }]], 'the link answered the two sent requests from the map');
  t.equal(qp.outstanding, 0);
  t.equal(link.outstanding, 0);
});

t.test('adoptRequests: one QueuePair per link, and not after bare sends', async (t) => {
  const fake = await fakeServer(() => {});
  t.teardown(() => fake.close());
  const { link } = await TcpLink.connect({ port: fake.port });
  new QueuePair(link);
  t.throws(() => new QueuePair(link), new TypeError('a QueuePair already posts on this link'));
  link.close();
  const bare = (await TcpLink.connect({ port: fake.port })).link;
  bare.send({ type: 'request', qpn: bare.qpn, seq: 4, wrs: [Wr.read({ rkey: 1, addr: 0 }, 8)] });
  t.equal(bare.outstanding, 1, 'used bare, the link registers what it sends');
  t.throws(() => new QueuePair(bare), new TypeError('1 requests were sent on this link before a QueuePair took it'));
  bare.close();
  t.equal(bare.outstanding, 0, 'an owner close drops its own map');
});
