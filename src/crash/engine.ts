/**
 * The crash-test engine behind `pmrpc crash-test` (DESIGN §8), in-process and seeded.
 *
 * 1. Workload: a server (DurableRpcServer on an Rnic over a traced region) and a few clients
 *    (DurableRpcClient over the seeded in-process fabric) run a non-idempotent handler: it appends
 *    a digest of each request (client, sequence, payload checksum, position) to a log in the
 *    application area and bumps a counter on another line. At every crash point (§2.1: drains,
 *    write-backs, NIC drains, completions) the crash state is taken — media, pending CPU-line
 *    pieces and the undrained NIC cache (a partially placed message: any subset of its words) —
 *    with what the clients had been told was durable at that moment.
 * 2. Each state is expanded into images (random or exhaustive engine); each image is recovered in
 *    a fresh region, crashed once more at a sampled crash point of its own recovery (recovered and
 *    checked too), then clients reconnect through the real RPC handshake and resend from their
 *    resume points, and the region is reopened from media alone.
 * 3. Checks: every request whose `durable` resolved is applied exactly once (digests compared);
 *    nothing applied that was never sent; FIFO per client without holes; after the resume every
 *    request sent is applied exactly once; the region reopens cleanly to the same state.
 *
 * Deterministic: time is never read here (the CLI measures it), randomness comes from the seed,
 * and the images of crash point p depend only on (seed, p), so `--point p` reproduces one.
 */
import {
  countImages,
  crashImages,
  crc32c,
  createPrng,
  materialize,
  PmemRegion,
  seededEntropy,
  type CrashState,
  type Prng,
} from '../../pmem/index.js';
import { InProcessFabric, Rnic } from '../../flush/index.js';
import { layoutBytes, RecoveryStore, type AppView, type LayoutOptions, type RecoveryFaults } from '../../recovery/index.js';
import {
  checkStrategy,
  connectInProcess,
  DurableRpcClient,
  DurableRpcServer,
  type RpcFaults,
  type RpcHandler,
  type RpcStrategy,
} from '../rpc/index.js';
import { QueuePair } from '../../flush/index.js';
import { findMutant } from '../testing/crash/rpc-mutants.js';

export { DIGEST_BYTES, LOG_BASE, METHOD, digestHandler, readDigestLog, type DigestEntry } from '../apps/rpc/index.js';
import { DIGEST_BYTES, LOG_BASE, METHOD, digestHandler, readDigestLog } from '../apps/rpc/index.js';
/** Most microtask hops a server CPU pass is delayed by in the workload. */
export const CPU_DELAY_HOPS_MAX = 24;
/** Bound of the microtask rounds the workload may take to answer every request (beyond it: 'stalled'). */
export const SETTLE_ROUNDS_BASE = 20_000;
export const SETTLE_ROUNDS_PER_REQUEST = 1_000;
export type ImageEngine = 'random' | 'exhaustive';

export interface CrashTestOptions {
  strategy: RpcStrategy;
  ddio: boolean;
  seed: number;
  /** Requests in all (spread over the clients). */
  requests: number;
  clients: number;
  /** Images per crash state (random engine; states with at most this many images are enumerated). */
  imagesPerPoint: number;
  engine: ImageEngine;
  /** Exhaustive engine: most images of one state (beyond it: imagesPerPoint random ones, counted in `sampledStates`). */
  exhaustiveMax: number;
  /** Most crash points checked; beyond it they are sampled with a stride. */
  pointsMax: number;
  /** Check only this crash point (reproduces one violation). */
  point: number | undefined;
  /** A mutant (crash-test --list-mutants). */
  mutant: string | undefined;
  /** Crash once more during each image's recovery. */
  nested: boolean;
  /** Reconnect the clients through the RPC handshake after recovery, on every n-th image (0 = never). */
  resumeEvery: number;
  /** Stop after this many violations. */
  violationsMax: number;
  /** Probability per store of an unasked write-back of a dirty line in the workload (eviction crash points). */
  eviction: number;
  /** Progress callback (images checked so far, crash points to check, points done). */
  onProgress: ((p: { imagesChecked: number; points: number; pointsDone: number }) => void) | undefined;
}

