// The transport's options go through the one options helper (pmem/options.ts): its exact messages.
import t from 'tap';
import { Rnic } from '../../flush/index.js';
import { PmemRegion } from '../../pmem/index.js';
import { TcpLink, TcpNicServer } from '../../src/transport/index.js';

t.test('options that are not an object: the helper\'s message', async (t) => {
  const region = PmemRegion.createInMemory(1 << 16);
  const nic = new Rnic(region);
  t.throws(() => new TcpNicServer(nic, null as never), new TypeError('options must be an object, got null'));
  await t.rejects(TcpLink.connect(null as never), new TypeError('options must be an object, got null'));
  nic.close();
  region.close();
});

t.test('a hard bound below its high-water mark names both', async (t) => {
  const region = PmemRegion.createInMemory(1 << 16);
  const nic = new Rnic(region);
  const accept = (): never => {
    throw new Error('unused');
  };
  t.throws(() => new TcpNicServer(nic, { accept, highWaterBytes: 10, outgoingBytesMax: 5 }), new RangeError('outgoingBytesMax (5) must be >= highWaterBytes (10)'));
  await t.rejects(TcpLink.connect({ port: 1, highWaterBytes: 10, sendBufferBytesMax: 5 }), new RangeError('sendBufferBytesMax (5) must be >= highWaterBytes (10)'));
  nic.close();
  region.close();
});
