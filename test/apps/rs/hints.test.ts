// PRISM-RS reads through location hints (docs/rs.md, "Direct reads"): a client that saw a block's
// slot READs the item where it was, beside a READ of the slot, and counts the item only when it
// carries the tag the slot shows after it — one chain, no dereference. One replica (the last live
// one, when a majority is live without it) reads through the slot instead (the bounded indirect
// READ): a stale hint (another writer moved the slot) is then answered in the same round trip —
// the moved replicas' slots give the tag, that replica the item of the same tag. Without such a
// spare replica the moved replicas are read again where the slot now points (2 round trips).
// Mutant trustLocationHint skips the tag check and returns the overwritten value.
import t, { type Test } from 'tap';
import { RsClient, RsLocalCluster } from '../../../src/apps/rs/index.js';

const te = new TextEncoder();
const td = new TextDecoder();
const text = async (c: RsClient, block: number): Promise<string | null> => {
  const v = await c.read(block);
  return v === null ? null : td.decode(v);
};

t.test('hits, cold reads with their window, and a never-written block in one round trip', async (t) => {
  const c = RsLocalCluster.start({ replicas: 3, app: { layout: { blocks: 100 } } });
  const a = c.client({ writerId: 1 });
  const b = c.client({ writerId: 2 });
  await a.write(5, te.encode('five'));
  await a.write(70, te.encode('seventy'));
  await a.settle();
  // a saw both slots in its installs: its reads are direct on replicas 0 and 1, one round trip;
  // replica 2 (the spare) reads through the slot.
  const before = a.stats.readChains;
  t.equal(await text(a, 5), 'five');
  await a.settle(); // the spare's chain may end after the majority's
  t.equal(a.stats.lastOpRoundTrips, 1);
  t.equal(a.stats.readChains.direct - before.direct, 2, 'one direct chain on each of replicas 0 and 1');
  t.equal(a.stats.readChains.indirect - before.indirect, 1, 'one bounded indirect READ, on replica 2');
  // b has no hints: its first read of block 5 is the bounded indirect READ beside the slots of its window (blocks 0..63).
  t.equal(await text(b, 5), 'five');
  await b.settle();
  t.equal(b.stats.lastOpRoundTrips, 1);
  t.same(b.stats.readChains, { direct: 0, indirect: 3, moved: 0 });
  // Block 70 lies in the next window: cold again; then direct.
  t.equal(await text(b, 70), 'seventy');
  await b.settle();
  t.same(b.stats.readChains, { direct: 0, indirect: 6, moved: 0 });
  t.equal(await text(b, 70), 'seventy');
  await b.settle();
  t.same(b.stats.readChains, { direct: 2, indirect: 7, moved: 0 });
  // A block never written: the slot's READ in the cold chain shows it, in the same round trip.
  t.equal(await text(b, 99), null);
  t.equal(b.stats.lastOpRoundTrips, 1);
  await a.close();
  await b.close();
  for (let i = 0; i < 3; i++) t.same(c.server(i).audit(), [], `replica ${i} sound`);
  await c.close();
});

async function staleHint(t: Test, trust: boolean, down?: number): Promise<{ read: string | null; roundTrips: number; moved: number; writeBacks: number }> {
  const c = RsLocalCluster.start({ replicas: 3, app: { layout: { blocks: 4 } } });
  const a = c.client({ writerId: 1, faults: trust ? { trustLocationHint: true } : {} });
  const b = c.client({ writerId: 2 });
  await a.write(0, te.encode('one'));
  t.equal(await text(a, 0), 'one');
  // b replaces the item a's hints name; a's old buffer waits in b's return batch, intact.
  await b.write(0, te.encode('two'));
  await b.settle();
  // A replica down: no spare, every live replica reads direct.
  if (down !== undefined) c.crash(down);
  const read = await text(a, 0);
  await a.settle();
  const out = { read, roundTrips: a.stats.lastOpRoundTrips, moved: a.stats.readChains.moved, writeBacks: a.stats.writeBacks };
  await a.close();
  await b.close();
  await c.close();
  return out;
}

t.test("a stale hint: the slot moved; the spare replica's item answers it in the same round trip; mutant trustLocationHint caught", async (t) => {
  const ok = await staleHint(t, false);
  t.equal(ok.read, 'two', 'the overwriting value');
  t.equal(ok.roundTrips, 1, "the moved slots' tags and the spare's item of the same tag: one round trip");
  t.equal(ok.moved, 2, 'both direct chains found the slot moved');
  t.equal(ok.writeBacks, 0, 'a majority holds the tag: no write-back');
  const bad = await staleHint(t, true);
  t.equal(bad.read, 'one', 'mutant trustLocationHint caught: it returns the overwritten value after the overwriting write completed');
});

t.test('a stale hint without a spare replica: the moved replicas are read again where the slot now points (2 round trips)', async (t) => {
  const ok = await staleHint(t, false, 2);
  t.equal(ok.read, 'two', 'the overwriting value');
  t.equal(ok.roundTrips, 2, 'the direct chain, then one where the slot now points');
  t.equal(ok.moved, 2, 'both live replicas found the slot moved');
  const bad = await staleHint(t, true, 2);
  t.equal(bad.read, 'one', 'mutant trustLocationHint caught without a spare too');
});

t.test('a restarted replica: the client forgets its hints for it and reads it cold', async (t) => {
  const c = RsLocalCluster.start({ replicas: 3, tracing: true, app: { layout: { blocks: 4 } } });
  const conns = [0, 1, 2].map((i) => c.connect(i));
  const a = new RsClient(conns, { writerId: 1, reconnect: (i) => c.connect(i) });
  await a.write(1, te.encode('x'));
  await a.settle();
  c.crash(2);
  c.restart(2);
  conns[2]!.qp.close(); // the link the crash broke (over TCP the socket closes; in process the test closes it)
  t.notOk(a.isUp(2));
  await a.write(2, te.encode('y')); // reconnects replica 2 before its query
  await a.settle();
  t.ok(a.isUp(2), 'replica 2 reconnected');
  const before = a.stats.readChains;
  t.equal(await text(a, 1), 'x');
  await a.settle(); // the third replica's chain may end after the majority's
  t.equal(a.stats.readChains.indirect - before.indirect, 1, 'replica 2 read cold');
  t.equal(a.stats.readChains.direct - before.direct, 2, 'replicas 0 and 1 read direct');
  await a.close();
  for (let i = 0; i < 3; i++) t.same(c.server(i).audit(), [], `replica ${i} sound`);
  await c.close();
});
