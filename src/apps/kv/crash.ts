/**
 * The PRISM-KV crash-test engine (DESIGN §8), callable from tests and from a CLI:
 * runKvCrashTest({ seed, engine, imagesPerPoint, mutant, … }) → { crashPoints, imagesChecked, violations }.
 *
 * 1. A workload of concurrent clients (seeded fabric: their chains interleave op by op) runs
 *    PUT / GET / DELETE over a small KV area in a traced region (DDIO on, so NIC writes land in
 *    volatile CPU lines until a FLUSH persists them). Every crash point captures the crash state
 *    and the logical time; every operation records its call and return times.
 * 2. For each crash point (all of them, or a seeded sample past crashPointsMax) and each image of
 *    its state (random engine, seeded; or every image when few): open the image in a fresh region
 *    with a fresh NIC, try a PUT while recovery has not run (it must be refused, not fail as "full"),
 *    recover, replay the return batches clients sent before the crash (they carry the old epoch and
 *    must be refused), then check:
 *    - index: every slot empty or a valid item of a key whose window holds it, bound and version
 *      consistent, no buffer or key in two slots (no slot points at garbage);
 *    - allocator: free lists ⊎ reachable buffers = the arena (no leak, no double free);
 *    - lost: every acknowledged PUT / DELETE is reflected (acknowledged then overwritten by an older
 *      write = lost);
 *    - linearizability (src/check): the history cut at the crash (operations in flight have an
 *      unknown outcome) plus a read of every key after recovery.
 * 3. Once per image (when recoveryCrash): crash again at a seeded crash point of its recovery,
 *    recover that image and check it the same way.
 *
 * Randomness comes from the seed only; the same seed replays the same run.
 */
import { InProcessFabric, QueuePair, Rnic, Wr, type DrainPolicy } from '../../../flush/index.js';
import { countImages, crashImages, createPrng, materialize, PmemRegion, seededEntropy, type CrashState, type Prng } from '../../../pmem/index.js';
import { checkLinearizable, kvModel, type KvInput, type KvOutput, type Operation } from '../../check/linearizability.js';
import { PrismKvClient } from './client.js';
import { faultsFor, KV_MUTANTS, type KvFaultName, type KvFaults } from './faults.js';
import { homeSlot, KvErrorCodes, type KvGeometry, type KvLayoutOptions } from './layout.js';
import { PrismKvServer, RETURN_IMM } from './server.js';

export interface KvCrashTestOptions {
  seed: number;
  /** 'random': imagesPerPoint seeded images per crash point. 'exhaustive': every image of a point when it has at most exhaustiveMaxImages, else random. */
  engine: 'random' | 'exhaustive';
  imagesPerPoint: number;
  exhaustiveMaxImages: number;
  /** A mutant (KV_MUTANTS) or undefined for the real protocol. */
  mutant: KvFaultName | undefined;
  clients: number;
  opsPerClient: number;
  keys: number;
  /** Bound on crash points checked (a seeded sample beyond it). */
  crashPointsMax: number;
  /** Crash again during each image's recovery and check that image too. */
  recoveryCrash: boolean;
  /** Stop after this many violations (0: never). */
  stopAfterViolations: number;
  /** The server NIC's DDIO: true — its writes land in volatile CPU lines; false — straight to media, where a crash mid-drain leaves any subset of a message's words. */
  ddio: boolean;
  /** The workload server NIC's DMA drain policy (every policy is a legal NIC): 'lazy' (default), 'eager' (a chain's CAS result is visible to other QPs at once, before its FLUSH), 'onFlush'. */
  drain: DrainPolicy;
  /** 'lazy': most undrained NIC cache entries (the NIC's default when undefined). */
  lazyBound: number | undefined;
}

export const KV_CRASH_DEFAULTS: Readonly<KvCrashTestOptions> = Object.freeze({
  seed: 1,
  engine: 'random',
  imagesPerPoint: 8,
  exhaustiveMaxImages: 64,
  mutant: undefined,
  clients: 3,
  opsPerClient: 20,
  keys: 6,
  crashPointsMax: 400,
  recoveryCrash: true,
  stopAfterViolations: 0,
  ddio: true,
  drain: 'lazy',
  lazyBound: undefined,
});

