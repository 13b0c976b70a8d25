// Every verb and access flag, registration, options validation, the client API.
import t from 'tap';
import { Access, FABRIC_DEFAULTS, InProcessFabric, QueuePair, Rnic, RNIC_DEFAULTS, Wr, leToBigint, ok, u64le } from '../../flush/index.js';
import { createPrng, crashImages, materialize, PmemRegion, seededEntropy, HEADER_BYTES } from '../../pmem/index.js';
import { fill, REGION_BYTES, setup } from './helpers.js';

/** The value of a word in the media-only crash image (what survives if nothing pending does). */
function mediaU64(region: PmemRegion, off: number): bigint {
  const state = region.crashState();
  const img = materialize(state, [...crashImages(state, { engine: 'none' })][0]!);
  return leToBigint(img.subarray(HEADER_BYTES + off, HEADER_BYTES + off + 8));
}

t.test('rkeys are random 32-bit values from the injected entropy, distinct, reproducible from a seed', async (t) => {
  const keys = (seed: number): number[] => {
    const nic = new Rnic(PmemRegion.createInMemory(4096), { entropy: seededEntropy(createPrng(seed)) });
    const pd = nic.allocPd();
    return [0, 1, 2, 3].map((i) => nic.registerMr(pd, i * 1024, 1024, Access.ALL).rkey);
  };
  const a = keys(7);
  t.same(keys(7), a, 'same seed, same rkeys');
  t.not(keys(8)[0], a[0], 'another seed, other rkeys');
  t.equal(new Set(a).size, 4);
  for (const k of a) t.ok(Number.isInteger(k) && k > 0 && k <= 0xffffffff);
  t.ok(a.some((k) => k > 0xffff), 'uses the whole 32-bit space');
});

t.test('WRITE then READ, 64 B and 4 KiB, and a 0-byte READ', async (t) => {
  const s = setup();
  for (const n of [64, 4096]) {
    const data = Uint8Array.from({ length: n }, (_, i) => (i * 7 + n) & 0xff);
    await s.qp.write({ rkey: s.mr.rkey, addr: 8192 }, data);
    t.same(await s.qp.read({ rkey: s.mr.rkey, addr: 8192 }, n), data);
  }
  t.same(await s.qp.read({ rkey: s.mr.rkey, addr: 0 }, 0), new Uint8Array(0));
});

t.test('WRITE_WITH_IMM writes and delivers the immediate in a receive completion, consuming a receive buffer', async (t) => {
  const s = setup();
  s.sqp.postRecv({ id: 5, addr: 1024, len: 64 });
  await s.qp.writeImm({ rkey: s.mr.rkey, addr: 256 }, fill(8, 3), 0xdeadbeef);
  t.same(s.region.load(256, 8), fill(8, 3));
  t.same(s.sqp.pollRecv(), [{ qpn: s.sqp.qpn, recvId: 5, op: 'writeImm', addr: 0, byteLen: 0, imm: 0xdeadbeef }]);
  t.equal(s.sqp.postedRecvs, 0);
  t.same(s.region.load(1024, 8), new Uint8Array(8), 'the receive buffer is not written');
});

t.test('SEND places its payload in the posted receive buffers, in order', async (t) => {
  const s = setup();
  s.sqp.postRecv({ id: 1, addr: 1024, len: 64 });
  s.sqp.postRecv({ id: 2, addr: 2048, len: 64 });
  await s.qp.send(fill(10, 1));
  await s.qp.send(fill(20, 2), 77);
  t.same(s.region.load(1024, 10), fill(10, 1));
  t.same(s.region.load(2048, 20), fill(20, 2));
  t.same(s.sqp.pollRecv(1), [{ qpn: s.sqp.qpn, recvId: 1, op: 'send', addr: 1024, byteLen: 10 }]);
  t.same(s.sqp.pollRecv(), [{ qpn: s.sqp.qpn, recvId: 2, op: 'send', addr: 2048, byteLen: 20, imm: 77 }]);
});

t.test('CAS swaps on equality and returns the old value; FAA returns the old value and wraps; ATOMIC_WRITE stores', async (t) => {
  const s = setup();
  const at = { rkey: s.mr.rkey, addr: 64 };
  t.same(await s.qp.cas(at, 0n, 5n), { old: 0n, swapped: true });
  t.same(await s.qp.cas(at, 0n, 9n), { old: 5n, swapped: false });
  t.equal(s.region.loadU64(64), 5n);
  t.equal(await s.qp.faa(at, 2n ** 64n - 1n), 5n);
  t.equal(s.region.loadU64(64), 4n, 'wraps modulo 2^64');
  await s.qp.atomicWrite(at, 0x1122334455667788n);
  t.equal(s.region.loadU64(64), 0x1122334455667788n);
  const c = await s.qp.post(Wr.cas({ scratch: 8 }, 0n, 3n));
  t.equal(c.swapped, true, 'atomics on the scratch buffer work too');
});

