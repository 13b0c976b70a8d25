/**
 * The mmap addon (native/mmap.cc), loaded once. Arguments are validated here, in TypeScript;
 * an errno from the addon becomes a PmrpcIoError (code PMRPC_ERR_IO, errno name, syscall).
 */
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PmrpcIoError } from './errors.js';

interface NativeMmap {
  map(path: string, length: number, create: boolean): ArrayBuffer;
  msync(buffer: ArrayBuffer, offset: number, length: number): void;
  unmap(buffer: ArrayBuffer): void;
  pageSize(): number;
}

let loaded: NativeMmap | undefined;

function findAddon(): string {
  // pmem/native.ts runs from <root>/pmem (sources under tap) or <root>/dist/pmem (compiled).
  const here = dirname(fileURLToPath(import.meta.url));
  for (const up of ['..', '../..']) {
    const p = join(here, up, 'build', 'Release', 'pmrpc_mmap.node');
    if (existsSync(p)) return p;
  }
  throw new Error('pmrpc: the mmap addon is not built (build/Release/pmrpc_mmap.node); run `npm install` or `npx node-gyp rebuild`');
}

function addon(): NativeMmap {
  if (loaded === undefined) loaded = createRequire(import.meta.url)(findAddon()) as NativeMmap;
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

/** Maps `length` bytes of `path` MAP_SHARED; with `create`, creates the file or extends it to `length`. */
export function mapFile(path: string, length: number, create: boolean): ArrayBuffer {
  if (!Number.isSafeInteger(length) || length <= 0) throw new RangeError(`length must be a positive integer, got ${length}`);
  return wrap(`map ${path}`, () => addon().map(path, length, create));
}

/** msync(MS_SYNC) of [offset, offset + length) of a mapping. */
export function syncMapping(buffer: ArrayBuffer, offset: number, length: number): void {
  if (offset < 0 || length < 0 || offset + length > buffer.byteLength) {
    throw new RangeError(`msync range [${offset}, ${offset + length}) outside a mapping of ${buffer.byteLength} bytes`);
  }
  if (length === 0) return;
  wrap('msync', () => addon().msync(buffer, offset, length));
}

/** Unmaps and detaches the buffer: every view of it becomes empty. Idempotent. */
export function unmapFile(buffer: ArrayBuffer): void {
  wrap('munmap', () => addon().unmap(buffer));
}

export function pageSize(): number {
  return addon().pageSize();
}
