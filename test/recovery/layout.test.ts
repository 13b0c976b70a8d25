// Layout (superblock) and connection table: format, reopen, refusal of foreign or damaged regions,
// id issuance (never reused, even across crashes during registration).
import t from 'tap';
import { crashImages, crc32c, materialize, PmemRegion } from '../../pmem/index.js';
import { computeGeometry, ConnTable, Layout, LAYOUT_DEFAULTS, RECOVERY_LAYOUT_VERSION, secretHash } from '../../recovery/index.js';

const NO_SECRET = secretHash(new Uint8Array(0));
import { codeOf, newRegion, SMALL } from './fixtures/util.js';

t.test('format then open: same geometry, counters start at 1', async (t) => {
  const r = newRegion();
  const a = Layout.format(r, SMALL);
  const b = Layout.open(r);
  t.same(b.geometry, a.geometry);
  t.equal(b.epoch, 1);
  t.equal(b.nextClientId, 1);
  t.equal(a.geometry.connTableOffset, 128);
  t.equal(a.geometry.ringsOffset, 128 + 2 * 64);
  t.equal(a.geometry.logOffset, a.geometry.ringsOffset + 2 * 4 * 128);
  t.equal(a.geometry.appOffset, a.geometry.logOffset + 4 * 256);
});

t.test('a layout at a base offset', async (t) => {
  const r = newRegion(SMALL, 4096);
  Layout.format(r, { ...SMALL, baseOffset: 4096 });
  t.equal(codeOf(() => Layout.open(r)), 'PMRPC_ERR_NOT_FORMATTED');
  t.equal(Layout.open(r, { baseOffset: 4096 }).geometry.superblockOffset, 4096);
});

t.test('coded refusals', async (t) => {
  const r = newRegion();
  t.equal(codeOf(() => Layout.open(r)), 'PMRPC_ERR_NOT_FORMATTED', 'blank region');
  Layout.format(r, SMALL);
  t.equal(codeOf(() => Layout.format(r, SMALL)), 'PMRPC_ERR_ALREADY_FORMATTED', 'never formats over a layout');

  const foreign = newRegion();
  foreign.store(0, new TextEncoder().encode('SQLite f'));
  t.equal(codeOf(() => Layout.open(foreign)), 'PMRPC_ERR_FOREIGN_LAYOUT');
  t.equal(codeOf(() => Layout.format(foreign, SMALL)), 'PMRPC_ERR_FOREIGN_LAYOUT');

  const bad = newRegion();
  Layout.format(bad, SMALL);
  bad.storeU8(20, bad.loadU8(20) ^ 1);
  t.equal(codeOf(() => Layout.open(bad)), 'PMRPC_ERR_SUPERBLOCK_CORRUPT', 'checksum');

  const ver = newRegion();
  Layout.format(ver, SMALL);
  ver.storeU32(8, RECOVERY_LAYOUT_VERSION + 1);
  ver.storeU32(60, crc32c(ver.load(0, 60)));
  t.equal(codeOf(() => Layout.open(ver)), 'PMRPC_ERR_LAYOUT_VERSION');

  const geo = newRegion();
  Layout.format(geo, SMALL);
  geo.storeU32(36, 0); // rings offset disagrees with the geometry
  geo.storeU32(60, crc32c(geo.load(0, 60)));
  t.equal(codeOf(() => Layout.open(geo)), 'PMRPC_ERR_SUPERBLOCK_CORRUPT', 'offsets');

  const ep = newRegion();
  Layout.format(ep, SMALL);
  ep.storeU64(64, 5n); // epoch word without its complement
  t.equal(codeOf(() => Layout.open(ep)), 'PMRPC_ERR_SUPERBLOCK_CORRUPT', 'damaged counter word');

  const small = PmemRegion.createInMemory(1024);
  t.equal(codeOf(() => Layout.format(small, SMALL)), 'PMRPC_ERR_LAYOUT_TOO_LARGE');
});

t.test('option validation: exact messages', async (t) => {
  t.throws(() => computeGeometry({ slotBytes: 100 }), new RangeError('slotBytes must be a multiple of 64 in [64, 1048576], got 100'));
  t.throws(() => computeGeometry({ maxClients: 0 }), new RangeError('maxClients must be in [1, 4096], got 0'));
  t.throws(() => computeGeometry({ ringSlots: 1.5 }), new TypeError('ringSlots must be an integer, got 1.5'));
  t.throws(() => computeGeometry({ recordBytes: 64 }), new RangeError('recordBytes must be a multiple of 64 in [128, 1048576], got 64'));
  t.throws(() => computeGeometry(null as never), new TypeError('options must be an object, got null'));
  t.same(computeGeometry({}).ringSlots, LAYOUT_DEFAULTS.ringSlots);
  t.ok(Object.isFrozen(LAYOUT_DEFAULTS));
});

