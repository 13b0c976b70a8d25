// Everything that works over the in-process link works over TCP (issue 5, item 2): representative
// scenarios of test/flush — every verb, access flags, errors, PRISM (indirect, bounded, ALLOCATE,
// enhanced CAS, chains with conditional + redirect, a durable chain checked over crash images) and
// the seven flush strategies with their server halves — run once over the in-process fabric and
// once over a TcpLink to a TcpNicServer on 127.0.0.1. Each scenario returns a transcript
// (completions, memory, crash-image counts); the TCP transcript must equal the in-process one, and
// key values are checked outright so that both cannot be wrong together.
import t from 'tap';
import {
  Access,
  CAS_MODES,
  CpuPoller,
  FLUSH_STRATEGIES,
  FlushClient,
  GPSPM_IMM,
  NACK_IMM,
  StrategyServer,
  Wr,
  bigintToLe,
  leToBigint,
  u64le,
  type FlushStrategy,
  type NotifyMessage,
} from '../../flush/index.js';
import { crashImages, HEADER_BYTES, materialize, type CrashState, type PmemRegion } from '../../pmem/index.js';
import { fill, plain, rig, type Kind, type Rig, type RigOptions } from './fixtures/helpers.js';

type Scenario = (s: Rig) => Promise<unknown[]>;

async function both(t: Tap.Test, name: string, opts: RigOptions, scenario: Scenario): Promise<unknown[]> {
  const out: Record<Kind, unknown> = { inproc: undefined, tcp: undefined };
  for (const kind of ['inproc', 'tcp'] as const) {
    const s = await rig(kind, opts);
    try {
      out[kind] = plain(await scenario(s));
    } finally {
      await s.close();
    }
  }
  t.same(out.tcp, out.inproc, `${name}: TCP transcript equals the in-process one`);
  return out.tcp as unknown[];
}

function mediaU64(region: PmemRegion, off: number): bigint {
  const state = region.crashState();
  const img = materialize(state, [...crashImages(state, { engine: 'none' })][0]!);
  return leToBigint(img.subarray(HEADER_BYTES + off, HEADER_BYTES + off + 8));
}

const ptrBound = (ptr: number, bound: number): Uint8Array => {
  const b = new Uint8Array(16);
  b.set(u64le(ptr), 0);
  b.set(u64le(bound), 8);
  return b;
};

t.test('verbs: WRITE/READ, WRITE_WITH_IMM, SEND, CAS, FAA, ATOMIC_WRITE, scratch', async (t) => {
  const tr = await both(t, 'verbs', {}, async (s) => {
    const out: unknown[] = [];
    for (const n of [64, 4096]) {
      const data = Uint8Array.from({ length: n }, (_, i) => (i * 7 + n) & 0xff);
      await s.qp.write({ rkey: s.mr.rkey, addr: 8192 }, data);
      out.push((await s.qp.read({ rkey: s.mr.rkey, addr: 8192 }, n)).every((b, i) => b === data[i]));
    }
    out.push(await s.qp.read({ rkey: s.mr.rkey, addr: 0 }, 0));
    s.sqp.postRecv({ id: 5, addr: 1024, len: 64 });
    await s.qp.writeImm({ rkey: s.mr.rkey, addr: 256 }, fill(8, 3), 0xdeadbeef);
    out.push(s.region.load(256, 8), s.sqp.pollRecv(), s.sqp.postedRecvs);
    s.sqp.postRecv({ id: 1, addr: 1024, len: 64 });
    s.sqp.postRecv({ id: 2, addr: 2048, len: 64 });
    await s.qp.send(fill(10, 1));
    await s.qp.send(fill(20, 2), 77);
    out.push(s.region.load(1024, 10), s.region.load(2048, 20), s.sqp.pollRecv());
    const at = { rkey: s.mr.rkey, addr: 64 };
    out.push(await s.qp.cas(at, 0n, 5n), await s.qp.cas(at, 0n, 9n), await s.qp.faa(at, 2n ** 64n - 1n), s.region.loadU64(64));
    await s.qp.atomicWrite(at, 0x1122334455667788n);
    out.push(s.region.loadU64(64), await s.qp.post(Wr.cas({ scratch: 8 }, 0n, 3n)));
    return out;
  });
  t.same(tr.slice(0, 2), [true, true], 'read back what was written, 64 B and 4 KiB');
  t.same(tr[13], `${0x1122334455667788n}n`, 'ATOMIC_WRITE stored 0x1122334455667788');
});

