// "A read's chain FLUSHes the slot it READ: a read returns only durable state" (docs/rs.md), driven
// op by op on 3 replicas, drain eager and DDIO on (a legal NIC: a CAS result reaches the LLC at
// once, where READs see it, and is durable only once a FLUSH writes its line back):
//
//   W (tag ⟨2, 2⟩) runs its install on replicas X and Y up to and including its CAS, and is held
//   there: its slot READ and FLUSH have not run, so the new slot is visible but not durable.
//   R, whose location hints name the old item, reads: its direct chains find the slots moved
//   (the new tag), its second chains READ the new item and the slot — a majority agrees on W's
//   value, which R returns.
//   Every replica crashes now (media only).
//
// The correct read FLUSHed each slot it returned from: W's value survives (the read after the
// restart returns it). Mutant readWithoutFlush does not: the slots roll back to the old value and
// a read after R's returns it — new, then old. (Z, the spare replica that reads through the slot,
// is not run for R here: R takes the item from its second chains on X and Y.) The plain sweep
// catches the mutant too (`crash-test --app rs --mutants readWithoutFlush`: seed 5); this test
// holds the writer exactly there.
import t, { type Test } from 'tap';
import { crashImages, createPrng, materialize, PmemRegion, seededEntropy, systemClock, VirtualClock } from '../../../pmem/index.js';
import { InProcessFabric, QueuePair, Rnic, type InProcessLink } from '../../../flush/index.js';
import { rsApp, RsClient, type RsFaults, type RsServer } from '../../../src/apps/rs/index.js';

const te = new TextEncoder();
const td = new TextDecoder();
const settle = async (): Promise<void> => {
  for (let i = 0; i < 8; i++) await new Promise<void>((r) => setImmediate(r));
};
const appOptions = rsApp.resolveOptions({ layout: { blocks: 1, classes: [{ sizeBytes: 64, count: 16 }], mailboxBuffers: 16 } });

async function scenario(t: Test, faults: Partial<RsFaults>): Promise<{ read: string | null; after: string | null; moved: number }> {
  const reps = [0, 1, 2].map((i) => {
    const region = PmemRegion.createInMemory(rsApp.minRegionBytes(appOptions), { tracing: true, entropy: seededEntropy(createPrng(10 + i)) });
    rsApp.format(region, appOptions);
    const nic = new Rnic(region, { drain: 'eager', ddio: true, entropy: seededEntropy(createPrng(20 + i)) });
    const server = rsApp.open({ region, nic, clock: systemClock, schedule: queueMicrotask, entropy: seededEntropy(createPrng(30 + i)) }, appOptions) as RsServer;
    server.recover();
    return { region, nic, server, fabric: new InProcessFabric(nic, { delivery: 'seeded', seed: i, autoRun: false, idleDrain: false }) };
  });
  const clock = new VirtualClock();
  const client = (writerId: number, f: Partial<RsFaults>): { c: RsClient; qpns: number[] } => {
    const conns = reps.map((r) => {
      const { qp, welcome } = r.server.accept(new Uint8Array(0));
      return { qp: new QueuePair(r.fabric.connect(qp)), welcome };
    });
    return { c: new RsClient(conns, { writerId, clock, faults: f, returnBatch: 64 }), qpns: conns.map((x) => (x.qp.link as InProcessLink).qpn) };
  };
  const run = async (rep: number, qpn: number, steps = Number.POSITIVE_INFINITY): Promise<void> => {
    for (let i = 0; i < steps; i++) if (!reps[rep]!.nic.step(qpn)) break;
    await settle();
  };
  // The old value, durable everywhere.
  const a = client(3, {});
  const pa = a.c.write(0, te.encode('old'));
  for (let k = 0; k < 4; k++) for (let rep = 0; rep < 3; rep++) await run(rep, a.qpns[rep]!);
  await pa;
  for (const rp of reps) rp.nic.drainAll();
  // R reads it: its hints now name the old item on every replica.
  const r = client(1, faults);
  const r0 = r.c.read(0);
  for (let k = 0; k < 3; k++) for (let rep = 0; rep < 3; rep++) await run(rep, r.qpns[rep]!);
  t.equal(td.decode((await r0)!), 'old');
  const w = client(2, {});
  const pw = w.c.write(0, te.encode('new'));
  pw.catch(() => undefined);
  for (let rep = 0; rep < 3; rep++) await run(rep, w.qpns[rep]!); // W's query: ts 2
  // W on X and Y: WRITE receipt, ALLOCATE, FLUSH item, CAS — held right after the CAS.
  for (const rep of [0, 1]) {
    while (reps[rep]!.nic.peekWr(w.qpns[rep]!)?.wr.op !== 'prismCas') if (!reps[rep]!.nic.step(w.qpns[rep]!)) throw new Error('W never reached its CAS');
    await run(rep, w.qpns[rep]!, 1);
    t.equal(reps[rep]!.server.slot(0).tag.ts, 2n, `W's CAS result is in replica ${rep}'s host memory (eager drain, DDIO: the LLC)`);
  }
  const before = r.c.stats.readChains.moved;
  const pr = r.c.read(0);
  for (let k = 0; k < 3; k++) for (const rep of [0, 1]) await run(rep, r.qpns[rep]!); // direct (moved), then where the slot now points
  const got = await pr;
  const moved = r.c.stats.readChains.moved - before;
  // Crash every replica now (media only: unflushed lines are lost) and restart them all.
  const up = reps.map((rp, i) => {
    const st = rp.region.crashState();
    const region = PmemRegion.openImage(materialize(st, [...crashImages(st, { engine: 'none' })][0]!), {});
    const nic = new Rnic(region, { drain: 'eager', entropy: seededEntropy(createPrng(40 + i)) });
    const server = rsApp.open({ region, nic, clock: systemClock, schedule: queueMicrotask, entropy: seededEntropy(createPrng(50 + i)) }, appOptions) as RsServer;
    server.recover();
    const { qp, welcome } = server.accept(new Uint8Array(0));
    return { qp: new QueuePair(new InProcessFabric(nic).connect(qp)), welcome };
  });
  const after = await new RsClient(up, { writerId: 9 }).read(0);
  return { read: got === null ? null : td.decode(got), after: after === null ? null : td.decode(after), moved };
}

