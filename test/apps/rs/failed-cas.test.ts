// "A replica whose CAS did not swap counts only once a FLUSHed READ shows a tag >= the writer's"
// (issue 12, DESIGN §2.2 (iii)), driven op by op on 3 replicas, drain onFlush (a legal NIC):
//
//   W1 (tag ⟨2, 2⟩) runs its install on replica X up to its CAS: the CAS result sits in X's NIC
//   cache, visible to NIC atomics, not drained, not durable.
//   W2 (tag ⟨2, 1⟩) installs on X — its CAS compares against W1's undrained entry and fails — and
//   on Y, where it swaps and is FLUSHed. Its chain to Z is held back.
//   Crash now: W1's entry is lost with X's NIC cache.
//
// The correct client does not count X (its READ shows the old tag), so W2 is not acknowledged.
// The mutant counts the failed CAS: W2 is acknowledged on {X, Y}; after the crash, with Y down
// (f = 1), a read of {X, Z} returns the old value: an acknowledged write lost.
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

async function scenario(t: Test, faults: Partial<RsFaults>): Promise<{ acknowledged: boolean; after: string | null }> {
  const reps = [0, 1, 2].map((i) => {
    const region = PmemRegion.createInMemory(rsApp.minRegionBytes(appOptions), { tracing: true, entropy: seededEntropy(createPrng(10 + i)) });
    rsApp.format(region, appOptions);
    const nic = new Rnic(region, { drain: 'onFlush', ddio: true, entropy: seededEntropy(createPrng(20 + i)) });
    const server = rsApp.open({ region, nic, clock: systemClock, schedule: queueMicrotask, entropy: seededEntropy(createPrng(30 + i)) }, appOptions) as RsServer;
    server.recover();
    return { region, nic, server, fabric: new InProcessFabric(nic, { delivery: 'seeded', seed: i, autoRun: false, idleDrain: false }) };
  });
  const clock = new VirtualClock(); // retries wait on it: time never moves here
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
  for (const r of reps) r.nic.drainAll();
  const w1 = client(2, {});
  const w2 = client(1, faults);
  const p1 = w1.c.write(0, te.encode('w1'));
  p1.catch(() => undefined);
  for (let rep = 0; rep < 3; rep++) await run(rep, w1.qpns[rep]!); // W1's query: ts 2
  // W1 on X: WRITE scratch, ALLOCATE, FLUSH item, CAS — stop right after the CAS.
  while (reps[0]!.nic.peekWr(w1.qpns[0]!)?.wr.op !== 'prismCas') if (!reps[0]!.nic.step(w1.qpns[0]!)) throw new Error('W1 never reached its CAS');
  await run(0, w1.qpns[0]!, 1);
  t.equal(reps[0]!.server.slot(0).tag.ts, 1n, "W1's CAS result is not in X's host memory (undrained NIC cache)");
  let acknowledged = false;
  const p2 = w2.c.write(0, te.encode('w2')).then(() => void (acknowledged = true));
  p2.catch(() => undefined);
  for (let rep = 0; rep < 3; rep++) await run(rep, w2.qpns[rep]!); // W2's query: ts 2 (W1's CAS is not visible to READs)
  await run(0, w2.qpns[0]!); // W2 on X: its CAS loses to W1's undrained entry
  await run(1, w2.qpns[1]!); // W2 on Y: swaps, FLUSHed
  await settle();
  // Crash every replica now (media only: NIC caches and unflushed lines are lost); restart X and Z, Y stays down.
  const images = reps.map((r) => {
    const st = r.region.crashState();
    return materialize(st, [...crashImages(st, { engine: 'none' })][0]!);
  });
  const up = [0, 2].map((i) => {
    const region = PmemRegion.openImage(images[i]!, {});
    const nic = new Rnic(region, { drain: 'eager', entropy: seededEntropy(createPrng(40 + i)) });
    const server = rsApp.open({ region, nic, clock: systemClock, schedule: queueMicrotask, entropy: seededEntropy(createPrng(50 + i)) }, appOptions) as RsServer;
    server.recover();
    const { qp, welcome } = server.accept(new Uint8Array(0));
    return { qp: new QueuePair(new InProcessFabric(nic).connect(qp)), welcome };
  });
  const reader = new RsClient([up[0], undefined, up[1]], { writerId: 9 });
  const v = await reader.read(0);
  return { acknowledged, after: v === null ? null : td.decode(v) };
}

t.test('correct client: the failed CAS does not count, W2 is not acknowledged before the crash', async (t) => {
  const r = await scenario(t, {});
  t.equal(r.acknowledged, false, 'W2 waits for a replica that durably shows a tag >= its own');
  t.equal(r.after, 'old', 'nothing acknowledged is lost');
});

t.test('mutant count-failed-cas caught: W2 acknowledged on a failed CAS, lost after the crash', async (t) => {
  const r = await scenario(t, { countFailedCas: true });
  t.equal(r.acknowledged, true, 'the mutant counts X');
  t.equal(r.after, 'old', 'W2 was acknowledged, yet a majority read after the crash returns the old value');
});
