/**
 * The redo log of effects (DESIGN §3). A record holds physical after-images (offset, bytes) of
 * the application area plus (client, sequence, result). Protocol, in one total order (LSN):
 *   1. write the record, persist it;
 *   2. apply its after-images, persist them;
 *   3. set its applied flag (one aligned word = its LSN), persist it;
 *   4. set the client's applied word in the connection table (visible: the credit returns).
 * The applied flag is the single truth; the table word is derived from it and made durable before
 * the record slot is reused (slot of LSN L+logRecords). Replaying a complete record is idempotent
 * because it holds after-images.
 *
 * Record (in a slot of `recordBytes`, little-endian):
 *    0  applied flag u64 (== LSN when applied)
 *    8  LSN u64 (from 1)
 *   16  client id u32       20  image count u32
 *   24  sequence u64
 *   32  result length u32   36  body length u32
 *   40  CRC-32C of [8, 40) ‖ body u32      44  reserved u32 (0)
 *   48  body: result (padded to 8), then per image: offset u32, length u32, bytes (padded to 8)
 */
import { crc32c, invariant, PmrpcError } from '../pmem/index.js';
import type { ConnTable } from './conn-table.js';
import { checkFaults, type RecoveryFaults } from './faults.js';
import { RecoveryErrorCodes, type Layout } from './layout.js';

export const RECORD_HEADER_BYTES = 48;
/** A cache line (pmem's flush unit). */
const LINE = 64;
/** Entries of the redo log's direct-mapped cache of lines noted for flushing (a power of 2). */
const LINE_CACHE = 64;

/** One after-image: `bytes` to be at `offset` of the application area. */
export interface EffectImage {
  offset: number;
  bytes: Uint8Array;
}

export interface Effects {
  images: EffectImage[];
  /** Result bytes kept in the record (delivered after a crash), if any. */
  result?: Uint8Array;
}

export type RecordState = 'none' | 'incomplete' | 'complete-unapplied' | 'applied';

export interface RecordInfo {
  index: number;
  state: RecordState;
  /** Fields below are trustworthy only when state is complete-unapplied or applied. */
  lsn: number;
  clientId: number;
  seq: number;
  images: EffectImage[];
  result: Uint8Array | undefined;
}

const pad8 = (n: number): number => (n + 7) & ~7;

/** Bytes of a record body for these effects. */
export function bodyBytes(effects: Effects): number {
  let n = pad8(effects.result?.length ?? 0);
  for (const im of effects.images) n += 8 + pad8(im.bytes.length);
  return n;
}

/** Validates effects against the application area and the record size; returns the record body's bytes (bodyBytes). */
export function checkEffects(effects: Effects, layout: Layout): number {
  if (effects === null || typeof effects !== 'object' || !Array.isArray(effects.images)) {
    throw new TypeError('effects must be an object { images: EffectImage[], result?: Uint8Array }');
  }
  if (effects.result !== undefined && !(effects.result instanceof Uint8Array)) throw new TypeError('effects.result must be a Uint8Array');
  const app = layout.geometry.appBytes;
  for (const im of effects.images) {
    if (im === null || typeof im !== 'object' || !(im.bytes instanceof Uint8Array) || !Number.isInteger(im.offset)) {
      throw new TypeError('each effect image must be { offset: integer, bytes: Uint8Array }');
    }
    if (im.offset < 0 || im.offset + im.bytes.length > app) {
      throw new PmrpcError(RecoveryErrorCodes.EFFECT_OUT_OF_BOUNDS, `effect [${im.offset}, ${im.offset + im.bytes.length}) is outside the application area [0, ${app})`);
    }
  }
  const body = bodyBytes(effects);
  const need = RECORD_HEADER_BYTES + body;
  if (need > layout.geometry.recordBytes) {
    throw new PmrpcError(RecoveryErrorCodes.TOO_LARGE, `effects need a ${need}-byte record; log records hold ${layout.geometry.recordBytes}`);
  }
  return body;
}

export function encodeRecord(lsn: number, clientId: number, seq: number, effects: Effects): Uint8Array {
  const body = bodyBytes(effects);
  const b = new Uint8Array(RECORD_HEADER_BYTES + body);
  encodeRecordInto(b, new DataView(b.buffer), lsn, clientId, seq, effects, body);
  return b;
}

const TWO_32 = 0x1_0000_0000;
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** A safe integer as a little-endian u64 (two u32 stores: no BigInt on the hot path). */
function setU64(dv: DataView, at: number, v: number): void {
  dv.setUint32(at, v >>> 0, true);
  dv.setUint32(at + 4, Math.floor(v / TWO_32), true);
}

