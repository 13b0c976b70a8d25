/**
 * bench nic: what the emulated RNIC costs (layer 2), in-process.
 *
 * One request at a time (await each completion) over the immediate in-process link, on an
 * in-memory region (no tracing, DDIO on, lazy drain): ops/s of each verb at 64 B and 4 KiB, of
 * each atomic, and of each flush strategy's persist() at 64 B and 4 KiB. Beside them, measured in
 * the same run, the limits a verb cannot beat: a memcpy (Uint8Array.set) of the same bytes and a
 * CAS (Atomics.compareExchange on a BigInt64Array). Ratios are limit ÷ verb ("×N slower").
 */
import { performance } from 'node:perf_hooks';
import { Access, CpuPoller, FLUSH_STRATEGIES, FlushClient, InProcessFabric, QueuePair, Rnic, StrategyServer, Wr, type FlushStrategy, type MemoryRegion, type ServerQp } from '../flush/index.js';
import { createPrng, PmemRegion, seededEntropy } from '../pmem/index.js';
import { opsBySizeChart } from './charts.js';
import { fmtRate, machineDescription, measureOps, median } from './measure.js';
import type { BenchOptions, BenchReport, BenchSuite } from './types.js';

const SIZES = [64, 4096];
const REGION_BYTES = 4 * 1024 * 1024;
const DATA = { offset: 0, len: 2 * 1024 * 1024 }; // WRITE / READ targets cycle here
const RING = { offset: 2 * 1024 * 1024, len: 1024 * 1024 };
const RECV = { offset: 3 * 1024 * 1024, len: 512 * 1024 };
const RECV_SLOTS = 16;

interface Plan {
  minMs: number;
  repeats: number;
}

interface Rate {
  ops: number;
  samples: number[];
}

/** Sequential async ops for about `minMs` per repeat; median ops/s. */
async function measureAsync(plan: Plan, op: (i: number) => Promise<unknown>): Promise<Rate> {
  const warmEnd = performance.now() + Math.min(40, plan.minMs / 2);
  let w = 0;
  while (performance.now() < warmEnd) for (let k = 0; k < 16; k++) await op(w++);
  const samples: number[] = [];
  for (let r = 0; r < plan.repeats; r++) {
    let n = 0;
    const t0 = performance.now();
    let t = t0;
    while (t - t0 < plan.minMs) {
      for (let k = 0; k < 32; k++) await op(n++);
      t = performance.now();
    }
    samples.push((n * 1000) / (t - t0));
  }
  return { ops: median(samples), samples };
}

interface World {
  region: PmemRegion;
  nic: Rnic;
  mr: MemoryRegion;
  sqp: ServerQp;
  qp: QueuePair;
  fabric: InProcessFabric;
}

function world(seed: number): World {
  const region = PmemRegion.createInMemory(REGION_BYTES, { seed, entropy: seededEntropy(createPrng(seed)) });
  const nic = new Rnic(region, { entropy: seededEntropy(createPrng(seed + 1)) });
  const fabric = new InProcessFabric(nic);
  const pd = nic.allocPd();
  const mr = nic.registerMr(pd, 0, REGION_BYTES, Access.ALL);
  const sqp = nic.createQp(pd);
  return { region, nic, mr, sqp, qp: new QueuePair(fabric.connect(sqp)), fabric };
}

function patterned(n: number, seed: number): Uint8Array {
  return Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);
}

const pad = (s: string, n: number): string => s.padEnd(n);
const fmt = (x: number): string => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
const round = (x: number): number => Math.round(x * 100) / 100;

