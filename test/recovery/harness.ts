/**
 * Crash-test harness for recovery/ (DESIGN §8), in-process on a traced in-memory region.
 *
 * A small "server loop": clients place entries into their rings as a WRITE would (8-byte words in
 * a random order, sometimes with a server poll between two parts; then persist; acknowledged only
 * after the persist), the server polls FIFO and executes a non-idempotent handler through the
 * redo log (it appends a digest of each request to a PM log and bumps a counter on another line).
 * At every crash point the crash state is taken; each is expanded into images (exhaustive when
 * small, else seeded random), each image is recovered in a fresh region — crashed once more at a
 * sampled crash point of its own recovery, which is recovered and checked too — then the
 * clients continue from their resume points with fresh requests, and the region is reopened.
 */
import {
  countImages,
  crashImages,
  crc32c,
  createPrng,
  isPmrpcError,
  materialize,
  PmemRegion,
  seededEntropy,
  type CrashState,
  type Prng,
} from '../../pmem/index.js';
import {
  layoutBytes,
  RecoveryStore,
  type Handler,
  type LayoutOptions,
  type RecoveryFaults,
  type RecoveryReport,
} from '../../recovery/index.js';

export const DIGEST_BYTES = 16;
export const LOG_BASE = 64;
export const DIGEST_CAPACITY = 96;

export const GEOMETRY: Partial<LayoutOptions> = Object.freeze({
  maxClients: 4,
  ringSlots: 4,
  slotBytes: 128,
  logRecords: 4,
  recordBytes: 128,
  appBytes: LOG_BASE + DIGEST_BYTES * DIGEST_CAPACITY,
});

/** Not idempotent: appends a digest at the counter's position and bumps the counter (another line). */
export const digestHandler: Handler = (req, view) => {
  const n = Number(view.loadU64(0));
  if (n >= DIGEST_CAPACITY) throw new Error('digest log full');
  const d = new Uint8Array(DIGEST_BYTES);
  const dv = new DataView(d.buffer);
  dv.setUint32(0, req.clientId, true);
  dv.setUint32(4, req.seq, true);
  dv.setUint32(8, crc32c(req.payload), true);
  dv.setUint32(12, n, true);
  const c = new Uint8Array(8);
  new DataView(c.buffer).setBigUint64(0, BigInt(n + 1), true);
  return { images: [{ offset: LOG_BASE + n * DIGEST_BYTES, bytes: d }, { offset: 0, bytes: c }], result: d.slice(8, 12) };
};

export interface HarnessFaults {
  /** The client is told "durable" before its entries are persisted. */
  ackBeforePersist?: boolean;
}

export interface HarnessConfig {
  seed: number;
  clients: number;
  requestsPerClient: number;
  batchMax: number;
  imagesPerPoint: number;
  /** Use the exhaustive engine when a state has at most this many images. */
  exhaustiveMax: number;
  faults: RecoveryFaults;
  harnessFaults: HarnessFaults;
  /** Crash once more during each image's recovery. */
  nested: boolean;
  /** Reopen check every `reopenEvery`-th image (1 = all). */
  reopenEvery: number;
  /** Stop after this many violations (keeps fault runs short). */
  maxViolations: number;
}

export const HARNESS_DEFAULTS: Readonly<HarnessConfig> = Object.freeze({
  seed: 1,
  clients: 3,
  requestsPerClient: 12,
  batchMax: 3,
  imagesPerPoint: 4,
  exhaustiveMax: 8,
  faults: {},
  harnessFaults: {},
  nested: true,
  reopenEvery: 1,
  maxViolations: 5,
});

export interface HarnessResult {
  seed: number;
  crashPoints: number;
  imagesChecked: number;
  nestedImagesChecked: number;
  rows: Record<string, number>;
  violations: string[];
  finalApplied: number;
  seconds: number;
}

interface Snapshot {
  point: number;
  kind: string;
  /** clientId -> seq -> payload of every request with at least one word placed. */
  sent: Map<number, Map<number, Uint8Array>>;
  /** clientId -> highest acknowledged sequence (acks cover a prefix). */
  acked: Map<number, number>;
}

function cloneSent(s: Map<number, Map<number, Uint8Array>>): Map<number, Map<number, Uint8Array>> {
  return new Map([...s].map(([k, v]) => [k, new Map(v)]));
}

function regionBytes(): number {
  return layoutBytes(GEOMETRY);
}

