// Lazy images and applied flags of strict group commit (docs/recovery.md, "Group commit"): one
// msync per batch carries the batch's records, the previous batch's images and applied words, and
// the flags of the batch before that. A recording msync shim keeps the "disk" (what a machine crash
// keeps) after every msync, so the test can (1) check the pipeline's order at every msync — no image
// becomes durable in the msync that makes its record durable, no flag in the one that makes its
// images durable — and (2) recover from a torn msync (any subset of its pages: here only the page of
// the connection table) in which the table's applied word is durable ahead of the images: recovery
// must replay the complete records behind the word (row replay-behind-word), or those effects are lost.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPrng, HEADER_BYTES, PmemRegion, seededEntropy, type MsyncAsyncFn, type MsyncFn } from '../../pmem/index.js';
import { layoutBytes, RECORD_HEADER_BYTES, RecoveryStore, type LayoutOptions } from '../../recovery/index.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/recovery/lazy-flags.test.ts)`);

const PAGE = 4096;
// The application area spans pages of its own: the images (at IMAGE_BASE) never share a page with the connection table.
const GEOMETRY: Partial<LayoutOptions> = { maxClients: 2, ringSlots: 8, slotBytes: 128, logRecords: 16, recordBytes: 128, appBytes: 4 * PAGE };
const IMAGE_BASE = 2 * PAGE;
const PER_BATCH = 4;

const u64 = (n: number): Uint8Array => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt(n), true);
  return b;
};

interface Sync {
  before: Uint8Array;
  after: Uint8Array;
}

/** An async msync the test lands by hand: the range as the file held it when the msync was called, and its call back. */
interface PendingSync {
  off: number;
  bytes: Uint8Array;
  done: (err: Error | null) => void;
  /** A blocking msync since waited for its writeback: on the disk already. */
  landed: boolean;
}

/**
 * `async`: the region's async msync (syncAsync, groupCommitAsync) is a shim whose msyncs wait in
 * `pending` until the test lands them (land()): until then their pages are written to the file
 * but not on the disk — a machine crash may keep any subset of them, and of whatever the file got
 * since. `atMsync` runs at every msync call (blocking or async), with the file as it is then.
 */
function world(t: Tap.Test, opts: { async?: boolean; atMsync?: (file: Uint8Array) => void; geometry?: Partial<LayoutOptions> } = {}) {
  const geometry = opts.geometry ?? GEOMETRY;
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-lazy-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let disk: Uint8Array | undefined;
  const syncs: Sync[] = [];
  const pending: PendingSync[] = [];
  const msync: MsyncFn = (mapping, off, len) => {
    const m = new Uint8Array(mapping);
    if (disk === undefined) disk = m.slice(); // the header was synced at create (not through the shim); the rest is zero
    opts.atMsync?.(m);
    const before = disk.slice();
    // A blocking msync waits for the writeback of the async ones running (their pages as they were sent), then syncs its range.
    for (const p of pending) if (!p.landed) {
      disk.set(p.bytes, p.off);
      p.landed = true;
    }
    disk.set(m.subarray(off, off + len), off);
    syncs.push({ before, after: disk.slice() });
  };
  const msyncAsync: MsyncAsyncFn = (mapping, off, len, done) => {
    const m = new Uint8Array(mapping);
    if (disk === undefined) disk = m.slice();
    opts.atMsync?.(m);
    pending.push({ off, bytes: m.slice(off, off + len), done, landed: false });
  };
  /** Lands the oldest pending async msync (its range reaches the disk) and calls it back. */
  const land = (): void => {
    const p = pending.shift()!;
    const before = disk!.slice();
    if (!p.landed) disk!.set(p.bytes, p.off);
    syncs.push({ before, after: disk!.slice() });
    p.done(null);
  };
  const region = PmemRegion.create(join(dir, 'r.pm'), layoutBytes(geometry), { strict: true, msync, ...(opts.async ? { msyncAsync } : {}), entropy: seededEntropy(createPrng(SEED)) });
  t.teardown(() => region.close({ writeBack: false }));
  const store = RecoveryStore.format(region, geometry);
  const { clientId } = store.register();
  let seq = 0;
  /** One poll batch of PER_BATCH requests, as the RPC server runs it; returns their sequences. */
  const batch = (n = PER_BATCH): number[] => {
    const seqs: number[] = [];
    store.batch(() => {
      for (let k = 0; k < n; k++) {
        seq++;
        store.commit(clientId, seq, { images: [{ offset: IMAGE_BASE + seq * 8, bytes: u64(1000 + seq) }], result: u64(seq) });
        seqs.push(seq);
      }
    });
    return seqs;
  };
  const recordAt = (img: Uint8Array, s: number): boolean => {
    // Records are written in LSN order, one per request: LSN = seq here. The LSN word on the disk says the record is there.
    const off = HEADER_BYTES + store.layout.recordOffset((s - 1) % geometry.logRecords!);
    return new DataView(img.buffer, img.byteOffset).getBigUint64(off + 8, true) === BigInt(s);
  };
  const flagAt = (img: Uint8Array, s: number): boolean => {
    const off = HEADER_BYTES + store.layout.recordOffset((s - 1) % geometry.logRecords!);
    return new DataView(img.buffer, img.byteOffset).getBigUint64(off, true) === BigInt(s);
  };
  const imageAt = (img: Uint8Array, s: number): boolean => {
    const off = HEADER_BYTES + store.geometry.appOffset + IMAGE_BASE + s * 8;
    return new DataView(img.buffer, img.byteOffset).getBigUint64(off, true) === BigInt(1000 + s);
  };
  return { region, store, clientId, syncs, pending, land, batch, recordAt, flagAt, imageAt, get seq() { return seq; }, get disk() { return disk!; } };
}

