/**
 * The mmap addon (native/mmap.cc), loaded once by node-gyp-build: a source build in build/Release, else the
 * prebuilt binary in prebuilds/<platform>-<arch>/. Arguments are validated here, in TypeScript;
 * an errno from the addon becomes a PmrpcIoError (code PMRPC_ERR_IO, errno name, syscall).
 */
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PmrpcIoError } from './errors.js';

interface NativeMmap {
  map(path: string, length: number, flags: number): ArrayBuffer;
  dataExtents(path: string): number[];
  msync(buffer: ArrayBuffer, offset: number, length: number): void;
  msyncAsync(buffer: ArrayBuffer, offset: number, length: number, done: (err: unknown) => void, ...channelJob: [channel: unknown, fd: number, staged: ArrayBuffer, writes: Float64Array] | []): number | undefined;
  msyncChannel(): unknown;
  msyncJoin(channel: unknown, ticket: number): void;
  msyncJournal(channel: unknown, fd: number, size: number, epoch: number, uuid: Uint8Array, dataFd: number): void;
  msyncJournalAppend(channel: unknown, staged: ArrayBuffer, writes: Float64Array): void;
  msyncJournalCheckpoint(channel: unknown): void;
  unmap(buffer: ArrayBuffer): void;
  pageSize(): number;
  crc32c(bytes: Uint8Array, start: number, end: number, seed: number): number;
  crc32cHardware(): boolean;
}

let loaded: NativeMmap | undefined;

/** node-gyp-build: picks build/Release (a source build) if it holds a .node, else prebuilds/<platform>-<arch>/. */
interface NodeGypBuild {
  (dir: string): unknown;
  resolve(dir: string): string;
}

/** The package root: pmem/native.ts runs from <root>/pmem (sources under tap) or <root>/dist/pmem (compiled). */
function packageRoot(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  for (const up of ['..', '../..']) {
    const root = join(here, up);
    if (existsSync(join(root, 'binding.gyp'))) return root;
  }
  return join(here, '..');
}

/**
 * Which binary loads (docs/install.md): a source build in build/Release if there is one (the
 * install step builds one only when the prebuilt binary does not load, or a developer ran
 * `npm run build`), else the prebuilt prebuilds/<platform>-<arch>/pmrpc.<libc>.node shipped in the
 * package. PMRPC_PREBUILD=<dir> makes node-gyp-build look in <dir> instead.
 */
function addon(): NativeMmap {
  if (loaded !== undefined) return loaded;
  const root = packageRoot();
  const req = createRequire(import.meta.url);
  let path: string | undefined;
  try {
    path = (req('node-gyp-build') as NodeGypBuild).resolve(root);
    loaded = req(path) as NativeMmap;
  } catch (e) {
    const why = e instanceof Error ? e.message.trim() : String(e);
    throw new Error(
      `pmrpc: the mmap addon does not load (${path === undefined ? 'no binary found' : path}): ${why}\n` +
        `  looked for a source build in ${join(root, 'build', 'Release')} and a prebuilt binary in ${join(root, 'prebuilds', `${process.platform}-${process.arch}`)};\n` +
        '  build it from source with `npm rebuild pmrpc` (in a project using pmrpc) or `npx node-gyp rebuild` (in a pmrpc checkout); needs a C++ toolchain (docs/install.md)',
      { cause: e },
    );
  }
  return loaded;
}

function wrap<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    const err = e as { code?: string; syscall?: string; message?: string };
    throw new PmrpcIoError(`${what}: ${err.message ?? String(e)}`, err.code ?? 'EUNKNOWN', err.syscall ?? what, e);
  }
}

/**
 * The largest mapping: Node 20 refuses an external ArrayBuffer above 2^32 bytes (node::Buffer's
 * kMaxLength), so a region file (header + data area) is at most this long.
 */
export const MAX_MAPPING_BYTES = 2 ** 32;

