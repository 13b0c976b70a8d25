// Every protection violation: the exact code, the QP moves to the error state (the next request is
// flushed), and no memory changes — visible memory, media, the NIC cache, the free lists.
import t from 'tap';
import { Access, InProcessFabric, QueuePair, Rnic, Wr, u64le, type MemoryRegion, type WorkRequest } from '../../flush/index.js';
import { createPrng, PmemRegion, seededEntropy } from '../../pmem/index.js';

const SIZE = 1 << 16;

interface World {
  region: PmemRegion;
  nic: Rnic;
  qp: QueuePair;
  all: MemoryRegion;
  ro: MemoryRegion;
  wo: MemoryRegion;
  none: MemoryRegion;
  fg: MemoryRegion;
  other: MemoryRegion;
  dereg: MemoryRegion;
  sqp: ReturnType<Rnic['createQp']>;
  fabric: InProcessFabric;
}

function world(): World {
  const region = PmemRegion.createInMemory(SIZE, { tracing: true, entropy: seededEntropy(createPrng(3)) });
  const nic = new Rnic(region, { entropy: seededEntropy(createPrng(4)), drain: 'onFlush' });
  const fabric = new InProcessFabric(nic, { idleDrain: false });
  const pd = nic.allocPd();
  const all = nic.registerMr(pd, 0, 32768, Access.ALL);
  const ro = nic.registerMr(pd, 32768, 4096, Access.REMOTE_READ);
  const wo = nic.registerMr(pd, 36864, 4096, Access.REMOTE_WRITE);
  const none = nic.registerMr(pd, 40960, 4096, 0);
  const fg = nic.registerMr(pd, 49152, 4096, Access.FLUSH_GLOBAL | Access.REMOTE_WRITE);
  const other = nic.registerMr(nic.allocPd(), 45056, 4096, Access.ALL);
  const dereg = nic.registerMr(pd, 53248, 4096, Access.ALL);
  nic.deregisterMr(dereg);
  // Pointers the indirect cases dereference, stored by the CPU and persisted.
  region.store(512, u64le(60000)); // outside every MR of pd
  region.store(520, u64le(32768 + 64)); // inside ro
  region.store(528, u64le(2n ** 63n)); // beyond any address
  region.store(536, u64le(1024)); // fine
  region.store(544, u64le(1024));
  region.store(552, u64le(8)); // ⟨1024, 8⟩
  region.store(36864, u64le(1024)); // a pointer inside wo: not readable
  region.persist(0, SIZE);
  const sqp = nic.createQp(pd);
  nic.postFreeBuffers(all, 64, [4096, 4160]);
  return { region, nic, qp: new QueuePair(fabric.connect(sqp)), all, ro, wo, none, fg, other, dereg, sqp, fabric };
}

const d8 = new Uint8Array(8).fill(0xee);

