// Live reclamation's grace period (docs/tx.md "Live reclamation", table S, row S3): a superseded
// value goes back to the free list only once every chain that was on the NIC when it was retired
// has finished. A reader's chain that took the slot's pointer into its scratch (WR 0) and reads the
// item through it later in the chain (WR 1) is held between the two while a writer commits three
// times on an arena of three items. With the grace period the retired items wait for the reader: it
// reads the value its pointer named, and the writer's third commit finds the arena full
// (PMRPC_ERR_TX_ARENA_FULL, not SHARD_UNAVAILABLE); once the reader is done they come back and the
// writer commits again. The fault switch freeWithoutGrace frees them at once: the third commit
// reuses the item under the reader's pointer, and the reader reads another transaction's value.
import t from 'tap';
import { isInvariantError, PmemRegion } from '../../../pmem/index.js';
import { Wr } from '../../../flush/index.js';
import { nicConfigFor, World } from '../../../src/testing/crash/index.js';
import { POLL_BATCH_MIN_ITEMS } from '../../../src/apps/tx/server.js';
import { decodeItem, ITEM_BYTES, parseTxWelcome, type ShardConn, TxClient, TxErrorCodes, txApp, type TxAppServer, type TxFaults, type TxOutcome } from '../../../src/apps/tx/index.js';

const SEED = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/apps/tx/live-reclaim.test.ts)`);

interface Run {
  outcomes: TxOutcome[];
  readerTs: bigint | undefined;
  afterReader: TxOutcome;
  free: number;
}

async function run(faults: Partial<TxFaults>): Promise<Run> {
  const world = new World(nicConfigFor(SEED, { eviction: 0, ddio: true }), SEED);
  const o = txApp.resolveOptions({ shard: 0, shards: 1, keysPerShard: 1, clients: 2, items: 3, value: 'balance', faults });
  const region = PmemRegion.createInMemory(txApp.minRegionBytes(o) + 64, { tracing: false });
  txApp.format(region, o);
  const node = world.addNode(region, (host) => txApp.open(host, o));
  const server = node.server as TxAppServer;
  server.recover();
  const w = world.connect(0, new Uint8Array(0), 0);
  const conn = parseTxWelcome(w.qp, w.welcome);
  const tx = new TxClient(() => conn, { client: 0, incarnation: 1, clock: world.clock, faults, recordValues: false }); // the pointer path: ARENA_FULL is decided in round 1 (a carried value is ALLOCATEd after the commit point)
  const r = world.connect(0, new Uint8Array(0), 1);
  const rconn = parseTxWelcome(r.qp, r.welcome);
  const rqpn = (r.qp.link as unknown as { qpn: number }).qpn;
  // The reader: WR 0 copies the slot's pointer into scratch, WR 1 reads the item it names.
  const reading = r.qp.postChain([Wr.read({ rkey: rconn.rkey, addr: rconn.slots + 24 }, 8, { redirect: 0 }), Wr.read({ scratch: 0 }, ITEM_BYTES, { indirect: true, targetRkey: rconn.rkey })]);
  t.ok(node.nic.step(rqpn), 'the reader took the pointer (WR 0)');
  world.chooser = (cs) => Math.max(0, cs.findIndex((c) => c.qpn !== rqpn)); // the reader is held
  const commit = async (v: bigint): Promise<TxOutcome> => {
    const p = (async () => {
      await tx.begin();
      await tx.read(0);
      const b = new Uint8Array(8);
      new DataView(b.buffer).setBigInt64(0, v, true);
      await tx.write(0, b);
      const o = await tx.commit();
      await tx.settled(); // round 2 runs after commit() reports
      return o;
    })();
    const s = await world.settle(p, 200_000);
    if (s.failed) throw s.error;
    await world.run(() => node.cpu.length === 0, 10_000); // the CPU's passes (the reader's chain is still on the NIC)
    server.sweep();
    return p;
  };
  const outcomes = [await commit(1n), await commit(2n), await commit(3n)];
  world.chooser = undefined;
  const s = await world.settle(reading, 200_000);
  if (s.failed) throw s.error;
  const cs = await reading;
  const item = cs[1]?.data === undefined ? undefined : decodeItem(cs[1].data);
  await world.run(() => node.cpu.length === 0, 10_000);
  server.sweep(); // the reader finished: its grace period is over
  const afterReader = await commit(4n);
  return { outcomes, readerTs: item?.ts, afterReader, free: server.freeItems().length };
}

t.test('with the grace period the reader reads the value its pointer named; the arena is full meanwhile', async (t) => {
  const r = await run({});
  t.comment(JSON.stringify(r, (_, v) => (typeof v === 'bigint' ? v.toString() : v)));
  t.same(r.outcomes.map((o) => o.status), ['committed', 'committed', 'aborted'], 'two commits, then the arena is full');
  t.equal(r.outcomes[2]!.code, TxErrorCodes.ARENA_FULL, 'the full arena has its own code');
  t.equal(r.readerTs, 0n, 'the reader read the initial value (ts 0) its pointer named');
  t.equal(r.afterReader.status, 'committed', 'once the reader finished, the retired items came back and a commit goes through');
});

t.test('the mutant freeWithoutGrace: the item under the reader pointer is reused', async (t) => {
  const r = await run({ freeWithoutGrace: true });
  t.comment(JSON.stringify(r, (_, v) => (typeof v === 'bigint' ? v.toString() : v)));
  t.same(r.outcomes.map((o) => o.status), ['committed', 'committed', 'committed'], 'the third commit reused a retired item');
  t.not(r.readerTs, 0n, `the reader read another transaction's value (ts ${String(r.readerTs)}), not the one its pointer named`);
});

