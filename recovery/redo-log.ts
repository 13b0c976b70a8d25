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

/** Validates effects against the application area and the record size. */
export function checkEffects(effects: Effects, layout: Layout): void {
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
  const need = RECORD_HEADER_BYTES + bodyBytes(effects);
  if (need > layout.geometry.recordBytes) {
    throw new PmrpcError(RecoveryErrorCodes.TOO_LARGE, `effects need a ${need}-byte record; log records hold ${layout.geometry.recordBytes}`);
  }
}

export function encodeRecord(lsn: number, clientId: number, seq: number, effects: Effects): Uint8Array {
  const b = new Uint8Array(RECORD_HEADER_BYTES + bodyBytes(effects));
  encodeRecordInto(b, new DataView(b.buffer), lsn, clientId, seq, effects);
  return b;
}

const TWO_32 = 0x1_0000_0000;

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
 * from byte 8) and returns its length. `dv` views `b` from its offset 0.
 */
function encodeRecordInto(b: Uint8Array, dv: DataView, lsn: number, clientId: number, seq: number, effects: Effects): number {
  const body = bodyBytes(effects);
  const length = RECORD_HEADER_BYTES + body;
  b.fill(0, 8, length);
  setU64(dv, 8, lsn);
  dv.setUint32(16, clientId, true);
  dv.setUint32(20, effects.images.length, true);
  setU64(dv, 24, seq);
  const result = effects.result;
  dv.setUint32(32, result?.length ?? 0, true);
  dv.setUint32(36, body, true);
  let p = RECORD_HEADER_BYTES;
  if (result !== undefined) {
    b.set(result, p);
    p += pad8(result.length);
  }
  for (const im of effects.images) {
    dv.setUint32(p, im.offset, true);
    dv.setUint32(p + 4, im.bytes.length, true);
    b.set(im.bytes, p + 8);
    p += 8 + pad8(im.bytes.length);
  }
  dv.setUint32(40, recordChecksum(b, body), true);
  return length;
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
  /** Inside batch(): records committed (persisted, images stored) whose images and flags wait for settle(). */
  #batch: RecordInfo[] | undefined;
  #pendingApplied = new Map<number, number>();
  /**
   * Lazy apply of group commit (docs/recovery.md, "Group commit"): settled records (durable at the
   * next sync; images stored in visible memory, credits given) whose images are flushed at the
   * next batch's start...
   */
  #lazyImages: RecordInfo[] = [];
  /** ...then records whose images were drained at the previous batch's start: their flags are set at the next one. */
  #lazyFlags: RecordInfo[] = [];
  /** LSNs of #lazyImages and #lazyFlags: committed and settled, flag not set yet. */
  #lazyLsns = new Set<number>();
  /** region.syncMark() after the pipeline's last drains (settled records, advanced images and words): synced before the next step. */
  #lazyMark = 0;
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

  /** Scans the log to find the next LSN (one past the highest complete record). */
  constructor(layout: Layout, conn: ConnTable, options: Partial<RedoLogOptions> = {}) {
    this.layout = layout;
    this.conn = conn;
    this.#faults = checkFaults(options.faults);
    const g = layout.geometry;
    this.#scratch = new Uint8Array(g.recordBytes);
    this.#scratchDv = new DataView(this.#scratch.buffer);
    this.#slotLsn = new Float64Array(g.logRecords);
    this.#slotClient = new Uint32Array(g.logRecords);
    this.#slotSeq = new Float64Array(g.logRecords);
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
    checkEffects(effects, this.layout);
    // At most once, in order: a client's request is committed after everything it applied.
    invariant(seq > (this.#pendingApplied.get(clientId) ?? this.conn.appliedSeq(clientId)), () => `client ${clientId}: request ${seq} committed again (applied up to ${this.#pendingApplied.get(clientId) ?? this.conn.appliedSeq(clientId)})`);
    // The lazy pipeline advances at a batch's first commit (a pass with no request costs nothing), before this batch stores anything.
    if (this.#batch !== undefined && !this.#advanced) {
      this.#advanced = true;
      this.#advance();
    }
    // A batch never wraps onto its own records: settle it first.
    if (this.#batch !== undefined && this.#batch.length >= this.layout.geometry.logRecords) this.settle();
    const lsn = this.#nextLsn;
    const index = (lsn - 1) % this.layout.geometry.logRecords;
    this.#prepareReuse(index, lsn);
    const r = this.layout.region;
    const off = this.layout.recordOffset(index);
    // Encoded into the log's scratch buffer (no allocation per commit), stored, then read back once.
    const length = encodeRecordInto(this.#scratch, this.#scratchDv, lsn, clientId, seq, effects);
    const encoded = this.#scratch.subarray(8, length);
    r.store(off + 8, encoded);
    this.#checkReadBack(off, encoded, lsn);
    this.#slotLsn[index] = lsn;
    this.#slotClient[index] = clientId;
    this.#slotSeq[index] = seq;
    // The record as read back: the checksum of the stored bytes is the one computed over `effects`,
    // so its images are these — taken now (offset and bytes of each): the lazy pipeline flushes
    // their ranges a batch later, and a caller may reuse its effects objects by then.
    const images: EffectImage[] = [];
    for (const im of effects.images) images.push({ offset: im.offset, bytes: im.bytes });
    const back: RecordInfo = { index, state: 'complete-unapplied', lsn, clientId, seq, images, result: undefined };
    if (!this.#faults.skipPersistRecordBeforeApply) r.persist(off, length);
    this.#nextLsn = lsn + 1;
    if (this.#batch === undefined) this.apply(back);
    else {
      const app = this.layout.geometry.appOffset;
      for (const im of back.images) r.store(app + im.offset, im.bytes);
      this.#batch.push(back);
      this.#pendingApplied.set(clientId, seq);
    }
    return { lsn };
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
    if (this.#batch !== undefined) return fn();
    this.#batch = [];
    this.#advanced = false;
    try {
      return fn();
    } finally {
      try {
        this.settle();
      } finally {
        this.#batch = undefined;
      }
    }
  }

  /** Inside batch(): settles the records committed so far (their applied words, the credits, are set; images and flags follow lazily), and stays in the batch. */
  settle(): void {
    const b = this.#batch;
    if (b === undefined || b.length === 0) return;
    this.#batch = [];
    this.#pendingApplied.clear();
    for (const rec of b) {
      if (this.conn.has(rec.clientId)) this.conn.setApplied(rec.clientId, Math.max(rec.seq, this.conn.appliedSeq(rec.clientId)));
      this.#lazyImages.push(rec);
      this.#lazyLsns.add(rec.lsn);
    }
    this.#lazyMark = this.layout.region.syncMark();
  }

  /** Records settled whose applied flag is not set yet (lazy group commit). */
  get lazyRecords(): number {
    return this.#lazyLsns.size;
  }

  /**
   * The region mark the lazy pipeline's next step (at the next batch's first commit) needs synced
   * before it writes (images after their records, flags after their images); -1 when that step has
   * nothing to do. A caller that would rather not have the step sync on the thread waits for it
   * (PmemRegion.whenSynced) before starting the batch.
   */
  get advanceMark(): number {
    return this.#lazyFlags.length === 0 && this.#lazyImages.length === 0 ? -1 : this.#lazyMark;
  }

  /** Whether record `lsn` is settled (its request answered) but its flag lazily not set yet: as good as applied. */
  isSettled(lsn: number): boolean {
    return this.#lazyLsns.has(lsn);
  }

  /** One step of the lazy pipeline, at a batch's start (see batch()). */
  #advance(): void {
    if (this.#lazyFlags.length === 0 && this.#lazyImages.length === 0) return;
    const r = this.layout.region;
    // The settled records, and the images and words drained at the previous step, are on the disk
    // (the previous batch's group ended in their msync: then this costs nothing).
    if (!r.isSynced(this.#lazyMark)) r.sync();
    const flags = this.#lazyFlags;
    if (flags.length > 0) this.#setFlags(flags);
    const images = this.#lazyImages;
    this.#persistImages(images);
    this.#persistWords(images);
    this.#lazyFlags = images;
    this.#lazyImages = [];
    this.#lazyMark = r.syncMark();
  }

  /** Finishes every lazily settled record now: images, applied words, flags, each step synced. */
  completeAll(): void {
    if (this.#batch !== undefined) this.settle();
    const all = [...this.#lazyFlags, ...this.#lazyImages];
    if (all.length === 0) return;
    const r = this.layout.region;
    r.sync();
    this.#persistImages(this.#lazyImages);
    this.#persistWords(all);
    r.sync();
    this.#setFlags(all);
    r.sync();
    this.#lazyFlags = [];
    this.#lazyImages = [];
  }

  #persistImages(recs: readonly RecordInfo[]): void {
    if (recs.length === 0 || this.#faults.skipPersistApplyBeforeFlag) return;
    const r = this.layout.region;
    const app = this.layout.geometry.appOffset;
    for (const rec of recs) for (const im of rec.images) r.flush(app + im.offset, im.bytes.length);
    r.drain();
  }

  #persistWords(recs: readonly RecordInfo[]): void {
    if (this.#faults.skipPersistCreditBeforeReuse) return;
    // Once per client (a batch is mostly one client's: no set for the common case).
    let last = -1;
    let done: Set<number> | undefined;
    for (const rec of recs) {
      const id = rec.clientId;
      if (id === last || done?.has(id) === true) continue;
      if (last !== -1) (done ??= new Set([last])).add(id);
      last = id;
      this.conn.persistApplied(id);
    }
  }

  #setFlags(recs: readonly RecordInfo[]): void {
    const r = this.layout.region;
    for (const rec of recs) {
      r.storeU64Atomic(this.layout.recordOffset(rec.index), BigInt(rec.lsn));
      this.#lazyLsns.delete(rec.lsn);
    }
    if (!this.#faults.skipPersistAppliedFlag) {
      for (const rec of recs) r.flush(this.layout.recordOffset(rec.index), 8);
      r.drain();
    }
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
    return this.#pendingApplied.get(clientId);
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
  #checkReadBack(off: number, encoded: Uint8Array, lsn: number): void {
    invariant(this.layout.region.matches(off + 8, encoded), () => `record ${lsn} does not read back as written`);
  }

  /** A record slot is reused only when its record is durably applied and its client's applied word durable. */
  #prepareReuse(index: number, lsn: number): void {
    const known = this.#slotLsn[index]!;
    // LSNs only grow: the record a commit overwrites is an older one (a newer one there means the
    // log's position went back, and a later recovery would replay the old request over the new).
    invariant(known < lsn, () => `log record slot ${index} holds record ${known}; the next is ${lsn}`);
    if (known > 0 && !this.#lazyLsns.has(known) && this.#holdsApplied(index, known)) {
      // Fast path: the applied record this log wrote and read back here (its flag set since).
      this.#reuseApplied(this.#slotClient[index]!, this.#slotSeq[index]!, known);
      return;
    }
    let old = readRecord(this.layout, index);
    if (old.state === 'complete-unapplied' && this.#lazyLsns.has(old.lsn)) {
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
    const r = this.layout.region;
    const off = this.layout.recordOffset(index);
    const lo = lsn >>> 0;
    const hi = Math.floor(lsn / TWO_32);
    const seq = this.#slotSeq[index]!;
    return (
      r.loadU32(off) === lo && r.loadU32(off + 4) === hi && r.loadU32(off + 8) === lo && r.loadU32(off + 12) === hi &&
      r.loadU32(off + 16) === this.#slotClient[index] && r.loadU32(off + 24) === seq >>> 0 && r.loadU32(off + 28) === Math.floor(seq / TWO_32)
    );
  }

  #reuseApplied(clientId: number, seq: number, lsn: number): void {
    if (this.conn.has(clientId)) {
      invariant(this.conn.appliedSeq(clientId) >= seq, () => `client ${clientId}: record ${lsn} (seq ${seq}) applied but the table says ${this.conn.appliedSeq(clientId)}`);
      if (!this.#faults.skipPersistCreditBeforeReuse) this.conn.persistApplied(clientId);
    }
  }
}
