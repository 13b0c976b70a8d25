/**
 * bench kv: PRISM-KV vs the Pilaf-style baseline, in the same run (DESIGN §9).
 *
 * In-process cells: system (prism, pilaf) × read share (100 %, 50 %) × key distribution
 * (uniform, Zipf 0.99, seeded) × clients (1, 4), over the immediate in-process link.
 * TCP cells: system × read share × uniform keys × clients (1, 4), the server in a child process
 * (dist/bench/kv-server.js, one per cell) reached over 127.0.0.1 by TcpLinks.
 * Each client runs a closed loop (one operation at a time); GET and PUT latencies go to HDR
 * histograms (ns), throughput is operations completed per second of the cell. PUTs are durable
 * when they complete (PRISM-KV: the durable chain; Pilaf: the server CPU persists before it
 * replies).
 * Durable PUTs vs better-sqlite3: PRISM-KV in-process on a region FILE in the OS temporary
 * directory, with `strict: true` (an msync of what every drain wrote: durable across a machine
 * crash) and without (durable across a process crash), against better-sqlite3 in the same
 * directory (WAL, `synchronous = FULL`, one transaction per put: an upsert of the key), 1 client,
 * 100 % puts, uniform keys, same keys and values.
 *
 * On this emulator a round trip costs CPU (building messages, the NIC engine, promise hops), not
 * wire time, and the NIC shares the CPU with the clients: the ratios compare the work per
 * operation of the two protocols, not the hardware latencies of the PRISM paper.
 */
import * as hdr from 'hdr-histogram-js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { InProcessFabric, QueuePair, Rnic } from '../flush/index.js';
import { createPrng, PmemRegion, seededEntropy, type Prng } from '../pmem/index.js';
import { PilafClient, PilafServer, PrismKvClient, PrismKvServer } from '../src/apps/kv/index.js';
import { TcpLink } from '../src/transport/index.js';
import { barChart, type ChartSpec } from './charts.js';
import { startServerChild } from './child.js';
import { KV_BENCH_LAYOUT as LAYOUT, KV_BENCH_REGION_BYTES as REGION_BYTES, kvServerFile, type KvSystem } from './kv-common.js';
import { fmtRate, machineDescription } from './measure.js';
import type { BenchOptions, BenchReport, BenchSuite } from './types.js';
import { openDatabase } from './sqlite.js';

type System = KvSystem;
type Dist = 'uniform' | 'zipf';
type LinkKind = 'in-process' | 'tcp';

const KEYS = 1000;
const VALUE_BYTES = 24;

interface KvLike {
  get(key: string): Promise<Uint8Array | undefined>;
  put(key: string, value: Uint8Array): Promise<void>;
}

interface World {
  clients: KvLike[];
  close(): Promise<void>;
}

async function inProcessWorld(system: System, clients: number, seed: number): Promise<World> {
  const region = PmemRegion.createInMemory(REGION_BYTES, { entropy: seededEntropy(createPrng(seed)) });
  const nic = new Rnic(region, { drain: 'eager', entropy: seededEntropy(createPrng(seed + 1)) });
  const fabric = new InProcessFabric(nic);
  if (system === 'prism') {
    PrismKvServer.format(region, LAYOUT);
    const server = PrismKvServer.open(region, nic);
    const cs: KvLike[] = [];
    for (let i = 0; i < clients; i++) cs.push(await PrismKvClient.connect(new QueuePair(fabric.connect(server.accept())), server.address));
    return { clients: cs, close: async () => server.close() };
  }
  PilafServer.format(region, LAYOUT);
  const server = PilafServer.open(region, nic);
  const cs: KvLike[] = [];
  for (let i = 0; i < clients; i++) cs.push(await PilafClient.connect(new QueuePair(fabric.connect(server.accept())), server.address));
  return { clients: cs, close: async () => server.close() };
}

