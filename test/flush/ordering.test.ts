// The NIC cache and DMA engine: drain policies, DDIO, placement, the three ordering rules of
// DESIGN §2.2, atomics, crash-state contribution, seeded interleaving.
import t from 'tap';
import { Wr, leToBigint, u64le, type HostWriteEvent } from '../../flush/index.js';
import { countImages, crashImages, materialize, HEADER_BYTES, type CrashPointEvent, type PmemRegion } from '../../pmem/index.js';
import { fill, setup } from './helpers.js';

function mediaU64(region: PmemRegion, off: number): bigint {
  const st = region.crashState();
  const b = materialize(st, [...crashImages(st, { engine: 'none' })][0]!);
  return leToBigint(b.subarray(HEADER_BYTES + off, HEADER_BYTES + off + 8));
}

t.test("drain 'eager': every request's writes are in host memory when it completes", async (t) => {
  const s = setup({ nic: { drain: 'eager' }, fabric: { idleDrain: false } });
  await s.qp.write({ rkey: s.mr.rkey, addr: 64 }, u64le(1));
  t.equal(s.nic.cacheEntries, 0);
  t.equal(s.region.loadU64(64), 1n);
});

t.test("drain 'lazy': at most lazyBound entries stay undrained, oldest drain first", async (t) => {
  const s = setup({ nic: { drain: 'lazy', lazyBound: 2 }, fabric: { idleDrain: false } });
  for (let i = 0; i < 5; i++) await s.qp.write({ rkey: s.mr.rkey, addr: 64 * i }, u64le(i + 1));
  t.equal(s.nic.cacheEntries, 2);
  t.same([0, 1, 2, 3, 4].map((i) => s.region.loadU64(64 * i)), [1n, 2n, 3n, 0n, 0n]);
});

t.test("drain 'onFlush': nothing drains until an ordering rule forces it or the cache is full", async (t) => {
  const s = setup({ nic: { drain: 'onFlush', cacheEntriesMax: 4 }, fabric: { idleDrain: false } });
  for (let i = 0; i < 3; i++) await s.qp.write({ rkey: s.mr.rkey, addr: 64 * i }, u64le(i + 1));
  t.equal(s.nic.cacheEntries, 3);
  t.equal(s.region.loadU64(0), 0n);
  for (let i = 3; i < 6; i++) await s.qp.write({ rkey: s.mr.rkey, addr: 64 * i }, u64le(i + 1));
  t.equal(s.nic.cacheEntries, 4, 'capacity bound');
  t.same([s.region.loadU64(0), s.region.loadU64(64), s.region.loadU64(128)], [1n, 2n, 0n]);
  await s.qp.flush('global', s.mr.rkey);
  t.equal(s.nic.cacheEntries, 0);
});

t.test('idle drain: the fabric drains the NIC cache when no work is queued', async (t) => {
  const s = setup({ nic: { drain: 'onFlush' } });
  await s.qp.write({ rkey: s.mr.rkey, addr: 64 }, u64le(1));
  t.equal(s.nic.cacheEntries, 0);
  t.equal(s.region.loadU64(64), 1n);
});

t.test('ddio true: drained data is visible but only in dirty CPU lines; ddio false: straight to media, with nic-drain crash points', async (t) => {
  const on = setup({ nic: { ddio: true, drain: 'eager' } });
  await on.qp.write({ rkey: on.mr.rkey, addr: 64 }, u64le(1));
  t.equal(on.region.loadU64(64), 1n);
  t.equal(mediaU64(on.region, 64), 0n);
  t.equal(on.region.dirtyLines, 1);
  const off = setup({ nic: { ddio: false, drain: 'eager' } });
  const kinds: string[] = [];
  off.region.setCrashPointHook((e: CrashPointEvent) => kinds.push(e.kind));
  off.region.storeU64(72, 9n); // the CPU holds the line dirty: written back first
  await off.qp.write({ rkey: off.mr.rkey, addr: 64 }, u64le(1));
  t.equal(off.region.loadU64(64), 1n);
  t.equal(mediaU64(off.region, 64), 1n);
  t.equal(mediaU64(off.region, 72), 9n, 'the dirty CPU line was written back before the non-allocating write');
  t.same(kinds, ['nic-drain', 'completion']);
});

t.test('rule (i): a READ drains its own QP\'s earlier writes, not other QPs\'; NIC atomics see every QP\'s undrained writes', async (t) => {
  const s = setup({ nic: { drain: 'onFlush' }, fabric: { idleDrain: false } });
  const other = s.connect().qp;
  await other.write({ rkey: s.mr.rkey, addr: 64 }, u64le(7));
  t.same(await s.qp.read({ rkey: s.mr.rkey, addr: 64 }, 8), u64le(0), 'another QP\'s undrained write: no ordering across QPs');
  t.same(await other.read({ rkey: s.mr.rkey, addr: 64 }, 8), u64le(7), 'same QP: read-after-write');
  await other.write({ rkey: s.mr.rkey, addr: 128 }, u64le(5));
  t.equal(await s.qp.faa({ rkey: s.mr.rkey, addr: 128 }, 1n), 5n, 'the atomic unit is coherent with the NIC cache');
  s.nic.drainAll();
  t.equal(s.region.loadU64(128), 6n);
});

