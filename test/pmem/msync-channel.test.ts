// The addon's msync channel (pmem/native.ts MsyncChannel, native/mmap.cc): the async msync of a
// strict file region as a job — the lines staged for it written to the file, then msync — off the
// JS thread (pmem/region.ts #startAsync; the region runs one at a time). What must hold: jobs run in
// the order submitted (a job's writes never land before an earlier job's), join() returns only
// once every submitted job is in the file, a failed job fails every later one, and a line drained
// after a job was staged never ends up older in the file than what the job wrote (a sync on the
// thread, a close and a crash image join the job first).
import t from 'tap';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HEADER_BYTES, PmemRegion } from '../../pmem/index.js';
import { mapFile, MsyncChannel, unmapFile } from '../../pmem/native.js';

const BIG = 8 << 20;
/** The region of the crash test: its group writes one line every other page, 2048 of them. */
const REGION = 16 << 20;

function mapped(t: Tap.Test, bytes: number): { path: string; buffer: ArrayBuffer; fd: number } {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-channel-'));
  const path = join(dir, 'f');
  const buffer = mapFile(path, bytes, { create: true });
  const fd = openSync(path, 'r+');
  t.teardown(() => {
    closeSync(fd);
    unmapFile(buffer);
    rmSync(dir, { recursive: true, force: true });
  });
  return { path, buffer, fd };
}

/** A job of one write: `staged` (filled with `byte`) to file offset `at`. */
function job(byte: number, length: number, at: number): { staged: ArrayBuffer; writes: Float64Array } {
  return { staged: new Uint8Array(length).fill(byte).buffer, writes: new Float64Array([at, 0, length]) };
}

