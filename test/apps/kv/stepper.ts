// A step-by-step rig for PRISM-KV durability scenarios (DESIGN §5, durable linearizability):
// clients on a seeded fabric that never runs by itself (autoRun off, no idle drain), so a test
// executes chosen work requests of chosen QPs with nic.step(qpn), makes the NIC drain by cache
// pressure from a noise QP (what a lazy or bounded NIC cache does under load), takes the crash
// state at a chosen moment and recovers every image (or a seeded sample, seed printed).
import { countImages, crashImages, createPrng, materialize, PmemRegion, seededEntropy, type CrashState } from '../../../pmem/index.js';
import { Access, InProcessFabric, QueuePair, Rnic, Wr, type InProcessLink, type RnicOptions } from '../../../flush/index.js';
import { homeSlot, probeSequence, PrismKvClient, PrismKvServer, slotOffset, decodeSlot, type KvFaults, type KvGeometry, type KvLayoutOptions } from '../../../src/apps/kv/index.js';
import { td, te } from './helpers.js';

export interface NicConfig {
  name: string;
  nic: Partial<RnicOptions>;
  /** WRITEs the noise QP posts to push an undrained entry out of the NIC cache (0: eager drains at once). */
  pressure: number;
}

/** Every drain policy is a legal NIC (DESIGN §2.2): eager, lazy with a small and a large bound, onFlush with a bounded cache. */
export const DRAIN_CONFIGS: readonly NicConfig[] = [
  { name: 'eager', nic: { drain: 'eager' }, pressure: 0 },
  { name: 'lazy/1', nic: { drain: 'lazy', lazyBound: 1 }, pressure: 2 },
  { name: 'lazy/16', nic: { drain: 'lazy', lazyBound: 16 }, pressure: 17 },
  { name: 'onFlush/8', nic: { drain: 'onFlush', cacheEntriesMax: 8 }, pressure: 9 },
];

export const LAYOUT: Partial<KvLayoutOptions> = {
  slotCount: 16,
  probeSlots: 4,
  keyBytesMax: 16,
  classes: [
    { sizeBytes: 64, count: 16 },
    { sizeBytes: 128, count: 4 },
  ],
  mailboxBuffers: 8,
};

const REGION_BYTES = 32 * 1024;
const NOISE_AT = 24 * 1024; // outside the KV area

/** Index of the CAS in the PUT chain (WRITE scratch, ALLOCATE, FLUSH heap, CAS, …): steps to run to just after it. */
export const PUT_STEPS_THROUGH_CAS = 4;

export interface Rig {
  region: PmemRegion;
  nic: Rnic;
  server: PrismKvServer;
  g: KvGeometry;
  client(faults?: Partial<KvFaults>): Promise<PrismKvClient>;
  qpn(c: PrismKvClient): number;
  /** Executes n work requests of the client's QP (fewer if it runs out), then lets promise continuations run. */
  step(c: PrismKvClient, n: number): Promise<void>;
  /** Runs the client's QP until `p` settles (each message whole, in turn). */
  finish<T>(c: PrismKvClient, p: Promise<T>): Promise<T>;
  /** The noise QP posts `n` WRITEs: the NIC cache overflows its bound and drains its oldest entries. */
  pressure(n: number): void;
  /** The slot word of slot i as host (visible) memory holds it: what a READ of any QP sees. */
  visibleSlot(i: number): ReturnType<typeof decodeSlot>;
}

export async function settle(): Promise<void> {
  for (let i = 0; i < 8; i++) await new Promise<void>((r) => setImmediate(r));
}

export async function makeRig(cfg: NicConfig, ddio: boolean, seed = 1, layout: Partial<KvLayoutOptions> = LAYOUT): Promise<Rig> {
  const region = PmemRegion.createInMemory(REGION_BYTES, { tracing: true, entropy: seededEntropy(createPrng(seed)) });
  PrismKvServer.format(region, layout);
  const nic = new Rnic(region, { ddio, entropy: seededEntropy(createPrng(seed + 1)), ...cfg.nic });
  const fabric = new InProcessFabric(nic, { delivery: 'seeded', seed, autoRun: false, idleDrain: false });
  const server = PrismKvServer.open(region, nic);
  const qpn = (c: PrismKvClient): number => (c.qp.link as InProcessLink).qpn;
  // The connect READ runs by hand too.
  const client = async (faults: Partial<KvFaults> = {}): Promise<PrismKvClient> => {
    const sqp = server.accept();
    const p = PrismKvClient.connect(new QueuePair(fabric.connect(sqp)), server.address, { faults });
    nic.runQp(sqp.qpn);
    await settle();
    return p;
  };
  const npd = nic.allocPd();
  const nmr = nic.registerMr(npd, NOISE_AT, 4096, Access.ALL);
  const noise = new QueuePair(fabric.connect(nic.createQp(npd)));
  const noiseQpn = (noise.link as InProcessLink).qpn;
  return {
    region,
    nic,
    server,
    g: server.geometry,
    client,
    qpn,
    async step(c, n) {
      for (let i = 0; i < n; i++) if (!nic.step(qpn(c))) break;
      await settle();
    },
    async finish(c, p) {
      let done = false;
      const q = p.finally(() => (done = true));
      q.catch(() => undefined);
      for (let i = 0; i < 64 && !done; i++) {
        nic.runQp(qpn(c));
        await settle();
      }
      if (!done) throw new Error('operation did not finish in 64 rounds');
      return q;
    },
    pressure(n) {
      if (n === 0) return;
      const wrs = Array.from({ length: n }, (_, i) => Wr.write({ rkey: nmr.rkey, addr: NOISE_AT + 64 * (i % 32) }, new Uint8Array(8).fill(i + 1)));
      void noise.postChain(wrs);
      nic.runQp(noiseQpn);
    },
    visibleSlot(i) {
      return decodeSlot(region.load(slotOffset(server.geometry, i), 24));
    },
  };
}