/** A little-endian u64 as a Number, or -1 past Number.MAX_SAFE_INTEGER. */
function getU64(dv: DataView, at: number): number {
  const hi = dv.getUint32(at + 4, true);
  return hi > 0x1f_ffff ? -1 : hi * TWO_32 + dv.getUint32(at, true);
}

/**
 * Encodes the record into `b` from byte 8 (the flag word is not the record's: the caller stores
 * from byte 8) and returns its length. `dv` views `b` from its offset 0; `body` is bodyBytes(effects).
 */
function encodeRecordInto(b: Uint8Array, dv: DataView, lsn: number, clientId: number, seq: number, effects: Effects, body: number): number {
  const length = RECORD_HEADER_BYTES + body;
  setU64(dv, 8, lsn);
  dv.setUint32(16, clientId, true);
  dv.setUint32(20, effects.images.length, true);
  setU64(dv, 24, seq);
  const result = effects.result;
  dv.setUint32(32, result?.length ?? 0, true);
  dv.setUint32(36, body, true);
  dv.setUint32(44, 0, true);
  let p = RECORD_HEADER_BYTES;
  if (result !== undefined) p = putPadded(b, p, result);
  const images = effects.images;
  for (let i = 0; i < images.length; i++) {
    const im = images[i]!;
    dv.setUint32(p, im.offset, true);
    dv.setUint32(p + 4, im.bytes.length, true);
    p = putPadded(b, p + 8, im.bytes);
  }
  dv.setUint32(40, recordChecksum(b, body), true);
  return length;
}

/**
 * `bytes` at `p`, then zeros to the next multiple of 8 (every byte of a record is written: the
 * scratch is not cleared first); returns the end. Short arrays byte by byte (a typed-array set
 * costs more than the copy below ~64 bytes).
 */
function putPadded(b: Uint8Array, p: number, bytes: Uint8Array): number {
  const n = bytes.length;
  if (n > 64) b.set(bytes, p);
  else for (let i = 0; i < n; i++) b[p + i] = bytes[i]!;
  const end = p + pad8(n);
  for (let i = p + n; i < end; i++) b[i] = 0;
  return end;
}

function recordChecksum(b: Uint8Array, body: number): number {
  return crc32c(b, RECORD_HEADER_BYTES, RECORD_HEADER_BYTES + body, crc32c(b, 8, 40));
}

/** Reads and classifies one record slot. With verifyChecksum false, trusts any sane header (fault). */
export function readRecord(layout: Layout, index: number, verifyChecksum = true): RecordInfo {
  const r = layout.region;
  const off = layout.recordOffset(index);
  const head = r.view(off, RECORD_HEADER_BYTES);
  const dv = new DataView(head.buffer, head.byteOffset, RECORD_HEADER_BYTES);
  const flagLo = dv.getUint32(0, true);
  const flagHi = dv.getUint32(4, true);
  const lsnLo = dv.getUint32(8, true);
  const lsnHi = dv.getUint32(12, true);
  const lsnNum = getU64(dv, 8);
  const clientId = dv.getUint32(16, true);
  const imageCount = dv.getUint32(20, true);
  const seqNum = getU64(dv, 24);
  const resultLength = dv.getUint32(32, true);
  const body = dv.getUint32(36, true);
  const crc = dv.getUint32(40, true);
  const reserved = dv.getUint32(44, true);
  // For an incomplete record the header fields are untrusted: kept only to attribute the tear.
  const rawSeq = seqNum >= 0 ? seqNum : 0;
  const rawLsn = lsnNum >= 0 ? lsnNum : 0;
  const info: RecordInfo = { index, state: 'incomplete', lsn: rawLsn, clientId, seq: rawSeq, images: [], result: undefined };
  if (flagLo === 0 && flagHi === 0 && head.every((x) => x === 0)) return { ...info, state: 'none', lsn: 0, clientId: 0, seq: 0 };
  const app = layout.geometry.appBytes;
  const sane =
    lsnNum >= 1 && seqNum >= 1 &&
    clientId >= 1 && body % 8 === 0 && RECORD_HEADER_BYTES + body <= layout.geometry.recordBytes && pad8(resultLength) <= body && reserved === 0;
  if (!sane) return info;
  // Checked on the copy that is kept: what was verified is what the caller gets.
  const b = r.load(off, RECORD_HEADER_BYTES + body);
  if (verifyChecksum && recordChecksum(b, body) !== crc) return info;
  // Parse the body; a malformed body under a valid checksum cannot come from encodeRecord.
  const bdv = new DataView(b.buffer);
  let p = RECORD_HEADER_BYTES + pad8(resultLength);
  const images: EffectImage[] = [];
  for (let i = 0; i < imageCount; i++) {
    if (p + 8 > b.length) return info;
    const o = bdv.getUint32(p, true);
    const len = bdv.getUint32(p + 4, true);
    if (p + 8 + len > b.length || o + len > app) return info;
    images.push({ offset: o, bytes: b.subarray(p + 8, p + 8 + len) });
    p += 8 + pad8(len);
  }
  return {
    index,
    state: flagLo === lsnLo && flagHi === lsnHi ? 'applied' : 'complete-unapplied',
    lsn: lsnNum,
    clientId,
    seq: seqNum,
    images,
    result: resultLength > 0 ? b.slice(RECORD_HEADER_BYTES, RECORD_HEADER_BYTES + resultLength) : new Uint8Array(0),
  };
}