const waitFor = async (cond: () => boolean): Promise<void> => {
  for (let i = 0; i < 1000 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
};

t.test('jobs run in submission order: a small job submitted after a large one writes after it', async (t) => {
  const { path, buffer, fd } = mapped(t, BIG);
  const ch = new MsyncChannel();
  const done: string[] = [];
  // The first job writes the whole file (slow); the second, one page of it (fast on its own).
  const a = job(0xaa, BIG, 0);
  const b = job(0xbb, 4096, 4096);
  ch.submit(buffer, 0, BIG, fd, a.staged, a.writes, (err) => done.push(`a ${String(err)}`));
  ch.submit(buffer, 4096, 4096, fd, b.staged, b.writes, (err) => done.push(`b ${String(err)}`));
  t.equal(ch.pending, 2);
  await waitFor(() => done.length === 2);
  t.same(done, ['a null', 'b null'], 'call backs in submission order, without error');
  t.equal(ch.pending, 0);
  const file = readFileSync(path);
  t.equal(file[4096], 0xbb, 'the second job\'s page holds its bytes: it was written after the first job');
  t.equal(file[0], 0xaa);
  t.equal(file[BIG - 1], 0xaa);
});

t.test('join() returns once every submitted job is in the file (before its call back runs)', async (t) => {
  const { path, buffer, fd } = mapped(t, BIG);
  const ch = new MsyncChannel();
  let called = 0;
  const a = job(0x11, BIG, 0);
  const b = job(0x22, 64, 128);
  ch.submit(buffer, 0, BIG, fd, a.staged, a.writes, () => called++);
  ch.submit(buffer, 0, 4096, fd, b.staged, b.writes, () => called++);
  ch.join();
  const file = readFileSync(path);
  t.equal(called, 0, 'the call backs have not run (they come on the event loop)');
  t.equal(file[0], 0x11);
  t.equal(file[128], 0x22);
  t.equal(file[BIG - 1], 0x11);
  await waitFor(() => called === 2);
  t.equal(called, 2, 'both call backs still run');
  ch.join(); // nothing left: returns at once
});

t.test('a failed job fails the jobs after it with its error, writing nothing; join() throws it', async (t) => {
  const { path, buffer, fd } = mapped(t, 1 << 16);
  const ch = new MsyncChannel();
  const errors: unknown[] = [];
  const bad = job(0x33, 64, 0);
  const after = job(0x44, 64, 4096);
  ch.submit(buffer, 0, 4096, -1, bad.staged, bad.writes, (err) => errors.push(err)); // no descriptor: EBADF
  ch.submit(buffer, 4096, 4096, fd, after.staged, after.writes, (err) => errors.push(err));
  t.throws(() => ch.join(), { code: 'PMRPC_ERR_IO', errno: 'EBADF', syscall: 'write' }, 'join reports the first failure');
  await waitFor(() => errors.length === 2);
  for (const e of errors) t.match(e, { code: 'PMRPC_ERR_IO', errno: 'EBADF', syscall: 'write' });
  t.equal(readFileSync(path)[4096], 0, 'the job after the failed one wrote nothing');
});

t.test('bad ranges are refused at submit, before any job is queued', async (t) => {
  const { buffer, fd } = mapped(t, 1 << 16);
  const ch = new MsyncChannel();
  const j = job(1, 64, 0);
  t.throws(() => ch.submit(buffer, 0, 1 << 20, fd, j.staged, j.writes, () => {}), RangeError, 'an msync range outside the mapping');
  t.throws(() => ch.submit(buffer, 0, 4096, fd, j.staged, new Float64Array([0, 32, 64]), () => {}), { code: 'PMRPC_ERR_IO', errno: 'EINVAL' }, 'a write past the staged bytes');
  t.throws(() => ch.submit(buffer, 0, 4096, fd, j.staged, new Float64Array([0, 0]), () => {}), { code: 'PMRPC_ERR_IO', errno: 'EINVAL' }, 'writes not in triples');
  t.equal(ch.pending, 0);
});

// The crash test of the staging: a strict region's async msync copies the lines drained for it and
// its job writes them later, off the thread. A line drained again afterwards and synced on the thread
// must end up in the file with the NEWER bytes: the sync joins the job first. Without the join the
// thread's write lands at once and the job's older copy over it — after a crash, an acknowledged
// store is gone.
t.test('a line drained after an async msync was staged and synced on the thread keeps its newer bytes after a crash', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-channel-region-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'r.pm');
  const size = REGION;
  // The group's lines one every other page: its job writes them in one pwrite each, the last one
  // last — well after the thread's own write below, unless the thread waits for the job.
  const STRIDE = 8192;
  const lines = size / STRIDE;
  const last = (lines - 1) * STRIDE;
  for (let round = 0; round < 6; round++) {
    const r = PmemRegion.create(path, size, { strict: true }); // the addon's msync: its channel
    let synced: unknown = 'not yet';
    r.groupCommitAsync(() => {
      for (let i = 0; i < lines; i++) {
        r.store(i * STRIDE, new Uint8Array(64).fill(1));
        r.persist(i * STRIDE, 64);
      }
    }, (err) => (synced = err));
    t.ok(r.syncing, 'the group\'s job runs off the thread');
    // Its last line again, outside a group: drained and synced on the thread (an acknowledgement follows).
    r.store(last, new Uint8Array(64).fill(2));
    r.persist(last, 64);
    t.ok(r.isSynced(r.syncMark()), 'synced on the thread');
    r.close({ writeBack: false }); // a crash right after
    const file = readFileSync(path);
    t.equal(file[HEADER_BYTES + last], 2, `round ${round}: the line holds the newer bytes`);
    let written = 0;
    for (let i = 0; i < lines - 1; i++) if (file[HEADER_BYTES + i * STRIDE] === 1) written++;
    t.equal(written, lines - 1, 'and the group\'s other lines are in the file (its job was joined)');
    await waitFor(() => synced !== 'not yet');
    t.equal(synced, undefined, 'the group\'s call back: synced (the thread\'s sync covered it, before the crash)');
    rmSync(path);
  }
});