/** At every msync, what becomes durable depends only on what an earlier msync made durable. */
function orderViolations(w: ReturnType<typeof world>, from: number): string[] {
  const out: string[] = [];
  for (const [i, s] of w.syncs.entries()) {
    if (i < from) continue;
    for (let q = 1; q <= w.seq; q++) {
      if (w.imageAt(s.after, q) && !w.imageAt(s.before, q) && !w.recordAt(s.before, q)) out.push(`msync ${i}: the image of seq ${q} became durable with (or before) its record`);
      if (w.flagAt(s.after, q) && !w.flagAt(s.before, q) && !w.imageAt(s.before, q)) out.push(`msync ${i}: the flag of seq ${q} became durable with (or before) its image`);
    }
  }
  return out;
}

t.test('one msync per batch, and at every msync each step follows the sync of what it depends on', async (t) => {
  const w = world(t);
  const from = w.syncs.length;
  for (let b = 0; b < 6; b++) w.region.groupCommit(() => w.batch());
  t.equal(w.syncs.length - from, 6, '6 batches, 6 msyncs');
  t.same(orderViolations(w, from), []);
  // Two batches inside one group (no msync between them): the second batch's first commit syncs first.
  const mid = w.syncs.length;
  w.region.groupCommit(() => {
    w.batch();
    w.batch();
  });
  t.ok(w.syncs.length - mid >= 2, `${w.syncs.length - mid} msyncs for two batches in one group: the pipeline synced before advancing`);
  t.same(orderViolations(w, from), []);
  // completeAll (before a release, at close): everything applied, flags durable.
  w.store.completeAll();
  for (let q = 1; q <= w.seq; q++) t.ok(w.flagAt(w.disk, q) || q <= w.seq - GEOMETRY.logRecords!, `seq ${q} applied on the disk`);
  t.same(orderViolations(w, from), []);
});