export interface RedoLogOptions {
  faults: RecoveryFaults | undefined;
}

export class RedoLog {
  readonly layout: Layout;
  readonly conn: ConnTable;
  #faults: RecoveryFaults;
  #nextLsn: number;
  /** Whether inside batch(). */
  #inBatch = false;
  /**
   * Inside batch(): the slots of the records committed (persisted, images stored) whose images and
   * flags wait for settle(), in LSN order (#batchN of them). A record is named by its slot: its LSN,
   * client and sequence are #slotLsn, #slotClient and #slotSeq there (a slot in the pipeline is not
   * reused before completeAll(): no per-record object on the hot path).
   */
  #batchSlots: Int32Array;
  #batchN = 0;
  /**
   * Inside batch(): the highest sequence committed and not settled yet, per client — the last
   * committing client's in #pendClient / #pendSeq (a batch part is one client's: no map operation
   * per request), the others' in #pendingApplied.
   */
  #pendingApplied = new Map<number, number>();
  #pendClient = -1;
  #pendSeq = 0;
  /**
   * Lazy apply of group commit (docs/recovery.md, "Group commit"): settled records (durable at the
   * next sync; images stored in visible memory, credits given) whose images are flushed at the
   * next batch's start...
   */
  #lazyImages: Int32Array;
  #lazyImagesN = 0;
  /** ...then records whose images were drained at the previous batch's start: their flags are set at the next one. */
  #lazyFlags: Int32Array;
  #lazyFlagsN = 0;
  /** Per slot: 1 while its record is in #lazyImages or #lazyFlags (committed and settled, flag not set yet); #lazyCount of them. */
  #lazySlot: Uint8Array;
  #lazyCount = 0;
  /**
   * The region lines the after-images of the records committed in batches since the last step
   * stored (the lines #persistImages flushes): runs [first, last] of lines, each line once (a
   * direct-mapped cache of lines seen; a line missed by it is flushed twice, which is the same).
   * Committed at a batch's first commit at the earliest and flushed at its step: exactly the
   * lines of #lazyImages' records at #advance and completeAll (the batch is settled by then).
   */
  #runs = new Int32Array(64);
  #runsN = 0;
  #lineSeen = new Int32Array(LINE_CACHE).fill(-1);
  /** Views of the scratch from byte 8, by record length (no subarray per commit). */
  #scratchViews: Array<Uint8Array | undefined> = [];
  /** region.syncMark() after the pipeline's last drains (settled records, advanced images and words): synced before the next step. */
  #lazyMark = 0;
  /** region.syncMark() at the last settle: the records settled so far are drained by then (their words and images wait for its sync). */
  #settleMark = 0;
  /**
   * Per slot: 1 when its record was flagged by the pipeline's step (#setFlags): its client's applied
   * word, at least its sequence, was persisted and synced before (the step before, or completeAll).
   */
  #flaggedByStep: Uint8Array;
  /** Inside batch(): the pipeline advanced at its first commit. */
  #advanced = false;
  /** Scratch of one record (commits run one at a time, on the region's owner thread). */
  #scratch: Uint8Array;
  #scratchDv: DataView;
  /**
   * Per record slot: LSN, client and sequence of the record this log wrote there and read back
   * (LSN 0: none since open). The reuse check reads only the slot's header words against them.
   */
  #slotLsn: Float64Array;
  #slotClient: Uint32Array;
  #slotSeq: Float64Array;
  /**
   * The log area's visible memory as little-endian words (a view, no copy; read only — every store
   * goes through the region), and the scratch's: commit's read-back and the reuse check compare
   * words in place (no region call per word). Undefined on a big-endian host (the region's calls then).
   */
  #log32: Uint32Array | undefined;
  #scratch32: Uint32Array;
  /** Words of a record slot. */
  #slotWords: number;