// Table S, row S2: the CPU persists a slot's new pointer before it retires the superseded item. An
// installer is held right after its install CAS (drained at once: drain eager), before its chain's
// FLUSH; the CPU retires the old item and — the grace period switched off in both runs
// (freeWithoutGrace), so that only the persist step is compared — frees it; another client's commit
// on the other key takes it and makes it durable. Then a crash that keeps only what is durable.
// With the CPU's persist, recovery finds slot 0 on the installer's new item (its record PREPARED:
// R1 settles CT) and the audit is clean; with freeWithoutPersist slot 0 still points at the old
// item, now the other key's value: the item is reached twice and does not match its slot.
async function crashAfterReuse(faults: Partial<TxFaults>): Promise<{ audit: string[]; second: TxOutcome }> {
  const world = new World(nicConfigFor(SEED, { eviction: 0, ddio: true, drain: 'eager' }), SEED);
  const o = txApp.resolveOptions({ shard: 0, shards: 1, keysPerShard: 2, clients: 2, items: 3, value: 'balance', faults });
  const region = PmemRegion.createInMemory(txApp.minRegionBytes(o) + 64, { tracing: true });
  txApp.format(region, o);
  const node = world.addNode(region, (host) => txApp.open(host, o));
  const server = node.server as TxAppServer;
  server.recover();
  const clientOf = (c: number): { tx: TxClient; qpn: number } => {
    const w = world.connect(0, new Uint8Array(0), c);
    const conn: ShardConn = parseTxWelcome(w.qp, w.welcome);
    return { tx: new TxClient(() => conn, { client: c, incarnation: 1, clock: world.clock, faults, recordValues: false }), qpn: (w.qp.link as unknown as { qpn: number }).qpn };
  };
  const a = clientOf(0);
  const b = clientOf(1);
  let installed = false;
  world.chooser = (cs) => {
    const i = cs.findIndex((c) => !(installed && c.qpn === a.qpn));
    const c = cs[Math.max(0, i)]!;
    const next = c.qpn === a.qpn ? node.nic.peekWr(a.qpn)?.wr : undefined;
    if (next?.op === 'prismCas' && next.mode === 'eq') installed = true; // the install runs now; a is held after it
    return Math.max(0, i);
  };
  const transfer = async (tx: TxClient, key: number, v: bigint): Promise<TxOutcome> => {
    await tx.begin();
    await tx.read(key);
    const buf = new Uint8Array(8);
    new DataView(buf.buffer).setBigInt64(0, v, true);
    await tx.write(key, buf);
    return tx.commit();
  };
  void transfer(a.tx, 0, 1n).catch(() => undefined);
  await world.run(() => installed && node.cpu.length === 0, 200_000);
  server.sweep();
  const second = transfer(b.tx, 1, 2n);
  const s = await world.settle(second, 200_000);
  if (s.failed) throw s.error;
  // A crash: only what is durable survives (no pending line, no undrained NIC write).
  const image = PmemRegion.openImage(region.crashState().media, { tracing: false });
  const w2 = new World(nicConfigFor(SEED, { eviction: 0, ddio: true }), SEED);
  const recovered = w2.addNode(image, (host) => txApp.open(host, o)).server as TxAppServer;
  // A recovery that would store a slot naming another key's item stops on the invariant (docs/tx.md "Invariants").
  try {
    recovered.recover();
  } catch (e) {
    if (!isInvariantError(e)) throw e;
    return { audit: [`invariant: ${e.message}`], second: await second };
  }
  return { audit: recovered.audit().map((p) => `${p.kind}: ${p.detail}`), second: await second };
}

