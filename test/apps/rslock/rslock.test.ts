// The lock-based replication baseline (src/apps/rslock): reads and writes on N = 3 and 5 replicas,
// round trips per operation, bad inputs, concurrent writers on a seeded interleaving (a block's
// bytes never mix two writes), fail-over to a spare replica and the read's write-back, recovery
// re-deriving lock words a crash left held. Crash images: test/crash/rslock.test.ts.
import t from 'tap';
import { createPrng, crashImages, materialize, PmemRegion, seededEntropy, systemClock } from '../../../pmem/index.js';
import { InProcessFabric, QueuePair, Rnic } from '../../../flush/index.js';
import { appByName } from '../../../src/node/index.js';
import { decodeLockLine, encodeLockLine, LOCK_LINE_BYTES, lockOffset, RsLockClient, rslockApp, startLocalRsLock, type RsLockAppServer } from '../../../src/apps/rslock/index.js';

const seed = Number(process.env.PMRPC_TEST_SEED ?? 11);
t.comment(`seed ${seed}`);

const bytes = (n: number, fill: number): Uint8Array => new Uint8Array(n).fill(fill & 0xff);

t.test('write then read on 3 and 5 replicas: 2 round trips per write, 1 per warm read, null before any write', async (t) => {
  for (const n of [3, 5]) {
    const cl = startLocalRsLock(n, { app: { blocks: 8, blockBytes: 256 }, seed, nic: { drain: 'eager' } });
    const c = cl.client();
    t.equal(await c.read(3), null, `n=${n}: a block never written reads null`);
    await c.write(3, bytes(100, 0xab));
    t.equal(c.stats.lastOpRoundTrips, 2, `n=${n}: lock, then install (write-combined)`);
    t.same(await c.read(3), bytes(100, 0xab));
    t.equal(c.stats.lastOpRoundTrips, 1, `n=${n}: a warm read is one round trip`);
    await c.write(3, new Uint8Array(0));
    t.same(await c.read(3), new Uint8Array(0), 'an empty value is a value, not null');
    const other = cl.client();
    t.same(await other.read(3), new Uint8Array(0), 'another client reads it');
    t.equal(other.stats.lastOpRoundTrips, 1, 'small blocks: a cold client reads both slots and the lock word in one round trip');
    await other.write(3, bytes(256, 1));
    t.same(await c.read(3), bytes(256, 1), 'a stale cached lock word costs a re-read, not a wrong answer');
    t.equal(c.stats.messages > 0 && c.stats.roundTrips > 0, true);
    // The majority holds the block durably; the spares never saw a write.
    const m = Math.floor(n / 2) + 1;
    for (let i = 0; i < n; i++) {
      const b = cl.replicas[i]!.block(3)!;
      if (i < m) t.same([b.version, b.data], [3n, bytes(256, 1)], `n=${n}: replica ${i} (quorum) holds version 3`);
      else t.equal(b.version, 0n, `n=${n}: replica ${i} (spare) untouched`);
      t.same(cl.replicas[i]!.audit(), [], `replica ${i}: audit clean`);
    }
    await c.close();
    await other.close();
    cl.close();
  }
});

t.test('large blocks: a cold reader fetches the lock words first; a stale cached word costs one more round trip', async (t) => {
  const cl = startLocalRsLock(3, { app: { blocks: 2, blockBytes: 4096 }, seed, nic: { drain: 'eager' } });
  const a = cl.client();
  const b = cl.client();
  await a.write(0, bytes(4096, 1));
  t.same(await b.read(0), bytes(4096, 1));
  t.equal(b.stats.lastOpRoundTrips, 2, 'lock words, then slot + lock word');
  await a.write(0, bytes(4096, 2));
  t.same(await b.read(0), bytes(4096, 2));
  t.equal(b.stats.lastOpRoundTrips, 2, 'the cached word named the other slot: read again');
  await a.write(0, bytes(4000, 3));
  await a.write(0, bytes(4096, 4));
  t.same(await b.read(0), bytes(4096, 4));
  t.equal(b.stats.lastOpRoundTrips, 1, 'two writes later the cached slot is right again: the version comes from the line read after');
  t.equal(a.stats.lastOpRoundTrips, 2);
  await b.write(0, bytes(10, 5));
  t.equal(b.stats.lastOpRoundTrips, 2, 'a writer never needs a cached word: the FAA beside the lock CAS reads the version');
  cl.close();
});

