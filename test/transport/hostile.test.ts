// Hostile peers against a TcpNicServer (issue 15, items 1 and 4: untrusted until bound, fair
// admission): the largest frame a stranger may send, a maximal frame from an authenticated peer,
// a valid but huge request, idle connections, bytes past the handshake bound — while a
// well-behaved client keeps writing, flushing and reading back. Events and counts only (the stall
// in milliseconds is measured by `pmrpc bench hostile`); every wait is bounded.
import t from 'tap';
import { Access, QueuePair, Rnic, Wr, type WorkRequest } from '../../flush/index.js';
import { createPrng, PmemRegion, seededEntropy, VirtualClock } from '../../pmem/index.js';
import { PROTOCOL_VERSION, TcpLink, TcpNicServer, TCP_SERVER_DEFAULTS, type DisconnectInfo, type TcpNicServerOptions } from '../../src/transport/index.js';
import { RawClient, until } from './fixtures/helpers.js';
import { emptyWrsFrame } from '../../bench/hostile-frames.js';

const seed = Number(process.env.PMRPC_SEED ?? 15);
t.comment(`seed ${seed} (replay: PMRPC_SEED=${seed} npx tap test/transport/hostile.test.ts)`);

const REGION = 1 << 20;
const TOKEN = 'hostile-token';
/** One socket read: what the kernel hands the server at once (Node reads up to 64 KiB). */
const SOCKET_READ = 64 * 1024;

async function serve(opts: Partial<TcpNicServerOptions> = {}) {
  const region = PmemRegion.createInMemory(REGION, { entropy: seededEntropy(createPrng(seed)) });
  const nic = new Rnic(region, { entropy: seededEntropy(createPrng(seed + 1)) });
  const pd = nic.allocPd();
  const mr = nic.registerMr(pd, 0, REGION, Access.ALL);
  const disconnects: DisconnectInfo[] = [];
  const server = new TcpNicServer(nic, { authToken: TOKEN, accept: () => ({ qp: nic.createQp(pd) }), onDisconnect: (d) => disconnects.push(d), ...opts });
  const { port } = await server.listen();
  return { region, nic, mr, server, port, disconnects };
}

/** A well-behaved client: WRITE + FLUSH + READ back, one chain at a time, counting acknowledgements. */
async function goodClient(port: number, rkey: number, base: number) {
  const { link } = await TcpLink.connect({ port, authToken: TOKEN, name: 'good' });
  const qp = new QueuePair(link);
  const state = { acks: 0, failure: undefined as unknown, running: true };
  const rng = createPrng(seed ^ 0x77);
  const done = (async () => {
    while (state.running) {
      const off = base + rng.int(0, 63) * 64;
      const data = Uint8Array.from({ length: 64 }, () => rng.int(0, 255));
      try {
        const cs = await qp.postChain([Wr.write({ rkey, addr: off }, data), Wr.flush('persistent', rkey, { addr: off, len: 64 }), Wr.read({ rkey, addr: off }, 64)]);
        if (!cs.every((c) => c.status === 'ok') || Buffer.compare(cs[2]!.data!, data) !== 0) throw new Error(`good client: ${JSON.stringify(cs.map((c) => [c.status, c.code]))}`);
        state.acks++;
      } catch (e) {
        state.failure = e;
        return;
      }
    }
  })();
  return {
    state,
    /** Resolves once `n` more acknowledgements arrived (bounded wait). */
    async more(n: number, what: string) {
      const target = state.acks + n;
      await until(() => state.acks >= target || state.failure !== undefined, 30_000, what);
      if (state.failure !== undefined) throw state.failure;
    },
    async stop() {
      state.running = false;
      await done;
      link.close();
    },
  };
}

const hello = (authToken = TOKEN) => ({ type: 'hello' as const, version: PROTOCOL_VERSION, authToken, clientName: 'raw', maxFrameBytes: 16 << 20, payload: new Uint8Array(0) });