t.test('rule (ii): a receive completion is delivered only after the QP\'s earlier writes and the payload are in host memory', async (t) => {
  const s = setup({ nic: { drain: 'onFlush' }, fabric: { idleDrain: false } });
  s.sqp.postRecv({ id: 0, addr: 4096, len: 64 });
  const seen: bigint[] = [];
  s.sqp.onRecvNotify(() => seen.push(s.region.loadU64(64), s.region.loadU64(4096)));
  await s.qp.postChain([Wr.write({ rkey: s.mr.rkey, addr: 64 }, u64le(3)), Wr.write({ rkey: s.mr.rkey, addr: 256 }, u64le(4)), Wr.send(u64le(9))]);
  t.same(seen, [3n, 9n]);
  t.equal(s.nic.cacheEntries, 0);
});

t.test('host-write events report each drained entry with its QP, offset and length', async (t) => {
  const s = setup({ nic: { drain: 'lazy', lazyBound: 0 } });
  const evs: HostWriteEvent[] = [];
  s.nic.onHostWrite((e) => evs.push(e));
  await s.qp.postChain([Wr.write({ rkey: s.mr.rkey, addr: 100 }, fill(20, 1)), Wr.write({ rkey: s.mr.rkey, addr: 300 }, fill(3, 1))]);
  t.same(evs, [
    { qpn: s.sqp.qpn, offset: 100, len: 20 },
    { qpn: s.sqp.qpn, offset: 300, len: 3 },
  ]);
});

t.test('crash states: each undrained entry is one component over its 8-byte words; placement decides subset or prefix', async (t) => {
  for (const placement of ['any', 'ascending'] as const) {
    const s = setup({ nic: { drain: 'onFlush', placement }, fabric: { idleDrain: false } });
    s.region.store(96, fill(8, 0x11)); // neighbour bytes of the unaligned write's last word
    s.region.persist(96, 8);
    await s.qp.write({ rkey: s.mr.rkey, addr: 84 }, fill(16, 0xab)); // words 80, 88, 96
    const st = s.region.crashState();
    const nicComps = st.components.filter((c) => c.source.startsWith('nic'));
    t.equal(nicComps.length, 1);
    const c = nicComps[0]!;
    t.equal(c.kind, placement === 'any' ? 'subset' : 'prefix');
    t.same(c.pieces.map((p) => p.offset), [80, 88, 96]);
    t.same(c.pieces[0]!.bytes, Uint8Array.of(0, 0, 0, 0, 0xab, 0xab, 0xab, 0xab), 'a word keeps the bytes the entry does not cover');
    t.same(c.pieces[2]!.bytes, Uint8Array.of(0xab, 0xab, 0xab, 0xab, 0x11, 0x11, 0x11, 0x11));
    t.equal(countImages(st), placement === 'any' ? 8n : 4n);
    await s.qp.flush('persistent', s.mr.rkey);
    t.equal(s.region.crashState().components.length, 0, 'nothing pending after FLUSH(persistent, mr)');
  }
});

t.test('a crash image can lose a completed, unflushed WRITE; detach() drops the NIC cache as a crash does', async (t) => {
  const s = setup({ nic: { drain: 'onFlush' }, fabric: { idleDrain: false } });
  await s.qp.write({ rkey: s.mr.rkey, addr: 64 }, u64le(1));
  const st = s.region.crashState();
  const values = new Set([...crashImages(st, { engine: 'exhaustive' })].map((i) => leToBigint(materialize(st, i).subarray(HEADER_BYTES + 64, HEADER_BYTES + 72))));
  t.same([...values].sort(), [0n, 1n]);
  s.nic.detach();
  t.equal(s.nic.cacheEntries, 0);
  t.equal(s.region.crashState().components.length, 0);
  t.equal(s.region.loadU64(64), 0n, 'the undrained WRITE never reached host memory');
});

t.test('completion crash points: one per response, with what the client was told', async (t) => {
  const s = setup();
  const evs: CrashPointEvent[] = [];
  s.region.setCrashPointHook((e) => evs.push(e));
  await s.qp.postChain([Wr.write({ rkey: s.mr.rkey, addr: 0 }, u64le(1), { id: 4 }), Wr.read({ rkey: 1, addr: 0 }, 8, { id: 5 })]);
  const comp = evs.filter((e) => e.kind === 'completion');
  t.equal(comp.length, 1);
  t.same(comp[0]!.detail, {
    qpn: s.sqp.qpn,
    seq: 0,
    completions: [
      { id: 4, op: 'write', status: 'ok' },
      { id: 5, op: 'read', status: 'error' },
    ],
  });
});

