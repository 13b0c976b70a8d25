// Crash tests of recovery/ on the one crash explorer (DESIGN §8; src/testing/crash/recovery.ts):
// every crash point of a small workload driving the rings and the redo log directly, its images
// recovered in fresh regions, each crashed once more during its own recovery, resumed and
// reopened; zero violations. Forged images (a crash image, recovered, then given a record the
// protocol cannot produce) reach the 'refuse' rows. Together every decision-table row is reached.
import t from 'tap';
import { PmemRegion } from '../../pmem/index.js';
import { DECISION_TABLE, encodeEntry, encodeRecord, RecoveryRefusedError, RecoveryStore } from '../../recovery/index.js';
import { configName, explore, nicConfigFor, recoveryDigestHandler, recoveryExplorerApp, visibleImage, withDistinctImages, type RecoveryAppServer } from '../../src/testing/crash/index.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/recovery/crash.test.ts, or the pmrpc crash-test command printed with a violation)`);
const SEEDS = [SEED, SEED + 1, SEED + 2, SEED + 3, SEED + 4];
const reached: Record<string, number> = {};
const add = (rows: Record<string, number>): void => {
  for (const [k, v] of Object.entries(rows)) reached[k] = (reached[k] ?? 0) + v;
};
// A loaded machine may take minutes; a timeout is not an assertion.
t.setTimeout(900_000);

// Scale (issue 10 item 8): the seeds together check at least 10,000 distinct (crash point, image)
// pairs; every other seed also crashes each image once more during its recovery.
let distinct = 0;
let cpuMs = 0;
SEEDS.forEach((seed, i) => {
  t.test(`recovery on the explorer, seed ${seed} (${configName(nicConfigFor(seed))}): no violations`, async (t) => {
    const app = recoveryExplorerApp();
    const counted = withDistinctImages(app);
    const c0 = process.cpuUsage();
    const r = await explore(counted, { seed, imagesPerPoint: 16, nested: i % 2 === 0 });
    const cpu = process.cpuUsage(c0);
    cpuMs += (cpu.user + cpu.system) / 1000;
    distinct += counted.distinct;
    t.comment(`seed ${seed}: ${r.crashPoints} crash points, ${r.imagesChecked} images (${counted.distinct} distinct) + ${r.nestedImagesChecked} crashed again during recovery; rows ${JSON.stringify(app.rows)}`);
    t.same(r.violations, [], 'no violations');
    t.equal(app.applied, 36, 'every request processed');
    if (i % 2 === 0) t.ok(r.nestedImagesChecked > 0, 'recoveries crashed during themselves');
    add(app.rows);
  });
});

t.test('scale: at least 10,000 distinct (crash point, image) pairs over the seeds', async (t) => {
  t.comment(`recovery: ${distinct} distinct (crash point, image) pairs over ${SEEDS.length} seeds, ${Math.round(distinct / (cpuMs / 1000))} distinct images per CPU second`);
  t.ok(distinct >= 10_000, `${distinct} distinct pairs`);
});

/** Recovers a copy of the recovered image, then forges a log record for (client, applied + 2) with a durable entry at applied + 1. */
function forged(region: PmemRegion, applied: boolean): unknown {
  const copy = PmemRegion.openImage(visibleImage(region), { tracing: true });
  const store = RecoveryStore.open(copy);
  store.recover(recoveryDigestHandler);
  const c = store.conn.entries()[0]!;
  const a = c.appliedSeq;
  const off = store.entryOffset(c.clientId, a + 1);
  copy.store(off, encodeEntry({ clientId: c.clientId, seq: a + 1, methodId: 1, payload: new Uint8Array(16).fill(7) }, store.geometry));
  copy.persist(off, store.geometry.slotBytes);
  const lsn = store.log.nextLsn;
  const roff = store.layout.recordOffset((lsn - 1) % store.geometry.logRecords);
  const rec = encodeRecord(lsn, c.clientId, a + 2, { images: [{ offset: 0, bytes: new Uint8Array(8) }] });
  copy.store(roff + 8, rec.subarray(8));
  if (applied) copy.storeU64(roff, BigInt(lsn));
  copy.persist(roff, rec.length);
  try {
    RecoveryStore.open(PmemRegion.openImage(visibleImage(copy))).recover(recoveryDigestHandler);
    return undefined;
  } catch (err) {
    return err;
  }
}

t.test('forged crash images reach the refuse rows', async (t) => {
  const app = recoveryExplorerApp({ reopenEvery: 0 });
  const check = app.checkRecovered.bind(app);
  let checked = 0;
  const refused: string[] = [];
  // Every 8th recovered image (of the explorer's crash points and images) is forged both ways.
  app.checkRecovered = async (world, snap, ctx) => {
    const problems = await check(world, snap, ctx);
    if (ctx.phase === 'first' && checked++ % 8 === 0 && (world.nodes[0]!.server as RecoveryAppServer).store.conn.entries().length > 0) {
      for (const applied of [true, false]) {
        const err = forged(world.nodes[0]!.region, applied);
        if (!(err instanceof RecoveryRefusedError)) problems.push({ kind: 'forged', detail: `forged ${applied ? 'applied' : 'unapplied'} record not refused: ${String(err)}` });
        else if (err.row !== (applied ? 'applied-out-of-order' : 'replay-out-of-order')) problems.push({ kind: 'forged', detail: `forged record refused by row ${err.row}` });
        else {
          add(err.rows);
          reached[err.row] = (reached[err.row] ?? 0) + 1;
          refused.push(err.row);
        }
      }
    }
    return problems;
  };
  const r = await explore(app, { seed: SEED, imagesPerPoint: 2, nested: false });
  t.same(r.violations, [], 'every forged record refused, by its row');
  t.ok(refused.length >= 16, `${refused.length} forged images refused`);
});

t.test('every decision-table row is reached by a crash test', async (t) => {
  t.comment(`rows reached: ${JSON.stringify(reached)}`);
  for (const row of DECISION_TABLE) t.ok((reached[row.id] ?? 0) > 0, `row ${row.id} (${row.action}) reached`);
});
