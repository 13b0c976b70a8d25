// The paper-style lock-based baseline (RsLockClient style 'paper': lock → access → unlock, the
// replication PRISM (SOSP'21) measured against): 3 round trips per read and per write, readers lock
// too, the same replicas and layout as the SIGMOD'23-guided style (the two interoperate), concurrent
// writers and readers on a seeded interleaving see whole values only, a disagreeing quorum is
// written back, and every lock is released.
import t from 'tap';
import { createPrng, crashImages, materialize, PmemRegion, seededEntropy, systemClock } from '../../../pmem/index.js';
import { InProcessFabric, QueuePair, Rnic } from '../../../flush/index.js';
import { RsLockClient, rslockApp, startLocalRsLock, type RsLockAppServer } from '../../../src/apps/rslock/index.js';

const seed = Number(process.env.PMRPC_TEST_SEED ?? 11);
t.comment(`seed ${seed} (replay: PMRPC_TEST_SEED=${seed} npx tap test/apps/rslock/paper.test.ts)`);
const bytes = (n: number, fill: number): Uint8Array => new Uint8Array(n).fill(fill & 0xff);

t.test('lock → access → unlock: 3 round trips per read and per write; interoperates with the SIGMOD\'23 style', async (t) => {
  const cl = startLocalRsLock(3, { app: { blocks: 8, blockBytes: 256 }, seed, nic: { drain: 'eager' } });
  const p = cl.client({ style: 'paper' });
  t.equal(await p.read(2), null, 'never written: null');
  t.equal(p.stats.lastOpRoundTrips, 3, 'read: lock, READ, unlock');
  await p.write(2, bytes(100, 0xab));
  t.equal(p.stats.lastOpRoundTrips, 3, 'write: lock, WRITE + FLUSH, unlock');
  t.same(await p.read(2), bytes(100, 0xab));
  t.equal(p.stats.lastOpRoundTrips, 3);
  const s = cl.client();
  t.same(await s.read(2), bytes(100, 0xab), 'the SIGMOD\'23 style reads what the paper style wrote');
  await s.write(2, bytes(256, 7));
  t.same(await p.read(2), bytes(256, 7), 'and the other way round');
  for (let i = 0; i < 2; i++) {
    const line = cl.replicas[i]!.block(2)!;
    t.same([line.version, line.data], [2n, bytes(256, 7)], `replica ${i} holds version 2`);
    t.same(cl.replicas[i]!.audit(), [], `replica ${i}: audit clean (no lock left held)`);
  }
  t.throws(() => cl.client({ style: 'lock-step' as never }), new TypeError("style must be 'sigmod23' or 'paper', got lock-step"), 'an unknown style is refused');
  cl.close();
});

t.test('concurrent paper-style writers and readers (seeded interleaving): whole values only, no lock left held', async (t) => {
  const cl = startLocalRsLock(3, { app: { blocks: 2, blockBytes: 64 }, seed, nic: { drain: 'lazy' }, fabric: { delivery: 'seeded' } });
  const clients = [0, 1, 2, 3].map((i) => cl.client({ style: 'paper', prng: createPrng(seed * 7 + i) }));
  const seen: number[] = [];
  await Promise.all(
    clients.map(async (c, i) => {
      for (let k = 0; k < 6; k++) {
        if ((i + k) % 2 === 0) await c.write(k % 2, bytes(64, 16 * i + k + 1));
        else {
          const v = await c.read(k % 2);
          if (v !== null) {
            t.ok(v.every((b) => b === v[0]), `client ${i}: a read returns one write's bytes, never a mix`);
            seen.push(v[0]!);
          }
        }
      }
    }),
  );
  t.ok(seen.length > 0, `${seen.length} reads returned values`);
  const final = [await clients[0]!.read(0), await clients[1]!.read(1)];
  for (const v of final) t.ok(v !== null && v.every((b) => b === v[0]), 'the final value of each block is one write');
  for (let i = 0; i < 3; i++) t.same(cl.replicas[i]!.audit(), [], `replica ${i}: audit clean`);
  cl.close();
});

