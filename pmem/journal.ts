/**
 * The journal of a strict region's file (docs/recovery.md, "The strict journal"): `<file>.journal`
 * beside the PM file. Every sync of a strict file region appends one record — the lines the sync
 * makes durable — and syncs only the journal (native/mmap.cc JournalAppend, on the region's msync
 * channel): one contiguous append instead of the scattered runs of a batch's lines in the PM file.
 * The lines are also written to their places in the PM file, unsynced; a checkpoint (before the
 * journal wraps, and at an orderly close) syncs the PM file and starts a new epoch. Opening the
 * file replays the records of the current epoch into it (replayJournal), so after a machine crash
 * the PM file holds every synced batch again.
 *
 * Format (little-endian). The header, the first 4 KiB: magic "PMJH" u32, version u32 (1), epoch
 * u64, the PM file's uuid (16 bytes, its header's bytes 24..40), CRC-32C of [0, 40) u32 at 40.
 * Records from offset 4096, each on a 4 KiB boundary: magic "PMJR" u32, version u32 (1), epoch
 * u64, sequence u64 (1, 2, … in the epoch), runs u32, payload bytes u32, the uuid at 32, CRC-32C of
 * the record without its CRC word at 48 u32, 0 u32, 0 u64; per run: file offset u64, length u64;
 * then the runs' bytes. The first record that is not the next of the current epoch, or whose CRC
 * fails (a torn append: it was never acknowledged), ends the journal.
 *
 * Written by hand: no library reads this format.
 */