t.test('FLUSH: global makes visible, persistent makes durable; range vs mr selectivity', async (t) => {
  const s = setup({ nic: { drain: 'onFlush' }, fabric: { idleDrain: false } });
  const rk = s.mr.rkey;
  await s.qp.write({ rkey: rk, addr: 64 }, u64le(1));
  t.equal(s.region.loadU64(64), 0n, 'undrained: the CPU does not see it');
  await s.qp.flush('global', rk, { addr: 64, len: 8 });
  t.equal(s.region.loadU64(64), 1n, 'FLUSH(global): visible');
  t.equal(mediaU64(s.region, 64), 0n, 'FLUSH(global): not on media (DDIO)');
  await s.qp.flush('persistent', rk, { addr: 64, len: 8 });
  t.equal(mediaU64(s.region, 64), 1n, 'FLUSH(persistent, range): on media');
  await s.qp.postChain([Wr.write({ rkey: rk, addr: 1024 }, u64le(2)), Wr.write({ rkey: rk, addr: 8192 }, u64le(3))]);
  await s.qp.flush('persistent', rk, { addr: 1024, len: 8 });
  t.equal(mediaU64(s.region, 1024), 2n);
  t.equal(s.region.loadU64(8192), 3n, 'a range flush drains every earlier write of the QP (global placement) …');
  t.equal(mediaU64(s.region, 8192), 0n, '… but persists only its range');
  await s.qp.flush('persistent', rk);
  t.equal(mediaU64(s.region, 8192), 3n, 'FLUSH(persistent, mr) persists the whole MR');
  t.equal(s.nic.stats.flushes, 4);
});

t.test('each access flag alone allows its verbs', async (t) => {
  const region = PmemRegion.createInMemory(REGION_BYTES, { tracing: true });
  const nic = new Rnic(region, { entropy: seededEntropy(createPrng(1)) });
  const fabric = new InProcessFabric(nic);
  const pd = nic.allocPd();
  const mk = (flag: number, i: number) => ({ rkey: nic.registerMr(pd, i * 4096, 4096, flag).rkey, addr: i * 4096 });
  const r = mk(Access.REMOTE_READ, 0);
  const w = mk(Access.REMOTE_WRITE, 1);
  const a = mk(Access.REMOTE_ATOMIC, 2);
  const g = mk(Access.FLUSH_GLOBAL, 3);
  const p = mk(Access.FLUSH_PERSISTENT, 4);
  const sqp = nic.createQp(pd);
  sqp.postRecv({ id: 0, addr: 40000, len: 8 });
  const qp = new QueuePair(fabric.connect(sqp));
  const cs = await qp.postChain([
    Wr.read(r, 8),
    Wr.write(w, fill(8, 1)),
    Wr.writeImm(w, fill(8, 1), 1),
    Wr.atomicWrite(w, 1n),
    Wr.cas(a, 0n, 1n),
    Wr.faa(a, 1n),
    Wr.prismCas('eq', a, u64le(2)),
    Wr.flush('global', g.rkey, { addr: g.addr, len: 64 }),
    Wr.flush('global', g.rkey),
    Wr.flush('persistent', p.rkey, { addr: p.addr, len: 64 }),
    Wr.flush('persistent', p.rkey),
  ]);
  t.same(
    cs.map((c) => c.status),
    cs.map(() => 'ok'),
  );
});

t.test('one chain is one message (doorbell batching); completions come back in order', async (t) => {
  const s = setup();
  const before = s.nic.stats.messages;
  const cs = await s.qp.postChain([Wr.write({ rkey: s.mr.rkey, addr: 0 }, u64le(1), { id: 10 }), Wr.read({ rkey: s.mr.rkey, addr: 0 }, 8, { id: 11 }), Wr.faa({ rkey: s.mr.rkey, addr: 0 }, 1n, { id: 12 })]);
  t.equal(s.nic.stats.messages - before, 1);
  t.same(
    cs.map((c) => [c.id, c.op]),
    [
      [10, 'write'],
      [11, 'read'],
      [12, 'faa'],
    ],
  );
  t.same(cs[1]!.data, u64le(1));
  t.same(cs[2]!.data, u64le(1));
  t.equal(s.region.loadU64(0), 2n);
});

t.test('ok() turns a non-ok completion into a PmrpcError with its code', async (t) => {
  t.throws(() => ok({ id: 1, op: 'read', status: 'error', code: 'PMRPC_ERR_ACCESS', message: 'x' }), { code: 'PMRPC_ERR_ACCESS' });
  t.throws(() => ok({ id: 1, op: 'read', status: 'skipped' }), { code: 'PMRPC_ERR_WR_FAILED' });
  const s = setup();
  await t.rejects(s.qp.read({ rkey: 1, addr: 0 }, 8), { code: 'PMRPC_ERR_BAD_RKEY' });
});

