// Group commit in the NIC loop (flush/driver.ts) on a strict file region: the FLUSHes of one pass
// share one msync, except a FLUSH inside a chain, which is an ordering point — the object is on
// the disk before the pointer written after it can be (PRISM: WRITE obj, FLUSH, WRITE ptr, FLUSH).
// A recording msync shim (what a machine crash keeps: only synced ranges, any subset of one msync's
// pages) checks that the pointer's bytes never reach the disk in the same msync as, or before, the
// object's; the fault switch skipChainSync makes it fail.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPrng, macrotaskTurn, PmemRegion, seededEntropy, HEADER_BYTES, type MsyncFn } from '../../pmem/index.js';
import { Access, InProcessFabric, QueuePair, Rnic, Wr, type DeliveryMode, type NicDriverFaults } from '../../flush/index.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/flush/strict-chain.test.ts)`);

const OBJ = 4096; // the object, one page
const PTR = 3 * 4096; // the pointer, another page

async function chain(t: Tap.Test, delivery: DeliveryMode, faults?: NicDriverFaults) {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-strict-chain-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const msyncs: Array<[number, number]> = [];
  const msync: MsyncFn = (_m, off, len) => void msyncs.push([off - HEADER_BYTES, off - HEADER_BYTES + len]);
  const region = PmemRegion.create(join(dir, 'r.pm'), 1 << 16, { strict: true, msync, entropy: seededEntropy(createPrng(SEED)) });
  t.teardown(() => region.close({ writeBack: false }));
  const nic = new Rnic(region, { entropy: seededEntropy(createPrng(SEED + 1)) });
  const fabric = new InProcessFabric(nic, { delivery, seed: SEED + 2, ...(faults === undefined ? {} : { faults }) });
  const pd = nic.allocPd();
  const mr = nic.registerMr(pd, 0, 1 << 16, Access.ALL);
  const qp = new QueuePair(fabric.connect(nic.createQp(pd)));
  const qp2 = new QueuePair(fabric.connect(nic.createQp(pd)));
  const rk = mr.rkey;
  // Two messages in one pass: a PRISM-like chain, and another client's WRITE + FLUSH elsewhere.
  const done = Promise.all([
    qp.postChain([
      Wr.write({ rkey: rk, addr: OBJ }, new Uint8Array(64).fill(7)),
      Wr.flush('persistent', rk, { addr: OBJ, len: 64 }),
      Wr.write({ rkey: rk, addr: PTR }, new Uint8Array(8).fill(9)),
      Wr.flush('persistent', rk, { addr: PTR, len: 8 }),
    ]),
    qp2.postChain([Wr.write({ rkey: rk, addr: 8 * 4096 }, new Uint8Array(64).fill(5)), Wr.flush('persistent', rk, { addr: 8 * 4096, len: 64 })]),
  ]);
  for (let i = 0; i < 50 && msyncs.length === 0; i++) await macrotaskTurn();
  const [cs, cs2] = await done;
  t.ok([...cs, ...cs2].every((c) => c.status === 'ok'), 'every work request ok');
  const covers = (m: [number, number], at: number): boolean => m[0] <= at && at < m[1];
  const firstObj = msyncs.findIndex((m) => covers(m, OBJ));
  const firstPtr = msyncs.findIndex((m) => covers(m, PTR));
  return { msyncs, firstObj, firstPtr };
}

for (const delivery of ['immediate', 'seeded'] as const) {
  t.test(`${delivery}: a FLUSH inside a chain syncs before the chain goes on; the pass's last FLUSHes share one msync`, async (t) => {
    const r = await chain(t, delivery);
    t.ok(r.firstObj >= 0 && r.firstPtr >= 0, `object and pointer synced (msyncs ${JSON.stringify(r.msyncs)})`);
    t.ok(r.firstObj < r.firstPtr, 'the object reached the disk in an earlier msync than the pointer');
    t.equal(r.msyncs.length, 2, 'two msyncs for three FLUSHes: the ordering point, then the pass');
  });

  t.test(`${delivery}: the fault switch skipChainSync makes the same check fail`, async (t) => {
    const r = await chain(t, delivery, { skipChainSync: true });
    t.ok(!(r.firstObj >= 0 && r.firstObj < r.firstPtr), `caught: object msync #${r.firstObj}, pointer msync #${r.firstPtr} (${JSON.stringify(r.msyncs)})`);
  });
}