const cases: Array<[string, string, (w: World) => WorkRequest, ((w: World) => void)?]> = [
  ['write: unknown rkey', 'PMRPC_ERR_BAD_RKEY', (w) => Wr.write({ rkey: (w.all.rkey ^ 0x5555) >>> 0, addr: 0 }, d8)],
  ['write: rkey of another PD', 'PMRPC_ERR_BAD_RKEY', (w) => Wr.write({ rkey: w.other.rkey, addr: 45056 }, d8)],
  ['write: deregistered MR', 'PMRPC_ERR_BAD_RKEY', (w) => Wr.write({ rkey: w.dereg.rkey, addr: 53248 }, d8)],
  ['write: crosses the MR end', 'PMRPC_ERR_OUT_OF_BOUNDS', (w) => Wr.write({ rkey: w.all.rkey, addr: 32760 }, new Uint8Array(16))],
  ['write: starts before the MR', 'PMRPC_ERR_OUT_OF_BOUNDS', (w) => Wr.write({ rkey: w.wo.rkey, addr: 36860 }, d8)],
  ['write: no REMOTE_WRITE', 'PMRPC_ERR_ACCESS', (w) => Wr.write({ rkey: w.ro.rkey, addr: 32768 }, d8)],
  ['writeImm: no REMOTE_WRITE', 'PMRPC_ERR_ACCESS', (w) => Wr.writeImm({ rkey: w.ro.rkey, addr: 32768 }, d8, 1)],
  ['writeImm: no posted receive', 'PMRPC_ERR_NO_RECV', (w) => Wr.writeImm({ rkey: w.all.rkey, addr: 0 }, d8, 1)],
  ['read: no REMOTE_READ', 'PMRPC_ERR_ACCESS', (w) => Wr.read({ rkey: w.wo.rkey, addr: 36864 }, 8)],
  ['read: out of the MR', 'PMRPC_ERR_OUT_OF_BOUNDS', (w) => Wr.read({ rkey: w.ro.rkey, addr: 36860 }, 8)],
  ['read: unknown rkey', 'PMRPC_ERR_BAD_RKEY', () => Wr.read({ rkey: 7, addr: 0 }, 8)],
  ['send: no posted receive', 'PMRPC_ERR_NO_RECV', () => Wr.send(d8)],
  ['send: receive buffer too small', 'PMRPC_ERR_RECV_TOO_SMALL', () => Wr.send(new Uint8Array(64)), (w) => w.sqp.postRecv({ id: 0, addr: 2048, len: 32 })],
  ['cas: no REMOTE_ATOMIC', 'PMRPC_ERR_ACCESS', (w) => Wr.cas({ rkey: w.ro.rkey, addr: 32768 }, 0n, 1n)],
  ['cas: misaligned', 'PMRPC_ERR_MISALIGNED', (w) => Wr.cas({ rkey: w.all.rkey, addr: 4 }, 0n, 1n)],
  ['cas: out of the MR', 'PMRPC_ERR_OUT_OF_BOUNDS', (w) => Wr.cas({ rkey: w.all.rkey, addr: 32768 }, 0n, 1n)],
  ['faa: no REMOTE_ATOMIC', 'PMRPC_ERR_ACCESS', (w) => Wr.faa({ rkey: w.wo.rkey, addr: 36864 }, 1n)],
  ['faa: misaligned', 'PMRPC_ERR_MISALIGNED', (w) => Wr.faa({ rkey: w.all.rkey, addr: 12 }, 1n)],
  ['atomicWrite: no REMOTE_WRITE', 'PMRPC_ERR_ACCESS', (w) => Wr.atomicWrite({ rkey: w.ro.rkey, addr: 32768 }, 1n)],
  ['atomicWrite: misaligned', 'PMRPC_ERR_MISALIGNED', (w) => Wr.atomicWrite({ rkey: w.all.rkey, addr: 3 }, 1n)],
  ['flush global: no FLUSH_GLOBAL', 'PMRPC_ERR_ACCESS', (w) => Wr.flush('global', w.none.rkey, { addr: 40960, len: 8 })],
  ['flush persistent: only FLUSH_GLOBAL', 'PMRPC_ERR_ACCESS', (w) => Wr.flush('persistent', w.fg.rkey, { addr: 49152, len: 8 })],
  ['flush persistent mr: only FLUSH_GLOBAL', 'PMRPC_ERR_ACCESS', (w) => Wr.flush('persistent', w.fg.rkey)],
  ['flush: range out of the MR', 'PMRPC_ERR_OUT_OF_BOUNDS', (w) => Wr.flush('persistent', w.all.rkey, { addr: 32000, len: 1024 })],
  ['flush: unknown rkey', 'PMRPC_ERR_BAD_RKEY', () => Wr.flush('global', 99)],
  ['indirect write: pointer word not readable', 'PMRPC_ERR_ACCESS', (w) => Wr.write({ rkey: w.wo.rkey, addr: 36864 }, d8, { indirect: true, targetRkey: w.all.rkey })],
  ['indirect write: pointer outside the MR', 'PMRPC_ERR_OUT_OF_BOUNDS', (w) => Wr.write({ rkey: w.all.rkey, addr: 512 }, d8, { indirect: true })],
  ['indirect write: pointer beyond any address', 'PMRPC_ERR_OUT_OF_BOUNDS', (w) => Wr.write({ rkey: w.all.rkey, addr: 528 }, d8, { indirect: true })],
  ['indirect write: target MR without REMOTE_WRITE', 'PMRPC_ERR_ACCESS', (w) => Wr.write({ rkey: w.all.rkey, addr: 520 }, d8, { indirect: true, targetRkey: w.ro.rkey })],
  ['indirect write: target rkey unknown', 'PMRPC_ERR_BAD_RKEY', (w) => Wr.write({ rkey: w.all.rkey, addr: 536 }, d8, { indirect: true, targetRkey: 5 })],
  ['bounded write: longer than the bound', 'PMRPC_ERR_BOUND_EXCEEDED', (w) => Wr.write({ rkey: w.all.rkey, addr: 544 }, new Uint8Array(9), { bounded: true })],
  ['indirect read: pointer outside the MR', 'PMRPC_ERR_OUT_OF_BOUNDS', (w) => Wr.read({ rkey: w.all.rkey, addr: 512 }, 8, { indirect: true })],
  ['indirect read: pointer word out of the MR', 'PMRPC_ERR_OUT_OF_BOUNDS', (w) => Wr.read({ rkey: w.all.rkey, addr: 32764 }, 8, { indirect: true })],
  ['dataIndirect write: source not readable', 'PMRPC_ERR_ACCESS', (w) => Wr.writeFrom({ rkey: w.all.rkey, addr: 0 }, { rkey: w.wo.rkey, addr: 36864 }, 8)],
  ['dataIndirect write: source out of the MR', 'PMRPC_ERR_OUT_OF_BOUNDS', (w) => Wr.writeFrom({ rkey: w.all.rkey, addr: 0 }, { rkey: w.ro.rkey, addr: 36800 }, 128)],
  ['prismCas: no REMOTE_ATOMIC', 'PMRPC_ERR_ACCESS', (w) => Wr.prismCas('eq', { rkey: w.ro.rkey, addr: 32768 }, new Uint8Array(16))],
  ['prismCas: indirect target outside the MR', 'PMRPC_ERR_OUT_OF_BOUNDS', (w) => Wr.prismCas('eq', { rkey: w.all.rkey, addr: 512 }, new Uint8Array(8), { indirect: true })],
  ['prismCas: target crosses the MR end', 'PMRPC_ERR_OUT_OF_BOUNDS', (w) => Wr.prismCas('ge', { rkey: w.all.rkey, addr: 32752 }, new Uint8Array(32))],
  ['allocate: no REMOTE_WRITE', 'PMRPC_ERR_ACCESS', (w) => Wr.allocate(w.ro.rkey, 64, d8)],
  ['allocate: unknown rkey', 'PMRPC_ERR_BAD_RKEY', () => Wr.allocate(77, 64, d8)],
  ['allocate: redirect outside scratch', 'PMRPC_ERR_OUT_OF_BOUNDS', (w) => Wr.allocate(w.all.rkey, 64, d8, { redirect: 252 })],
  ['read: redirect outside scratch', 'PMRPC_ERR_OUT_OF_BOUNDS', (w) => Wr.read({ rkey: w.all.rkey, addr: 0 }, 16, { redirect: 248 })],
  ['read: scratch out of bounds', 'PMRPC_ERR_OUT_OF_BOUNDS', () => Wr.read({ scratch: 250 }, 8)],
  ['indirect write: pointer in scratch without targetRkey', 'PMRPC_ERR_BAD_WR', () => Wr.write({ scratch: 0 }, d8, { indirect: true })],
];