import { closeSync, existsSync, fdatasyncSync, fstatSync, ftruncateSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { crc32c } from './crc32.js';
import { ErrorCodes, PmrpcError, PmrpcIoError } from './errors.js';
import { HEADER_BYTES } from './header.js';

/** Default bytes of a strict region's journal (a record per sync of a batch's lines, ≈ 20–30 KB at 2 × 32 requests). */
export const JOURNAL_BYTES = 16 << 20;
const HEAD_MAGIC = 0x484a4d50; // "PMJH"
const REC_MAGIC = 0x524a4d50; // "PMJR"
const HEAD_BYTES = 4096;
const REC_HEADER = 64;
const RUN = 16;
/** The offset of the PM file's uuid in its header. */
export const UUID_OFFSET = 24;

/** The journal of the PM file at `path`. */
export function journalPath(path: string): string {
  return `${path}.journal`;
}

export interface JournalReplay {
  /** The journal's epoch (0: no journal of this file). */
  epoch: number;
  /** Records replayed into the PM file. */
  records: number;
  /** Their lines' bytes. */
  bytes: number;
}

const u64 = (dv: DataView, at: number): number => dv.getUint32(at + 4, true) * 0x1_0000_0000 + dv.getUint32(at, true);

function ioError(what: string, path: string, e: unknown): PmrpcIoError {
  const err = e as NodeJS.ErrnoException;
  return new PmrpcIoError(`${what} ${path}: ${err.message}`, err.code ?? 'EUNKNOWN', err.syscall ?? what, e);
}

function sameUuid(a: Uint8Array, at: number, uuid: Uint8Array): boolean {
  for (let i = 0; i < 16; i++) if (a[at + i] !== uuid[i]) return false;
  return true;
}

/** One record of a journal: the lines one sync made durable, as runs at their PM file offsets. */
export interface JournalRecord {
  seq: number;
  /** Where the record starts in the journal file. */
  at: number;
  runs: Array<{ offset: number; bytes: Uint8Array }>;
}

/**
 * The records of the journal beside the PM file at `path` (`fileBytes` long, `uuid` its header's
 * uuid bytes) that replay would apply: those of the journal's epoch, in order, up to the first
 * that is not the next one or fails its CRC. A journal of another file (another uuid), or with a
 * damaged header (a torn checkpoint: the PM file was synced before it), has none (epoch 0).
 */
export function readJournal(path: string, fileBytes: number, uuid: Uint8Array): { epoch: number; records: JournalRecord[] } {
  const jpath = journalPath(path);
  const none = { epoch: 0, records: [] };
  if (!existsSync(jpath)) return none;
  let jfd: number;
  try {
    jfd = openSync(jpath, 'r');
  } catch (e) {
    throw ioError('open', jpath, e);
  }
  try {
    const size = fstatSync(jfd).size;
    const head = new Uint8Array(HEAD_BYTES);
    if (size < HEAD_BYTES || readSync(jfd, head, 0, HEAD_BYTES, 0) !== HEAD_BYTES) return none;
    const hdv = new DataView(head.buffer);
    // No header yet (a journal created and not started) or another file's: nothing to replay.
    if (hdv.getUint32(0, true) !== HEAD_MAGIC) return none;
    // The header is one sector's write: a checksum that fails is damage, not a torn checkpoint.
    if (hdv.getUint32(4, true) !== 1 || hdv.getUint32(40, true) !== crc32c(head, 0, 40)) {
      throw new PmrpcError(ErrorCodes.JOURNAL_CORRUPT, `${jpath}: the journal's header fails its checksum (or names an unknown version): which of its records are newer than ${path} cannot be told; the file is refused untouched — restore it and its journal from a backup`);
    }
    if (!sameUuid(head, 16, uuid)) return none;
    const epoch = u64(hdv, 8);
    const records: JournalRecord[] = [];
    let at = HEAD_BYTES;
    const h = new Uint8Array(REC_HEADER);
    const dv = new DataView(h.buffer);
    while (at + REC_HEADER <= size && readSync(jfd, h, 0, REC_HEADER, at) === REC_HEADER) {
      if (dv.getUint32(0, true) !== REC_MAGIC || dv.getUint32(4, true) !== 1 || u64(dv, 8) !== epoch || u64(dv, 16) !== records.length + 1 || !sameUuid(h, 32, uuid)) break;
      const n = dv.getUint32(24, true);
      const payload = dv.getUint32(28, true);
      const length = REC_HEADER + RUN * n + payload;
      if (at + length > size) break;
      const rec = new Uint8Array(length);
      if (readSync(jfd, rec, 0, length, at) !== length) break;
      const rdv = new DataView(rec.buffer);
      if (rdv.getUint32(48, true) !== crc32c(rec, 52, length, crc32c(rec, 0, 48))) break;
      // The runs lie in the PM file's data area (a record the addon wrote always does).
      const runs: JournalRecord['runs'] = [];
      let p = REC_HEADER + RUN * n;
      for (let i = 0; i < n; i++) {
        const offset = u64(rdv, REC_HEADER + RUN * i);
        const len = u64(rdv, REC_HEADER + RUN * i + 8);
        if (offset < HEADER_BYTES || offset + len > fileBytes || p + len > length) break;
        runs.push({ offset, bytes: rec.subarray(p, p + len) });
        p += len;
      }
      if (runs.length !== n || p !== length) break;
      records.push({ seq: records.length + 1, at, runs });
      at += (length + HEAD_BYTES - 1) & ~(HEAD_BYTES - 1);
    }
    // Where the records stop is the tail a crash tore, or nothing was appended after — unless a
    // later record of this epoch is there: it was appended (and synced) after the one that stops
    // them, which therefore held synced lines. (A record of an earlier epoch beyond the tail is old.)
    const later = laterRecord(jfd, at + HEAD_BYTES, size, epoch, records.length + 1, uuid);
    if (later !== undefined) {
      throw new PmrpcError(ErrorCodes.JOURNAL_CORRUPT, `${jpath}: record ${records.length + 1} of epoch ${epoch} (at byte ${at}) is damaged, and record ${later.seq} after it (at byte ${later.at}) is intact: synced lines are lost; ${path} is refused untouched — restore it and its journal from a backup`);
    }
    return { epoch, records };
  } catch (e) {
    if (e instanceof PmrpcError) throw e; // PmrpcIoError, or the journal's damage (JOURNAL_CORRUPT)
    throw ioError('read the journal', jpath, e);
  } finally {
    closeSync(jfd);
  }
}

/**
 * The first record header of `epoch` with a sequence above `seq` (and this file's uuid) at a
 * 4 KiB boundary of [from, size) of the journal, if any: read in 1 MiB chunks.
 */
function laterRecord(jfd: number, from: number, size: number, epoch: number, seq: number, uuid: Uint8Array): { seq: number; at: number } | undefined {
  const chunk = new Uint8Array(1 << 20);
  const dv = new DataView(chunk.buffer);
  for (let base = from; base + REC_HEADER <= size; base += chunk.length) {
    const n = readSync(jfd, chunk, 0, Math.min(chunk.length, size - base), base);
    for (let p = 0; p + REC_HEADER <= n; p += HEAD_BYTES) {
      if (dv.getUint32(p, true) !== REC_MAGIC || dv.getUint32(p + 4, true) !== 1 || u64(dv, p + 8) !== epoch || !sameUuid(chunk.subarray(p), 32, uuid)) continue;
      const s = u64(dv, p + 16);
      if (s > seq) return { seq: s, at: base + p };
    }
    if (n < chunk.length) break;
  }
  return undefined;
}

/**
 * Replays the journal of the PM file at `path` (open as `pmFd`) into the file: readJournal's
 * records in order, each run written at its offset; then the file is synced.
 */
export function replayJournal(path: string, pmFd: number, fileBytes: number, uuid: Uint8Array): JournalReplay {
  const { epoch, records } = readJournal(path, fileBytes, uuid);
  let bytes = 0;
  try {
    for (const r of records) {
      for (const { offset, bytes: b } of r.runs) {
        for (let done = 0; done < b.length; ) done += writeSync(pmFd, b, done, b.length - done, offset + done);
        bytes += b.length;
      }
    }
    if (records.length > 0) fdatasyncSync(pmFd);
  } catch (e) {
    throw ioError('replay the journal into', path, e);
  }
  return { epoch, records: records.length, bytes };
}

/**
 * Opens the journal of the PM file at `path` for a strict region, `bytes` long: created (or
 * cleared, when `fresh` or its size differs) and written out in full, so that an append never allocates a
 * block of the filesystem (whose journal commit the sync would then wait for). Returns its
 * descriptor; the caller attaches it to the region's channel, which writes its header.
 */
export function openJournal(path: string, bytes: number, fresh: boolean): number {
  const jpath = journalPath(path);
  let fd: number;
  try {
    fd = openSync(jpath, existsSync(jpath) ? 'r+' : 'w+');
    // Zeroed unless it is this file's journal, of this size, just replayed (its epoch then moves on:
    // none of its records is replayed again). A damaged or foreign one is cleared, stale records and all.
    if (fresh || fstatSync(fd).size !== bytes) {
      ftruncateSync(fd, bytes);
      const zeros = new Uint8Array(Math.min(bytes, 1 << 20));
      for (let at = 0; at < bytes; at += zeros.length) writeSync(fd, zeros, 0, Math.min(zeros.length, bytes - at), at);
      fdatasyncSync(fd);
    }
  } catch (e) {
    throw ioError('create the journal', jpath, e);
  }
  return fd;
}

/** Removes the journal of the PM file at `path` (a region that does not journal opened the file after its replay). */
export function removeJournal(path: string): void {
  try {
    unlinkSync(journalPath(path));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw ioError('remove', journalPath(path), e);
  }
}
