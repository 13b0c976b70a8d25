// Invariants on persistent state (pmem/errors.ts invariant(), docs/errors.md PMRPC_ERR_INVARIANT):
// checked where state changes, before the bad state is written. Each case breaks the state under
// the code (as a bug or a stray store would) and asserts the coded error AND that PM is unchanged;
// the RPC server does not answer a broken invariant as a request error: it halts, and a process
// with the default onInvariant stops.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createPrng, invariant, isInvariantError, PmrpcError, seededEntropy } from '../../pmem/index.js';
import { Access, Rnic } from '../../flush/index.js';
import { checkFreeLists, encodeRecord, postFreeLists, readRecord, RecoveryStore } from '../../recovery/index.js';
import { connectInProcess } from '../../src/rpc/index.js';
import { codeOf, newRegion, SMALL } from './fixtures/util.js';
import { rig } from '../rpc/fixtures/rig.js';

t.test('invariant(): PMRPC_ERR_INVARIANT, the message built only when it fails', async (t) => {
  let built = 0;
  invariant(true, () => `${++built}`);
  t.equal(built, 0, 'a holding invariant costs no message');
  const e = t.throws(() => invariant(false, () => 'ring position 7 behind 9')) as PmrpcError;
  t.equal(e.code, 'PMRPC_ERR_INVARIANT');
  t.match(e.message, /invariant violated: ring position 7 behind 9/);
  t.ok(isInvariantError(e));
  t.notOk(isInvariantError(new PmrpcError('PMRPC_ERR_IO', 'x')));
});

t.test('the epoch and the client ids only grow: a step back is refused before the word is written', async (t) => {
  const region = newRegion();
  const store = RecoveryStore.format(region, SMALL);
  const layout = store.layout;
  const epoch = layout.epoch;
  t.equal(codeOf(() => layout.setEpoch(epoch)), 'PMRPC_ERR_INVARIANT', 'the same epoch again');
  t.equal(codeOf(() => layout.setEpoch(epoch - 1)), 'PMRPC_ERR_INVARIANT', 'an older epoch');
  t.equal(layout.epoch, epoch, 'the epoch word is unchanged');
  layout.setEpoch(epoch + 1);
  t.equal(layout.epoch, epoch + 1, 'a bump is written');
  const next = layout.nextClientId;
  t.equal(codeOf(() => layout.setNextClientId(next - 1)), 'PMRPC_ERR_INVARIANT', 'an issued client id again');
  t.equal(layout.nextClientId, next);
});

t.test('a registration never takes a slot that holds a live client id', async (t) => {
  const region = newRegion();
  const store = RecoveryStore.format(region, SMALL);
  const a = store.register();
  // Slot 1 is free in the table; a stray store makes its id word name a live client behind the table's back.
  const off = store.layout.connOffset(1);
  const idWord = region.loadU64Atomic(store.layout.connOffset(0));
  region.storeU64Atomic(off, idWord);
  const before = region.load(off, 64);
  t.equal(codeOf(() => store.register()), 'PMRPC_ERR_INVARIANT');
  t.same(region.load(off, 64), before, 'the slot is untouched');
  t.equal(store.conn.appliedSeq(a.clientId), 0, 'the live client is unaffected');
});

t.test('the redo log never commits a request its client already applied', async (t) => {
  const region = newRegion();
  const store = RecoveryStore.format(region, SMALL);
  const { clientId } = store.register();
  store.commit(clientId, 1, { images: [] });
  store.commit(clientId, 2, { images: [] });
  const lsn = store.log.nextLsn;
  const log = region.load(store.layout.recordOffset(0), SMALL.recordBytes! * SMALL.logRecords!);
  t.equal(codeOf(() => store.log.commit(clientId, 2, { images: [] })), 'PMRPC_ERR_INVARIANT', 'seq 2 again');
  t.equal(codeOf(() => store.log.commit(clientId, 1, { images: [] })), 'PMRPC_ERR_INVARIANT', 'seq 1 again');
  t.equal(store.log.nextLsn, lsn, 'no record was written');
  t.same(region.load(store.layout.recordOffset(0), SMALL.recordBytes! * SMALL.logRecords!), log, 'the log is unchanged');
  store.commit(clientId, 3, { images: [] });
  t.equal(store.conn.appliedSeq(clientId), 3, 'the next request commits');
});

t.test('free lists: a buffer posted twice is refused before anything is posted', async (t) => {
  const region = newRegion(SMALL, 4096);
  const nic = new Rnic(region, { ddio: false, entropy: seededEntropy(createPrng(3)) });
  const pd = nic.allocPd();
  const mr = nic.registerMr(pd, 0, region.sizeBytes, Access.ALL);
  postFreeLists(nic, mr, new Map([[64, [0, 64]]]));
  t.equal(nic.freeBufferCount(mr, 64), 2);
  t.equal(codeOf(() => postFreeLists(nic, mr, new Map([[64, [0, 64, 128, 64]]]))), 'PMRPC_ERR_INVARIANT', 'twice on one list');
  t.equal(codeOf(() => postFreeLists(nic, mr, new Map([[64, [0]], [128, [0]]]))), 'PMRPC_ERR_INVARIANT', 'on two lists');
  t.equal(nic.freeBufferCount(mr, 64), 2, 'the posted lists are as they were');
});

