// TcpNicServer and TcpLink: options, the handshake, auth, refusals, several clients, flow control
// in both directions, and what a client sees when a connection closes. Loopback only.
import t from 'tap';
import net from 'node:net';
import { Access, QueuePair, Rnic, Wr, leToBigint, type ServerMessage, type ServerQp } from '../../flush/index.js';
import { PmemRegion, PmrpcError, VirtualClock, createPrng, seededEntropy } from '../../pmem/index.js';
import { TCP_LINK_DEFAULTS, TCP_SERVER_DEFAULTS, TcpLink, TcpNicServer, isLoopbackHost, type DisconnectInfo, type TcpNicServerOptions } from '../../src/transport/index.js';
import { decodeMessage, encodeMessage, FrameReader, frameBytes, PROTOCOL_VERSION, type WireMessage } from '../../src/transport/index.js';
import { fill, RawClient, until } from './fixtures/helpers.js';

const REGION = 1 << 16;

/** A NIC with one PD and an MR over the first half; a server whose accept gives each client a QP in that PD. */
async function serve(opts: Partial<TcpNicServerOptions> = {}) {
  const region = PmemRegion.createInMemory(REGION, { entropy: seededEntropy(createPrng(3)) });
  const nic = new Rnic(region, { entropy: seededEntropy(createPrng(4)) });
  const pd = nic.allocPd();
  const mr = nic.registerMr(pd, 0, REGION / 2, Access.ALL);
  const qps: ServerQp[] = [];
  const disconnects: DisconnectInfo[] = [];
  const server = new TcpNicServer(nic, {
    accept: () => {
      const qp = nic.createQp(pd);
      qps.push(qp);
      return { qp, welcome: Uint8Array.of(1, 2, 3) };
    },
    onDisconnect: (d) => disconnects.push(d),
    ...opts,
  });
  const { port } = await server.listen();
  return { region, nic, pd, mr, server, port, qps, disconnects };
}

type Served = Awaited<ReturnType<typeof serve>>;

/** A hand-rolled server: completes the handshake, then runs `onFrame` for every later frame. */
async function fakeServer(onFrame: (m: WireMessage, s: net.Socket) => void, opts: { welcome?: boolean } = {}) {
  const sockets: net.Socket[] = [];
  const srv = net.createServer((s) => {
    sockets.push(s);
    s.on('error', () => {});
    const r = new FrameReader(64 << 20);
    let hello = false;
    s.on('data', (c: Buffer) => {
      for (const f of r.push(new Uint8Array(c))) {
        const m = decodeMessage(f);
        if (!hello) {
          hello = true;
          if (opts.welcome !== false) s.write(frameBytes(encodeMessage({ type: 'welcome', version: PROTOCOL_VERSION, qpn: 7, maxFrameBytes: 16 << 20, payload: new Uint8Array(0) })));
          continue;
        }
        onFrame(m, s);
      }
    });
  });
  await new Promise<void>((res) => srv.listen(0, '127.0.0.1', res));
  const port = (srv.address() as net.AddressInfo).port;
  return {
    port,
    sockets,
    close: () =>
      new Promise<void>((res) => {
        for (const s of sockets) s.destroy();
        srv.close(() => res());
      }),
  };
}

t.test('server options: exact TypeError / RangeError messages, frozen defaults', async (t) => {
  const nic = new Rnic(PmemRegion.createInMemory(4096));
  const accept = () => ({ qp: nic.createQp(nic.allocPd()) });
  t.ok(Object.isFrozen(TCP_SERVER_DEFAULTS) && Object.isFrozen(TCP_LINK_DEFAULTS));
  t.equal(TCP_SERVER_DEFAULTS.host, '127.0.0.1', 'binds loopback by default');
  t.throws(() => new TcpNicServer({} as Rnic, { accept }), new TypeError('nic must be an Rnic'));
  t.throws(() => new TcpNicServer(nic, {}), new TypeError('accept must be a function (hello) => { qp, welcome }'));
  t.throws(() => new TcpNicServer(nic, { accept, host: '' }), new TypeError('host must be a non-empty string, got '));
  t.throws(() => new TcpNicServer(nic, { accept, port: 70000 }), new RangeError('port must be an integer in [0, 65535], got 70000'));
  t.throws(() => new TcpNicServer(nic, { accept, authToken: '' }), new TypeError('authToken must be a non-empty string of at most 1024 characters'));
  t.throws(() => new TcpNicServer(nic, { accept, maxFrameBytes: 100 }), new RangeError('maxFrameBytes must be an integer in [1024, 4294967295], got 100'));
  t.throws(() => new TcpNicServer(nic, { accept, maxConnections: 0 }), new RangeError('maxConnections must be a positive integer, got 0'));
  t.throws(() => new TcpNicServer(nic, { accept, highWaterBytes: 1.5 }), new RangeError('highWaterBytes must be a positive integer, got 1.5'));
  t.throws(() => new TcpNicServer(nic, { accept, highWaterBytes: 4096, outgoingBytesMax: 1024 }), new RangeError('outgoingBytesMax (1024) must be >= highWaterBytes (4096)'));
  t.throws(() => new TcpNicServer(nic, { accept, handshakeTimeoutMs: 0 }), new RangeError('handshakeTimeoutMs must be a positive number of milliseconds, got 0'));
  t.throws(() => new TcpNicServer(nic, { accept, closeLingerMs: Number.NaN }), new RangeError('closeLingerMs must be a positive number of milliseconds, got NaN'));
  t.throws(() => new TcpNicServer(nic, { accept, idleDrain: 1 as never }), new TypeError('idleDrain must be a boolean, got 1'));
  t.throws(() => new TcpNicServer(nic, { accept, destroyQpOnClose: 'no' as never }), new TypeError('destroyQpOnClose must be a boolean, got no'));
  t.throws(() => new TcpNicServer(nic, { accept, onDisconnect: 5 as never }), new TypeError('onDisconnect must be a function'));
  t.throws(() => new TcpNicServer(nic, { accept, clock: {} as never }), new TypeError('clock must be a Clock (nowMs, setTimer)'));
  const s = new TcpNicServer(nic, { accept });
  t.throws(() => s.address(), new TypeError('address(): the server is not listening'));
  await s.listen();
  await t.rejects(s.listen(), new TypeError('listen() may be called only once'));
  await s.close();
  await s.close(); // idempotent
});

