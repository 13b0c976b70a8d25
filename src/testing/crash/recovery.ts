/**
 * recovery/ alone on the explorer (DESIGN §3, §8): the persistent rings, connection table and redo
 * log driven without a NIC, so that the layer's own crash behaviour is explored by the one
 * capture → images → recover → crash-again loop (explorer.ts) rather than by a copy of it.
 *
 * The workload is a small server loop on the node's RecoveryStore: clients place entries into
 * their rings as a WRITE would (8-byte words in a random order, sometimes with a server poll
 * between two parts; then persist; acknowledged — a 'completion' crash point — only after the
 * persist), the server polls FIFO and executes the non-idempotent digest handler through the redo
 * log. Clients register during the run (crash points armed during registration) and, with
 * `churn`, finished clients release their slot to new ones: a client whose requests are all
 * acknowledged asks for its release (refused with PMRPC_ERR_CLIENT_BUSY until every entry of it is
 * applied); the release is acknowledged (a 'completion' crash point) once it returns. With `restartAtEnd` the node restarts
 * in place at the end of the run (a crash whose image kept every pending piece) and recovers: every
 * crash point of that recovery is then a crash point of the run, expanded into images like any
 * other (a crash at every crash point of recovery).
 *
 * Checks of a recovered image: the digest log against what was sent and acknowledged (nothing
 * acknowledged lost, nothing applied twice, out of order or never sent, no torn payload); resume
 * points = applied + 1; no client whose release was acknowledged is back in the table; then
 * (first recovery only) every client presents its secret, continues from its resume point with
 * fresh requests, which must all apply, says goodbye (release), and as many new clients as the
 * table holds register (a table that was full takes new clients after the restart); and every
 * `reopenEvery`-th image is reopened from media alone: nothing left to re-execute, the same
 * application state. Recovery's decision-table
 * rows are tallied (`rows`), so a test can require every row to be reached.
 */
import { PmemRegion, PmrpcError, isPmrpcError, HEADER_BYTES, type Prng, resolveOptions } from '../../../pmem/index.js';
import { FAULT_NAMES, layoutBytes, RecoveryStore, type AppView, type Handler, type LayoutOptions, type RecoveryFaults, type RecoveryReport } from '../../../recovery/index.js';
import type { AppHost, AppProblem, AppServer } from '../../apps/index.js';
import { kebabName } from '../../apps/shared/index.js';
import { DIGEST_BYTES, LOG_BASE, METHOD, digestHandler as rpcDigestHandler } from '../../apps/rpc/index.js';
import type { ExplorerApp } from './explorer.js';
import { checkDigests, type RpcSnapshot } from './rpc.js';
import type { World } from './world.js';

export interface RecoveryWorkloadOptions {
  clients: number;
  requestsPerClient: number;
  /** Most entries a client places before one persist and one acknowledgement. */
  batchMax: number;
  /** Finished clients that release their slot to a new client (which sends as many requests). */
  churn: number;
  /** Test-only fault switches of recovery/ (one at a time: the run must then report violations). */
  faults: RecoveryFaults | undefined;
  /** Test-only: the client is told "durable" before its entries are persisted. */
  ackBeforePersist: boolean;
  /** The node restarts in place after the run and recovers; that recovery's crash points are explored too. */
  restartAtEnd: boolean;
  /** Reopen from media on every n-th checked image (0 = never). */
  reopenEvery: number;
}

export const RECOVERY_WORKLOAD_DEFAULTS: Readonly<RecoveryWorkloadOptions> = Object.freeze({
  clients: 3,
  requestsPerClient: 12,
  batchMax: 3,
  churn: 0,
  faults: undefined,
  ackBeforePersist: false,
  restartAtEnd: false,
  reopenEvery: 1,
});

export const DIGEST_CAPACITY = 96;

export const RECOVERY_CRASH_GEOMETRY: Readonly<Partial<LayoutOptions>> = Object.freeze({
  maxClients: 4,
  ringSlots: 4,
  slotBytes: 128,
  logRecords: 4,
  recordBytes: 128,
  appBytes: LOG_BASE + DIGEST_BYTES * DIGEST_CAPACITY,
});