  /** Scans the log to find the next LSN (one past the highest complete record). */
  constructor(layout: Layout, conn: ConnTable, options: Partial<RedoLogOptions> = {}) {
    this.layout = layout;
    this.conn = conn;
    this.#faults = checkFaults(options.faults);
    const g = layout.geometry;
    this.#scratch = new Uint8Array(g.recordBytes);
    this.#scratchDv = new DataView(this.#scratch.buffer);
    this.#scratch32 = new Uint32Array(this.#scratch.buffer);
    this.#slotWords = g.recordBytes >>> 2;
    const logView = layout.region.view(g.logOffset, g.logRecords * g.recordBytes);
    this.#log32 = LITTLE_ENDIAN && (logView.byteOffset & 3) === 0 ? new Uint32Array(logView.buffer, logView.byteOffset, logView.length >>> 2) : undefined;
    this.#slotLsn = new Float64Array(g.logRecords);
    this.#slotClient = new Uint32Array(g.logRecords);
    this.#slotSeq = new Float64Array(g.logRecords);
    this.#batchSlots = new Int32Array(g.logRecords);
    this.#lazyImages = new Int32Array(g.logRecords);
    this.#lazyFlags = new Int32Array(g.logRecords);
    this.#lazySlot = new Uint8Array(g.logRecords);
    this.#flaggedByStep = new Uint8Array(g.logRecords);
    let max = 0;
    for (const rec of this.scan()) if (rec.state === 'applied' || rec.state === 'complete-unapplied') max = Math.max(max, rec.lsn);
    this.#nextLsn = max + 1;
  }

  get nextLsn(): number {
    return this.#nextLsn;
  }