export const CRASH_TEST_DEFAULTS: Readonly<CrashTestOptions> = Object.freeze({
  strategy: 'wflush',
  ddio: true,
  seed: 1,
  requests: 64,
  clients: 3,
  imagesPerPoint: 4,
  engine: 'random',
  exhaustiveMax: 4096,
  pointsMax: 2000,
  point: undefined,
  mutant: undefined,
  nested: true,
  resumeEvery: 1,
  violationsMax: 20,
  eviction: 0,
  onProgress: undefined,
});

export interface Violation {
  point: number;
  kind: string;
  image: number | undefined;
  message: string;
  command: string;
}

export interface CrashTestResult {
  strategy: RpcStrategy;
  ddio: boolean;
  seed: number;
  mutant: string | null;
  requests: number;
  /** Crash points the workload passed. */
  crashPointsTotal: number;
  /** Crash points whose images were checked. */
  crashPoints: number;
  imagesChecked: number;
  nestedImagesChecked: number;
  resumesChecked: number;
  /** States whose images were sampled although the exhaustive engine was asked for. */
  sampledStates: number;
  /** Results kept in effect records, delivered at a reconnect after recovery, and checked. */
  keptResultsChecked: number;
  /** Requests acknowledged durable during the workload / applied at its end. */
  acknowledged: number;
  applied: number;
  violations: Violation[];
}

interface Snapshot {
  point: number;
  kind: string;
  /** clientId -> highest sequence issued. */
  sentUpTo: Map<number, number>;
  /** clientId -> highest sequence the client was told is durable. */
  acked: Map<number, number>;
}

/** Geometry of the workload's region: small rings and log, so both wrap many times. */
export function crashGeometry(requests: number, clients: number): Partial<LayoutOptions> {
  return { maxClients: clients, ringSlots: 4, slotBytes: 128, logRecords: 4, recordBytes: 128, appBytes: Math.ceil((LOG_BASE + DIGEST_BYTES * (requests + 8)) / 64) * 64 + 64 };
}

function mix(a: number, b: number, c = 0): number {
  let h = (a ^ Math.imul(b + 0x9e3779b9, 0x85ebca6b) ^ Math.imul(c + 0x7f4a7c15, 0xc2b2ae35)) | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  return h & 0x7fffffff;
}

/** Lets every microtask chain run: the in-process fabric, the CPU poller and the clients are all microtask-driven. */
async function settle(done: () => boolean, roundsMax: number): Promise<boolean> {
  for (let i = 0; i < roundsMax; i++) {
    if (done()) return true;
    await Promise.resolve();
  }
  return done();
}

export function resolveCrashTestOptions(options: Partial<CrashTestOptions>): CrashTestOptions {
  if (options === null || typeof options !== 'object') throw new TypeError(`options must be an object, got ${String(options)}`);
  const o = { ...CRASH_TEST_DEFAULTS, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) } as CrashTestOptions;
  checkStrategy(o.strategy);
  if (typeof o.ddio !== 'boolean') throw new TypeError(`ddio must be a boolean, got ${String(o.ddio)}`);
  if (!Number.isSafeInteger(o.seed)) throw new TypeError(`seed must be an integer, got ${String(o.seed)}`);
  const int = (name: keyof CrashTestOptions, min: number, max: number): void => {
    const v = o[name];
    if (!Number.isSafeInteger(v) || (v as number) < min || (v as number) > max) throw new RangeError(`${name} must be an integer in [${min}, ${max}], got ${String(v)}`);
  };
  int('requests', 1, 100_000);
  int('clients', 1, 64);
  int('imagesPerPoint', 1, 100_000);
  int('exhaustiveMax', 1, 1_000_000);
  int('pointsMax', 1, 10_000_000);
  int('resumeEvery', 0, 1_000_000);
  int('violationsMax', 1, 1_000_000);
  if (typeof o.eviction !== 'number' || !(o.eviction >= 0 && o.eviction <= 1)) throw new RangeError(`eviction must be a probability in [0, 1], got ${String(o.eviction)}`);
  if (o.engine !== 'random' && o.engine !== 'exhaustive') throw new TypeError(`engine must be 'random' or 'exhaustive', got ${String(o.engine)}`);
  if (o.point !== undefined && (!Number.isSafeInteger(o.point) || o.point < 0)) throw new RangeError(`point must be a non-negative integer, got ${String(o.point)}`);
  if (o.mutant !== undefined) findMutant(o.mutant);
  if (typeof o.nested !== 'boolean') throw new TypeError(`nested must be a boolean, got ${String(o.nested)}`);
  return o;
}

