// Every coded error of recovery/ is raised by some operation (one case per code, all codes covered).
import t from 'tap';
import { crc32c, PmemRegion } from '../../pmem/index.js';
import { encodeRecord, Layout, RecoveryErrorCodes, RecoveryStore } from '../../recovery/index.js';
import { codeOf, newRegion, SMALL } from './fixtures/util.js';

function store(): { region: PmemRegion; s: RecoveryStore; c: number } {
  const region = newRegion();
  const s = RecoveryStore.format(region, { ...SMALL, partialPollsMax: 1 });
  return { region, s, c: s.register().clientId };
}

const cases: [string, () => unknown][] = [
  ['PMRPC_ERR_NOT_FORMATTED', () => Layout.open(newRegion())],
  ['PMRPC_ERR_ALREADY_FORMATTED', () => RecoveryStore.format(store().region, SMALL)],
  ['PMRPC_ERR_FOREIGN_LAYOUT', () => {
    const r = newRegion();
    r.storeU64(0, 0xdeadbeefn);
    return Layout.open(r);
  }],
  ['PMRPC_ERR_SUPERBLOCK_CORRUPT', () => {
    const { region } = store();
    region.storeU8(13, 99);
    return RecoveryStore.open(region);
  }],
  ['PMRPC_ERR_LAYOUT_VERSION', () => {
    const { region } = store();
    region.storeU32(8, 1); // a version-1 file (the connection-table line before the secret hash): refused, not misread
    region.storeU32(60, crc32c(region.load(0, 60)));
    return RecoveryStore.open(region);
  }],
  ['PMRPC_ERR_LAYOUT_TOO_LARGE', () => RecoveryStore.format(PmemRegion.createInMemory(1024), SMALL)],
  ['PMRPC_ERR_TABLE_CORRUPT', () => {
    const { region, s } = store();
    region.storeU64(s.layout.connOffset(0), 77n);
    return RecoveryStore.open(region);
  }],
  ['PMRPC_ERR_TABLE_FULL', () => {
    const { s } = store();
    s.register();
    return s.register();
  }],
  ['PMRPC_ERR_UNKNOWN_CLIENT', () => store().s.entryOffset(42, 1)],
  ['PMRPC_ERR_COUNTER_EXHAUSTED', () => {
    const { s } = store();
    s.layout.setNextClientId(0xffff_ffff);
    s.release(1);
    return s.register();
  }],
  ['PMRPC_ERR_RING_FULL', () => store().s.checkCredit(1, 5)],
  ['PMRPC_ERR_TOO_LARGE', () => store().s.encodeEntry({ clientId: 1, seq: 1, methodId: 1, payload: new Uint8Array(200) })],
  ['PMRPC_ERR_ENTRY_TORN', () => {
    const { region, s, c } = store();
    region.store(s.entryOffset(c, 1), s.encodeEntry({ clientId: c, seq: 1, methodId: 1, payload: new Uint8Array(64).fill(1) }).subarray(0, 32));
    s.ring(c).poll();
    return s.ring(c).poll();
  }],
  ['PMRPC_ERR_RING_OVERRUN', () => {
    const { region, s, c } = store();
    region.store(s.entryOffset(c, 5), s.encodeEntry({ clientId: c, seq: 5, methodId: 1, payload: new Uint8Array(4) }));
    return s.ring(c).poll();
  }],
  ['PMRPC_ERR_LOG_FULL', () => {
    const { region, s, c } = store();
    region.store(s.layout.recordOffset(0) + 8, encodeRecord(5, c, 1, { images: [] }).subarray(8));
    return s.commit(c, 1, { images: [] });
  }],
  ['PMRPC_ERR_EFFECT_OUT_OF_BOUNDS', () => store().s.commit(1, 1, { images: [{ offset: -8, bytes: new Uint8Array(8) }] })],
  ['PMRPC_ERR_RECOVERY_REFUSED', () => {
    const { region, s } = store();
    // An unapplied record of a client the table does not know: the protocol cannot produce it.
    region.store(s.layout.recordOffset(0) + 8, encodeRecord(1, 9, 1, { images: [] }).subarray(8));
    return RecoveryStore.open(region).recover();
  }],
  ['PMRPC_ERR_OUT_OF_ORDER', () => store().s.commit(1, 3, { images: [] })],
  ['PMRPC_ERR_CLIENT_RELEASED', () => {
    const { s, c } = store();
    s.release(c);
    return s.authenticate(c, new Uint8Array(0));
  }],
  ['PMRPC_ERR_CLIENT_AUTH', () => {
    const region = newRegion();
    const s = RecoveryStore.format(region, SMALL);
    const c = s.register(new Uint8Array(32).fill(7)).clientId;
    return s.authenticate(c, new Uint8Array(32).fill(8));
  }],
  ['PMRPC_ERR_CLIENT_BUSY', () => {
    const { region, s, c } = store();
    const off = s.entryOffset(c, 1);
    region.store(off, s.encodeEntry({ clientId: c, seq: 1, methodId: 1, payload: new Uint8Array(4) }));
    return s.release(c);
  }],
  ['PMRPC_ERR_NOT_RECOVERED', () => RecoveryStore.open(store().region).register()],
];

for (const [code, fn] of cases) {
  t.test(code, async (t) => t.equal(codeOf(fn), code));
}

t.test('two complete records for one request are refused', async (t) => {
  const { region, s, c } = store();
  region.store(s.layout.recordOffset(0) + 8, encodeRecord(1, c, 1, { images: [] }).subarray(8));
  region.store(s.layout.recordOffset(1) + 8, encodeRecord(2, c, 1, { images: [] }).subarray(8));
  t.equal(codeOf(() => RecoveryStore.open(region).recover()), 'PMRPC_ERR_RECOVERY_REFUSED');
});

t.test('every code of RecoveryErrorCodes has a case', async (t) => {
  t.same(new Set(cases.map(([c]) => c)), new Set(Object.values(RecoveryErrorCodes)));
});