/** Places `bytes` at `offset` as a NIC would: 8-byte words in a random order, in two parts with `between()` run in the middle. */
function placeWords(region: PmemRegion, offset: number, bytes: Uint8Array, prng: Prng, between: () => void): void {
  const words = bytes.length / 8;
  const order = Array.from({ length: words }, (_, i) => i);
  for (let i = words - 1; i > 0; i--) {
    const j = prng.int(0, i);
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const cut = prng.int(1, words);
  for (let k = 0; k < words; k++) {
    if (k === cut) between();
    const w = order[k]!;
    region.store(offset + w * 8, bytes.subarray(w * 8, w * 8 + 8));
  }
}

export interface Verdict {
  violations: string[];
}

/** Reads the digest log and checks it against what was sent and acknowledged. */
function checkDigests(store: RecoveryStore, snap: Snapshot, where: string, out: string[]): void {
  const view = store.appView;
  const n = Number(view.loadU64(0));
  if (n > DIGEST_CAPACITY) {
    out.push(`${where}: counter ${n} exceeds the digest log`);
    return;
  }
  const lastSeq = new Map<number, number>();
  for (let i = 0; i < n; i++) {
    const d = view.load(LOG_BASE + i * DIGEST_BYTES, DIGEST_BYTES);
    const dv = new DataView(d.buffer);
    const c = dv.getUint32(0, true);
    const s = dv.getUint32(4, true);
    const crc = dv.getUint32(8, true);
    const idx = dv.getUint32(12, true);
    if (idx !== i) out.push(`${where}: digest ${i} records position ${idx} (effects of two requests mixed)`);
    const payload = snap.sent.get(c)?.get(s);
    if (payload === undefined) out.push(`${where}: applied client ${c} seq ${s}, never sent`);
    else if (crc32c(payload) !== crc) out.push(`${where}: applied client ${c} seq ${s} with a payload that was not the one sent (torn or stale)`);
    const prev = lastSeq.get(c) ?? 0;
    if (s <= prev) out.push(`${where}: client ${c} seq ${s} applied again or out of order (after ${prev})`);
    else if (s !== prev + 1) out.push(`${where}: client ${c} seq ${s} applied after ${prev}: FIFO hole`);
    lastSeq.set(c, Math.max(prev, s));
  }
  for (const [c, a] of snap.acked) {
    if ((lastSeq.get(c) ?? 0) < a) out.push(`${where}: client ${c} acknowledged up to ${a}, applied up to ${lastSeq.get(c) ?? 0}: acknowledged request lost`);
  }
}

function digestState(store: RecoveryStore): string {
  const n = Number(store.appView.loadU64(0));
  return Buffer.from(store.appView.load(0, LOG_BASE + Math.min(n, DIGEST_CAPACITY) * DIGEST_BYTES)).toString('hex');
}

export class CrashHarness {
  readonly cfg: HarnessConfig;
  readonly rows: Record<string, number> = {};
  violations: string[] = [];
  imagesChecked = 0;
  nestedImagesChecked = 0;
  #prng: Prng;

  constructor(cfg: Partial<HarnessConfig> = {}) {
    this.cfg = { ...HARNESS_DEFAULTS, ...cfg };
    this.#prng = createPrng(this.cfg.seed);
  }

  #tally(report: RecoveryReport): void {
    for (const [k, v] of Object.entries(report.rows)) this.rows[k] = (this.rows[k] ?? 0) + v;
  }

  #violate(msg: string): void {
    this.violations.push(`${msg} [replay: PMRPC_SEED=${this.cfg.seed}]`);
  }

  /** Runs the workload, collecting a crash state at every crash point. */
  runWorkload(): { states: { state: CrashState; snap: Snapshot }[]; finalApplied: number; region: PmemRegion; store: RecoveryStore; sent: Map<number, Map<number, Uint8Array>> } {
    const cfg = this.cfg;
    const prng = this.#prng.fork();
    const region = PmemRegion.createInMemory(regionBytes(), { tracing: true, seed: cfg.seed, entropy: seededEntropy(createPrng(cfg.seed)) });
    const store = RecoveryStore.format(region, { ...GEOMETRY, faults: cfg.faults, partialPollsMax: 1_000_000 });
    const clients = Array.from({ length: cfg.clients }, () => store.register().clientId);
    const sent = new Map<number, Map<number, Uint8Array>>(clients.map((c) => [c, new Map()]));
    const acked = new Map<number, number>(clients.map((c) => [c, 0]));
    const nextSeq = new Map<number, number>(clients.map((c) => [c, 1]));
    const states: { state: CrashState; snap: Snapshot }[] = [];
    region.setCrashPointHook((e) => {
      states.push({ state: region.crashState(), snap: { point: e.index, kind: e.kind, sent: cloneSent(sent), acked: new Map(acked) } });
    });
    let applied = 0;
    const serverStep = (): void => {
      let budget = prng.int(1, 3);
      for (let round = 0; round < cfg.clients && budget > 0; round++) {
        for (const c of clients) {
          if (budget <= 0) break;
          const p = store.ring(c).poll();
          if (p.kind !== 'entry') continue;
          store.execute(p.entry, digestHandler);
          applied++;
          budget--;
        }
      }
    };
    const total = cfg.clients * cfg.requestsPerClient;
    try {
      for (let step = 0; step < 100_000 && applied < total; step++) {
        const pending = clients.filter((c) => nextSeq.get(c)! <= cfg.requestsPerClient);
        if (pending.length > 0 && prng.chance(0.5)) {
          const c = pending[prng.int(0, pending.length - 1)]!;
          const placed: number[] = [];
          const b = prng.int(1, cfg.batchMax);
          for (let i = 0; i < b && nextSeq.get(c)! <= cfg.requestsPerClient; i++) {
            const seq = nextSeq.get(c)!;
            try {
              store.checkCredit(c, seq);
            } catch (e) {
              if (isPmrpcError(e, 'PMRPC_ERR_RING_FULL')) break;
              throw e;
            }
            const payload = new Uint8Array(prng.int(8, 90)).map(() => prng.int(0, 255));
            const bytes = store.encodeEntry({ clientId: c, seq, methodId: 1, payload });
            sent.get(c)!.set(seq, payload);
            placeWords(region, store.entryOffset(c, seq), bytes, prng, () => {
              if (prng.chance(0.8)) serverStep();
            });
            nextSeq.set(c, seq + 1);
            placed.push(seq);
          }
          if (placed.length === 0) continue;
          const ack = (): void => {
            acked.set(c, placed[placed.length - 1]!);
            region.crashPoint('completion', { client: c, durableUpTo: placed[placed.length - 1] });
          };
          if (cfg.harnessFaults.ackBeforePersist) ack();
          for (const s of placed) region.flush(store.entryOffset(c, s), store.geometry.slotBytes);
          region.drain();
          if (!cfg.harnessFaults.ackBeforePersist) ack();
        } else {
          serverStep();
        }
      }
    } catch (e) {
      this.#violate(`workload failed: ${(e as Error).message}`);
    }
    region.setCrashPointHook(undefined);
    // The run's own end state is checked too (a fault at poll shows without any crash).
    const out: string[] = [];
    checkDigests(store, { point: -1, kind: 'end', sent, acked }, 'end of run', out);
    for (const v of out) this.#violate(v);
    return { states, finalApplied: applied, region, store, sent };
  }

  /** Recovers one image and checks it; returns a sampled crash state of its own recovery. */
  checkImage(image: Uint8Array, snap: Snapshot, where: string, nested: boolean): void {
    const cfg = this.cfg;
    const prng = this.#prng;
    const out: string[] = [];
    let store: RecoveryStore;
    const region = PmemRegion.openImage(image, { tracing: true });
    let sampled: CrashState | undefined;
    let points = 0;
    if (nested) {
      // Reservoir sampling: one uniformly chosen crash point of this recovery.
      region.setCrashPointHook(() => {
        points++;
        if (prng.int(1, points) === 1) sampled = region.crashState();
      });
    }
    let report: RecoveryReport;
    try {
      store = RecoveryStore.open(region, { faults: cfg.faults, partialPollsMax: 1_000_000 });
      report = store.recover(digestHandler);
    } catch (e) {
      region.setCrashPointHook(undefined);
      this.#violate(`${where}: recovery failed: ${(e as Error).message}`);
      return;
    }
    region.setCrashPointHook(undefined);
    this.#tally(report);
    checkDigests(store, snap, where, out);
    for (const c of report.clients) {
      const applied = store.conn.appliedSeq(c.clientId);
      if (applied !== c.resumeSeq - 1) out.push(`${where}: client ${c.clientId} resumes at ${c.resumeSeq} but applied up to ${applied}`);
    }
    if (sampled !== undefined) {
      const imgs = [...crashImages(sampled, { engine: 'random', seed: prng.u32(), count: 3 })];
      const pick = imgs[prng.int(0, imgs.length - 1)]!;
      this.nestedImagesChecked++;
      this.checkImage(materialize(sampled, pick), snap, `${where} / crash during recovery (image ${pick.index})`, false);
    }
    if (out.length === 0) this.#continueAndReopen(store, region, report, snap, where, out);
    for (const v of out) this.#violate(v);
  }

  /** Clients resume with fresh requests (abandoning unacknowledged ones); then the region is reopened. */
  #continueAndReopen(store: RecoveryStore, region: PmemRegion, report: RecoveryReport, snap: Snapshot, where: string, out: string[]): void {
    const prng = this.#prng;
    const sent = cloneSent(snap.sent);
    const acked = new Map(snap.acked);
    try {
      for (const c of report.clients) {
        const m = sent.get(c.clientId) ?? new Map<number, Uint8Array>();
        sent.set(c.clientId, m);
        for (const s of [...m.keys()]) if (s >= c.resumeSeq) m.delete(s); // abandoned: the server said they are not durable
        for (let k = 0; k < 2; k++) {
          const seq = c.resumeSeq + k;
          store.checkCredit(c.clientId, seq);
          const payload = new Uint8Array(prng.int(8, 40)).map(() => prng.int(0, 255));
          m.set(seq, payload);
          const off = store.entryOffset(c.clientId, seq);
          region.store(off, store.encodeEntry({ clientId: c.clientId, seq, methodId: 2, payload }));
          region.persist(off, store.geometry.slotBytes);
          acked.set(c.clientId, seq);
          // The server drains everything pollable before the next placement.
          for (let i = 0; i < 8; i++) {
            const p = store.ring(c.clientId).poll();
            if (p.kind !== 'entry') break;
            store.execute(p.entry, digestHandler);
          }
        }
      }
    } catch (e) {
      out.push(`${where}: continuation after recovery failed: ${(e as Error).message}`);
      return;
    }
    checkDigests(store, { ...snap, sent, acked }, `${where} (after resume)`, out);
    if (out.length > 0 || this.imagesChecked % this.cfg.reopenEvery !== 0) return;
    // Reopen: media only (nothing pending survives) must recover to the same state, re-executing nothing.
    const media = region.crashState();
    const again = PmemRegion.openImage(materialize(media, [...crashImages(media, { engine: 'none' })][0]!));
    try {
      const s2 = RecoveryStore.open(again, { faults: this.cfg.faults });
      const r2 = s2.recover();
      this.#tally(r2);
      if (r2.clients.some((c) => c.reexecute.length > 0)) out.push(`${where}: reopen found entries to re-execute after everything was applied`);
      if (digestState(s2) !== digestState(store)) out.push(`${where}: reopen changed the application state`);
    } catch (e) {
      out.push(`${where}: the region does not reopen cleanly: ${(e as Error).message}`);
    }
  }

  run(): HarnessResult {
    const t0 = process.hrtime.bigint();
    const { states, finalApplied } = this.runWorkload();
    let points = 0;
    for (const { state, snap } of states) {
      if (this.violations.length >= this.cfg.maxViolations) break;
      points++;
      const exhaustive = countImages(state) <= BigInt(this.cfg.exhaustiveMax);
      const images = crashImages(state, exhaustive ? { engine: 'exhaustive' } : { engine: 'random', seed: this.#prng.u32(), count: this.cfg.imagesPerPoint });
      for (const img of images) {
        if (this.violations.length >= this.cfg.maxViolations) break;
        this.imagesChecked++;
        this.checkImage(materialize(state, img), snap, `crash point ${snap.point} (${snap.kind}), image ${img.index}`, this.cfg.nested);
      }
    }
    return {
      seed: this.cfg.seed,
      crashPoints: points,
      imagesChecked: this.imagesChecked,
      nestedImagesChecked: this.nestedImagesChecked,
      rows: this.rows,
      violations: this.violations,
      finalApplied,
      seconds: Number(process.hrtime.bigint() - t0) / 1e9,
    };
  }
}

export const SEED = Number(process.env.PMRPC_SEED ?? 1);