/** The command line that reproduces a run (or one crash point of it). */
export function reproduceCommand(o: CrashTestOptions, point?: number): string {
  const parts = ['pmrpc crash-test', `--strategy ${o.strategy}`, `--ddio ${o.ddio ? 'on' : 'off'}`, `--seed ${o.seed}`, `--requests ${o.requests}`, `--images-per-point ${o.imagesPerPoint}`, `--engine ${o.engine}`];
  if (o.eviction > 0) parts.push(`--eviction ${o.eviction}`);
  if (o.mutant !== undefined) parts.push(`--mutant ${o.mutant}`);
  if (point !== undefined) parts.push(`--point ${point}`);
  return parts.join(' ');
}

export async function runCrashTest(options: Partial<CrashTestOptions> = {}): Promise<CrashTestResult> {
  const o = resolveCrashTestOptions(options);
  return new CrashTestRun(o).run();
}

class CrashTestRun {
  readonly o: CrashTestOptions;
  readonly recoveryFaults: RecoveryFaults | undefined;
  readonly rpcFaults: RpcFaults | undefined;
  readonly geometry: Partial<LayoutOptions>;
  /** clientId -> seq -> payload (a resent request carries the same payload). */
  readonly payloads = new Map<number, Map<number, Uint8Array>>();
  violations: Violation[] = [];
  imagesChecked = 0;
  nestedImagesChecked = 0;
  resumesChecked = 0;
  sampledStates = 0;
  keptResultsChecked = 0;

  constructor(o: CrashTestOptions) {
    this.o = o;
    const m = o.mutant === undefined ? undefined : findMutant(o.mutant);
    this.recoveryFaults = m?.recoveryFaults;
    this.rpcFaults = m?.rpcFaults;
    this.geometry = crashGeometry(o.requests, o.clients);
  }