t.test('FLUSH: global makes visible, persistent makes durable; range vs mr (drain onFlush, no idle drain)', async (t) => {
  const tr = await both(t, 'flush', { nic: { drain: 'onFlush' }, idleDrain: false }, async (s) => {
    const rk = s.mr.rkey;
    const out: unknown[] = [];
    await s.qp.write({ rkey: rk, addr: 64 }, u64le(1));
    out.push(s.region.loadU64(64));
    await s.qp.flush('global', rk, { addr: 64, len: 8 });
    out.push(s.region.loadU64(64), mediaU64(s.region, 64));
    await s.qp.flush('persistent', rk, { addr: 64, len: 8 });
    out.push(mediaU64(s.region, 64));
    await s.qp.postChain([Wr.write({ rkey: rk, addr: 1024 }, u64le(2)), Wr.write({ rkey: rk, addr: 8192 }, u64le(3))]);
    await s.qp.flush('persistent', rk, { addr: 1024, len: 8 });
    out.push(mediaU64(s.region, 1024), s.region.loadU64(8192), mediaU64(s.region, 8192));
    await s.qp.flush('persistent', rk);
    out.push(mediaU64(s.region, 8192), s.nic.stats.flushes);
    return out;
  });
  t.same(tr, ['0n', '1n', '0n', '1n', '2n', '3n', '0n', '3n', 4]);
});

t.test('each access flag alone allows its verbs; a missing flag, a bad rkey and an out-of-bounds access are coded errors', async (t) => {
  const tr = await both(t, 'access', {}, async (s) => {
    const mk = (flag: number, i: number) => ({ rkey: s.nic.registerMr(s.pd, 32768 + i * 4096, 4096, flag).rkey, addr: 32768 + i * 4096 });
    const r = mk(Access.REMOTE_READ, 0);
    const w = mk(Access.REMOTE_WRITE, 1);
    const a = mk(Access.REMOTE_ATOMIC, 2);
    const g = mk(Access.FLUSH_GLOBAL, 3);
    const p = mk(Access.FLUSH_PERSISTENT, 4);
    const { sqp, qp } = await s.connect();
    sqp.postRecv({ id: 0, addr: 60000, len: 8 });
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
    const denied = await (await s.connect()).qp.postChain([Wr.write(r, fill(8, 1)), Wr.read(r, 8)]);
    const { qp: q3 } = await s.connect();
    const badKey = await q3.postChain([Wr.read({ rkey: 12345, addr: 0 }, 8), Wr.read({ rkey: s.mr.rkey, addr: 0 }, 8)]);
    const { qp: q4 } = await s.connect();
    const oob = await q4.post(Wr.write({ rkey: s.mr.rkey, addr: 32760 }, fill(16, 1)));
    return [cs.map((c) => c.status), denied, badKey, q3.state, oob, s.region.load(32760, 16)];
  });
  t.same(tr[0], new Array(11).fill('ok'));
  t.match(tr[1], [{ status: 'error', code: 'PMRPC_ERR_ACCESS' }, { status: 'error', code: 'PMRPC_ERR_WR_FLUSHED' }]);
  t.match(tr[2], [{ status: 'error', code: 'PMRPC_ERR_BAD_RKEY' }, { status: 'error', code: 'PMRPC_ERR_WR_FLUSHED' }]);
  t.equal(tr[3], 'error');
  t.match(tr[4], { status: 'error', code: 'PMRPC_ERR_OUT_OF_BOUNDS' });
  t.same(tr[5], { bytes: new Array(16).fill(0) }, 'nothing outside the MR was touched');
});

t.test('one chain is one message and one frame (doorbell batching), completions in order', async (t) => {
  const tr = await both(t, 'doorbell', {}, async (s) => {
    const before = s.nic.stats.messages;
    const framesBefore = s.server?.stats.framesIn ?? 0;
    const wrs = Array.from({ length: 1000 }, (_, i) => Wr.faa({ rkey: s.mr.rkey, addr: 0 }, 1n, { id: 10 + i }));
    const cs = await s.qp.postChain(wrs);
    const frames = s.server === undefined ? 1 : s.server.stats.framesIn - framesBefore;
    return [s.nic.stats.messages - before, frames, cs.length, cs.every((c, i) => c.id === 10 + i && leToBigint(c.data!) === BigInt(i)), s.region.loadU64(0)];
  });
  t.same(tr, [1, 1, 1000, true, '1000n']);
});