t.test('link options: exact TypeError / RangeError messages (the promise rejects)', async (t) => {
  await t.rejects(TcpLink.connect({ port: 0 }), new RangeError('port must be an integer in [1, 65535], got 0'));
  await t.rejects(TcpLink.connect({ port: 1, host: '' }), new TypeError('host must be a non-empty string, got '));
  await t.rejects(TcpLink.connect({ port: 1, authToken: 'x'.repeat(1025) }), new TypeError('authToken must be a non-empty string of at most 1024 characters'));
  await t.rejects(TcpLink.connect({ port: 1, name: 'n'.repeat(257) }), new TypeError('name must be a string of at most 256 characters'));
  await t.rejects(TcpLink.connect({ port: 1, hello: 'x' as never }), new TypeError('hello must be a Uint8Array'));
  await t.rejects(TcpLink.connect({ port: 1, maxFrameBytes: 2 ** 32 }), new RangeError('maxFrameBytes must be an integer in [1024, 4294967295], got 4294967296'));
  await t.rejects(TcpLink.connect({ port: 1, highWaterBytes: 0 }), new RangeError('highWaterBytes must be a positive integer, got 0'));
  await t.rejects(TcpLink.connect({ port: 1, highWaterBytes: 4096, sendBufferBytesMax: 1024 }), new RangeError('sendBufferBytesMax (1024) must be >= highWaterBytes (4096)'));
  await t.rejects(TcpLink.connect({ port: 1, outstandingMessagesMax: -1 }), new RangeError('outstandingMessagesMax must be a positive integer, got -1'));
  await t.rejects(TcpLink.connect({ port: 1, backlogMessagesMax: 0 }), new RangeError('backlogMessagesMax must be a positive integer, got 0'));
  await t.rejects(TcpLink.connect({ port: 1, handshakeTimeoutMs: -5 }), new RangeError('handshakeTimeoutMs must be a positive number of milliseconds, got -5'));
  await t.rejects(TcpLink.connect({ port: 1, clock: { nowMs: () => 0 } as never }), new TypeError('clock must be a Clock (nowMs, setTimer)'));
  t.throws(() => new (TcpLink as unknown as new (...a: unknown[]) => unknown)(Symbol('x')), new TypeError('use TcpLink.connect()'));
});

t.test('auth: a non-loopback host without a token is refused before binding; loopback hosts are recognised', async (t) => {
  const nic = new Rnic(PmemRegion.createInMemory(4096));
  const accept = () => ({ qp: nic.createQp(nic.allocPd()) });
  for (const host of ['0.0.0.0', '::', '10.1.2.3', '192.168.0.7', 'example.com', '::ffff:10.0.0.1']) {
    t.throws(() => new TcpNicServer(nic, { accept, host }), { name: 'PmrpcError', code: 'PMRPC_ERR_AUTH_REQUIRED', message: `PMRPC_ERR_AUTH_REQUIRED: binding ${host} (not loopback) requires an authToken` });
  }
  t.ok(new TcpNicServer(nic, { accept, host: '0.0.0.0', authToken: 'secret' }), 'with a token the shell accepts it (not bound here)');
  t.same(
    ['127.0.0.1', '127.9.9.9', '::1', '::ffff:127.0.0.1', 'localhost', '0.0.0.0', '128.0.0.1', '::2', 'example.com'].map(isLoopbackHost),
    [true, true, true, true, true, false, false, false, false],
  );
});