  #violate(snap: Pick<Snapshot, 'point' | 'kind'>, image: number | undefined, message: string): void {
    if (this.violations.length >= this.o.violationsMax) return;
    this.violations.push({ point: snap.point, kind: snap.kind, image, message, command: reproduceCommand(this.o, snap.point >= 0 ? snap.point : undefined) });
  }

  #server(region: PmemRegion, store: RecoveryStore, seed: number): { server: DurableRpcServer; fabric: InProcessFabric; nic: Rnic } {
    const nic = new Rnic(region, { ddio: this.o.ddio, drain: 'lazy', lazyBound: 2, placement: 'any', entropy: seededEntropy(createPrng(mix(seed, 1))) });
    const fabric = new InProcessFabric(nic, { delivery: 'seeded', seed: mix(seed, 2) });
    // The server CPU is a separate agent: its passes run after a seeded number of microtask hops,
    // so clients may hear "durable" before the server got to the entry, and the other way round.
    const sched = createPrng(mix(seed, 4));
    const schedule = (fn: () => void): void => {
      let hops = sched.int(0, CPU_DELAY_HOPS_MAX);
      const hop = (): void => {
        if (hops-- > 0) queueMicrotask(hop);
        else fn();
      };
      queueMicrotask(hop);
    };
    const server = new DurableRpcServer(nic, store, { strategy: this.o.strategy, keepResults: true, faults: this.rpcFaults, schedule });
    server.register(METHOD, digestHandler);
    return { server, fabric, nic };
  }

  async run(): Promise<CrashTestResult> {
    const o = this.o;
    const prng = createPrng(mix(o.seed, 0));
    const region = PmemRegion.createInMemory(layoutBytes(this.geometry), { tracing: true, seed: o.seed, eviction: o.eviction, entropy: seededEntropy(createPrng(mix(o.seed, 3))) });
    const store = RecoveryStore.format(region, { ...this.geometry, faults: this.recoveryFaults, partialPollsMax: 1_000_000 });
    const { server, fabric } = this.#server(region, store, o.seed);
    server.start();
    const sentUpTo = new Map<number, number>();
    const acked = new Map<number, number>();
    const states: Array<{ state: CrashState; snap: Snapshot }> = [];
    const clients: DurableRpcClient[] = [];
    for (let k = 0; k < o.clients; k++) {
      let id = 0;
      const c = connectInProcess(server, fabric, { onDurable: (s) => acked.set(id, Math.max(acked.get(id) ?? 0, s)), faults: this.rpcFaults });
      id = c.clientId;
      clients.push(c);
      sentUpTo.set(id, 0);
      acked.set(id, 0);
      this.payloads.set(id, new Map());
    }
    let pointIndex = 0;
    region.setCrashPointHook((e) => {
      const p = pointIndex++;
      if (o.point !== undefined && p !== o.point) return;
      states.push({ state: region.crashState(), snap: { point: p, kind: e.kind, sentUpTo: new Map(sentUpTo), acked: new Map(acked) } });
    });
    // Clients issue their requests concurrently; each sometimes waits for its last request to be durable.
    let settledResults = 0;
    let issued = 0;
    const perClient = clients.map((_, k) => Math.floor(o.requests / o.clients) + (k < o.requests % o.clients ? 1 : 0));
    const streams = clients.map(async (c, k) => {
      const cp = prng.fork();
      for (let i = 0; i < perClient[k]!; i++) {
        const payload = new Uint8Array(cp.int(8, 90)).map(() => cp.int(0, 255));
        const seq = i + 1;
        this.payloads.get(c.clientId)!.set(seq, payload);
        sentUpTo.set(c.clientId, seq);
        let call;
        try {
          call = c.call(METHOD, payload);
        } catch (e) {
          this.#violate({ point: -1, kind: 'workload' }, undefined, `client ${c.clientId}: call ${seq} refused: ${(e as Error).message}`);
          return;
        }
        issued++;
        call.result.then(() => settledResults++, () => settledResults++);
        if (cp.chance(0.25)) await Promise.race([call.durable.catch(() => undefined), settle(() => false, 64)]);
        else for (let y = cp.int(0, 6); y > 0; y--) await Promise.resolve();
      }
    });
    await Promise.all(streams);
    const finished = await settle(() => settledResults >= issued, SETTLE_ROUNDS_BASE + SETTLE_ROUNDS_PER_REQUEST * o.requests);
    region.setCrashPointHook(undefined);
    const crashPointsTotal = pointIndex;
    if (!finished && o.point === undefined) this.#violate({ point: -1, kind: 'workload' }, undefined, `workload stalled: ${issued - settledResults} of ${issued} requests never answered`);
    for (const e of server.connectionErrors) this.#violate({ point: -1, kind: 'workload' }, undefined, `connection of client ${e.clientId} failed: ${(e.error as Error).message}`);
    const end: Snapshot = { point: -1, kind: 'end', sentUpTo, acked };
    const endOut: string[] = [];
    const applied = checkDigests(store.appView, end, this.payloads, endOut, false);
    for (const m of endOut) this.#violate(end, undefined, `end of run: ${m}`);
    const acknowledged = [...acked.values()].reduce((a, b) => a + b, 0);
    for (const c of clients) c.close();
    server.close();

    // Crash states -> images -> recovery -> checks.
    const stride = Math.max(1, Math.ceil(states.length / o.pointsMax));
    let pointsDone = 0;
    const points = Math.ceil(states.length / stride);
    for (let i = 0; i < states.length; i += stride) {
      if (this.violations.length >= o.violationsMax) break;
      const { state, snap } = states[i]!;
      pointsDone++;
      const n = countImages(state);
      let images;
      if (o.engine === 'exhaustive' && n <= BigInt(o.exhaustiveMax)) images = crashImages(state, { engine: 'exhaustive', maxImages: o.exhaustiveMax });
      else if (o.engine === 'random' && n <= BigInt(o.imagesPerPoint)) images = crashImages(state, { engine: 'exhaustive' });
      else {
        if (o.engine === 'exhaustive') this.sampledStates++;
        images = crashImages(state, { engine: 'random', seed: mix(o.seed, snap.point, 5), count: o.imagesPerPoint });
      }
      for (const img of images) {
        if (this.violations.length >= o.violationsMax) break;
        this.imagesChecked++;
        const iprng = createPrng(mix(o.seed, snap.point, 1000 + img.index));
        await this.#checkImage(materialize(state, img), snap, img.index, iprng, o.nested, this.imagesChecked % Math.max(1, o.resumeEvery) === 0 && o.resumeEvery > 0);
      }
      o.onProgress?.({ imagesChecked: this.imagesChecked, points, pointsDone });
    }
    return {
      strategy: o.strategy, ddio: o.ddio, seed: o.seed, mutant: o.mutant ?? null, requests: o.requests,
      crashPointsTotal, crashPoints: pointsDone, imagesChecked: this.imagesChecked, nestedImagesChecked: this.nestedImagesChecked,
      resumesChecked: this.resumesChecked, keptResultsChecked: this.keptResultsChecked, sampledStates: this.sampledStates, acknowledged, applied, violations: this.violations,
    };
  }

  /** Recovers one image in a fresh region and checks it; optionally crashes its recovery once and resumes the clients. */
  async #checkImage(image: Uint8Array, snap: Snapshot, imageIndex: number, prng: Prng, nested: boolean, resume: boolean): Promise<void> {
    const where = nested ? `image ${imageIndex}` : `image ${imageIndex}, crashed during its recovery`;
    const region = PmemRegion.openImage(image, { tracing: true });
    let sampled: CrashState | undefined;
    let points = 0;
    if (nested) {
      region.setCrashPointHook(() => {
        points++;
        if (prng.int(1, points) === 1) sampled = region.crashState();
      });
    }
    let store: RecoveryStore;
    let server: DurableRpcServer;
    let fabric: InProcessFabric;
    try {
      store = RecoveryStore.open(region, { faults: this.recoveryFaults, partialPollsMax: 1_000_000 });
      ({ server, fabric } = this.#server(region, store, mix(this.o.seed, snap.point, imageIndex)));
      server.start();
    } catch (e) {
      region.setCrashPointHook(undefined);
      this.#violate(snap, imageIndex, `${where}: recovery failed: ${(e as Error).message}`);
      return;
    } finally {
      region.setCrashPointHook(undefined);
    }
    const out: string[] = [];
    checkDigests(store.appView, snap, this.payloads, out, false);
    for (const c of store.conn.entries()) {
      const resume = store.resumeSeq(c.clientId);
      if (store.conn.appliedSeq(c.clientId) !== resume - 1) out.push(`client ${c.clientId} resumes at ${resume} but is applied up to ${store.conn.appliedSeq(c.clientId)}`);
      if (resume - 1 > (snap.sentUpTo.get(c.clientId) ?? 0)) out.push(`client ${c.clientId}: durable up to ${resume - 1}, only ${snap.sentUpTo.get(c.clientId) ?? 0} sent`);
    }
    if (sampled !== undefined) {
      const st = sampled;
      const imgs = [...crashImages(st, { engine: 'random', seed: prng.u32(), count: 3 })];
      const pick = imgs[prng.int(0, imgs.length - 1)]!;
      this.nestedImagesChecked++;
      await this.#checkImage(materialize(st, pick), snap, imageIndex, prng, false, false);
    }
    if (out.length === 0 && resume) await this.#resume(server, fabric, store, snap, out);
    if (out.length === 0 && nested) this.#reopen(region, store, out);
    server.close();
    for (const m of out) this.#violate(snap, imageIndex, `${where}: ${m}`);
  }

  /** Clients reconnect through the handshake and resend from their resume points: then every request sent is applied exactly once. */
  async #resume(server: DurableRpcServer, fabric: InProcessFabric, store: RecoveryStore, snap: Snapshot, out: string[]): Promise<void> {
    this.resumesChecked++;
    let issued = 0;
    let settled = 0;
    const clients: DurableRpcClient[] = [];
    try {
      for (const c of store.conn.entries()) {
        const sent = snap.sentUpTo.get(c.clientId) ?? 0;
        const awaiting = [];
        for (let s = (snap.acked.get(c.clientId) ?? 0) + 1; s <= sent; s++) awaiting.push(s);
        const { sqp, info } = server.accept({ clientId: c.clientId, awaiting });
        const client = new DurableRpcClient(new QueuePair(fabric.connect(sqp)), info, { faults: this.rpcFaults });
        clients.push(client);
        for (const r of info.results) {
          // Results are kept while their record is in the log: 'lost' is allowed, an error is not (the handler never fails here).
          if (r.status === 'error') out.push(`after resume: client ${c.clientId} seq ${r.seq} has an error result`);
          // A kept result is the handler's: the payload checksum of that very request.
          else if (r.status === 'ok') {
            const p = this.payloads.get(c.clientId)?.get(r.seq);
            const got = r.bytes !== undefined && r.bytes.length >= 4 ? new DataView(r.bytes.buffer, r.bytes.byteOffset, 4).getUint32(0, true) : -1;
            if (p === undefined || got !== crc32c(p)) out.push(`after resume: client ${c.clientId} seq ${r.seq}: the kept result is not this request's`);
            else this.keptResultsChecked++;
          }
        }
        const payloads = this.payloads.get(c.clientId)!;
        for (let s = info.resumeSeq; s <= sent; s++) {
          const call = client.call(METHOD, payloads.get(s)!);
          issued++;
          call.result.then(() => settled++, () => settled++);
        }
      }
    } catch (e) {
      out.push(`resume failed: ${(e as Error).message}`);
      return;
    }
    if (!(await settle(() => settled >= issued, SETTLE_ROUNDS_BASE + SETTLE_ROUNDS_PER_REQUEST * issued))) out.push(`after resume: ${issued - settled} resent requests never answered`);
    for (const c of clients) c.close();
    for (const e of server.connectionErrors) out.push(`after resume: connection of client ${e.clientId} failed: ${(e.error as Error).message}`);
    checkDigests(store.appView, snap, this.payloads, out, true);
  }

  /** Reopens from media alone: recovery finds nothing to re-execute and the same application state. */
  #reopen(region: PmemRegion, store: RecoveryStore, out: string[]): void {
    const media = region.crashState();
    const again = PmemRegion.openImage(materialize(media, [...crashImages(media, { engine: 'none' })][0]!));
    try {
      const s2 = RecoveryStore.open(again, { faults: this.recoveryFaults });
      const r2 = s2.recover((e, v) => digestHandler({ clientId: e.clientId, seq: e.seq, method: METHOD, payload: e.payload }, v));
      if (r2.clients.some((c) => c.reexecute.length > 0)) out.push('reopen found entries to re-execute after everything was applied');
      if (digestState(s2.appView) !== digestState(store.appView)) out.push('reopen from media changed the application state');
    } catch (e) {
      out.push(`the region does not reopen cleanly: ${(e as Error).message}`);
    }
  }
}

