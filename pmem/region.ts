/**
 * PmemRegion: the emulated persistent-memory device (DESIGN §2.1).
 *
 * Two copies of the bytes:
 * - media: the mapped file (MAP_SHARED) — what survives a crash;
 * - visible memory: a SharedArrayBuffer that every load and store sees — lost on a crash.
 * Between them, a model of the CPU cache: a store makes its 64-byte lines dirty; flush(range)
 * (clwb) snapshots each dirty line; drain() (sfence) makes every snapshot taken so far durable;
 * persist(range) = flush + drain. Only write-back copies bytes to media.
 *
 * With `tracing`, each dirty line keeps the ordered list of 8-byte pieces stored since its last
 * write-back, so crash images (any subset of lines, an in-order prefix of each) can be generated
 * (pmem/crash.ts). Without it, the fast path keeps only a dirty-line bitmap and the flushed lines.
 * A flushed line's snapshot is taken lazily (copy on write): until a store reaches it, the line's
 * visible bytes ARE what the flush saw, and drain copies them straight to media (runs of lines in
 * one copy); a store to a flushed, undrained line first copies its flush-time content aside.
 */
import assert from 'node:assert/strict';
import { closeSync, existsSync, fstatSync, fsyncSync, openSync, readFileSync, readSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { threadId } from 'node:worker_threads';
import type { Clock } from './clock.js';
import { ErrorCodes, invariant, PmrpcError, PmrpcIoError } from './errors.js';
import { decodeHeader, encodeHeader, HEADER_BYTES, LINE_BYTES, MAX_REGION_BYTES, type RegionHeader } from './header.js';
import { dataExtents, mapFile, MsyncChannel, syncMapping, syncMappingAsync, unmapFile } from './native.js';
import { bool, callable, integer, must, oneOf, optional, probability, resolveOptions, type OptionChecks } from './options.js';
import { JOURNAL_BYTES, journalPath, openJournal, removeJournal, replayJournal, UUID_OFFSET } from './journal.js';
import { createPrng, type Entropy, type Prng } from './prng.js';
import { cryptoEntropy, systemClock } from './runtime.js';
import { buggify } from './buggify.js';

export type PersistenceDomain = 'adr' | 'eadr';

export interface PmemOptions {
  /** 'adr' (default): CPU caches are volatile. 'eadr': caches are in the persistence domain. */
  domain: PersistenceDomain;
  /** Probability, per store, that one of the stored lines is written back unasked (seeded). */
  eviction: number;
  /** msync the written range on every drain (durability across a machine crash; slow). */
  strict: boolean;
  /** Keep each dirty line's ordered pending pieces, so that crash images can be taken. */
  tracing: boolean;
  /** Seed of the eviction PRNG (ignored when `prng` is given). */
  seed: number;
  /** The eviction PRNG; default createPrng(seed). */
  prng: Prng | undefined;
  /** Source of the region UUID at create time. */
  entropy: Entropy;
  /** Injected clock (kept for layers above that take it from the region). */
  clock: Clock;
  /**
   * What a crash can leave of a dirty line's pending pieces (crashState()): 'prefix' (the model of
   * DESIGN §2.1: an in-order prefix) or 'subset' (any subset of its dirty 8-byte words: what a real
   * kill interrupting a write-back mid-line can leave — the §2.1 caveat).
   */
  lineModel: 'prefix' | 'subset';
  /**
   * The msync of a `strict` file-backed region: (mapping, file offset, length). Default: the native
   * addon's msync(MS_SYNC). Tests inject a recording or failing one (the shim under the addon).
   */
  msync: MsyncFn;
  /**
   * The msync of syncAsync(): the same range synced off the JS thread, `done` called on a later
   * turn (null, or the error). Default (undefined): the addon's, on a libuv pool thread — when
   * `msync` is the default (a strict file region's job on the addon's msync channel then also
   * writes the group's lines there, #startAsync); with an injected `msync` and no `msyncAsync`,
   * syncAsync() syncs with `msync` at once. Tests inject one that lands the bytes later (the lines
   * are written on the thread before it is called).
   */
  msyncAsync: MsyncAsyncFn | undefined;
  /**
   * A strict region's group commits msync on the JS thread (syncAsync() syncs at once, as sync()),
   * not on a pool thread. For a process whose one client waits for each group's acknowledgement
   * before it sends more (an embedded store in lockstep, as SQLite's inline fsync): nothing could be
   * processed while the msync runs, and the pool thread's wake-up and its call back's hop back to
   * the event loop cost more than they save (docs/benchmarks.md). With several clients the
   * default (false) processes the next batch during the msync. What is durable when a request is
   * acknowledged is the same either way.
   */
  msyncInline: boolean;
  /**
   * Bytes of a strict file region's journal (`<file>.journal`, pmem/journal.ts): every sync appends
   * the lines it makes durable there and syncs only the journal — one contiguous append instead of
   * the scattered runs of a batch's lines in the PM file —, the lines go to their places in the PM
   * file unsynced, a checkpoint syncs the PM file before the journal wraps and at an orderly close,
   * and opening the file replays the journal. 0: no journal (each sync msyncs the PM file's range).
   * Only with the addon's msync (an injected `msync` or `msyncAsync` syncs the range as before). A
   * multiple of 4096, at least 8192.
   */
  journalBytes: number;
}

/** msync of [offset, offset + length) of the mapping off the JS thread; `done` on a later turn. Only bytes written before the call are synced by it. */
export type MsyncAsyncFn = (mapping: ArrayBuffer, fileOffset: number, length: number, done: (err: Error | null) => void) => void;

/** A syncAsync / groupCommitAsync caller waiting for its mark to be synced off the thread. */
interface AsyncWaiter {
  mark: number;
  then: (err: PmrpcError | undefined) => void;
}

/** msync(MS_SYNC) of [offset, offset + length) of the file's mapping; throws on failure. */
export type MsyncFn = (mapping: ArrayBuffer, fileOffset: number, length: number) => void;

export const PMEM_DEFAULTS: Readonly<PmemOptions> = Object.freeze({
  domain: 'adr',
  eviction: 0,
  strict: false,
  tracing: false,
  seed: 0,
  prng: undefined,
  entropy: cryptoEntropy,
  clock: systemClock,
  lineModel: 'prefix',
  msync: syncMapping,
  msyncAsync: undefined,
  msyncInline: false,
  journalBytes: JOURNAL_BYTES,
});

/** Events that change media, and client-visible completions: where a simulated crash can strike. */
export type CrashPointKind = 'drain' | 'eviction' | 'nt-store' | 'nic-drain' | 'completion';

export interface CrashPointEvent {
  kind: CrashPointKind;
  /** Sequence number of this crash point in the region's life (from 0). */
  index: number;
  /** Free-form detail from whoever raised it (e.g. which client was told what). */
  detail?: unknown;
}

/** One 8-byte aligned piece of a store: `bytes` is the word's value right after the store. */
export interface CrashPiece {
  offset: number;
  bytes: Uint8Array;
}

/**
 * An independent unit of crash nondeterminism. 'prefix': the image holds an in-order prefix of
 * the pieces (a cache line's pending stores). 'subset': any subset (a NIC message drained in any
 * placement order).
 */
export interface CrashComponent {
  kind: 'prefix' | 'subset';
  source: string;
  pieces: CrashPiece[];
}

/** What a crash at this moment can leave behind: media plus the components' pieces. */
export interface CrashState {
  /** The whole file as on media: header followed by the data area. */
  media: Uint8Array;
  sizeBytes: number;
  components: CrashComponent[];
}

export type CrashContributor = () => CrashComponent[];

export interface PmemStats {
  stores: number;
  bytesStored: number;
  flushes: number;
  drains: number;
  linesWrittenBack: number;
  evictions: number;
  ntStores: number;
  /** msync calls of a strict file-backed region. */
  msyncs: number;
}

interface Media {
  bytes: Uint8Array; // the whole file
  buffer: ArrayBuffer;
  path: string | undefined;
  /** In memory (openImage): the only ranges of `bytes` (file offsets) that may be non-zero; undefined: any. */
  filled?: ReadonlyArray<readonly [number, number]>;
}

/** The page granularity a format region tracks written pages at (PmemRegion.format). */
const FORMAT_PAGE = 4096;
const MAX_PIECES_PER_LINE_HINT = 1 << 16;
const LINE_WORDS = LINE_BYTES / 4;
const SNAP_POOL_MAX = 4096;
/** #pend states of a line (the fast path): flushed, its flush-time content visible memory's / copied aside in #cow. */
const PEND_VISIBLE = 1;
const PEND_COPY = 2;
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

export class PmemRegion {
  readonly path: string | undefined;
  readonly sizeBytes: number;
  readonly uuid: string;
  readonly lineCount: number;
  readonly options: Readonly<PmemOptions>;

  #media: Media | undefined;
  #data: Uint8Array; // media data area (view into the mapping; a strict file region's: its shadow, see #mediaFd)
  /**
   * A strict region backed by a file writes its media through a descriptor (pwrite), not by stores
   * into the shared mapping: #data is a copy of the data area in process memory, the lines written
   * to it are noted (#unwritten) and written to the file, in runs, just before the msync that
   * syncs them (#writeMedia at every sync on the thread and at close; for an async msync, its job
   * on the addon's channel, off the thread, from a copy taken when it starts: #stageMedia). A store
   * into a mapped page after its msync cleaned it takes a write fault (the kernel's dirty tracking
   * of shared mappings, and the filesystem's journal with it), and an msync of pages written that
   * way costs several times an fdatasync of the same pages written by pwrite (docs/benchmarks.md,
   * issue 29). What is durable when is unchanged: the drains of a group reach the file at its end
   * instead of one by one, and a strict region promises nothing of a group before its msync (a
   * machine crash may keep any subset of its pages; a process crash in the group, any subset of
   * its lines). -1: media is the mapping (not strict, in memory, or direct).
   */
  #mediaFd = -1;
  /**
   * Lines of #data written since the last #writeMedia (1 per line), and the list of them: the
   * first #unwrittenN of #unwrittenLines (a typed array: #mediaRuns sorts it natively, where an
   * array's sort with a comparator cost ≈ 25 µs a strict batch's 170 lines).
   */
  #unwritten: Uint8Array | undefined;
  /** The journal's descriptor (options.journalBytes, pmem/journal.ts): every sync of this region appends to it; -1: none. */
  #journalFd = -1;
  #unwrittenLines = new Int32Array(256);
  #unwrittenN = 0;
  #visible: Uint8Array;
  #dv: DataView;
  #u64: BigUint64Array;
  #dirty: Uint8Array; // per line: 1 = dirty (has stores not written back)
  #dirtyCount = 0;
  /**
   * Fast path, per line: 0 = no flush pending; PEND_VISIBLE = flushed and not stored to since (its
   * flush-time content is visible memory's); PEND_COPY = flushed, then stored to: its flush-time
   * content is in #cow. #pendCount lines have a flush pending; #pendLines lists them (in flush
   * order; a line written back since stays listed, with state 0, until the drain).
   */
  #pend: Uint8Array;
  #pendCount = 0;
  #pendLines: number[] = [];
  /** Fast path: line -> content at flush time (16 words), for a flushed line stored to before the drain (PEND_COPY). */
  #cow = new Map<number, Uint32Array>();
  /** Snapshots written back, kept for the next flushes (no allocation per flushed line). */
  #snapPool: Uint32Array[] = [];
  /** Word views of visible memory and of media's data area: a line is copied as 16 words (no view, no slice per line). */
  #visible32: Uint32Array;
  #data32: Uint32Array;
  #pieces = new Map<number, CrashPiece[]>(); // tracing: line -> pending pieces in store order
  #flushed = new Map<number, number>(); // tracing: line -> pieces covered by a flush not yet drained
  #prng: Prng;
  #owner = threadId;
  #hook: ((e: CrashPointEvent) => void) | undefined;
  #crashPointIndex = 0;
  #contributors: CrashContributor[] = [];
  #stats: PmemStats = { stores: 0, bytesStored: 0, flushes: 0, drains: 0, linesWrittenBack: 0, evictions: 0, ntStores: 0, msyncs: 0 };
  /** strict group commit: depth of groupCommit() scopes; inside one, drained ranges wait in [#unsyncedLo, #unsyncedHi). */
  #groupDepth = 0;
  #unsyncedLo = Infinity;
  #unsyncedHi = -1;
  /** Ranges left waiting by group drains so far, and how many of them the last sync covered (syncMark / isSynced). */
  #waitMark = 0;
  #syncedMark = 0;
  /** A failed msync (sticky): PMRPC_ERR_SYNC_FAILED. */
  #syncFailed: PmrpcError | undefined;
  /**
   * syncAsync: the range of the msync running off the JS thread (still owed to the disk until it
   * calls back or a sync() covers it) and the mark it covers. At most one runs at a time; what
   * drains leave waiting meanwhile is the next one's, started when it calls back (the queue).
   */
  #asyncLo = Infinity;
  #asyncHi = -1;
  #asyncMark = 0;
  #asyncRunning = false;
  /**
   * The addon's msync channel of a strict region whose media goes through the descriptor and whose
   * msync is the addon's (created at the first async msync): an async msync is a job that writes
   * the lines drained for it — copied when it starts (#stageMedia) — and then msyncs, both off the
   * JS thread (#startAsync); a sync() on the thread, a close or a crash image waits for it first
   * (#joinJobs). undefined: the lines are written on the thread before the msync starts.
   */
  #channel: MsyncChannel | undefined;
  /** The channel's job not called back yet (its mark), or -1. */
  #job = -1;
  /**
   * Who waits for their mark to be synced by an async msync (the running one, or the queued next
   * one), oldest first; marks never decrease along the list. Released only from an msync's call
   * back (never from inside a sync() on the thread: that may run in the middle of a pass).
   */
  #asyncWaiters: AsyncWaiter[] = [];
  /**
   * While #releaseAsync runs a waiter's `then`: its mark, and #waitMark at that moment. The ack
   * gate lets an acknowledgement through without syncing what a LATER group left waiting (the
   * queued msync's range) when the mark it is released for is synced and nothing was drained since
   * — what the waiter sends was computed by its own group, before those later drains. -1: none.
   */
  #releasingMark = -1;
  #releasingWaitMark = 0;

  /** Visible memory is the mapping itself (PmemRegion.format: every store is on media at once, no cache model). */
  #direct: boolean;
  /** Direct (format) regions: the 4 KiB pages stored to so far; the others are still holes of the fresh file (zeros). */
  #touched: Uint8Array | undefined;

  private constructor(media: Media, header: RegionHeader, options: PmemOptions, direct = false) {
    this.#media = media;
    this.path = media.path;
    this.sizeBytes = header.sizeBytes;
    this.uuid = header.uuid;
    this.lineCount = header.sizeBytes / LINE_BYTES;
    this.#direct = direct;
    this.#touched = direct ? new Uint8Array(Math.ceil(header.sizeBytes / FORMAT_PAGE)) : undefined;
    this.options = Object.freeze(direct ? { ...options, domain: 'eadr' as const, tracing: false, eviction: 0 } : { ...options });
    this.#data = media.bytes.subarray(HEADER_BYTES, HEADER_BYTES + header.sizeBytes);
    let data32 = new Uint32Array(media.buffer, HEADER_BYTES, header.sizeBytes / 4);
    // A journal beside the file (a strict region's, pmem/journal.ts): its records go into the file
    // before anything reads it, whatever this region's options.
    const uuid = media.bytes.slice(UUID_OFFSET, UUID_OFFSET + 16);
    const replayed = media.path !== undefined && !direct ? replay(media.path, media.bytes.length, uuid) : 0;
    if (options.strict && media.path !== undefined && !direct && options.domain !== 'eadr') {
      const shadow = new ArrayBuffer(header.sizeBytes);
      const mapped = this.#data;
      this.#data = new Uint8Array(shadow);
      copyMedia(this.#data, mapped, media.path);
      data32 = new Uint32Array(shadow);
      this.#unwritten = new Uint8Array(this.lineCount);
      try {
        this.#mediaFd = openSync(media.path, 'r+');
      } catch (e) {
        throw new PmrpcIoError(`open ${media.path} for writing: ${(e as Error).message}`, (e as NodeJS.ErrnoException).code ?? 'EUNKNOWN', 'open', e);
      }
      if (options.journalBytes > 0 && options.msync === syncMapping && options.msyncAsync === undefined) {
        // A new epoch: the records just replayed are never replayed again.
        this.#journalFd = openJournal(media.path, options.journalBytes, replayed === 0);
        this.#channel = new MsyncChannel();
        this.#channel.journal(this.#journalFd, options.journalBytes, replayed + 1, uuid, this.#mediaFd);
      }
    }
    // This region does not journal: a journal replayed above (this file's) goes, or it would be replayed again over later writes.
    if (replayed > 0 && this.#journalFd < 0) removeJournal(media.path!);
    const vis: ArrayBufferLike = direct ? media.buffer : new SharedArrayBuffer(header.sizeBytes);
    const at = direct ? HEADER_BYTES : 0;
    this.#visible = new Uint8Array(vis, at, header.sizeBytes);
    // After a restart the caches are empty: visible = media. Of a sparse file only the data extents
    // are copied: the holes read as zeros already, and a large, mostly empty file costs no memory.
    if (!direct) copyMedia(this.#visible, this.#data, media.path, media.filled);
    this.#dv = new DataView(vis, at, header.sizeBytes);
    this.#visible32 = new Uint32Array(vis, at, header.sizeBytes / 4);
    this.#data32 = data32;
    this.#u64 = new BigUint64Array(vis, at, header.sizeBytes / 8);
    this.#dirty = new Uint8Array(this.lineCount);
    this.#pend = new Uint8Array(this.lineCount);
    this.#prng = options.prng ?? createPrng(options.seed);
  }

  /** Creates a region file of `sizeBytes` data bytes. An existing non-empty file is refused. */
  static create(path: string, sizeBytes: number, options: Partial<PmemOptions> = {}): PmemRegion {
    const opts = resolvePmemOptions(options);
    checkSize(sizeBytes);
    let existing = 0;
    try {
      // Only a regular file's bytes count: a directory (whose st_size is filesystem-dependent)
      // goes on to the map, which refuses it with PMRPC_ERR_IO / EISDIR.
      const st = statSync(path);
      existing = st.isFile() ? st.size : 0;
    } catch {
      existing = 0;
    }
    if (existing > 0) {
      throw new PmrpcError(ErrorCodes.REGION_EXISTS, `${path} already exists (${existing} bytes); pmrpc never overwrites a file`);
    }
    const buffer = lockedMap(path, HEADER_BYTES + sizeBytes, { create: true, reserve: true });
    const bytes = new Uint8Array(buffer);
    encodeHeader(bytes, sizeBytes, opts.entropy.bytes(16));
    syncMapping(buffer, 0, HEADER_BYTES);
    const header = decodeHeader(bytes, bytes.length, path);
    return new PmemRegion({ bytes, buffer, path }, header, opts);
  }

  /**
   * Reads and validates a region file's header without mapping or locking it (a read-only reader:
   * inspect, check, `serve`'s size check). A foreign, empty, truncated or corrupted file is a coded error.
   */
  static readHeader(path: string): RegionHeader {
    const fd = openReadOnly(path);
    try {
      let fileBytes: number;
      let head: Uint8Array;
      try {
        fileBytes = fstatSync(fd).size;
        head = new Uint8Array(Math.min(HEADER_BYTES, fileBytes));
        readSync(fd, head, 0, head.length, 0);
      } catch (e) {
        // e.g. EISDIR: open(2) O_RDONLY succeeds on a directory, read(2) fails.
        const err = e as NodeJS.ErrnoException;
        throw new PmrpcIoError(`cannot read ${path}: ${err.message}`, err.code ?? 'EUNKNOWN', err.syscall ?? 'read', e);
      }
      return decodeHeader(head, fileBytes, path);
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Opens an existing region file for writing; a foreign, empty, truncated or corrupted file is
   * refused untouched. The process holds the file's exclusive lock until close(): a second owner
   * (another process, or another open in this one) gets PMRPC_ERR_FILE_LOCKED naming the holder.
   */
  static open(path: string, options: Partial<PmemOptions> = {}): PmemRegion {
    const opts = resolvePmemOptions(options);
    const header = PmemRegion.readHeader(path);
    const buffer = lockedMap(path, HEADER_BYTES + header.sizeBytes, { reserve: true });
    const bytes = new Uint8Array(buffer);
    try {
      // The header is checked again on the mapping: the file may have changed in between.
      decodeHeader(bytes, bytes.length, path);
      return new PmemRegion({ bytes, buffer, path }, header, opts);
    } catch (e) {
      unmapFile(buffer);
      throw e;
    }
  }

  /**
   * Creates a region file, crash-safe: the file is built in a temporary sibling
   * (`formatTempPath(path)`, its blocks reserved, none written: holes cost no memory), `init` formats it (an
   * app's format(); its stores go straight to the mapping), it is synced, and only then renamed
   * to `path` (and the directory synced). A process killed at any moment leaves either no file at
   * `path` or a complete one; a stale temporary file is reused by the next format. A non-empty
   * file at `path` is refused (PMRPC_ERR_REGION_EXISTS) unless `replace`; a file locked by a live
   * owner (or a format of the same path in progress) is refused with PMRPC_ERR_FILE_LOCKED.
   */
  static format(path: string, sizeBytes: number, init: (region: PmemRegion) => void, options: Partial<PmemOptions> & { replace?: boolean; progress?: (step: number, steps: number, label: string) => void } = {}): { uuid: string; sizeBytes: number } {
    const { replace, progress, ...rest } = options;
    const opts = resolvePmemOptions(rest);
    checkSize(sizeBytes);
    const existing = fileSize(path);
    if (existing !== undefined && existing > 0 && replace !== true) {
      throw new PmrpcError(ErrorCodes.REGION_EXISTS, `${path} already exists (${existing} bytes); pmrpc never overwrites a file unless told to (format --force)`);
    }
    const tmp = formatTempPath(path);
    progress?.(0, 4, 'file reserved');
    const buffer = lockedMap(tmp, HEADER_BYTES + sizeBytes, { create: true, reset: true, reserve: true }, path);
    let region: PmemRegion | undefined;
    let target: ArrayBuffer | undefined;
    try {
      const bytes = new Uint8Array(buffer);
      encodeHeader(bytes, sizeBytes, opts.entropy.bytes(16));
      region = new PmemRegion({ bytes, buffer, path: tmp }, decodeHeader(bytes, bytes.length, tmp), opts, true);
      progress?.(1, 4, 'layout');
      init(region);
      progress?.(2, 4, 'sync');
      syncMapping(buffer, 0, bytes.length);
      fsyncPath(tmp, 'r+');
      progress?.(3, 4, 'rename');
      // The file being replaced stays locked until the new one is in place: no owner can open it meanwhile.
      if (existing !== undefined && existing > 0) target = lockedMap(path, 1, {});
      renameSync(tmp, path);
      fsyncPath(dirname(path), 'r');
      // A journal beside the path is the replaced file's (the new one's uuid is fresh: it would never be replayed): it goes with it.
      removeJournal(path);
      progress?.(4, 4, 'done');
      return { uuid: region.uuid, sizeBytes };
    } catch (e) {
      if (existsPath(tmp)) unlinkSync(tmp); // still ours: we hold its lock
      throw e;
    } finally {
      if (target !== undefined) unmapFile(target);
      unmapFile(buffer);
    }
  }

  /** A region whose media is process memory, not a file (simulation, tests). */
  static createInMemory(sizeBytes: number, options: Partial<PmemOptions> = {}): PmemRegion {
    const opts = resolvePmemOptions(options);
    checkSize(sizeBytes);
    const buffer = new ArrayBuffer(HEADER_BYTES + sizeBytes);
    const bytes = new Uint8Array(buffer);
    encodeHeader(bytes, sizeBytes, opts.entropy.bytes(16));
    return new PmemRegion({ bytes, buffer, path: undefined }, decodeHeader(bytes, bytes.length, 'in-memory region'), opts);
  }

  /** Opens a crash image (a whole file's bytes, as pmem/crash.ts makes) as an in-memory region. The bytes are copied. */
  static openImage(image: Uint8Array, options: Partial<PmemOptions> = {}, filled?: ReadonlyArray<readonly [number, number]>): PmemRegion {
    const opts = resolvePmemOptions(options);
    const header = decodeHeader(image, image.length, 'crash image');
    const buffer = new ArrayBuffer(HEADER_BYTES + header.sizeBytes);
    const bytes = new Uint8Array(buffer);
    // Zero chunks stay untouched (a mostly empty image costs memory for what it holds only).
    // `filled`: the only ranges of `image` that may hold non-zero bytes (the caller read a sparse
    // file's data extents into a fresh buffer): the rest is not even read — on some kernels a read
    // of untouched memory takes a page as a write would (pmrpc inspect of a 1 GiB file, issue 29 session 31).
    if (filled === undefined) copyNonZero(bytes, image, 0, bytes.length);
    else for (const [from, to] of filled) copyNonZero(bytes, image, Math.max(0, from), Math.min(to, bytes.length, image.length));
    return new PmemRegion({ bytes, buffer, path: undefined, filled }, header, opts);
  }

  get closed(): boolean {
    return this.#media === undefined;
  }

  get stats(): Readonly<PmemStats> {
    return { ...this.#stats };
  }

  /** Number of lines holding stores not yet written back. */
  get dirtyLines(): number {
    return this.#dirtyCount;
  }

  /**
   * Closes the region. By default this is an orderly shutdown: every dirty line is written back
   * and the mapping synced. `{ writeBack: false }` drops the caches, as a crash would.
   */
  close(options: { writeBack?: boolean } = {}): void {
    const media = this.#media;
    if (media === undefined) return;
    // The channel's job finishes first, a crash's close too: none writes after the file is closed.
    // (A failed one sets #syncFailed: then nothing more is written, below.) Their waiters get
    // PMRPC_ERR_REGION_CLOSED from the call backs, as before any close.
    try {
      this.#joinJobs(false);
    } catch {
      // #syncFailed is set
    }
    // After a failed msync nothing more is written: what the disk holds is what recovery gets.
    if (options.writeBack !== false && this.#syncFailed === undefined) {
      this.#writeBackAll();
      this.#writeMedia();
      if (media.path !== undefined) syncMapping(media.buffer, 0, media.bytes.length);
      // The file holds everything now: a checkpoint empties the journal (a new epoch).
      if (this.#journalFd >= 0) this.#channel!.checkpoint();
    }
    this.#media = undefined;
    if (this.#journalFd >= 0) {
      closeSync(this.#journalFd);
      this.#journalFd = -1;
    }
    if (this.#mediaFd >= 0) {
      // A crash's close (writeBack: false) drops what was not written yet, as a killed process would.
      closeSync(this.#mediaFd);
      this.#mediaFd = -1;
    }
    if (media.path !== undefined) unmapFile(media.buffer);
  }

  // ---------------------------------------------------------------- loads

  /** A copy of `len` bytes of visible memory at `offset`. */
  load(offset: number, len: number): Uint8Array {
    this.#check(offset, len);
    return this.#visible.slice(offset, offset + len);
  }

  /**
   * A view of visible memory (no copy). The caller must not write into it: stores go through
   * store() so that the cache model sees them.
   */
  view(offset: number, len: number): Uint8Array {
    this.#check(offset, len);
    return this.#visible.subarray(offset, offset + len);
  }

  /**
   * Copies `dst.length` bytes of visible memory at `offset` into `dst` (no allocation: a caller that
   * only reads them, e.g. to checksum, reuses one buffer; element reads of a SharedArrayBuffer view
   * cost several times those of a plain array).
   */
  loadInto(offset: number, dst: Uint8Array): void {
    this.#check(offset, dst.length);
    dst.set(this.#visible.subarray(offset, offset + dst.length));
  }

  /**
   * Whether visible memory at `offset` holds exactly `bytes` (a read-back check): word by word
   * against visible memory when `offset` is 4-byte aligned on a little-endian host, the words of
   * `bytes` assembled from its bytes (no view is built per call: constructing one costs more than
   * the compare).
   */
  matches(offset: number, bytes: Uint8Array): boolean {
    const len = bytes.length;
    this.#check(offset, len);
    let i = 0;
    if ((offset & 3) === 0 && LITTLE_ENDIAN) {
      const v = this.#visible32;
      const base = offset >>> 2;
      for (const end = len - 3; i < end; i += 4) {
        if (v[base + (i >>> 2)] !== ((bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24)) >>> 0)) return false;
      }
    }
    const vis = this.#visible;
    for (; i < len; i++) if (vis[offset + i] !== bytes[i]) return false;
    return true;
  }

  loadU8(offset: number): number {
    this.#check(offset, 1);
    return this.#visible[offset]!;
  }

  loadU16(offset: number): number {
    this.#check(offset, 2);
    return this.#dv.getUint16(offset, true);
  }

  loadU32(offset: number): number {
    this.#check(offset, 4);
    return this.#dv.getUint32(offset, true);
  }

  loadU64(offset: number): bigint {
    this.#check(offset, 8);
    return this.#dv.getBigUint64(offset, true);
  }

  /** Atomic load of an aligned 8-byte word. */
  loadU64Atomic(offset: number): bigint {
    this.#checkAligned(offset);
    return Atomics.load(this.#u64, offset / 8);
  }

  // ---------------------------------------------------------------- stores

  store(offset: number, bytes: Uint8Array): void {
    if (this.#touched !== undefined && bytes.length >= FORMAT_PAGE && isZero(bytes)) return this.fill(offset, bytes.length, 0);
    this.#checkStore(offset, bytes.length);
    this.#visible.set(bytes, offset);
    this.#afterStore(offset, bytes.length);
  }

  /** Stores `len` copies of `value` (a byte). */
  fill(offset: number, len: number, value = 0): void {
    if (this.#touched !== undefined && value === 0) {
      // A format (direct): the fresh sparse file reads as zeros; only pages already written are
      // zeroed (a layout's "clear everything" costs no page of the holes, no disk, no memory).
      this.#check(offset, len);
      this.#assertOwner();
      const t = this.#touched;
      const end = offset + len;
      for (let p = Math.floor(offset / FORMAT_PAGE); p * FORMAT_PAGE < end; p++) {
        if (t[p] === 1) this.#visible.fill(0, Math.max(offset, p * FORMAT_PAGE), Math.min(end, (p + 1) * FORMAT_PAGE));
      }
      this.#stats.stores++;
      this.#stats.bytesStored += len;
      return;
    }
    this.#checkStore(offset, len);
    this.#visible.fill(value, offset, offset + len);
    this.#afterStore(offset, len);
  }

  storeU8(offset: number, value: number): void {
    this.#checkStore(offset, 1);
    this.#visible[offset] = value;
    this.#afterStore(offset, 1);
  }

  storeU16(offset: number, value: number): void {
    this.#checkStore(offset, 2);
    this.#dv.setUint16(offset, value, true);
    this.#afterStore(offset, 2);
  }

  storeU32(offset: number, value: number): void {
    this.#checkStore(offset, 4);
    this.#dv.setUint32(offset, value, true);
    this.#afterStore(offset, 4);
  }

  storeU64(offset: number, value: bigint): void {
    this.#checkStore(offset, 8);
    this.#dv.setBigUint64(offset, BigInt.asUintN(64, value), true);
    this.#afterStore(offset, 8);
  }

  /** Atomic store of an aligned 8-byte word: failure-atomic too (one piece). */
  storeU64Atomic(offset: number, value: bigint): void {
    this.#checkAligned(offset);
    this.#assertOwner();
    if (this.#pendCount > 0) this.#copyOnWrite(offset, 8);
    Atomics.store(this.#u64, offset / 8, BigInt.asUintN(64, value));
    this.#afterStore(offset, 8);
  }

  /** Compare-and-swap of an aligned 8-byte word in visible memory; returns the old value. */
  cas64(offset: number, expected: bigint, desired: bigint): bigint {
    this.#checkAligned(offset);
    this.#assertOwner();
    // (A snapshot taken for a CAS that fails holds what visible memory still holds: the same drain.)
    if (this.#pendCount > 0) this.#copyOnWrite(offset, 8);
    const old = Atomics.compareExchange(this.#u64, offset / 8, BigInt.asUintN(64, expected), BigInt.asUintN(64, desired));
    if (old === BigInt.asUintN(64, expected)) this.#afterStore(offset, 8);
    return old;
  }

  /**
   * A non-temporal store (movnt; also how a NIC with DDIO off places data): each touched line
   * that the CPU holds dirty is first written back, then the bytes go to visible memory and to
   * media together. Raises an 'nt-store' crash point (or `kind`, for the NIC) first.
   */
  storeNonTemporal(offset: number, bytes: Uint8Array, kind: CrashPointKind = 'nt-store', detail?: unknown): void {
    this.#checkStore(offset, bytes.length);
    if (bytes.length === 0) return;
    this.#crashPoint(kind, detail);
    this.#syncBeforeUnorderedWrite();
    const first = (offset / LINE_BYTES) | 0;
    const last = ((offset + bytes.length - 1) / LINE_BYTES) | 0;
    // A line flushed on the fast path is clean but holds an undrained flush: write it back too,
    // or a later drain would put the older snapshot over the non-temporal bytes on media.
    for (let line = first; line <= last; line++) if (this.#dirty[line] === 1 || this.#pend[line] !== 0) this.#writeBackLine(line);
    this.#visible.set(bytes, offset);
    this.#data.set(bytes, offset);
    if (this.#unwritten !== undefined) this.#noteWritten(first, last + 1);
    this.#stats.ntStores++;
    this.#stats.bytesStored += bytes.length;
    this.#syncIfStrict(offset, bytes.length);
  }

  // ---------------------------------------------------------------- flush / drain / persist

  /** clwb over [offset, offset + len): snapshots each dirty line's pending pieces now. */
  flush(offset: number, len: number): void {
    this.#check(offset, len);
    this.#stats.flushes++;
    if (len === 0 || this.options.domain === 'eadr') return;
    const first = (offset / LINE_BYTES) | 0;
    const last = ((offset + len - 1) / LINE_BYTES) | 0;
    for (let line = first; line <= last; line++) {
      if (this.#dirty[line] !== 1) continue;
      if (this.options.tracing) {
        this.#flushed.set(line, this.#pieces.get(line)!.length);
      } else {
        // The snapshot is visible memory from now until a store copies it aside (#copyOnWrite). A
        // line flushed again before a drain: its snapshot is taken again (visible memory, now).
        const p = this.#pend[line];
        if (p === 0) {
          this.#pendLines.push(line);
          this.#pendCount++;
        } else if (p === PEND_COPY) this.#dropCopy(line);
        this.#pend[line] = PEND_VISIBLE;
        this.#dirty[line] = 0;
        this.#dirtyCount--;
      }
    }
  }

  /** sfence: every snapshot taken so far becomes durable; stores after a flush stay pending. */
  drain(): void {
    this.#assertOpen();
    this.#stats.drains++;
    if (this.options.tracing) {
      if (this.#flushed.size === 0) return;
      this.#crashPoint('drain');
      let lo = Infinity;
      let hi = -1;
      for (const [line, count] of this.#flushed) {
        const pieces = this.#pieces.get(line)!;
        for (let i = 0; i < count; i++) this.#data.set(pieces[i]!.bytes, pieces[i]!.offset);
        if (this.#unwritten !== undefined) this.#noteWritten(line, line + 1);
        pieces.splice(0, count);
        if (pieces.length === 0) this.#markClean(line);
        this.#stats.linesWrittenBack++;
        if (line < lo) lo = line;
        if (line > hi) hi = line;
      }
      this.#flushed.clear();
      this.#syncIfStrict(lo * LINE_BYTES, (hi - lo + 1) * LINE_BYTES);
      return;
    }
    if (this.#pendCount === 0) return;
    this.#crashPoint('drain');
    this.#wbLo = Infinity;
    this.#wbHi = -1;
    this.#writePending(0, -1);
    this.#syncIfStrict(this.#wbLo * LINE_BYTES, (this.#wbHi - this.#wbLo + 1) * LINE_BYTES);
  }

  /** flush(range) + drain(). */
  persist(offset: number, len: number): void {
    if (this.options.tracing || this.options.domain === 'eadr') {
      this.flush(offset, len);
      this.drain();
      if (this.options.domain === 'eadr') this.#syncIfStrict(offset, len);
      return;
    }
    // Fast path, same effect as flush + drain: earlier flushes and the range's dirty lines go to
    // media in one drain, the range's lines copied straight from visible memory in runs of
    // consecutive dirty lines (no per-line snapshot is taken only to be written back at once).
    this.#check(offset, len);
    this.#stats.flushes++;
    this.#stats.drains++;
    const pending = this.#pendCount;
    if (len === 0 && pending === 0) return;
    const first = (offset / LINE_BYTES) | 0;
    const last = len === 0 ? first - 1 : ((offset + len - 1) / LINE_BYTES) | 0;
    const dirty = this.#dirty;
    let anyDirty = false;
    for (let line = first; line <= last && !anyDirty; line++) anyDirty = dirty[line] === 1;
    if (!anyDirty && pending === 0) return;
    this.#crashPoint('drain');
    this.#wbLo = Infinity;
    this.#wbHi = -1;
    // A line flushed earlier, re-dirtied since and inside the range is written from visible memory
    // below (what flush would have snapshotted): written and counted once, as flush + drain does.
    if (pending > 0) this.#writePending(first, last);
    let lo = this.#wbLo;
    let hi = this.#wbHi;
    let written = 0;
    for (let line = first; line <= last; ) {
      if (dirty[line] !== 1) {
        line++;
        continue;
      }
      const runStart = line;
      while (line <= last && dirty[line] === 1) {
        dirty[line] = 0;
        line++;
      }
      written += line - runStart;
      this.#copyLines(runStart, line);
      if (runStart < lo) lo = runStart;
      if (line - 1 > hi) hi = line - 1;
    }
    this.#dirtyCount -= written;
    this.#stats.linesWrittenBack += written;
    this.#syncIfStrict(lo * LINE_BYTES, (hi - lo + 1) * LINE_BYTES);
  }

  /** The span [#wbLo, #wbHi] of lines written by #writePending (Infinity, -1: none). */
  #wbLo = Infinity;
  #wbHi = -1;

  /**
   * The fast path's drain: every line with a flush pending to media — from visible memory
   * (PEND_VISIBLE: runs of consecutive lines in one copy) or from its copy (PEND_COPY) — except a
   * line in [skipFirst, skipLast] that is dirty (persist writes it from visible memory itself).
   * Clears the pending state, counts the lines written, widens [#wbLo, #wbHi].
   */
  #writePending(skipFirst: number, skipLast: number): void {
    const lines = this.#pendLines;
    const pend = this.#pend;
    const n = lines.length;
    let lo = this.#wbLo;
    let hi = this.#wbHi;
    let written = 0;
    for (let i = 0; i < n; ) {
      const line = lines[i]!;
      const p = pend[line]!;
      i++;
      if (p === 0) continue; // written back since its flush
      pend[line] = 0;
      if (line >= skipFirst && line <= skipLast && this.#dirty[line] === 1) {
        if (p === PEND_COPY) this.#recycle(this.#takeCopy(line));
        continue;
      }
      if (line < lo) lo = line;
      if (p === PEND_COPY) {
        this.#writeSnapshot(line, this.#takeCopy(line));
        written++;
        if (line > hi) hi = line;
        continue;
      }
      // A run of consecutive lines flushed in ascending order, none stored to since: one copy.
      let end = line + 1;
      while (i < n && lines[i] === end && pend[end] === PEND_VISIBLE && !(end >= skipFirst && end <= skipLast && this.#dirty[end] === 1)) {
        pend[end] = 0;
        end++;
        i++;
      }
      invariant(end <= this.lineCount, () => `write-back of lines [${line}, ${end}); the region has ${this.lineCount}`);
      this.#copyLines(line, end);
      written += end - line;
      if (end - 1 > hi) hi = end - 1;
    }
    lines.length = 0;
    this.#pendCount = 0;
    this.#stats.linesWrittenBack += written;
    this.#wbLo = lo;
    this.#wbHi = hi;
  }

  /** Takes the PEND_COPY line's flush-time copy out of #cow. */
  #takeCopy(line: number): Uint32Array {
    const snap = this.#cow.get(line);
    invariant(snap !== undefined, () => `line ${line} is flushed with a copy, but has none`);
    this.#cow.delete(line);
    return snap;
  }

  /** A PEND_COPY line flushed again (or written back): its older copy is dropped. */
  #dropCopy(line: number): void {
    this.#recycle(this.#takeCopy(line));
  }

  /**
   * Before a store to [offset, offset + len) reaches visible memory: each of its lines flushed and
   * not stored to since (PEND_VISIBLE) gets its flush-time content copied aside (PEND_COPY), which
   * the drain writes instead of what the store leaves.
   */
  #copyOnWrite(offset: number, len: number): void {
    const pend = this.#pend;
    const last = ((offset + len - 1) / LINE_BYTES) | 0;
    for (let line = (offset / LINE_BYTES) | 0; line <= last; line++) {
      if (pend[line] !== PEND_VISIBLE) continue;
      const snap = this.#snapPool.pop() ?? new Uint32Array(LINE_WORDS);
      const v = this.#visible32;
      const w = line * LINE_WORDS;
      for (let k = 0; k < LINE_WORDS; k++) snap[k] = v[w + k]!;
      this.#cow.set(line, snap);
      pend[line] = PEND_COPY;
    }
  }

  // ---------------------------------------------------------------- strict group commit

  /**
   * Group commit for `strict` (docs/recovery.md, "Group commit"): inside `fn`, a drain writes its
   * lines to the mapping (media, as always) but its msync waits; the waiting ranges are synced by
   * ONE msync — at the end of the outermost scope, at sync(), or, at the latest, just before any
   * acknowledgement leaves (a 'completion' crash point): no client is told "durable" before the
   * bytes are synced. Use it only where the drains inside need no order among themselves across a
   * machine crash (a machine crash before the msync may keep any subset of the group's pages), and
   * call sync() between drains that do. Without `strict` (or in memory) it only runs `fn`.
   */
  groupCommit<T>(fn: () => T): T {
    this.#groupDepth++;
    let ok = false;
    try {
      const out = fn();
      ok = true;
      return out;
    } finally {
      this.#groupDepth--;
      // A throw from fn leaves its ranges waiting: the next sync point covers them.
      if (this.#groupDepth === 0 && ok) this.sync();
      if (this.#groupDepth === 0) this.#releaseNested();
    }
  }

  /**
   * groupCommit() whose msync does not block: `fn` runs in a group as there; at the end of the
   * outermost scope what waits is synced by syncAsync(then) instead of sync() — queued behind an
   * msync already running. `then` runs once everything drained so far is on the disk (or with the
   * failure): the caller holds the acknowledgements of the group until then, and sends them from
   * `then` (the ack gate lets them through without syncing a later group's drains). A throw from
   * `fn` propagates (`then` is not called).
   */
  groupCommitAsync<T>(fn: () => T, then: (err: PmrpcError | undefined) => void): T {
    this.#groupDepth++;
    let out: T;
    try {
      out = fn();
    } catch (e) {
      if (--this.#groupDepth === 0) this.#releaseNested();
      throw e;
    }
    if (--this.#groupDepth > 0) {
      // Inside another group: the msync at the end of the outermost scope covers these drains
      // (a server CPU pass run inside a NIC pass's group shares its msync), not one of their own now.
      this.#nestedThens.push({ mark: this.#waitMark, then });
      return out;
    }
    this.syncAsync(then);
    this.#releaseNested();
    return out;
  }

  /** The `then`s of groupCommitAsync scopes nested in another group, with their marks: they wait for the outermost scope's msync. */
  #nestedThens: AsyncWaiter[] = [];

  /** At the end of the outermost group: the nested scopes' `then`s wait for what it synced (queued behind its msync). */
  #releaseNested(): void {
    const nested = this.#nestedThens;
    if (nested.length === 0) return;
    this.#nestedThens = [];
    for (const w of nested) this.whenSynced(w.mark, w.then);
  }

  /**
   * Syncs what drains left waiting WITHOUT blocking the JS thread (strict group commit,
   * overlapped): one msync over their span starts off the thread (MsyncAsyncFn) and `then` runs on
   * a later turn, once everything drained before this call is on the disk — so the next batch is
   * received and processed while this one syncs. Until then the range still counts as waiting:
   * isSynced() of its marks is false, a sync() (an ordering point, a drain outside a group) syncs it
   * again at once, and the ack gate (a 'completion' crash point) does too — nothing that depends on
   * it is written ahead of it or acknowledged before it. One runs at a time: a call while one runs
   * QUEUES behind it — what waits by then (and whatever drains add until it calls back) is synced
   * by the next async msync, started from the running one's call back after its `then`s (with what
   * they drained), and `then` runs after that
   * one (or after the running one, if a sync() on the thread covered the mark meanwhile). `then`s
   * run in the order of their calls. Without an async msync (or with `msyncInline`) it syncs at once
   * (sync()) and `then` follows that. Without `strict` (or in memory) `then` runs at once.
   */
  syncAsync(then: (err: PmrpcError | undefined) => void): void {
    if (this.#syncFailed !== undefined) return then(this.#syncFailed);
    const mark = this.#waitMark;
    if (this.#asyncRunning) {
      // Queued behind the running msync (or covered by it, or by a sync() since): released from its call back.
      this.#asyncWaiters.push({ mark, then });
      return;
    }
    if (this.isSynced(mark)) return then(undefined);
    const media = this.#media;
    if (media === undefined || this.#asyncFn() === undefined) {
      try {
        this.sync();
      } catch (e) {
        return then(e as PmrpcError);
      }
      return then(undefined);
    }
    this.#asyncWaiters.push({ mark, then });
    this.#startAsync(media);
  }

  /** The async msync of this region: none with msyncInline; the injected one, else the addon's when msync is the addon's. */
  #asyncFn(): MsyncAsyncFn | undefined {
    if (this.options.msyncInline) return undefined;
    return this.options.msyncAsync ?? (this.options.msync === syncMapping ? syncMappingAsync : undefined);
  }

  /**
   * Starts an async msync of what waits now ([#unsyncedLo, #unsyncedHi), up to #waitMark); its call
   * back releases the waiters it covers, then starts the next one for the rest (with what they
   * drained). On the channel the lines drained for it are staged (copied) and written by its job
   * off the thread: a line drained later waits in #data for the next one (or a sync() on the
   * thread, which joins the job first), never overtaking it in the file.
   */
  #startAsync(media: Media): void {
    const fn = this.#asyncFn()!;
    const lo = this.#unsyncedLo;
    const hi = this.#unsyncedHi;
    const mark = this.#waitMark;
    if (this.#channel === undefined && fn === syncMappingAsync && this.#mediaFd >= 0) this.#channel = new MsyncChannel();
    const channel = this.#channel;
    this.#unsyncedLo = Infinity;
    this.#unsyncedHi = -1;
    this.#asyncLo = lo;
    this.#asyncHi = hi;
    this.#asyncMark = mark;
    this.#asyncRunning = true;
    this.#stats.msyncs++;
    const done = (err: Error | null): void => {
      this.#asyncRunning = false;
      this.#job = -1;
      if (this.#media !== media) {
        // Closed meanwhile (an orderly close synced everything; a crash's close did not): either
        // way nothing that waited may be acknowledged now.
        const closed = new PmrpcError(ErrorCodes.REGION_CLOSED, 'the region closed before its msync called back: nothing waiting on it is acknowledged');
        this.#releaseAsync(closed);
        return;
      }
      if (err !== null && this.#syncedMark < mark) {
        this.#syncFailed ??= new PmrpcError(ErrorCodes.SYNC_FAILED, `msync of [${lo}, ${hi}) failed (${err.message}): what reached the disk is unknown; nothing waiting on it is acknowledged and this region refuses further persists — restart to recover from the file`, { cause: err });
      }
      if (this.#syncFailed === undefined) {
        if (mark > this.#syncedMark) this.#syncedMark = mark;
        if (this.#asyncMark === mark) {
          this.#asyncLo = Infinity;
          this.#asyncHi = -1;
        }
      }
      this.#releaseAsync(this.#syncFailed);
    };
    try {
      if (channel !== undefined) {
        const { staged, writes } = this.#stageMedia();
        channel.submit(media.buffer, HEADER_BYTES + lo, hi - lo, this.#mediaFd, staged, writes, done);
        this.#job = mark;
        this.#clearUnwritten();
      } else {
        this.#writeMedia();
        fn(media.buffer, HEADER_BYTES + lo, hi - lo, done);
      }
    } catch {
      // It could not start: sync on the thread instead (covering it all), release the waiters that covers.
      this.#asyncRunning = false;
      this.#asyncLo = Infinity;
      this.#asyncHi = -1;
      this.#unsyncedLo = Math.min(this.#unsyncedLo, lo);
      this.#unsyncedHi = Math.max(this.#unsyncedHi, hi);
      let failure: PmrpcError | undefined;
      try {
        this.sync();
      } catch (e2) {
        failure = e2 as PmrpcError;
      }
      this.#releaseAsync(failure);
    }
  }

  /**
   * From an async msync's call back (nothing runs now): the waiters whose mark is synced go, in
   * order; after a failure (or a close) every waiter left goes with it. If waiters are left, the
   * next async msync starts for what waits by then (their marks are all in it) BEFORE the released
   * `then`s run: the batches that ran while this one synced are in it, and a CPU pass a `then`
   * runs finds their mark covered by a running msync (isOrdered) instead of syncing it on the
   * thread; what the `then`s drain waits for the msync after. Otherwise (nothing left when this
   * one called back) a `then` that drains starts the next msync itself (syncAsync), or the
   * release ends by starting it (#continueAsync).
   */
  #releaseAsync(failure: PmrpcError | undefined): void {
    const waiters = this.#asyncWaiters;
    let n = 0;
    while (n < waiters.length && this.isSynced(waiters[n]!.mark)) n++;
    const ready = waiters.splice(0, failure === undefined ? n : waiters.length);
    // The next msync starts before the released `then`s run: the batches that ran while this one
    // synced (their drains ordered after it, isOrdered) wait in it, and a pass a `then` runs now
    // finds their mark covered by a running msync instead of syncing it on the thread.
    if (failure === undefined && waiters.length > 0 && this.#media !== undefined && this.#unsyncedHi >= 0 && !this.isSynced(waiters[0]!.mark)) this.#startAsync(this.#media);
    try {
      for (let i = 0; i < ready.length; i++) {
        const w = ready[i]!;
        if (i >= n) {
          w.then(failure);
          continue;
        }
        const outerMark = this.#releasingMark;
        const outerWait = this.#releasingWaitMark;
        this.#releasingMark = w.mark;
        this.#releasingWaitMark = this.#waitMark;
        try {
          w.then(undefined);
        } finally {
          this.#releasingMark = outerMark;
          this.#releasingWaitMark = outerWait;
        }
      }
    } finally {
      this.#continueAsync();
    }
  }

  /**
   * After a release: waiters left and no msync running — those a sync() on the thread (or a
   * failure) settled meanwhile go now; for the others the next async msync starts.
   */
  #continueAsync(): void {
    const waiters = this.#asyncWaiters;
    if (this.#asyncRunning || waiters.length === 0) return;
    if (this.#syncFailed !== undefined || this.#media === undefined || this.isSynced(waiters[0]!.mark)) {
      this.#releaseAsync(this.#syncFailed ?? (this.#media === undefined ? new PmrpcError(ErrorCodes.REGION_CLOSED, 'the region closed before its msync started: nothing waiting on it is acknowledged') : undefined));
      return;
    }
    // Their marks' drains came after the msync that just called back started: their ranges wait.
    invariant(this.#unsyncedHi >= 0, () => `async waiters for mark ${waiters[0]!.mark} with nothing waiting (synced up to ${this.#syncedMark})`);
    this.#startAsync(this.#media);
  }

  /**
   * Runs `then` once `mark` (a syncMark()) is synced: at once if it is, from the call back of the
   * async msync that covers it while one runs (in mark order among the waiters), else after a
   * sync() on the thread. With the failure (PMRPC_ERR_SYNC_FAILED, PMRPC_ERR_REGION_CLOSED) if the
   * mark cannot be synced.
   */
  whenSynced(mark: number, then: (err: PmrpcError | undefined) => void): void {
    if (this.#syncFailed !== undefined && !this.isSynced(mark)) return then(this.#syncFailed);
    if (this.#asyncRunning) {
      const waiters = this.#asyncWaiters;
      let at = waiters.length;
      while (at > 0 && waiters[at - 1]!.mark > mark) at--;
      if (at === waiters.length) waiters.push({ mark, then });
      else waiters.splice(at, 0, { mark, then });
      return;
    }
    if (this.isSynced(mark)) return then(undefined);
    try {
      this.sync();
    } catch (e) {
      return then(e as PmrpcError);
    }
    then(undefined);
  }

  /**
   * Runs `fn`, whose acknowledgements were computed when `mark` (a syncMark()) was taken and
   * depend on nothing drained after it, as the release of that mark: inside `fn` they pass the ack
   * gate if `mark` is synced and `fn` itself drains nothing — as the acknowledgements released
   * from an async msync's call back do — even though later drains (a later group's, its msync
   * queued or running) wait. Otherwise the gate syncs first, as always. A caller that holds
   * replies past the call back (to start the next msync before writing them) releases them so.
   */
  ackFor(mark: number, fn: () => void): void {
    const outerMark = this.#releasingMark;
    const outerWait = this.#releasingWaitMark;
    this.#releasingMark = mark;
    this.#releasingWaitMark = this.#waitMark;
    try {
      fn();
    } finally {
      this.#releasingMark = outerMark;
      this.#releasingWaitMark = outerWait;
    }
  }

  /** Whether an async msync (syncAsync) has not called back yet. */
  get syncing(): boolean {
    return this.#asyncRunning;
  }

  /**
   * msyncs what drains left waiting (strict group commit): one msync over their span — with the
   * span of an async msync still running (syncAsync), so all of it is on the disk when this
   * returns. Throws PMRPC_ERR_SYNC_FAILED.
   */
  sync(): void {
    if (this.#syncFailed !== undefined) throw this.#syncFailed;
    if (this.#unsyncedHi < 0 && this.#asyncHi < 0) return;
    // The channel's job finishes first (its lines before any written here): its range is synced then.
    this.#joinJobs();
    if (this.#unsyncedHi < 0 && this.#asyncHi < 0) {
      this.#syncedMark = this.#waitMark;
      return;
    }
    if (this.#asyncHi >= 0 && this.#unwrittenN > 0) this.#finishAsyncRange();
    const lo = Math.min(this.#unsyncedLo, this.#asyncLo);
    const hi = Math.max(this.#unsyncedHi, this.#asyncHi);
    this.#msync(lo, hi - lo);
    this.#unsyncedLo = Infinity;
    this.#unsyncedHi = -1;
    this.#asyncLo = Infinity;
    this.#asyncHi = -1;
    this.#syncedMark = this.#waitMark;
  }

  /**
   * A mark of every drain so far (strict group commit): isSynced(mark) says whether they are all
   * synced now, so a layer above syncs only when something it depends on still waits (without
   * `strict`, or in memory, every mark is synced).
   */
  syncMark(): number {
    return this.#waitMark;
  }

  isSynced(mark: number): boolean {
    return mark <= this.#syncedMark;
  }

  /**
   * Whether everything drained up to `mark` reaches the disk before anything drained from now on
   * can: it is synced, or — a strict region whose media goes through the descriptor — it was
   * written to the file before the async msync now running started: what drains now waits in
   * process memory until that msync called back (the next one writes it), and a sync() on the
   * thread meanwhile finishes that msync's range before it writes anything (#finishAsyncRange).
   * A layer that must not write B before A is on the disk (the redo log's lazy steps) writes B
   * when isOrdered(A), without waiting for A's msync (docs/recovery.md, "Group commit").
   */
  isOrdered(mark: number): boolean {
    return mark <= this.#syncedMark || (this.#asyncRunning && this.#unwritten !== undefined && mark <= this.#asyncMark && this.#asyncHi >= 0);
  }

  /**
   * sync() while an async msync runs, with lines drained since it started: msync that msync's
   * range first (the pages it is writing back, waited for), and only then write the new lines —
   * one msync over both could leave the new lines on the disk without the older ones (isOrdered).
   */
  #finishAsyncRange(): void {
    const media = this.#media!;
    this.#stats.msyncs++;
    try {
      this.options.msync(media.buffer, HEADER_BYTES + this.#asyncLo, this.#asyncHi - this.#asyncLo);
    } catch (e) {
      this.#syncFailed = new PmrpcError(ErrorCodes.SYNC_FAILED, `msync of [${this.#asyncLo}, ${this.#asyncHi}) failed (${(e as Error)?.message ?? String(e)}): what reached the disk is unknown; nothing waiting on it is acknowledged and this region refuses further persists — restart to recover from the file`, { cause: e });
      throw this.#syncFailed;
    }
    if (this.#asyncMark > this.#syncedMark) this.#syncedMark = this.#asyncMark;
    this.#asyncLo = Infinity;
    this.#asyncHi = -1;
  }

  /** Bytes waiting for a group commit's msync (0 when every drained range is synced). */
  get unsyncedBytes(): number {
    const lo = Math.min(this.#unsyncedLo, this.#asyncLo);
    const hi = Math.max(this.#unsyncedHi, this.#asyncHi);
    return hi < 0 ? 0 : hi - lo;
  }

  // ---------------------------------------------------------------- crash points and images

  /**
   * Sets the function called at every crash point (DESIGN §2.1): just before each media-changing
   * event and wherever a layer above raises one (a completion delivered to a client). It runs
   * synchronously; it may call crashState() to capture what a crash here can leave behind.
   */
  setCrashPointHook(hook: ((e: CrashPointEvent) => void) | undefined): void {
    this.#hook = hook;
  }

  /** Raises a crash point from a layer above (e.g. 'completion' when a client is told "durable"). */
  crashPoint(kind: CrashPointKind, detail?: unknown): void {
    this.#crashPoint(kind, detail);
  }

  /** Whether a crash point hook is set (a layer above builds a crash point's detail only then). */
  get crashPointHooked(): boolean {
    return this.#hook !== undefined;
  }

  /** Number of crash points raised so far. */
  get crashPoints(): number {
    return this.#crashPointIndex;
  }

  /** A layer above (the NIC) adds its volatile state to every crash state taken from now on. */
  addCrashContributor(fn: CrashContributor): () => void {
    this.#contributors.push(fn);
    return () => {
      const i = this.#contributors.indexOf(fn);
      if (i >= 0) this.#contributors.splice(i, 1);
    };
  }

  /**
   * What a crash now can leave behind: a copy of media plus, per dirty line, its pending pieces
   * (a 'prefix' component), plus what contributors add. Needs `tracing` (or `domain: 'eadr'`,
   * where every visible store is durable and the state is the visible memory).
   */
  crashState(): CrashState {
    const media = this.#assertOpen();
    this.#writeMedia();
    const copy = media.bytes.slice();
    const components: CrashComponent[] = [];
    if (this.options.domain === 'eadr') {
      copy.set(this.#visible, HEADER_BYTES);
    } else {
      if (!this.options.tracing && this.#dirtyCount + this.#pendCount > 0) {
        throw new PmrpcError(ErrorCodes.NOT_TRACING, 'crash images need a region opened with { tracing: true }');
      }
      for (const [line, pieces] of [...this.#pieces].sort((a, b) => a[0] - b[0])) {
        if (pieces.length > 0) components.push({ kind: this.options.lineModel, source: `line ${line}`, pieces: pieces.map((p) => ({ offset: p.offset, bytes: p.bytes })) });
      }
    }
    for (const c of this.#contributors) components.push(...c());
    return { media: copy, sizeBytes: this.sizeBytes, components };
  }

  /** Read-only access for worker threads: post `shared()` to a worker and wrap it in PmemReadView. */
  shared(): { buffer: SharedArrayBuffer; sizeBytes: number } {
    return { buffer: this.#visible.buffer as SharedArrayBuffer, sizeBytes: this.sizeBytes };
  }

  // ---------------------------------------------------------------- internals

  #afterStore(offset: number, len: number): void {
    this.#stats.stores++;
    this.#stats.bytesStored += len;
    if (len === 0) return;
    const opts = this.options;
    if (opts.domain === 'eadr') {
      if (!this.#direct) this.#data.set(this.#visible.subarray(offset, offset + len), offset);
      return;
    }
    const first = (offset / LINE_BYTES) | 0;
    const last = ((offset + len - 1) / LINE_BYTES) | 0;
    // The loop lives in a function of its own: the region's first store (the whole file) is long
    // enough for V8 to compile #afterStore on the stack inside this loop, with no type feedback yet
    // for the code after it; that code then deoptimized on every later store (bench tcp: ~6 deopts
    // per request, most of the server's CPU). See docs/benchmarks.md, "Profile of the real path".
    this.#dirtyCount += markDirty(this.#dirty, first, last);
    if (opts.tracing) {
      const w0 = offset & ~7;
      const wEnd = offset + len;
      for (let w = w0; w < wEnd; w += 8) {
        const line = (w / LINE_BYTES) | 0;
        let list = this.#pieces.get(line);
        if (list === undefined) {
          list = [];
          this.#pieces.set(line, list);
        }
        assert.ok(list.length < MAX_PIECES_PER_LINE_HINT, `line ${line} holds ${list.length} pending pieces: flush it`);
        list.push({ offset: w, bytes: this.#visible.slice(w, w + 8) });
      }
    }
    if ((opts.eviction > 0 && this.#prng.chance(opts.eviction)) || buggify('pmem.evict-store')) {
      const line = first === last ? first : this.#prng.int(first, last);
      this.#crashPoint('eviction', { line });
      this.#syncBeforeUnorderedWrite();
      this.#writeBackLine(line);
      this.#stats.evictions++;
    }
  }

  /** A flushed line's snapshot to media; the snapshot goes back to the pool (the caller forgets it). */
  #writeSnapshot(line: number, snap: Uint32Array): void {
    // A typed-array store past its end is dropped without a word: a line out of the region would be
    // a write-back lost in silence.
    invariant(line >= 0 && line < this.lineCount, () => `write-back of line ${line}; the region has ${this.lineCount}`);
    const d = this.#data32;
    const w = line * LINE_WORDS;
    for (let k = 0; k < LINE_WORDS; k++) d[w + k] = snap[k]!;
    if (this.#unwritten !== undefined) this.#noteWritten(line, line + 1);
    this.#recycle(snap);
  }

  /** Keeps a snapshot for reuse (a bounded pool: a flush of a huge range does not stay allocated). */
  #recycle(snap: Uint32Array): void {
    if (this.#snapPool.length < SNAP_POOL_MAX) this.#snapPool.push(snap);
  }

  /** Lines [from, to) from visible memory to media: word by word for a few lines, else one copy. */
  #copyLines(from: number, to: number): void {
    if (this.#unwritten !== undefined) this.#noteWritten(from, to);
    if (to - from > 4) {
      this.#data.set(this.#visible.subarray(from * LINE_BYTES, to * LINE_BYTES), from * LINE_BYTES);
      return;
    }
    const v = this.#visible32;
    const d = this.#data32;
    const end = to * LINE_WORDS;
    for (let w = from * LINE_WORDS; w < end; w++) d[w] = v[w]!;
  }

  /** Writes a line's current visible content to media and forgets its pending state. */
  #writeBackLine(line: number): void {
    const start = line * LINE_BYTES;
    this.#data.set(this.#visible.subarray(start, start + LINE_BYTES), start);
    if (this.#unwritten !== undefined) this.#noteWritten(line, line + 1);
    const p = this.#pend[line];
    if (p !== 0) {
      // Its flush is written over by this write-back: no longer pending.
      if (p === PEND_COPY) this.#dropCopy(line);
      this.#pend[line] = 0;
      this.#pendCount--;
    }
    this.#flushed.delete(line);
    this.#pieces.delete(line);
    if (this.#dirty[line] === 1) this.#markClean(line);
    this.#stats.linesWrittenBack++;
  }

  #writeBackAll(): void {
    this.drain();
    for (let line = 0; line < this.lineCount && this.#dirtyCount > 0; line++) {
      if (this.#dirty[line] === 1) this.#writeBackLine(line);
    }
  }

  #markClean(line: number): void {
    // The dirty count decides what close() writes back (#writeBackAll stops at zero): a clean line
    // counted again would leave another dirty one unwritten.
    invariant(this.#dirty[line] === 1, () => `line ${line} marked clean twice (${this.#dirtyCount} dirty)`);
    this.#dirty[line] = 0;
    this.#dirtyCount--;
    this.#pieces.delete(line);
  }

  #crashPoint(kind: CrashPointKind, detail?: unknown): void {
    // The ack gate of group commit: an acknowledgement leaves only after what was drained is synced.
    if (kind === 'completion' && (this.#unsyncedHi >= 0 || this.#asyncHi >= 0 || this.#syncFailed !== undefined)) this.#ackGate();
    const index = this.#crashPointIndex++;
    if (this.#hook !== undefined) this.#hook(detail === undefined ? { kind, index } : { kind, index, detail });
  }

  /**
   * Something waits to be synced (or an msync failed): sync it before an acknowledgement leaves —
   * unless the acknowledgement is released by an async msync's call back for a mark that is synced
   * and nothing was drained since (what waits is a later group's, queued: the acknowledgement was
   * computed before it and does not depend on it).
   */
  #ackGate(): void {
    if (this.#syncFailed === undefined && this.#releasingMark >= 0 && this.#waitMark === this.#releasingWaitMark && this.isSynced(this.#releasingMark)) return;
    this.sync();
  }

  #syncIfStrict(offset: number, len: number): void {
    const media = this.#media!;
    if (!this.options.strict || media.path === undefined || len <= 0) return;
    if (this.#groupDepth > 0) {
      if (this.#syncFailed !== undefined) throw this.#syncFailed;
      this.#waitMark++;
      if (offset < this.#unsyncedLo) this.#unsyncedLo = offset;
      if (offset + len > this.#unsyncedHi) this.#unsyncedHi = offset + len;
      return;
    }
    // Outside a group the drained range is synced now, and with it whatever a group left waiting.
    if (this.#unsyncedHi >= 0 || this.#asyncHi >= 0) {
      if (offset < this.#unsyncedLo) this.#unsyncedLo = offset;
      if (offset + len > this.#unsyncedHi) this.#unsyncedHi = offset + len;
      this.sync();
      return;
    }
    if (this.#syncFailed !== undefined) throw this.#syncFailed;
    this.#msync(offset, len);
  }

  /**
   * A write-back nobody asked for in this order (an eviction, a non-temporal store) must not reach
   * the disk before what earlier drains left waiting: sync those first.
   */
  #syncBeforeUnorderedWrite(): void {
    if (this.#unsyncedHi >= 0 || this.#asyncHi >= 0) this.sync();
  }

  /** Lines [from, to) of #data were written: they go to the file at the next #writeMedia. */
  #noteWritten(from: number, to: number): void {
    const u = this.#unwritten!;
    let list = this.#unwrittenLines;
    let n = this.#unwrittenN;
    for (let line = from; line < to; line++) {
      if (u[line] === 1) continue;
      u[line] = 1;
      if (n === list.length) {
        const grown = new Int32Array(list.length * 2);
        grown.set(list);
        list = this.#unwrittenLines = grown;
      }
      list[n++] = line;
    }
    this.#unwrittenN = n;
  }

  /**
   * The channel's job finishes (blocks the thread: its writes and msync): its range is synced
   * (unless `synced` is false: a close, after which nothing waiting is acknowledged; a crash image).
   * A failure is the region's (PMRPC_ERR_SYNC_FAILED). Its call back still comes and releases its
   * waiters. Before anything is written to the file on the thread.
   */
  #joinJobs(synced = true): void {
    const channel = this.#channel;
    if (channel === undefined || this.#job < 0) return;
    try {
      channel.join();
    } catch (e) {
      this.#syncFailed ??= new PmrpcError(ErrorCodes.SYNC_FAILED, `write or msync of the region's lines to ${this.path ?? 'its file'} failed off the thread (${(e as Error)?.message ?? String(e)}): what reached the disk is unknown; nothing waiting on it is acknowledged and this region refuses further persists — restart to recover from the file`, { cause: e });
      throw this.#syncFailed;
    }
    if (!synced) return;
    if (this.#job > this.#syncedMark) this.#syncedMark = this.#job;
    this.#asyncLo = Infinity;
    this.#asyncHi = -1;
  }

  /**
   * The runs of lines of #data written since they last went to the file: [offset, length, …] in
   * the data area, ascending. A run goes on over a gap whose lines are in pages it writes anyway
   * (the page of its last line, or the page of the next line): the gap's lines in #data are the
   * file's (nothing unwritten there), so one write covers both at no extra page — a batch's
   * records, flags and ring entries, a few lines apart, go in a few writes instead of one each.
   */
  #mediaRuns(): number[] {
    const n = this.#unwrittenN;
    const list = this.#unwrittenLines;
    if (n > 1) list.subarray(0, n).sort();
    const runs: number[] = [];
    for (let i = 0; i < n; ) {
      const first = list[i]!;
      let end = first + 1;
      i++;
      while (i < n && (list[i] === end || filePage(list[i]!) <= filePage(end - 1) + 1)) {
        end = list[i]! + 1;
        i++;
      }
      runs.push(first * LINE_BYTES, (end - first) * LINE_BYTES);
    }
    return runs;
  }

  /** The lines noted unwritten went to the file (or to a job that writes them). */
  #clearUnwritten(): void {
    const u = this.#unwritten!;
    const list = this.#unwrittenLines;
    const n = this.#unwrittenN;
    for (let i = 0; i < n; i++) u[list[i]!] = 0;
    this.#unwrittenN = 0;
  }

  /**
   * Writes the lines of #data written since the last call to the file (pwrite, runs: #mediaRuns),
   * before the msync that syncs them — after the channel's jobs (#joinJobs). A failed write is a
   * failed msync: nothing waiting is acknowledged and the region refuses further persists
   * (PMRPC_ERR_SYNC_FAILED).
   */
  #writeMedia(): void {
    if (this.#mediaFd < 0) return;
    // (Not counted synced here: a sync() joins it so itself; a crash image or a close only needs it in the file first.)
    this.#joinJobs(false);
    if (this.#unwrittenN === 0) return;
    if (this.#journalFd >= 0) return this.#appendJournal();
    const data = this.#data;
    try {
      const runs = this.#mediaRuns();
      for (let i = 0; i < runs.length; i += 2) {
        const at = runs[i]!;
        const len = runs[i + 1]!;
        for (let done = 0; done < len; ) done += writeSync(this.#mediaFd, data, at + done, len - done, HEADER_BYTES + at + done);
      }
    } catch (e) {
      this.#syncFailed ??= new PmrpcError(ErrorCodes.SYNC_FAILED, `write of the region's lines to ${this.path ?? 'its file'} failed (${(e as Error)?.message ?? String(e)}): what reached the disk is unknown; nothing waiting on it is acknowledged and this region refuses further persists — restart to recover from the file`, { cause: e });
      throw this.#syncFailed;
    } finally {
      this.#clearUnwritten();
    }
  }

  /**
   * The lines #writeMedia would write, copied for a channel job (#startAsync): `staged` holds the
   * runs back to back, `writes` = [file offset, offset in staged, length, …]. The copy is what the
   * job writes, whatever is drained into #data before it runs. The lines stay noted unwritten until
   * the job is submitted (#clearUnwritten).
   */
  #stageMedia(): { staged: ArrayBuffer; writes: Float64Array } {
    const runs = this.#mediaRuns();
    let total = 0;
    for (let i = 1; i < runs.length; i += 2) total += runs[i]!;
    const staged = new Uint8Array(total);
    const writes = new Float64Array((runs.length / 2) * 3);
    const data = this.#data;
    for (let i = 0, at = 0, w = 0; i < runs.length; i += 2, w += 3) {
      const from = runs[i]!;
      const len = runs[i + 1]!;
      staged.set(data.subarray(from, from + len), at);
      writes[w] = HEADER_BYTES + from;
      writes[w + 1] = at;
      writes[w + 2] = len;
      at += len;
    }
    return { staged: staged.buffer, writes };
  }

  /**
   * With a journal: the lines #writeMedia would write, as one record appended to the journal and
   * synced, on the thread (the channel's jobs joined first), and written to the file unsynced. A
   * failure is a failed msync (PMRPC_ERR_SYNC_FAILED).
   */
  #appendJournal(): void {
    try {
      const { staged, writes } = this.#stageMedia();
      this.#channel!.appendSync(staged, writes);
    } catch (e) {
      this.#syncFailed ??= new PmrpcError(ErrorCodes.SYNC_FAILED, `append to the journal of ${this.path ?? 'the region'} failed (${(e as Error)?.message ?? String(e)}): what reached the disk is unknown; nothing waiting on it is acknowledged and this region refuses further persists — restart to recover from the file`, { cause: e });
      throw this.#syncFailed;
    } finally {
      this.#clearUnwritten();
    }
  }

  #msync(offset: number, len: number): void {
    const media = this.#media!;
    this.#writeMedia();
    this.#stats.msyncs++;
    // With a journal the append synced every line written since the last sync (the jobs' records before it).
    if (this.#journalFd >= 0) return;
    try {
      this.options.msync(media.buffer, HEADER_BYTES + offset, len);
    } catch (e) {
      this.#syncFailed = new PmrpcError(ErrorCodes.SYNC_FAILED, `msync of [${offset}, ${offset + len}) failed (${(e as Error)?.message ?? String(e)}): what reached the disk is unknown; nothing waiting on it is acknowledged and this region refuses further persists — restart to recover from the file`, { cause: e });
      throw this.#syncFailed;
    }
  }

  #assertOpen(): Media {
    if (this.#media === undefined) throw new PmrpcError(ErrorCodes.REGION_CLOSED, 'the region is closed');
    return this.#media;
  }

  #assertOwner(): void {
    // (The message is built only on failure: this runs on every store.)
    if (threadId !== this.#owner) assert.fail(`pmrpc: store from thread ${threadId} into a region owned by thread ${this.#owner}; workers get read-only views`);
  }

  #check(offset: number, len: number): void {
    this.#assertOpen();
    checkRange(offset, len, this.sizeBytes);
  }

  #checkStore(offset: number, len: number): void {
    this.#check(offset, len);
    this.#assertOwner();
    if (this.#pendCount > 0 && len > 0) this.#copyOnWrite(offset, len);
    const t = this.#touched;
    if (t !== undefined && len > 0) t.fill(1, Math.floor(offset / FORMAT_PAGE), Math.floor((offset + len - 1) / FORMAT_PAGE) + 1);
  }

  #checkAligned(offset: number): void {
    this.#check(offset, 8);
    if (offset % 8 !== 0) throw new PmrpcError(ErrorCodes.MISALIGNED, `8-byte atomic access at offset ${offset} is not 8-byte aligned`);
  }
}

/** Read-only view of a region's visible memory, for worker threads. */
export class PmemReadView {
  readonly sizeBytes: number;
  #bytes: Uint8Array;
  #dv: DataView;
  #u64: BigUint64Array;

  constructor(shared: { buffer: SharedArrayBuffer; sizeBytes: number }) {
    this.sizeBytes = shared.sizeBytes;
    this.#bytes = new Uint8Array(shared.buffer, 0, shared.sizeBytes);
    this.#dv = new DataView(shared.buffer, 0, shared.sizeBytes);
    this.#u64 = new BigUint64Array(shared.buffer, 0, shared.sizeBytes / 8);
  }

  load(offset: number, len: number): Uint8Array {
    checkRange(offset, len, this.sizeBytes);
    return this.#bytes.slice(offset, offset + len);
  }

  loadU32(offset: number): number {
    checkRange(offset, 4, this.sizeBytes);
    return this.#dv.getUint32(offset, true);
  }

  loadU64(offset: number): bigint {
    checkRange(offset, 8, this.sizeBytes);
    return this.#dv.getBigUint64(offset, true);
  }

  loadU64Atomic(offset: number): bigint {
    checkRange(offset, 8, this.sizeBytes);
    if (offset % 8 !== 0) throw new PmrpcError(ErrorCodes.MISALIGNED, `8-byte atomic access at offset ${offset} is not 8-byte aligned`);
    return Atomics.load(this.#u64, offset / 8);
  }
}

export function checkRange(offset: number, len: number, sizeBytes: number): void {
  if (!Number.isInteger(offset) || !Number.isInteger(len) || offset < 0 || len < 0 || offset + len > sizeBytes) {
    throw new PmrpcError(ErrorCodes.OUT_OF_BOUNDS, `access [${offset}, ${offset + len}) is outside the region [0, ${sizeBytes})`);
  }
}

/** PMRPC_ERR_REGION_SIZE unless `sizeBytes` is a positive multiple of 64 up to MAX_REGION_BYTES. */
export function checkSize(sizeBytes: number): void {
  if (!Number.isSafeInteger(sizeBytes) || sizeBytes <= 0 || sizeBytes % LINE_BYTES !== 0 || sizeBytes > MAX_REGION_BYTES) {
    throw new PmrpcError(ErrorCodes.REGION_SIZE, `sizeBytes must be a positive multiple of ${LINE_BYTES} up to ${MAX_REGION_BYTES} (4 GiB minus the ${HEADER_BYTES}-byte header), got ${sizeBytes}`);
  }
}

/** The temporary sibling a format builds `path` in (renamed into place when complete). */
export function formatTempPath(path: string): string {
  return join(dirname(path), `.${basename(path)}.pmrpc-format`);
}

function fileSize(path: string): number | undefined {
  try {
    const st = statSync(path);
    if (st.isDirectory()) throw new PmrpcIoError(`${path} is a directory`, 'EISDIR', 'open');
    return st.size;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    if (e instanceof PmrpcError) throw e;
    const err = e as NodeJS.ErrnoException;
    throw new PmrpcIoError(`cannot stat ${path}: ${err.message}`, err.code ?? 'EUNKNOWN', 'stat', e);
  }
}

function existsPath(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}

function fsyncPath(path: string, flags: 'r' | 'r+'): void {
  const fd = openSync(path, flags);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Maps a region file holding its exclusive lock; a lock held elsewhere is PMRPC_ERR_FILE_LOCKED
 * naming the holder. With `reserve`, every block of the file is allocated first (the file reads
 * the same; holes stay holes to SEEK_DATA): a filesystem without room is PMRPC_ERR_IO (ENOSPC,
 * or EFBIG past the process's file-size limit) here, at create or open, instead of a SIGBUS at
 * the store that would have filled a hole.
 */
function lockedMap(path: string, length: number, o: { create?: boolean; reset?: boolean; reserve?: boolean }, forPath = path): ArrayBuffer {
  try {
    return mapFile(path, length, { ...o, lock: true });
  } catch (e) {
    if (e instanceof PmrpcIoError && e.syscall === 'fallocate') {
      throw new PmrpcIoError(`cannot reserve ${length} bytes on disk for ${forPath} (${e.errno}): a PM file holds its whole size on the filesystem, reserved when it is created or opened; free space or choose a smaller --size`, e.errno, 'fallocate', e);
    }
    if (!(e instanceof PmrpcIoError) || e.errno !== 'EWOULDBLOCK') throw e;
    const pid = lockHolder(path);
    const who = pid === undefined ? 'another process' : `process ${pid}`;
    const what = forPath === path ? `${path} is in use by ${who}` : `${forPath} is being formatted by ${who} (it holds ${path})`;
    throw new PmrpcError(ErrorCodes.FILE_LOCKED, `${what}: one process owns a PM file (an exclusive lock, held while it is open); stop it first`, { cause: e });
  }
}

/**
 * The pid holding a flock on `path`, from /proc/locks (Linux; undefined elsewhere or if it is gone).
 * A line reads `1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF` (major:minor in hex, inode).
 */
export function lockHolder(path: string): number | undefined {
  let text: string;
  let dev: number;
  let ino: number;
  try {
    const st = statSync(path);
    dev = st.dev;
    ino = st.ino;
    text = readFileSync('/proc/locks', 'utf8');
  } catch {
    return undefined;
  }
  const major = ((dev >>> 8) & 0xfff) | (Math.floor(dev / 2 ** 32) & ~0xfff);
  const minor = (dev & 0xff) | ((dev >>> 12) & 0xfff00);
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f[1] !== 'FLOCK' || f.length < 6) continue;
    const m = /^([0-9a-f]+):([0-9a-f]+):(\d+)$/.exec(f[5]!);
    if (m === null) continue;
    if (parseInt(m[1]!, 16) === major && parseInt(m[2]!, 16) === minor && Number(m[3]) === ino) return Number(f[4]);
  }
  return undefined;
}

/** Media's data area into visible memory: only the file's data extents when it is sparse. */
/** The 4 KiB page of the file that holds line `line` of the data area. */
const filePage = (line: number): number => Math.floor((HEADER_BYTES + line * LINE_BYTES) / 4096);

/** Replays the journal beside the file at `path` into it (pmem/journal.ts); returns the journal's epoch (0: no journal of this file). */
function replay(path: string, fileBytes: number, uuid: Uint8Array): number {
  if (!existsSync(journalPath(path))) return 0;
  let fd: number;
  try {
    fd = openSync(path, 'r+');
  } catch (e) {
    throw new PmrpcIoError(`open ${path} to replay its journal: ${(e as Error).message}`, (e as NodeJS.ErrnoException).code ?? 'EUNKNOWN', 'open', e);
  }
  try {
    return replayJournal(path, fd, fileBytes, uuid).epoch;
  } finally {
    closeSync(fd);
  }
}

function copyMedia(visible: Uint8Array, data: Uint8Array, path: string | undefined, filled?: ReadonlyArray<readonly [number, number]>): void {
  let extents: ReadonlyArray<readonly [number, number]> | undefined = filled;
  if (path !== undefined) {
    try {
      extents = dataExtents(path);
    } catch {
      extents = undefined; // no SEEK_DATA: copy it all
    }
  }
  if (extents === undefined) {
    copyNonZero(visible, data, 0, data.length);
    return;
  }
  for (const [s, e] of extents) {
    const from = Math.max(s - HEADER_BYTES, 0);
    const to = Math.min(e - HEADER_BYTES, data.length);
    if (to > from) copyNonZero(visible, data, from, to);
  }
}

/** Chunks of copyNonZero, and a chunk of zeros to compare with. */
const COPY_CHUNK = 64 * 1024;
const ZERO_CHUNK = Buffer.alloc(COPY_CHUNK);

/**
 * data[from, to) into visible (fresh: all zeros), skipping the chunks that are all zeros: a data
 * extent may be zeros — a reserved file's unwritten blocks read once by another process count as
 * data to SEEK_DATA — and copying them would cost the process their memory.
 */
function copyNonZero(visible: Uint8Array, data: Uint8Array, from: number, to: number): void {
  for (let at = from; at < to; at += COPY_CHUNK) {
    const end = Math.min(to, at + COPY_CHUNK);
    const chunk = Buffer.from(data.buffer, data.byteOffset + at, end - at);
    if (end - at === COPY_CHUNK ? chunk.equals(ZERO_CHUNK) : chunk.equals(ZERO_CHUNK.subarray(0, end - at))) continue;
    visible.set(chunk, at);
  }
}

/** RangeError: 0, or a multiple of 4096 of at least 8192 (a header and one record). */
const journalSize = must((v) => v === 0 || (Number.isSafeInteger(v) && (v as number) >= 8192 && (v as number) % 4096 === 0), (v) => `must be 0 or a multiple of 4096 of at least 8192, got ${String(v)}`, RangeError);

const PMEM_CHECKS: OptionChecks<PmemOptions> = { domain: oneOf(['adr', 'eadr']), eviction: probability, strict: bool, tracing: bool, seed: integer, lineModel: oneOf(['prefix', 'subset']), msync: callable(), msyncAsync: optional(callable()), msyncInline: bool, journalBytes: journalSize };

function resolvePmemOptions(options: Partial<PmemOptions>): PmemOptions {
  return resolveOptions(PMEM_DEFAULTS, options, PMEM_CHECKS);
}

function openReadOnly(path: string): number {
  try {
    return openSync(path, 'r');
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    throw new PmrpcIoError(`cannot open ${path}: ${err.message}`, err.code ?? 'EUNKNOWN', 'open', e);
  }
}

function isZero(bytes: Uint8Array): boolean {
  for (let i = 0; i < bytes.length; i++) if (bytes[i] !== 0) return false;
  return true;
}

/** Marks lines [first, last] dirty; returns how many were clean. Nothing follows the loop but its result (see #afterStore). */
function markDirty(dirty: Uint8Array, first: number, last: number): number {
  let n = 0;
  for (let line = first; line <= last; line++) {
    if (dirty[line] === 0) {
      dirty[line] = 1;
      n++;
    }
  }
  return n;
}
