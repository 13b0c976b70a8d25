/**
 * The layer-1 crash demo: a child process writes records into a region file, persisting some and
 * leaving others (on other cache lines) unpersisted, reports what it persisted, and is killed with
 * SIGKILL mid-run. The file is then reopened and checked: every record the child reported as
 * persisted is there, intact; with ADR and no eviction, none of the unpersisted ones is.
 *
 * Layout: record i owns two cache lines at 128·i. Line 0 holds the persisted record, line 1 the
 * unpersisted one. A record is ⟨seq+1 u64, value u64, crc u32⟩ with value derived from the seed.
 */
import { crc32c, PmemRegion, systemClock } from '../../pmem/index.js';

export const RECORD_BYTES = 128;

export function recordValue(seed: number, i: number): bigint {
  // splitmix-style mixing, so a wrong or stale value is caught by content, not just by presence.
  let x = BigInt.asUintN(64, BigInt(seed) * 0x9e3779b97f4a7c15n + BigInt(i) * 0xbf58476d1ce4e5b9n);
  x = BigInt.asUintN(64, (x ^ (x >> 31n)) * 0x94d049bb133111ebn);
  return x ^ (x >> 29n);
}

export function encodeRecord(seed: number, i: number): Uint8Array {
  const b = new Uint8Array(24);
  const dv = new DataView(b.buffer);
  dv.setBigUint64(0, BigInt(i + 1), true);
  dv.setBigUint64(8, recordValue(seed, i), true);
  dv.setUint32(16, crc32c(b, 0, 16), true);
  return b;
}

export type RecordState = 'absent' | 'intact' | 'corrupt';

export function readRecord(r: PmemRegion, offset: number, seed: number, i: number): RecordState {
  const b = r.load(offset, 24);
  if (b.every((x) => x === 0)) return 'absent';
  const want = encodeRecord(seed, i);
  return b.every((x, k) => x === want[k]) ? 'intact' : 'corrupt';
}

/**
 * The child side: runs until killed (or until `records` are written, then idles, bounded).
 * Writes `acked N` lines on stdout: records [0, N) are durable.
 */
export async function runPmemWriter(path: string, records: number, seed: number, reportEvery: number): Promise<void> {
  const region = PmemRegion.open(path, { domain: 'adr', eviction: 0 });
  const unpersisted = new Uint8Array(24).fill(0x5a);
  for (let i = 0; i < records; i++) {
    const base = i * RECORD_BYTES;
    region.store(base, encodeRecord(seed, i));
    region.persist(base, 24);
    region.store(base + 64, unpersisted); // never flushed: must not survive a crash (ADR, no eviction)
    if ((i + 1) % reportEvery === 0 || i + 1 === records) {
      process.stdout.write(`acked ${i + 1}\n`);
      // Yield so the parent can read the report and the kill can land mid-run.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
  process.stdout.write('done\n');
  // Stay alive, without flushing, until the parent kills us (bounded).
  await new Promise<void>((resolve) => systemClock.setTimer(60_000, resolve));
}
