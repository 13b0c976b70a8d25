// PRISM-KV unit tests: round trips per operation, layout, bad input, recovery, the return RPC,
// allocator recovery (recovery/allocator.ts), and the Pilaf-style baseline.
import t from 'tap';
import { crashImages, createPrng, materialize, PmemRegion, seededEntropy } from '../../../pmem/index.js';
import { InProcessFabric, QueuePair, Rnic, Wr } from '../../../flush/index.js';
import { auditAllocator, checkReturn, recoverFreeLists, type ArenaClass } from '../../../recovery/index.js';
import {
  KvErrorCodes,
  PilafClient,
  PilafServer,
  PrismKvClient,
  PrismKvServer,
  RETURN_IMM,
  computeKvGeometry,
  decodeItem,
  decodeKvHeader,
  decodeSlot,
  encodeItem,
  encodeSlot,
  homeSlot,
  slotOffset,
  validateLayoutOptions,
} from '../../../src/apps/kv/index.js';
import { SMALL_LAYOUT, kvSetup, td, te } from './helpers.js';

const code = (c: string): { code: string } => ({ code: c });

/** Two keys of the same home slot. */
function collidingKeys(geometry: ReturnType<typeof computeKvGeometry>): [string, string] {
  const seen = new Map<number, string>();
  for (let i = 0; ; i++) {
    const k = `key${i}`;
    const h = homeSlot(geometry, te.encode(k));
    const other = seen.get(h);
    if (other !== undefined) return [other, k];
    seen.set(h, k);
  }
}

t.test('round trips: GET 1, PUT 1 with a cached slot (2 without), collisions 2, a lost CAS retries', async (t) => {
  const s = await kvSetup();
  const c = await s.client();
  t.equal(await c.get('a'), undefined);
  t.equal(c.stats.lastOpRoundTrips, 1, 'GET of an absent key: 1 RTT');
  await c.put('a', te.encode('hello'));
  t.equal(c.stats.lastOpRoundTrips, 1, 'PUT after a GET (slot cached): 1 RTT');
  t.equal(td.decode((await c.get('a'))!), 'hello');
  t.equal(c.stats.lastOpRoundTrips, 1, 'GET: 1 RTT');
  const c2 = await s.client();
  await c2.put('a', te.encode('second'));
  t.equal(c2.stats.lastOpRoundTrips, 2, 'PUT without a cached slot: READ first, 2 RTT');
  await c.put('a', te.encode('third'));
  t.equal(c.stats.lastOpRoundTrips, 2, 'stale cached version: the CAS loses and returns the current version; retry');
  t.equal(c.stats.casRetries, 1);
  t.equal(td.decode((await c2.get('a'))!), 'third');
  const [k1, k2] = collidingKeys(s.server.geometry);
  await c.put(k1, te.encode('one'));
  await c.put(k2, te.encode('two'));
  const c3 = await s.client();
  t.equal(td.decode((await c3.get(k2))!), 'two');
  t.equal(c3.stats.lastOpRoundTrips, 2, 'a collision: the rest of the window in one more RTT');
  t.equal(td.decode((await c3.get(k1))!), 'one');
  t.equal(c3.stats.lastOpRoundTrips, 1);
  await c.delete('a');
  t.equal(c.stats.lastOpRoundTrips, 1, 'DELETE with a cached slot: 1 RTT');
  t.equal(await c2.get('a'), undefined);
  await c.delete('never-there');
  t.equal(c.stats.lastOpRoundTrips, 1, 'DELETE of an absent key: the locating READ only');
  t.same(s.server.inspect().problems, []);
  t.equal(s.nic.stats.recvCompletions, 0, 'no SEND reached the server CPU: GET / PUT / DELETE are NIC-only');
  await c.flushReturns();
  await c2.flushReturns();
  t.ok(s.server.stats.returnsAccepted > 0);
  const a = s.server.auditAllocator();
  t.same([a.leaked, a.doubleFree, a.freeAndReachable], [[], [], []], 'after the returns, nothing leaked');
});

