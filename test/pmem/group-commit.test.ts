// strict group commit (docs/recovery.md, "Group commit"): drains inside groupCommit() share one
// msync, and no acknowledgement (a 'completion' crash point) leaves before what was drained is
// synced. The msync is the injected shim under the addon: it records what each call made durable
// (the "disk": what a machine crash keeps), and can fail.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HEADER_BYTES, PmemRegion, type MsyncFn } from '../../pmem/index.js';

function shim(): { msync: MsyncFn; disk: Map<number, number>; calls: Array<[number, number]>; failAfter: { n: number } } {
  const disk = new Map<number, number>(); // file offset -> byte made durable
  const calls: Array<[number, number]> = [];
  const failAfter = { n: Infinity };
  const msync: MsyncFn = (mapping, off, len) => {
    if (calls.length >= failAfter.n) throw Object.assign(new Error('msync: Input/output error'), { code: 'EIO' });
    calls.push([off, len]);
    const b = new Uint8Array(mapping);
    for (let i = off; i < off + len; i++) disk.set(i, b[i]!);
  };
  return { msync, disk, calls, failAfter };
}

function fileRegion(t: Tap.Test, s: ReturnType<typeof shim>): PmemRegion {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-group-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const r = PmemRegion.create(join(dir, 'r.pm'), 4096, { strict: true, msync: s.msync });
  t.teardown(() => r.close({ writeBack: false }));
  return r;
}

const onDisk = (s: ReturnType<typeof shim>, offset: number, bytes: Uint8Array): boolean => bytes.every((v, i) => s.disk.get(HEADER_BYTES + offset + i) === v);

t.test('drains inside a group share one msync; outside a group each drain syncs', async (t) => {
  const s = shim();
  const r = fileRegion(t, s);
  r.groupCommit(() => {
    for (let i = 0; i < 8; i++) {
      r.store(i * 256, new Uint8Array(64).fill(i + 1));
      r.persist(i * 256, 64);
    }
    t.equal(s.calls.length, 0, 'no msync inside the group');
    t.ok(r.unsyncedBytes > 0, 'the drained ranges wait');
  });
  t.equal(s.calls.length, 1, 'one msync at the end of the group');
  for (let i = 0; i < 8; i++) t.ok(onDisk(s, i * 256, new Uint8Array(64).fill(i + 1)), `range ${i} synced`);
  r.store(3000, new Uint8Array(8).fill(9));
  r.persist(3000, 8);
  t.equal(s.calls.length, 2, 'outside a group a drain syncs at once');
  t.equal(r.stats.msyncs, 2);
});

t.test('an acknowledgement leaves only after what was drained is synced (the ack gate), and the check has teeth', async (t) => {
  for (const gate of [true, false]) {
    const s = shim();
    const r = fileRegion(t, s);
    const violations: string[] = [];
    const acked: Array<{ offset: number; bytes: Uint8Array }> = [];
    // The acknowledgement "leaves" at the completion crash point: every acked request's bytes must be on the disk then.
    r.setCrashPointHook((e) => {
      if (e.kind !== 'completion') return;
      for (const a of acked) if (!onDisk(s, a.offset, a.bytes)) violations.push(`request at ${a.offset} acknowledged before its bytes were synced`);
    });
    r.groupCommit(() => {
      for (let i = 0; i < 4; i++) {
        const bytes = new Uint8Array(64).fill(0x10 + i);
        r.store(i * 512, bytes);
        r.persist(i * 512, 64);
        acked.push({ offset: i * 512, bytes });
        // The fault: acknowledge without the gate (as if the sync were skipped or came after the ack).
        if (gate) r.crashPoint('completion', { request: i });
        else for (const a of acked) if (!onDisk(s, a.offset, a.bytes)) violations.push(`request at ${a.offset} acknowledged before its bytes were synced`);
      }
    });
    if (gate) {
      t.same(violations, [], 'with the gate: every acknowledged request was on the disk when its ack left');
      t.equal(s.calls.length, 4, 'one msync per acknowledgement that found bytes waiting');
    } else {
      t.ok(violations.length > 0, `without the gate the same check fails (${violations.length} violations)`);
    }
  }
});