export type KvViolationKind = 'index' | 'allocator' | 'lost' | 'linearizability' | 'read-error' | 'spurious-full' | 'recovery-error' | 'live-index' | 'live-allocator';

export interface KvViolation {
  kind: KvViolationKind;
  detail: string;
  /** Index of the crash point (-1 for the live state after the workload). */
  crashPoint: number;
  /** Image index within the crash point's images. */
  image: number;
  /** 'recovery': the image of a second crash during recovery. */
  phase: 'first' | 'recovery' | 'live';
}

export interface KvCrashTestResult {
  seed: number;
  mutant: KvFaultName | undefined;
  engine: 'random' | 'exhaustive';
  /** Crash points the workload raised. */
  crashPointsTotal: number;
  /** Crash points checked. */
  crashPoints: number;
  imagesChecked: number;
  /** Of which: images of a crash during recovery. */
  recoveryImagesChecked: number;
  /** Images enumerated exhaustively (the rest were sampled). */
  exhaustiveImages: number;
  operations: number;
  acknowledged: number;
  violations: KvViolation[];
  /** Violations by kind. */
  violationCounts: Record<string, number>;
  /** Linearizability checks that hit their search bound (neither verdict). */
  undecided: number;
  /** How to replay this run. */
  replay: string;
  /** The workload's history without a crash (operations that failed have an unknown outcome). */
  history: Array<Operation<KvInput, KvOutput>>;
}

/** The KV area the crash workload uses: small, so keys collide and buffers run short. */
export const CRASH_LAYOUT: Readonly<Partial<KvLayoutOptions>> = Object.freeze({
  slotCount: 12,
  probeSlots: 4,
  keyBytesMax: 16,
  classes: [
    { sizeBytes: 64, count: 12 },
    { sizeBytes: 128, count: 4 },
  ],
  mailboxBuffers: 14,
});

const REGION_BYTES = 32 * 1024;

interface Op extends Operation<KvInput, KvOutput> {
  error?: string;
}

interface CrashCapture {
  time: number;
  state: CrashState;
}

function validate(options: Partial<KvCrashTestOptions>): KvCrashTestOptions {
  if (options === null || typeof options !== 'object') throw new TypeError('options must be an object');
  const o = { ...KV_CRASH_DEFAULTS, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) } as KvCrashTestOptions;
  if (!Number.isSafeInteger(o.seed)) throw new TypeError(`seed must be an integer, got ${String(o.seed)}`);
  if (o.engine !== 'random' && o.engine !== 'exhaustive') throw new TypeError(`engine must be 'random' or 'exhaustive', got ${String(o.engine)}`);
  if (o.mutant !== undefined && !KV_MUTANTS.some((m) => m.name === o.mutant)) throw new TypeError(`mutant must be one of ${KV_MUTANTS.map((m) => m.name).join(', ')}, got ${String(o.mutant)}`);
  const int = (name: keyof KvCrashTestOptions, lo: number, hi: number): void => {
    const v = o[name];
    if (!Number.isSafeInteger(v) || (v as number) < lo || (v as number) > hi) throw new RangeError(`${name} must be an integer in [${lo}, ${hi}], got ${String(v)}`);
  };
  int('imagesPerPoint', 1, 100_000);
  int('exhaustiveMaxImages', 1, 1_000_000);
  int('clients', 1, 6);
  int('opsPerClient', 1, 1000);
  int('keys', 1, 8);
  int('crashPointsMax', 1, 1_000_000);
  int('stopAfterViolations', 0, 1_000_000);
  if (o.drain !== 'eager' && o.drain !== 'lazy' && o.drain !== 'onFlush') throw new TypeError(`drain must be 'eager', 'lazy' or 'onFlush', got ${String(o.drain)}`);
  if (o.lazyBound !== undefined && (!Number.isSafeInteger(o.lazyBound) || o.lazyBound < 0)) throw new RangeError(`lazyBound must be an integer >= 0, got ${String(o.lazyBound)}`);
  if (typeof o.ddio !== 'boolean') throw new TypeError(`ddio must be a boolean, got ${String(o.ddio)}`);
  if (typeof o.recoveryCrash !== 'boolean') throw new TypeError(`recoveryCrash must be a boolean, got ${String(o.recoveryCrash)}`);
  return o;
}