export interface MapFileOptions {
  /** Create the file if absent, and extend it (ftruncate: sparse unless `reserve`) to `length` if shorter. */
  create: boolean;
  /**
   * Take an exclusive flock(LOCK_EX | LOCK_NB) on the file first and hold it for the mapping's
   * life (released by unmapFile, or when the process ends). Held by another open file: PMRPC_ERR_IO
   * with errno EWOULDBLOCK.
   */
  lock: boolean;
  /** With `lock`: once the lock is held, truncate the file to 0 bytes first (a stale temporary file). */
  reset: boolean;
  /**
   * Reserve every block of the `length` bytes (posix_fallocate) before mapping: a full disk is
   * PMRPC_ERR_IO with errno ENOSPC here, not a SIGBUS at a later store to a hole. The file reads
   * as before (new blocks as zeros) and unwritten blocks are still holes to SEEK_DATA.
   */
  reserve: boolean;
}

/** Maps `length` bytes of `path` MAP_SHARED (see MapFileOptions). */
export function mapFile(path: string, length: number, options: Partial<MapFileOptions> = {}): ArrayBuffer {
  if (!Number.isSafeInteger(length) || length <= 0 || length > MAX_MAPPING_BYTES) throw new RangeError(`length must be a positive integer up to ${MAX_MAPPING_BYTES}, got ${length}`);
  if (options.reset === true && options.lock !== true) throw new TypeError('reset needs lock');
  const flags = (options.create === true ? 1 : 0) | (options.lock === true ? 2 : 0) | (options.reset === true ? 4 : 0) | (options.reserve === true ? 8 : 0);
  const native = addon(); // a load failure is not an I/O error: it throws as is
  return wrap(`map ${path}`, () => native.map(path, length, flags));
}

/** The byte ranges of `path` that hold data ([start, end) pairs, SEEK_DATA / SEEK_HOLE); holes read as zeros. */
export function dataExtents(path: string): Array<[number, number]> {
  const native = addon();
  const flat = wrap(`extents of ${path}`, () => native.dataExtents(path));
  const out: Array<[number, number]> = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([flat[i]!, flat[i + 1]!]);
  return out;
}

/** msync(MS_SYNC) of [offset, offset + length) of a mapping. */
export function syncMapping(buffer: ArrayBuffer, offset: number, length: number): void {
  if (offset < 0 || length < 0 || offset + length > buffer.byteLength) {
    throw new RangeError(`msync range [${offset}, ${offset + length}) outside a mapping of ${buffer.byteLength} bytes`);
  }
  if (length === 0) return;
  const native = addon();
  wrap('msync', () => native.msync(buffer, offset, length));
}

/**
 * msync(MS_SYNC) of [offset, offset + length) of a mapping on a libuv pool thread; `done` runs on
 * the event loop with null, or a PmrpcIoError. Only what was written to the mapping before the call
 * is synced when `done` runs. Throws at once on a bad range or a detached buffer.
 */
export function syncMappingAsync(buffer: ArrayBuffer, offset: number, length: number, done: (err: Error | null) => void): void {
  if (offset < 0 || length < 0 || offset + length > buffer.byteLength) {
    throw new RangeError(`msync range [${offset}, ${offset + length}) outside a mapping of ${buffer.byteLength} bytes`);
  }
  if (length === 0) {
    queueMicrotask(() => done(null));
    return;
  }
  const native = addon();
  wrap('msync', () =>
    native.msyncAsync(buffer, offset, length, (err: unknown) => done(err === null || err === undefined ? null : asyncError(err))),
  );
}

/** The PmrpcIoError an async msync job's Error from the addon becomes. */
function asyncError(err: unknown): PmrpcIoError {
  const e = err as { code?: string; syscall?: string; message?: string };
  return new PmrpcIoError(`msync: ${e.message ?? String(err)}`, e.code ?? 'EUNKNOWN', e.syscall ?? 'msync', err);
}

