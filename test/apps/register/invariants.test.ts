// Invariants of the replicated register's persistent state (DESIGN §10.1): a write installs a tag
// above every tag of its majority, one the cell word can carry (a 32-bit timestamp). The state is
// driven into the violation in PM (every node's cell at the largest timestamp, its record carrying
// the word); the write stops with PMRPC_ERR_INVARIANT before any record WRITE or CAS is posted:
// every node's block is unchanged. The correct protocol over ordinary tags passes the check.
import t from 'tap';
import { createPrng, isInvariantError, PmemRegion, seededEntropy, systemClock } from '../../../pmem/index.js';
import { InProcessFabric, QueuePair, Rnic } from '../../../flush/index.js';
import { blockBytes, encodeRecord, encodeWord, recordIndex, recordOffset, REGISTER_HEADER_BYTES, registerApp, RegisterClient, wordBytes, type RegisterAppServer } from '../../../src/apps/register/index.js';

const SEED = Number(process.env.PMRPC_SEED ?? 4242);
t.comment(`seed ${SEED}`);

function cluster(seed: number, nodes = 3) {
  const o = registerApp.resolveOptions({ registers: 2 });
  const regions: PmemRegion[] = [];
  const links: Array<{ qp: QueuePair; welcome: Uint8Array }> = [];
  const servers: RegisterAppServer[] = [];
  for (let i = 0; i < nodes; i++) {
    const region = PmemRegion.createInMemory(registerApp.minRegionBytes(o) + 64);
    registerApp.format(region, o);
    const nic = new Rnic(region, { entropy: seededEntropy(createPrng(seed + i)), drain: 'eager' });
    const s = registerApp.open({ region, nic, clock: systemClock, schedule: queueMicrotask, entropy: seededEntropy(createPrng(seed + 100 + i)) }, o) as RegisterAppServer;
    s.recover();
    const fabric = new InProcessFabric(nic, { delivery: 'seeded', seed: seed * 31 + i });
    const { qp, welcome } = s.accept(new Uint8Array(0));
    links.push({ qp: new QueuePair(fabric.connect(qp)), welcome });
    regions.push(region);
    servers.push(s);
  }
  return { regions, servers, client: RegisterClient.connect(links, 1), o };
}

t.test('a write past the largest timestamp stops before it writes a record or swaps a cell', async (t) => {
  const { regions, servers, client, o } = cluster(SEED);
  await client.write(0, 7n);
  const at = o.base + REGISTER_HEADER_BYTES; // register 0's block
  const len = blockBytes(servers[0]!.writers);
  // Every node's register 0 at timestamp 2^32 - 1 by writer 2, its record carrying the word.
  const word = encodeWord({ ts: 0xffff_ffffn, writer: 2n, record: recordIndex(2, 0) });
  for (const r of regions) {
    r.store(at + recordOffset(recordIndex(2, 0)), encodeRecord(9n, word));
    r.store(at, wordBytes(word));
    r.persist(at, len);
  }
  t.same(servers.map((s) => s.cell(0)?.ts), [0xffff_ffffn, 0xffff_ffffn, 0xffff_ffffn], 'every node holds the largest timestamp');
  const before = regions.map((r) => r.load(at, len));
  const e = await client.write(0, 8n).then(() => undefined, (x: unknown) => x);
  t.ok(isInvariantError(e), `PMRPC_ERR_INVARIANT: ${(e as Error | undefined)?.message}`);
  t.match((e as Error).message, /a write would take timestamp 4294967296/);
  t.same(regions.map((r) => r.load(at, len)), before, 'no node\'s block changed');
  t.equal(await client.read(0), 9n, 'a read still returns the value the cells hold');
});

t.test('the correct protocol passes the checks: writes and write-backs over ordinary tags', async (t) => {
  const { servers, client } = cluster(SEED + 1);
  for (let v = 1n; v <= 6n; v++) await client.write(1, v);
  t.equal(await client.read(1), 6n);
  t.equal(servers[0]!.cell(1)?.ts, 6n);
});
