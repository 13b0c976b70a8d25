// Invariants of the lock-based baseline's persistent state (DESIGN §10.1): a client installs on a
// replica only a version above the one its publish word holds, and one the word can hold (63 bits;
// past that it wraps to a small version readers take for an old one). The state is driven into
// the violation in PM (every replica's block published at the largest version, as memory corrupted
// under the protocol could leave it); the write stops with PMRPC_ERR_INVARIANT before its record
// WRITE is posted: the records and publish words are unchanged.
import t from 'tap';
import { isInvariantError } from '../../../pmem/index.js';
import { encodeLockLine, encodeRecord, lockOffset, slotOffset, startLocalRsLock, type RsLockAppServer } from '../../../src/apps/rslock/index.js';

const seed = Number(process.env.PMRPC_TEST_SEED ?? 11);
t.comment(`seed ${seed}`);
const MAX = (1n << 63n) - 1n;

for (const style of ['combined', 'paper'] as const) {
  t.test(`${style}: a write past the largest version stops before its record is written`, async (t) => {
    const cl = startLocalRsLock(3, { app: { blocks: 2, blockBytes: 64 }, seed, nic: { drain: 'eager' } });
    const c = cl.client(style === 'paper' ? { style: 'paper' } : {});
    await c.write(1, new Uint8Array(8).fill(1));
    const g = (cl.replicas[0] as RsLockAppServer).geometry;
    // Every replica's block 1 at the largest version: its record (valid) in slot 0, published.
    for (const r of cl.regions) {
      r.store(slotOffset(g, 1, 0), encodeRecord({ version: MAX, data: new Uint8Array(8).fill(2) }));
      r.store(lockOffset(g, 1), encodeLockLine({ version: MAX, slot: 0, locked: false }));
      r.persist(g.locksOffset, g.base + g.totalBytes - g.locksOffset);
    }
    const records = (): Uint8Array[] => cl.regions.map((r) => r.load(slotOffset(g, 1, 0), 2 * g.slotBytes));
    const publish = (): bigint[] => cl.regions.map((r) => r.loadU64(lockOffset(g, 1) + 8));
    const before = { records: records(), publish: publish() };
    t.same(cl.replicas.map((r) => r.block(1)?.version), [MAX, MAX, MAX], 'every replica publishes the largest version');
    const e = await c.write(1, new Uint8Array(8).fill(3)).then(() => undefined, (x: unknown) => x);
    t.ok(isInvariantError(e), `PMRPC_ERR_INVARIANT: ${(e as Error | undefined)?.message}`);
    t.match((e as Error).message, new RegExp(`would go from version ${MAX} to ${MAX + 1n}`));
    t.same(records(), before.records, 'no record slot written');
    t.same(publish(), before.publish, 'no publish word changed');
    await c.close().catch(() => undefined);
    cl.close();
  });
}

t.test('the correct protocol passes the check: writes from several clients, each a later version', async (t) => {
  const cl = startLocalRsLock(3, { app: { blocks: 2, blockBytes: 64 }, seed, nic: { drain: 'eager' } });
  const a = cl.client();
  const b = cl.client({ style: 'paper' });
  for (let i = 1; i <= 6; i++) await (i % 2 === 0 ? a : b).write(0, new Uint8Array(4).fill(i));
  t.equal(cl.replicas[0]!.block(0)?.version, 6n);
  t.same(await a.read(0), new Uint8Array(4).fill(6));
  await a.close();
  await b.close();
  cl.close();
});