function snapshot(w: World): { visible: Uint8Array; media: Uint8Array; cache: number; free: number; scratch: Uint8Array } {
  return { visible: w.region.load(0, SIZE), media: w.region.crashState().media, cache: w.nic.cacheEntries, free: w.nic.freeBufferCount(w.all, 64), scratch: w.sqp.scratch() };
}

function unchanged(a: ReturnType<typeof snapshot>, b: ReturnType<typeof snapshot>): boolean {
  return Buffer.compare(a.visible, b.visible) === 0 && Buffer.compare(a.media, b.media) === 0 && Buffer.compare(a.scratch, b.scratch) === 0 && a.cache === b.cache && a.free === b.free;
}

for (const [name, code, make, prepare] of cases) {
  t.test(name, async (t) => {
    const w = world();
    prepare?.(w);
    const before = snapshot(w);
    const [c, next] = await w.qp.postChain([make(w), Wr.write({ rkey: w.all.rkey, addr: 0 }, d8)]);
    t.equal(c!.status, 'error');
    t.equal(c!.code, code, c!.message ?? name);
    t.equal(next!.status, 'error');
    t.equal(next!.code, 'PMRPC_ERR_WR_FLUSHED', 'the QP is in the error state: later requests are flushed');
    t.equal(w.sqp.state, 'error');
    t.equal(w.qp.state, 'error');
    t.ok(unchanged(before, snapshot(w)), 'no memory touched: visible, media, NIC cache, free lists, scratch');
    const again = await w.qp.post(Wr.read({ rkey: w.all.rkey, addr: 0 }, 8));
    t.equal(again.code, 'PMRPC_ERR_WR_FLUSHED', 'a later message is flushed too');
  });
}