t.test('a stranger’s 16 MiB first frame: refused at its length prefix, bytes bounded, the good client keeps its acknowledgements', async (t) => {
  const s = await serve();
  t.teardown(() => s.server.close());
  const good = await goodClient(s.port, s.mr.rkey, 0);
  await good.more(5, 'the good client to start');
  for (let k = 0; k < 3; k++) {
    const raw = await RawClient.connect(s.port);
    raw.write(emptyWrsFrame(8 << 20)); // 16 MiB + 5 bytes: the largest frame a trusted peer may send, sent first
    t.ok(await raw.untilClosed(10_000), 'the server closed the connection');
    t.equal(raw.goodbye()?.code, 'PMRPC_ERR_FRAME_TOO_LARGE');
    t.match(raw.goodbye()?.message, /before its Welcome/);
    await good.more(3, 'acknowledgements after an attack');
  }
  await until(() => s.disconnects.filter((d) => d.code === 'PMRPC_ERR_FRAME_TOO_LARGE').length === 3, 10_000, 'the disconnects');
  for (const d of s.disconnects.filter((x) => x.code === 'PMRPC_ERR_FRAME_TOO_LARGE')) {
    t.ok(d.bytesIn <= SOCKET_READ, `the server took ${d.bytesIn} bytes of 16 MiB (at most one socket read) before refusing`);
  }

  // The largest first frame it does accept (handshakeBytesMax − 4 bytes): not a Hello, refused
  // before a single work request is decoded.
  const raw = await RawClient.connect(s.port);
  const n = (TCP_SERVER_DEFAULTS.handshakeBytesMax - 4 - 4) / 2;
  raw.write(emptyWrsFrame(n));
  t.ok(await raw.untilClosed(10_000));
  t.match(raw.goodbye(), { code: 'PMRPC_ERR_HANDSHAKE', message: 'the first frame must be a Hello, got request' });
  await good.more(3, 'acknowledgements after the largest accepted first frame');
  await good.stop();
  t.equal(good.state.failure, undefined);
});

t.test('bytes past handshakeBytesMax before the Welcome are refused (a Hello then a flood while accept() decides)', async (t) => {
  let release: (() => void) | undefined;
  const s = await serve({ handshakeBytesMax: 4096 });
  // A slow accept: the Hello is in, the Welcome not yet out.
  const s2 = await serve({
    handshakeBytesMax: 4096,
    accept: () =>
      new Promise((resolve) => {
        release = () => resolve({ qp: s2.nic.createQp(s2.nic.allocPd()) });
      }),
  });
  t.teardown(async () => {
    await s.server.close();
    await s2.server.close();
  });
  const raw = await RawClient.connect(s2.port);
  raw.send(hello());
  await until(() => release !== undefined, 10_000, 'accept() to be called');
  raw.write(new Uint8Array(32 * 1024));
  t.ok(await raw.untilClosed(10_000));
  t.match(raw.goodbye(), { code: 'PMRPC_ERR_HANDSHAKE', message: /bytes before the Welcome, more than handshakeBytesMax \(4096\)/ });
  release!();
  await until(() => s2.disconnects.length === 1, 10_000, 'the disconnect');
  t.ok(s2.disconnects[0]!.bytesIn <= 4096 + SOCKET_READ, `${s2.disconnects[0]!.bytesIn} bytes taken`);
  // A Hello longer than the bound is refused at its length prefix.
  const big = await RawClient.connect(s.port);
  big.send({ ...hello(), payload: new Uint8Array(8192) });
  t.ok(await big.untilClosed(10_000));
  t.equal(big.goodbye()?.code, 'PMRPC_ERR_FRAME_TOO_LARGE');
});

t.test('an authenticated peer’s maximal frame of empty work requests: refused after the 4097th, the good client keeps going', async (t) => {
  const s = await serve();
  t.teardown(() => s.server.close());
  const good = await goodClient(s.port, s.mr.rkey, 0);
  await good.more(5, 'the good client to start');
  const { raw } = await RawClient.open(s.port, { authToken: TOKEN });
  raw.write(emptyWrsFrame((16 << 20) / 2 - 4)); // 16 MiB − a few bytes: within maxFrameBytes
  t.ok(await raw.untilClosed(30_000));
  t.match(raw.goodbye(), { code: 'PMRPC_ERR_BAD_FRAME', message: 'a request carries more than 4096 work requests' });
  await good.more(5, 'acknowledgements after the attack');
  await good.stop();
  t.equal(good.state.failure, undefined);
});

t.test('a valid request of 4096 work requests is decoded and executed in slices: the good client is served between them', async (t) => {
  const s = await serve({ tickUnits: 500 });
  t.teardown(() => s.server.close());
  const good = await goodClient(s.port, s.mr.rkey, 0);
  await good.more(5, 'the good client to start');
  const { raw, qpn } = await RawClient.open(s.port, { authToken: TOKEN });
  const wrs: WorkRequest[] = Array.from({ length: 4096 }, (_, i) => Wr.write({ rkey: s.mr.rkey, addr: 65536 + (i % 1024) * 256 }, new Uint8Array(200).fill(i & 0xff)));
  const deferralsBefore = s.server.stats.deferrals;
  const acksBefore = good.state.acks;
  raw.send({ type: 'request', qpn, seq: 1, wrs });
  const response = await raw.next();
  const acksDuring = good.state.acks - acksBefore;
  t.equal(response?.type, 'response');
  t.equal(response?.type === 'response' ? response.completions.filter((c) => c.status === 'ok').length : -1, 4096, 'every work request executed');
  t.ok(s.server.stats.deferrals - deferralsBefore >= 10, `the request was spread over turns of the event loop (${s.server.stats.deferrals - deferralsBefore} deferrals)`);
  t.ok(acksDuring >= 2, `the good client was acknowledged ${acksDuring} times while the big request was in progress`);
  raw.socket.destroy();
  await good.stop();
  t.equal(good.state.failure, undefined);
});

