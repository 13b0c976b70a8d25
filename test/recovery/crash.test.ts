// Crash tests of recovery/ (DESIGN §8): every crash point of a small workload, its images
// recovered in fresh regions, each crashed once more during its own recovery, resumed and
// reopened; zero violations. Forged images (a crash image, recovered, then given a record the
// protocol cannot produce) reach the 'refuse' rows. Together every decision-table row is reached.
import t from 'tap';
import { crashImages, materialize, PmemRegion } from '../../pmem/index.js';
import {
  DECISION_TABLE,
  encodeEntry,
  encodeRecord,
  RecoveryRefusedError,
  RecoveryStore,
} from '../../recovery/index.js';
import { CrashHarness, digestHandler, SEED } from './fixtures/harness.js';

const SEEDS = [SEED, SEED + 1, SEED + 2];
const reached: Record<string, number> = {};
const add = (rows: Record<string, number>): void => {
  for (const [k, v] of Object.entries(rows)) reached[k] = (reached[k] ?? 0) + v;
};

for (const seed of SEEDS) {
  t.test(`crash test, seed ${seed}: no violations`, async (t) => {
    const r = new CrashHarness({ seed, requestsPerClient: 12, imagesPerPoint: 6, exhaustiveMax: 16 }).run();
    t.comment(`seed ${r.seed} (replay: PMRPC_SEED=${r.seed} npx tap test/recovery/crash.test.ts): ${r.crashPoints} crash points, ${r.imagesChecked} images + ${r.nestedImagesChecked} crashed again during recovery, ${r.seconds.toFixed(1)} s`);
    t.comment(`rows: ${JSON.stringify(r.rows)}`);
    t.same(r.violations, [], 'no violations');
    t.equal(r.finalApplied, 36, 'every request processed');
    t.ok(r.nestedImagesChecked > 0, 'recoveries crashed during themselves');
    add(r.rows);
  });
}

function fork(region: PmemRegion): PmemRegion {
  const st = region.crashState();
  return PmemRegion.openImage(materialize(st, [...crashImages(st, { engine: 'all' })][0]!), { tracing: true });
}

/** Recovers a crash image, then forges a log record for (client, applied + 2) with a durable entry at applied + 1. */
function forged(image: Uint8Array, applied: boolean): { err: unknown } {
  const region = PmemRegion.openImage(image, { tracing: true });
  const store = RecoveryStore.open(region);
  store.recover(digestHandler);
  const c = store.conn.entries()[0]!;
  const a = c.appliedSeq;
  const off = store.entryOffset(c.clientId, a + 1);
  region.store(off, encodeEntry({ clientId: c.clientId, seq: a + 1, methodId: 1, payload: new Uint8Array(16).fill(7) }, store.geometry));
  region.persist(off, store.geometry.slotBytes);
  const lsn = store.log.nextLsn;
  const index = (lsn - 1) % store.geometry.logRecords;
  const roff = store.layout.recordOffset(index);
  const rec = encodeRecord(lsn, c.clientId, a + 2, { images: [{ offset: 0, bytes: new Uint8Array(8) }] });
  region.store(roff + 8, rec.subarray(8));
  if (applied) region.storeU64(roff, BigInt(lsn));
  region.persist(roff, rec.length);
  const again = RecoveryStore.open(fork(region));
  try {
    again.recover(digestHandler);
    return { err: undefined };
  } catch (err) {
    return { err };
  }
}

t.test('forged crash images reach the refuse rows', async (t) => {
  const h = new CrashHarness({ seed: SEED });
  const { states } = h.runWorkload();
  let checked = 0;
  for (let i = 0; i < states.length; i += Math.max(1, Math.floor(states.length / 8))) {
    const { state } = states[i]!;
    for (const img of crashImages(state, { engine: 'random', seed: SEED + i, count: 2 })) {
      for (const applied of [true, false]) {
        const { err } = forged(materialize(state, img), applied);
        t.ok(err instanceof RecoveryRefusedError, `crash point ${i} image ${img.index}: forged ${applied ? 'applied' : 'unapplied'} record refused`);
        if (err instanceof RecoveryRefusedError) {
          t.equal(err.code, 'PMRPC_ERR_RECOVERY_REFUSED');
          t.equal(err.row, applied ? 'applied-out-of-order' : 'replay-out-of-order');
          add(err.rows);
          reached[err.row!] = (reached[err.row!] ?? 0) + 1;
        }
        checked++;
      }
    }
  }
  t.ok(checked >= 16, `${checked} forged images`);
});

t.test('every decision-table row is reached by a crash test', async (t) => {
  t.comment(`rows reached: ${JSON.stringify(reached)}`);
  for (const row of DECISION_TABLE) t.ok((reached[row.id] ?? 0) > 0, `row ${row.id} (${row.action}) reached`);
});