const keyName = (i: number): string => `k${i}`;

/** Keys whose probe windows start at slot 0 or 3 (windows [0, 4) and [3, 7) share slot 3): collisions and races for free slots. */
function clusteredKeys(g: KvGeometry, n: number): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < n && i < 100_000; i++) {
    const h = homeSlot(g, te.encode(keyName(i)));
    const want = out.length % 2 === 0 && out.length < 4 ? 0 : 3;
    if (h === want || (out.length >= 4 && (h === 0 || h === 3))) out.push(keyName(i));
  }
  return out;
}

export async function runKvCrashTest(options: Partial<KvCrashTestOptions> = {}): Promise<KvCrashTestResult> {
  const o = validate(options);
  const faults = faultsFor(o.mutant);
  const prng = createPrng(o.seed);
  const w = await runWorkload(o, faults, prng.fork());
  const result: KvCrashTestResult = {
    seed: o.seed,
    mutant: o.mutant,
    engine: o.engine,
    crashPointsTotal: w.captures.length,
    crashPoints: 0,
    imagesChecked: 0,
    recoveryImagesChecked: 0,
    exhaustiveImages: 0,
    operations: w.ops.length,
    acknowledged: w.ops.filter((x) => x.ret !== undefined).length,
    violations: w.live,
    violationCounts: {},
    undecided: 0,
    history: w.ops.map(cutAt(Number.POSITIVE_INFINITY)),
    replay: `PMRPC_SEED=${o.seed}${o.mutant ? ` mutant=${o.mutant}` : ''} engine=${o.engine} imagesPerPoint=${o.imagesPerPoint}${o.ddio ? '' : ' ddio=false'}${o.drain === 'lazy' ? '' : ` drain=${o.drain}`}${o.lazyBound === undefined ? '' : ` lazyBound=${o.lazyBound}`}`,
  };
  // Which crash points: all, or a seeded sample.
  let points = w.captures.map((_, i) => i);
  if (points.length > o.crashPointsMax) {
    const pick = prng.fork();
    for (let i = points.length - 1; i > 0; i--) {
      const j = pick.int(0, i);
      [points[i], points[j]] = [points[j]!, points[i]!];
    }
    points = points.slice(0, o.crashPointsMax).sort((a, b) => a - b);
  }
  const stop = (): boolean => o.stopAfterViolations > 0 && result.violations.length >= o.stopAfterViolations;
  for (const p of points) {
    if (stop()) break;
    result.crashPoints++;
    const cap = w.captures[p]!;
    const exhaustive = o.engine === 'exhaustive' && countImages(cap.state) <= BigInt(o.exhaustiveMaxImages);
    const images = exhaustive ? crashImages(cap.state, { engine: 'exhaustive', maxImages: o.exhaustiveMaxImages }) : crashImages(cap.state, { engine: 'random', count: o.imagesPerPoint, seed: (o.seed * 7919 + p) | 0 });
    for (const img of images) {
      if (stop()) break;
      result.imagesChecked++;
      if (exhaustive) result.exhaustiveImages++;
      const bytes = materialize(cap.state, img);
      const ctx: ImageCtx = { o, faults, w, time: cap.time, crashPoint: p, image: img.index, result, prng: createPrng((o.seed * 104729 + p * 131 + img.index) | 0) };
      await checkImage(ctx, bytes, 'first');
    }
  }
  for (const v of result.violations) result.violationCounts[v.kind] = (result.violationCounts[v.kind] ?? 0) + 1;
  return result;
}

// ------------------------------------------------------------------ the workload

interface Workload {
  ops: Op[];
  captures: CrashCapture[];
  /** Return batches sent, with their send time, per client. */
  returns: Array<{ time: number; client: number; payload: Uint8Array }>;
  keys: string[];
  live: KvViolation[];
}

