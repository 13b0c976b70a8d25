// The journal of a strict file region (pmem/journal.ts, native/mmap.cc JournalAppend): every sync
// appends the lines it makes durable to `<file>.journal` and syncs only the journal; the lines go
// to the PM file unsynced. A machine crash may lose any of those unsynced writes: simulated here by
// putting back, after a crash's close, the PM file's bytes as they were at its last checkpoint (no
// page written since reached the disk). Opening the file must then replay every synced batch.
import t from 'tap';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HEADER_BYTES, journalPath, PmemRegion, readJournal } from '../../pmem/index.js';

const SIZE = 1 << 20;

function dir(t: Tap.Test): string {
  const d = mkdtempSync(join(tmpdir(), 'pmrpc-journal-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

const line = (v: number): Uint8Array => new Uint8Array(64).fill(v);
/** Line k of a test: spread over the region (a batch's lines in several runs, as a server's are). */
const at = (k: number): number => ((k * 7919) % (SIZE / 64)) * 64;

/** `n` batches, batch b storing and persisting lines 3b..3b+2 (value = index + 1), each synced: inside a group (one journal record) or as an async group. */
async function batches(r: PmemRegion, n: number, from = 0): Promise<void> {
  for (let b = from; b < from + n; b++) {
    const fn = (): void => {
      for (let k = 3 * b; k < 3 * b + 3; k++) {
        r.store(at(k), line((k % 250) + 1));
        r.persist(at(k), 64);
      }
    };
    if (b % 2 === 0) r.groupCommit(fn);
    else await new Promise<void>((resolve, reject) => r.groupCommitAsync(fn, (err) => (err === undefined ? resolve() : reject(err))));
  }
}

function holds(file: Uint8Array, k: number): boolean {
  const off = HEADER_BYTES + at(k);
  for (let i = 0; i < 64; i++) if (file[off + i] !== (k % 250) + 1) return false;
  return true;
}

const uuidOf = (path: string): Uint8Array => readFileSync(path).subarray(24, 40);

t.test('a machine crash that loses every unsynced write to the PM file: opening it replays every synced batch from the journal', async (t) => {
  const d = dir(t);
  const path = join(d, 'r.pm');
  PmemRegion.create(path, SIZE, { strict: true }).close();
  const checkpoint = readFileSync(path); // an orderly close checkpoints: the file as the disk holds it
  const r = PmemRegion.open(path, { strict: true });
  await batches(r, 12);
  t.ok(existsSync(journalPath(path)), 'the journal is beside the file');
  const { records } = readJournal(path, HEADER_BYTES + SIZE, uuidOf(path));
  t.equal(records.length, 12, 'one record a sync');
  r.close({ writeBack: false }); // a crash
  writeFileSync(path, checkpoint); // ...of the machine: none of the writes since the checkpoint reached the disk
  const reopened = PmemRegion.open(path, { strict: true });
  reopened.close();
  const file = readFileSync(path);
  const missing: number[] = [];
  for (let k = 0; k < 36; k++) if (!holds(file, k)) missing.push(k);
  t.same(missing, [], 'every synced line is back in the file');
  // The teeth: without the journal the same crash loses them.
  writeFileSync(path, checkpoint);
  rmSync(journalPath(path));
  PmemRegion.open(path, { strict: true }).close();
  const bare = readFileSync(path);
  t.ok([...Array(36).keys()].every((k) => !holds(bare, k)), 'without the journal none of them is in the file');
});

t.test('a torn last record is not replayed; the records before it are', async (t) => {
  const d = dir(t);
  const path = join(d, 'r.pm');
  PmemRegion.create(path, SIZE, { strict: true }).close();
  const checkpoint = readFileSync(path);
  const r = PmemRegion.open(path, { strict: true });
  await batches(r, 5);
  r.close({ writeBack: false });
  const { records } = readJournal(path, HEADER_BYTES + SIZE, uuidOf(path));
  t.equal(records.length, 5);
  // One byte of the last record's lines differs on the disk: its append was torn (never acknowledged).
  const journal = readFileSync(journalPath(path));
  const last = records[4]!;
  const torn = last.at + 64 + 16 * last.runs.length + 5;
  journal[torn] = journal[torn]! ^ 0xff;
  writeFileSync(journalPath(path), journal);
  writeFileSync(path, checkpoint);
  t.equal(readJournal(path, HEADER_BYTES + SIZE, uuidOf(path)).records.length, 4, 'the journal ends before the torn record');
  PmemRegion.open(path, { strict: true }).close();
  const file = readFileSync(path);
  t.ok([...Array(12).keys()].every((k) => holds(file, k)), 'the four batches before it are replayed');
  t.ok([12, 13, 14].every((k) => !holds(file, k)), 'the torn one is not');
});

t.test('a damaged record before an intact one, or a damaged header, is PMRPC_ERR_JOURNAL_CORRUPT: the open refuses, the file untouched', async (t) => {
  const d = dir(t);
  const path = join(d, 'r.pm');
  PmemRegion.create(path, SIZE, { strict: true }).close();
  const checkpoint = readFileSync(path);
  const r = PmemRegion.open(path, { strict: true });
  await batches(r, 5);
  r.close({ writeBack: false });
  const pristine = readFileSync(journalPath(path));
  const { records } = readJournal(path, HEADER_BYTES + SIZE, uuidOf(path));
  t.equal(records.length, 5);
  const mid = records[2]!;
  const cases: Array<[string, (j: Buffer) => void]> = [
    ['a line byte of record 3 of 5', (j) => (j[mid.at + 64 + 16 * mid.runs.length + 5] ^= 0xff)],
    ['the magic of record 3 of 5', (j) => (j[mid.at] ^= 0xff)],
    ['the header checksum', (j) => (j[40] ^= 0xff)],
  ];
  for (const [what, damage] of cases) {
    const journal = Buffer.from(pristine);
    damage(journal);
    writeFileSync(journalPath(path), journal);
    writeFileSync(path, checkpoint);
    t.throws(() => PmemRegion.open(path, { strict: true }), { code: 'PMRPC_ERR_JOURNAL_CORRUPT' }, `${what}: refused`);
    t.throws(() => readJournal(path, HEADER_BYTES + SIZE, uuidOf(path)), { code: 'PMRPC_ERR_JOURNAL_CORRUPT' }, `${what}: readJournal (inspect) says the same`);
    t.ok(readFileSync(path).equals(checkpoint), `${what}: the PM file is untouched`);
    t.ok(readFileSync(journalPath(path)).equals(journal), `${what}: the journal is untouched`);
  }
  // The same damage to the last record is a torn tail: the four before it replay.
  const journal = Buffer.from(pristine);
  const last = records[4]!;
  journal[last.at] ^= 0xff;
  writeFileSync(journalPath(path), journal);
  writeFileSync(path, checkpoint);
  PmemRegion.open(path, { strict: true }).close();
  t.ok([...Array(12).keys()].every((k) => holds(readFileSync(path), k)), 'a damaged last record: the records before it replay, no error');
});

t.test('records survive checkpoints across wraps of a small journal; a region without a journal replays and removes it, and no old record comes back', async (t) => {
  const d = dir(t);
  const path = join(d, 'r.pm');
  const opts = { strict: true, journalBytes: 4 * 4096 }; // a header and three records: a checkpoint every three syncs
  PmemRegion.create(path, SIZE, opts).close();
  const r = PmemRegion.open(path, opts);
  await batches(r, 20);
  const { epoch, records } = readJournal(path, HEADER_BYTES + SIZE, uuidOf(path));
  t.ok(epoch > 2, `checkpoints moved the epoch on (${epoch})`);
  t.ok(records.length >= 1 && records.length <= 3, 'the current epoch holds the records since the last checkpoint');
  r.close({ writeBack: false });
  // The machine crash: the lines of the current epoch's records never reached the PM file (the
  // checkpoint before them synced everything older).
  const file = readFileSync(path);
  for (const rec of records) for (const run of rec.runs) file.fill(0, run.offset, run.offset + run.bytes.length);
  writeFileSync(path, file);
  // Opened without a journal (journalBytes 0): the journal is replayed all the same, then removed.
  const plain = PmemRegion.open(path, { strict: true, journalBytes: 0 });
  t.notOk(existsSync(journalPath(path)), 'a region without a journal removes the one it replayed');
  const after = readFileSync(path);
  t.ok([...Array(60).keys()].every((k) => holds(after, k)), 'every line of the twenty batches is in the file');
  // A line written later, without a journal, is never overwritten by an old record.
  plain.store(at(0), line(251));
  plain.persist(at(0), 64);
  plain.close({ writeBack: false });
  PmemRegion.open(path, opts).close();
  t.equal(readFileSync(path)[HEADER_BYTES + at(0)], 251, 'the newer line stays');
});

t.test('a journal of another file (another uuid) is never replayed into this one', async (t) => {
  const d = dir(t);
  const a = join(d, 'a.pm');
  const b = join(d, 'b.pm');
  PmemRegion.create(a, SIZE, { strict: true }).close();
  const ra = PmemRegion.open(a, { strict: true });
  await batches(ra, 4);
  ra.close({ writeBack: false });
  PmemRegion.create(b, SIZE, { strict: true }).close();
  const before = readFileSync(b);
  copyFileSync(journalPath(a), journalPath(b));
  t.equal(readJournal(b, HEADER_BYTES + SIZE, uuidOf(b)).records.length, 0, 'none of its records is b\'s');
  PmemRegion.open(b, { strict: true }).close();
  t.same(readFileSync(b).subarray(HEADER_BYTES), before.subarray(HEADER_BYTES), 'b is unchanged');
});

t.test('a batch larger than the journal goes to the PM file through a checkpoint; the records after it replay over it', async (t) => {
  const d = dir(t);
  const path = join(d, 'r.pm');
  const opts = { strict: true, journalBytes: 8192 }; // a header and one 4 KiB record
  PmemRegion.create(path, SIZE, opts).close();
  const r = PmemRegion.open(path, opts);
  const epoch0 = readJournal(path, HEADER_BYTES + SIZE, uuidOf(path)).epoch;
  r.groupCommit(() => {
    for (let k = 0; k < 100; k++) {
      r.store(at(k), line(7));
      r.persist(at(k), 64);
    }
  });
  const j = readJournal(path, HEADER_BYTES + SIZE, uuidOf(path));
  t.same([j.epoch > epoch0, j.records.length], [true, 0], 'no record: a checkpoint synced the 100 lines into the file');
  await batches(r, 1, 40); // lines 120..122, one record
  t.equal(readJournal(path, HEADER_BYTES + SIZE, uuidOf(path)).records.length, 1);
  r.close({ writeBack: false });
  const file = readFileSync(path);
  for (const rec of readJournal(path, HEADER_BYTES + SIZE, uuidOf(path)).records) for (const run of rec.runs) file.fill(0, run.offset, run.offset + run.bytes.length);
  writeFileSync(path, file);
  PmemRegion.open(path, opts).close();
  const after = readFileSync(path);
  const big = [...Array(100).keys()].filter((k) => ![120, 121, 122].includes(k));
  t.ok(big.every((k) => after[HEADER_BYTES + at(k)] === 7), 'the large batch\'s lines are in the file');
  t.ok([120, 121, 122].every((k) => holds(after, k)), 'and the record after it replayed');
});

t.test('a format that replaces a strict file removes the old file\'s journal; the new file serves strict', async (t) => {
  const d = dir(t);
  const path = join(d, 'r.pm');
  PmemRegion.format(path, SIZE, () => {});
  const r = PmemRegion.open(path, { strict: true });
  await batches(r, 3);
  r.close({ writeBack: false }); // a crash: the journal holds synced records of this file
  t.ok(existsSync(journalPath(path)), 'the crashed file has its journal');
  PmemRegion.format(path, SIZE, () => {}, { replace: true });
  t.notOk(existsSync(journalPath(path)), 'the replaced file\'s journal is gone with it');
  const fresh = PmemRegion.open(path, { strict: true });
  await batches(fresh, 2);
  fresh.close();
  const file = readFileSync(path);
  t.ok([0, 1, 2, 3, 4, 5].every((k) => holds(file, k)), 'the new file serves strict (its own journal)');
});