/** The server in a child process (dist/bench/kv-server.js), the clients here over loopback TCP. */
async function tcpWorld(system: System, clients: number, seed: number): Promise<World> {
  const { ready, stop } = await startServerChild<{ port: number; address: { rkey: number; base: number } }>(kvServerFile(), JSON.stringify({ system, seed }), 'the kv bench server');
  try {
    const { port, address } = ready;
    const cs: Array<PrismKvClient | PilafClient> = [];
    for (let i = 0; i < clients; i++) {
      const { link } = await TcpLink.connect({ port, name: `bench-kv-${i}` });
      const qp = new QueuePair(link);
      cs.push(system === 'prism' ? await PrismKvClient.connect(qp, address) : await PilafClient.connect(qp, address));
    }
    return {
      clients: cs,
      close: async () => {
        for (const c of cs) c.qp.close();
        await stop();
      },
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

/**
 * PRISM-KV on a region file (durable-put cells): formatted and loaded with every key without
 * strict, closed, reopened with `strict` (recovery runs, as after a restart), 1 client.
 */
async function fileWorld(strict: boolean, seed: number, value: Uint8Array): Promise<World & { dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-bench-kv-'));
  const path = join(dir, 'kv.pm');
  {
    const region = PmemRegion.create(path, REGION_BYTES, { entropy: seededEntropy(createPrng(seed)) });
    const nic = new Rnic(region, { drain: 'eager', entropy: seededEntropy(createPrng(seed + 1)) });
    PrismKvServer.format(region, LAYOUT);
    const server = PrismKvServer.open(region, nic);
    const c = await PrismKvClient.connect(new QueuePair(new InProcessFabric(nic).connect(server.accept())), server.address);
    for (let i = 0; i < KEYS; i++) await c.put(keyOf(i), value);
    await c.flushReturns();
    server.close();
    nic.close();
    region.close();
  }
  const region = PmemRegion.open(path, { strict });
  const nic = new Rnic(region, { drain: 'eager', entropy: seededEntropy(createPrng(seed + 2)) });
  const server = PrismKvServer.open(region, nic);
  const c = await PrismKvClient.connect(new QueuePair(new InProcessFabric(nic).connect(server.accept())), server.address);
  return {
    dir,
    clients: [c],
    close: async () => {
      server.close();
      nic.close();
      region.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Seeded Zipf(s) over [0, n): inverse CDF by binary search. */
export function zipf(n: number, s: number): (prng: Prng) => number {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let i = 0; i < n; i++) cdf[i] = sum += 1 / Math.pow(i + 1, s);
  for (let i = 0; i < n; i++) cdf[i]! /= sum;
  return (prng) => {
    const u = prng.float();
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

const keyOf = (i: number): string => `key${String(i).padStart(6, '0')}`;

interface CellResult {
  getP50Ns: number;
  getP99Ns: number;
  putP50Ns: number;
  putP99Ns: number;
  gets: number;
  puts: number;
  opsPerSecond: number;
}

/** Writes `n` into the value's first 8 bytes: no two PUTs write the same bytes. */
function stamp(value: Uint8Array, n: number): void {
  new DataView(value.buffer, value.byteOffset, value.byteLength).setFloat64(0, n, true);
}

const histogram = (): hdr.Histogram => hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 10_000_000_000, numberOfSignificantValueDigits: 3 });

function summarize(getH: hdr.Histogram, putH: hdr.Histogram, ops: number, elapsedMs: number): CellResult {
  const r: CellResult = {
    getP50Ns: getH.totalCount > 0 ? getH.getValueAtPercentile(50) : 0,
    getP99Ns: getH.totalCount > 0 ? getH.getValueAtPercentile(99) : 0,
    putP50Ns: putH.totalCount > 0 ? putH.getValueAtPercentile(50) : 0,
    putP99Ns: putH.totalCount > 0 ? putH.getValueAtPercentile(99) : 0,
    gets: getH.totalCount,
    puts: putH.totalCount,
    opsPerSecond: (ops * 1000) / elapsedMs,
  };
  getH.destroy();
  putH.destroy();
  return r;
}

/** Closed loops of every client of `w` for `ms` (after a warm-up); `load`: put every key first. */
async function measure(w: World, readPct: number, dist: Dist, ms: number, seed: number, load: boolean): Promise<CellResult> {
  const value = new Uint8Array(VALUE_BYTES).fill(7);
  // Load every key, then let every client touch every key once (PRISM-KV caches slot words).
  if (load) for (let i = 0; i < KEYS; i++) await w.clients[0]!.put(keyOf(i), value);
  for (const c of w.clients) for (let i = 0; i < KEYS; i++) await c.get(keyOf(i));
  const getH = histogram();
  const putH = histogram();
  const pick = dist === 'zipf' ? zipf(KEYS, 0.99) : (p: Prng) => p.int(0, KEYS - 1);
  let ops = 0;
  let stamped = 0;
  const warmMs = Math.min(100, ms / 4);
  const t0 = performance.now();
  const start = t0 + warmMs;
  const end = start + ms;
  await Promise.all(
    w.clients.map(async (c, ci) => {
      const prng = createPrng(seed * 31 + ci);
      const value = new Uint8Array(VALUE_BYTES).fill(7);
      for (;;) {
        const now = performance.now();
        if (now >= end) return;
        const key = keyOf(pick(prng));
        const isGet = prng.int(0, 99) < readPct;
        // Every PUT writes a value of its own (a store may skip a write of identical bytes: SQLite does).
        if (!isGet) stamp(value, ++stamped);
        const a = performance.now();
        if (isGet) await c.get(key);
        else await c.put(key, value);
        const b = performance.now();
        if (a >= start) {
          ops++;
          (isGet ? getH : putH).recordValue(Math.max(1, Math.round((b - a) * 1e6)));
        }
      }
    }),
  );
  return summarize(getH, putH, ops, performance.now() - start);
}

async function runCell(system: System, readPct: number, dist: Dist, clients: number, ms: number, seed: number, link: LinkKind = 'in-process'): Promise<CellResult> {
  const w = link === 'tcp' ? await tcpWorld(system, clients, seed) : await inProcessWorld(system, clients, seed);
  try {
    return await measure(w, readPct, dist, ms, seed, true);
  } finally {
    await w.close();
  }
}

/** Durable PUTs of PRISM-KV on a region file, 1 client, 100 % puts, uniform keys. */
async function runDurablePrism(strict: boolean, ms: number, seed: number): Promise<CellResult> {
  const w = await fileWorld(strict, seed, new Uint8Array(VALUE_BYTES).fill(7));
  try {
    return await measure(w, 0, 'uniform', ms, seed, false);
  } finally {
    await w.close();
  }
}

/** better-sqlite3, WAL, synchronous = FULL, one transaction per put (an upsert), same keys / values / key sequence. */
function runSqlitePuts(ms: number, seed: number): CellResult {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-bench-kv-sqlite-'));
  const db = openDatabase(join(dir, 'kv.db'));
  const getH = histogram();
  const putH = histogram();
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.exec('CREATE TABLE kv (key TEXT PRIMARY KEY, value BLOB NOT NULL)');
    const upsert = db.prepare('INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value');
    const put = db.transaction((key: string, value: Uint8Array) => upsert.run(key, value));
    const value = Buffer.alloc(VALUE_BYTES, 7);
    db.transaction(() => {
      for (let i = 0; i < KEYS; i++) upsert.run(keyOf(i), value);
    })();
    const prng = createPrng(seed * 31);
    let ops = 0;
    let stamped = 0;
    const warmMs = Math.min(100, ms / 4);
    const start = performance.now() + warmMs;
    const end = start + ms;
    for (;;) {
      const a = performance.now();
      if (a >= end) break;
      const key = keyOf(prng.int(0, KEYS - 1));
      prng.int(0, 99); // the read/write roll of the KV loops: the same key sequence
      stamp(value, ++stamped);
      put(key, value);
      const b = performance.now();
      if (a >= start) {
        ops++;
        putH.recordValue(Math.max(1, Math.round((b - a) * 1e6)));
      }
    }
    return summarize(getH, putH, ops, performance.now() - start);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const us = (ns: number): string => (ns / 1000).toFixed(1);
const round = (x: number): number => Math.round(x * 1000) / 1000;

export const kvBench: BenchSuite = {
  name: 'kv',
  description: 'PRISM-KV vs Pilaf-style: GET/PUT latency p50/p99 (HDR) and throughput, 100%/50% reads, uniform/Zipf keys, 1/4 clients, in-process and over TCP (server in a child process); durable PUTs vs better-sqlite3 (WAL, synchronous FULL), strict and not',
  async run(o: BenchOptions): Promise<BenchReport> {
    const ms = o.quick ? 250 : 1500;
    // TCP cells run longer: a few thousand operations per second, and one scheduling stall of the
    // other process weighs more in a short window.
    const tcpMs = o.quick ? 600 : 3000;
    type Cell = { system: System | 'sqlite'; readPct: number; dist: Dist; clients: number; link: LinkKind; region: 'memory' | 'file' | 'file-strict' };
    const cells: Cell[] = [];
    for (const clients of [1, 4])
      for (const readPct of [100, 50])
        for (const dist of ['uniform', 'zipf'] as Dist[]) for (const system of ['prism', 'pilaf'] as System[]) cells.push({ system, readPct, dist, clients, link: 'in-process', region: 'memory' });
    for (const clients of [1, 4]) for (const readPct of [100, 50]) for (const system of ['prism', 'pilaf'] as System[]) cells.push({ system, readPct, dist: 'uniform', clients, link: 'tcp', region: 'memory' });
    for (const region of ['file-strict', 'file'] as const) cells.push({ system: 'prism', readPct: 0, dist: 'uniform', clients: 1, link: 'in-process', region });
    cells.push({ system: 'sqlite', readPct: 0, dist: 'uniform', clients: 1, link: 'in-process', region: 'file' });
    const name = (c: Cell): string => `${c.system}/${c.link}/${c.region}/${c.readPct}/${c.dist}/${c.clients}`;
    const rows: Array<Record<string, unknown>> = [];
    const results = new Map<string, CellResult>();
    // JIT warm-up of both systems' paths, discarded: otherwise the first cell measured pays for it.
    o.progress(0, cells.length, 'warm-up');
    for (const system of ['prism', 'pilaf'] as System[]) await runCell(system, 50, 'uniform', 1, o.quick ? 150 : 500, o.seed);
    let done = 0;
    for (const c of cells) {
      o.progress(done, cells.length, `${c.system} ${c.link} ${c.region} ${c.readPct}% reads ${c.dist} ${c.clients} client(s)`);
      const r =
        c.system === 'sqlite'
          ? runSqlitePuts(ms, o.seed)
          : c.region !== 'memory'
            ? await runDurablePrism(c.region === 'file-strict', ms, o.seed)
            : await runCell(c.system, c.readPct, c.dist, c.clients, c.link === 'tcp' ? tcpMs : ms, o.seed, c.link);
      results.set(name(c), r);
      rows.push({ ...c, ...r, opsPerSecond: Math.round(r.opsPerSecond) });
      done++;
    }
    o.progress(cells.length, cells.length, 'done');
    const get = (system: System | 'sqlite', rp: number, d: Dist, n: number, link: LinkKind = 'in-process', region: Cell['region'] = 'memory'): CellResult =>
      results.get(name({ system, readPct: rp, dist: d, clients: n, link, region }))!;
    const strictPut = get('prism', 0, 'uniform', 1, 'in-process', 'file-strict');
    const filePut = get('prism', 0, 'uniform', 1, 'in-process', 'file');
    const sqlitePut = get('sqlite', 0, 'uniform', 1, 'in-process', 'file');
    const ratios: Record<string, number> = {
      getLatencyVsPilaf: round(get('prism', 100, 'uniform', 1).getP50Ns / get('pilaf', 100, 'uniform', 1).getP50Ns),
      getP99LatencyVsPilaf: round(get('prism', 100, 'uniform', 1).getP99Ns / get('pilaf', 100, 'uniform', 1).getP99Ns),
      putLatencyVsPilaf: round(get('prism', 50, 'uniform', 1).putP50Ns / get('pilaf', 50, 'uniform', 1).putP50Ns),
      readThroughputVsPilaf_4clients: round(get('prism', 100, 'uniform', 4).opsPerSecond / get('pilaf', 100, 'uniform', 4).opsPerSecond),
      mixedThroughputVsPilaf_4clients: round(get('prism', 50, 'uniform', 4).opsPerSecond / get('pilaf', 50, 'uniform', 4).opsPerSecond),
      getLatencyVsPilaf_tcp: round(get('prism', 100, 'uniform', 1, 'tcp').getP50Ns / get('pilaf', 100, 'uniform', 1, 'tcp').getP50Ns),
      getP99LatencyVsPilaf_tcp: round(get('prism', 100, 'uniform', 1, 'tcp').getP99Ns / get('pilaf', 100, 'uniform', 1, 'tcp').getP99Ns),
      putLatencyVsPilaf_tcp: round(get('prism', 50, 'uniform', 1, 'tcp').putP50Ns / get('pilaf', 50, 'uniform', 1, 'tcp').putP50Ns),
      readThroughputVsPilaf_tcp_4clients: round(get('prism', 100, 'uniform', 4, 'tcp').opsPerSecond / get('pilaf', 100, 'uniform', 4, 'tcp').opsPerSecond),
      mixedThroughputVsPilaf_tcp_4clients: round(get('prism', 50, 'uniform', 4, 'tcp').opsPerSecond / get('pilaf', 50, 'uniform', 4, 'tcp').opsPerSecond),
      durablePutLatencyVsSqlite_strict: round(strictPut.putP50Ns / sqlitePut.putP50Ns),
      durablePutThroughputVsSqlite_strict: round(strictPut.opsPerSecond / sqlitePut.opsPerSecond),
      durablePutLatencyVsSqlite_noStrict: round(filePut.putP50Ns / sqlitePut.putP50Ns),
      durablePutThroughputVsSqlite_noStrict: round(filePut.opsPerSecond / sqlitePut.opsPerSecond),
    };
    const label = (c: Cell): string => (c.region !== 'memory' || c.system === 'sqlite' ? `${c.system} ${c.system === 'sqlite' ? 'WAL FULL' : c.region} 100%w ${c.dist} ${c.clients}c` : `${c.system} ${c.link === 'tcp' ? 'tcp ' : ''}${c.readPct}%r ${c.dist} ${c.clients}c`);
    const summary: string[] = [
      `PRISM-KV vs Pilaf-style, ${KEYS} keys, ${VALUE_BYTES}-byte values, ${ms} ms per cell (TCP: ${tcpMs} ms; one run per cell; latencies from HDR histograms); TCP: server in a child process over 127.0.0.1`,
      `getLatencyVsPilaf = ${ratios.getLatencyVsPilaf} (p50 GET, 1 client, 100% reads, uniform, in-process; PRISM paper target on hardware: 0.75); over TCP: ${ratios.getLatencyVsPilaf_tcp}`,
      `durable PUTs vs better-sqlite3 (WAL, synchronous FULL, 1 txn per put), 1 client: p50 latency ×${ratios.durablePutLatencyVsSqlite_strict} / throughput ×${ratios.durablePutThroughputVsSqlite_strict} with strict (msync); ×${ratios.durablePutLatencyVsSqlite_noStrict} / ×${ratios.durablePutThroughputVsSqlite_noStrict} without`,
      `  ${'cell'.padEnd(38)} ${'GET p50/p99 µs'.padEnd(16)} ${'PUT p50/p99 µs'.padEnd(16)} throughput`,
    ];
    for (const c of cells) {
      const r = results.get(name(c))!;
      summary.push(`  ${label(c).padEnd(38)} ${(r.gets > 0 ? `${us(r.getP50Ns)}/${us(r.getP99Ns)}` : '-').padEnd(16)} ${(r.puts > 0 ? `${us(r.putP50Ns)}/${us(r.putP99Ns)}` : '-').padEnd(16)} ${fmtRate(r.opsPerSecond)}`);
    }
    summary.push(
      'A round trip here costs CPU (message objects, the NIC engine, promise hops; over TCP also the codec, the syscalls and the other process), not wire time, and the emulated NIC shares',
      'the CPU with clients and server: the ratios measure the work per operation of one bounded indirect READ + FLUSH vs two READs, the first + FLUSH (+ CRC checks), not hardware latency.',
      'strict = msync of every drained range (durable across a machine crash, like synchronous = FULL); without it a PUT is durable across a process crash only.',
    );
    const latencyRows = rows
      .filter((r) => r.region === 'memory')
      .map((r) => ({ series: String(r.system), cell: `${r.link === 'tcp' ? 'tcp ' : ''}${String(r.readPct)}%r ${String(r.dist)} ${String(r.clients)}c`, getP50us: Number(r.getP50Ns) / 1000, opsPerSecond: Number(r.opsPerSecond) }));
    const durableRows = rows.filter((r) => r.region !== 'memory').map((r) => ({ series: r.system === 'sqlite' ? 'better-sqlite3 WAL FULL' : `PRISM-KV ${String(r.region)}`, putP50us: Number(r.putP50Ns) / 1000 }));
    const charts: ChartSpec[] = [
      barChart('kv-get-latency', 'GET p50 latency (µs), PRISM-KV vs Pilaf-style, in-process and TCP', latencyRows, { x: 'cell', y: 'getP50us', yTitle: 'GET p50 (µs)', group: 'series', width: 640 }),
      barChart('kv-throughput', 'throughput (ops/s), PRISM-KV vs Pilaf-style, in-process and TCP', latencyRows, { x: 'cell', y: 'opsPerSecond', yTitle: 'operations per second', group: 'series', width: 640 }),
      barChart('kv-durable-put', 'durable PUT p50 latency (µs), 1 client: PRISM-KV on a region file vs better-sqlite3', durableRows, { x: 'series', y: 'putP50us', yTitle: 'PUT p50 (µs)', group: 'series', width: 360, height: 240 }),
    ];
    return {
      suite: 'kv',
      config: {
        ...machineDescription(),
        quick: o.quick,
        seed: o.seed,
        msPerCell: ms,
        msPerTcpCell: tcpMs,
        keys: KEYS,
        valueBytes: VALUE_BYTES,
        layout: LAYOUT,
        nic: { ddio: true, drain: 'eager' },
        links: ['in-process immediate', 'tcp 127.0.0.1, server in a child process (dist/bench/kv-server.js)'],
        durable: { region: `file in ${tmpdir()}`, strict: 'msync of every drained range', sqlite: 'better-sqlite3, journal_mode WAL, synchronous FULL, one transaction per put (upsert), same directory' },
      },
      rows,
      ratios,
      summary,
      charts,
    };
  },
};