t.test('a PUT is durable when it completes: the no-pending-lines image has it', async (t) => {
  const s = await kvSetup();
  const c = await s.client();
  await c.put('k', te.encode('v1'));
  const st = s.region.crashState();
  const [none] = [...crashImages(st, { engine: 'none' })];
  const r2 = PmemRegion.openImage(materialize(st, none!), { tracing: true });
  const nic2 = new Rnic(r2, { drain: 'eager', entropy: seededEntropy(createPrng(5)) });
  const s2 = PrismKvServer.open(r2, nic2);
  t.equal(s2.epoch, 2n, 'each open bumps the epoch');
  const c2 = await PrismKvClient.connect(new QueuePair(new InProcessFabric(nic2).connect(s2.accept())), s2.address);
  t.equal(td.decode((await c2.get('k'))!), 'v1');
  t.same(s2.auditAllocator(), { leaked: [], doubleFree: [], freeAndReachable: [], foreign: [] });
});

t.test('bad input: coded errors and exact messages', async (t) => {
  const s = await kvSetup();
  const c = await s.client();
  await t.rejects(c.get('x'.repeat(33)), code(KvErrorCodes.KEY_TOO_LONG));
  await t.rejects(c.get(''), code(KvErrorCodes.KEY_TOO_LONG));
  await t.rejects(c.put('k', new Uint8Array(256)), code(KvErrorCodes.VALUE_TOO_LARGE), 'item larger than the largest class (256)');
  await t.rejects(c.put('k', new Uint8Array(256 - 24 - 1 + 1)), code(KvErrorCodes.VALUE_TOO_LARGE), 'one byte too many');
  await c.put('k', new Uint8Array(256 - 24 - 1));
  t.equal(c.maxValueBytes(1), 231);
  await t.rejects(c.put('k', 'str' as never), new TypeError('value must be a Uint8Array'));
  await t.rejects(c.get(5 as never), new TypeError('key must be a string or a Uint8Array'));
  // A wrong rkey: the NIC refuses, the client gets the NIC's code.
  const qp = new QueuePair(s.fabric.connect(s.server.accept()));
  await t.rejects(PrismKvClient.connect(qp, { rkey: s.server.address.rkey ^ 1, base: 0 }), code('PMRPC_ERR_BAD_RKEY'));
  await t.rejects(PrismKvClient.connect(new QueuePair(s.fabric.connect(s.server.accept())), s.server.address, { returnBatch: 0 }), new RangeError('returnBatch must be an integer in [1, 126], got 0'));
  await t.rejects(PrismKvClient.connect({} as never, s.server.address), new TypeError('qp must be a QueuePair'));
  t.throws(() => validateLayoutOptions({ slotCount: 0 }), new RangeError('slotCount must be an integer in [1, 2^24], got 0'));
  t.throws(() => validateLayoutOptions({ probeSlots: 257 }), new RangeError('probeSlots must be an integer in [1, 256], got 257'));
  t.throws(() => validateLayoutOptions({ probeSlots: 0 }), new RangeError('probeSlots must be an integer in [1, 256], got 0'));
  t.equal(validateLayoutOptions({ slotCount: 16, probeSlots: 256 }).probeSlots, 256, 'a sequence longer than the index is allowed: its groups overlap, duplicates are skipped');
  t.throws(() => validateLayoutOptions({ classes: [{ sizeBytes: 100, count: 1 }] }), new RangeError('class sizeBytes must be a power of two in [64, 2^20], got 100'));
  t.throws(() => validateLayoutOptions({ classes: [{ sizeBytes: 128, count: 1 }, { sizeBytes: 64, count: 1 }] }), new RangeError('classes must be in increasing sizeBytes order'));
  t.throws(() => PrismKvServer.open(s.region, s.nic, { base: 3 }), new RangeError('base must be a non-negative multiple of 64, got 3'));
  t.throws(() => PrismKvServer.open(s.region, {} as never), new TypeError('nic must be an Rnic on the same region'));
  t.throws(() => PrismKvServer.open(s.region, s.nic, null as never), new TypeError('options must be an object, got null'));
  t.throws(() => PilafServer.open(s.region, s.nic, { base: 3 }), new RangeError('base must be a non-negative multiple of 64, got 3'));
  t.throws(() => validateLayoutOptions({ keyBytesMax: 256 }), new RangeError('keyBytesMax must be an integer in [1, 255], got 256'));
  t.throws(() => PrismKvServer.format(s.region, SMALL_LAYOUT), code(KvErrorCodes.ALREADY_FORMATTED), 'never formats over a KV area');
  t.throws(() => PrismKvServer.format(PmemRegion.createInMemory(4096), SMALL_LAYOUT), code(KvErrorCodes.LAYOUT_TOO_LARGE));
  t.throws(() => PrismKvServer.open(PmemRegion.createInMemory(1 << 16), s.nic), TypeError);
  const blank = PmemRegion.createInMemory(1 << 16);
  t.throws(() => PrismKvServer.open(blank, new Rnic(blank, { drain: 'eager' })), code(KvErrorCodes.NOT_FORMATTED));
  t.equal(c.qp.state, 'ready', 'rejected arguments never reach the NIC');
});