async function runWorkload(o: KvCrashTestOptions, faults: KvFaults, prng: Prng): Promise<Workload> {
  const region = PmemRegion.createInMemory(REGION_BYTES, { tracing: true, entropy: seededEntropy(prng.fork()) });
  PrismKvServer.format(region, CRASH_LAYOUT);
  const nic = new Rnic(region, { ddio: o.ddio, drain: o.drain, lazyBound: o.lazyBound, entropy: seededEntropy(prng.fork()) });
  const fabric = new InProcessFabric(nic, { delivery: 'seeded', prng: prng.fork() });
  // The workload's server is a freshly formatted one: recovery faults act on the servers that recover crash images.
  const server = PrismKvServer.open(region, nic);
  let now = 0;
  const ops: Op[] = [];
  const captures: CrashCapture[] = [];
  const returns: Workload['returns'] = [];
  const keys = clusteredKeys(server.geometry, o.keys);
  const clients: PrismKvClient[] = [];
  for (let c = 0; c < o.clients; c++) {
    const client = await PrismKvClient.connect(new QueuePair(fabric.connect(server.accept())), server.address, {
      faults,
      returnBatch: 2,
      onReturnBatch: (payload) => returns.push({ time: ++now, client: c, payload: payload.slice() }),
    });
    clients.push(client);
  }
  region.setCrashPointHook(() => captures.push({ time: ++now, state: region.crashState() }));
  const run = async (c: number): Promise<void> => {
    const client = clients[c]!;
    const r = prng.fork();
    for (let n = 0; n < o.opsPerClient; n++) {
      // Each client starts with a PUT of a new key of the same window as the others': they race for one free slot.
      const key = n === 0 ? keys[c % keys.length]! : keys[r.int(0, keys.length - 1)]!;
      const roll = n === 0 ? 0 : r.int(0, 99);
      let input: KvInput;
      if (roll < 45) {
        // Unique values of varied lengths: some items fit 64 B, some need 128 B.
        const value = `c${c}n${n}`.padEnd(r.int(4, 80), '.');
        input = { kind: 'put', key, value };
      } else if (roll < 85) input = { kind: 'get', key };
      else input = { kind: 'delete', key };
      const op: Op = { client: c, input, output: undefined, call: ++now, ret: undefined };
      ops.push(op);
      try {
        if (input.kind === 'put') await client.put(key, te.encode(input.value));
        else if (input.kind === 'delete') await client.delete(key);
        else {
          const v = await client.get(key);
          op.output = v === undefined ? null : td.decode(v);
        }
        if (input.kind !== 'get') op.output = null;
        op.ret = ++now;
      } catch (e) {
        // A failed operation (full, contended, corrupt) has an unknown outcome for the checkers.
        op.error = e instanceof Error ? e.message : String(e);
        if (clients[c]!.qp.state === 'error') return;
      }
    }
  };
  await Promise.all(clients.map((_, c) => run(c)));
  region.setCrashPointHook(undefined);
  const live: KvViolation[] = [];
  for (const p of server.inspect().problems) live.push({ kind: 'live-index', detail: `slot ${p.slot}: ${p.problem}`, crashPoint: -1, image: -1, phase: 'live' });
  // Without a crash, once every client returned its replaced buffers: free ⊎ reachable = the arena.
  for (const c of clients) if (c.qp.state === 'ready') await c.flushReturns().catch(() => undefined);
  const audit = server.auditAllocator();
  const bad = { leaked: audit.leaked.length, doubleFree: audit.doubleFree.length, freeAndReachable: audit.freeAndReachable.length, foreign: audit.foreign.length };
  if (Object.values(bad).some((n) => n > 0)) live.push({ kind: 'live-allocator', detail: `after the workload and every return: ${JSON.stringify(bad)}`, crashPoint: -1, image: -1, phase: 'live' });
  const lin = checkLinearizable(kvModel, ops.map(cutAt(Number.POSITIVE_INFINITY)));
  if (lin.ok === false) live.push({ kind: 'linearizability', detail: `live history: ${lin.reason}: ${lin.operations.map((x) => kvModel.describe!(x)).join('; ')}`, crashPoint: -1, image: -1, phase: 'live' });
  server.close();
  return { ops, captures, returns, keys, live };
}