t.test('free lists: only buffers of their class, none reachable, are posted', async (t) => {
  const classes = [{ sizeBytes: 64, offset: 1024, count: 4 }, { sizeBytes: 128, offset: 2048, count: 2 }];
  const none = (): boolean => false;
  t.equal(codeOf(() => checkFreeLists(classes, new Map([[64, [1024, 1088]], [128, [2048]]]), none)), undefined, 'buffers of their classes');
  t.equal(codeOf(() => checkFreeLists(classes, new Map([[64, [2048]]]), none)), 'PMRPC_ERR_INVARIANT', 'a buffer on another class\'s list');
  t.equal(codeOf(() => checkFreeLists(classes, new Map([[64, [1032]]]), none)), 'PMRPC_ERR_INVARIANT', 'inside a buffer');
  t.equal(codeOf(() => checkFreeLists(classes, new Map([[64, [512]]]), none)), 'PMRPC_ERR_INVARIANT', 'outside the arena');
  t.equal(codeOf(() => checkFreeLists(classes, new Map([[64, [1024, 1088]]]), (p) => p === 1088)), 'PMRPC_ERR_INVARIANT', 'a reachable buffer');
});

t.test('ring positions: only a consumed entry is persisted', async (t) => {
  const region = newRegion();
  const store = RecoveryStore.format(region, SMALL);
  const { clientId } = store.register();
  const ring = store.ring(clientId);
  const slots = SMALL.ringSlots!;
  t.equal(codeOf(() => ring.persistEntry(1)), 'PMRPC_ERR_INVARIANT', 'an entry not polled yet (the client may be writing it)');
  for (let seq = 1; seq <= slots + 1; seq++) {
    region.store(store.entryOffset(clientId, seq), store.encodeEntry({ clientId, seq, methodId: 1, payload: new Uint8Array(4) }));
    t.equal(ring.poll().kind, 'entry', `entry ${seq} polled`);
  }
  t.equal(ring.nextSeq, slots + 2);
  const flushes = region.stats.flushes;
  t.equal(codeOf(() => ring.persistEntry(slots + 2)), 'PMRPC_ERR_INVARIANT', 'the next entry (not polled: the client may be writing it)');
  t.equal(codeOf(() => ring.persistEntry(slots + 3)), 'PMRPC_ERR_INVARIANT', 'one past it');
  t.equal(codeOf(() => ring.persistEntry(0)), 'PMRPC_ERR_INVARIANT', 'sequence 0');
  t.equal(region.stats.flushes, flushes, 'nothing was persisted');
  for (let seq = 2; seq <= slots + 1; seq++) ring.persistEntry(seq);
  t.equal(region.stats.flushes, flushes + slots, 'the consumed entries are');
});

t.test('a release marks only its own client\'s slot', async (t) => {
  const region = newRegion();
  const store = RecoveryStore.format(region, SMALL);
  const a = store.register();
  const b = store.register();
  const offA = store.layout.connOffset(a.connSlot);
  // A stray store makes slot a's id word name client b.
  region.storeU64Atomic(offA, region.loadU64Atomic(store.layout.connOffset(b.connSlot)));
  const before = region.load(offA, 64);
  t.equal(codeOf(() => store.conn.release(a.clientId)), 'PMRPC_ERR_INVARIANT');
  t.same(region.load(offA, 64), before, 'the slot is untouched (no release mark over client b)');
  t.ok(store.conn.has(a.clientId) && store.conn.has(b.clientId), 'the table is unchanged');
  store.conn.release(b.clientId);
  t.notOk(store.conn.has(b.clientId), 'a release of a slot that is its own goes through');
});

t.test('the redo log never overwrites a record newer than the one it writes', async (t) => {
  const region = newRegion();
  const store = RecoveryStore.format(region, SMALL);
  const { clientId } = store.register();
  store.commit(clientId, 1, { images: [] });
  t.equal(store.log.nextLsn, 2);
  // A stray store leaves an applied record of LSN 50 in slot 1, where LSN 2 goes.
  const rec = encodeRecord(50, clientId, 1, { images: [] });
  new DataView(rec.buffer).setBigUint64(0, 50n, true); // its applied flag
  region.store(store.layout.recordOffset(1), rec);
  t.equal(readRecord(store.layout, 1).state, 'applied');
  const before = region.load(store.layout.recordOffset(1), SMALL.recordBytes!);
  let err: Error | undefined;
  try {
    store.commit(clientId, 2, { images: [] });
  } catch (e) {
    err = e as Error;
  }
  t.equal((err as { code?: string } | undefined)?.code, 'PMRPC_ERR_INVARIANT');
  t.match(err?.message, /slot 1 holds applied record 50; the next is 2/);
  t.same(region.load(store.layout.recordOffset(1), SMALL.recordBytes!), before, 'record 50 is not overwritten');
  t.equal(store.log.nextLsn, 2);
  t.equal(store.conn.appliedSeq(clientId), 1, 'request 2 is not applied');
});