t.test('full: a window of other keys is INDEX_FULL; an empty size class is FULL after the client returned its own buffers', async (t) => {
  const s = await kvSetup({ layout: { slotCount: 4, probeSlots: 4, keyBytesMax: 16, classes: [{ sizeBytes: 64, count: 6 }], mailboxBuffers: 4 } });
  const c = await s.client({ returnBatch: 8 });
  for (const k of ['a', 'b', 'c', 'd']) await c.put(k, te.encode(k));
  await t.rejects(c.put('e', te.encode('e')), code(KvErrorCodes.INDEX_FULL));
  // 4 items linked; 2 buffers free. Two overwrites take them and leave 2 replaced buffers pending.
  await c.put('a', te.encode('a2'));
  await c.put('b', te.encode('b2'));
  t.equal(c.pendingReturns, 2);
  await c.put('c', te.encode('c2')); // ALLOCATE runs dry: the client returns its 2 buffers and retries
  t.equal(c.stats.returnRpcs, 1);
  t.equal(td.decode((await c.get('c'))!), 'c2');
  const other = await s.client();
  await other.get('d');
  await other.put('d', te.encode('d2'));
  await other.flushReturns(); // other holds nothing now; the one free buffer goes to c
  await c.put('a', te.encode('a3'));
  await t.rejects(other.put('d', te.encode('d3')), code(KvErrorCodes.FULL), 'nothing of its own to return: full');
  t.same(s.server.inspect().problems, []);
});

t.test('layout: items and slots round-trip; a damaged item fails its checksum', async (t) => {
  const it = { key: te.encode('key'), value: te.encode('value'), version: 7n, tombstone: false };
  const b = encodeItem(it);
  t.same(decodeItem(b), it);
  const tomb = decodeItem(encodeItem({ ...it, value: new Uint8Array(0), tombstone: true }))!;
  t.equal(tomb.tombstone, true);
  for (let i = 0; i < b.length; i++) {
    const d = b.slice();
    d[i]! ^= 1;
    if (decodeItem(d) !== undefined) t.fail(`a flipped bit at byte ${i} went unnoticed`);
  }
  t.equal(decodeItem(b.subarray(0, b.length - 1)), undefined, 'a truncated item (torn bound) fails');
  t.same(decodeSlot(encodeSlot({ ptr: 4096, bound: 128, version: 9n })), { ptr: 4096, bound: 128, version: 9n });
  const g = computeKvGeometry(0, validateLayoutOptions(SMALL_LAYOUT));
  t.equal(g.indexOffset, 256);
  t.equal(slotOffset(g, 1) - slotOffset(g, 0), 32);
  for (const c of g.classes) t.equal(c.offset % c.sizeBytes, 0, 'buffers aligned to their size');
  t.throws(() => decodeKvHeader(new Uint8Array(128), 0), code(KvErrorCodes.NOT_FORMATTED));
});

t.test('ALLOCATE is refused until recovery rebuilt the lists; then PUTs work', async (t) => {
  const s = await kvSetup();
  const c = await s.client();
  await c.put('k', te.encode('v'));
  const st = s.region.crashState();
  const [all] = [...crashImages(st, { engine: 'all' })];
  const r2 = PmemRegion.openImage(materialize(st, all!), { tracing: true });
  const nic2 = new Rnic(r2, { drain: 'eager', entropy: seededEntropy(createPrng(9)) });
  const s2 = PrismKvServer.open(r2, nic2, { deferRecovery: true });
  const fabric = new InProcessFabric(nic2);
  const early = await PrismKvClient.connect(new QueuePair(fabric.connect(s2.accept())), s2.address);
  await t.rejects(early.put('k2', te.encode('x')), code(KvErrorCodes.RECOVERING));
  const rep = s2.recover();
  t.equal(rep.reachable, 1);
  t.equal(rep.epoch, 2n);
  const late = await PrismKvClient.connect(new QueuePair(fabric.connect(s2.accept())), s2.address);
  await late.put('k2', te.encode('x'));
  t.equal(td.decode((await late.get('k'))!), 'v');
});

