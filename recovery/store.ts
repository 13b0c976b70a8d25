/**
 * RecoveryStore: the validating shell over the layer's parts (layout, connection table, rings,
 * redo log, recovery), the object the durable RPC server holds. format() makes a fresh store that
 * is ready; open() validates an existing one, which then needs recover() before it serves.
 */
import { invariant, PmrpcError, positiveInt, resolveOptions, type PmemRegion } from '../pmem/index.js';
import { ConnTable, secretHash, SECRET_BYTES_MAX, type ConnEntry } from './conn-table.js';
import { checkFaults, type RecoveryFaults } from './faults.js';
import { computeGeometry, Layout, RecoveryErrorCodes, type Geometry, type LayoutOptions } from './layout.js';
import { RedoLog, type Effects } from './redo-log.js';
import { executeEntry, recover, type AppView, type Handler, type RecoveryReport } from './recover.js';
import { checkCredit, encodeEntry, entryOffset, inspectSlot, invalidateSlot, Ring, type RingEntry } from './ring.js';

export interface StoreOptions extends LayoutOptions {
  /** Consecutive polls that may see an entry partially arrived before PMRPC_ERR_ENTRY_TORN. */
  partialPollsMax: number;
  /** Test-only fault switches (DESIGN §8); never set in production. */
  faults: RecoveryFaults | undefined;
}

export const STORE_DEFAULTS: Readonly<Omit<StoreOptions, keyof LayoutOptions>> = Object.freeze({ partialPollsMax: 1000, faults: undefined });

export interface ClientInfo extends ConnEntry {
  /** Where the client's ring starts (its slot of `seq` is entryOffset(clientId, seq)). */
  ringOffset: number;
  /** The credit word the client READs: its applied sequence. */
  creditOffset: number;
}

export class RecoveryStore {
  readonly region: PmemRegion;
  readonly layout: Layout;
  readonly geometry: Geometry;
  readonly conn: ConnTable;
  readonly log: RedoLog;
  readonly faults: RecoveryFaults;
  readonly partialPollsMax: number;
  #ready: boolean;
  #resume = new Map<number, number>();
  #rings = new Map<number, Ring>();
  #appView: AppView;