t.test('PRISM: indirect and bounded READ and WRITE, dataIndirect from memory and scratch', async (t) => {
  const tr = await both(t, 'prism-indirect', {}, async (s) => {
    const rk = s.mr.rkey;
    const out: unknown[] = [];
    s.region.store(1024, Uint8Array.from({ length: 16 }, (_, i) => i + 1));
    s.region.store(0, u64le(1024));
    s.region.store(64, ptrBound(1024, 5));
    out.push(await s.qp.read({ rkey: rk, addr: 0 }, 4, { indirect: true }));
    out.push(await s.qp.read({ rkey: rk, addr: 64 }, 8, { bounded: true }));
    await s.qp.write({ scratch: 16 }, u64le(1028));
    out.push(await s.qp.read({ scratch: 16 }, 2, { indirect: true, targetRkey: rk }));
    s.region.store(128, u64le(2048));
    s.region.store(192, ptrBound(3072, 8));
    await s.qp.write({ rkey: rk, addr: 128 }, fill(4, 9), { indirect: true });
    await s.qp.write({ rkey: rk, addr: 192 }, fill(8, 7), { bounded: true });
    out.push(s.region.load(2048, 4), s.region.load(3072, 8));
    out.push(await s.qp.post(Wr.write({ rkey: rk, addr: 192 }, fill(9, 7), { bounded: true })));
    const { qp } = await s.connect();
    await qp.post(Wr.writeFrom({ rkey: rk, addr: 4096 }, { rkey: rk, addr: 2048 }, 4));
    await qp.write({ scratch: 32 }, fill(6, 3));
    await qp.post(Wr.writeFrom({ rkey: rk, addr: 128 }, { scratch: 32 }, 6, { indirect: true }));
    out.push(s.region.load(4096, 4), s.region.load(2048, 6));
    return out;
  });
  t.same(tr.slice(0, 3), [{ bytes: [1, 2, 3, 4] }, { bytes: [1, 2, 3, 4, 5] }, { bytes: [5, 6] }]);
  t.match(tr[5], { status: 'error', code: 'PMRPC_ERR_BOUND_EXCEEDED' });
});

t.test('PRISM: ALLOCATE, enhanced CAS in every mode with masks, indirect CAS', async (t) => {
  const tr = await both(t, 'prism-cas', {}, async (s) => {
    const rk = s.mr.rkey;
    const out: unknown[] = [];
    s.nic.postFreeBuffers(s.mr, 64, [8192, 8256]);
    out.push(await s.qp.post(Wr.allocate(rk, 64, fill(10, 1))), s.region.load(8192, 10));
    out.push(await s.qp.post(Wr.allocate(rk, 256, fill(1, 2))));
    out.push(await s.qp.post(Wr.allocate(rk, 64, new Uint8Array(0), { redirect: 40 })), s.sqp.scratch().subarray(40, 48));
    for (const mode of CAS_MODES) {
      for (const operand of [3n, 5n, 7n]) {
        s.region.store(128, bigintToLe(5n, 16));
        const c = await s.qp.post(Wr.prismCas(mode, { rkey: rk, addr: 128 }, bigintToLe(operand, 16)));
        out.push([mode, operand, c.swapped, s.region.load(128, 16)]);
      }
    }
    s.region.store(512, Uint8Array.from({ length: 32 }, (_, i) => i));
    const data = new Uint8Array(32).fill(0xaa);
    data[0] = 0;
    const cmp = new Uint8Array(32);
    cmp[0] = 0xff;
    const swap = new Uint8Array(32).fill(0xff, 16, 32);
    out.push(await s.qp.post(Wr.prismCas('eq', { rkey: rk, addr: 512 }, data, { compareMask: cmp, swapMask: swap })), s.region.load(512, 32));
    s.region.store(0, u64le(640));
    s.region.store(700, fill(8, 4));
    out.push(await s.qp.post(Wr.prismCasFrom('ne', { rkey: rk, addr: 0 }, { rkey: rk, addr: 700 }, 8, { indirect: true })), s.region.load(640, 8));
    return out;
  });
  t.match(tr[0], { status: 'ok', data: { bytes: [0, 32, 0, 0, 0, 0, 0, 0] } });
  t.match(tr[2], { status: 'failed', code: 'PMRPC_ERR_ALLOC_EMPTY' });
  const swapped = tr.slice(5, 23).map((x) => (x as unknown[])[2]);
  t.same(swapped, [false, true, false, true, false, true, true, false, false, true, true, false, false, false, true, false, true, true], 'eq ne lt le gt ge against 5 with 3, 5, 7');
});