t.test('a quorum that disagrees is written back under the read\'s locks', async (t) => {
  const cl = startLocalRsLock(3, { app: { blocks: 2, blockBytes: 64 }, seed });
  const full = cl.client({ style: 'paper' });
  await full.write(1, bytes(10, 1)); // on replicas 0, 1
  // A client that cannot reach replica 0 writes on {1, 2}.
  const links = cl.replicas.map((r, i) => {
    if (i === 0) return undefined;
    const { qp, welcome } = r.accept(new Uint8Array(0));
    return { qp: new QueuePair(new InProcessFabric(cl.nics[i]!).connect(qp)), welcome };
  });
  const partial = RsLockClient.connect(links, { style: 'paper' });
  await partial.write(1, bytes(10, 2));
  t.same(cl.replicas.map((r) => r.block(1)!.version), [1n, 2n, 2n], 'replica 0 is behind');
  t.same(await full.read(1), bytes(10, 2), 'the highest record of {0, 1}');
  t.equal(full.stats.repairs, 1, 'written back');
  t.equal(full.stats.lastOpRoundTrips, 4, 'lock, READ, WRITE + FLUSH to the one behind, unlock');
  t.same(cl.replicas.map((r) => r.block(1)!.version), [2n, 2n, 2n], 'every replica holds version 2');
  for (let i = 0; i < 3; i++) t.same(cl.replicas[i]!.audit(), [], `replica ${i}: audit clean`);
  cl.close();
});

// Crash images: a paper-style write is acknowledged only after its record's FLUSH(persistent) on
// every member, so at that moment every crash image of a member recovers to the written value;
// the skipFlush fault (the FLUSH dropped) leaves images that lose it — the test has teeth.
t.test('crash images at a paper-style write\'s acknowledgement recover it on every member; without the FLUSH some lose it', async (t) => {
  const o = rslockApp.resolveOptions({ blocks: 2, blockBytes: 64 });
  const host = (r: PmemRegion, i: number) => ({ region: r, nic: new Rnic(r, { drain: 'eager', ddio: true, entropy: seededEntropy(createPrng(seed * 89 + i)) }), clock: systemClock, schedule: queueMicrotask, entropy: seededEntropy(createPrng(seed * 83 + i)) });
  for (const skipFlush of [false, true]) {
    const regions = [0, 1, 2].map((i) => {
      const r = PmemRegion.createInMemory(rslockApp.minRegionBytes(o), { tracing: true, entropy: seededEntropy(createPrng(seed * 97 + i)) });
      rslockApp.format(r, o);
      return r;
    });
    const links = regions.map((r, i) => {
      const h = host(r, i);
      const s = rslockApp.open(h, o) as RsLockAppServer;
      s.recover();
      const { qp, welcome } = s.accept(new Uint8Array(0));
      return { qp: new QueuePair(new InProcessFabric(h.nic).connect(qp)), welcome };
    });
    const c = RsLockClient.connect(links, { style: 'paper', faults: { skipFlush } });
    await c.write(1, bytes(64, 0x5a));
    let images = 0;
    let lost = 0;
    for (const i of [0, 1]) {
      const state = regions[i]!.crashState();
      for (const img of crashImages(state, { engine: 'exhaustive', maxImages: 256 })) {
        images++;
        const image = PmemRegion.openImage(materialize(state, img));
        const s = rslockApp.open(host(image, i), o) as RsLockAppServer;
        s.recover();
        const b = s.block(1)!;
        if (b.version !== 1n || !Buffer.from(b.data).equals(Buffer.from(bytes(64, 0x5a)))) lost++;
      }
    }
    t.ok(images > 0, `skipFlush=${skipFlush}: ${images} crash images of the quorum`);
    if (skipFlush) t.ok(lost > 0, `mutant skipFlush caught: ${lost} of ${images} images lose the acknowledged write`);
    else t.equal(lost, 0, 'every image of every quorum member holds the acknowledged write');
    await c.close();
  }
});
