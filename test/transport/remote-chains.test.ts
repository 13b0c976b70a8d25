// A chain posted over a remote link (Link.remote: TcpLink) is not marked checked in this process
// (validate.ts markChecked: a WeakSet entry per chain, of use only to a NIC in this process); over a
// link that may reach a NIC here (the in-process fabric) it still is, so that NIC skips the re-check.
import t from 'tap';
import { Access, QueuePair, Rnic, Wr, type Link, type WorkRequest } from '../../flush/index.js';
import { PmemRegion, createPrng, seededEntropy } from '../../pmem/index.js';
import { chainError } from '../../flush/validate.js';
import { TcpLink, TcpNicServer } from '../../src/transport/index.js';

function stubLink(remote: boolean | undefined): Link {
  return { qpn: 1, closed: false, send: () => undefined, onMessage: () => undefined, close: () => undefined, ...(remote === undefined ? {} : { remote }) };
}

const listener = { done: () => undefined, failed: () => undefined };

for (const remote of [true, false, undefined]) {
  t.test(`remote ${String(remote)}: the posted chain is ${remote === true ? 'not ' : ''}marked checked`, async (t) => {
    const qp = new QueuePair(stubLink(remote));
    const wrs: WorkRequest[] = [Wr.write({ rkey: 1, addr: 0 }, new Uint8Array(8))];
    qp.postChainWith(wrs, listener as never, undefined);
    // Broken after posting: a chain marked checked is not looked at again (chainError says nothing).
    (wrs as unknown[])[0] = { op: 'nonsense' };
    const e = chainError(wrs);
    if (remote === true) t.ok(e !== undefined && e.index === 0, `checked anew: ${e?.why}`);
    else t.equal(e, undefined, 'marked checked: not checked again');
  });
}

t.test('a TcpLink is remote: a chain posted over it is checked by the server NIC, not marked here', async (t) => {
  const region = PmemRegion.createInMemory(1 << 16, { entropy: seededEntropy(createPrng(3)) });
  const nic = new Rnic(region, { entropy: seededEntropy(createPrng(4)) });
  const pd = nic.allocPd();
  const mr = nic.registerMr(pd, 0, 1 << 15, Access.ALL);
  const server = new TcpNicServer(nic, { accept: () => ({ qp: nic.createQp(pd), welcome: Uint8Array.of(1) }) });
  const { port } = await server.listen();
  t.teardown(() => server.close());
  const { link } = await TcpLink.connect({ port });
  t.teardown(() => link.close());
  t.equal(link.remote, true);
  const qp = new QueuePair(link);
  const cs = await qp.postChain([Wr.write({ rkey: mr.rkey, addr: 0 }, new Uint8Array(8))]);
  t.equal(cs[0]!.status, 'ok', 'the write ran on the server');
});