t.test('PRISM chains: conditional + skip; ALLOCATE → redirect → conditional CAS with dataIndirect in one message', async (t) => {
  const tr = await both(t, 'prism-chain', {}, async (s) => {
    const rk = s.mr.rkey;
    const out: unknown[] = [];
    const cs = await s.qp.postChain([
      Wr.cas({ rkey: rk, addr: 64 }, 1n, 2n),
      Wr.write({ rkey: rk, addr: 128 }, fill(8, 1), { conditional: true }),
      Wr.write({ rkey: rk, addr: 136 }, fill(8, 1), { conditional: true }),
      Wr.write({ rkey: rk, addr: 144 }, fill(8, 1)),
      Wr.write({ rkey: rk, addr: 152 }, fill(8, 1), { conditional: true }),
    ]);
    out.push(cs.map((c) => c.status), s.region.load(128, 32));
    s.nic.postFreeBuffers(s.mr, 64, [8192]);
    const slot = { rkey: rk, addr: 256 };
    const obj = fill(40, 0x5c);
    const before = s.nic.stats.messages;
    const install = () => s.qp.postChain([Wr.allocate(rk, 64, obj, { redirect: 0 }), Wr.prismCasFrom('eq', slot, { scratch: 0 }, 8, { conditional: true, compareMask: new Uint8Array(8) })]);
    const c1 = await install();
    out.push(s.nic.stats.messages - before, c1.map((c) => [c.status, c.swapped]), s.region.loadU64(256), await s.qp.read(slot, 40, { indirect: true }));
    const c2 = await install();
    out.push(c2.map((c) => c.status), s.region.loadU64(256));
    return out;
  });
  t.same(tr[0], ['ok', 'skipped', 'skipped', 'ok', 'ok']);
  t.same(tr.slice(2, 5), [1, [['ok', null], ['ok', true]], '8192n']);
  t.same(tr[5], { bytes: new Array(40).fill(0x5c) });
  t.same(tr[6], ['failed', 'skipped']);
});

t.test('durable chain over crash images: the heap FLUSH before the CAS keeps every durable pointer valid', async (t) => {
  for (const withHeapFlush of [true, false]) {
    const tr = await both(t, `durable chain, heap flush ${withHeapFlush}`, { nic: { drain: 'onFlush' } }, async (s) => {
      const rk = s.mr.rkey;
      s.nic.postFreeBuffers(s.mr, 64, [8192]);
      const states: CrashState[] = [];
      s.region.setCrashPointHook(() => states.push(s.region.crashState()));
      const chain = [
        Wr.allocate(rk, 64, fill(16, 0x77), { redirect: 0 }),
        ...(withHeapFlush ? [Wr.flush('persistent', rk, { addr: 8192, len: 64 })] : []),
        Wr.prismCasFrom('eq', { rkey: rk, addr: 256 }, { scratch: 0 }, 8, { conditional: true, compareMask: new Uint8Array(8) }),
        Wr.flush('persistent', rk, { addr: 256, len: 8 }),
      ];
      const cs = await s.qp.postChain(chain);
      s.region.setCrashPointHook(undefined);
      let without = 0;
      let withObj = 0;
      let images = 0;
      for (const st of states) {
        for (const img of crashImages(st, { engine: 'exhaustive' })) {
          const b = materialize(st, img);
          images++;
          if (leToBigint(b.subarray(HEADER_BYTES + 256, HEADER_BYTES + 264)) !== 8192n) continue;
          if (b.subarray(HEADER_BYTES + 8192, HEADER_BYTES + 8208).every((x) => x === 0x77)) withObj++;
          else without++;
        }
      }
      return [cs.map((c) => c.status), states.length, images, withObj, without];
    });
    const [, , images, withObj, without] = tr as number[];
    t.ok(images! > 0 && withObj! > 0);
    if (withHeapFlush) t.equal(without, 0, 'no image has the pointer without the object');
    else t.ok(without! > 0, 'without the heap flush some image has a dangling durable pointer');
  }
});