t.test('a crash during format leaves either no layout or a valid one', async (t) => {
  const r = newRegion(SMALL, 0, true);
  const outcomes = new Set<string>();
  let images = 0;
  r.setCrashPointHook(() => {
    const st = r.crashState();
    for (const img of crashImages(st, { engine: 'random', seed: images, count: 16 })) {
      images++;
      const x = PmemRegion.openImage(materialize(st, img));
      const code = codeOf(() => Layout.open(x));
      outcomes.add(code ?? 'ok');
      if (code === 'PMRPC_ERR_NOT_FORMATTED') Layout.format(x, SMALL); // formatting again is allowed
    }
  });
  Layout.format(r, SMALL);
  r.setCrashPointHook(undefined);
  t.comment(`${images} images, outcomes ${[...outcomes].join(', ')}`);
  t.ok([...outcomes].every((o) => o === 'ok' || o === 'PMRPC_ERR_NOT_FORMATTED'), 'never a corrupt superblock');
  t.ok(outcomes.has('PMRPC_ERR_NOT_FORMATTED'));
});

t.test('connection table: ids issued once, slots reused, coded errors', async (t) => {
  const r = newRegion();
  const layout = Layout.format(r, SMALL);
  const conn = new ConnTable(layout);
  const a = conn.register(NO_SECRET);
  const b = conn.register(NO_SECRET);
  t.same([a.clientId, b.clientId, a.connSlot, b.connSlot], [1, 2, 0, 1]);
  t.equal(codeOf(() => conn.register(NO_SECRET)), 'PMRPC_ERR_TABLE_FULL');
  conn.setApplied(a.clientId, 3);
  t.equal(conn.appliedSeq(a.clientId), 3);
  t.throws(() => conn.setApplied(a.clientId, 2), /goes back/, 'applied sequence is monotonic (assertion)');
  conn.release(a.clientId);
  t.equal(codeOf(() => conn.lookup(a.clientId)), 'PMRPC_ERR_CLIENT_RELEASED', 'an issued id no longer in the table: released');
  t.equal(codeOf(() => conn.release(a.clientId)), 'PMRPC_ERR_CLIENT_RELEASED');
  t.equal(codeOf(() => conn.lookup(99)), 'PMRPC_ERR_UNKNOWN_CLIENT', 'an id never issued');
  const c = conn.register(NO_SECRET);
  t.equal(c.clientId, 3, 'a new id, never a released one');
  t.equal(c.connSlot, 0, 'the freed slot');
  t.equal(c.appliedSeq, 0, 'sequence state reset for the new client');
  const again = new ConnTable(Layout.open(r));
  t.same(again.entries().map((e) => e.clientId), [3, 2]);
  t.equal(again.creditOffset(2), layout.connOffset(1) + 8);

  r.storeU64(layout.connOffset(1), 0x1234n);
  t.equal(codeOf(() => new ConnTable(Layout.open(r))), 'PMRPC_ERR_TABLE_CORRUPT');
});

t.test('client ids are never reused across a crash during registration', async (t) => {
  const r = newRegion(SMALL, 0, true);
  const layout = Layout.format(r, SMALL);
  const conn = new ConnTable(layout);
  let issued = 0;
  let images = 0;
  r.setCrashPointHook(() => {
    const st = r.crashState();
    for (const img of crashImages(st, { engine: 'exhaustive' })) {
      images++;
      const x = PmemRegion.openImage(materialize(st, img));
      const c2 = new ConnTable(Layout.open(x));
      const ids = c2.entries().map((e) => e.clientId);
      t.ok(ids.every((id) => id <= issued + 1), 'only issued (or being issued) ids in the table');
      if (c2.entries().length < SMALL.maxClients!) t.ok(c2.register(NO_SECRET).clientId > issued, 'the next id is past every id handed out');
    }
  });
  for (let i = 0; i < 2; i++) issued = conn.register(NO_SECRET).clientId;
  r.setCrashPointHook(undefined);
  t.ok(images > 0, `${images} images`);
});