t.test('the CPU persists the new pointer before it retires the old item: a crash after its reuse recovers clean', async (t) => {
  const r = await crashAfterReuse({ freeWithoutGrace: true });
  t.equal(r.second.status, 'committed', 'the other client committed on the reused item');
  t.same(r.audit, [], 'the recovered shard audits clean');
});

t.test('the mutant freeWithoutPersist: the old pointer comes back over a reused item', async (t) => {
  const r = await crashAfterReuse({ freeWithoutGrace: true, freeWithoutPersist: true });
  t.equal(r.second.status, 'committed', 'the other client committed on the reused item');
  t.ok(r.audit.length > 0, `the recovered shard's audit (or recovery's invariant): ${r.audit.join('; ')}`);
});

// The same persist step on an arena where the poll is batched (POLL_BATCH_MIN_ITEMS items: the
// install's drained pointer is logged and wakes no pass). The installer is held right after its
// install CAS, before its chain's FLUSH; a sweep by hand works from the log: it persists the slot,
// retires the old item and — no grace period (freeWithoutGrace) — gives it back at once. Then a
// crash that keeps only what is durable: the recovered slot must not name an item the live shard
// had put on its free list (with freeWithoutPersist it names the old one).
async function crashAfterBatchedReturn(faults: Partial<TxFaults>): Promise<{ wakes: number; superseded: number; slotPtr: number; oldPtr: number; freedOld: boolean }> {
  const world = new World(nicConfigFor(SEED, { eviction: 0, ddio: true, drain: 'eager' }), SEED);
  const o = txApp.resolveOptions({ shard: 0, shards: 1, keysPerShard: 2, clients: 1, items: POLL_BATCH_MIN_ITEMS, value: 'balance', faults });
  const region = PmemRegion.createInMemory(txApp.minRegionBytes(o) + 64, { tracing: true });
  txApp.format(region, o);
  const node = world.addNode(region, (host) => txApp.open(host, o));
  const server = node.server as TxAppServer;
  server.recover();
  const oldPtr = server.slot(0).ptr;
  const w = world.connect(0, new Uint8Array(0), 0);
  const conn: ShardConn = parseTxWelcome(w.qp, w.welcome);
  const qpn = (w.qp.link as unknown as { qpn: number }).qpn;
  const tx = new TxClient(() => conn, { client: 0, incarnation: 1, clock: world.clock, faults });
  let installed = false;
  world.chooser = (cs) => {
    const i = cs.findIndex((c) => !(installed && c.qpn === qpn));
    const c = cs[Math.max(0, i)]!;
    const next = c.qpn === qpn ? node.nic.peekWr(qpn)?.wr : undefined;
    if (next?.op === 'prismCas' && next.mode === 'eq') installed = true; // the install runs now; the client is held after it
    return Math.max(0, i);
  };
  void (async () => {
    await tx.begin();
    await tx.read(0);
    const buf = new Uint8Array(8);
    new DataView(buf.buffer).setBigInt64(0, 7n, true);
    await tx.write(0, buf);
    return tx.commit();
  })().catch(() => undefined);
  await world.run(() => installed && server.slot(0).ptr !== oldPtr && node.cpu.length === 0, 200_000);
  const wakes = server.sweepStats.wakes;
  server.sweep();
  const freedOld = server.freeItems().includes(oldPtr);
  const image = PmemRegion.openImage(region.crashState().media, { tracing: false });
  const w2 = new World(nicConfigFor(SEED, { eviction: 0, ddio: true }), SEED);
  const recovered = w2.addNode(image, (host) => txApp.open(host, o)).server as TxAppServer;
  return { wakes, superseded: server.sweepStats.superseded, slotPtr: recovered.slot(0).ptr, oldPtr, freedOld };
}

t.test('a batched poll: the sweep persists the logged pointer before the old item goes back (a crash then keeps the new pointer)', async (t) => {
  const r = await crashAfterBatchedReturn({ freeWithoutGrace: true });
  t.equal(r.wakes, 0, 'the install woke no pass (the poll is batched on this arena)');
  t.equal(r.superseded, 1, 'the sweep by hand retired the old value from the log');
  t.ok(r.freedOld, 'the old item went back to the free list');
  t.not(r.slotPtr, r.oldPtr, `the recovered slot names the new item (${r.slotPtr}), not the one given back (${r.oldPtr})`);
});

t.test('a batched poll, the mutant freeWithoutPersist: the crash brings back the pointer to the item given back', async (t) => {
  const r = await crashAfterBatchedReturn({ freeWithoutGrace: true, freeWithoutPersist: true });
  t.equal(r.wakes, 0, 'the install woke no pass');
  t.ok(r.freedOld, 'the old item went back to the free list');
  t.equal(r.slotPtr, r.oldPtr, 'the recovered slot names the item the live shard had given back');
});
