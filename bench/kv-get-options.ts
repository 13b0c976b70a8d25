/**
 * The GET-chain options of PRISM-KV's durable read (docs/kv.md, "Durable linearizability"),
 * measured side by side: `node dist/bench/kv-get-options.js [rounds]`. In-process (immediate
 * fabric), 1 client per variant, 100 % GETs, uniform over 1,000 keys; the variants run in turn,
 * round after round, in one process, so the machine's noise hits each alike (round 0 is a JIT
 * warm-up and is discarded). Real time is read here, as benchmarks may (DESIGN §7).
 *
 * - prism, READ only: the GET before the fix (the test-only `getWithoutFlush` switch);
 * - prism, READ + FLUSH: the GET now;
 * - prism, READ + mark CAS + conditional FLUSH: the read side of a link-and-persist mark (an `eq`
 *   PRISM CAS on the slot's reserved word that swaps nothing, a FLUSH only when it is set) — the
 *   common case, no mark set;
 * - pilaf, before (`getWithoutFlush`) and now.
 */
import { createPrng, PmemRegion, seededEntropy } from '../pmem/index.js';
import { InProcessFabric, QueuePair, Rnic, Wr } from '../flush/index.js';
import { decodeItem, homeSlot, PilafClient, PilafServer, PrismKvClient, PrismKvServer, slotOffset } from '../src/apps/kv/index.js';
import { KV_BENCH_LAYOUT, KV_BENCH_REGION_BYTES } from './kv-common.js';

const te = new TextEncoder();
const KEYS = Array.from({ length: 1000 }, (_, i) => `key${String(i).padStart(6, '0')}`);
const PER_ROUND = 2000;

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 10);
  if (!Number.isInteger(rounds) || rounds < 1) throw new RangeError(`rounds must be a positive integer, got ${process.argv[2]}`);
  const seed = Number(process.argv[3] ?? 7);
  const value = te.encode('v'.repeat(24));

  const pr = PmemRegion.createInMemory(KV_BENCH_REGION_BYTES, { entropy: seededEntropy(createPrng(1)) });
  PrismKvServer.format(pr, KV_BENCH_LAYOUT);
  const pnic = new Rnic(pr, { drain: 'eager', entropy: seededEntropy(createPrng(2)) });
  const pfab = new InProcessFabric(pnic);
  const ps = PrismKvServer.open(pr, pnic);
  const prism = (o = {}): Promise<PrismKvClient> => PrismKvClient.connect(new QueuePair(pfab.connect(ps.accept())), ps.address, o);
  const lr = PmemRegion.createInMemory(KV_BENCH_REGION_BYTES, { entropy: seededEntropy(createPrng(1)) });
  PilafServer.format(lr, KV_BENCH_LAYOUT);
  const lnic = new Rnic(lr, { drain: 'eager', entropy: seededEntropy(createPrng(2)) });
  const lfab = new InProcessFabric(lnic);
  const ls = PilafServer.open(lr, lnic);
  const pilaf = (o = {}): Promise<PilafClient> => PilafClient.connect(new QueuePair(lfab.connect(ls.accept())), ls.address, o);

  const w = await prism();
  const lw = await pilaf();
  for (const k of KEYS) {
    await w.put(k, value);
    await lw.put(k, value);
  }
  const before = await prism({ faults: { getWithoutFlush: true } });
  const now = await prism();
  const g = now.geometry;
  const maxRead = g.classes[g.classes.length - 1]!.sizeBytes;
  const markMask = new Uint8Array(32).fill(0xff, 24, 32);
  const markSet = new Uint8Array(32);
  markSet[24] = 1;
  const noSwap = new Uint8Array(32);
  const markGet = async (key: string): Promise<Uint8Array | undefined> => {
    const at = { rkey: now.rkey, addr: slotOffset(g, homeSlot(g, te.encode(key))) };
    const cs = await now.qp.postChain([
      Wr.read(at, maxRead, { bounded: true }),
      Wr.prismCas('eq', at, markSet, { compareMask: markMask, swapMask: noSwap }),
      Wr.flush('persistent', now.rkey, { addr: at.addr, len: 32 }, { conditional: true }),
    ]);
    return decodeItem(cs[0]!.data!)?.value;
  };
  const lBefore = await pilaf({ getWithoutFlush: true });
  const lNow = await pilaf();
  const variants: Array<[string, (k: string) => Promise<Uint8Array | undefined>]> = [
    ['prism: READ only (before)', (k) => before.get(k)],
    ['prism: READ + FLUSH (now)', (k) => now.get(k)],
    ['prism: READ + mark CAS + cond. FLUSH', markGet],
    ['pilaf: READ, READ (before)', (k) => lBefore.get(k)],
    ['pilaf: READ + FLUSH, READ (now)', (k) => lNow.get(k)],
  ];
  const lat = new Map<string, number[]>(variants.map(([n]) => [n, []]));
  const r = createPrng(seed);
  for (let round = 0; round <= rounds; round++) {
    for (const [n, f] of variants) {
      for (let i = 0; i < PER_ROUND; i++) {
        const k = KEYS[r.int(0, KEYS.length - 1)]!;
        const t0 = process.hrtime.bigint();
        const v = await f(k);
        const dt = Number(process.hrtime.bigint() - t0);
        if (v === undefined) throw new Error(`${n}: ${k} missing`);
        if (round > 0) lat.get(n)!.push(dt);
      }
    }
  }
  const pct = (a: number[], p: number): number => [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(a.length * p))]!;
  const prismNow = pct(lat.get('prism: READ + FLUSH (now)')!, 0.5);
  const pilafNow = pct(lat.get('pilaf: READ + FLUSH, READ (now)')!, 0.5);
  const pilafBefore = pct(lat.get('pilaf: READ, READ (before)')!, 0.5);
  process.stdout.write(`kv GET options: ${rounds} rounds × ${PER_ROUND} GETs per variant, seed ${seed}\n`);
  for (const [n] of variants) {
    const a = lat.get(n)!;
    process.stdout.write(`  ${n.padEnd(40)} p50 ${(pct(a, 0.5) / 1000).toFixed(2)} µs  p99 ${(pct(a, 0.99) / 1000).toFixed(2)} µs\n`);
  }
  process.stdout.write(`  GET ratio PRISM-KV / Pilaf-style: before ${(pct(lat.get('prism: READ only (before)')!, 0.5) / pilafBefore).toFixed(2)}, now ${(prismNow / pilafNow).toFixed(2)}\n`);
}

await main();
