/**
 * The soak's per-app drivers (src/testing/soak.ts runs them): each app's minimal deployment and
 * workload, and the bounds of its `items`. They are the `soak` field of the app's record in the
 * crash-test registry (src/testing/crash/apps.ts), where `pmrpc soak --app` finds them.
 *
 * PRISM-TX: 3 shards with the default layout (TX_APP_DEFAULTS: keys and items per shard), 4
 * closed-loop clients doing bank transfers between two accounts, most of them on a few hot
 * accounts so that at least 20 % of the transactions abort on conflicts; one operation = one
 * transaction (committed or aborted). PRISM-KV: one node, one client (soakKv below). PRISM-RS: 3
 * replicas, writers taking turns (soakRs below).
 */
import { createPrng, systemClock } from '../../../pmem/index.js';
import { parseTxWelcome, TxClient, txApp, TX_APP_DEFAULTS, TxErrorCodes, type ShardConn, type TxAppServer } from '../../apps/tx/index.js';
import { startLocalShards } from '../../apps/txlock/index.js';
import { KV_LAYOUT_DEFAULTS, kvApp, PrismKvClient, type KvAppServer, type PrismKvServer } from '../../apps/kv/index.js';
import { RsLocalCluster, RS_LAYOUT_DEFAULTS, RS_ITEM_HEADER_BYTES, type RsClient } from '../../apps/rs/index.js';

export interface SoakOptions {
  app: string;
  /** Operations = multiple × capacityItems (default 50). */
  multiple: number;
  seed: number;
  /** Arena items per shard (default: the app's default layout). A small arena makes a fast soak. */
  items: number | undefined;
  /** Closed-loop clients (default 4). */
  clients: number;
  /** Progress: called every `capacityItems` operations with the count so far. */
  progress: ((operations: number, total: number) => void) | undefined;
}

export interface SoakReport {
  app: string;
  /** Operations run (transactions: committed + aborted + errored). */
  operations: number;
  /** Items of the deployment's arenas (shards × items per shard). */
  capacityItems: number;
  /** Most arena items in use at once over the whole run. */
  highWaterItems: number;
  /** The high water mark over the first 5 × capacityItems operations (the whole run when it is shorter). */
  highWaterAt5x: number;
  aborts: number;
  errors: number;
  violations: string[];
  /** Details: multiple, seed, shards, clients, keys, commits, abort rate, first errors, reclamation counters. */
  multiple: number;
  seed: number;
  shards: number;
  clients: number;
  keys: number;
  commits: number;
  abortRate: number;
  firstErrors: string[];
  reclaimed: { superseded: number; dead: number; returned: number; refused: number };
  ms: number;
}

/** What the soak runs of an app (the `soak` field of its crash-test record). */
export interface SoakEntry {
  /** `items` (arena items per shard) must lie in [lo, hi] with this many clients. */
  items(clients: number): readonly [number, number];
  /** Its deployment and workload, on options already checked. */
  run(o: SoakOptions): Promise<SoakReport>;
  /** The app `runSoak` drives when none is named. */
  default?: boolean;
}

const SHARDS = 3;