t.test('auth: no token or a wrong token gets PMRPC_ERR_AUTH and a close; the right token is served', async (t) => {
  const s = await serve({ authToken: 'open sesame' });
  t.teardown(() => s.server.close());
  await t.rejects(TcpLink.connect({ port: s.port }), { code: 'PMRPC_ERR_AUTH', message: 'PMRPC_ERR_AUTH: this server requires an auth token' });
  await t.rejects(TcpLink.connect({ port: s.port, authToken: 'open sesame!' }), { code: 'PMRPC_ERR_AUTH', message: 'PMRPC_ERR_AUTH: wrong auth token' });
  const { link, welcome } = await TcpLink.connect({ port: s.port, authToken: 'open sesame', name: 'alice' });
  t.same(welcome, Uint8Array.of(1, 2, 3), 'the accept callback’s payload arrives');
  const qp = new QueuePair(link);
  await qp.write({ rkey: s.mr.rkey, addr: 64 }, fill(8, 9));
  t.same(await qp.read({ rkey: s.mr.rkey, addr: 64 }, 8), fill(8, 9));
  t.equal(s.server.stats.goodbyes.PMRPC_ERR_AUTH, 2);
  t.equal(s.qps.length, 1, 'accept ran only for the authenticated client');
  t.same(s.server.connectionStats().map((c) => [c.clientName, c.state]), [['alice', 'open']]);
  await until(() => s.disconnects.length === 2, 5000, 'refused connections to close');
  t.same(s.disconnects.map((d) => d.code), ['PMRPC_ERR_AUTH', 'PMRPC_ERR_AUTH']);
  link.close();
});

t.test('handshake errors: not a Hello, another version, a tiny frame bound; each a Goodbye and a close', async (t) => {
  const s = await serve();
  t.teardown(() => s.server.close());
  const cases: Array<[WireMessage, string]> = [
    [{ type: 'request', qpn: 1, seq: 0, wrs: [] }, 'PMRPC_ERR_HANDSHAKE'],
    [{ type: 'hello', version: 2, authToken: '', clientName: '', maxFrameBytes: 1 << 20, payload: new Uint8Array(0) }, 'PMRPC_ERR_PROTOCOL_VERSION'],
    [{ type: 'hello', version: PROTOCOL_VERSION, authToken: '', clientName: '', maxFrameBytes: 10, payload: new Uint8Array(0) }, 'PMRPC_ERR_HANDSHAKE'],
  ];
  for (const [m, code] of cases) {
    const raw = await RawClient.connect(s.port);
    raw.send(m);
    t.ok(await raw.untilClosed(), `${code}: the server closed the connection`);
    t.equal(raw.goodbye()?.code, code);
  }
  t.equal(s.qps.length, 0);
});

t.test('handshake timeouts on the injected clock, server side and client side', async (t) => {
  const clock = new VirtualClock();
  const s = await serve({ clock, handshakeTimeoutMs: 500 });
  t.teardown(() => s.server.close());
  const raw = await RawClient.connect(s.port);
  await until(() => s.server.connections === 1, 5000, 'the connection to register');
  clock.advanceMs(499);
  await new Promise((r) => setImmediate(r));
  t.equal(raw.socket.destroyed, false, 'not before its time');
  clock.advanceMs(1);
  t.ok(await raw.untilClosed());
  t.equal(raw.goodbye()?.code, 'PMRPC_ERR_HANDSHAKE_TIMEOUT');

  const silent = await fakeServer(() => {}, { welcome: false });
  t.teardown(() => silent.close());
  const c2 = new VirtualClock();
  const p = TcpLink.connect({ port: silent.port, clock: c2, handshakeTimeoutMs: 1000 });
  await until(() => silent.sockets.length === 1, 5000, 'the client to connect');
  c2.advanceMs(1000);
  await t.rejects(p, { code: 'PMRPC_ERR_HANDSHAKE_TIMEOUT' });
});

