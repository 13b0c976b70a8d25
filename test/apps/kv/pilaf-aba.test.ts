// The Pilaf-style GET validates the item it read against the entry's version. A buffer freed by an
// update and reused for another key must not pass that check for a GET that still holds the old
// entry: with per-slot versions both carried version 1, the GET took the other key's item for its
// slot and reported its own key absent although it was never deleted (found by the SIGKILL test,
// test/deep/kv-sigkill.test.ts, as a non-linearizable history). Versions now come from one counter.
import t from 'tap';
import { createPrng, PmemRegion, seededEntropy } from '../../../pmem/index.js';
import { InProcessFabric, QueuePair, Rnic, type InProcessLink } from '../../../flush/index.js';
import { PilafClient, PilafServer, homeSlot, type KvLayoutOptions } from '../../../src/apps/kv/index.js';
import { td, te } from './helpers.js';
import { settle } from './stepper.js';

const seed = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${seed} (replay: PMRPC_SEED=${seed} npx tap test/apps/kv/pilaf-aba.test.ts)`);
const LAYOUT: Partial<KvLayoutOptions> = { slotCount: 16, probeSlots: 4, keyBytesMax: 16, classes: [{ sizeBytes: 64, count: 8 }], mailboxBuffers: 8 };

t.test('a GET holding a stale entry never takes a recycled buffer of another key for its own key', async (t) => {
  const region = PmemRegion.createInMemory(32 * 1024, { entropy: seededEntropy(createPrng(seed)) });
  PilafServer.format(region, LAYOUT);
  const nic = new Rnic(region, { drain: 'eager', entropy: seededEntropy(createPrng(seed + 1)) });
  const fabric = new InProcessFabric(nic, { delivery: 'seeded', seed, autoRun: false, idleDrain: false });
  const server = PilafServer.open(region, nic);
  const qpn = (c: PilafClient): number => (c.qp.link as InProcessLink).qpn;
  const connect = async (): Promise<PilafClient> => {
    const sqp = server.accept();
    const p = PilafClient.connect(new QueuePair(fabric.connect(sqp)), server.address);
    nic.runQp(sqp.qpn);
    await settle();
    return p;
  };
  const run = async <T>(c: PilafClient, p: Promise<T>): Promise<T> => {
    let done = false;
    const q = p.finally(() => (done = true));
    for (let i = 0; i < 64 && !done; i++) {
      nic.runQp(qpn(c));
      await settle();
    }
    t.ok(done, 'the operation finished');
    return q;
  };
  const g = server.geometry;
  const key = 'k';
  const home = homeSlot(g, te.encode(key));
  // Another one-letter key (its item as long as k's) whose window does not overlap k's: it takes a
  // fresh slot (version 1 under per-slot versions).
  const other = [...'abcdefghijmnopqrstuvwxyz'].find((c) => Math.abs(homeSlot(g, te.encode(c)) - home) >= g.probeSlots)!;
  const w = await connect();
  const r = await connect();
  await run(w, w.put(key, te.encode('v1'))); // k at its home slot, version 1, buffer B
  // The reader's GET reads k's entry (ptr B, version 1) and stops before it reads the item.
  const get = r.get(key);
  let got: string | undefined | Error = new Error('unsettled');
  const settled = get.then((v) => (got = v === undefined ? undefined : td.decode(v)), (e: Error) => (got = e));
  for (let i = 0; i < 2; i++) nic.step(qpn(r)); // READ + FLUSH of the home entry
  await settle();
  // Meanwhile the writer updates k (B is freed) and creates `other`, which pops B from the free list.
  await run(w, w.put(key, te.encode('v2')));
  await run(w, w.put(other, te.encode('o1')));
  // The GET goes on: it reads B, now `other`'s item.
  for (let i = 0; i < 64 && got instanceof Error; i++) {
    nic.runQp(qpn(r));
    await settle();
  }
  await settled;
  t.equal(got, 'v2', 'the GET retried and returned k\'s current value, not "absent"');
  t.equal(td.decode((await run(r, r.get(other)))!), 'o1');
  server.close();
});