async function soakTx(o: SoakOptions): Promise<SoakReport> {
  const started = Date.now();
  const itemsPerShard = o.items ?? TX_APP_DEFAULTS.items;
  const keysPerShard = TX_APP_DEFAULTS.keysPerShard;
  const initial = 100;
  const local = startLocalShards<object, TxAppServer>(txApp as never, SHARDS, (shard) => ({ shard, shards: SHARDS, items: itemsPerShard, value: 'balance', initialBalance: initial }), { nic: { drain: 'eager' }, seed: o.seed });
  const capacityItems = SHARDS * itemsPerShard;
  const total = o.multiple * capacityItems;
  const keys = SHARDS * keysPerShard;
  const hot = SHARDS * 2; // accounts 0..hot-1 take 80 % of the picks: conflicts
  const report = newReport(o, capacityItems, { shards: SHARDS, clients: o.clients, keys });
  const inUse = (): number => local.servers.reduce((n, s) => n + s.itemsInUse, 0);
  const i64 = (v: bigint): Uint8Array => {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigInt64(0, v, true);
    return b;
  };
  const bal = (b: Uint8Array): bigint => new DataView(b.buffer, b.byteOffset, 8).getBigInt64(0, true);
  const clients: TxClient[] = [];
  try {
    let issued = 0;
    const client = async (c: number): Promise<void> => {
      const conns: ShardConn[] = [];
      for (let s = 0; s < SHARDS; s++) {
        const { qp, welcome } = local.connect(s);
        conns[s] = parseTxWelcome(qp, welcome);
      }
      const tx = new TxClient((s) => conns[s], { client: c, incarnation: 1, clock: systemClock, faults: {} });
      clients.push(tx);
      const prng = createPrng((o.seed * 31 + c) >>> 0);
      const pick = (): number => (prng.int(0, 9) < 8 ? prng.int(0, hot - 1) : prng.int(0, keys - 1));
      while (issued < total) {
        issued++;
        const a = pick();
        let b = pick();
        if (b === a) b = (a + 1) % keys;
        try {
          await tx.begin();
          const va = bal(await tx.read(a));
          const vb = bal(await tx.read(b));
          await tx.write(a, i64(va - 1n));
          await tx.write(b, i64(vb + 1n));
          const out = await tx.commit();
          if (out.status === 'committed') report.commits++;
          else if (out.status === 'aborted' && out.code === TxErrorCodes.CONFLICT) report.aborts++;
          else recordError(report, `client ${c}: ${out.status} ${out.code ?? ''}`);
        } catch (e) {
          tx.rollback();
          recordError(report, `client ${c}: ${e instanceof Error ? e.message : String(e)}`);
        }
        afterOperation(report, o, total, inUse, 1);
      }
    };
    await Promise.all(Array.from({ length: o.clients }, (_, c) => client(c)));
    // End checks: conservation, audits, no leaked item once idle.
    const tx = clients[0]!;
    await tx.begin();
    let sum = 0n;
    for (let k = 0; k < keys; k++) sum += bal(await tx.read(k));
    tx.rollback();
    if (sum !== BigInt(keys * initial)) report.violations.push(`bank: the accounts sum to ${sum}, not ${keys * initial}`);
    for (const s of local.servers) {
      s.sweep(); // the NIC is idle: what is still in its grace period goes back
      for (const p of s.audit()) report.violations.push(`shard ${s.geometry.shard} audit: ${p.kind}: ${p.detail}`);
      if (s.itemsInUse !== keysPerShard) report.violations.push(`shard ${s.geometry.shard}: ${s.itemsInUse} items in use once idle, want ${keysPerShard} (the installed values): ${s.itemsInUse - keysPerShard} leaked`);
      report.reclaimed.superseded += s.sweepStats.superseded;
      report.reclaimed.dead += s.sweepStats.dead;
      report.reclaimed.returned += s.sweepStats.returned;
      report.reclaimed.refused += s.sweepStats.refused;
    }
    report.abortRate = report.operations === 0 ? 0 : report.aborts / report.operations;
    if (report.abortRate < 0.2) report.violations.push(`workload: ${(report.abortRate * 100).toFixed(1)} % aborts, below the 20 % the soak asks of itself`);
    checkHighWater(report);
  } finally {
    local.close();
  }
  report.ms = Date.now() - started;
  return report;
}
/** A report with nothing counted yet. */
function newReport(o: SoakOptions, capacityItems: number, shape: { shards: number; clients: number; keys: number }): SoakReport {
  return {
    app: o.app,
    operations: 0,
    capacityItems,
    highWaterItems: 0,
    highWaterAt5x: 0,
    aborts: 0,
    errors: 0,
    violations: [],
    multiple: o.multiple,
    seed: o.seed,
    ...shape,
    commits: 0,
    abortRate: 0,
    firstErrors: [],
    reclaimed: { superseded: 0, dead: 0, returned: 0, refused: 0 },
    ms: 0,
  };
}

/** Counts an operation that errored (the first 5 messages are kept). */
function recordError(report: SoakReport, e: unknown): void {
  report.errors++;
  if (report.firstErrors.length < 5) report.firstErrors.push(e instanceof Error ? e.message : String(e));
}

/** After each operation: counts it, samples the items in use every `every` operations, reports progress per capacity. */
function afterOperation(report: SoakReport, o: SoakOptions, total: number, inUse: () => number, every: number): void {
  report.operations++;
  if (report.operations % every === 0) {
    const n = inUse();
    if (n > report.highWaterItems) report.highWaterItems = n;
    if (report.operations <= 5 * report.capacityItems) report.highWaterAt5x = report.highWaterItems;
  }
  if (report.operations % report.capacityItems === 0) o.progress?.(report.operations, total);
}

