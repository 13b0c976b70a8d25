// The rpc app's digest log is a ring (src/apps/rpc/digest.ts): a node serves the demo workload for
// ever. Before, the handler threw "digest log full" once the application area was used up (a
// 16 MiB `pmrpc serve` after ≈ 1 M requests, seconds at full load) and every later call failed.
// Checked here: the handler's bytes and the reader's window, the real-crash verifier and the crash
// explorer's checks across a wrap (a crash test: without the ring the workload's calls fail), and
// that a ring too small to matter is still checked.
import t from 'tap';
import { digestHandler, digestLogCapacity, DIGEST_BYTES, LOG_BASE, readDigestLog } from '../../../src/apps/rpc/index.js';
import { verifyDigestLog, workloadPayload } from '../../../src/server/workload.js';
import { explore, rpcExplorerApp } from '../../../src/testing/crash/index.js';
import type { AppView } from '../../../recovery/index.js';

const SEED = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/apps/rpc/digest-ring.test.ts)`);

/** An application area in plain memory; the handler's images applied as the redo log would. */
function area(entries: number): { view: AppView; bytes: Uint8Array; apply: (clientId: number, seq: number) => void } {
  const bytes = new Uint8Array(LOG_BASE + entries * DIGEST_BYTES);
  const dv = new DataView(bytes.buffer);
  const view = {
    sizeBytes: bytes.length,
    loadU32: (off: number) => dv.getUint32(off, true),
    loadU64: (off: number) => dv.getBigUint64(off, true),
    load: (off: number, len: number) => bytes.slice(off, off + len),
  } satisfies AppView;
  const apply = (clientId: number, seq: number): void => {
    const out = digestHandler({ clientId, seq, payload: workloadPayload(SEED, clientId, seq) } as never, view) as { images: Array<{ offset: number; bytes: Uint8Array }> };
    for (const im of out.images) bytes.set(im.bytes, im.offset);
  };
  return { view, bytes, apply };
}

t.test('the handler writes request n to slot n mod capacity; the reader returns the last capacity digests', async (t) => {
  const { view, apply } = area(4);
  t.equal(digestLogCapacity(view.sizeBytes), 4);
  for (let s = 1; s <= 10; s++) apply(7, s);
  const log = readDigestLog(view);
  t.equal(log.counter, 10, 'the counter counts every request');
  t.equal(log.first, 6, 'the first 6 digests were overwritten');
  t.same(log.entries.map((e) => [e.clientId, e.seq, e.position]), [[7, 7, 6], [7, 8, 7], [7, 9, 8], [7, 10, 9]]);
  const v = verifyDigestLog(view, SEED, [{ clientId: 7, sentUpTo: 10, ackedUpTo: 10 }]);
  t.match(v, { applied: 10, evicted: 6, lost: 0, duplicates: 0, outOfOrder: 0, corrupt: 0, unapplied: 0 }, 'the verifier checks the window');
  const lost = verifyDigestLog(view, SEED, [{ clientId: 7, sentUpTo: 12, ackedUpTo: 12 }]);
  t.equal(lost.lost, 2, 'acknowledged requests after the window are still reported lost');
});

t.test('a corrupted position in the ring is still reported', async (t) => {
  const { view, bytes, apply } = area(4);
  for (let s = 1; s <= 6; s++) apply(1, s);
  // Request 4's slot (4 mod 4 = 0) claims position 0: the effects of two requests mixed.
  bytes.set([0, 0, 0, 0], LOG_BASE + 12);
  const v = verifyDigestLog(view, SEED, [{ clientId: 1, sentUpTo: 6, ackedUpTo: 6 }]);
  t.equal(v.corrupt, 1, v.messages.join('; '));
  t.match(v.messages[0], /digest 4 records position 0/);
});

t.test('crash explorer: a digest ring of 6 entries wraps under 40 requests; every crash image recovers with nothing lost', async (t) => {
  const r = await explore(rpcExplorerApp({ requests: 40, clients: 2, digestEntries: 6 }), { seed: SEED, imagesPerPoint: 2 });
  t.same(r.violations.map((v) => `${v.kind}: ${v.detail}`), [], `seed ${SEED}: ${r.imagesChecked} images (${r.nestedImagesChecked} nested), ${r.crashPoints} crash points`);
  t.ok(r.crashPoints > 0 && r.imagesChecked > 0, 'the explorer crashed the run');
});

t.test('crash explorer: digestEntries is validated', async (t) => {
  t.throws(() => rpcExplorerApp({ digestEntries: 0 }), new RangeError('digestEntries must be an integer in [1, 1000000], got 0'));
});