t.test('recovery rejects a damaged item: the slot gets a dead item, so keys further in the window stay reachable', async (t) => {
  const s = await kvSetup();
  const c = await s.client();
  const [k1, k2] = collidingKeys(s.server.geometry);
  await c.put(k1, te.encode('one'));
  await c.put(k2, te.encode('two'));
  const g = s.server.geometry;
  const home = homeSlot(g, te.encode(k1));
  const ptr = decodeSlot(s.region.load(slotOffset(g, home), 24)).ptr;
  // Media damage in k1's item (a bit flip in its value), persisted.
  const b = s.region.load(ptr + 30, 1);
  b[0]! ^= 0x10;
  s.region.store(ptr + 30, b);
  s.region.persist(ptr + 30, 1);
  s.server.close();
  const s2 = PrismKvServer.open(s.region, s.nic);
  t.same(s2.lastRecovery!.pointersRejected.map((r) => [r.slot, r.verdict]), [[home, 'bad-object']]);
  t.same(s2.inspect().problems, []);
  t.same(s2.auditAllocator(), { leaked: [], doubleFree: [], freeAndReachable: [], foreign: [] });
  const c2 = await PrismKvClient.connect(new QueuePair(s.fabric.connect(s2.accept())), s2.address);
  t.equal(td.decode((await c2.get(k2))!), 'two', 'the key past the rejected slot is still found');
  t.equal(await c2.get(k1), undefined, 'the damaged key is gone');
  await c2.put(k1, te.encode('again'));
  t.equal(td.decode((await c2.get(k1))!), 'again');
  t.not(s2.inspect().items.get(Buffer.from(k1).toString('hex'))!.slot, home, 'a dead slot is never claimed again');
});

t.test('buffer returns carry the epoch: a return from before a restart is refused', async (t) => {
  const s = await kvSetup();
  const c = await s.client({ returnBatch: 8 });
  await c.put('k', te.encode('v1'));
  await c.put('k', te.encode('v2'));
  t.equal(c.pendingReturns, 1);
  // Restart the server on the same region (an orderly one: nothing lost), then the old client returns.
  s.server.close();
  const s2 = PrismKvServer.open(s.region, s.nic);
  t.equal(s2.epoch, 2n);
  const qp = new QueuePair(s.fabric.connect(s2.accept()));
  const payload = new Uint8Array(24);
  new DataView(payload.buffer).setBigUint64(0, 1n, true);
  new DataView(payload.buffer).setUint32(8, 1, true);
  new DataView(payload.buffer).setBigUint64(16, BigInt(s2.arenaClasses[0]!.offset), true);
  const reply = new Promise<number | undefined>((resolve) => qp.onNotify((m) => resolve(m.imm)));
  await qp.postChain([Wr.send(payload, RETURN_IMM)]);
  await reply;
  t.same(s2.stats.returnsRefused, { 'stale-epoch': 1 });
  t.same(s2.auditAllocator().doubleFree, []);
});

t.test('allocator recovery (recovery/allocator.ts): validation, reclaim, stale returns, audit', async (t) => {
  const classes: ArenaClass[] = [
    { sizeBytes: 64, offset: 1024, count: 4 },
    { sizeBytes: 128, offset: 2048, count: 2 },
  ];
  const index = [1024, 1088, 1100, 9999, 2048, 1024, 1152];
  const r = recoverFreeLists({ classes, reach: (visit) => index.forEach((p) => visit(p)), checkObject: (p) => p !== 1152 });
  t.same([...r.reachable].sort(), [1024, 1088, 2048]);
  t.same(r.rejected, [
    { ptr: 1100, verdict: 'misaligned' },
    { ptr: 9999, verdict: 'outside-arena' },
    { ptr: 1024, verdict: 'reached-twice' },
    { ptr: 1152, verdict: 'bad-object' },
  ]);
  t.same(r.free.get(64), [1152, 1216]);
  t.same(r.free.get(128), [2176]);
  t.same(auditAllocator(classes, r.free, r.reachable), { leaked: [], doubleFree: [], freeAndReachable: [], foreign: [] });
  const noReclaim = recoverFreeLists({ classes, reach: (visit) => index.forEach((p) => visit(p)), checkObject: () => true, faults: { skipReclaim: true } });
  t.equal(auditAllocator(classes, noReclaim.free, noReclaim.reachable).leaked.length, 2);
  const server = { epoch: 2n, classes, isReachable: (p: number) => p === 1024, isFree: (p: number) => p === 1152 };
  t.equal(checkReturn({ epoch: 1n, ptr: 1216 }, server), 'stale-epoch');
  t.equal(checkReturn({ epoch: 2n, ptr: 1216 }, server), 'ok');
  t.equal(checkReturn({ epoch: 2n, ptr: 1024 }, server), 'reachable');
  t.equal(checkReturn({ epoch: 2n, ptr: 1152 }, server), 'already-free');
  t.equal(checkReturn({ epoch: 2n, ptr: 1030 }, server), 'misaligned');
  t.equal(checkReturn({ epoch: 1n, ptr: 1152 }, server, { acceptStaleEpoch: true }), 'ok', 'the fault');
  const bad = auditAllocator(classes, new Map([[64, [1152, 1152, 1024, 2048]]]), new Set([1024]));
  t.same(bad.doubleFree, [1152]);
  t.same(bad.freeAndReachable, [1024]);
  t.same(bad.foreign, [2048]);
  t.same(bad.leaked, [1088, 1216, 2176]);
});