t.test('accept refusals: a coded PmrpcError, a plain Error, junk, a QP already in use; async accept works', async (t) => {
  let mode = 'coded';
  const s = await serve({
    accept: async (hello) => {
      await new Promise((r) => setImmediate(r));
      if (mode === 'coded') throw new PmrpcError('PMRPC_ERR_RING_FULL', 'no ring left');
      if (mode === 'plain') throw new Error('go away');
      if (mode === 'junk') return { qp: 5 } as never;
      return { qp: s.nic.createQp(s.pd), welcome: new TextEncoder().encode(hello.clientName) };
    },
  });
  t.teardown(() => s.server.close());
  await t.rejects(TcpLink.connect({ port: s.port }), { code: 'PMRPC_ERR_RING_FULL', message: 'PMRPC_ERR_RING_FULL: no ring left' });
  mode = 'plain';
  await t.rejects(TcpLink.connect({ port: s.port }), { code: 'PMRPC_ERR_REFUSED', message: 'PMRPC_ERR_REFUSED: go away' });
  mode = 'junk';
  await t.rejects(TcpLink.connect({ port: s.port }), { code: 'PMRPC_ERR_REFUSED', message: 'PMRPC_ERR_REFUSED: accept() must return { qp: ServerQp, welcome?: Uint8Array }' });
  mode = 'ok';
  const { link, welcome } = await TcpLink.connect({ port: s.port, name: 'bob' });
  t.same(new TextDecoder().decode(welcome), 'bob', 'the accept callback sees the client name');
  link.close();

  const one = await serve();
  t.teardown(() => one.server.close());
  const fixed = one.nic.createQp(one.pd);
  const s2 = new TcpNicServer(one.nic, { accept: () => ({ qp: fixed }) });
  await s2.listen();
  t.teardown(() => s2.close());
  const { link: a } = await TcpLink.connect({ port: s2.address().port });
  await t.rejects(TcpLink.connect({ port: s2.address().port }), { code: 'PMRPC_ERR_QP_IN_USE' });
  a.close();
});

