// The flush strategies of DESIGN §2.3 and the server CPU poller: each strategy's "durable at"
// moment, checked over every crash image at that moment, DDIO on and off, 64 B and 4 KiB.
import t from 'tap';
import { ACK_IMM, CpuPoller, FLUSH_STRATEGIES, FlushClient, GPSPM_IMM, NACK_IMM, StrategyServer, Wr, u64le, type FlushStrategy, type HostWriteEvent } from '../../flush/index.js';
import { crashImages, HEADER_BYTES, materialize, type CrashState } from '../../pmem/index.js';
import { setup } from './helpers.js';

const RING = { offset: 8192, len: 16384 };

function rig(strategy: FlushStrategy, ddio: boolean) {
  const s = setup({ nic: { ddio, drain: 'lazy' } });
  const poller = new CpuPoller(s.nic);
  const recvBuffers = [0, 1, 2, 3].map((i) => ({ addr: strategy === 'gpspm' ? 24576 + i * 64 : RING.offset + i * 4096, len: strategy === 'gpspm' ? 64 : 4096 }));
  const server = new StrategyServer(poller, { strategy, qp: s.sqp, ring: RING, recvBuffers });
  const client = new FlushClient(s.qp, { strategy, rkey: s.mr.rkey, recvRkey: s.mr.rkey });
  return { ...s, poller, server, client };
}

/** Persists `n` bytes with `strategy`; returns how many crash images at the "durable" moment lack them. */
async function lostImages(strategy: FlushStrategy, ddio: boolean, n: number): Promise<{ lost: number; images: number; at: number }> {
  const r = rig(strategy, ddio);
  const states: CrashState[] = [];
  r.region.setCrashPointHook((e) => {
    if (e.kind === 'completion') states.push(r.region.crashState());
  });
  const data = Uint8Array.from({ length: n }, (_, i) => (i % 251) + 1);
  const addr = RING.offset;
  const res = await r.client.persist(addr, data);
  r.region.setCrashPointHook(undefined);
  const at = strategy === 'sflush' || strategy === 'srflush' ? RING.offset : addr;
  t.same(r.region.load(at, n), data, `${strategy}: the server sees the data`);
  if (['wrflush', 'srflush', 'gpspm'].includes(strategy)) t.same(res.ack, { offset: at, len: n }, `${strategy}: ACK names what was persisted`);
  const st = states[states.length - 1]!;
  let lost = 0;
  let images = 0;
  for (const img of crashImages(st, { engine: 'random', count: 64, seed: 1 })) {
    images++;
    const b = materialize(st, img).subarray(HEADER_BYTES + at, HEADER_BYTES + at + n);
    if (Buffer.compare(b, data) !== 0) lost++;
  }
  return { lost, images, at };
}

for (const strategy of FLUSH_STRATEGIES) {
  t.test(`${strategy}: durable at its acknowledgement where the model says so`, async (t) => {
    for (const ddio of [true, false]) {
      for (const n of [64, 4096]) {
        const { lost, images } = await lostImages(strategy, ddio, n);
        t.ok(images > 0);
        const correct = strategy === 'none' ? false : strategy === 'raw' ? !ddio : true;
        if (correct) t.equal(lost, 0, `ddio ${ddio}, ${n} B: no image lacks acknowledged data`);
        else t.ok(lost > 0, `ddio ${ddio}, ${n} B: some image lacks acknowledged data (${lost}/${images})`);
      }
    }
  });
}

t.test('wrflush: several outstanding requests are acknowledged in order, each after its own persist', async (t) => {
  const r = rig('wrflush', true);
  const ps = [0, 1, 2, 3].map((i) => r.client.persist(RING.offset + i * 128, new Uint8Array(64).fill(i + 1)));
  const res = await Promise.all(ps);
  t.same(
    res.map((x) => x.ack!.offset),
    [0, 1, 2, 3].map((i) => RING.offset + i * 128),
  );
});

t.test('gpspm: a flush request outside the region is refused with a NACK', async (t) => {
  const r = rig('gpspm', true);
  const req = new Uint8Array(16);
  req.set(u64le(1 << 30), 0);
  req.set(u64le(8), 8);
  const notes: Array<number | undefined> = [];
  r.qp.onNotify((m) => notes.push(m.imm));
  await r.qp.post(Wr.send(req, GPSPM_IMM));
  await new Promise<void>((res) => queueMicrotask(res));
  await new Promise<void>((res) => setImmediate(res));
  t.same(notes, [NACK_IMM]);
  t.not(NACK_IMM, ACK_IMM);
});