t.test('concurrent clients over the seeded fabric converge; nothing leaks once returns are in', async (t) => {
  const s = await kvSetup({ fabric: { delivery: 'seeded', seed: 3 } });
  const clients = await Promise.all([0, 1, 2, 3].map(() => s.client({ returnBatch: 4 })));
  await Promise.all(clients.map(async (c, i) => {
    for (let n = 0; n < 20; n++) await c.put(`k${n % 5}`, te.encode(`c${i}-${n}`));
  }));
  for (const c of clients) await c.flushReturns();
  t.same(s.server.inspect().problems, []);
  const a = s.server.auditAllocator();
  t.same([a.leaked.length, a.doubleFree.length, a.freeAndReachable.length], [0, 0, 0]);
  const values = await Promise.all([0, 1, 2, 3, 4].map((k) => clients[0]!.get(`k${k}`)));
  for (const v of values) t.match(td.decode(v!), /^c\d-1\d$/);
});

t.test('Pilaf-style baseline: GET = 2 READs with checksums, PUT = an RPC to the server CPU', async (t) => {
  const region = PmemRegion.createInMemory(1 << 16, { tracing: true, entropy: seededEntropy(createPrng(1)) });
  PilafServer.format(region, SMALL_LAYOUT);
  const nic = new Rnic(region, { drain: 'eager', entropy: seededEntropy(createPrng(2)) });
  const fabric = new InProcessFabric(nic, { delivery: 'seeded', seed: 4 });
  const server = PilafServer.open(region, nic);
  const c = await PilafClient.connect(new QueuePair(fabric.connect(server.accept())), server.address);
  const c2 = await PilafClient.connect(new QueuePair(fabric.connect(server.accept())), server.address);
  t.equal(await c.get('a'), undefined);
  t.equal(c.stats.lastOpRoundTrips, 1, 'an empty entry: 1 READ');
  await c.put('a', te.encode('hello'));
  t.equal(c.stats.lastOpRoundTrips, 1, 'PUT: one SEND + reply');
  t.equal(server.requests, 1);
  t.equal(td.decode((await c2.get('a'))!), 'hello');
  t.equal(c2.stats.lastOpRoundTrips, 2, 'GET: entry, then extent');
  await Promise.all([c.put('a', te.encode('x')), c2.put('b', te.encode('y'))]);
  await c.delete('a');
  t.equal(await c2.get('a'), undefined);
  t.equal(td.decode((await c.get('b'))!), 'y');
  await t.rejects(c.put('b', new Uint8Array(300)), code(KvErrorCodes.VALUE_TOO_LARGE));
  await t.rejects(c.get('x'.repeat(40)), code(KvErrorCodes.KEY_TOO_LONG));
  // Crash (no pending lines survive) and reopen: acknowledged PUTs are there.
  const st = region.crashState();
  const [none] = [...crashImages(st, { engine: 'none' })];
  const r2 = PmemRegion.openImage(materialize(st, none!), { tracing: true });
  const nic2 = new Rnic(r2, { drain: 'eager', entropy: seededEntropy(createPrng(3)) });
  const s2 = PilafServer.open(r2, nic2);
  const c3 = await PilafClient.connect(new QueuePair(new InProcessFabric(nic2).connect(s2.accept())), s2.address);
  t.equal(td.decode((await c3.get('b'))!), 'y');
  t.equal(await c3.get('a'), undefined);
});