/** The history as of a crash at `t`: completed operations keep their output; the rest are unknown. */
function cutAt(t: number): (op: Op) => Operation<KvInput, KvOutput> {
  return (op) =>
    op.ret !== undefined && op.ret < t && op.error === undefined
      ? { client: op.client, input: op.input, output: op.output, call: op.call, ret: op.ret }
      : { client: op.client, input: op.input, output: undefined, call: op.call, ret: undefined };
}

// ------------------------------------------------------------------ one image

interface ImageCtx {
  o: KvCrashTestOptions;
  faults: KvFaults;
  w: Workload;
  time: number;
  crashPoint: number;
  image: number;
  result: KvCrashTestResult;
  prng: Prng;
}

const te = new TextEncoder();
const td = new TextDecoder();

async function checkImage(ctx: ImageCtx, bytes: Uint8Array, phase: 'first' | 'recovery'): Promise<void> {
  const { faults, w, result } = ctx;
  const violate = (kind: KvViolationKind, detail: string): void => {
    result.violations.push({ kind, detail, crashPoint: ctx.crashPoint, image: ctx.image, phase });
  };
  const region = PmemRegion.openImage(bytes, { tracing: true });
  const nic = new Rnic(region, { entropy: seededEntropy(ctx.prng.fork()) });
  const fabric = new InProcessFabric(nic);
  let server: PrismKvServer;
  try {
    server = PrismKvServer.open(region, nic, { faults, deferRecovery: true });
  } catch (e) {
    violate('recovery-error', `open: ${String(e)}`);
    return;
  }
  const connect = (): Promise<PrismKvClient> => PrismKvClient.connect(new QueuePair(fabric.connect(server.accept())), server.address);
  // A client that reconnects before the free lists are rebuilt: its PUT must be refused (retry later), not told "full".
  if (phase === 'first') {
    const early = await connect();
    try {
      await early.put('probe', te.encode('p'));
      violate('spurious-full', 'a PUT succeeded before recovery rebuilt the free lists');
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (code === KvErrorCodes.FULL) violate('spurious-full', 'ALLOCATE ran before the free lists were rebuilt: the PUT failed as "full"');
      // RECOVERING is the answer; INDEX_FULL / CORRUPT can come from the unrepaired index a crash left (recovery has not run yet).
      else if (code !== KvErrorCodes.RECOVERING && code !== KvErrorCodes.INDEX_FULL && code !== KvErrorCodes.CORRUPT) violate('recovery-error', `early PUT: ${String(e)}`);
    }
  }
  // Recovery, with a crash point hook when this image is to crash again during it.
  const recoveryStates: CrashState[] = [];
  if (phase === 'first' && ctx.o.recoveryCrash) region.setCrashPointHook(() => recoveryStates.push(region.crashState()));
  try {
    server.recover();
  } catch (e) {
    violate('recovery-error', `recover: ${String(e)}`);
    return;
  } finally {
    region.setCrashPointHook(undefined);
  }
  // Return batches sent before the crash arrive now (a slow network, or a client resending).
  const stale = w.returns.filter((r) => r.time < ctx.time);
  const lastPerClient = new Map<number, Uint8Array>();
  for (const r of stale) lastPerClient.set(r.client, r.payload);
  for (const payload of lastPerClient.values()) {
    const qp = new QueuePair(fabric.connect(server.accept()));
    const reply = new Promise<void>((resolve) => qp.onNotify(() => resolve()));
    await qp.postChain([Wr.send(payload, RETURN_IMM)]);
    await reply;
  }
  // Index and allocator invariants.
  const view = server.inspect();
  for (const p of view.problems) violate('index', `slot ${p.slot}: ${p.problem}`);
  const audit = server.auditAllocator();
  if (audit.leaked.length > 0) violate('allocator', `${audit.leaked.length} buffers leaked (neither free nor reachable), e.g. ${audit.leaked.slice(0, 3).join(', ')}`);
  if (audit.doubleFree.length > 0) violate('allocator', `${audit.doubleFree.length} buffers on a free list twice, e.g. ${audit.doubleFree.slice(0, 3).join(', ')}`);
  if (audit.freeAndReachable.length > 0) violate('allocator', `${audit.freeAndReachable.length} buffers free and reachable, e.g. ${audit.freeAndReachable.slice(0, 3).join(', ')}`);
  if (audit.foreign.length > 0) violate('allocator', `${audit.foreign.length} free-list entries are not buffers of their class`);
  // Read every key after recovery.
  const reader = await connect();
  const history = w.ops.filter((op) => op.call < ctx.time).map(cutAt(ctx.time));
  let t = ctx.time + 1;
  const finals = new Map<string, string | null>();
  for (const key of w.keys) {
    try {
      const v = await reader.get(key);
      const out = v === undefined ? null : td.decode(v);
      finals.set(key, out);
      history.push({ client: -1, input: { kind: 'get', key }, output: out, call: t++, ret: t++ });
    } catch (e) {
      violate('read-error', `get(${key}) after recovery: ${String(e)}`);
    }
  }
  for (const d of lostWrites(history, finals)) violate('lost', d);
  const lin = checkLinearizable(kvModel, history);
  if (lin.ok === false) violate('linearizability', `${lin.reason}: ${lin.operations.map((x) => kvModel.describe!(x)).join('; ')}`);
  else if (lin.ok === 'unknown') result.undecided++;
  server.close();
  // A second crash, during this image's recovery.
  if (phase === 'first' && recoveryStates.length > 0) {
    const st = recoveryStates[ctx.prng.int(0, recoveryStates.length - 1)]!;
    const imgs = [...crashImages(st, { engine: 'random', count: 3, seed: ctx.prng.u32() | 0 })];
    const img = imgs[ctx.prng.int(0, imgs.length - 1)]!;
    result.imagesChecked++;
    result.recoveryImagesChecked++;
    await checkImage(ctx, materialize(st, img), 'recovery');
  }
}