t.test('closing a link rejects what is outstanding and refuses new sends', async (t) => {
  const s = setup({ fabric: { delivery: 'seeded', autoRun: false } });
  const p = s.qp.read({ rkey: s.mr.rkey, addr: 0 }, 8);
  s.qp.close();
  await t.rejects(p, { code: 'PMRPC_ERR_LINK_CLOSED' });
  t.throws(() => s.qp.postChain([Wr.read({ rkey: s.mr.rkey, addr: 0 }, 8)]), { code: 'PMRPC_ERR_LINK_CLOSED' });
  t.equal(s.qp.outstanding, 0, 'a refused send leaves nothing outstanding');
});

t.test('postChainWith: the outcome goes to the listener with its arg (completions in order, or the close); bad chains throw as postChain', async (t) => {
  const s = setup({ fabric: { delivery: 'seeded', autoRun: false } });
  const seen: string[] = [];
  const listener = {
    done: (arg: string, cs: { op: string; status: string }[]) => void seen.push(`${arg} done ${cs.map((c) => `${c.op}:${c.status}`).join(',')}`),
    failed: (arg: string, e: unknown) => void seen.push(`${arg} failed ${(e as { code: string }).code}`),
  };
  s.qp.postChainWith([Wr.write({ rkey: s.mr.rkey, addr: 64 }, fill(8, 3)), Wr.read({ rkey: s.mr.rkey, addr: 64 }, 8)], listener, 'a');
  s.qp.postChainWith([Wr.read({ rkey: 12345, addr: 0 }, 8)], listener, 'b');
  t.same(seen, [], 'nothing before the fabric runs');
  s.fabric.run();
  t.same(seen, ['a done write:ok,read:ok', 'b done read:error']);
  t.throws(() => s.qp.postChainWith([], listener, 'c'), RangeError);
  t.throws(() => s.qp.postChainWith([{ op: 'nope' } as never], listener, 'c'), TypeError);
  const { qp } = s.connect();
  qp.postChainWith([Wr.read({ rkey: s.mr.rkey, addr: 0 }, 8)], listener, 'd');
  qp.close();
  t.same(seen.slice(2), ['d failed PMRPC_ERR_LINK_CLOSED'], 'a close fails what is outstanding');
  t.equal(qp.outstanding, 0);
});

t.test('bounds: outstanding messages per QP, posted receives, inbound queue', async (t) => {
  const s = setup({ fabric: { delivery: 'seeded', autoRun: false }, nic: { inboundMessagesMax: 2, recvQueueMax: 1 } });
  const qp = new QueuePair(s.fabric.connect(s.connect().sqp), { outstandingMessagesMax: 1 });
  void qp.read({ rkey: s.mr.rkey, addr: 0 }, 8);
  t.throws(() => qp.postChain([Wr.read({ rkey: s.mr.rkey, addr: 0 }, 8)]), { code: 'PMRPC_ERR_QUEUE_FULL' });
  s.sqp.postRecv({ id: 0, addr: 0, len: 8 });
  t.throws(() => s.sqp.postRecv({ id: 1, addr: 0, len: 8 }), new RangeError(`QP ${s.sqp.qpn} already has 1 posted receive buffers (recvQueueMax)`));
  const ps = [0, 1, 2].map(() => s.qp.post(Wr.read({ rkey: s.mr.rkey, addr: 0 }, 8)));
  const third = await ps[2]!;
  t.equal(third.code, 'PMRPC_ERR_QUEUE_FULL', 'the third queued message is refused at once');
  s.fabric.run();
  t.same((await Promise.all(ps.slice(0, 2))).map((c) => c.status), ['ok', 'ok']);
});

