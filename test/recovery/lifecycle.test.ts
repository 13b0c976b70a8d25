// Client slots: the slot decision table (every input, one row), the secret kept as a hash, and the
// release under crashes on the one explorer (the recovery app with churn: a client whose requests
// are all acknowledged leaves; its release is acknowledged — a crash point — once durable). A crash
// in the middle of a release is finished (row release-finish) or undone by recovery; nothing
// acknowledged is lost; no acknowledged release comes back; every client's secret still verifies;
// a table that was full takes new clients after the restart. Each persist of the release has a
// fault switch that the same runs catch (faults.test.ts holds them all; here the two of the release
// with the message they must produce).
import t from 'tap';
import { ConnTable, decideSlot, ID_VALUES, Layout, matchingSlotRows, RELEASE_VALUES, RecoveryStore, secretHash, SLOT_TABLE } from '../../recovery/index.js';
import { explore, recoveryExplorerApp } from '../../src/testing/crash/index.js';
import { codeOf, newRegion, SMALL } from './fixtures/util.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/recovery/lifecycle.test.ts)`);

t.test('slot table: exactly one row for every input, every row reachable by some input', async (t) => {
  const used = new Set<string>();
  for (const id of ID_VALUES) {
    for (const rel of RELEASE_VALUES) {
      const rows = matchingSlotRows(id, rel);
      t.equal(rows.length, 1, `id ${id}, release ${rel}: ${rows.map((r) => r.id).join(', ')}`);
      used.add(decideSlot(id, rel).id);
    }
  }
  t.same([...used].sort(), SLOT_TABLE.map((r) => r.id).sort());
});

t.test('the secret: kept only as its SHA-256, checked in constant time; a wrong one changes nothing', async (t) => {
  const r = newRegion();
  const s = RecoveryStore.format(r, SMALL);
  const secret = new Uint8Array(32).fill(0x5a);
  const { clientId, connSlot } = s.register(secret);
  const line = r.load(s.layout.connOffset(connSlot), 64);
  t.same(line.subarray(32, 64), secretHash(secret), 'the hash is in the line');
  t.notOk(Buffer.from(line).includes(Buffer.from(secret)), 'the secret itself is not');
  s.authenticate(clientId, secret);
  const before = r.load(0, r.sizeBytes);
  t.equal(codeOf(() => s.authenticate(clientId, new Uint8Array(32).fill(0x5b))), 'PMRPC_ERR_CLIENT_AUTH');
  t.equal(codeOf(() => s.authenticate(clientId, new Uint8Array(0))), 'PMRPC_ERR_CLIENT_AUTH');
  t.same(r.load(0, r.sizeBytes), before, 'nothing written');
  // After a reopen the hash is read from PM.
  const again = RecoveryStore.open(r);
  again.recover();
  again.authenticate(clientId, secret);
  t.equal(codeOf(() => again.authenticate(clientId, new Uint8Array(1))), 'PMRPC_ERR_CLIENT_AUTH');
});

t.test('a decided release whose id word did not persist is finished by recovery (row release-finish)', async (t) => {
  const r = newRegion(SMALL, 0, true);
  const s = RecoveryStore.format(r, SMALL);
  const a = s.register(new Uint8Array(4).fill(1)).clientId;
  const b = s.register(new Uint8Array(4).fill(2)).clientId;
  s.release(a);
  // The media image right after the release: the release word is durable, the id word clear is not.
  const img = r.crashState().media;
  const { PmemRegion } = await import('../../pmem/index.js');
  const x = PmemRegion.openImage(img);
  const conn = new ConnTable(Layout.open(x));
  t.same(conn.releasing(), [a], 'read as a decided release');
  t.equal(conn.rows['release-finish'], 1);
  const s2 = RecoveryStore.open(x);
  const report = s2.recover();
  t.same(report.releasesFinished, [a]);
  t.equal(report.rows['release-finish'], 1);
  t.same(s2.conn.entries().map((e) => e.clientId), [b]);
  t.equal(codeOf(() => s2.authenticate(a, new Uint8Array(4).fill(1))), 'PMRPC_ERR_CLIENT_RELEASED');
  const c = s2.register(new Uint8Array(4).fill(3));
  t.equal(c.connSlot, 0, 'the released slot is reused');
  // A release word of another client under a live id: the protocol cannot produce it.
  r.storeU64(s.layout.connOffset(1) + 16, 0x1234n);
  t.equal(codeOf(() => RecoveryStore.open(r)), 'PMRPC_ERR_TABLE_CORRUPT');
});

t.test('releases under crashes (the explorer, recovery app with churn, full table, kill model)', async (t) => {
  let finishes = 0;
  let churned = 0;
  let images = 0;
  for (let seed = SEED; seed < SEED + 2; seed++) {
    const app = recoveryExplorerApp({ clients: 4, churn: 6, requestsPerClient: 4, batchMax: 2 });
    const r = await explore(app, { seed, imagesPerPoint: 4, pins: { lineModel: seed % 2 === 0 ? 'prefix' : 'subset' } });
    t.same(r.violations.map((v) => `${v.detail} — ${v.replay}`), [], `seed ${seed}: ${r.imagesChecked} images, ${r.crashPoints} crash points, ${app.churned} releases`);
    finishes += app.rows['release-finish'] ?? 0;
    churned += app.churned;
    images += r.imagesChecked;
  }
  t.ok(churned >= 8, `${churned} releases in the runs`);
  t.ok(finishes > 0, `recovery finished ${finishes} decided releases (row release-finish reached)`);
  t.comment(`${images} images`);
});

// The mark's persist (before the release is acknowledged), the clear's persist (before a reuse
// resets the mark: same line, so the kill model), and the order (every entry applied first).
const RELEASE_FAULTS: Array<[string, RegExp, 'subset' | undefined]> = [
  ['skipPersistReleaseMark', /release undone|applied again/, undefined],
  ['skipPersistReleaseClear', /release undone|applied again|never sent/, 'subset'],
  ['skipReleaseDrainCheck', /acknowledged request lost/, undefined],
];

for (const [fault, want, lineModel] of RELEASE_FAULTS) {
  t.test(`fault ${fault} is caught by the same runs`, async (t) => {
    for (let seed = SEED; seed < SEED + 8; seed++) {
      const r = await explore(recoveryExplorerApp({ clients: 4, churn: 6, requestsPerClient: 4, batchMax: 2, faults: { [fault]: true } }), { seed, imagesPerPoint: 4, violationsMax: 40, pins: lineModel === undefined ? {} : { lineModel } });
      const v = r.violations.find((x) => want.test(x.detail));
      if (v !== undefined) {
        t.pass(`seed ${seed}: ${v.kind} (${v.phase}): ${v.detail} — ${v.replay}`);
        return;
      }
      t.comment(`seed ${seed}: ${r.violations.length} violations, none matching ${want}`);
    }
    t.fail(`${fault}: not caught on seeds ${SEED}..${SEED + 7}`);
  });
}