/** The end check on memory: the high water at N × within 1 % of the capacity of the one at 5 ×. */
function checkHighWater(report: SoakReport): void {
  if (report.highWaterItems > report.highWaterAt5x + Math.ceil(0.01 * report.capacityItems)) {
    report.violations.push(`high water grew: ${report.highWaterItems} items in use at ${report.multiple} ×, ${report.highWaterAt5x} at 5 × (more than 1 % of ${report.capacityItems})`);
  }
}

/** Two values, or two absences, are the same. */
function sameValue(a: Uint8Array | null | undefined, b: Uint8Array | null | undefined): boolean {
  return a == null || b == null ? (a == null) === (b == null) : a.length === b.length && a.every((x, i) => x === b[i]);
}


/**
 * PRISM-KV: one node with the default layout (every size class: `capacityItems` is their total, or
 * `items` per class when given), one PrismKvClient (its superseded buffers go back through return
 * batches). Operations on 64 keys: 50 % PUT (a value of a random class), 25 % DELETE, 25 % GET
 * checked against a model of the last write (a mismatch is a violation). `aborts` is 0 (KV has none).
 * Items in use = arena items not on the free lists, sampled every 16 operations. End checks: the
 * allocator audit, every key against the model, and no leak once the client's returns are flushed
 * (items in use = one item per key ever written: a live value or a tombstone).
 */
async function soakKv(o: SoakOptions): Promise<SoakReport> {
  const started = Date.now();
  const classes = KV_LAYOUT_DEFAULTS.classes.map((c) => ({ sizeBytes: c.sizeBytes, count: o.items ?? c.count }));
  const local = startLocalShards<object, KvAppServer>(kvApp as never, 1, () => ({ system: 'prism', layout: { ...KV_LAYOUT_DEFAULTS, classes } }), { seed: o.seed });
  const server = local.servers[0]!.kv as PrismKvServer;
  const capacityItems = classes.reduce((n, c) => n + c.count, 0);
  const total = o.multiple * capacityItems;
  const keys = 64;
  const report = newReport(o, capacityItems, { shards: 1, clients: 1, keys });
  const inUse = (): number => capacityItems - [...server.freeLists().values()].reduce((n, l) => n + l.length, 0);
  const { qp, welcome } = local.connect(0);
  const addr = JSON.parse(new TextDecoder().decode(welcome)) as { rkey: number; base: number };
  const kv = await PrismKvClient.connect(qp, addr);
  const prng = createPrng(o.seed >>> 0);
  const model = new Map<number, Uint8Array | undefined>();
  const sizes = classes.map((c) => c.sizeBytes - 48).filter((n) => n > 0);
  let violations = 0;
  try {
    for (let i = 0; i < total; i++) {
      const k = prng.int(0, keys - 1);
      const r = prng.int(0, 3);
      try {
        if (r <= 1) {
          const v = new Uint8Array(prng.int(1, sizes[prng.int(0, sizes.length - 1)]!));
          v.fill(i & 0xff);
          await kv.put(`k${k}`, v);
          model.set(k, v);
          report.commits++;
        } else if (r === 2) {
          await kv.delete(`k${k}`);
          if (model.has(k)) model.set(k, undefined);
          report.commits++;
        } else {
          const got = await kv.get(`k${k}`);
          if (!sameValue(got, model.get(k)) && violations++ < 5) report.violations.push(`key k${k}: GET returned ${got?.length ?? 'nothing'} bytes, the last write left ${model.get(k)?.length ?? 'nothing'}`);
        }
      } catch (e) {
        recordError(report, e);
      }
      afterOperation(report, o, total, inUse, 16);
    }
    await kv.flushReturns();
    for (const [k, v] of model) {
      const got = await kv.get(`k${k}`);
      if (!sameValue(got, v)) report.violations.push(`end: key k${k} reads ${got?.length ?? 'nothing'} bytes, the last write left ${v?.length ?? 'nothing'}`);
    }
    for (const p of local.servers[0]!.audit()) report.violations.push(`audit: ${p.kind}: ${p.detail}`);
    const st = server.stats;
    report.reclaimed = { superseded: st.returnsAccepted, dead: 0, returned: st.returnsAccepted, refused: Object.values(st.returnsRefused).reduce((n, x) => n + x, 0) };
    if (inUse() !== model.size) report.violations.push(`${inUse()} items in use once the returns are flushed, want ${model.size} (one per key written): ${inUse() - model.size} leaked`);
    checkHighWater(report);
  } finally {
    local.close();
  }
  report.ms = Date.now() - started;
  return report;
}