t.test('correct read: it FLUSHes the slots it returns from, W\'s value survives the crash', async (t) => {
  const r = await scenario(t, {});
  t.equal(r.read, 'new', 'R returns W\'s value (a majority shows it)');
  t.ok(r.moved >= 2, `R's hints were stale on X and Y (${r.moved} chains found the slot moved)`);
  t.equal(r.after, 'new', 'the value R returned is durable');
});

t.test('mutant readWithoutFlush caught: R returns W\'s value, a crash takes it back', async (t) => {
  const r = await scenario(t, { readWithoutFlush: true });
  t.equal(r.read, 'new');
  t.equal(r.after, 'old', 'new, then old: the read returned state that was not durable');
});

// "A read returns the highest value of a majority only once a majority holds it durably" (the
// write-back): W installs on X alone (its chains to Y and Z held back); R reads X and Y — they
// disagree — and returns W's value; R2 then reads Y and Z. The correct R wrote W's value back to Y
// first, so R2 returns it too. Mutant readWithoutWriteBack returns at once: R2 sees only the old
// value — new, then old, with no crash at all. The plain sweep catches it too (seed 1, point 445);
// this test drives the overlap op by op.
async function writeBack(t: Test, faults: Partial<RsFaults>): Promise<{ first: string | null; second: string | null; writeBacks: number }> {
  const reps = [0, 1, 2].map((i) => {
    const region = PmemRegion.createInMemory(rsApp.minRegionBytes(appOptions), { tracing: true, entropy: seededEntropy(createPrng(60 + i)) });
    rsApp.format(region, appOptions);
    const nic = new Rnic(region, { drain: 'eager', ddio: true, entropy: seededEntropy(createPrng(70 + i)) });
    const server = rsApp.open({ region, nic, clock: systemClock, schedule: queueMicrotask, entropy: seededEntropy(createPrng(80 + i)) }, appOptions) as RsServer;
    server.recover();
    return { nic, server, fabric: new InProcessFabric(nic, { delivery: 'seeded', seed: i, autoRun: false, idleDrain: false }) };
  });
  const clock = new VirtualClock();
  const client = (writerId: number, f: Partial<RsFaults>, only: number[]): { c: RsClient; qpns: number[] } => {
    const conns = reps.map((r, i) => {
      if (!only.includes(i)) return undefined;
      const { qp, welcome } = r.server.accept(new Uint8Array(0));
      return { qp: new QueuePair(r.fabric.connect(qp)), welcome };
    });
    return { c: new RsClient(conns, { writerId, clock, faults: f, returnBatch: 64 }), qpns: conns.map((x) => (x === undefined ? -1 : (x.qp.link as InProcessLink).qpn)) };
  };
  const run = async (rep: number, qpn: number): Promise<void> => {
    while (reps[rep]!.nic.step(qpn));
    await settle();
  };
  const a = client(3, {}, [0, 1, 2]);
  const pa = a.c.write(0, te.encode('old'));
  for (let k = 0; k < 4; k++) for (let rep = 0; rep < 3; rep++) await run(rep, a.qpns[rep]!);
  await pa;
  const w = client(2, {}, [0, 1, 2]);
  const pw = w.c.write(0, te.encode('new'));
  pw.catch(() => undefined);
  for (let rep = 0; rep < 3; rep++) await run(rep, w.qpns[rep]!); // W's query
  await run(0, w.qpns[0]!); // W's install on X only
  t.equal(reps[0]!.server.slot(0).tag.ts, 2n, 'X holds W\'s value; Y and Z do not');
  const r = client(1, faults, [0, 1]);
  const pr = r.c.read(0);
  for (let k = 0; k < 4; k++) for (const rep of [0, 1]) await run(rep, r.qpns[rep]!);
  const first = await pr;
  const r2 = client(4, {}, [1, 2]);
  const p2 = r2.c.read(0);
  for (let k = 0; k < 4; k++) for (const rep of [1, 2]) await run(rep, r2.qpns[rep]!);
  const second = await p2;
  return { first: first === null ? null : td.decode(first), second: second === null ? null : td.decode(second), writeBacks: r.c.stats.writeBacks };
}

t.test('correct read: X and Y disagree, the read writes W\'s value back before it returns it', async (t) => {
  const r = await writeBack(t, {});
  t.equal(r.first, 'new');
  t.equal(r.writeBacks, 1);
  t.equal(r.second, 'new', 'a later read of Y and Z returns it too');
});

t.test('mutant readWithoutWriteBack caught: new, then old', async (t) => {
  const r = await writeBack(t, { readWithoutWriteBack: true });
  t.equal(r.first, 'new');
  t.equal(r.second, 'old', 'a later read of Y and Z returns the older value: not linearizable');
});