/**
 * Jepsen-style "acknowledged then absent": for each key, the value read after recovery must come
 * from a write (or the initial absence) that no acknowledged write to the key followed in real
 * time. Returns a description of each loss. Reads after recovery have client -1.
 */
export function lostWrites(history: ReadonlyArray<Operation<KvInput, KvOutput>>, finals: ReadonlyMap<string, string | null>): string[] {
  const out: string[] = [];
  for (const [key, got] of finals) {
    const writes = history.filter((h) => h.input.key === key && h.input.kind !== 'get' && h.client !== -1);
    const acked = writes.filter((h) => h.ret !== undefined);
    const producers: Array<{ ret: number | undefined }> = writes.filter((h) => (got === null ? h.input.kind === 'delete' : h.input.kind === 'put' && h.input.value === got));
    if (got === null) producers.push({ ret: -1 }); // the initial absence
    if (producers.length === 0) {
      out.push(`get(${key}) after recovery returned ${got}, which no write wrote`);
      continue;
    }
    const superseded = (p: { ret: number | undefined }): boolean => p.ret !== undefined && acked.some((a) => a !== p && p.ret! < a.call);
    if (producers.every(superseded)) {
      const last = acked.reduce((a, b) => (b.ret! > a.ret! ? b : a));
      out.push(`acknowledged ${describeInput(last.input)} [${last.call}, ${last.ret}] lost: get(${key}) after recovery returned ${got === null ? 'absent' : got}`);
    }
  }
  return out;
}

/** The history as of a crash at `t`: completed operations keep their output; the rest are unknown. */
export function cutHistoryAt<T extends Operation<KvInput, KvOutput> & { error?: string }>(ops: readonly T[], t: number): Array<Operation<KvInput, KvOutput>> {
  return ops.filter((op) => op.call < t).map(cutAt(t));
}

function describeInput(i: KvInput): string {
  return i.kind === 'put' ? `put(${i.key}, ${i.value})` : `${i.kind}(${i.key})`;
}