t.test('seeded delivery: interleaving of QPs is reproducible from the seed, and differs between seeds', async (t) => {
  const order = async (seed: number): Promise<string> => {
    const s = setup({ nic: { drain: 'eager' }, fabric: { delivery: 'seeded', seed } });
    const log: number[] = [];
    s.nic.onHostWrite((e) => log.push(e.qpn));
    const q2 = s.connect().qp;
    const q3 = s.connect().qp;
    const chain = (q: typeof q2, base: number) => q.postChain([0, 1, 2, 3].map((i) => Wr.write({ rkey: s.mr.rkey, addr: base + 8 * i }, u64le(i))));
    await Promise.all([chain(s.qp, 0), chain(q2, 64), chain(q3, 128)]);
    return log.join('');
  };
  const a = await order(11);
  t.equal(await order(11), a, 'same seed, same interleaving');
  const others = new Set<string>();
  for (let k = 0; k < 8; k++) others.add(await order(100 + k));
  t.ok(others.size > 1, `different seeds give different interleavings (${[...others].join(', ')})`);
  t.ok([...others, a].some((o) => !/^(1111|2222|3333)+$/.test(o.match(/.{4}/g)!.join(''))), 'chains of different QPs interleave op by op');
});

t.test('seeded delivery without autoRun: nothing executes until step() / run()', async (t) => {
  const s = setup({ fabric: { delivery: 'seeded', autoRun: false } });
  const p = s.qp.write({ rkey: s.mr.rkey, addr: 0 }, u64le(1));
  await Promise.resolve();
  t.equal(s.region.loadU64(0), 0n);
  t.equal(s.fabric.step(), true);
  t.equal(s.fabric.step(), false);
  await p;
  t.equal(s.nic.cacheEntries, 1, 'step() executes; the WRITE sits in the NIC cache');
  t.equal(s.fabric.run(), 0);
  t.equal(s.region.loadU64(0), 1n, 'run() ends with the idle drain');
});

t.test("'ascending' without DDIO: a QP's undrained writes reach media in posting order; with DDIO, per cache line", async (t) => {
  const images = async (ddio: boolean, writes: Array<[number, number]>, probes: number[]): Promise<string[]> => {
    const s = setup({ nic: { drain: 'onFlush', placement: 'ascending', ddio }, fabric: { idleDrain: false } });
    for (const [addr, len] of writes) await s.qp.write({ rkey: s.mr.rkey, addr }, fill(len, 1));
    const st = s.region.crashState();
    const out = new Set<string>();
    for (const img of crashImages(st, { engine: 'exhaustive' })) {
      const b = materialize(st, img);
      out.add(probes.map((a) => b[HEADER_BYTES + a]).join(''));
    }
    return [...out].sort();
  };
  t.same(await images(false, [[64, 8], [1024, 8]], [64, 1024]), ['00', '10', '11'], 'no DDIO: the second WRITE never without the first');
  t.same(await images(true, [[64, 8], [1024, 8]], [64, 1024]), ['00', '01', '10', '11'], 'DDIO: two lines persist independently');
  t.same(await images(true, [[0, 128]], [0, 56, 64, 120]), ['0000', '0010', '0011', '1000', '1010', '1011', '1100', '1110', '1111'], 'DDIO: one WRITE over two lines — a prefix of each line');
  t.same(await images(false, [[0, 128]], [0, 56, 64, 120]), ['0000', '1000', '1100', '1110', '1111'], 'no DDIO: one ascending prefix');
});

t.test('close() drains the NIC cache and leaves the crash states', async (t) => {
  const s = setup({ nic: { drain: 'onFlush' }, fabric: { idleDrain: false } });
  await s.qp.write({ rkey: s.mr.rkey, addr: 64 }, u64le(5));
  t.equal(s.region.crashState().components.filter((c) => c.source.startsWith('nic')).length, 1);
  s.nic.close();
  t.equal(s.region.loadU64(64), 5n);
  t.equal(s.region.crashState().components.filter((c) => c.source.startsWith('nic')).length, 0);
});

t.test('coherence across QPs: an older undrained atomic of one QP never reverts a newer one of another QP', async (t) => {
  // QP A's CAS result stays in the NIC cache (onFlush); QP B's CAS reads it through the overlay and
  // swaps again. Draining B's QP first must land A's older entry first, not after.
  const s = setup({ nic: { drain: 'onFlush' }, fabric: { idleDrain: false } });
  const b = s.connect();
  const rkey = s.mr.rkey;
  t.equal((await s.qp.postChain([Wr.cas({ rkey, addr: 0 }, 0n, 1n)]))[0]!.swapped, true, 'A: 0 -> 1');
  t.equal((await b.qp.postChain([Wr.cas({ rkey, addr: 0 }, 1n, 2n)]))[0]!.swapped, true, 'B sees A through the overlay: 1 -> 2');
  t.equal(s.nic.cacheEntries, 2, 'both results undrained');
  await b.qp.postChain([Wr.flush('global', rkey, { addr: 0, len: 8 })]); // drains B's QP
  t.equal(s.region.loadU64(0), 2n, "B's newer value is in host memory after B's flush");
  s.nic.drainAll();
  t.equal(s.region.loadU64(0), 2n, "A's older entry did not land on top of it");
});