t.test('invalid options and arguments: exact TypeError / RangeError messages', async (t) => {
  const region = PmemRegion.createInMemory(4096);
  t.throws(() => new Rnic({} as PmemRegion), new TypeError('region must be a PmemRegion'));
  t.throws(() => new Rnic(region, { ddio: 'yes' as never }), new TypeError('ddio must be a boolean, got yes'));
  t.throws(() => new Rnic(region, { drain: 'sometimes' as never }), new TypeError("drain must be 'eager', 'lazy' or 'onFlush', got sometimes"));
  t.throws(() => new Rnic(region, { placement: 'random' as never }), new TypeError("placement must be 'any' or 'ascending', got random"));
  t.throws(() => new Rnic(region, { lazyBound: -1 }), new RangeError('lazyBound must be an integer >= 0, got -1'));
  t.throws(() => new Rnic(region, { cacheEntriesMax: 0 }), new RangeError('cacheEntriesMax must be an integer >= 1, got 0'));
  t.throws(() => new Rnic(region, { scratchBytes: 1.5 }), new RangeError('scratchBytes must be an integer >= 0, got 1.5'));
  t.throws(() => new Rnic(region, { entropy: {} as never }), new TypeError('entropy must have a bytes(n) method'));
  const nic = new Rnic(region);
  t.equal(nic.options.ddio, RNIC_DEFAULTS.ddio);
  t.ok(Object.isFrozen(RNIC_DEFAULTS) && Object.isFrozen(FABRIC_DEFAULTS));
  const pd = nic.allocPd();
  t.throws(() => nic.registerMr({} as never, 0, 64, Access.ALL), new TypeError('pd must be a ProtectionDomain from allocPd()'));
  t.throws(() => nic.registerMr(pd, 4000, 200, Access.ALL), new RangeError('MR [4000, 4200) must be a non-empty range inside the region [0, 4096)'));
  t.throws(() => nic.registerMr(pd, 0, 0, Access.ALL), new RangeError('MR [0, 0) must be a non-empty range inside the region [0, 4096)'));
  t.throws(() => nic.registerMr(pd, 0, 64, 99), new RangeError('access must be a bit set of Access flags (0..31), got 99'));
  const mr = nic.registerMr(pd, 0, 1024, Access.ALL);
  t.throws(() => nic.postFreeBuffers(mr, 48, [0]), new RangeError('sizeBytes must be a power of two in [8, 2^30], got 48'));
  t.throws(() => nic.postFreeBuffers(mr, 64, [1000]), new RangeError('free buffer [1000, 1064) is outside MR [0, 1024)'));
  const sqp = nic.createQp(pd);
  t.throws(() => sqp.postRecv({ id: 0, addr: 4090, len: 8 }), new RangeError('receive buffer [4090, 4098) is outside the region [0, 4096)'));
  t.throws(() => sqp.postRecv({ id: -1, addr: 0, len: 8 }), new TypeError('recv id must be a non-negative integer'));
  t.throws(() => new InProcessFabric(nic, { delivery: 'carrier-pigeon' as never }), new TypeError("delivery must be 'immediate' or 'seeded', got carrier-pigeon"));
  t.throws(() => new InProcessFabric(nic, { runStepsMax: 0 }), new RangeError('runStepsMax must be a positive integer, got 0'));
  t.throws(() => new QueuePair({} as never), new TypeError('link must implement Link (send, onMessage, close)'));
  const link = new InProcessFabric(nic).connect(sqp);
  t.throws(() => new QueuePair(link, { outstandingMessagesMax: 0 }), new RangeError('outstandingMessagesMax must be a positive integer, got 0'));
});

t.test('messages on the link are plain data (no bigint, no class instances)', async (t) => {
  const s = setup();
  const seen: unknown[] = [];
  const link = s.qp.link;
  const send = link.send.bind(link);
  link.send = (m) => {
    seen.push(m);
    send(m);
  };
  await s.qp.postChain([Wr.cas({ rkey: s.mr.rkey, addr: 0 }, 0n, 2n ** 63n), Wr.prismCas('ge', { rkey: s.mr.rkey, addr: 64 }, fill(32, 1)), Wr.allocate(s.mr.rkey, 64, fill(8, 1))]);
  const plain = (v: unknown): boolean =>
    v === null || ['number', 'string', 'boolean', 'undefined'].includes(typeof v) || v instanceof Uint8Array || (Array.isArray(v) ? v.every(plain) : typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype && Object.values(v as object).every(plain));
  t.ok(seen.length === 1 && plain(seen[0]));
  t.ok(JSON.stringify(seen[0], (_k, v: unknown) => (v instanceof Uint8Array ? [...v] : v)).length > 0, 'serialisable');
});

t.test('submit() to an unknown QP number throws PMRPC_ERR_NO_SUCH_QP (the transport answers with it)', async (t) => {
  const s = setup();
  t.throws(() => s.nic.submit({ type: 'request', qpn: 999, seq: 0, wrs: [Wr.read({ rkey: s.mr.rkey, addr: 0 }, 8)] }), { code: 'PMRPC_ERR_NO_SUCH_QP', message: 'PMRPC_ERR_NO_SUCH_QP: no QP 999 on this NIC (never created, or destroyed)' });
  t.equal(s.nic.submit({ type: 'request', qpn: s.sqp.qpn, seq: 77, wrs: [Wr.read({ rkey: s.mr.rkey, addr: 0 }, 8)] }), true);
  t.same(s.nic.busyQps(), [s.sqp.qpn]);
  s.nic.runQp(s.sqp.qpn);
  t.same(s.nic.busyQps(), []);
});