  /** Every record slot, classified (checksums verified unless the fault switch says otherwise). */
  scan(): RecordInfo[] {
    const out: RecordInfo[] = [];
    for (let i = 0; i < this.layout.geometry.logRecords; i++) out.push(readRecord(this.layout, i, !this.#faults.skipChecksumAtRecovery));
    return out;
  }

  /**
   * Writes, persists, applies and marks applied the effects of request (clientId, seq). Inside
   * batch(): writes and persists the record and stores its after-images (visible to the next
   * request at once), and leaves flushing the images and the applied flag to the batch's end.
   */
  commit(clientId: number, seq: number, effects: Effects): { lsn: number } {
    const body = checkEffects(effects, this.layout);
    // At most once, in order: a client's request is committed after everything it applied.
    const before = this.pendingApplied(clientId) ?? this.conn.appliedSeq(clientId);
    if (!(seq > before)) invariant(false, () => `client ${clientId}: request ${seq} committed again (applied up to ${before})`);
    const inBatch = this.#inBatch;
    // The lazy pipeline advances at a batch's first commit (a pass with no request costs nothing), before this batch stores anything.
    if (inBatch && !this.#advanced) {
      this.#advanced = true;
      this.#advance();
    }
    // A batch never wraps onto its own records: settle it first.
    if (inBatch && this.#batchN >= this.layout.geometry.logRecords) this.settle();
    const lsn = this.#nextLsn;
    const index = (lsn - 1) % this.layout.geometry.logRecords;
    this.#prepareReuse(index, lsn);
    const r = this.layout.region;
    const off = this.layout.recordOffset(index);
    // Encoded into the log's scratch buffer (no allocation per commit), stored, then read back once.
    const length = encodeRecordInto(this.#scratch, this.#scratchDv, lsn, clientId, seq, effects, body);
    const encoded = this.#scratchViews[length] ?? (this.#scratchViews[length] = this.#scratch.subarray(8, length));
    r.store(off + 8, encoded);
    this.#checkReadBack(index, off, encoded, lsn);
    this.#slotLsn[index] = lsn;
    this.#slotClient[index] = clientId;
    this.#slotSeq[index] = seq;
    if (!this.#faults.skipPersistRecordBeforeApply) r.persist(off, length);
    this.#nextLsn = lsn + 1;
    const images = effects.images;
    if (!inBatch) {
      // The record as read back: the checksum of the stored bytes is the one computed over `effects`, so its images are these.
      const back: RecordInfo = { index, state: 'complete-unapplied', lsn, clientId, seq, images: images.slice(), result: undefined };
      this.apply(back);
    } else {
      // Its images stored now (visible to the next request); the lines they dirty are noted now
      // (the lazy pipeline flushes them a batch later, and a caller may reuse its effects objects by then).
      const app = this.layout.geometry.appOffset;
      for (let i = 0; i < images.length; i++) {
        const im = images[i]!;
        r.store(app + im.offset, im.bytes);
        if (im.bytes.length > 0) this.#noteLines(app + im.offset, im.bytes.length);
      }
      this.#batchSlots[this.#batchN++] = index;
      if (clientId !== this.#pendClient) {
        if (this.#pendClient !== -1) this.#pendingApplied.set(this.#pendClient, this.#pendSeq);
        this.#pendingApplied.delete(clientId);
        this.#pendClient = clientId;
      }
      this.#pendSeq = seq;
    }
    return { lsn };
  }

  /** Notes the region lines of [offset, offset + len) for the next #persistImages. */
  #noteLines(offset: number, len: number): void {
    const first = (offset / LINE) | 0;
    const last = ((offset + len - 1) / LINE) | 0;
    const n = this.#runsN;
    if (n > 0) {
      // Within or just past the last run: extend it.
      const e = this.#runs[n - 1]!;
      if (first >= this.#runs[n - 2]! && first <= e + 1) {
        if (last > e) this.#runs[n - 1] = last;
        return;
      }
    }
    if (first === last) {
      const h = first & (LINE_CACHE - 1);
      if (this.#lineSeen[h] === first) return;
      this.#lineSeen[h] = first;
    }
    if (n + 2 > this.#runs.length) {
      const grown = new Int32Array(this.#runs.length * 2);
      grown.set(this.#runs);
      this.#runs = grown;
    }
    this.#runs[n] = first;
    this.#runs[n + 1] = last;
    this.#runsN = n + 2;
  }

  /**
   * Group commit of the redo log (docs/recovery.md, "Group commit"): commits inside `fn` share
   * their persists, and steps 2–3 of the protocol run LAZILY, one batch behind each other, so that
   * a `strict` region needs ONE msync per batch (the caller's: the end of its region.groupCommit,
   * or the acknowledgement gate):
   *   - at commit: the record is written and persisted (drained), its images stored (visible);
   *   - at the batch's end (settle): the applied words (credits) are set, nothing is flushed;
   *   - at the next batch's start (advance), after a region.sync() (a no-op when the previous batch
   *     ended in one): the flags of the records whose images were drained at the previous start
   *     are set and persisted; the images of the records settled since are flushed and drained,
   *     and their clients' applied words persisted.
   * So each media write follows the sync of what it depends on: records before their images (one
   * batch), images before their flags (one more). A request is answered once its record is synced:
   * a complete record is replayed by recovery even behind the table's applied word (recover.ts).
   * completeAll() finishes everything at once (3 syncs): before a release, at close, and when the
   * slot of a record still in the pipeline must be reused. Nested calls join the outer batch.
   */
  batch<T>(fn: () => T): T {
    if (this.#inBatch) return fn();
    this.#inBatch = true;
    this.#batchN = 0;
    this.#advanced = false;
    try {
      return fn();
    } finally {
      try {
        this.settle();
      } finally {
        this.#inBatch = false;
        this.#batchN = 0;
      }
    }
  }

  /** Inside batch(): settles the records committed so far (their applied words, the credits, are set; images and flags follow lazily), and stays in the batch. */
  settle(): void {
    const n = this.#batchN;
    if (!this.#inBatch || n === 0) return;
    this.#batchN = 0;
    if (this.#pendingApplied.size > 0) this.#pendingApplied.clear(); // (clear allocates a new table even when empty)
    this.#pendClient = -1;
    const b = this.#batchSlots;
    const conn = this.conn;
    for (let i = 0; i < n; i++) {
      const index = b[i]!;
      const clientId = this.#slotClient[index]!;
      if (conn.has(clientId)) conn.setApplied(clientId, Math.max(this.#slotSeq[index]!, conn.appliedSeq(clientId)));
      if (this.#lazySlot[index] !== 0 || this.#lazyCount >= this.#lazySlot.length) invariant(false, () => `record slot ${index} settled twice`);
      this.#lazyImages[this.#lazyImagesN++] = index;
      this.#lazySlot[index] = 1;
      this.#lazyCount++;
    }
    this.#lazyMark = this.#settleMark = this.layout.region.syncMark();
  }

  /** region.syncMark() at the last settle: until it is synced, no applied word, image or flag of the pipeline may be drained. */
  get settledMark(): number {
    return this.#settleMark;
  }

  /** Records settled whose applied flag is not set yet (lazy group commit). */
  get lazyRecords(): number {
    return this.#lazyCount;
  }

  /**
   * The region mark the lazy pipeline's next step (at the next batch's first commit) needs synced
   * before it writes (images after their records, flags after their images); -1 when that step has
   * nothing to do. A caller that would rather not have the step sync on the thread waits for it
   * (PmemRegion.whenSynced) before starting the batch.
   */
  get advanceMark(): number {
    return this.#lazyCount === 0 ? -1 : this.#lazyMark;
  }

  /**
   * Whether a batch may start without the lazy step its pipeline owes (docs/recovery.md, "Group
   * commit"): the step depends on a batch waiting for a queued async msync (not yet in the file),
   * and the pipeline holds under a quarter of the log. The step is then skipped, not synced on the
   * thread: the next batch's step does both batches' work once the msync holding them runs.
   */
  get canLag(): boolean {
    return this.layout.region.syncing && this.#lazyCount < this.layout.geometry.logRecords / 4;
  }

  /** Whether record `lsn` is settled (its request answered) but its flag lazily not set yet: as good as applied. */
  isSettled(lsn: number): boolean {
    if (!Number.isSafeInteger(lsn) || lsn < 1) return false;
    const index = (lsn - 1) % this.layout.geometry.logRecords;
    return this.#lazySlot[index] === 1 && this.#slotLsn[index] === lsn;
  }

  /** One step of the lazy pipeline, at a batch's start (see batch()). */
  #advance(): void {
    if (this.#lazyCount === 0) return;
    const r = this.layout.region;
    // The settled records, and the images and words drained at the previous step, are on the disk
    // (the previous batch's group ended in their msync: then this costs nothing).
    if (!r.isOrdered(this.#lazyMark)) {
      // What the step depends on waits for a queued msync: skip the step (its lists carry over to the next batch's).
      if (this.canLag) return;
      r.sync();
    }
    if (this.#lazyFlagsN > 0) this.#setFlags(this.#lazyFlags, this.#lazyFlagsN, this.#lazyImages, 0);
    this.#persistImages(this.#lazyImagesN);
    this.#persistWords(this.#lazyImages, this.#lazyImagesN, this.#lazyFlags, 0);
    // The images' records become the flags' (the two lists swap their storage).
    const flags = this.#lazyFlags;
    this.#lazyFlags = this.#lazyImages;
    this.#lazyFlagsN = this.#lazyImagesN;
    this.#lazyImages = flags;
    this.#lazyImagesN = 0;
    this.#lazyMark = r.syncMark();
  }

  /** Finishes every lazily settled record now: images, applied words, flags, each step synced. */
  completeAll(): void {
    if (this.#inBatch) this.settle();
    if (this.#lazyCount === 0) return;
    const r = this.layout.region;
    r.sync();
    this.#persistImages(this.#lazyImagesN);
    // Every record, the flags' first (in LSN order, as they were settled).
    this.#persistWords(this.#lazyFlags, this.#lazyFlagsN, this.#lazyImages, this.#lazyImagesN);
    r.sync();
    this.#setFlags(this.#lazyFlags, this.#lazyFlagsN, this.#lazyImages, this.#lazyImagesN);
    r.sync();
    this.#lazyFlagsN = 0;
    this.#lazyImagesN = 0;
  }

  /**
   * Flushes the lines the images of #lazyImages' `n` records dirtied (#noteLines: each line once,
   * runs of lines in one flush; the same snapshots as a flush per image, none of them drained in
   * between) and drains them.
   */
  #persistImages(n: number): void {
    const runs = this.#runs;
    const k = this.#runsN;
    this.#runsN = 0;
    this.#lineSeen.fill(-1);
    if (n === 0 || this.#faults.skipPersistApplyBeforeFlag) return;
    const r = this.layout.region;
    const g = this.layout.geometry;
    const lo = g.appOffset;
    const hi = g.appOffset + g.appBytes;
    for (let i = 0; i < k; i += 2) {
      const from = Math.max(runs[i]! * LINE, lo);
      const to = Math.min((runs[i + 1]! + 1) * LINE, hi);
      r.flush(from, to - from);
    }
    r.drain();
  }

  /** The applied words of the clients of records a[0, an) then b[0, bn), each client's once. */
  #persistWords(a: Int32Array, an: number, b: Int32Array, bn: number): void {
    if (this.#faults.skipPersistCreditBeforeReuse) return;
    // Once per client (a batch is mostly one client's: no set for the common case).
    let last = -1;
    let done: Set<number> | undefined;
    const client = this.#slotClient;
    for (let i = 0; i < an + bn; i++) {
      const id = client[i < an ? a[i]! : b[i - an]!]!;
      if (id === last || done?.has(id) === true) continue;
      if (last !== -1) (done ??= new Set([last])).add(id);
      last = id;
      this.conn.persistApplied(id);
    }
  }

  /**
   * Sets and persists the applied flags of records a[0, an) then b[0, bn) (one drain). Their slots
   * are mostly one run of consecutive slots (a batch's records, in LSN order): then the flags are
   * persisted by ONE persist over the run — the lines of the other words of those slots are clean
   * (each record was persisted at its commit), so it writes the same lines at the same point as a
   * flush per flag and a drain, without a snapshot per line.
   */
  #setFlags(a: Int32Array, an: number, b: Int32Array, bn: number): void {
    const r = this.layout.region;
    const layout = this.layout;
    const n = an + bn;
    let consecutive = true;
    let prev = -1;
    for (let i = 0; i < n; i++) {
      const index = i < an ? a[i]! : b[i - an]!;
      if (i > 0 && index !== prev + 1) consecutive = false;
      prev = index;
      r.storeU64Atomic(layout.recordOffset(index), BigInt(this.#slotLsn[index]!));
      this.#lazySlot[index] = 0;
      this.#lazyCount--;
      this.#flaggedByStep[index] = 1;
    }
    if (this.#faults.skipPersistAppliedFlag || n === 0) return;
    if (consecutive && !this.#faults.skipPersistRecordBeforeApply) {
      // (Under the skip-persist-record mutant the records' lines stay dirty: a flush per flag, as the mutant was written against.)
      const first = layout.recordOffset(an > 0 ? a[0]! : b[0]!);
      r.persist(first, layout.recordOffset(prev) + 8 - first);
      return;
    }
    for (let i = 0; i < n; i++) r.flush(layout.recordOffset(i < an ? a[i]! : b[i - an]!), 8);
    r.drain();
  }

  /**
   * Steps 2–4 for complete records, as one group, in LSN order: every record's images are stored
   * (the newest last) and persisted, then every flag. A crash in between leaves every flag of the
   * group as it was, so recovery replays the group again from its first record (idempotent).
   * Recovery replays with it, the batch settles with it.
   */
  applyInOrder(recs: readonly RecordInfo[]): void {
    if (recs.length === 0) return;
    for (const rec of recs) {
      invariant(rec.state === 'complete-unapplied' || rec.state === 'applied', () => `apply of a ${rec.state} record`);
      this.#checkSlotHolds(rec);
    }
    const r = this.layout.region;
    const app = this.layout.geometry.appOffset;
    r.sync(); // the records reach the disk before any of their images can
    for (const rec of recs) for (const im of rec.images) r.store(app + im.offset, im.bytes);
    if (!this.#faults.skipPersistApplyBeforeFlag) {
      for (const rec of recs) for (const im of rec.images) r.flush(app + im.offset, im.bytes.length);
      r.drain();
      r.sync(); // the images before the flags that say they are applied
    }
    for (const rec of recs) r.storeU64Atomic(this.layout.recordOffset(rec.index), BigInt(rec.lsn));
    if (!this.#faults.skipPersistAppliedFlag) {
      for (const rec of recs) r.flush(this.layout.recordOffset(rec.index), 8);
      r.drain();
    }
    for (const rec of recs) {
      if (this.conn.has(rec.clientId)) this.conn.setApplied(rec.clientId, Math.max(rec.seq, this.conn.appliedSeq(rec.clientId)));
      if (rec.lsn >= this.#nextLsn) this.#nextLsn = rec.lsn + 1;
    }
  }

  /** Inside batch(): the highest sequence of `clientId` committed but not settled yet. */
  pendingApplied(clientId: number): number | undefined {
    return clientId === this.#pendClient ? this.#pendSeq : this.#pendingApplied.get(clientId);
  }

  /** Steps 2–4 for a complete record: idempotent (recovery replays with it). */
  apply(rec: RecordInfo): void {
    invariant(rec.state === 'complete-unapplied' || rec.state === 'applied', () => `apply of a ${rec.state} record`);
    this.#checkSlotHolds(rec);
    const r = this.layout.region;
    const app = this.layout.geometry.appOffset;
    for (const im of rec.images) r.store(app + im.offset, im.bytes);
    if (!this.#faults.skipPersistApplyBeforeFlag) {
      for (const im of rec.images) r.flush(app + im.offset, im.bytes.length);
      r.drain();
    }
    const off = this.layout.recordOffset(rec.index);
    r.storeU64Atomic(off, BigInt(rec.lsn));
    if (!this.#faults.skipPersistAppliedFlag) r.persist(off, 8);
    if (this.conn.has(rec.clientId)) this.conn.setApplied(rec.clientId, Math.max(rec.seq, this.conn.appliedSeq(rec.clientId)));
    if (rec.lsn >= this.#nextLsn) this.#nextLsn = rec.lsn + 1;
  }

  /**
   * Record positions: a record is applied only while its slot still holds it — the slot's LSN word
   * is the record's (read in place, O(1)). Its applied flag (the LSN) stored over a slot a later
   * record took would say nothing of that record, and its images would land after the newer
   * record's: a request's effects replayed over a later one's.
   */
  #checkSlotHolds(rec: RecordInfo): void {
    const r = this.layout.region;
    const off = this.layout.recordOffset(rec.index);
    invariant(r.loadU32(off + 8) === rec.lsn >>> 0 && r.loadU32(off + 12) === Math.floor(rec.lsn / TWO_32), () => `record ${rec.lsn} applied, but its slot ${rec.index} holds record ${r.loadU32(off + 12) * TWO_32 + r.loadU32(off + 8)}`);
  }

  /**
   * Commit's read-back (check data right after it is written): the stored bytes, read in place,
   * are the encoded record — byte for byte the scratch whose checksum encodeRecordInto computed
   * (its header names this record: LSN, client, sequence). Equal bytes carry that checksum, so
   * this is the check of recomputing it over the stored bytes, and stronger (it also covers the
   * checksum word and the reserved word), without a second CRC pass over the record.
   */
  #checkReadBack(index: number, off: number, encoded: Uint8Array, lsn: number): void {
    const log = this.#log32;
    if (log === undefined) {
      invariant(this.layout.region.matches(off + 8, encoded), () => `record ${lsn} does not read back as written`);
      return;
    }
    // Word by word, in place: the scratch's words [2, 2 + encoded.length / 4) (a record's length is a multiple of 8).
    const s = this.#scratch32;
    const base = index * this.#slotWords;
    const end = 2 + (encoded.length >>> 2);
    for (let w = 2; w < end; w++) if (log[base + w] !== s[w]) invariant(false, () => `record ${lsn} does not read back as written`);
  }

  /** A record slot is reused only when its record is durably applied and its client's applied word durable. */
  #prepareReuse(index: number, lsn: number): void {
    const known = this.#slotLsn[index]!;
    // LSNs only grow: the record a commit overwrites is an older one (a newer one there means the
    // log's position went back, and a later recovery would replay the old request over the new).
    if (!(known < lsn)) invariant(false, () => `log record slot ${index} holds record ${known}; the next is ${lsn}`);
    const byStep = this.#flaggedByStep[index] === 1;
    this.#flaggedByStep[index] = 0;
    if (known > 0 && this.#lazySlot[index] === 0 && this.#holdsApplied(index, known)) {
      // Fast path: the applied record this log wrote and read back here (its flag set since).
      this.#reuseApplied(this.#slotClient[index]!, this.#slotSeq[index]!, known, byStep);
      return;
    }
    let old = readRecord(this.layout, index);
    if (old.state === 'complete-unapplied' && this.isSettled(old.lsn)) {
      // Still in the lazy pipeline (a record of the batch before: batches over logRecords / 2): its
      // images and applied word are not durable yet, so finish the pipeline first (3 syncs). A
      // record flagged at this batch's advance is fine: its images and word were synced before.
      this.completeAll();
      old = readRecord(this.layout, index);
    }
    if (old.state === 'complete-unapplied') {
      throw new PmrpcError(RecoveryErrorCodes.LOG_FULL, `log record slot ${index} still holds unapplied record ${old.lsn}`);
    }
    if (old.state !== 'applied') return;
    invariant(old.lsn < lsn, () => `log record slot ${index} holds applied record ${old.lsn}; the next is ${lsn}`);
    this.#reuseApplied(old.clientId, old.seq, old.lsn);
  }

  /** The slot's flag, LSN, client and sequence words are those of record `lsn`, applied, as this log wrote it. */
  #holdsApplied(index: number, lsn: number): boolean {
    const lo = lsn >>> 0;
    const hi = Math.floor(lsn / TWO_32);
    const seq = this.#slotSeq[index]!;
    const log = this.#log32;
    if (log !== undefined) {
      const b = index * this.#slotWords;
      return log[b] === lo && log[b + 1] === hi && log[b + 2] === lo && log[b + 3] === hi && log[b + 4] === this.#slotClient[index] && log[b + 6] === seq >>> 0 && log[b + 7] === Math.floor(seq / TWO_32);
    }
    const r = this.layout.region;
    const off = this.layout.recordOffset(index);
    return (
      r.loadU32(off) === lo && r.loadU32(off + 4) === hi && r.loadU32(off + 8) === lo && r.loadU32(off + 12) === hi &&
      r.loadU32(off + 16) === this.#slotClient[index] && r.loadU32(off + 24) === seq >>> 0 && r.loadU32(off + 28) === Math.floor(seq / TWO_32)
    );
  }

  /**
   * Before record `lsn`'s slot is reused: its client's applied word durable at `seq` or later. The
   * word in visible memory may carry a settle whose records are not synced yet (an earlier part of
   * this batch, strict group commit of several connections): draining it then could put it on the
   * disk before them (a machine crash before the group's msync may keep any subset of its pages).
   * A record the pipeline flagged (`byStep`) had its word persisted and synced before its flag:
   * nothing to do. Any other waits for that settle's sync first.
   */
  #reuseApplied(clientId: number, seq: number, lsn: number, byStep = false): void {
    if (this.conn.has(clientId)) {
      invariant(this.conn.appliedSeq(clientId) >= seq, () => `client ${clientId}: record ${lsn} (seq ${seq}) applied but the table says ${this.conn.appliedSeq(clientId)}`);
      if (this.#faults.skipPersistCreditBeforeReuse) return;
      const r = this.layout.region;
      if (!r.isOrdered(this.#settleMark)) {
        if (byStep) return;
        r.sync();
      }
      this.conn.persistApplied(clientId);
    }
  }
}