t.test('CpuPoller: never runs inside the NIC; runs on its scheduler, in batches, filtered by range and QP', async (t) => {
  const s = setup({ nic: { drain: 'eager' } });
  const tasks: Array<() => void> = [];
  const poller = new CpuPoller(s.nic, { schedule: (fn) => tasks.push(fn), batchMax: 2 });
  const seen: HostWriteEvent[] = [];
  poller.watchMemory({ offset: 1024, len: 1024, qpn: s.sqp.qpn }, (e) => seen.push(e));
  const other = s.connect().qp;
  await s.qp.postChain([0, 1, 2].map((i) => Wr.write({ rkey: s.mr.rkey, addr: 1024 + 64 * i }, u64le(i))));
  await s.qp.write({ rkey: s.mr.rkey, addr: 4096 }, u64le(1)); // outside the range
  await other.write({ rkey: s.mr.rkey, addr: 1024 }, u64le(1)); // another QP
  t.equal(seen.length, 0, 'nothing ran inline');
  t.equal(poller.pending, 3);
  t.equal(tasks.length, 1, 'one pass scheduled');
  tasks.shift()!();
  t.equal(seen.length, 2, 'batchMax per pass');
  t.equal(tasks.length, 1, 'the rest is rescheduled');
  tasks.shift()!();
  t.same(
    seen.map((e) => e.offset),
    [1024, 1088, 1152],
  );
  poller.close();
});

t.test('CpuPoller: a watch with a filter queues only the writes it accepts (judged on what the drained write left visible)', async (t) => {
  const s = setup({ nic: { drain: 'eager' } });
  const tasks: Array<() => void> = [];
  const poller = new CpuPoller(s.nic, { schedule: (fn) => tasks.push(fn) });
  const seen: number[] = [];
  // The polled word: offset +24 of each 64-byte line, and only when it holds an odd value.
  const filter = (e: HostWriteEvent): boolean => {
    const w = 1024 + Math.floor((e.offset - 1024) / 64) * 64 + 24;
    return e.offset < w + 8 && e.offset + e.len > w && (s.region.loadU64(w) & 1n) === 1n;
  };
  poller.watchMemory({ offset: 1024, len: 1024, filter }, (e) => seen.push(e.offset));
  await s.qp.write({ rkey: s.mr.rkey, addr: 1024 }, u64le(3)); // another word of the line
  await s.qp.write({ rkey: s.mr.rkey, addr: 1024 + 24 }, u64le(2)); // the word, even
  t.equal(poller.pending, 0, 'refused writes queue nothing');
  t.equal(tasks.length, 0, 'and schedule no pass');
  await s.qp.write({ rkey: s.mr.rkey, addr: 1024 + 64 + 24 }, u64le(5)); // the word, odd
  t.equal(poller.pending, 1);
  tasks.shift()!();
  t.same(seen, [1024 + 64 + 24]);
  poller.close();
});

t.test('CpuPoller: onPassEnd runs once at the end of each pass that handled events, in that pass', async (t) => {
  const s = setup({ nic: { drain: 'eager' } });
  const tasks: Array<() => void> = [];
  const poller = new CpuPoller(s.nic, { schedule: (fn) => tasks.push(fn), batchMax: 2 });
  const log: string[] = [];
  poller.watchMemory({ offset: 1024, len: 1024 }, (e) => log.push(`event ${e.offset}`));
  const stop = poller.onPassEnd(() => log.push(`end of pass ${poller.passId}`));
  await s.qp.postChain([0, 1, 2].map((i) => Wr.write({ rkey: s.mr.rkey, addr: 1024 + 64 * i }, u64le(i))));
  t.equal(tasks.length, 1, 'one pass scheduled, none for the hook');
  tasks.shift()!();
  t.same(log, ['event 1024', 'event 1088', 'end of pass 1'], 'the hook runs after the pass\'s events, in the same pass');
  tasks.shift()!();
  t.same(log.slice(3), ['event 1152', 'end of pass 2']);
  t.equal(poller.runPending(), 0);
  t.equal(log.length, 5, 'a pass with no event runs no hook');
  stop();
  await s.qp.write({ rkey: s.mr.rkey, addr: 1024 }, u64le(9));
  tasks.shift()!();
  t.same(log.slice(5), ['event 1024'], 'unsubscribed');
  poller.close();
});