t.test('bad inputs get coded errors or exact TypeError / RangeError', async (t) => {
  const cl = startLocalRsLock(3, { app: { blocks: 4, blockBytes: 64 }, seed });
  const c = cl.client();
  await t.rejects(c.write(0, bytes(65, 1)), { code: 'PMRPC_ERR_RSLOCK_VALUE_TOO_LARGE' });
  await t.rejects(c.write(4, bytes(1, 1)), new RangeError('block must be an integer in [0, 4), got 4'));
  await t.rejects(c.read(-1), RangeError);
  await t.rejects(c.write(0, 'x' as never), new TypeError('data must be a Uint8Array'));
  t.throws(() => rslockApp.resolveOptions({ blocks: 0 }), RangeError);
  t.throws(() => rslockApp.resolveOptions({ base: 3 }), RangeError);
  t.throws(() => cl.client({ lockRetriesMax: -1 }), RangeError);
  t.throws(() => RsLockClient.connect([undefined, undefined]), { code: 'PMRPC_ERR_RSLOCK_NO_MAJORITY' });
  t.throws(() => RsLockClient.connect([{ qp: c as never, welcome: new Uint8Array(0) }]), TypeError);
  const region = PmemRegion.createInMemory(rslockApp.minRegionBytes(rslockApp.resolveOptions({ blocks: 4, blockBytes: 64 })));
  const o = rslockApp.resolveOptions({ blocks: 4, blockBytes: 64 });
  t.throws(() => rslockApp.open({ region, nic: new Rnic(region), clock: systemClock, schedule: queueMicrotask, entropy: seededEntropy(createPrng(1)) }, o), { code: 'PMRPC_ERR_RSLOCK_NOT_FORMATTED' });
  rslockApp.format(region, o);
  t.throws(() => rslockApp.format(region, o), { code: 'PMRPC_ERR_RSLOCK_ALREADY_FORMATTED' });
  t.throws(() => rslockApp.format(PmemRegion.createInMemory(4096), rslockApp.resolveOptions({ blocks: 64, blockBytes: 4096 })), { code: 'PMRPC_ERR_RSLOCK_LAYOUT_TOO_LARGE' });
  t.equal(appByName('rslock'), rslockApp, 'the node host can host it');
  await c.close();
  await t.rejects(c.read(0), { code: 'PMRPC_ERR_RSLOCK_CLOSED' });
  cl.close();
});

t.test('a majority down: NO_MAJORITY, not a hang', async (t) => {
  const cl = startLocalRsLock(3, { app: { blocks: 2, blockBytes: 64 }, seed });
  const c = cl.client();
  await c.write(0, bytes(8, 1));
  const lost: number[] = [];
  const d = cl.client({ onReplicaLost: (i) => lost.push(i) });
  await d.read(0);
  cl.replicas[0]!.close();
  cl.replicas[1]!.close();
  await t.rejects(d.write(0, bytes(8, 2)), { code: 'PMRPC_ERR_RSLOCK_NO_MAJORITY' });
  await t.rejects(d.read(0), { code: 'PMRPC_ERR_RSLOCK_NO_MAJORITY' });
  t.ok(lost.includes(0) && lost.includes(1), `replicas 0 and 1 reported lost (${lost.join(',')})`);
  cl.close();
});

