// Invariants of the Pilaf baseline's persistent state (DESIGN §10.1), checked where its server CPU
// changes it: the entry a PUT or DELETE replaces names a buffer of the arena that is not on a free
// list; entry versions only grow; a buffer is freed once. Each case puts the index into a state the
// server never writes (a stray store in PM under a running server) and asserts PMRPC_ERR_INVARIANT
// with the area's bytes unchanged; the same requests over the correct state succeed.
import t, { type Test } from 'tap';
import { createPrng, isInvariantError, PmemRegion, seededEntropy } from '../../../pmem/index.js';
import { CpuPoller, InProcessFabric, QueuePair, Rnic, type InProcessLink } from '../../../flush/index.js';
import { PilafClient, PilafServer, type KvLayoutOptions } from '../../../src/apps/kv/index.js';
import { decodePilafEntry, encodePilafEntry } from '../../../src/apps/pilaf/layout.js';
import { encodeItem, homeSlot, slotOffset, SLOT_BYTES } from '../../../src/apps/shared/index.js';

const te = new TextEncoder();
const td = new TextDecoder();
const settle = (): Promise<void> => new Promise((r) => setImmediate(r));
const LAYOUT: Partial<KvLayoutOptions> = { slotCount: 16, probeSlots: 4, keyBytesMax: 16, classes: [{ sizeBytes: 64, count: 8 }], mailboxBuffers: 8 };

async function setup(t: Test) {
  const region = PmemRegion.createInMemory(32 * 1024, { entropy: seededEntropy(createPrng(1)) });
  PilafServer.format(region, LAYOUT);
  const nic = new Rnic(region, { drain: 'eager', entropy: seededEntropy(createPrng(2)) });
  const fabric = new InProcessFabric(nic, { delivery: 'seeded', seed: 1, autoRun: false, idleDrain: false });
  // The server's CPU passes run when the test says, so that one that throws is seen here (as a
  // process stops on it) instead of in a microtask.
  const passes: Array<() => void> = [];
  const poller = new CpuPoller(nic, { schedule: (fn) => passes.push(fn) });
  const server = PilafServer.open(region, nic, { poller });
  const cpu = (): void => {
    while (passes.length > 0) passes.shift()!();
  };
  const sqp = server.accept();
  const pc = PilafClient.connect(new QueuePair(fabric.connect(sqp)), server.address);
  nic.runQp(sqp.qpn);
  await settle();
  cpu();
  const client = await pc;
  const qpn = (client.qp.link as InProcessLink).qpn;
  /** Runs an operation to its end; the server's CPU pass throws out of the NIC's run (its process stops). */
  const run = async <T>(p: Promise<T>): Promise<T | Error> => {
    let done = false;
    const q = p.finally(() => (done = true));
    q.catch(() => undefined);
    for (let i = 0; i < 64 && !done; i++) {
      try {
        nic.runQp(qpn);
        cpu();
      } catch (e) {
        return e as Error;
      }
      await settle();
    }
    t.ok(done, 'the operation finished');
    return q;
  };
  const g = server.geometry;
  const area = (): Uint8Array => region.load(g.base, g.mailboxOffset - g.base);
  t.teardown(() => {
    server.close();
    poller.close();
  });
  return { region, server, client, run, g, area };
}

t.test('a PUT over an entry that names a buffer on the free list stops before writing', async (t) => {
  const { region, client, run, g, area } = await setup(t);
  t.equal(await run(client.put('k', te.encode('v1'))), undefined, 'the first PUT');
  const home = homeSlot(g, te.encode('k'));
  const e = decodePilafEntry(region.load(slotOffset(g, home), SLOT_BYTES));
  if (e === 'empty' || e === undefined) throw new Error('no entry');
  // A stray store: k's entry now names a free buffer holding a valid item of k.
  const stray = g.classes[0]!.offset + (e.ptr === g.classes[0]!.offset ? 64 : 0);
  region.store(stray, encodeItem({ key: te.encode('k'), value: te.encode('vX'), version: BigInt(e.version), tombstone: false }));
  region.store(slotOffset(g, home), encodePilafEntry({ ptr: stray, len: e.len, version: e.version }));
  region.persist(g.base, g.mailboxOffset - g.base);
  const before = area();
  const err = await run(client.put('k', te.encode('v2')));
  t.ok(isInvariantError(err), `PMRPC_ERR_INVARIANT: ${(err as Error).message}`);
  t.match((err as Error).message, /names buffer \d+, which is on the free list/);
  t.same(area(), before, 'the area is unchanged: no item written, no entry published');
});

t.test('a PUT or DELETE over an entry of a later version stops before writing (versions only grow)', async (t) => {
  for (const op of ['put', 'delete'] as const) {
    const { region, client, run, g, area } = await setup(t);
    t.equal(await run(client.put('k', te.encode('v1'))), undefined, 'the first PUT');
    const home = homeSlot(g, te.encode('k'));
    const e = decodePilafEntry(region.load(slotOffset(g, home), SLOT_BYTES));
    if (e === 'empty' || e === undefined) throw new Error('no entry');
    // A stray store: the entry and its item now carry a version the server never gave.
    region.store(e.ptr, encodeItem({ key: te.encode('k'), value: te.encode('v1'), version: 1000n, tombstone: false }));
    region.store(slotOffset(g, home), encodePilafEntry({ ...e, version: 1000 }));
    const before = area();
    const err = await run(op === 'put' ? client.put('k', te.encode('v2')) : client.delete('k'));
    t.ok(isInvariantError(err), `${op}: PMRPC_ERR_INVARIANT: ${(err as Error).message}`);
    t.match((err as Error).message, /would go from version 1000 to 2/);
    t.same(area(), before, `${op}: the area is unchanged`);
  }
});

t.test('an entry that names no buffer of the arena stops a PUT before writing', async (t) => {
  const { region, client, run, g, area } = await setup(t);
  t.equal(await run(client.put('k', te.encode('v1'))), undefined, 'the first PUT');
  const home = homeSlot(g, te.encode('k'));
  const e = decodePilafEntry(region.load(slotOffset(g, home), SLOT_BYTES));
  if (e === 'empty' || e === undefined) throw new Error('no entry');
  // A stray store: a copy of k's item inside the header's line, and the entry pointing there.
  const off = g.base + 256;
  region.store(off, encodeItem({ key: te.encode('k'), value: te.encode('v1'), version: BigInt(e.version), tombstone: false }));
  region.store(slotOffset(g, home), encodePilafEntry({ ...e, ptr: off }));
  const before = area();
  const err = await run(client.put('k', te.encode('v2')));
  t.ok(isInvariantError(err), `PMRPC_ERR_INVARIANT: ${(err as Error).message}`);
  t.match((err as Error).message, /not an item of a buffer of the arena/);
  t.same(area(), before, 'the area is unchanged');
});

t.test('the correct protocol passes its checks: updates, deletes and reuse of every buffer', async (t) => {
  const { client, run } = await setup(t);
  for (let r = 0; r < 4; r++) {
    for (const k of ['a', 'b', 'c', 'd']) t.equal(await run(client.put(k, te.encode(`${k}${r}`))), undefined);
    t.equal(await run(client.delete('b')), undefined);
  }
  const got = await run(client.get('c'));
  t.equal(got instanceof Uint8Array ? td.decode(got) : got, 'c3');
  t.equal(await run(client.get('b')), undefined, 'b deleted');
});