/** `n` distinct keys whose home slot is the same odd slot: slot h and h+1 then sit on different cache lines. */
export function keysOnOddHome(g: KvGeometry, n: number): { home: number; keys: string[] } {
  const by = new Map<number, string[]>();
  for (let i = 0; i < 100_000; i++) {
    const k = `k${i}`;
    const h = homeSlot(g, te.encode(k));
    if (h % 2 === 0) continue;
    const l = by.get(h) ?? [];
    l.push(k);
    by.set(h, l);
    if (l.length === n) return { home: h, keys: l };
  }
  throw new Error('no keys');
}

/** A layout of two probe groups of 4 slots (probeSlots 8) in 16 slots: a PUT can go past a whole group. */
export const TWO_GROUP_LAYOUT: Partial<KvLayoutOptions> = { ...LAYOUT, probeSlots: 8 };

/**
 * `n` keys of one home slot h (so one group 0, [h, h+4)) and, among them, a `last` key whose group 1
 * is away from group 0: its first slot at least two slots past h+3 or before h, so on another cache
 * line and not one run with group 0 (a FLUSH of one does not reach the other).
 */
export function keysSharingGroup0(g: KvGeometry, n: number): { home: number; keys: string[]; last: string; group1: number } {
  const by = new Map<number, string[]>();
  for (let i = 0; i < 100_000; i++) {
    const k = `g${i}`;
    const seq = probeSequence(g, te.encode(k));
    const h = seq[0]!;
    const l = by.get(h) ?? [];
    const p = seq[g.groupSlots];
    const away = p !== undefined && (p >= h + g.groupSlots + 1 || p + g.groupSlots <= h - 1);
    if (l.length === n - 1) {
      if (away) return { home: h, keys: l, last: k, group1: p };
      continue;
    }
    l.push(k);
    by.set(h, l);
  }
  throw new Error('no keys');
}

export interface ImageReport {
  images: number;
  exhaustive: boolean;
  seed: number;
  /** The first few images that broke the expectation (one line each), then a count of the rest. */
  bad: string[];
}

/**
 * Recovers every image of `state` (exhaustively when there are at most `max`, else a seeded
 * sample of `sample`, the seed in the report) and reads `keys` after recovery; `expect` returns
 * an error string for a bad outcome.
 */
export async function checkImages(state: CrashState, keys: string[], expect: (got: Map<string, string | undefined>) => string | undefined, seed: number, max = 256, sample = 64): Promise<ImageReport> {
  const exhaustive = countImages(state) <= BigInt(max);
  const imgs = exhaustive ? crashImages(state, { engine: 'exhaustive', maxImages: max }) : crashImages(state, { engine: 'random', count: sample, seed });
  const report: ImageReport = { images: 0, exhaustive, seed, bad: [] };
  let bad = 0;
  for (const img of imgs) {
    report.images++;
    const region = PmemRegion.openImage(materialize(state, img), { tracing: true });
    const nic = new Rnic(region, { entropy: seededEntropy(createPrng(seed + img.index)) });
    const server = PrismKvServer.open(region, nic);
    const reader = await PrismKvClient.connect(new QueuePair(new InProcessFabric(nic).connect(server.accept())), server.address);
    const got = new Map<string, string | undefined>();
    for (const k of keys) {
      const v = await reader.get(k);
      got.set(k, v === undefined ? undefined : td.decode(v));
    }
    const problem = expect(got);
    if (problem !== undefined) {
      bad++;
      if (report.bad.length < 3) report.bad.push(`image ${img.index}: ${problem}`);
    }
    server.close();
  }
  if (bad > report.bad.length) report.bad.push(`… ${bad - report.bad.length} more of ${report.images} images`);
  return report;
}
