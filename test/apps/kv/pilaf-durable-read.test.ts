// The Pilaf-style baseline's GET has PRISM-KV's durable-read guarantee (DESIGN §5), so the GET
// latency ratio compares like with like. The server CPU stores an index entry and then persists
// it; a store is visible before it is durable (DESIGN §2.1), so a NIC READ can run in between:
// here it runs from the crash-point hook raised just before that persist writes the line back
// (a server CPU slowed down between its store and its sfence). At the moment the reader is told
// the entry, every crash image must hold it — else a crash right after the GET returns (the CPU
// still not past its sfence) takes back what the GET returned.
import t from 'tap';
import { countImages, crashImages, createPrng, materialize, PmemRegion, seededEntropy, type CrashState } from '../../../pmem/index.js';
import { InProcessFabric, QueuePair, Rnic, type InProcessLink } from '../../../flush/index.js';
import { PilafClient, PilafServer, decodePilafEntry, homeSlot, slotOffset, type KvLayoutOptions } from '../../../src/apps/kv/index.js';
import { td, te } from './helpers.js';
import { settle } from './stepper.js';

const seed = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
const LAYOUT: Partial<KvLayoutOptions> = { slotCount: 12, probeSlots: 4, keyBytesMax: 16, classes: [{ sizeBytes: 64, count: 16 }], mailboxBuffers: 8 };

async function scenario(drain: 'eager' | 'lazy' | 'onFlush', getWithoutFlush: boolean): Promise<{ read: string | undefined; images: number; bad: number; first: string }> {
  const region = PmemRegion.createInMemory(32 * 1024, { tracing: true, entropy: seededEntropy(createPrng(seed)) });
  PilafServer.format(region, LAYOUT);
  const nic = new Rnic(region, { drain, entropy: seededEntropy(createPrng(seed + 1)) });
  const fabric = new InProcessFabric(nic, { delivery: 'seeded', seed, autoRun: false, idleDrain: false });
  const server = PilafServer.open(region, nic);
  const connect = async (): Promise<PilafClient> => {
    const sqp = server.accept();
    const p = PilafClient.connect(new QueuePair(fabric.connect(sqp)), server.address, { getWithoutFlush });
    nic.runQp(sqp.qpn);
    await settle();
    return p;
  };
  const qpn = (c: PilafClient): number => (c.qp.link as InProcessLink).qpn;
  const run = async <T>(c: PilafClient, p: Promise<T>): Promise<T> => {
    let done = false;
    const q = p.finally(() => (done = true));
    for (let i = 0; i < 64 && !done; i++) {
      nic.runQp(qpn(c));
      await settle();
    }
    return q;
  };
  const w = await connect();
  const r = await connect();
  const key = 'k';
  const home = homeSlot(server.geometry, te.encode(key));
  await run(w, w.put(key, te.encode('old')));
  const oldPtr = (decodePilafEntry(region.load(slotOffset(server.geometry, home), 32)) as { ptr: number }).ptr;
  const get = r.get(key); // its first message (the home entry) is queued, not run
  let state: CrashState | undefined;
  let inHook = false;
  region.setCrashPointHook((e) => {
    if (inHook || state !== undefined || e.kind !== 'drain') return;
    const entry = decodePilafEntry(region.load(slotOffset(server.geometry, home), 32));
    if (entry === undefined || entry === 'empty' || entry.ptr === oldPtr) return; // not yet the new entry's persist
    inHook = true;
    nic.runQp(qpn(r)); // the reader's entry READ runs between the CPU's store and its write-back
    state = region.crashState(); // the reader has just been told the entry
    inHook = false;
  });
  await run(w, w.put(key, te.encode('new')));
  region.setCrashPointHook(undefined);
  const v = await run(r, get);
  const read = v === undefined ? undefined : td.decode(v);
  if (state === undefined) throw new Error('the entry persist was never reached');
  let images = 0;
  let bad = 0;
  let first = '';
  const st = state;
  const all = countImages(st) <= 256n;
  for (const img of all ? crashImages(st, { engine: 'exhaustive', maxImages: 256 }) : crashImages(st, { engine: 'random', count: 64, seed })) {
    images++;
    const reg = PmemRegion.openImage(materialize(st, img), { tracing: true });
    const n = new Rnic(reg, { entropy: seededEntropy(createPrng(seed + img.index)) });
    const s = PilafServer.open(reg, n);
    const c = await PilafClient.connect(new QueuePair(new InProcessFabric(n).connect(s.accept())), s.address);
    const got = await c.get(key);
    const after = got === undefined ? undefined : td.decode(got);
    if (read === 'new' && after !== 'new') {
      bad++;
      if (first === '') first = `image ${img.index}: get → ${String(after)} after the crash, new before it`;
    }
    s.close();
  }
  return { read, images, bad, first };
}

for (const drain of ['eager', 'lazy', 'onFlush'] as const) {
  t.test(`Pilaf-style GET: the entry it was told is durable at that moment (drain ${drain}, seed ${seed})`, async (t) => {
    const x = await scenario(drain, false);
    t.equal(x.read, 'new', 'the GET read the entry the server CPU had stored but not yet persisted');
    t.equal(x.bad, 0, `${x.images} image(s): the value the GET returned in each ${x.first}`);
    const m = await scenario(drain, true);
    t.ok(m.bad > 0, `without the FLUSH in the GET's READ message the dirty read is caught: ${m.first}`);
  });
}
