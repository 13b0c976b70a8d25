// Redo log and store: the persistence protocol, record states, replay idempotence, coded errors.
import t from 'tap';
import { encodeRecord, readRecord, RecoveryStore, STORE_DEFAULTS } from '../../recovery/index.js';
import { codeOf, newRegion, SMALL } from './fixtures/util.js';

const u64 = (v: number): Uint8Array => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt(v), true);
  return b;
};

t.test('commit: record, apply, flag; the table word follows; slots reused in LSN order', async (t) => {
  const region = newRegion();
  const store = RecoveryStore.format(region, SMALL);
  const { clientId } = store.register();
  for (let seq = 1; seq <= 6; seq++) {
    const { lsn } = store.commit(clientId, seq, { images: [{ offset: 8 * seq, bytes: u64(seq * 10) }], result: new Uint8Array([seq]) });
    t.equal(lsn, seq);
    const rec = readRecord(store.layout, (lsn - 1) % 4);
    t.same([rec.state, rec.lsn, rec.clientId, rec.seq, [...rec.result!]], ['applied', lsn, clientId, seq, [seq]]);
    t.equal(store.appView.loadU64(8 * seq), BigInt(seq * 10));
    t.equal(store.conn.appliedSeq(clientId), seq);
  }
  t.equal(region.dirtyLines, 1, 'only the lazily persisted table word is pending');
  t.same([...store.resultOf(clientId, 6)!], [6], 'results are kept in the records');
  t.equal(store.resultOf(clientId, 1), undefined, 'until the record slot is reused');
});

t.test('record states: none, incomplete, complete-unapplied, applied; replay is idempotent', async (t) => {
  const region = newRegion();
  const store = RecoveryStore.format(region, SMALL);
  const { clientId } = store.register();
  t.equal(readRecord(store.layout, 0).state, 'none');
  const off = store.layout.recordOffset(0);
  const rec = encodeRecord(1, clientId, 1, { images: [{ offset: 0, bytes: u64(42) }] });
  region.store(off + 8, rec.subarray(8));
  const r0 = readRecord(store.layout, 0);
  t.equal(r0.state, 'complete-unapplied');
  region.storeU8(off + 60, region.loadU8(off + 60) ^ 0xff);
  t.equal(readRecord(store.layout, 0).state, 'incomplete');
  t.equal(readRecord(store.layout, 0, false).state, 'complete-unapplied', 'without checksum verification (fault switch) the torn record is trusted');
  region.storeU8(off + 60, region.loadU8(off + 60) ^ 0xff);
  store.log.apply(r0);
  const after = region.load(store.geometry.appOffset, 64);
  store.log.apply(readRecord(store.layout, 0));
  t.same(region.load(store.geometry.appOffset, 64), after, 'replaying an applied record changes nothing');
  t.equal(readRecord(store.layout, 0).state, 'applied');
});

t.test('coded errors of the log and the store', async (t) => {
  const region = newRegion();
  const store = RecoveryStore.format(region, SMALL);
  const { clientId } = store.register();
  t.equal(codeOf(() => store.commit(clientId, 1, { images: [{ offset: 1020, bytes: u64(1) }] })), 'PMRPC_ERR_EFFECT_OUT_OF_BOUNDS');
  t.equal(codeOf(() => store.commit(clientId, 1, { images: [{ offset: 0, bytes: new Uint8Array(300) }] })), 'PMRPC_ERR_TOO_LARGE');
  t.equal(codeOf(() => store.commit(clientId, 2, { images: [] })), 'PMRPC_ERR_OUT_OF_ORDER');
  t.equal(codeOf(() => store.commit(99, 1, { images: [] })), 'PMRPC_ERR_UNKNOWN_CLIENT');
  t.equal(codeOf(() => store.appView.load(1020, 8)), 'PMRPC_ERR_EFFECT_OUT_OF_BOUNDS');
  // A slot holding a complete record not yet applied is never overwritten.
  const off = store.layout.recordOffset(0);
  const rec = encodeRecord(9, clientId, 1, { images: [] });
  region.store(off + 8, rec.subarray(8));
  t.equal(codeOf(() => store.commit(clientId, 1, { images: [] })), 'PMRPC_ERR_LOG_FULL');
  t.throws(() => store.commit(clientId, 1, { images: 'x' } as never), new TypeError('effects must be an object { images: EffectImage[], result?: Uint8Array }'));
});