t.test('a torn msync with the applied word ahead of the images: recovery replays the records behind the word', async (t) => {
  const w = world(t);
  const answered: number[] = [];
  for (let b = 0; b < 2; b++) answered.push(...w.region.groupCommit(() => w.batch())); // answered after their msync
  w.region.groupCommit(() => w.batch()); // its msync carries batch 2's images and the word that covers batch 2
  const last = w.syncs.at(-1)!;
  const wordOff = HEADER_BYTES + w.store.conn.creditOffset(w.clientId);
  const page = Math.floor(wordOff / PAGE) * PAGE;
  // The crash kept only the connection table's page of that msync.
  const torn = last.before.slice();
  torn.set(last.after.subarray(page, page + PAGE), page);
  const word = Number(new DataView(torn.buffer).getBigUint64(wordOff, true));
  t.ok(word >= answered.at(-1)!, `the torn image's applied word (${word}) covers every answered request`);
  const missing = answered.filter((s) => !w.imageAt(torn, s));
  t.ok(missing.length > 0, `images of seqs ${missing.join(', ')} are not on the disk (the state the rule exists for)`);
  for (const s of answered) t.ok(w.recordAt(torn, s), `record of seq ${s} on the disk`);
  const r2 = PmemRegion.openImage(torn);
  const s2 = RecoveryStore.open(r2);
  const report = s2.recover();
  t.ok((report.rows['replay-behind-word'] ?? 0) > 0, `row replay-behind-word taken ${report.rows['replay-behind-word'] ?? 0} times`);
  for (const s of answered) t.same(s2.appView.load(IMAGE_BASE + s * 8, 8), u64(1000 + s), `seq ${s}'s effect recovered`);
  r2.close({ writeBack: false });
  t.equal(RECORD_HEADER_BYTES, 48);
});

t.test('batches over logRecords / 2: a slot still in the pipeline is reused only after completeAll (in order, nothing lost)', async (t) => {
  const w = world(t);
  const from = w.syncs.length;
  const big = 12; // of 16 log records: the second batch reuses slots of the first, whose images are not durable yet
  for (let b = 0; b < 4; b++) w.region.groupCommit(() => w.batch(big));
  t.same(orderViolations(w, from), []);
  t.ok(w.syncs.length - from > 4, `${w.syncs.length - from} msyncs for 4 batches: the pipeline was completed before a reuse`);
  w.store.completeAll();
  const r2 = PmemRegion.openImage(w.disk);
  const s2 = RecoveryStore.open(r2);
  s2.recover();
  for (let q = 1; q <= w.seq; q++) t.same(s2.appView.load(IMAGE_BASE + q * 8, 8), u64(1000 + q), `seq ${q}'s effect on the disk`);
  r2.close({ writeBack: false });
});

t.test('a batch of two parts (strict group commit of two connections): a slot reused after the first part settled does not drain its applied word before its records are synced', async (t) => {
  const w = world(t);
  // Wrap the log with the first client's records, flagged by the pipeline (their words persisted and synced first).
  for (let b = 0; b < 6; b++) w.region.groupCommit(() => w.batch());
  const other = w.store.register().clientId;
  const wordOff = HEADER_BYTES + w.store.conn.creditOffset(w.clientId);
  const from = w.syncs.length;
  let settledSeq = 0;
  w.region.groupCommit(() => {
    w.store.batch(() => {
      // Part 1: the first client's request, settled (its applied word set, its record drained, not synced).
      settledSeq = w.seq + 1;
      w.batch(1);
      w.store.settle();
      // Part 2: the other client's request takes the slot of one of the first client's old records.
      w.store.commit(other, 1, { images: [{ offset: IMAGE_BASE + 4000, bytes: u64(7) }], result: u64(1) });
    });
  });
  const violations: string[] = [];
  for (const [i, s] of w.syncs.entries()) {
    if (i < from) continue;
    const word = (img: Uint8Array): number => Number(new DataView(img.buffer, img.byteOffset).getBigUint64(wordOff, true));
    // A torn msync may keep any subset of its pages: a word that becomes durable in the msync that
    // carries its record could be on the disk without it, and the table would call a lost request applied.
    if (word(s.after) >= settledSeq && word(s.before) < settledSeq && !w.recordAt(s.before, settledSeq)) violations.push(`msync ${i}: the applied word ${word(s.after)} became durable with (or before) the record of seq ${settledSeq}`);
  }
  t.same(violations, [], 'no applied word durable before the records it covers');
  t.same(orderViolations(w, from), []);
  // Nothing lost: once everything is complete, the settled request's record, image and word are on the disk.
  w.store.completeAll();
  t.ok(w.recordAt(w.disk, settledSeq) && w.imageAt(w.disk, settledSeq), `seq ${settledSeq} durable after completeAll`);
});