t.test('maxConnections: one more is refused with PMRPC_ERR_TOO_MANY_CONNECTIONS; a closed port is PMRPC_ERR_CONNECT', async (t) => {
  const s = await serve({ maxConnections: 2 });
  t.teardown(() => s.server.close());
  const { link: a } = await TcpLink.connect({ port: s.port });
  const { link: b } = await TcpLink.connect({ port: s.port });
  await t.rejects(TcpLink.connect({ port: s.port }), { code: 'PMRPC_ERR_TOO_MANY_CONNECTIONS' });
  a.close();
  await until(() => s.server.connections === 1, 5000, 'a to be gone');
  const { link: c } = await TcpLink.connect({ port: s.port });
  t.ok(c.qpn > 0, 'a freed slot is reusable');
  b.close();
  c.close();
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const freePort = (probe.address() as net.AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
  await t.rejects(TcpLink.connect({ port: freePort }), { code: 'PMRPC_ERR_CONNECT' });
});

t.test('several clients at once: each reaches only its own QP and PD; a shared counter sees every FAA once', async (t) => {
  const region = PmemRegion.createInMemory(REGION, { entropy: seededEntropy(createPrng(9)) });
  const nic = new Rnic(region, { entropy: seededEntropy(createPrng(10)) });
  const sharedPd = nic.allocPd();
  const counter = nic.registerMr(sharedPd, 0, 64, Access.ALL);
  const grants = new Map<number, number>();
  let next = 0;
  const server = new TcpNicServer(nic, {
    accept: () => {
      // Every client gets its own PD and 2 KiB MR; the counter MR is in a PD of its own, reached by client 0 only.
      const i = next++;
      const pd = i === 0 ? sharedPd : nic.allocPd();
      const mr = nic.registerMr(pd, 4096 + i * 2048, 2048, Access.ALL);
      const qp = nic.createQp(pd);
      grants.set(qp.qpn, mr.rkey);
      return { qp, welcome: new TextEncoder().encode(JSON.stringify({ rkey: mr.rkey, addr: mr.offset })) };
    },
  });
  const { port } = await server.listen();
  t.teardown(() => server.close());
  const N = 8;
  const clients = await Promise.all(
    Array.from({ length: N }, async (_, i) => {
      const { link, welcome } = await TcpLink.connect({ port, name: `c${i}` });
      return { qp: new QueuePair(link), grant: JSON.parse(new TextDecoder().decode(welcome)) as { rkey: number; addr: number } };
    }),
  );
  t.equal(server.connections, N);
  const olds: bigint[] = [];
  await Promise.all(
    clients.map(async (c, i) => {
      for (let k = 0; k < 50; k++) {
        const data = fill(64, (i * 50 + k) & 0xff);
        const cs = await c.qp.postChain([Wr.write({ rkey: c.grant.rkey, addr: c.grant.addr + (k % 32) * 64 }, data), Wr.read({ rkey: c.grant.rkey, addr: c.grant.addr + (k % 32) * 64 }, 64)]);
        if (!cs.every((x) => x.status === 'ok') || !cs[1]!.data!.every((b) => b === data[0])) throw new Error(`client ${i} read back something else`);
        if (i === 0) olds.push(leToBigint((await c.qp.post(Wr.faa({ rkey: counter.rkey, addr: 0 }, 1n))).data!));
      }
    }),
  );
  t.equal(region.loadU64(0), 50n);
  t.same(olds, Array.from({ length: 50 }, (_, i) => BigInt(i)));
  // Another client's rkey is another PD's: refused, and nothing is written.
  const intruder = clients[1]!;
  const c = await intruder.qp.post(Wr.write({ rkey: clients[2]!.grant.rkey, addr: clients[2]!.grant.addr }, fill(8, 0xee)));
  t.match(c, { status: 'error', code: 'PMRPC_ERR_BAD_RKEY' });
  t.not(region.load(clients[2]!.grant.addr, 1)[0], 0xee);
  const c0 = await clients[3]!.qp.post(Wr.faa({ rkey: counter.rkey, addr: 0 }, 1n));
  t.match(c0, { status: 'error', code: 'PMRPC_ERR_BAD_RKEY' });
  t.equal(region.loadU64(0), 50n);
  for (const x of clients) x.qp.close();
  await until(() => server.connections === 0, 5000, 'every client to be gone');
  t.throws(() => nic.attach(1, () => {}), new RangeError('no QP 1'), 'destroyQpOnClose: the QP went with its connection');
});

t.test('a Request naming another QP, a Response or a Hello after the handshake: Goodbye and close; others keep being served', async (t) => {
  const s = await serve();
  t.teardown(() => s.server.close());
  const { link } = await TcpLink.connect({ port: s.port, name: 'good' });
  const good = new QueuePair(link);
  const bad: Array<[(qpn: number) => WireMessage, string]> = [
    [(qpn) => ({ type: 'request', qpn: qpn === 1 ? 2 : 1, seq: 0, wrs: [{ op: 'read', from: { rkey: s.mr.rkey, addr: 0 }, len: 8 }] }), 'PMRPC_ERR_WRONG_QP'],
    [(qpn) => ({ type: 'response', qpn, seq: 0, completions: [] }), 'PMRPC_ERR_BAD_FRAME'],
    [() => ({ type: 'hello', version: 1, authToken: '', clientName: '', maxFrameBytes: 1 << 20, payload: new Uint8Array(0) }), 'PMRPC_ERR_BAD_FRAME'],
    [(qpn) => ({ type: 'welcome', version: 1, qpn, maxFrameBytes: 1 << 20, payload: new Uint8Array(0) }), 'PMRPC_ERR_BAD_FRAME'],
  ];
  for (const [mk, code] of bad) {
    const { raw, qpn } = await RawClient.open(s.port);
    raw.send(mk(qpn));
    t.ok(await raw.untilClosed(), `${code}: closed`);
    t.equal(raw.goodbye()?.code, code);
    t.equal(raw.received.filter((m) => m.type === 'response').length, 0, 'nothing executed');
    await good.write({ rkey: s.mr.rkey, addr: 128 }, fill(8, code.length));
    t.same(await good.read({ rkey: s.mr.rkey, addr: 128 }, 8), fill(8, code.length), 'the other client is still served');
  }
  link.close();
});

t.test('frame bounds: an oversized length prefix; a response that could not fit the client’s bound', async (t) => {
  const s = await serve({ maxFrameBytes: 4096 });
  t.teardown(() => s.server.close());
  const raw = await RawClient.connect(s.port);
  raw.write(Uint8Array.of(0x01, 0x10, 0x00, 0x00)); // 4097
  t.ok(await raw.untilClosed());
  t.equal(raw.goodbye()?.code, 'PMRPC_ERR_FRAME_TOO_LARGE');

  const { link } = await TcpLink.connect({ port: s.port, maxFrameBytes: 2048 });
  t.equal(link.serverMaxFrameBytes, 4096, 'the Welcome announces the server’s bound');
  const qp = new QueuePair(link);
  t.throws(() => qp.postChain([Wr.write({ rkey: s.mr.rkey, addr: 0 }, fill(5000, 1))]), { code: 'PMRPC_ERR_FRAME_TOO_LARGE' }, 'a request past the server’s bound is refused locally');
  t.equal(qp.outstanding, 0);
  const closed = new Promise<PmrpcError | undefined>((res) => link.onClose(res));
  await t.rejects(qp.read({ rkey: s.mr.rkey, addr: 0 }, 4000), { code: 'PMRPC_ERR_LINK_CLOSED' }, 'the outstanding READ settles with PMRPC_ERR_LINK_CLOSED');
  t.equal((await closed)?.code, 'PMRPC_ERR_FRAME_TOO_LARGE', 'onClose names the cause');
  t.equal(link.closeError?.code, 'PMRPC_ERR_FRAME_TOO_LARGE');
  t.throws(() => qp.postChain([Wr.read({ rkey: s.mr.rkey, addr: 0 }, 8)]), { code: 'PMRPC_ERR_LINK_CLOSED' });
  await t.rejects(link.whenWritable(), { code: 'PMRPC_ERR_LINK_CLOSED' });
});

t.test('server flow control: a client that does not read its responses stops being read; nothing is lost when it resumes', async (t) => {
  const HW = 64 * 1024;
  const s = await serve({ highWaterBytes: HW });
  t.teardown(() => s.server.close());
  const { raw, qpn } = await RawClient.open(s.port);
  raw.socket.pause();
  const REQUESTS = 120;
  const before = s.nic.stats.messages;
  // Each request: 16 READs of 32 KiB = a 512 KiB response; 60 MiB in all, past what the kernel buffers on loopback.
  for (let seq = 0; seq < REQUESTS; seq++) {
    raw.send({ type: 'request', qpn, seq, wrs: Array.from({ length: 16 }, () => ({ op: 'read' as const, from: { rkey: s.mr.rkey, addr: 0 }, len: 32768 })) });
  }
  await until(() => s.server.connectionStats()[0]?.readPaused === true, 10_000, 'the server to pause reading');
  await new Promise((r) => setTimeout(r, 50));
  const st = s.server.connectionStats()[0]!;
  const executed = s.nic.stats.messages - before;
  t.ok(executed < REQUESTS, `paused after ${executed} of ${REQUESTS} requests: the rest wait in the network, not in server memory`);
  t.ok(st.outgoingBytes <= HW + 520 * 1024, `server buffer ${st.outgoingBytes} B stays within the high-water mark plus one response`);
  t.ok(st.backpressurePauses >= 1);
  raw.socket.resume();
  await until(() => raw.received.filter((m) => m.type === 'response').length === REQUESTS, 20_000, 'every response');
  const seqs = raw.received.filter((m): m is Extract<WireMessage, { type: 'response' }> => m.type === 'response').map((m) => m.seq);
  t.same(seqs, Array.from({ length: REQUESTS }, (_, i) => i), 'all responses, in order');
  t.equal(raw.badFrames.length, 0);
  raw.socket.destroy();
});

t.test('server flow control: server-initiated traffic to a client that never reads ends with PMRPC_ERR_BACKPRESSURE', async (t) => {
  const s = await serve({ highWaterBytes: 64 * 1024, outgoingBytesMax: 1 << 20 });
  t.teardown(() => s.server.close());
  const { raw } = await RawClient.open(s.port);
  raw.socket.pause();
  const qp = s.qps[0]!;
  for (let i = 0; i < 2000 && s.server.connections > 0; i++) qp.notify(fill(64 * 1024, i & 0xff));
  await until(() => s.disconnects.length === 1, 10_000, 'the disconnect');
  t.equal(s.disconnects[0]!.code, 'PMRPC_ERR_BACKPRESSURE');
  raw.socket.destroy();
});

t.test('client flow control: bufferedBytes, writable and whenWritable; send refuses past sendBufferBytesMax', async (t) => {
  let reading = false;
  const fake = await fakeServer(() => {});
  t.teardown(() => fake.close());
  const { link } = await TcpLink.connect({ port: fake.port, highWaterBytes: 64 * 1024, sendBufferBytesMax: 256 * 1024 });
  await until(() => fake.sockets.length === 1, 5000, 'the server socket');
  fake.sockets[0]!.pause(); // the server stops reading
  // The link itself, not a QueuePair (which would hold messages while the link is full).
  let sent = 0;
  let refused: unknown;
  // Fill the kernel's buffers first: send until refused, let the kernel take what it will, and
  // stop once it takes nothing more (bounded: 64 MiB at most).
  for (let round = 0; round < 200 && sent < 4096; round++) {
    for (;;) {
      try {
        link.send({ type: 'request', qpn: link.qpn, seq: sent, wrs: [Wr.write({ rkey: 1, addr: 0 }, fill(16 * 1024, 1))] });
        sent++;
      } catch (e) {
        refused = e;
        break;
      }
    }
    const before = link.bufferedBytes;
    await new Promise((r) => setTimeout(r, 10));
    if (link.bufferedBytes === before) break;
  }
  t.match(refused, { code: 'PMRPC_ERR_BACKPRESSURE' }, `refused after ${sent} sends`);
  t.ok(link.bufferedBytes <= 256 * 1024, `bufferedBytes ${link.bufferedBytes} within sendBufferBytesMax`);
  t.equal(link.writable, false);
  t.equal(link.outstanding, sent, 'a refused send leaves nothing outstanding');
  let drained = false;
  const w = link.whenWritable().then(() => (drained = true));
  await new Promise((r) => setTimeout(r, 20));
  t.equal(drained, false, 'whenWritable waits while the server does not read');
  reading = true;
  fake.sockets[0]!.resume();
  await w;
  t.ok(reading && drained && link.writable, 'writable again once the server reads');
  link.close();
});

t.test('closure: a Goodbye settles outstanding requests with PMRPC_ERR_LINK_CLOSED and tells onClose why', async (t) => {
  const fake = await fakeServer((m, sock) => {
    if (m.type === 'request' && m.seq === 1) sock.end(frameBytes(encodeMessage({ type: 'goodbye', code: 'PMRPC_ERR_INTERNAL', message: 'boom' })));
    else if (m.type === 'request') sock.write(frameBytes(encodeMessage({ type: 'response', qpn: m.qpn, seq: m.seq, completions: m.wrs.map((w, i) => ({ id: w.id ?? i, op: w.op, status: 'ok' })) })));
  });
  t.teardown(() => fake.close());
  const { link } = await TcpLink.connect({ port: fake.port });
  const qp = new QueuePair(link);
  const causes: Array<PmrpcError | undefined> = [];
  link.onClose((e) => causes.push(e));
  const first = await qp.post(Wr.read({ rkey: 1, addr: 0 }, 8));
  t.equal(first.status, 'ok');
  const cs = await qp.postChain([Wr.read({ rkey: 1, addr: 0 }, 8, { id: 41 }), Wr.faa({ rkey: 1, addr: 0 }, 1n)]);
  t.match(cs, [
    { id: 41, op: 'read', status: 'error', code: 'PMRPC_ERR_LINK_CLOSED' },
    { id: 1, op: 'faa', status: 'error', code: 'PMRPC_ERR_LINK_CLOSED' },
  ]);
  t.match(cs[0]!.message, /PMRPC_ERR_INTERNAL: boom/);
  t.equal(causes.length, 1);
  t.equal(causes[0]?.code, 'PMRPC_ERR_INTERNAL');
  t.equal(link.closed, true);
  t.equal(qp.state, 'error');
  t.throws(() => link.send({ type: 'request', qpn: link.qpn, seq: 9, wrs: [] }), { code: 'PMRPC_ERR_LINK_CLOSED' });
  const late: Array<PmrpcError | undefined> = [];
  link.onClose((e) => late.push(e));
  await new Promise((r) => setImmediate(r));
  t.same(late.map((e) => e?.code), ['PMRPC_ERR_INTERNAL'], 'a listener added after the close still hears it');
});

t.test('server close(): every client hears PMRPC_ERR_SERVER_CLOSED; an owner close() is quiet; messages wait for a handler', async (t) => {
  const s = await serve();
  const links = await Promise.all([0, 1, 2].map(() => TcpLink.connect({ port: s.port }).then((x) => x.link)));
  // No handler yet: the response waits in the backlog.
  links[0]!.send({ type: 'request', qpn: links[0]!.qpn, seq: 5, wrs: [{ op: 'read', from: { rkey: s.mr.rkey, addr: 0 }, len: 8 }] });
  await until(() => links[0]!.outstanding === 0, 5000, 'the response');
  const got: ServerMessage[] = [];
  links[0]!.onMessage((m) => got.push(m));
  t.match(got, [{ type: 'response', seq: 5, completions: [{ status: 'ok' }] }]);
  const quiet: Array<PmrpcError | undefined> = [];
  links[2]!.onClose((e) => quiet.push(e));
  links[2]!.close();
  t.same(quiet, [undefined], 'close() by the owner: onClose with no error');
  t.equal(links[2]!.closeError, undefined);
  await until(() => s.disconnects.length === 1, 5000, 'the quiet close to reach the server');
  t.match(s.disconnects[0], { code: undefined, message: 'the client closed the connection' });
  const causes = links.slice(0, 2).map((l) => new Promise<PmrpcError | undefined>((res) => l.onClose(res)));
  await s.server.close();
  t.equal(s.server.connections, 0);
  t.same((await Promise.all(causes)).map((e) => e?.code), ['PMRPC_ERR_SERVER_CLOSED', 'PMRPC_ERR_SERVER_CLOSED']);
  await t.rejects(TcpLink.connect({ port: s.port }), { code: 'PMRPC_ERR_CONNECT' }, 'no longer listening');
});

t.test('no handler yet: past backlogMessagesMax the link stops reading; every message arrives once a handler is set', async (t) => {
  const s = await serve();
  t.teardown(() => s.server.close());
  const { link } = await TcpLink.connect({ port: s.port, backlogMessagesMax: 2 });
  // One at a time, so that the responses arrive in separate reads (the link pauses between reads).
  for (let seq = 0; seq < 10; seq++) {
    link.send({ type: 'request', qpn: link.qpn, seq, wrs: [{ op: 'faa', at: { rkey: s.mr.rkey, addr: 0 }, add: Uint8Array.of(1, 0, 0, 0, 0, 0, 0, 0) }] });
    await until(() => s.region.loadU64(0) === BigInt(seq + 1), 5000, `request ${seq}`);
    await new Promise((r) => setTimeout(r, 5));
  }
  t.ok(link.outstanding > 0, `the link stopped reading: ${link.outstanding} responses not yet taken`);
  const got: number[] = [];
  link.onMessage((m) => m.type === 'response' && got.push(m.seq));
  await until(() => got.length === 10, 5000, 'every response');
  t.same(got, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  t.equal(link.outstanding, 0);
  link.close();
});

t.test('QP lifetime: destroyQpOnClose false keeps the QP; a connection gone while accept() ran has its QP destroyed', async (t) => {
  const keep = await serve({ destroyQpOnClose: false });
  t.teardown(() => keep.server.close());
  const { link } = await TcpLink.connect({ port: keep.port });
  const qpn = link.qpn;
  link.close();
  await until(() => keep.disconnects.length === 1, 5000, 'the disconnect');
  t.doesNotThrow(() => keep.nic.attach(qpn, () => {}), 'the QP outlives its connection');

  const clock = new VirtualClock();
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const s = await serve({ clock, handshakeTimeoutMs: 100 });
  const slow = new TcpNicServer(s.nic, {
    clock,
    handshakeTimeoutMs: 100,
    accept: async () => {
      const qp = s.nic.createQp(s.pd);
      s.qps.push(qp);
      await gate;
      return { qp };
    },
  });
  await slow.listen();
  t.teardown(() => Promise.all([s.server.close(), slow.close()]));
  const p = TcpLink.connect({ port: slow.address().port });
  await until(() => s.qps.length === 1, 5000, 'accept() to start');
  clock.advanceMs(100);
  await t.rejects(p, { code: 'PMRPC_ERR_HANDSHAKE_TIMEOUT' }, 'the server gave up while accept() ran');
  release();
  await new Promise((r) => setImmediate(r));
  t.throws(() => s.nic.attach(s.qps[0]!.qpn, () => {}), new RangeError(`no QP ${s.qps[0]!.qpn}`), 'the orphaned QP was destroyed');
});

t.test('a QP destroyed under a live connection: the next request gets Goodbye PMRPC_ERR_NO_SUCH_QP, not silence', async (t) => {
  const s = await serve({ destroyQpOnClose: false });
  t.teardown(() => s.server.close());
  const { link } = await TcpLink.connect({ port: s.port });
  const qp = new QueuePair(link);
  await qp.write({ rkey: s.mr.rkey, addr: 0 }, fill(8, 1));
  s.nic.destroyQp(link.qpn);
  const cause = new Promise<PmrpcError | undefined>((res) => link.onClose(res));
  await t.rejects(qp.read({ rkey: s.mr.rkey, addr: 0 }, 8), { code: 'PMRPC_ERR_LINK_CLOSED' });
  t.equal((await cause)?.code, 'PMRPC_ERR_NO_SUCH_QP');
});

t.test('several clients with different flush strategies at once over TCP: every persist acknowledged, on media at its ack', async (t) => {
  const { CpuPoller, StrategyServer, FlushClient } = await import('../../flush/index.js');
  const { crashImages, materialize, HEADER_BYTES } = await import('../../pmem/index.js');
  const region = PmemRegion.createInMemory(REGION, { tracing: true, entropy: seededEntropy(createPrng(21)) });
  const nic = new Rnic(region, { entropy: seededEntropy(createPrng(22)) });
  const pd = nic.allocPd();
  const mr = nic.registerMr(pd, 0, REGION, Access.ALL);
  const poller = new CpuPoller(nic);
  const strategies = ['wflush', 'wrflush', 'srflush', 'gpspm', 'sflush'] as const;
  const area = (i: number) => ({ offset: 4096 + i * 8192, len: 8192 });
  const servers: Array<{ close(): void }> = [];
  const server = new TcpNicServer(nic, {
    accept: (h) => {
      const i = Number(h.clientName);
      const qp = nic.createQp(pd);
      const a = area(i);
      const recvBuffers = Array.from({ length: 16 }, (_, k) => (strategies[i] === 'gpspm' ? { addr: 49152 + k * 64, len: 64 } : { addr: a.offset + k * 256, len: 256 }));
      servers.push(new StrategyServer(poller, { strategy: strategies[i]!, qp, ring: a, recvBuffers }));
      return { qp };
    },
  });
  const { port } = await server.listen();
  t.teardown(async () => {
    for (const s of servers) s.close();
    poller.close();
    await server.close();
  });
  let lostAtAck = 0;
  await Promise.all(
    strategies.map(async (strategy, i) => {
      const { link } = await TcpLink.connect({ port, name: String(i) });
      const client = new FlushClient(new QueuePair(link), { strategy, rkey: mr.rkey, recvRkey: mr.rkey });
      const a = area(i);
      for (let round = 0; round < 4; round++) {
        // 8 in flight per client; SEND strategies land in receive buffers in posting order.
        await Promise.all(
          Array.from({ length: 8 }, async (_, k) => {
            const off = a.offset + (round * 8 + k) * 256;
            const data = fill(200, (i * 50 + round * 8 + k + 1) & 0xff);
            await client.persist(off, data);
            const st = region.crashState();
            const media = materialize(st, [...crashImages(st, { engine: 'none' })][0]!);
            const at = strategy === 'sflush' || strategy === 'srflush' ? undefined : off;
            if (at !== undefined && !media.subarray(HEADER_BYTES + at, HEADER_BYTES + at + 200).every((b) => b === data[0])) lostAtAck++;
          }),
        );
      }
      link.close();
    }),
  );
  t.equal(lostAtAck, 0, 'for the WRITE strategies, the data is on media when persist() resolves');
});