t.test('a failed msync: nothing is acknowledged, a coded error, and the region refuses from then on', async (t) => {
  const s = shim();
  const r = fileRegion(t, s);
  const acks: number[] = [];
  r.setCrashPointHook((e) => {
    if (e.kind === 'completion') acks.push(e.index);
  });
  r.store(0, new Uint8Array(64).fill(1));
  r.persist(0, 64);
  r.crashPoint('completion');
  t.equal(acks.length, 1, 'the first request is acknowledged');
  s.failAfter.n = s.calls.length;
  t.throws(() =>
    r.groupCommit(() => {
      r.store(64, new Uint8Array(64).fill(2));
      r.persist(64, 64);
      r.crashPoint('completion');
    }), { code: 'PMRPC_ERR_SYNC_FAILED' }, 'the acknowledgement waiting on the failed msync throws a coded error');
  t.equal(acks.length, 1, 'nothing acknowledged after the failure');
  t.throws(() => r.crashPoint('completion'), { code: 'PMRPC_ERR_SYNC_FAILED' }, 'no later acknowledgement either');
  t.throws(() => {
    r.store(128, new Uint8Array(8));
    r.persist(128, 8);
  }, { code: 'PMRPC_ERR_SYNC_FAILED' }, 'later persists are refused');
  t.throws(() => r.sync(), { code: 'PMRPC_ERR_SYNC_FAILED' });
  t.notOk(onDisk(s, 64, new Uint8Array(64).fill(2)), 'the second request never reached the disk');
});

t.test('msync option is checked', async (t) => {
  t.throws(() => PmemRegion.createInMemory(4096, { msync: 3 as unknown as MsyncFn }), { name: 'TypeError' });
});

t.test('msyncInline: a group commit msyncs on the thread with the addon\'s msync — its callback runs inside the call, with its mark synced; the option is checked', async (t) => {
  t.throws(() => PmemRegion.createInMemory(4096, { msyncInline: 1 as unknown as boolean }), { name: 'TypeError' });
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-group-inline-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const msyncInline of [true, false]) {
    const r = PmemRegion.create(join(dir, `r-${String(msyncInline)}.pm`), 1 << 16, { strict: true, msyncInline }); // the addon's msync
    const order: string[] = [];
    let mark = -1;
    const msyncs = r.stats.msyncs;
    r.groupCommitAsync(() => {
      r.store(0, new Uint8Array(64).fill(7));
      r.persist(0, 64);
      mark = r.syncMark();
    }, (err) => order.push(`then ${r.isSynced(mark)} ${String(err)}`));
    if (msyncInline) {
      t.same(order, ['then true undefined'], 'inline: the callback ran inside the call, its mark synced');
      t.equal(r.stats.msyncs, msyncs + 1, 'inline: one msync, on the thread');
      t.notOk(r.syncing, 'inline: nothing runs off the thread');
    } else {
      t.same(order, [], 'pool (the default): the callback waits for the msync off the thread');
      t.ok(r.syncing);
      for (let i = 0; i < 500 && order.length === 0; i++) await new Promise((res) => setTimeout(res, 10));
      t.same(order, ['then true undefined']);
    }
    r.close();
  }
});

