// Invariants of the emulated NIC where it writes PM or its cache (DESIGN §10.1, pmem/errors.ts
// invariant()): ALLOCATE's free-list pop, CAS and ATOMIC WRITE installs, what ALLOCATE writes into
// the buffer it pops. A chain the verbs layer of this process checked is not checked again by the
// NIC (validate.ts markChecked); each case hands the NIC such a chain that is malformed (a check
// skipped, as a bug in the verbs layer or a caller changing a posted chain would) and asserts
// PMRPC_ERR_INVARIANT with the region, the NIC cache and the free lists unchanged.
import t from 'tap';
import { casResult, casSucceeds, type WorkRequest } from '../../flush/index.js';
import { takeFree, type FreeList } from '../../flush/nic.js';
import { markChecked } from '../../flush/validate.js';
import { fill, setup, REGION_BYTES } from './helpers.js';

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    return (e as { code?: string }).code ?? `not coded: ${(e as Error).message}`;
  }
  return undefined;
}

/** Submits `wrs` as a chain the verbs layer checked, runs it; the error code it stops with (undefined: none). */
function runChecked(s: ReturnType<typeof setup>, wrs: WorkRequest[]): string | undefined {
  markChecked(wrs);
  s.nic.submit({ type: 'request', qpn: s.sqp.qpn, seq: 1, wrs });
  return codeOf(() => s.nic.runQp(s.sqp.qpn));
}

const HALF = REGION_BYTES / 2;

t.test('ALLOCATE pops only a buffer that is on its free list', async (t) => {
  const list: FreeList = { queue: [64, 128], head: 0, members: new Set([128]) };
  t.equal(codeOf(() => takeFree(list)), 'PMRPC_ERR_INVARIANT', 'a queued buffer that is not a member (handed out already)');
  t.equal(list.head, 0, 'nothing popped');
  t.same([...list.members], [128], 'the members are as they were');
  const good: FreeList = { queue: [64, 128], head: 0, members: new Set([64, 128]) };
  t.equal(takeFree(good), 64, 'a member pops');
  t.same([...good.members], [128]);
});

t.test('ALLOCATE writes no more than the buffer it pops holds', async (t) => {
  const s = setup({ nic: { ddio: false } });
  s.nic.postFreeBuffers(s.mr, 64, [1024, 1088]);
  const before = s.region.load(0, HALF);
  const wrs: WorkRequest[] = [{ op: 'allocate', rkey: s.mr.rkey, sizeBytes: 64, data: fill(128, 7) }];
  t.equal(runChecked(s, wrs), 'PMRPC_ERR_INVARIANT', '128 bytes into a 64-byte buffer');
  t.equal(s.nic.freeBufferCount(s.mr, 64), 2, 'no buffer popped');
  t.equal(s.nic.cacheEntries, 0, 'nothing in the NIC cache');
  s.nic.drainAll();
  t.same(s.region.load(0, HALF), before, 'the region is unchanged');
});

t.test('an 8-byte CAS and an ATOMIC WRITE install 8 bytes', async (t) => {
  for (const [what, wr] of [
    ['a 16-byte CAS swap', { op: 'cas', at: { rkey: 0, addr: 256 }, compare: new Uint8Array(8), swap: fill(16, 9) }],
    ['a 4-byte CAS compare', { op: 'cas', at: { rkey: 0, addr: 256 }, compare: new Uint8Array(4), swap: fill(8, 9) }],
    ['a 16-byte ATOMIC WRITE', { op: 'atomicWrite', at: { rkey: 0, addr: 256 }, value: fill(16, 9) }],
  ] as const) {
    const s = setup({ nic: { ddio: false } });
    const before = s.region.load(0, HALF);
    const w = { ...wr, at: { rkey: s.mr.rkey, addr: 256 } } as unknown as WorkRequest;
    t.equal(runChecked(s, [w]), 'PMRPC_ERR_INVARIANT', what);
    t.equal(s.nic.cacheEntries, 0, `${what}: nothing in the NIC cache`);
    s.nic.drainAll();
    t.same(s.region.load(0, HALF), before, `${what}: the region is unchanged`);
  }
});

t.test('a PRISM CAS compares and installs the whole target: operand and masks as wide as it', async (t) => {
  const target = fill(16, 1);
  const copy = target.slice();
  t.equal(codeOf(() => casSucceeds('eq', target, fill(8, 1))), 'PMRPC_ERR_INVARIANT', 'compare: a short operand');
  t.equal(codeOf(() => casSucceeds('eq', target, fill(16, 1), fill(8, 0xff))), 'PMRPC_ERR_INVARIANT', 'compare: a short mask');
  t.equal(codeOf(() => casResult(target, fill(8, 2))), 'PMRPC_ERR_INVARIANT', 'install: a short operand');
  t.equal(codeOf(() => casResult(target, fill(16, 2), fill(8, 0xff))), 'PMRPC_ERR_INVARIANT', 'install: a short mask');
  t.same(target, copy, 'the target is unchanged');
  t.equal(casSucceeds('eq', target, fill(16, 1)), true, 'a full operand compares');
  t.same(casResult(fill(16, 0x11), fill(16, 0x02), fill(16, 0x0f)), fill(16, 0x12), 'a full operand and mask install (the mask\'s bits only)');

  const s = setup({ nic: { ddio: false } });
  const before = s.region.load(0, HALF);
  const wr = { op: 'prismCas', mode: 'eq', at: { rkey: s.mr.rkey, addr: 512 }, len: 16, data: fill(8, 0) } as unknown as WorkRequest;
  t.equal(runChecked(s, [wr]), 'PMRPC_ERR_INVARIANT', 'through the NIC: an 8-byte operand for a 16-byte CAS');
  t.equal(s.nic.cacheEntries, 0, 'nothing in the NIC cache');
  s.nic.drainAll();
  t.same(s.region.load(0, HALF), before, 'the region is unchanged');
});
