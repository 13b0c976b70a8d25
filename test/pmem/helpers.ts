// Shared helpers of the pmem/ tests (not a test file: tap includes only *.test.ts).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HEADER_BYTES, PmemRegion } from '../../pmem/index.js';

/** A fresh temp dir, removed when the test `t` ends. */
export function tempDir(t: { teardown(fn: () => void): void }, prefix = 'pmrpc-pmem-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Runs `fn` and returns what it threw; fails loudly if it did not throw. */
export function caught(fn: () => unknown): Error & { code?: string; errno?: string; syscall?: string } {
  try {
    fn();
  } catch (e) {
    return e as Error & { code?: string };
  }
  throw new Error('expected an error, nothing was thrown');
}

/**
 * The media data area of a file-backed region, read through the file (not the mapping): with
 * MAP_SHARED the page cache is the media, so this is what a crash of the process would leave.
 */
export function fileMedia(path: string, offset = 0, len?: number): Uint8Array {
  const all = new Uint8Array(readFileSync(path));
  const data = all.subarray(HEADER_BYTES);
  return data.slice(offset, len === undefined ? undefined : offset + len);
}

/** The media data area of a traced (or eADR) region, via crashState(). */
export function stateMedia(r: PmemRegion, offset = 0, len?: number): Uint8Array {
  const data = r.crashState().media.subarray(HEADER_BYTES);
  return data.slice(offset, len === undefined ? undefined : offset + len);
}

export function bytes(len: number, value: number): Uint8Array {
  return new Uint8Array(len).fill(value);
}

export function eq(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