/**
 * PRISM-RS: 3 replicas with the default layout (`items` per size class when given; `capacityItems`
 * = replicas × items per replica), `clients` writers taking turns one operation at a time (so the
 * last write is known and every read is checked against it), on 64 blocks: 60 % overwrites (a
 * value of a random class), 40 % reads. Items in use = arena items not on the replicas' free lists,
 * sampled every 16 operations. End checks: every block against the model, every replica's audit,
 * and no leak once the clients settled (every replica holds one item per block written).
 */
async function soakRs(o: SoakOptions): Promise<SoakReport> {
  const started = Date.now();
  const replicas = 3;
  const layout = RS_LAYOUT_DEFAULTS;
  const classes = layout.classes.map((c) => ({ sizeBytes: c.sizeBytes, count: o.items ?? c.count }));
  const cluster = RsLocalCluster.start({ replicas, app: { layout: { ...layout, classes } }, seed: o.seed });
  const perReplica = classes.reduce((n, c) => n + c.count, 0);
  const capacityItems = replicas * perReplica;
  const total = o.multiple * capacityItems;
  const blocks = Math.min(64, layout.blocks);
  const report = newReport(o, capacityItems, { shards: replicas, clients: o.clients, keys: blocks });
  const inUseAt = (i: number): number => perReplica - [...cluster.server(i).freeLists().values()].reduce((n, l) => n + l.length, 0);
  const inUse = (): number => Array.from({ length: replicas }, (_, i) => inUseAt(i)).reduce((a, b) => a + b, 0);
  const clients: RsClient[] = Array.from({ length: o.clients }, () => cluster.client());
  const prng = createPrng(o.seed >>> 0);
  const model = new Map<number, Uint8Array>();
  const sizes = classes.map((c) => c.sizeBytes - RS_ITEM_HEADER_BYTES).filter((n) => n > 0);
  let violations = 0;
  try {
    for (let i = 0; i < total; i++) {
      const c = clients[i % clients.length]!;
      const b = prng.int(0, blocks - 1);
      try {
        if (prng.int(0, 9) < 6) {
          const v = new Uint8Array(prng.int(1, sizes[prng.int(0, sizes.length - 1)]!));
          v.fill(i & 0xff);
          await c.write(b, v);
          model.set(b, v);
          report.commits++;
        } else {
          const got = await c.read(b);
          if (!sameValue(got, model.get(b)) && violations++ < 5) report.violations.push(`block ${b}: read returned ${got?.length ?? 'nothing'} bytes, the last write left ${model.get(b)?.length ?? 'nothing'}`);
        }
      } catch (e) {
        recordError(report, e);
      }
      afterOperation(report, o, total, inUse, 16);
    }
    for (const c of clients) await c.settle();
    for (const [b, v] of model) {
      const got = await clients[0]!.read(b);
      if (!sameValue(got, v)) report.violations.push(`end: block ${b} reads ${got?.length ?? 'nothing'} bytes, the last write left ${v.length}`);
    }
    for (const c of clients) await c.settle();
    for (let i = 0; i < replicas; i++) {
      const st = cluster.server(i).stats;
      report.reclaimed.superseded += st.returnsAccepted;
      report.reclaimed.returned += st.returnsAccepted;
      report.reclaimed.refused += Object.values(st.returnsRefused).reduce((n, x) => n + x, 0);
      for (const p of cluster.server(i).audit()) report.violations.push(`replica ${i} audit: ${p.kind}: ${p.detail}`);
      const n = inUseAt(i);
      if (n !== model.size) report.violations.push(`replica ${i}: ${n} items in use once the clients settled, want ${model.size} (one per block written): ${n - model.size} leaked`);
    }
    checkHighWater(report);
  } finally {
    await cluster.close();
  }
  report.ms = Date.now() - started;
  return report;
}

/** PRISM-TX's soak: any number of items from the installed keys plus two per client. */
export const TX_SOAK: SoakEntry = Object.freeze({ items: (clients: number) => [TX_APP_DEFAULTS.keysPerShard + 2 * clients, 1 << 20] as const, run: soakTx, default: true });
/** PRISM-KV's soak: 64 .. 2^16 items per size class. */
export const KV_SOAK: SoakEntry = Object.freeze({ items: () => [64, 1 << 16] as const, run: soakKv });
/** PRISM-RS's soak: 64 .. 2^16 items per size class. */
export const RS_SOAK: SoakEntry = Object.freeze({ items: () => [64, 1 << 16] as const, run: soakRs });