/** The digest handler (src/apps/rpc/digest.ts) as a recovery/ handler. */
export const recoveryDigestHandler: Handler = (req, view) => rpcDigestHandler({ clientId: req.clientId, seq: req.seq, method: METHOD, payload: req.payload }, view);

export function resolveRecoveryWorkload(options: Partial<RecoveryWorkloadOptions>): RecoveryWorkloadOptions {
  const o = resolveOptions<RecoveryWorkloadOptions>(RECOVERY_WORKLOAD_DEFAULTS, options, {});
  const int = (name: keyof RecoveryWorkloadOptions, min: number, max: number): void => {
    const v = o[name];
    if (!Number.isSafeInteger(v) || (v as number) < min || (v as number) > max) throw new RangeError(`${name} must be an integer in [${min}, ${max}], got ${String(v)}`);
  };
  int('clients', 1, 4);
  int('requestsPerClient', 1, 24);
  int('batchMax', 1, 8);
  int('churn', 0, 16);
  int('reopenEvery', 0, 1_000_000);
  if ((o.clients + o.churn) * o.requestsPerClient > DIGEST_CAPACITY - 16) throw new RangeError(`(clients + churn) * requestsPerClient must be at most ${DIGEST_CAPACITY - 16}, got ${(o.clients + o.churn) * o.requestsPerClient}`);
  return o;
}

/**
 * recovery/'s mutants (DESIGN §8 "the suite must have teeth"): each fault switch of
 * recovery/faults.ts removes one persistence or validation step of the layer, and
 * `ack-before-persist` acknowledges a client's entries before they are durable. The plain mutant
 * sweep (`crash-test --app recovery --mutants all`) must catch each with nothing pinned for it.
 * A mutant's name is its switch's in kebab-case; the switch's own name (its name before) is an alias.
 */
export interface RecoveryMutant {
  /** Mutant name, kebab-case (`--mutant`, `--list-mutants`, replay commands). */
  name: string;
  /** The switch it sets: a fault switch of recovery/faults.ts, or the workload's ackBeforePersist. */
  fault: (typeof FAULT_NAMES)[number] | 'ackBeforePersist';
  /** Former names `--mutant` still accepts: the switch's name (camelCase, before the kebab-case names). */
  aliases: readonly string[];
  step: string;
}

const RECOVERY_FAULT_MUTANTS = [
  { fault: 'skipPersistRecordBeforeApply', step: 'redo log: persist the record before applying its after-images' },
  { fault: 'skipPersistApplyBeforeFlag', step: 'redo log: persist the applied after-images before the applied flag' },
  { fault: 'skipPersistAppliedFlag', step: 'redo log: persist the applied flag before the credit returns' },
  { fault: 'skipPersistCreditBeforeReuse', step: "redo log: persist the client's applied sequence before a record slot is reused" },
  { fault: 'skipChecksumAtPoll', step: 'ring: verify an entry checksum at poll' },
  { fault: 'skipChecksumAtRecovery', step: 'recovery: verify entry and record checksums' },
  { fault: 'skipInvalidateBeyondGap', step: "recovery: invalidate a ring's entries beyond its first gap" },
  { fault: 'skipPersistRegisterReset', step: "registration: persist the slot's reset applied word before the id word" },
  { fault: 'skipPersistReleaseMark', step: 'release: persist the release word before the release is acknowledged' },
  { fault: 'skipPersistReleaseClear', step: "registration of a released slot: persist the former occupant's id clear first" },
  { fault: 'skipReleaseDrainCheck', step: 'release: every entry of the client applied before the release is decided' },
  { fault: 'ackBeforePersist', step: 'client: acknowledge only after the entries are persisted' },
] as const satisfies ReadonlyArray<Omit<RecoveryMutant, 'name' | 'aliases'>>;

export const RECOVERY_MUTANTS: readonly RecoveryMutant[] = Object.freeze(RECOVERY_FAULT_MUTANTS.map((m): RecoveryMutant => ({ ...m, name: kebabName(m.fault), aliases: [m.fault] })));
if (RECOVERY_MUTANTS.length !== FAULT_NAMES.length + 1 || !FAULT_NAMES.every((f) => RECOVERY_MUTANTS.some((m) => m.fault === f))) throw new Error('RECOVERY_MUTANTS must list every fault switch of recovery/faults.ts');