t.test('syncAsync (the addon\'s msync on a pool thread): the mark is synced only once it calls back; a second batch queues behind it; a sync() meanwhile covers both; the ack gate waits for them', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-group-async-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const r = PmemRegion.create(join(dir, 'r.pm'), 1 << 16, { strict: true }); // default msync: the addon's, and its async form
  t.teardown(() => r.close());
  const order: string[] = [];
  let error: unknown = 'not called';
  r.groupCommitAsync(() => {
    r.store(0, new Uint8Array(64).fill(7));
    r.persist(0, 64);
  }, (err) => {
    order.push(`first ${r.isSynced(mark)}`);
    error = err;
  });
  const mark = r.syncMark();
  t.same(order, [], 'the callback does not run inside the call');
  t.ok(r.syncing, 'an msync runs off the thread');
  t.notOk(r.isSynced(mark), 'its mark is not synced yet');
  t.ok(r.unsyncedBytes > 0, 'its range still counts as waiting');
  // A second batch while it runs: queued behind it (one msync at a time, none on the thread).
  const msyncs = r.stats.msyncs;
  let mark2 = -1;
  r.groupCommitAsync(() => {
    r.store(8192, new Uint8Array(64).fill(8));
    r.persist(8192, 64);
  }, (err) => order.push(`second ${r.isSynced(mark2)} ${String(err)}`));
  mark2 = r.syncMark();
  t.same(order, [], 'the second batch waits: its callback did not run at once');
  t.equal(r.stats.msyncs, msyncs, 'and it did not msync on the thread');
  t.notOk(r.isSynced(mark2), 'its mark is not synced');
  for (let i = 0; i < 500 && order.length < 2; i++) await new Promise((res) => setTimeout(res, 10));
  t.same(order, ['first true', 'second true undefined'], 'the first callback, then the second, each with its mark synced');
  t.equal(r.stats.msyncs, msyncs + 1, 'the second batch had one msync of its own, started when the first called back');
  t.equal(error, undefined, 'without an error');
  t.notOk(r.syncing);
  t.equal(r.unsyncedBytes, 0);
  // A sync() on the thread (an ordering point) while one runs and one is queued covers both; the callbacks still run later, in order.
  order.length = 0;
  r.groupCommitAsync(() => {
    r.store(1024, new Uint8Array(64).fill(1));
    r.persist(1024, 64);
  }, () => order.push('a'));
  r.groupCommitAsync(() => {
    r.store(2048, new Uint8Array(64).fill(2));
    r.persist(2048, 64);
  }, () => order.push('b'));
  r.sync();
  t.ok(r.isSynced(r.syncMark()), 'sync() covered the running and the queued batch');
  t.same(order, [], 'their callbacks wait for the running msync');
  for (let i = 0; i < 500 && order.length < 2; i++) await new Promise((res) => setTimeout(res, 10));
  t.same(order, ['a', 'b']);
  // The ack gate: a completion while an async msync runs syncs first (nothing is acknowledged ahead of it).
  let third = 0;
  r.groupCommitAsync(() => {
    r.store(4096, new Uint8Array(64).fill(9));
    r.persist(4096, 64);
  }, () => third++);
  const m3 = r.syncMark();
  t.notOk(r.isSynced(m3));
  r.crashPoint('completion');
  t.ok(r.isSynced(m3), 'the gate synced the running batch before the completion');
  for (let i = 0; i < 500 && third === 0; i++) await new Promise((res) => setTimeout(res, 10));
  t.equal(third, 1);
});

t.test('syncAsync: a completion raised from a callback skips the sync of a later queued batch only while nothing was drained since', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-group-gate-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const r = PmemRegion.create(join(dir, 'r.pm'), 1 << 16, { strict: true });
  t.teardown(() => r.close());
  const seen: string[] = [];
  r.groupCommitAsync(() => {
    r.store(0, new Uint8Array(64).fill(1));
    r.persist(0, 64);
  }, () => {
    // The first batch's acknowledgement: the second batch (queued, now running) is not synced, and need not be.
    const before = r.stats.msyncs;
    r.crashPoint('completion');
    seen.push(`first ack: ${r.stats.msyncs - before} msync on the thread, second synced ${r.isSynced(m2)}`);
    // A drain now (a nested pass's, in its group) ends the exemption: the next acknowledgement syncs everything first.
    r.groupCommit(() => {
      r.store(16384, new Uint8Array(64).fill(4));
      r.persist(16384, 64);
      const before = r.isSynced(r.syncMark());
      r.crashPoint('completion');
      seen.push(`after a drain: synced before the ack ${before}, after ${r.isSynced(r.syncMark())}, second synced ${r.isSynced(m2)}`);
    });
  });
  r.groupCommitAsync(() => {
    r.store(8192, new Uint8Array(64).fill(2));
    r.persist(8192, 64);
  }, () => seen.push('second'));
  const m2 = r.syncMark();
  for (let i = 0; i < 500 && seen.length < 3; i++) await new Promise((res) => setTimeout(res, 10));
  t.same(seen, ['first ack: 0 msync on the thread, second synced false', 'after a drain: synced before the ack false, after true, second synced true', 'second']);
});