for (const lag of [false, true]) t.test(`overlapped group commit${lag ? ' (a log of 64 records: a batch behind a queued one skips its step)' : ''}: the next batch runs while the previous batch's msync does, and nothing it writes reaches the file before that msync called back`, async (t) => {
  // What a machine crash can keep: the disk, plus any subset of the pages the file holds beyond it.
  // At every msync call (when the region has just written its lines to the file) and after every
  // batch, no image may be in the file while its record is not on the disk, no flag while its image is not.
  const hazards: string[] = [];
  let w: ReturnType<typeof world> | undefined;
  const check = (file: Uint8Array): void => {
    if (w === undefined) return; // (the store's format)
    const where = `msync ${w.syncs.length + w.pending.length}`;
    for (let q = 1; q <= w.seq; q++) {
      if (w.imageAt(file, q) && !w.imageAt(w.disk, q) && !w.recordAt(w.disk, q)) hazards.push(`${where}: the image of seq ${q} is in the file, its record not on the disk`);
      if (w.flagAt(file, q) && !w.flagAt(w.disk, q) && !w.imageAt(w.disk, q)) hazards.push(`${where}: the flag of seq ${q} is in the file, its image not on the disk`);
    }
  };
  w = world(t, { async: true, atMsync: check, ...(lag ? { geometry: { ...GEOMETRY, logRecords: 64 } } : {}) });
  const acked: number[] = [];
  const commit = (): void => {
    const seqs: number[] = [];
    w.region.groupCommitAsync(() => seqs.push(...w.batch()), (err) => {
      if (err === undefined) acked.push(...seqs);
    });
  };
  const msyncsBefore = w.region.stats.msyncs;
  commit(); // batch 1: its msync starts (pending)
  t.equal(w.pending.length, 1, 'batch 1\'s msync runs');
  for (let b = 0; b < 3; b++) {
    // The next batch runs at once (its lazy step writes the previous batch's images), its msync queued.
    const before = w.region.stats.msyncs;
    commit();
    t.equal(w.region.stats.msyncs, before, `batch ${b + 2} ran without an msync on the thread (the pipeline's step is ordered after the running msync)`);
    t.equal(w.pending.length, 1, 'one async msync at a time');
    t.same(acked.length, b * PER_BATCH, 'nothing answered before its msync called back');
    w.land(); // the running msync calls back: its batch is answered, the queued one starts (writing what waited)
    t.equal(acked.length, (b + 1) * PER_BATCH, `batch ${b + 1} answered after its msync`);
  }
  // Two batches while one msync runs: the second's step depends on the first, which waits for a
  // queued msync (not yet in the file). With room in the log (a quarter of it) the step is skipped
  // (RedoLog.canLag) — the next batch's step does both — else the first is synced on the thread;
  // either way nothing is written with what it depends on.
  const beforeTwo = w.region.stats.msyncs;
  commit();
  commit();
  if (lag) t.equal(w.region.stats.msyncs, beforeTwo, 'the second batch skipped its step: no msync on the thread');
  else t.ok(w.region.stats.msyncs > beforeTwo, 'the second batch\'s step synced the queued first batch on the thread (the log too small to lag)');
  t.equal(w.store.log.lazyRecords, (lag ? 3 : 2) * PER_BATCH, `${w.store.log.lazyRecords} records in the pipeline`);
  // A third while the same msync runs, then the msyncs land one by one, a batch committed at each.
  commit();
  w.land();
  commit();
  while (w.pending.length > 0) w.land();
  commit();
  // An ordering point on the thread (a blocking sync: here a batch in a blocking group) while an async msync runs with lines
  // drained after it started: that msync's range is synced first, then the new lines are written.
  w.region.groupCommit(() => w.batch());
  t.ok(w.region.stats.msyncs - msyncsBefore >= 6, `${w.region.stats.msyncs - msyncsBefore} msyncs`);
  while (w.pending.length > 0) w.land();
  t.same(hazards, [], 'no crash between the msyncs could keep a step ahead of what it depends on');
  t.same(orderViolations(w, 0), []);
  t.equal(acked.length, 9 * PER_BATCH, 'every batch answered');
  w.store.completeAll();
  const r2 = PmemRegion.openImage(w.disk);
  const s2 = RecoveryStore.open(r2);
  s2.recover();
  for (let q = 1; q <= w.seq; q++) t.same(s2.appView.load(IMAGE_BASE + q * 8, 8), u64(1000 + q), `seq ${q}'s effect on the disk`);
  r2.close({ writeBack: false });
});