/** The workload options that switch on recovery mutant `name` (its name or an alias: faults or ackBeforePersist). */
export function recoveryMutantWorkload(name: string): Partial<RecoveryWorkloadOptions> {
  const m = RECOVERY_MUTANTS.find((x) => x.name === name) ?? RECOVERY_MUTANTS.find((x) => x.aliases.includes(name));
  if (m === undefined) throw new TypeError(`unknown recovery mutant '${name}'; one of ${RECOVERY_MUTANTS.map((x) => x.name).join(', ')}`);
  if (m.fault === 'ackBeforePersist') return { ackBeforePersist: true };
  return { faults: { [m.fault]: true } };
}

/**
 * The workload shape the plain recovery sweep draws for `seed`, the same for every mutant (none
 * pins it): odd seeds the default (3 clients × 12 requests); even seeds churn — 4 clients, 6 that
 * leave for new ones, 4 requests each, batches of 2 — so that releases, slot reuse and
 * re-registration are crash points.
 */
export function plainRecoveryShape(seed: number | undefined): Partial<RecoveryWorkloadOptions> {
  if (seed === undefined || seed % 2 === 1) return {};
  return { clients: 4, churn: 6, requestsPerClient: 4, batchMax: 2 };
}

/** recovery/ behind the App contract (no NIC: the workload stores into the rings itself). */
/** What the recovery explorer app's recover() reports: how many ring entries each row of the decision table decided. */
export type RecoveryAppReport = { app: RecoveryAppServer['app']; rows: Record<string, number> };

export class RecoveryAppServer implements AppServer {
  readonly app = 'recovery';
  store: RecoveryStore;
  report: RecoveryReport | undefined;
  readonly #faults: RecoveryFaults | undefined;
  readonly #tally: (r: RecoveryReport) => void;

  constructor(region: PmemRegion, faults: RecoveryFaults | undefined, tally: (r: RecoveryReport) => void) {
    this.#faults = faults;
    this.#tally = tally;
    this.store = RecoveryStore.open(region, { faults, partialPollsMax: 1_000_000 });
  }

  recover(): RecoveryAppReport {
    this.report = this.store.recover(recoveryDigestHandler);
    this.#tally(this.report);
    return { app: this.app, rows: this.report.rows };
  }