t.test('a malformed work request from the link is PMRPC_ERR_BAD_WR and touches nothing', async (t) => {
  const w = world();
  const before = snapshot(w);
  const got: unknown[] = [];
  const link = w.fabric.connect(w.sqp);
  link.onMessage((m) => got.push(m));
  const bad = [{ op: 'write', to: { rkey: w.all.rkey, addr: 0 } }, { op: 'teleport' }, { op: 'prismCas', mode: 'eq', at: { rkey: w.all.rkey, addr: 0 }, data: new Uint8Array(33), len: 33 }];
  for (const wr of bad) {
    const s = w.nic.createQp(w.sqp.pd);
    const l = w.fabric.connect(s);
    let res: unknown;
    l.onMessage((m) => (res = m));
    l.send({ type: 'request', qpn: s.qpn, seq: 0, wrs: [wr as never] });
    const c = (res as { completions: Array<{ status: string; code: string }> }).completions[0]!;
    t.equal(c.status, 'error');
    t.equal(c.code, 'PMRPC_ERR_BAD_WR');
    t.equal(s.state, 'error');
  }
  t.ok(unchanged(before, snapshot(w)));
});

t.test('the client refuses malformed work requests with exact TypeErrors', async (t) => {
  const w = world();
  t.throws(() => w.qp.postChain([{ op: 'write', to: { rkey: 1, addr: -1 }, data: d8 }]), new TypeError('work request 0: to.addr must be a non-negative safe integer'));
  t.throws(() => w.qp.postChain([{ op: 'read', from: { rkey: 1, addr: 0 }, len: -1 }]), new TypeError('work request 0: len must be an integer in [0, 16777216]'));
  t.throws(() => w.qp.postChain([{ op: 'cas', at: { rkey: 1, addr: 0 }, compare: new Uint8Array(4), swap: d8 }]), new TypeError('work request 0: compare must be 8 bytes, got 4'));
  t.throws(() => w.qp.postChain([{ op: 'flush', placement: 'visible' as never, selectivity: 'mr', rkey: 1 }]), new TypeError("work request 0: placement must be 'global' or 'persistent'"));
  t.throws(() => w.qp.postChain([{ op: 'allocate', rkey: 1, sizeBytes: 48, data: d8 }]), new TypeError('work request 0: sizeBytes must be a power of two in [8, 2^30]'));
  t.throws(() => w.qp.postChain([{ op: 'allocate', rkey: 1, sizeBytes: 8, data: new Uint8Array(9) }]), new TypeError('work request 0: allocate: 9 bytes of data do not fit a 8-byte buffer'));
  t.throws(() => w.qp.postChain([{ op: 'write', to: { scratch: 0 }, data: d8, imm: 3 }]), new TypeError("work request 0: imm is only for op 'writeImm'"));
  t.throws(() => w.qp.postChain([]), new RangeError('a chain holds 1..4096 work requests, got 0'));
});