t.test('open needs recover; recover reports resume points and the epoch', async (t) => {
  const region = newRegion();
  const s1 = RecoveryStore.format(region, SMALL);
  const { clientId } = s1.register();
  for (let seq = 1; seq <= 3; seq++) {
    const off = s1.entryOffset(clientId, seq);
    region.store(off, s1.encodeEntry({ clientId, seq, methodId: 1, payload: new Uint8Array([seq]) }));
    region.persist(off, 128);
  }
  const p = s1.ring(clientId).poll();
  if (p.kind === 'entry') s1.execute(p.entry, () => ({ images: [{ offset: 0, bytes: u64(1) }] }));
  const s2 = RecoveryStore.open(region);
  t.equal(s2.ready, false);
  t.equal(codeOf(() => s2.register()), 'PMRPC_ERR_NOT_RECOVERED');
  t.equal(codeOf(() => s2.ring(clientId)), 'PMRPC_ERR_NOT_RECOVERED');
  const report = s2.recover();
  t.equal(report.epoch, 2);
  t.same(report.clients.map((c) => [c.appliedSeq, c.resumeSeq, c.reexecute.map((e) => e.seq)]), [[1, 4, [2, 3]]]);
  t.equal(report.reexecuted, false, 'without a handler the caller executes them');
  for (const e of report.clients[0]!.reexecute) s2.execute(e, () => ({ images: [] }));
  t.equal(s2.ring(clientId).nextSeq, 4, 'the ring polls from the resume point');
  t.equal(s2.resumeSeq(clientId), 4);
  t.same(RecoveryStore.open(region).recover().clients[0]!.reexecute, [], 'a second recovery has nothing to do');
});

t.test('store option validation', async (t) => {
  const region = newRegion();
  t.throws(() => RecoveryStore.format(region, { ...SMALL, partialPollsMax: -1 }), new RangeError('partialPollsMax must be a positive integer, got -1'));
  t.throws(() => RecoveryStore.format(region, { ...SMALL, faults: { nope: true } as never }), new TypeError('unknown fault switch nope'));
  t.throws(() => RecoveryStore.format(region, { ...SMALL, faults: { skipChecksumAtPoll: 1 } as never }), new TypeError('fault switch skipChecksumAtPoll must be a boolean, got 1'));
  t.throws(() => RecoveryStore.format(region, null as never), new TypeError('options must be an object, got null'));
  t.ok(Object.isFrozen(STORE_DEFAULTS));
  const s = RecoveryStore.format(region, SMALL);
  t.throws(() => s.recover('x' as never), new TypeError('handler must be a function'));
});

t.test('inside a batch: each client\'s pending sequence is kept across interleaved commits of several clients', async (t) => {
  // The log keeps the last committing client's pending sequence apart from the others' (no map
  // operation per request): switching clients back and forth must not lose or mix them.
  const region = newRegion({ ...SMALL, maxClients: 3, logRecords: 16 });
  const store = RecoveryStore.format(region, { ...SMALL, maxClients: 3, logRecords: 16 });
  const a = store.register().clientId;
  const b = store.register().clientId;
  const c = store.register().clientId;
  store.batch(() => {
    store.commit(a, 1, { images: [] });
    store.commit(a, 2, { images: [] });
    store.commit(b, 1, { images: [] });
    t.equal(store.log.pendingApplied(a), 2, 'a, after b committed');
    t.equal(store.log.pendingApplied(b), 1);
    t.equal(store.log.pendingApplied(c), undefined, 'c committed nothing');
    store.commit(a, 3, { images: [] });
    store.commit(c, 1, { images: [] });
    store.commit(b, 2, { images: [] });
    t.same([store.log.pendingApplied(a), store.log.pendingApplied(b), store.log.pendingApplied(c)], [3, 2, 1]);
    // Every client's next sequence is checked against its own pending one, whichever committed last.
    t.equal(codeOf(() => store.commit(a, 3, { images: [] })), 'PMRPC_ERR_OUT_OF_ORDER', 'a again at 3');
    t.equal(codeOf(() => store.commit(c, 3, { images: [] })), 'PMRPC_ERR_OUT_OF_ORDER', 'c skips 2');
    t.throws(() => store.log.commit(b, 2, { images: [] }), /client \d+: request 2 committed again \(applied up to 2\)/, 'the log itself refuses b at 2');
    store.commit(c, 2, { images: [] });
    store.commit(a, 4, { images: [] });
  });
  t.same([a, b, c].map((id) => store.conn.appliedSeq(id)), [4, 2, 2], 'settled: every client\'s last sequence');
  t.same([a, b, c].map((id) => store.log.pendingApplied(id)), [undefined, undefined, undefined], 'nothing pending after the batch');
});