export const nicBench: BenchSuite = {
  name: 'nic',
  description: 'ops/s of each RNIC verb and flush strategy (64 B, 4 KiB), in-process, beside memcpy and CAS limits measured in the same run',
  async run(o: BenchOptions): Promise<BenchReport> {
    const plan: Plan = o.quick ? { minMs: 80, repeats: 3 } : { minMs: 250, repeats: 5 };
    const rows: Array<Record<string, unknown>> = [];
    const ratios: Record<string, number> = {};
    const summary: string[] = [];
    const verbNames = ['write', 'writeImm', 'read', 'send', 'read-indirect', 'allocate', 'flush-global', 'flush-persistent'];
    const atomicNames = ['cas', 'faa', 'atomicWrite', 'prismCas-32B'];
    const total = SIZES.length * (1 + verbNames.length + FLUSH_STRATEGIES.length) + 1 + atomicNames.length;
    let done = 0;
    const step = (label: string) => o.progress(done++, total, label);
    summary.push(`pmrpc bench nic${o.quick ? ' --quick' : ''} — one request at a time over the immediate in-process link; medians of ${plan.repeats} repeats of ${plan.minMs} ms`);
    summary.push(`NIC: ddio on, lazy drain (bound 16), in-memory region without tracing; ${machineDescription().cpus} CPUs, Node ${process.version}`);
    summary.push('ratio = limit ops/s ÷ verb ops/s (how many times slower than the limit), measured in this run');

    // ---------------------------------------------------------------- limits
    const plain = new Uint8Array(REGION_BYTES);
    const memcpy: Record<number, number> = {};
    for (const size of SIZES) {
      step(`memcpy ${size} B`);
      const payload = patterned(size, o.seed);
      const slots = DATA.len / size;
      const m = measureOps((i) => plain.set(payload, (i % slots) * size), { minMs: plan.minMs, repeats: plan.repeats });
      memcpy[size] = m.opsPerSecond;
      rows.push({ cell: 'limit', name: 'memcpy', sizeBytes: size, opsPerSecond: Math.round(m.opsPerSecond), samples: m.samples.map(Math.round) });
    }
    step('cas limit');
    const words = new BigInt64Array(1024);
    const casLimit = measureOps((i) => Atomics.compareExchange(words, i & 1023, BigInt(i - 1), BigInt(i)), { minMs: plan.minMs, repeats: plan.repeats }).opsPerSecond;
    rows.push({ cell: 'limit', name: 'Atomics.compareExchange', sizeBytes: 8, opsPerSecond: Math.round(casLimit) });
    summary.push('');
    summary.push(`limits: memcpy 64 B ${fmtRate(memcpy[64]!)}, 4 KiB ${fmtRate(memcpy[4096]!)}; CAS (Atomics.compareExchange) ${fmtRate(casLimit)}`);

    // ---------------------------------------------------------------- verbs
    {
      // JIT warm-up of the whole NIC path, so that the first cell is not penalised.
      const w = world(o.seed);
      const p = patterned(64, o.seed);
      await measureAsync({ minMs: o.quick ? 60 : 200, repeats: 1 }, (i) => w.qp.postChain([Wr.write({ rkey: w.mr.rkey, addr: (i & 1023) * 64 }, p), Wr.read({ rkey: w.mr.rkey, addr: (i & 1023) * 64 }, 64)]));
    }
    summary.push('');
    summary.push('verbs (ops/s; ×slower than memcpy of the same size):');
    for (const size of SIZES) {
      const w = world(o.seed);
      const rk = w.mr.rkey;
      const payload = patterned(size, o.seed);
      const slots = DATA.len / size;
      const at = (i: number) => ({ rkey: rk, addr: DATA.offset + (i % slots) * size });
      // For indirect READs: a pointer table at the start of RING, pointing into DATA.
      for (let k = 0; k < 256; k++) w.region.storeU64(RING.offset + 8 * k, BigInt(DATA.offset + k * size));
      const recvSlot = (i: number) => ({ id: i % RECV_SLOTS, addr: RECV.offset + (i % RECV_SLOTS) * 4096, len: 4096 });
      const ops: Record<string, (i: number) => Promise<unknown>> = {
        write: (i) => w.qp.post(Wr.write(at(i), payload)),
        writeImm: (i) => {
          w.sqp.postRecv(recvSlot(i));
          const p = w.qp.post(Wr.writeImm(at(i), payload, i >>> 0));
          w.sqp.pollRecv();
          return p;
        },
        read: (i) => w.qp.post(Wr.read(at(i), size)),
        send: (i) => {
          w.sqp.postRecv(recvSlot(i));
          const p = w.qp.post(Wr.send(payload));
          w.sqp.pollRecv();
          return p;
        },
        'read-indirect': (i) => w.qp.post(Wr.read({ rkey: rk, addr: RING.offset + 8 * (i & 255) }, size, { indirect: true })),
        allocate: (i) => {
          w.nic.postFreeBuffers(w.mr, size, [DATA.offset + (i % slots) * size]);
          return w.qp.post(Wr.allocate(rk, size, payload));
        },
        'flush-global': (i) => w.qp.post(Wr.flush('global', rk, { addr: at(i).addr, len: size })),
        'flush-persistent': (i) => w.qp.post(Wr.flush('persistent', rk, { addr: at(i).addr, len: size })),
      };
      for (const name of verbNames) {
        step(`${name} ${size} B`);
        const r = await measureAsync(plan, ops[name]!);
        const ratio = memcpy[size]! / r.ops;
        ratios[`memcpy_over_${name}_${size}B`] = round(ratio);
        rows.push({ cell: 'verb', name, sizeBytes: size, opsPerSecond: Math.round(r.ops), samples: r.samples.map(Math.round), memcpyOverVerb: round(ratio) });
        summary.push(`  ${pad(name, 17)} ${pad(`${size} B`, 7)} ${pad(fmtRate(r.ops), 11)} ×${fmt(ratio)}`);
      }
      const c = w.nic.stats;
      if (c.errors > 0) throw new Error(`bench nic: ${c.errors} work requests failed`);
    }

    // ---------------------------------------------------------------- atomics
    summary.push('');
    summary.push('atomics (ops/s; ×slower than Atomics.compareExchange):');
    {
      const w = world(o.seed);
      const rk = w.mr.rkey;
      const at = (i: number) => ({ rkey: rk, addr: DATA.offset + (i & 1023) * 64 });
      const data32 = patterned(32, o.seed);
      const ops: Record<string, (i: number) => Promise<unknown>> = {
        cas: (i) => w.qp.post(Wr.cas(at(i), 0n, 0n)),
        faa: (i) => w.qp.post(Wr.faa(at(i), 1n)),
        atomicWrite: (i) => w.qp.post(Wr.atomicWrite(at(i), BigInt(i))),
        'prismCas-32B': (i) => w.qp.post(Wr.prismCas('ge', at(i), data32)),
      };
      for (const name of atomicNames) {
        step(name);
        const r = await measureAsync(plan, ops[name]!);
        const ratio = casLimit / r.ops;
        ratios[`cas_over_${name}`] = round(ratio);
        rows.push({ cell: 'atomic', name, opsPerSecond: Math.round(r.ops), samples: r.samples.map(Math.round), casOverVerb: round(ratio) });
        summary.push(`  ${pad(name, 17)} ${pad(fmtRate(r.ops), 11)} ×${fmt(ratio)}`);
      }
    }

    // ---------------------------------------------------------------- flush strategies
    summary.push('');
    summary.push('flush strategies, persist() until "durable" (ops/s; ×slower than memcpy; ×slower than none):');
    for (const size of SIZES) {
      const rates: Partial<Record<FlushStrategy, number>> = {};
      for (const strategy of FLUSH_STRATEGIES) {
        step(`${strategy} ${size} B`);
        const w = world(o.seed);
        const poller = new CpuPoller(w.nic);
        const gp = strategy === 'gpspm';
        const recvBuffers = Array.from({ length: RECV_SLOTS }, (_, k) => ({ addr: RECV.offset + k * 4096, len: gp ? 64 : 4096 }));
        const server = new StrategyServer(poller, { strategy, qp: w.sqp, ring: RING, recvBuffers });
        // sflush flushes the whole receive MR: register one over the receive slots only, as a server would.
        const recvMr = w.nic.registerMr(w.sqp.pd, RECV.offset, RECV_SLOTS * 4096, Access.ALL);
        const client = new FlushClient(w.qp, { strategy, rkey: w.mr.rkey, recvRkey: recvMr.rkey });
        const payload = patterned(size, o.seed);
        const slots = RING.len / size;
        const r = await measureAsync(plan, (i) => client.persist(RING.offset + (i % slots) * size, payload));
        server.close();
        poller.close();
        rates[strategy] = r.ops;
        const ratio = memcpy[size]! / r.ops;
        ratios[`memcpy_over_${strategy}_${size}B`] = round(ratio);
        rows.push({ cell: 'strategy', name: strategy, sizeBytes: size, opsPerSecond: Math.round(r.ops), samples: r.samples.map(Math.round), memcpyOverStrategy: round(ratio) });
      }
      for (const strategy of FLUSH_STRATEGIES) {
        const ops = rates[strategy]!;
        const overNone = rates.none! / ops;
        ratios[`none_over_${strategy}_${size}B`] = round(overNone);
        summary.push(`  ${pad(strategy, 8)} ${pad(`${size} B`, 7)} ${pad(fmtRate(ops), 11)} ×${pad(fmt(memcpy[size]! / ops), 7)} ×${fmt(overNone)} vs none`);
      }
    }
    o.progress(total, total, 'done');
    const chartRows = (cell: string) =>
      rows.filter((r) => r.cell === cell || (r.cell === 'limit' && r.name === 'memcpy')).map((r) => ({ series: String(r.name), sizeBytes: Number(r.sizeBytes), opsPerSecond: Number(r.opsPerSecond) }));
    const charts = [opsBySizeChart('verbs', 'RNIC verbs in-process vs memcpy', chartRows('verb')), opsBySizeChart('strategies', 'flush strategies in-process vs memcpy', chartRows('strategy'))];
    return { charts, suite: 'nic', config: { ...machineDescription(), quick: o.quick, plan, sizes: SIZES, nic: { ddio: true, drain: 'lazy', lazyBound: 16 }, link: 'in-process immediate' }, rows, ratios, summary };
  },
};