  private constructor(layout: Layout, options: { partialPollsMax: number; faults: RecoveryFaults }, ready: boolean) {
    this.region = layout.region;
    this.layout = layout;
    this.geometry = layout.geometry;
    this.faults = options.faults;
    this.partialPollsMax = options.partialPollsMax;
    this.conn = new ConnTable(layout, this.faults);
    this.log = new RedoLog(layout, this.conn, { faults: this.faults });
    this.#ready = ready;
    const r = this.region;
    const base = this.geometry.appOffset;
    const size = this.geometry.appBytes;
    const inApp = (o: number, len: number): number => {
      if (!Number.isInteger(o) || !Number.isInteger(len) || o < 0 || len < 0 || o + len > size) {
        throw new PmrpcError(RecoveryErrorCodes.EFFECT_OUT_OF_BOUNDS, `read [${o}, ${o + len}) is outside the application area [0, ${size})`);
      }
      return base + o;
    };
    this.#appView = Object.freeze({
      sizeBytes: size,
      load: (o: number, len: number) => r.load(inApp(o, len), len),
      loadU32: (o: number) => r.loadU32(inApp(o, 4)),
      loadU64: (o: number) => r.loadU64(inApp(o, 8)),
    });
  }

  /** Formats a fresh layout in `region` (refused if one is there) and returns a ready store. */
  static format(region: PmemRegion, options: Partial<StoreOptions> = {}): RecoveryStore {
    const { partialPollsMax, faults, ...layoutOpts } = resolve(options);
    computeGeometry(layoutOpts);
    return new RecoveryStore(Layout.format(region, layoutOpts), { partialPollsMax, faults }, true);
  }

  /** Opens an existing layout (validating it). Call recover() before serving. */
  static open(region: PmemRegion, options: Partial<Pick<StoreOptions, 'baseOffset' | 'partialPollsMax' | 'faults'>> = {}): RecoveryStore {
    const { partialPollsMax, faults, baseOffset } = resolve(options);
    return new RecoveryStore(Layout.open(region, { baseOffset }), { partialPollsMax, faults }, false);
  }

  get ready(): boolean {
    return this.#ready;
  }

  get epoch(): number {
    return this.layout.epoch;
  }

  /** Read-only view of the application area, for handlers. */
  get appView(): AppView {
    return this.#appView;
  }

  /**
   * Runs recovery (recover.ts). With a handler, durable entries past the applied ones are
   * re-executed through the redo log; without one they are returned and the caller must execute
   * them (executeEntry) before anything else. Safe to run again after a crash during it.
   */
  recover(handler?: Handler): RecoveryReport {
    if (handler !== undefined && typeof handler !== 'function') throw new TypeError('handler must be a function');
    const report = recover({ layout: this.layout, conn: this.conn, log: this.log, faults: this.faults, appView: this.#appView }, handler);
    this.#rings.clear();
    this.#resume.clear();
    for (const c of report.clients) this.#resume.set(c.clientId, c.resumeSeq);
    this.#ready = true;
    return report;
  }

  /**
   * Issues a new client id (never reused) with its ring. `secret` (the RPC server draws 32 random
   * bytes from its entropy) is kept only as its SHA-256; reconnect and resume present it
   * (authenticate).
   */
  register(secret: Uint8Array = new Uint8Array(0)): ClientInfo {
    this.#assertReady();
    checkSecret(secret);
    const e = this.conn.register(secretHash(secret));
    this.#resume.set(e.clientId, 1);
    return this.client(e.clientId);
  }

  /** PMRPC_ERR_CLIENT_AUTH unless `secret` is the one the client registered with (constant time); reads only. */
  authenticate(clientId: number, secret: Uint8Array): void {
    checkSecret(secret);
    this.conn.authenticate(clientId, secret);
  }

  /**
   * Whether the client can be released now: every entry of it that reached its ring is applied
   * (nothing polled and not applied, no valid entry waiting at applied + 1). Reads only.
   */
  drained(clientId: number): boolean {
    const applied = this.conn.appliedSeq(clientId);
    const ring = this.#rings.get(clientId);
    if (ring !== undefined && ring.nextSeq > applied + 1) return false;
    const e = this.conn.lookup(clientId);
    const ins = inspectSlot(this.region, entryOffset(this.layout, e.connSlot, applied + 1), this.geometry, { clientId, seq: applied + 1 });
    return !(ins.checksumValid && ins.lap === 'expected');
  }

  client(clientId: number): ClientInfo {
    const e = this.conn.lookup(clientId);
    return { ...e, ringOffset: this.layout.ringOffset(e.connSlot), creditOffset: this.conn.creditOffset(clientId) };
  }

  /**
   * Durably invalidates every entry of the client's ring past its applied sequence (a client that
   * said goodbye placed them after it: they are void). Returns how many slots it cleared.
   */
  discardUnapplied(clientId: number): number {
    this.#assertReady();
    const e = this.conn.lookup(clientId);
    let n = 0;
    for (let s = e.appliedSeq + 1; s <= e.appliedSeq + this.geometry.ringSlots; s++) {
      const off = entryOffset(this.layout, e.connSlot, s);
      if (this.region.loadU64Atomic(off) === 0n) continue;
      invalidateSlot(this.region, off);
      n++;
    }
    // Whatever was polled past the applied sequence is void too: polling starts again after it.
    this.#rings.delete(clientId);
    this.#resume.set(clientId, e.appliedSeq + 1);
    return n;
  }

  /**
   * Releases the client's slot (and ring) for reuse: refused with PMRPC_ERR_CLIENT_BUSY while an
   * entry of it is not applied (drained()). The decision is durable when this returns (the caller
   * may acknowledge it); a crash before that leaves the client registered (undone), a crash after
   * it is finished by recovery (row release-finish). Its results in the log are dropped.
   */
  release(clientId: number): void {
    this.#assertReady();
    this.conn.lookup(clientId);
    // A released client's records must be applied durably first (recovery refuses an unapplied record of a client not in the table).
    this.log.completeAll();
    if (!this.faults.skipReleaseDrainCheck && !this.drained(clientId)) {
      throw new PmrpcError(RecoveryErrorCodes.CLIENT_BUSY, `client ${clientId} still has entries that are not applied: it is released only once they are`);
    }
    this.conn.release(clientId);
    this.#rings.delete(clientId);
    this.#resume.delete(clientId);
  }

  /** First sequence the client must (re)send: past its durable prefix. */
  resumeSeq(clientId: number): number {
    this.conn.lookup(clientId);
    return this.#resume.get(clientId) ?? this.conn.appliedSeq(clientId) + 1;
  }

  /** Offset where the client's WRITE of `seq` goes. */
  entryOffset(clientId: number, seq: number): number {
    return entryOffset(this.layout, this.conn.lookup(clientId).connSlot, seq);
  }

  /** The bytes of the client's WRITE of a request (checks size; not credits). */
  encodeEntry(req: RingEntry): Uint8Array {
    return encodeEntry(req, this.geometry);
  }

  /** Producer-side credit check against the credit word's current value (PMRPC_ERR_RING_FULL). */
  checkCredit(clientId: number, seq: number): void {
    const credit = Number(this.region.loadU64Atomic(this.conn.creditOffset(clientId)));
    checkCredit(seq, credit, this.geometry.ringSlots);
  }

  /** The consumer side of a client's ring, polling from its resume point. */
  ring(clientId: number): Ring {
    this.#assertReady();
    let ring = this.#rings.get(clientId);
    if (ring === undefined) {
      const e = this.conn.lookup(clientId);
      const resume = this.resumeSeq(clientId);
      // Ring positions: polling starts past the client's applied sequence (an applied entry polled
      // again would be executed, and its effects committed, twice).
      invariant(resume > e.appliedSeq, () => `client ${clientId}: the ring would poll from ${resume}, but ${e.appliedSeq} is applied`);
      ring = new Ring(this.layout, e.connSlot, clientId, resume, { partialPollsMax: this.partialPollsMax, faults: this.faults });
      this.#rings.set(clientId, ring);
    }
    return ring;
  }

  /** Group commit of the redo log's persists (RedoLog.batch; docs/recovery.md, "Group commit"). */
  batch<T>(fn: () => T): T {
    this.#assertReady();
    return this.log.batch(fn);
  }

  /** Inside batch(): settles what it committed so far (RedoLog.settle). */
  settle(): void {
    this.log.settle();
  }

  /** Finishes every lazily settled record of group commit now (RedoLog.completeAll): images, applied words, flags, synced. */
  completeAll(): void {
    this.log.completeAll();
  }

  /** Runs the handler on a polled entry and commits its effects through the redo log (FIFO). */
  execute(entry: RingEntry, handler: Handler): { lsn: number; result: Uint8Array | undefined } {
    this.#assertReady();
    return executeEntry({ conn: this.conn, log: this.log, appView: this.#appView }, entry, handler);
  }

  /** Commits precomputed effects (e.g. from a worker) of (clientId, seq), FIFO checked. */
  commit(clientId: number, seq: number, effects: Effects): { lsn: number } {
    this.#assertReady();
    const applied = this.log.pendingApplied(clientId) ?? this.conn.appliedSeq(clientId);
    if (seq !== applied + 1) throw new PmrpcError(RecoveryErrorCodes.OUT_OF_ORDER, `client ${clientId}: sequence ${seq} committed out of order (applied up to ${applied})`);
    return this.log.commit(clientId, seq, effects);
  }

  /**
   * The result kept in the effect record of (clientId, seq), while that record is still in the
   * log (records are reused after logRecords newer ones); undefined when it is gone, never applied,
   * or kept no result. The RPC layer answers PMRPC_ERR_RESULT_LOST for a durable request then.
   */
  resultOf(clientId: number, seq: number): Uint8Array | undefined {
    for (const rec of this.log.scan()) {
      if ((rec.state === 'applied' || this.log.isSettled(rec.lsn)) && rec.clientId === clientId && rec.seq === seq) return rec.result;
    }
    return undefined;
  }

  #assertReady(): void {
    if (!this.#ready) throw new PmrpcError(RecoveryErrorCodes.NOT_RECOVERED, 'the store was opened but not recovered: call recover() first');
  }
}

function checkSecret(secret: unknown): void {
  if (!(secret instanceof Uint8Array)) throw new TypeError('secret must be a Uint8Array');
  if (secret.length > SECRET_BYTES_MAX) throw new RangeError(`secret must be at most ${SECRET_BYTES_MAX} bytes, got ${secret.length}`);
}

function resolve(options: Partial<StoreOptions>): StoreOptions & { faults: RecoveryFaults } {
  const g = computeGeometry(options); // the layout options (and that options is an object)
  const o = resolveOptions(STORE_DEFAULTS, options, { partialPollsMax: positiveInt });
  return {
    baseOffset: g.baseOffset, maxClients: g.maxClients, ringSlots: g.ringSlots, slotBytes: g.slotBytes,
    logRecords: g.logRecords, recordBytes: g.recordBytes, appBytes: g.appBytes,
    partialPollsMax: o.partialPollsMax, faults: checkFaults(o.faults),
  };
}