t.test('RPC server: a broken invariant is not answered as a request error; the server halts and says so once', async (t) => {
  const halts: PmrpcError[] = [];
  let halted!: () => void;
  const haltSeen = new Promise<void>((r) => (halted = r));
  const { server, fabric } = rig({
    onInvariant: (e) => {
      halts.push(e);
      halted();
    },
  });
  server.register('broken', () => {
    invariant(false, () => 'a handler found its state broken');
  });
  server.start();
  const c = connectInProcess(server, fabric);
  const first = await c.call('inc', new Uint8Array(4)).result;
  t.equal(first.length, 8, 'served before');
  let outcome = 'pending';
  const bad = c.call('broken', new Uint8Array(4));
  bad.result.then(() => (outcome = 'answered'), (e: { code?: string }) => (outcome = `rejected ${String(e.code)}`));
  // A bounded wait on the event (the halt), not on speed.
  let bound: NodeJS.Timeout | undefined;
  const seen = await Promise.race([haltSeen.then(() => true), new Promise<boolean>((r) => (bound = setTimeout(() => r(false), 60_000)))]);
  clearTimeout(bound);
  t.ok(seen, 'onInvariant was called');
  const after = c.call('inc', new Uint8Array(4));
  let later = 'pending';
  after.result.then(() => (later = 'answered'), () => (later = 'rejected'));
  await new Promise((r) => setTimeout(r, 200));
  t.equal(outcome, 'pending', 'no RESULT for it, and no request error either');
  t.equal(halts.length, 1, 'onInvariant told once');
  t.equal(halts[0]?.code, 'PMRPC_ERR_INVARIANT');
  t.equal(server.halted, halts[0], 'the server records what stopped it');
  t.not(later, 'answered', 'nothing is served after the halt');
  server.close();
});

t.test('with the default onInvariant the process stops (the error leaves the event loop)', async (t) => {
  const script = fileURLToPath(new URL('./fixtures/invariant-child.ts', import.meta.url));
  const r = spawnSync(process.execPath, ['--import=tsx', script], { encoding: 'utf8', timeout: 240_000 });
  t.not(r.status, 0, `the process exited non-zero (status ${String(r.status)})`);
  t.match(r.stderr, /PMRPC_ERR_INVARIANT/, 'with the coded error');
  t.notMatch(r.stdout, /still running/, 'before its next turn of work');
});

t.test('record positions: a record is applied only while its slot still holds it', async (t) => {
  const region = newRegion();
  const store = RecoveryStore.format(region, SMALL);
  const { clientId } = store.register();
  store.commit(clientId, 1, { images: [] });
  // Record 2 is committed (its images are what apply would store), read back as recovery reads it.
  const rec = encodeRecord(2, clientId, 2, { images: [{ offset: 0, bytes: new Uint8Array([7, 7, 7, 7]) }] });
  region.store(store.layout.recordOffset(1), rec);
  const info = readRecord(store.layout, 1);
  t.equal(info.state, 'complete-unapplied');
  // A stray store: the slot now holds another record (LSN 9) before record 2 is applied.
  region.store(store.layout.recordOffset(1), encodeRecord(9, clientId, 3, { images: [] }));
  const app = store.layout.geometry.appOffset;
  const before = { app: region.load(app, 64), slot: region.load(store.layout.recordOffset(1), SMALL.recordBytes!) };
  for (const [what, fn] of [['apply', () => store.log.apply(info)], ['applyInOrder', () => store.log.applyInOrder([info])]] as const) {
    let err: Error | undefined;
    try {
      fn();
    } catch (e) {
      err = e as Error;
    }
    t.ok(isInvariantError(err), `${what}: PMRPC_ERR_INVARIANT`);
    t.match(err?.message, /record 2 applied, but its slot 1 holds record 9/);
    t.same(region.load(app, 64), before.app, `${what}: no image stored`);
    t.same(region.load(store.layout.recordOffset(1), SMALL.recordBytes!), before.slot, `${what}: no applied flag over record 9`);
  }
  // The same record over its own slot applies.
  region.store(store.layout.recordOffset(1), rec);
  store.log.apply(info);
  t.same(region.load(app, 4), new Uint8Array([7, 7, 7, 7]));
  t.equal(readRecord(store.layout, 1).state, 'applied');
});

t.test('ring positions: a ring polls from past its client\'s applied sequence', async (t) => {
  const region = newRegion();
  const store = RecoveryStore.format(region, SMALL);
  const { clientId } = store.register();
  // The applied sequence moved past the resume point (1) with no ring polling it: a stray change.
  store.conn.setApplied(clientId, 3);
  t.equal(codeOf(() => store.ring(clientId)), 'PMRPC_ERR_INVARIANT', 'no ring polls entry 1 again');
  store.discardUnapplied(clientId); // the resume point goes past the applied sequence
  t.equal(store.ring(clientId).nextSeq, 4, 'a ring from past the applied sequence');
});
