/**
 * RecoveryStore: the validating shell over the layer's parts (layout, connection table, rings,
 * redo log, recovery), the object the durable RPC server holds. format() makes a fresh store that
 * is ready; open() validates an existing one, which then needs recover() before it serves.
 */
import { PmrpcError, positiveInt, resolveOptions, type PmemRegion } from '../pmem/index.js';
import { ConnTable, type ConnEntry } from './conn-table.js';
import { checkFaults, type RecoveryFaults } from './faults.js';
import { computeGeometry, Layout, RecoveryErrorCodes, type Geometry, type LayoutOptions } from './layout.js';
import { RedoLog, type Effects } from './redo-log.js';
import { executeEntry, recover, type AppView, type Handler, type RecoveryReport } from './recover.js';
import { checkCredit, encodeEntry, entryOffset, Ring, type RingEntry } from './ring.js';

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
    for (const c of report.clients) this.#resume.set(c.clientId, c.resumeSeq);
    this.#ready = true;
    return report;
  }

  /** Issues a new client id (never reused) with its ring. */
  register(): ClientInfo {
    this.#assertReady();
    const e = this.conn.register();
    this.#resume.set(e.clientId, 1);
    return this.client(e.clientId);
  }

  client(clientId: number): ClientInfo {
    const e = this.conn.lookup(clientId);
    return { ...e, ringOffset: this.layout.ringOffset(e.connSlot), creditOffset: this.conn.creditOffset(clientId) };
  }

  release(clientId: number): void {
    this.#assertReady();
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
      ring = new Ring(this.layout, e.connSlot, clientId, this.resumeSeq(clientId), { partialPollsMax: this.partialPollsMax, faults: this.faults });
      this.#rings.set(clientId, ring);
    }
    return ring;
  }

  /** Runs the handler on a polled entry and commits its effects through the redo log (FIFO). */
  execute(entry: RingEntry, handler: Handler): { lsn: number; result: Uint8Array | undefined } {
    this.#assertReady();
    return executeEntry({ conn: this.conn, log: this.log, appView: this.#appView }, entry, handler);
  }

  /** Commits precomputed effects (e.g. from a worker) of (clientId, seq), FIFO checked. */
  commit(clientId: number, seq: number, effects: Effects): { lsn: number } {
    this.#assertReady();
    const applied = this.conn.appliedSeq(clientId);
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
      if (rec.state === 'applied' && rec.clientId === clientId && rec.seq === seq) return rec.result;
    }
    return undefined;
  }

  #assertReady(): void {
    if (!this.#ready) throw new PmrpcError(RecoveryErrorCodes.NOT_RECOVERED, 'the store was opened but not recovered: call recover() first');
  }
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