t.test('idle connections do not lock out a (re)connecting client: the handshake pool evicts its oldest', async (t) => {
  const s = await serve({ maxHandshakes: 4, maxConnections: 2, handshakeEvictAfterMs: 0 });
  t.teardown(() => s.server.close());
  const { link: a } = await TcpLink.connect({ port: s.port, authToken: TOKEN, name: 'a' });
  const idle: RawClient[] = [];
  for (let i = 0; i < 40; i++) idle.push(await RawClient.connect(s.port));
  await until(() => s.server.connections <= 1 + 4 + 40, 10_000, 'the connections to register');
  // A client connecting now, and a client reconnecting after its connection dropped, both get in.
  const { link: b } = await TcpLink.connect({ port: s.port, authToken: TOKEN, name: 'b' });
  a.close();
  await until(() => s.disconnects.some((d) => d.clientName === 'a'), 10_000, 'a to be gone');
  const { link: a2 } = await TcpLink.connect({ port: s.port, authToken: TOKEN, name: 'a' });
  t.ok(b.qpn > 0 && a2.qpn > 0, 'both were admitted while idle connections kept arriving');
  await until(() => idle.filter((r) => r.goodbye()?.code === 'PMRPC_ERR_TOO_MANY_HANDSHAKES').length >= 40 - 4, 10_000, 'the evictions');
  t.ok(idle.filter((r) => r.goodbye()?.code === 'PMRPC_ERR_TOO_MANY_HANDSHAKES').length >= 36, 'all but the newest maxHandshakes idle connections were evicted');
  // The bound on clients past their Hello still holds: a third is refused after its Hello.
  await t.rejects(TcpLink.connect({ port: s.port, authToken: TOKEN, name: 'c' }), { code: 'PMRPC_ERR_TOO_MANY_CONNECTIONS' });
  for (const r of idle) r.socket.destroy();
  b.close();
  a2.close();
});

t.test('the new server options: exact TypeError / RangeError messages, defaults', async (t) => {
  const nic = new Rnic(PmemRegion.createInMemory(4096));
  const accept = () => ({ qp: nic.createQp(nic.allocPd()) });
  t.match(TCP_SERVER_DEFAULTS, { handshakeBytesMax: 16384, maxHandshakes: 64, handshakeEvictAfterMs: 500, handshakeTimeoutMs: 5000, tickUnits: 10_000, maxConnections: 64 });
  t.throws(() => new TcpNicServer(nic, { accept, maxHandshakes: 0 }), new RangeError('maxHandshakes must be a positive integer, got 0'));
  t.throws(() => new TcpNicServer(nic, { accept, handshakeEvictAfterMs: -1 }), new RangeError('handshakeEvictAfterMs must be an integer in [0, 3600000], got -1'));
  t.throws(() => new TcpNicServer(nic, { accept, handshakeBytesMax: 100 }), new RangeError('handshakeBytesMax must be an integer in [1024, 4294967295], got 100'));
  t.throws(() => new TcpNicServer(nic, { accept, tickUnits: 0.5 }), new RangeError('tickUnits must be a positive integer, got 0.5'));
  t.throws(() => new TcpNicServer(nic, { accept, defer: 1 as never }), new TypeError('defer must be a function (fn) => void that runs fn on a later turn of the event loop'));
});

t.test('a full handshake pool evicts its oldest only once it has had handshakeEvictAfterMs; before, the newcomer is refused', async (t) => {
  const clock = new VirtualClock();
  const s = await serve({ maxHandshakes: 4, clock });
  t.teardown(() => s.server.close());
  const first: RawClient[] = [];
  for (let i = 0; i < 4; i++) first.push(await RawClient.connect(s.port));
  await until(() => s.server.connections === 4, 10_000, 'the four to register');
  const early = await RawClient.connect(s.port);
  t.ok(await early.untilClosed(10_000));
  t.match(early.goodbye(), { code: 'PMRPC_ERR_TOO_MANY_HANDSHAKES', message: /none for 500 ms yet: try again/ });
  t.ok(first.every((r) => r.goodbye() === undefined && !r.socket.destroyed), 'a burst does not evict its own members');
  clock.advanceMs(500);
  const late = await RawClient.connect(s.port);
  t.ok(await first[0]!.untilClosed(10_000));
  t.match(first[0]!.goodbye(), { code: 'PMRPC_ERR_TOO_MANY_HANDSHAKES', message: /the oldest is closed to make room/ });
  late.send(hello());
  t.equal((await late.next())?.type, 'welcome', 'the newcomer got in');
  for (const r of [...first, late]) r.socket.destroy();
});