t.test('syncAsync: a region closed (as by a crash) before the msync calls back acknowledges nothing: the callback gets PMRPC_ERR_REGION_CLOSED', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-group-async-close-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const r = PmemRegion.create(join(dir, 'r.pm'), 1 << 16, { strict: true });
  let error: unknown = 'not called';
  r.groupCommitAsync(() => {
    r.store(0, new Uint8Array(64).fill(7));
    r.persist(0, 64);
  }, (err) => {
    error = err;
  });
  t.ok(r.syncing);
  r.close({ writeBack: false });
  for (let i = 0; i < 500 && error === 'not called'; i++) await new Promise((res) => setTimeout(res, 10));
  t.equal((error as { code?: string })?.code, 'PMRPC_ERR_REGION_CLOSED');
});

t.test('whenSynced: a mark covered by the running msync goes at its call back, ahead of a later group queued behind it', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-group-when-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const r = PmemRegion.create(join(dir, 'r.pm'), 1 << 16, { strict: true });
  t.teardown(() => r.close());
  const order: string[] = [];
  r.groupCommitAsync(() => {
    r.store(0, new Uint8Array(64).fill(1));
    r.persist(0, 64);
  }, () => order.push('first'));
  const m1 = r.syncMark();
  r.groupCommitAsync(() => {
    r.store(8192, new Uint8Array(64).fill(2));
    r.persist(8192, 64);
  }, () => order.push(`queued (first's mark synced ${r.isSynced(m1)})`));
  // Registered after the queued group, for the first group's mark: released with the first.
  r.whenSynced(m1, (err) => order.push(`when m1 ${r.isSynced(m1)} ${String(err)}`));
  t.same(order, [], 'nothing synced yet: every callback waits');
  for (let i = 0; i < 500 && order.length < 3; i++) await new Promise((res) => setTimeout(res, 10));
  t.same(order, ['first', 'when m1 true undefined', 'queued (first\'s mark synced true)']);
  let now = '';
  r.whenSynced(r.syncMark(), (err) => (now = `at once ${String(err)}`));
  t.equal(now, 'at once undefined', 'a synced mark: at once');
});

t.test('syncAsync: the queued batch\'s msync starts before the call backs run — a pass a call back runs finds that batch ordered (isOrdered), and what it drains waits for the msync after', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-group-join-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const r = PmemRegion.create(join(dir, 'r.pm'), 1 << 16, { strict: true });
  t.teardown(() => r.close());
  const before = r.stats.msyncs;
  const seen: string[] = [];
  r.groupCommitAsync(() => {
    r.store(0, new Uint8Array(64).fill(1));
    r.persist(0, 64);
  }, () => seen.push('a'));
  const ma = r.syncMark();
  // Queued behind a's msync (a NIC pass's entries, say).
  r.groupCommitAsync(() => {
    r.store(8192, new Uint8Array(64).fill(2));
    r.persist(8192, 64);
  }, () => seen.push(`b ${r.isSynced(mb)}`));
  const mb = r.syncMark();
  // A pass that waits for a's msync, then commits its batch (its records) from the call back.
  let mc = -1;
  let bAtC = '';
  r.whenSynced(ma, () => {
    bAtC = `synced ${r.isSynced(mb)}, ordered ${r.isOrdered(mb)}`;
    r.groupCommitAsync(() => {
      r.store(16384, new Uint8Array(64).fill(3));
      r.persist(16384, 64);
    }, () => seen.push(`c ${r.isSynced(mc)}`));
    mc = r.syncMark();
  });
  for (let i = 0; i < 500 && seen.length < 3; i++) await new Promise((res) => setTimeout(res, 10));
  t.same(seen, ['a', 'b true', 'c true'], 'each call back after its mark is synced, in order');
  // b's msync runs when a's call backs do: a redo-log step there that depends on b (a pass that
  // waited for a) writes after it without syncing b on the thread (it used to, b's msync starting
  // only after the call backs); what c drains waits for the msync after b's.
  t.equal(bAtC, 'synced false, ordered true', 'at a\'s call back, b is in a running msync');
  t.equal(r.stats.msyncs - before, 3, 'three msyncs: a\'s, b\'s, c\'s');
  t.equal(r.unsyncedBytes, 0);
});