t.test('concurrent writers and readers on a seeded op-by-op interleaving: no block ever mixes two writes', async (t) => {
  for (const n of [3, 5]) {
    const cl = startLocalRsLock(n, { app: { blocks: 2, blockBytes: 512 }, seed, nic: { drain: 'lazy' }, fabric: { delivery: 'seeded', autoRun: true } });
    const clients = Array.from({ length: 4 }, () => cl.client({ backoffMsMax: 0.5 }));
    const torn: string[] = [];
    let reads = 0;
    await Promise.all(
      clients.map(async (c, ci) => {
        const prng = createPrng(seed * 13 + ci);
        for (let k = 0; k < 30; k++) {
          const block = prng.int(0, 1);
          if (prng.int(0, 1) === 0) await c.write(block, bytes(prng.int(1, 512), ci * 40 + k + 1));
          else {
            const v = await c.read(block);
            reads++;
            if (v !== null && v.some((x) => x !== v[0])) torn.push(`client ${ci} read block ${block}: mixed bytes ${[...new Set(v)].join(',')}`);
          }
        }
      }),
    );
    t.same(torn, [], `n=${n}: ${reads} reads, none mixed`);
    const conflicts = clients.reduce((s, c) => s + c.stats.lockConflicts + c.stats.readRetries, 0);
    t.comment(`n=${n}: ${conflicts} lock conflicts + read retries`);
    const m = Math.floor(n / 2) + 1;
    for (const b of [0, 1]) {
      const recs = cl.replicas.slice(0, m).map((r) => r.block(b)!);
      t.ok(recs.every((r) => r.version === recs[0]!.version && r.data.every((x, i) => x === recs[0]!.data[i]) && r.data.length === recs[0]!.data.length), `n=${n} block ${b}: the quorum agrees on version ${recs[0]!.version}`);
    }
    for (const r of cl.replicas) t.same(r.audit(), [], 'every lock released, every record valid');
    for (const c of clients) await c.close();
    cl.close();
  }
});

t.test('fail-over to a spare, then a read writes the highest record back to the member behind', async (t) => {
  const cl = startLocalRsLock(3, { app: { blocks: 2, blockBytes: 64 }, seed });
  const full = cl.client();
  await full.write(1, bytes(10, 1)); // on replicas 0, 1
  // A client that cannot reach replica 0 writes on {1, 2}.
  const links = cl.replicas.map((r, i) => {
    if (i === 0) return undefined;
    const { qp, welcome } = r.accept(new Uint8Array(0));
    return { qp: new QueuePair(new InProcessFabric(cl.nics[i]!).connect(qp)), welcome };
  });
  const partial = RsLockClient.connect(links);
  await partial.write(1, bytes(10, 2));
  t.same(cl.replicas.map((r) => r.block(1)!.version), [1n, 2n, 2n], 'replica 0 is behind');
  // {0, 1} disagree: the read repairs replica 0 before it returns the newer value.
  t.same(await full.read(1), bytes(10, 2));
  t.equal(full.stats.repairs, 1, 'one write-back');
  t.same(cl.replicas.map((r) => r.block(1)!.version), [2n, 2n, 2n], 'every replica holds version 2');
  t.same(await full.read(1), bytes(10, 2));
  t.equal(full.stats.repairs, 1, 'an agreeing quorum needs no repair');
  cl.close();
});

t.test('recovery re-derives lock words: a lock held at a crash is released, a half-written slot ignored', async (t) => {
  const o = rslockApp.resolveOptions({ blocks: 2, blockBytes: 64 });
  const region = PmemRegion.createInMemory(rslockApp.minRegionBytes(o), { tracing: true });
  rslockApp.format(region, o);
  const host = (r: PmemRegion) => ({ region: r, nic: new Rnic(r, { drain: 'eager' }), clock: systemClock, schedule: queueMicrotask, entropy: seededEntropy(createPrng(seed)) });
  const s = rslockApp.open(host(region), o) as RsLockAppServer;
  s.recover();
  const g = s.geometry;
  // A writer died holding block 0's lock (the lock word persisted as locked).
  region.store(lockOffset(g, 0), encodeLockLine({ version: 0n, slot: 0, locked: true }, 12345n));
  region.persist(lockOffset(g, 0), LOCK_LINE_BYTES);
  t.ok(s.audit().some((p) => p.kind === 'lock'), 'audit sees the held lock');
  const media = region.crashState();
  const image = PmemRegion.openImage(materialize(media, [...crashImages(media, { engine: 'none' })][0]!));
  const s2 = rslockApp.open(host(image), o) as RsLockAppServer;
  const rep = s2.recover();
  t.same(rep, { app: 'rslock', blocks: o.blocks, lockLinesRederived: 1, lostCopies: 0, rows: { 'lock-rederived': 1, sound: 1 } }, 'the typed recovery report: one lock line re-derived, no copy lost');
  t.same(decodeLockLine(image.load(lockOffset(g, 0), LOCK_LINE_BYTES)), { version: 0n, slot: 0, locked: false });
  t.same(s2.audit(), [], 'sound after recovery');
  t.equal(s2.recover(), rep, "recover() is idempotent: a second call returns the first's report");
});