  /** The node restarts in place (its volatile objects are gone; the region keeps every store) and recovers. */
  restart(region: PmemRegion): void {
    this.store = RecoveryStore.open(region, { faults: this.#faults, partialPollsMax: 1_000_000 });
    this.recover();
  }

  accept(): never {
    // A programmer error (the recovery workload drives the store directly, never through accept).
    throw new TypeError('the recovery explorer app has no network clients: accept() is not supported');
  }

  inspect(): Record<string, unknown> {
    return { app: 'recovery', epoch: this.store.epoch, clients: this.store.conn.entries().length };
  }

  audit(): AppProblem[] {
    return [];
  }

  close(): void {}
}

const key = (clientId: number): string => `0/${clientId}`;

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

function digestState(view: AppView): string {
  const n = Math.min(Number(view.loadU64(0)), DIGEST_CAPACITY);
  return Buffer.from(view.load(0, LOG_BASE + n * DIGEST_BYTES)).toString('hex');
}

/** The bytes of a region file holding `region`'s media alone (what survives when nothing pending does). */
export function mediaImage(region: PmemRegion): Uint8Array {
  return region.crashState().media;
}

/** The bytes of a region file holding everything `region` shows (every pending CPU store persisted). */
export function visibleImage(region: PmemRegion): Uint8Array {
  const img = region.crashState().media;
  img.set(region.load(0, region.sizeBytes), HEADER_BYTES);
  return img;
}

export type RecoveryExplorerApp = ExplorerApp<RpcSnapshot> & {
  /** Decision-table rows reached by every recovery of the run (first, nested, reopen), by id. */
  readonly rows: Record<string, number>;
  /** Requests applied by the end of the run (before the restart, if any: the restart's recovery applies the rest). */
  applied: number;
  /** Requests issued in all (churned clients included). */
  total: number;
  /** Clients that released their slot during the run. */
  churned: number;
  /** With restartAtEnd: the crash points of the restart's recovery (each explored), and the requests it re-executed. */
  restartCrashPoints: number;
  restartReexecuted: number;
};

/** A fresh recovery explorer app (it holds the workload's state: one per explore() call). */
export function recoveryExplorerApp(options: Partial<RecoveryWorkloadOptions> = {}): RecoveryExplorerApp {
  const w = resolveRecoveryWorkload(options);
  const sentUpTo = new Map<string, number>();
  const acked = new Map<string, number>();
  const payloads = new Map<string, Map<number, Uint8Array>>();
  const secrets = new Map<string, Uint8Array>();
  /** Clients whose release returned (acknowledged). */
  const released = new Set<string>();
  const rows: Record<string, number> = {};
  const tally = (r: RecoveryReport): void => {
    for (const [k, v] of Object.entries(r.rows)) rows[k] = (rows[k] ?? 0) + v;
  };
  let imagesSeen = 0;
  const app: RecoveryExplorerApp = {
    name: 'recovery',
    nodes: 1,
    regionBytes: layoutBytes(RECOVERY_CRASH_GEOMETRY),
    rows,
    applied: 0,
    total: 0,
    churned: 0,
    restartCrashPoints: 0,
    restartReexecuted: 0,
    format(region: PmemRegion): void {
      RecoveryStore.format(region, { ...RECOVERY_CRASH_GEOMETRY, faults: w.faults });
    },
    open(host: AppHost): AppServer {
      return new RecoveryAppServer(host.region, w.faults, tally);
    },
    async workload(world: World, prng: Prng): Promise<void> {
      const server = world.nodes[0]!.server as RecoveryAppServer;
      const region = world.nodes[0]!.region;
      const store = server.store;
      const nextSeq = new Map<number, number>();
      const register = (): number => {
        // Not drawn from the workload's PRNG: the schedule of a seed stays what it was.
        const secret = new Uint8Array(16).map((_, i) => (secrets.size * 31 + i * 7 + 1) & 0xff);
        const c = store.register(secret).clientId;
        secrets.set(key(c), secret);
        sentUpTo.set(key(c), 0);
        acked.set(key(c), 0);
        payloads.set(key(c), new Map());
        nextSeq.set(c, 1);
        return c;
      };
      const clients = Array.from({ length: w.clients }, register);
      // With a restart at the end, the server stops polling once every client has placed half of its
      // requests: the restart's recovery then has entries to re-execute (and crash points of its own).
      let serverOff = false;
      const serverStep = (): void => {
        if (serverOff) return;
        let budget = prng.int(1, 3);
        for (let round = 0; round < w.clients && budget > 0; round++) {
          for (const c of clients) {
            if (budget <= 0) break;
            const p = store.ring(c).poll();
            if (p.kind !== 'entry') continue;
            store.execute(p.entry, recoveryDigestHandler);
            app.applied++;
            budget--;
          }
        }
      };
      app.total = w.clients * w.requestsPerClient;
      const churn = (): void => {
        // A client whose requests are all acknowledged leaves; the store releases it only once each is applied.
        const done = clients.find((c) => nextSeq.get(c)! > w.requestsPerClient && acked.get(key(c)) === w.requestsPerClient);
        if (done === undefined || app.churned >= w.churn) return;
        try {
          store.release(done);
        } catch (e) {
          if (isPmrpcError(e, 'PMRPC_ERR_CLIENT_BUSY')) return;
          throw e;
        }
        released.add(key(done));
        region.crashPoint('completion', { client: done, released: true });
        app.churned++;
        clients.splice(clients.indexOf(done), 1);
        clients.push(register());
        app.total += w.requestsPerClient;
      };
      // With a restart at the end, the run ends once every request is acknowledged: what is not yet applied is the restart's to re-execute.
      const more = (): boolean => (w.restartAtEnd ? clients.some((c) => nextSeq.get(c)! <= w.requestsPerClient) || app.churned < w.churn : app.applied < app.total);
      let idle = 0;
      for (let step = 0; step < 100_000 && more() && idle < 64; step++) {
        churn();
        if (w.restartAtEnd && !serverOff && clients.every((c) => nextSeq.get(c)! > w.requestsPerClient / 2)) serverOff = true;
        idle++;
        const pending = clients.filter((c) => nextSeq.get(c)! <= w.requestsPerClient);
        if (pending.length === 0 || !prng.chance(0.5)) {
          const before = app.applied;
          serverStep();
          if (app.applied !== before) idle = 0;
          continue;
        }
        const c = pending[prng.int(0, pending.length - 1)]!;
        const placed: number[] = [];
        const b = prng.int(1, w.batchMax);
        for (let i = 0; i < b && nextSeq.get(c)! <= w.requestsPerClient; i++) {
          const seq = nextSeq.get(c)!;
          try {
            store.checkCredit(c, seq);
          } catch (e) {
            if (isPmrpcError(e, 'PMRPC_ERR_RING_FULL')) break;
            throw e;
          }
          const payload = new Uint8Array(prng.int(8, 90)).map(() => prng.int(0, 255));
          payloads.get(key(c))!.set(seq, payload);
          sentUpTo.set(key(c), seq);
          placeWords(region, store.entryOffset(c, seq), store.encodeEntry({ clientId: c, seq, methodId: 1, payload }), prng, () => {
            if (prng.chance(0.8)) serverStep();
          });
          nextSeq.set(c, seq + 1);
          placed.push(seq);
        }
        if (placed.length === 0) continue;
        idle = 0;
        const ack = (): void => {
          acked.set(key(c), placed[placed.length - 1]!);
          region.crashPoint('completion', { client: c, durableUpTo: placed[placed.length - 1] });
        };
        if (w.ackBeforePersist) ack();
        for (const s of placed) region.flush(store.entryOffset(c, s), store.geometry.slotBytes);
        region.drain();
        if (!w.ackBeforePersist) ack();
      }
      if (w.restartAtEnd) {
        const before = region.crashPoints;
        server.restart(region);
        app.restartCrashPoints = region.crashPoints - before;
        app.restartReexecuted = server.report!.clients.reduce((a, c) => a + c.reexecute.length, 0);
      }
    },
    snapshot(): RpcSnapshot {
      return { sentUpTo: new Map(sentUpTo), acked: new Map(acked), released: new Set(released) };
    },
    async checkLive(world: World): Promise<AppProblem[]> {
      const server = world.nodes[0]!.server as RecoveryAppServer;
      const out: string[] = [];
      if (!w.restartAtEnd && app.applied !== app.total) out.push(`the run applied ${app.applied} of ${app.total} requests`);
      // A fault at poll shows without any crash.
      checkDigests(server.store.appView, 0, { sentUpTo, acked }, payloads, out, true);
      return out.map((detail) => ({ kind: kindOf(detail), detail }));
    },
    async checkRecovered(world: World, snap: RpcSnapshot, ctx: { phase: 'first' | 'nested'; prng: Prng }): Promise<AppProblem[]> {
      const server = world.nodes[0]!.server as RecoveryAppServer;
      const store = server.store;
      const out: string[] = [];
      checkDigests(store.appView, 0, snap, payloads, out, false);
      for (const k of snap.released ?? []) {
        const id = Number(k.slice(2));
        if (store.conn.has(id)) out.push(`client ${id}: its release was acknowledged, but it is back in the table after recovery (release undone)`);
      }
      for (const c of server.report?.clients ?? []) {
        const applied = store.conn.appliedSeq(c.clientId);
        if (applied !== c.resumeSeq - 1) out.push(`client ${c.clientId} resumes at ${c.resumeSeq} but is applied up to ${applied}`);
        // A durable prefix past what the client sent: a registration that took a former occupant's state.
        const sent = snap.sentUpTo.get(key(c.clientId)) ?? 0;
        if (c.resumeSeq - 1 > sent) out.push(`client ${c.clientId} is durable up to ${c.resumeSeq - 1} but sent only ${sent}: applied again or never sent`);
      }
      if (out.length === 0 && ctx.phase === 'first') out.push(...continueAndReopen(world.nodes[0]!.region, server, snap, ctx.prng, w.reopenEvery > 0 && imagesSeen++ % w.reopenEvery === 0));
      return out.map((detail) => ({ kind: kindOf(detail), detail }));
    },
    replayArgs(): string {
      const on = w.ackBeforePersist ? 'ackBeforePersist' : Object.entries(w.faults ?? {}).find(([, v]) => v === true)?.[0];
      const mutant = on === undefined ? undefined : kebabName(on);
      return `--app recovery --clients ${w.clients} --requests ${w.requestsPerClient}${w.churn > 0 ? ` --churn ${w.churn}` : ''}${w.batchMax !== RECOVERY_WORKLOAD_DEFAULTS.batchMax ? ` --batch ${w.batchMax}` : ''}${mutant !== undefined ? ` --mutant ${mutant}` : ''}`;
    },
  };

  /** Clients resume with fresh requests (abandoning unacknowledged ones); then the region is reopened from media. */
  function continueAndReopen(region: PmemRegion, server: RecoveryAppServer, snap: RpcSnapshot, prng: Prng, reopen: boolean): string[] {
    const out: string[] = [];
    const store = server.store;
    const sent = new Map(snap.sentUpTo);
    const ack = new Map(snap.acked);
    const mine = new Map(payloads);
    try {
      for (const c of server.report?.clients ?? []) {
        const k = key(c.clientId);
        try {
          store.authenticate(c.clientId, secrets.get(k) ?? new Uint8Array(0));
        } catch (e) {
          out.push(`client ${c.clientId}: its secret no longer verifies after recovery (${(e as Error).message})`);
        }
        const m = new Map(payloads.get(k) ?? []);
        mine.set(k, m);
        for (let j = 0; j < 2; j++) {
          const seq = c.resumeSeq + j;
          store.checkCredit(c.clientId, seq);
          const payload = new Uint8Array(prng.int(8, 40)).map(() => prng.int(0, 255));
          m.set(seq, payload); // a resent or fresh request at its resume point: the server said later ones are not durable
          const off = store.entryOffset(c.clientId, seq);
          region.store(off, store.encodeEntry({ clientId: c.clientId, seq, methodId: 2, payload }));
          region.persist(off, store.geometry.slotBytes);
          sent.set(k, seq);
          ack.set(k, seq);
          for (let i = 0; i < 8; i++) {
            const p = store.ring(c.clientId).poll();
            if (p.kind !== 'entry') break;
            store.execute(p.entry, recoveryDigestHandler);
          }
        }
      }
    } catch (e) {
      return [...out, `continuation after recovery failed: ${(e as Error).message}`];
    }
    const resumed: RpcSnapshot = { sentUpTo: sent, acked: ack };
    const before = out.length;
    checkDigests(store.appView, 0, resumed, mine, out, true);
    for (let i = before; i < out.length; i++) out[i] = `after resume: ${out[i]!}`;
    if (out.length > 0) return out;
    try {
      // Every client leaves (all of its entries are applied now), and the table — full or not
      // before the crash — takes as many new clients as it has slots.
      for (const c of server.report?.clients ?? []) store.release(c.clientId);
      for (let i = 0; i < store.geometry.maxClients; i++) store.register(new Uint8Array(16).fill(i));
    } catch (e) {
      return [`after resume: releasing every client and filling the table failed: ${(e as Error).message}`];
    }
    if (!reopen) return out;
    try {
      const again = RecoveryStore.open(PmemRegion.openImage(mediaImage(region)), { faults: w.faults });
      const r2 = again.recover(recoveryDigestHandler);
      tally(r2);
      const o2: string[] = [];
      checkDigests(again.appView, 0, resumed, mine, o2, true);
      out.push(...o2.map((x) => `reopened: ${x}`));
      if (r2.clients.some((c) => c.reexecute.length > 0)) out.push('reopen found entries to re-execute after everything was applied');
      if (digestState(again.appView) !== digestState(store.appView)) out.push('reopen from media changed the application state');
    } catch (e) {
      out.push(`the region does not reopen cleanly: ${(e as Error).message}`);
    }
    return out;
  }
  return app;
}

function kindOf(detail: string): string {
  return /acknowledged request lost/.test(detail) ? 'lost' : /applied again|never sent|not the one sent|FIFO hole|effects of two requests mixed/.test(detail) ? 'digest' : 'recovery';
}