/**
 * An msync channel of the addon: jobs that each write bytes staged for them to a file (pwrite)
 * and then msync a range of its mapping, run off the JS thread ONE AFTER ANOTHER in the order
 * they were submitted — a job's writes reach the file only after every earlier job's msync
 * returned, even when a second is submitted while one runs. join() blocks until the jobs
 * submitted so far have finished (what a sync on the JS thread does first). After a failed job
 * the later ones write nothing and fail with the same error. (A strict region runs one job at a
 * time: PmemRegion's async msync.)
 */
export class MsyncChannel {
  readonly #native = addon();
  readonly #handle: unknown = this.#native.msyncChannel();
  #last = 0;
  #finished = 0;

  /** Jobs submitted whose `done` has not run yet. */
  get pending(): number {
    return this.#last - this.#finished;
  }

  /**
   * Queues a job: `writes` = [fileOffset, stagedOffset, length, …] of `staged` written to `fd`, then
   * msync(MS_SYNC) of [offset, offset + length) of `mapping`; `done` runs on the event loop (null,
   * or a PmrpcIoError), in submission order. The caller leaves `staged` alone until then.
   */
  submit(mapping: ArrayBuffer, offset: number, length: number, fd: number, staged: ArrayBuffer, writes: Float64Array, done: (err: Error | null) => void): void {
    if (offset < 0 || length < 0 || offset + length > mapping.byteLength) {
      throw new RangeError(`msync range [${offset}, ${offset + length}) outside a mapping of ${mapping.byteLength} bytes`);
    }
    const ticket = wrap('msync', () =>
      this.#native.msyncAsync(mapping, offset, length, (err: unknown) => {
        this.#finished++;
        done(err === null || err === undefined ? null : asyncError(err));
      }, this.#handle, fd, staged, writes),
    );
    this.#last = ticket!;
  }

  /** Blocks until every job submitted so far has finished (its writes and msync); throws the first failure (PmrpcIoError). */
  join(): void {
    if (this.#last === 0) return;
    wrap('msync', () => this.#native.msyncJoin(this.#handle, this.#last));
  }

  /**
   * From now on every job appends its lines to the journal `fd` (`size` bytes, written out in full)
   * as one record, writes them to `dataFd` (the PM file) unsynced, and syncs the journal only,
   * instead of msyncing (pmem/journal.ts). The journal's header is written for `epoch` and synced
   * first. Before any job is submitted.
   */
  journal(fd: number, size: number, epoch: number, uuid: Uint8Array, dataFd: number): void {
    if (this.#last !== 0) throw new RangeError('a journal is attached before the first job');
    wrap('write', () => this.#native.msyncJournal(this.#handle, fd, size, epoch, uuid, dataFd));
  }

  /** One journal record appended and synced on this thread (every job finished: join() first). */
  appendSync(staged: ArrayBuffer, writes: Float64Array): void {
    wrap('write', () => this.#native.msyncJournalAppend(this.#handle, staged, writes));
  }

  /** A journal checkpoint on this thread (every job finished): the PM file synced, a new epoch. */
  checkpoint(): void {
    wrap('fdatasync', () => this.#native.msyncJournalCheckpoint(this.#handle));
  }
}

/** Unmaps and detaches the buffer: every view of it becomes empty. Idempotent. */
export function unmapFile(buffer: ArrayBuffer): void {
  const native = addon();
  wrap('munmap', () => native.unmap(buffer));
}

export function pageSize(): number {
  return addon().pageSize();
}

/**
 * The addon's CRC-32C of bytes[start, end) from `seed` (pmem/crc32.ts calls it for long ranges), or
 * undefined when the addon does not load (or is an older build without it): the caller then
 * computes it in JS. Never throws.
 */
export function nativeCrc32c(): ((bytes: Uint8Array, start: number, end: number, seed: number) => number) | undefined {
  try {
    const native = addon();
    return typeof native.crc32c === 'function' ? native.crc32c : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the addon's CRC-32C uses the CPU's crc32 instruction (SSE4.2); false without the addon. */
export function crc32cHardware(): boolean {
  try {
    const native = addon();
    return typeof native.crc32cHardware === 'function' && native.crc32cHardware();
  } catch {
    return false;
  }
}