const RING = { offset: 8192, len: 16384 };

/** Persists `n` bytes with `strategy`; counts crash images (at the last completion before "durable") lacking them. */
async function persistOnce(s: Rig, strategy: FlushStrategy, n: number): Promise<unknown[]> {
  const poller = new CpuPoller(s.nic);
  const recvBuffers = [0, 1, 2, 3].map((i) => ({ addr: strategy === 'gpspm' ? 24576 + i * 64 : RING.offset + i * 4096, len: strategy === 'gpspm' ? 64 : 4096 }));
  const server = new StrategyServer(poller, { strategy, qp: s.sqp, ring: RING, recvBuffers });
  const client = new FlushClient(s.qp, { strategy, rkey: s.mr.rkey, recvRkey: s.mr.rkey });
  const states: CrashState[] = [];
  s.region.setCrashPointHook((e) => {
    if (e.kind === 'completion') states.push(s.region.crashState());
  });
  const data = Uint8Array.from({ length: n }, (_, i) => (i % 251) + 1);
  const res = await client.persist(RING.offset, data);
  s.region.setCrashPointHook(undefined);
  const seen = s.region.load(RING.offset, n).every((b, i) => b === data[i]);
  const st = states[states.length - 1]!;
  let lost = 0;
  let images = 0;
  for (const img of crashImages(st, { engine: 'random', count: 64, seed: 1 })) {
    images++;
    if (Buffer.compare(materialize(st, img).subarray(HEADER_BYTES + RING.offset, HEADER_BYTES + RING.offset + n), data) !== 0) lost++;
  }
  server.close();
  poller.close();
  return [seen, res.ack ?? null, res.completions.map((c) => c.status), images, lost];
}

for (const strategy of FLUSH_STRATEGIES) {
  t.test(`flush strategy ${strategy} over TCP: durable at its acknowledgement where the model says so`, async (t) => {
    for (const ddio of [true, false]) {
      for (const n of [64, 4096]) {
        const tr = await both(t, `${strategy} ddio ${ddio} ${n} B`, { nic: { ddio, drain: 'lazy' } }, (s) => persistOnce(s, strategy, n));
        const [seen, ack, , images, lost] = tr as [boolean, unknown, unknown, number, number];
        t.equal(seen, true, 'the server sees the data');
        t.ok(images > 0);
        if (['wrflush', 'srflush', 'gpspm'].includes(strategy)) t.same(ack, { offset: RING.offset, len: n }, 'the ACK names what was persisted');
        const correct = strategy === 'none' ? false : strategy === 'raw' ? !ddio : true;
        if (correct) t.equal(lost, 0, `ddio ${ddio}, ${n} B: no image lacks acknowledged data`);
        else t.ok(lost > 0, `ddio ${ddio}, ${n} B: some image lacks acknowledged data (${lost}/${images})`);
      }
    }
  });
}

t.test('wrflush: several outstanding requests are acknowledged in order; gpspm: an out-of-region request is NACKed', async (t) => {
  const tr = await both(t, 'acks', {}, async (s) => {
    const poller = new CpuPoller(s.nic);
    const server = new StrategyServer(poller, { strategy: 'wrflush', qp: s.sqp, ring: RING });
    const client = new FlushClient(s.qp, { strategy: 'wrflush', rkey: s.mr.rkey });
    const res = await Promise.all([0, 1, 2, 3].map((i) => client.persist(RING.offset + i * 128, new Uint8Array(64).fill(i + 1))));
    server.close();
    const { sqp, qp } = await s.connect();
    const g = new StrategyServer(poller, { strategy: 'gpspm', qp: sqp, recvBuffers: [{ addr: 24576, len: 64 }] });
    const note = new Promise<NotifyMessage>((res) => qp.onNotify(res));
    const req = new Uint8Array(16);
    req.set(u64le(1 << 30), 0);
    req.set(u64le(8), 8);
    await qp.post(Wr.send(req, GPSPM_IMM));
    const m = await note;
    g.close();
    poller.close();
    return [res.map((x) => x.ack!.offset), m.imm];
  });
  t.same(tr, [[0, 1, 2, 3].map((i) => RING.offset + i * 128), NACK_IMM]);
});
