// PRISM-KV and the Pilaf-style baseline over the TCP link (loopback): the client code is the same,
// only the Link differs. Same round-trip counts as in-process.
import t from 'tap';
import { QueuePair, Rnic } from '../../../flush/index.js';
import { createPrng, PmemRegion, seededEntropy } from '../../../pmem/index.js';
import { TcpLink, TcpNicServer } from '../../../src/transport/index.js';
import { PilafClient, PilafServer, PrismKvClient, PrismKvServer } from '../../../src/apps/kv/index.js';
import { SMALL_LAYOUT, td, te } from './helpers.js';

t.test('PRISM-KV over TCP: 1-RTT GET and PUT, several clients', async (t) => {
  const region = PmemRegion.createInMemory(1 << 16, { entropy: seededEntropy(createPrng(1)) });
  PrismKvServer.format(region, SMALL_LAYOUT);
  const nic = new Rnic(region, { drain: 'eager', entropy: seededEntropy(createPrng(2)) });
  const kv = PrismKvServer.open(region, nic);
  const server = new TcpNicServer(nic, { accept: () => ({ qp: kv.accept(), welcome: new Uint8Array(0) }) });
  const { port } = await server.listen();
  t.teardown(() => server.close());
  const clients = await Promise.all(
    [0, 1, 2].map(async () => {
      const { link } = await TcpLink.connect({ port });
      return PrismKvClient.connect(new QueuePair(link), kv.address, { returnBatch: 2 });
    }),
  );
  const [a, b] = clients as [PrismKvClient, PrismKvClient];
  t.equal(await a.get('x'), undefined);
  await a.put('x', te.encode('1'));
  t.equal(a.stats.lastOpRoundTrips, 1);
  t.equal(td.decode((await b.get('x'))!), '1');
  t.equal(b.stats.lastOpRoundTrips, 1);
  await Promise.all(clients.map(async (c, i) => {
    for (let n = 0; n < 10; n++) await c.put(`k${n % 3}`, te.encode(`c${i}n${n}`));
  }));
  for (const c of clients) await c.flushReturns();
  t.ok(kv.stats.returnsAccepted > 0, 'the return RPC works over TCP');
  t.same(kv.inspect().problems, []);
  const audit = kv.auditAllocator();
  t.same([audit.leaked.length, audit.doubleFree.length, audit.freeAndReachable.length], [0, 0, 0], JSON.stringify({ s: kv.stats, c: clients.map((c) => [c.stats, c.pendingReturns]), leaked: audit.leaked }));
  for (const c of clients) c.qp.close();
});

t.test('Pilaf-style over TCP', async (t) => {
  const region = PmemRegion.createInMemory(1 << 16, { entropy: seededEntropy(createPrng(3)) });
  PilafServer.format(region, SMALL_LAYOUT);
  const nic = new Rnic(region, { drain: 'eager', entropy: seededEntropy(createPrng(4)) });
  const p = PilafServer.open(region, nic);
  const server = new TcpNicServer(nic, { accept: () => ({ qp: p.accept(), welcome: new Uint8Array(0) }) });
  const { port } = await server.listen();
  t.teardown(() => server.close());
  const { link } = await TcpLink.connect({ port });
  const c = await PilafClient.connect(new QueuePair(link), p.address);
  await c.put('x', te.encode('hello'));
  t.equal(td.decode((await c.get('x'))!), 'hello');
  t.equal(c.stats.lastOpRoundTrips, 2);
  c.qp.close();
  p.close();
});
