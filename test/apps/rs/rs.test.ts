// PRISM-RS in-process: writes and reads through the RsClient over 3 and 5 replicas, replica crash
// and restart (recovery, write-back repairs the restarted replica), bad inputs with coded errors,
// the welcome and the App contract.
import t from 'tap';
import { PmemRegion, VirtualClock, PmrpcError } from '../../../pmem/index.js';
import { RsClient, RsErrorCodes, RsLocalCluster, rsApp, decodeRsItem, encodeRsItem, encodeRsSlot, decodeRsSlot, compareTags, LOST_TAG, ZERO_TAG, rsTagMask, parseRsWelcome } from '../../../src/apps/rs/index.js';

const te = new TextEncoder();
const td = new TextDecoder();

t.test('layout: slot and item encodings; the tag mask compares ⟨ts, writer⟩', async (t) => {
  const s = { ptr: 4096, bound: 64, tag: { ts: 7n, writer: 3n } };
  t.same(decodeRsSlot(encodeRsSlot(s)), s);
  const it = { block: 5, tag: { ts: 2n, writer: 9n }, value: te.encode('hello') };
  const b = encodeRsItem(it);
  t.same(decodeRsItem(b), it);
  b[34] = b[34]! ^ 1;
  t.equal(decodeRsItem(b), undefined, 'a flipped bit fails the checksum');
  t.ok(compareTags({ ts: 2n, writer: 1n }, { ts: 1n, writer: 99n }) > 0, 'timestamp first');
  t.ok(compareTags(LOST_TAG, { ts: 1n, writer: 0n }) < 0, 'LOST is below every real tag');
  t.ok(compareTags(ZERO_TAG, LOST_TAG) < 0);
  t.same([...rsTagMask()].slice(0, 16), new Array(16).fill(0));
  // Little-endian unsigned compare of the slot bytes under the mask orders by tag.
  const le = (x: Uint8Array): bigint => [...x].reverse().reduce((a, v) => (a << 8n) | BigInt(v), 0n);
  const m = rsTagMask();
  const key = (tag: { ts: bigint; writer: bigint }): bigint => le(encodeRsSlot({ ptr: 1, bound: 2, tag }).map((v, i) => v & m[i]!));
  t.ok(key({ ts: 2n, writer: 1n }) > key({ ts: 1n, writer: 2n ** 63n }));
  t.ok(key({ ts: 2n, writer: 2n }) > key({ ts: 2n, writer: 1n }));
});

for (const replicas of [3, 5]) {
  t.test(`${replicas} replicas: write then read, two writers, never-written block`, async (t) => {
    const c = RsLocalCluster.start({ replicas, app: { layout: { blocks: 8 } } });
    const a = c.client({ writerId: 1 });
    const b = c.client({ writerId: 2 });
    t.equal(await a.read(3), null, 'never written');
    await a.write(3, te.encode('one'));
    t.equal(td.decode((await b.read(3))!), 'one');
    await b.write(3, te.encode('two'));
    t.equal(td.decode((await a.read(3))!), 'two');
    await Promise.all([a.write(4, te.encode('x')), b.write(4, te.encode('y'))]);
    const v = td.decode((await a.read(4))!);
    t.ok(v === 'x' || v === 'y');
    t.equal(td.decode((await b.read(4))!), v, 'both readers agree');
    // a's location hints may name its own item, which the other writer's replaced: such a read takes a second chain.
    t.ok(a.stats.lastOpRoundTrips <= 2, 'a read whose hints were stale: at most 2 round trips');
    t.equal(td.decode((await a.read(4))!), v);
    t.equal(a.stats.lastOpRoundTrips, 1, 'a read that the majority agrees on, hints current: 1 round trip');
    await a.settle();
    await b.settle();
    for (let i = 0; i < replicas; i++) t.same(c.server(i).audit(), [], `replica ${i} sound: no leaked or doubly used buffer`);
    await c.close();
  });
}

t.test('a replica crashes and restarts: writes go on at a majority, recovery, write-back repairs it', async (t) => {
  const c = RsLocalCluster.start({ replicas: 3, tracing: true, app: { layout: { blocks: 4 } } });
  const w = c.client({ writerId: 1 });
  await w.write(0, te.encode('before'));
  c.crash(2);
  await w.write(0, te.encode('during'));
  await w.write(1, te.encode('during1'));
  c.crash(1);
  const clock = new VirtualClock();
  const lone = c.client({ writerId: 3, clock, majorityWaitMs: 5 });
  const p = lone.write(0, te.encode('nope'));
  const rejected = t.rejects(p, { code: RsErrorCodes.NO_MAJORITY }, 'no majority: a coded error after the bounded wait');
  for (let i = 0; i < 20; i++) {
    await new Promise((r) => setImmediate(r));
    clock.advanceMs(1);
  }
  await rejected;
  c.restart(1);
  const s2 = c.restart(2);
  t.equal(s2.value(0) !== 'empty' && s2.value(0) !== undefined && s2.value(0) !== 'lost' ? td.decode((s2.value(0) as { value: Uint8Array }).value) : '', 'before', 'replica 2 missed the writes while down');
  const r = c.client({ writerId: 4 });
  t.equal(td.decode((await r.read(0))!), 'during');
  t.equal(td.decode((await r.read(1))!), 'during1');
  await r.settle();
  for (let i = 0; i < 3; i++) {
    const v = c.server(i).value(0);
    t.ok(typeof v === 'object' && td.decode(v.value) === 'during', `replica ${i} converged on block 0`);
  }
  await c.close();
});

t.test('bad inputs: coded errors', async (t) => {
  const c = RsLocalCluster.start({ replicas: 3, app: { layout: { blocks: 2, classes: [{ sizeBytes: 64, count: 16 }] } } });
  const a = c.client({ writerId: 1 });
  await t.rejects(a.write(2, te.encode('x')), { code: RsErrorCodes.BAD_BLOCK });
  await t.rejects(a.read(-1), { code: RsErrorCodes.BAD_BLOCK });
  await t.rejects(a.write(0, new Uint8Array(33)), { code: RsErrorCodes.VALUE_TOO_LARGE });
  await t.rejects(a.write(0, 'x' as unknown as Uint8Array), TypeError);
  t.throws(() => new RsClient([]), RangeError);
  t.throws(() => c.client({ writerId: 0 }), RangeError);
  t.throws(() => parseRsWelcome(te.encode('{}')), { code: RsErrorCodes.NOT_FORMATTED });
  await a.close();
  await t.rejects(a.read(0), { code: RsErrorCodes.CLOSED });
  const region = PmemRegion.createInMemory(rsApp.minRegionBytes(rsApp.resolveOptions({})));
  rsApp.format(region, rsApp.resolveOptions({}));
  t.throws(() => rsApp.format(region, rsApp.resolveOptions({})), { code: RsErrorCodes.ALREADY_FORMATTED });
  t.throws(() => rsApp.resolveOptions({ base: 3 }), RangeError);
  t.throws(() => rsApp.resolveOptions({ layout: { blocks: 0 } }), RangeError);
  t.throws(() => rsApp.format(PmemRegion.createInMemory(4096), rsApp.resolveOptions({})), { code: RsErrorCodes.LAYOUT_TOO_LARGE });
  t.ok(new PmrpcError(RsErrorCodes.NO_MAJORITY, 'x').code === 'PMRPC_ERR_RS_NO_MAJORITY');
  await c.close();
});