function digestState(view: AppView): string {
  const n = Math.min(Number(view.loadU64(0)), Math.floor((view.sizeBytes - LOG_BASE) / DIGEST_BYTES));
  return Buffer.from(view.load(0, LOG_BASE + n * DIGEST_BYTES)).toString('hex');
}

/**
 * Checks the digest log against what was sent and acknowledged; returns how many requests it holds.
 * `complete`: every request sent must be applied (after the clients resent from their resume points).
 */
export function checkDigests(view: AppView, snap: Snapshot, payloads: Map<number, Map<number, Uint8Array>>, out: string[], complete: boolean): number {
  const log = readDigestLog(view);
  if (log.overflow) {
    out.push(`counter ${log.overflow.counter} exceeds the digest log`);
    return log.overflow.counter;
  }
  const lastSeq = new Map<number, number>();
  log.entries.forEach(({ clientId: c, seq: s, payloadCrc: crc, position: idx }, i) => {
    if (idx !== i) out.push(`digest ${i} records position ${idx} (effects of two requests mixed)`);
    const sent = snap.sentUpTo.get(c) ?? 0;
    const payload = s <= sent ? payloads.get(c)?.get(s) : undefined;
    if (payload === undefined) out.push(`applied client ${c} seq ${s}, never sent`);
    else if (crc32c(payload) !== crc) out.push(`applied client ${c} seq ${s} with a payload that was not the one sent (torn or stale)`);
    const prev = lastSeq.get(c) ?? 0;
    if (s <= prev) out.push(`client ${c} seq ${s} applied again or out of order (after ${prev})`);
    else if (s !== prev + 1) out.push(`client ${c} seq ${s} applied after ${prev}: FIFO hole`);
    lastSeq.set(c, Math.max(prev, s));
  });
  for (const [c, a] of snap.acked) {
    if ((lastSeq.get(c) ?? 0) < a) out.push(`client ${c} was told durable up to ${a}, applied up to ${lastSeq.get(c) ?? 0}: acknowledged request lost`);
  }
  if (complete) {
    for (const [c, s] of snap.sentUpTo) {
      if ((lastSeq.get(c) ?? 0) !== s) out.push(`after resume: client ${c} sent up to ${s}, applied up to ${lastSeq.get(c) ?? 0}`);
    }
  }
  return log.entries.length;
}