t.test('CpuPoller: receive completions reach the watcher in order', async (t) => {
  const s = setup();
  const poller = new CpuPoller(s.nic);
  const ids: number[] = [];
  poller.watchRecv(s.sqp, (c) => ids.push(c.recvId));
  s.sqp.postRecv({ id: 7, addr: 0, len: 8 });
  s.sqp.postRecv({ id: 8, addr: 8, len: 8 });
  const p = s.qp.postChain([Wr.send(u64le(1)), Wr.send(u64le(2))]);
  t.same(ids, [], 'the NIC executed the SENDs synchronously, but the CPU watcher did not run inline');
  t.equal(poller.pending, 2);
  await p;
  t.same(ids, [7, 8]);
});

t.test('strategy options are validated with exact messages', async (t) => {
  const s = setup();
  const poller = new CpuPoller(s.nic);
  t.throws(() => new FlushClient(s.qp, { strategy: 'tflush' as never }), new TypeError('strategy must be one of wflush, sflush, wrflush, srflush, raw, gpspm, none, got tflush'));
  t.throws(() => new FlushClient(s.qp, { strategy: 'wflush' }), new TypeError('strategy wflush needs rkey'));
  t.throws(() => new FlushClient(s.qp, { strategy: 'sflush' }), new TypeError('strategy sflush needs recvRkey'));
  t.throws(() => new StrategyServer(poller, { strategy: 'srflush', qp: s.sqp }), new TypeError('strategy srflush needs recvBuffers'));
  t.throws(() => new StrategyServer(poller, { strategy: 'wrflush', qp: s.sqp }), new TypeError('strategy wrflush needs ring'));
  t.throws(() => new CpuPoller(s.nic, { batchMax: 0 }), new RangeError('batchMax must be a positive integer, got 0'));
  const c = new FlushClient(s.qp, { strategy: 'wflush', rkey: s.mr.rkey });
  await t.rejects(c.persist(0, new Uint8Array(0)), new TypeError('data must be a non-empty Uint8Array'));
  await t.rejects(c.persist(1 << 20, new Uint8Array(8)), { code: 'PMRPC_ERR_OUT_OF_BOUNDS' });
});

t.test('every strategy under seeded interleaving: 3 clients × 5 outstanding persists, all acknowledged, all data in place', async (t) => {
  for (const strategy of FLUSH_STRATEGIES) {
    const s = setup({ nic: { drain: 'lazy', lazyBound: 4 }, fabric: { delivery: 'seeded', seed: 9 } });
    const poller = new CpuPoller(s.nic);
    const clients = [0, 1, 2].map((k) => {
      const { sqp, qp } = k === 0 ? { sqp: s.sqp, qp: s.qp } : s.connect();
      const base = 4096 + k * 8192;
      const gp = strategy === 'gpspm';
      const recvBuffers = [0, 1, 2, 3, 4, 5].map((i) => ({ addr: gp ? 28672 + k * 512 + i * 64 : base + i * 256, len: gp ? 64 : 256 }));
      new StrategyServer(poller, { strategy, qp: sqp, ring: { offset: base, len: 8192 }, recvBuffers });
      return { base, client: new FlushClient(qp, { strategy, rkey: s.mr.rkey, recvRkey: s.mr.rkey }) };
    });
    // Send strategies take receive buffers in order, so the k-th persist of a client lands in its k-th buffer.
    const all = clients.flatMap(({ base, client }, k) => [0, 1, 2, 3, 4].map((i) => client.persist(base + i * 256, new Uint8Array(64).fill(16 * k + i + 1))));
    await Promise.all(all);
    let okCount = 0;
    clients.forEach(({ base }, k) => {
      for (let i = 0; i < 5; i++) if (s.region.load(base + i * 256, 64).every((b) => b === 16 * k + i + 1)) okCount++;
    });
    t.equal(okCount, 15, `${strategy}: every persisted payload is where it belongs`);
    poller.close();
  }
});
