/**
 * Litmus tests of the RNIC model (DESIGN §2.2–2.4). Each builds a traced region with a NIC, runs a
 * few verbs over the in-process link, captures the crash state at the moment a client is told
 * something (the 'completion' crash point) or observes executions under seeded interleavings, and
 * checks the outcome sets: the must-be-possible outcome was produced, the impossible one never.
 */
import {
  crashImages,
  createPrng,
  materialize,
  PmemRegion,
  seededEntropy,
  type CrashPointEvent,
  type CrashState,
  type PmemOptions,
} from '../../pmem/index.js';
import {
  Access,
  CpuPoller,
  FlushClient,
  FLUSH_STRATEGIES,
  FLUSH_STRATEGY_TABLE,
  flushStrategy,
  InProcessFabric,
  QueuePair,
  Rnic,
  StrategyServer,
  Wr,
  type FabricOptions,
  type FlushStrategy,
  type MemoryRegion,
  type RnicOptions,
  type ServerQp,
} from '../../flush/index.js';
import type { Litmus, LitmusOutcome } from './types.js';

const A = 64; // a word on its own line
const B = 128;

interface Rig {
  region: PmemRegion;
  nic: Rnic;
  fabric: InProcessFabric;
  mr: MemoryRegion;
  sqp: ServerQp;
  qp: QueuePair;
  connect(): { sqp: ServerQp; qp: QueuePair };
}

function rig(seed: number, nic: Partial<RnicOptions> = {}, fabric: Partial<FabricOptions> = {}, pmem: Partial<PmemOptions> = {}): Rig {
  const region = PmemRegion.createInMemory(8192, { tracing: true, seed, entropy: seededEntropy(createPrng(seed)), ...pmem });
  const n = new Rnic(region, { entropy: seededEntropy(createPrng(seed ^ 0x5a5a)), ...nic });
  const f = new InProcessFabric(n, { seed, ...fabric });
  const pd = n.allocPd();
  const mr = n.registerMr(pd, 0, 4096, Access.ALL);
  const connect = (): { sqp: ServerQp; qp: QueuePair } => {
    const sqp = n.createQp(pd);
    return { sqp, qp: new QueuePair(f.connect(sqp)) };
  };
  return { region, nic: n, fabric: f, mr, ...connect(), connect };
}

/** Crash states captured at every 'completion' crash point (the moments clients are told something). */
function captureCompletions(region: PmemRegion): CrashState[] {
  const states: CrashState[] = [];
  region.setCrashPointHook((e: CrashPointEvent) => {
    if (e.kind === 'completion') states.push(region.crashState());
  });
  return states;
}

function outcomes(states: CrashState[], read: (r: PmemRegion) => string, into = new Map<string, number>()): Map<string, number> {
  for (const state of states) {
    for (const img of crashImages(state, { engine: 'exhaustive', maxImages: 4096 })) {
      const o = read(PmemRegion.openImage(materialize(state, img)));
      into.set(o, (into.get(o) ?? 0) + 1);
    }
  }
  return into;
}

const word = (r: PmemRegion, off: number): string => r.loadU64(off).toString(16);
const u64 = (v: number): Uint8Array => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt(v), true);
  return b;
};

function check(seen: Map<string, number>, possible: string[], impossible: (o: string) => boolean, what = 'images'): LitmusOutcome {
  const examined = [...seen.values()].reduce((a, b) => a + b, 0);
  const ok = examined > 0 && possible.every((p) => seen.has(p)) && ![...seen.keys()].some(impossible);
  return { ok, produced: `{${[...seen.keys()].sort().join(' | ')}} over ${examined} ${what}`, examined };
}

const onlyIn = (allowed: string[]) => (o: string) => !allowed.includes(o);

/** A strategy persists A=1 (8 bytes); outcomes over the crash images at the client's "durable" moment. */
async function strategyOutcomes(seed: number, strategy: FlushStrategy, ddio: boolean, pmem: Partial<PmemOptions> = {}): Promise<Map<string, number>> {
  const r = rig(seed, { ddio }, {}, pmem);
  const poller = new CpuPoller(r.nic);
  new StrategyServer(poller, { strategy, qp: r.sqp, ring: { offset: 0, len: 4096 }, recvBuffers: [{ addr: flushStrategy(strategy).arrives === 'flush-request' ? 2048 : A, len: 64 }] });
  const client = new FlushClient(r.qp, { strategy, rkey: r.mr.rkey, recvRkey: r.mr.rkey });
  // Another line held dirty by the CPU, so images differ in more than the word under test.
  r.region.storeU64(B + 64, 9n);
  const all = captureCompletions(r.region);
  await client.persist(A, u64(1));
  // The last completion crash point is the one that told the client "durable".
  const states = all.slice(-1);
  r.region.setCrashPointHook(undefined);
  return outcomes(states, (i) => `A=${word(i, A)}`);
}

const ITEM = 1024; // the first free 64-byte buffer the server posts
const ITEM2 = 1088;
const fill64 = (v: number): Uint8Array => new Uint8Array(64).fill(v);
/** 'ab' when all 64 bytes at `at` are `v`, '0' when all zero, else 'torn'. */
const item64 = (r: PmemRegion, at: number, v: number): string => {
  const b = r.load(at, 64);
  return b.every((x) => x === v) ? v.toString(16) : b.every((x) => x === 0) ? '0' : 'torn';
};
/** A rig with two 64-byte buffers on the free list of its MR. */
function allocRig(seed: number, nic: Partial<RnicOptions> = {}): Rig {
  const r = rig(seed, { drain: 'onFlush', ...nic }, { idleDrain: false });
  r.nic.postFreeBuffers(r.mr, 64, [ITEM, ITEM2]);
  return r;
}

/** The redirected FLUSH (pmrpc's extension of IBTA FLUSH, docs/verbs.md; DESIGN §2.4 "Redirected addresses"). */
const redirectedFlushLitmus: Litmus[] = [
  {
    name: 'nic-redirected-flush-persists-exactly-the-allocated-item',
    layer: 'nic',
    rule: "a FLUSH(persistent) whose range start is read from scratch — where the chain's ALLOCATE redirected its pointer — persists the allocated item (DDIO on and off); another dirty line of the QP outside that range is not promised",
    mustBePossible: 'item=ab in every image at the FLUSH completion; with DDIO, B=0 (the QP\'s earlier WRITE outside the range, drained but not written back) in some image',
    mustBeImpossible: 'the item missing or torn at the FLUSH completion',
    async run(seed) {
      const seen = new Map<string, number>();
      for (const ddio of [true, false]) {
        const r = allocRig(seed, { ddio });
        const states = captureCompletions(r.region);
        const cs = await r.qp.postChain([
          Wr.write({ rkey: r.mr.rkey, addr: B }, u64(5)),
          Wr.allocate(r.mr.rkey, 64, fill64(0xab), { redirect: 8 }),
          Wr.flushFrom('persistent', r.mr.rkey, { scratch: 8 }, 64, { conditional: true }),
          Wr.read({ scratch: 8 }, 8),
        ]);
        const ptr = Number(new DataView(cs[3]!.data!.buffer, cs[3]!.data!.byteOffset).getBigUint64(0, true));
        const head = `ddio=${ddio} flush=${cs[2]!.status} ptr=${ptr === ITEM ? 'item' : ptr}`;
        outcomes(states.slice(-1), (i) => `${head} item=${item64(i, ITEM, 0xab)} B=${word(i, B)}`, seen);
      }
      const want = ['ddio=true flush=ok ptr=item item=ab B=0', 'ddio=true flush=ok ptr=item item=ab B=5', 'ddio=false flush=ok ptr=item item=ab B=5'];
      return check(seen, want, onlyIn(want));
    },
  },
  {
    name: 'nic-redirected-flush-after-failed-allocate-does-nothing',
    layer: 'nic',
    rule: "a redirected FLUSH whose pointer the chain did not produce (its ALLOCATE failed: the free list is empty) does nothing — it does not flush the stale pointer an earlier chain left in scratch — completes 'failed' (PMRPC_ERR_REDIRECT_MISSING) and the chain's conditional tail is skipped",
    mustBePossible: "flush failed PMRPC_ERR_REDIRECT_MISSING, tail skipped, and an image at its completion without the earlier chain's (unflushed) item",
    mustBeImpossible: 'the FLUSH ok, the tail run, or the tail\'s WRITE in memory',
    async run(seed) {
      const seen = new Map<string, number>();
      const r = allocRig(seed);
      // An earlier chain: ALLOCATE's pointer to scratch 8, its item left unflushed in the NIC cache.
      await r.qp.post(Wr.allocate(r.mr.rkey, 64, fill64(0xcd), { redirect: 8 }));
      await r.qp.post(Wr.allocate(r.mr.rkey, 64, fill64(0xce))); // the list is now empty
      const states = captureCompletions(r.region);
      const cs = await r.qp.postChain([
        Wr.allocate(r.mr.rkey, 64, fill64(0xab), { redirect: 8 }),
        Wr.flushFrom('persistent', r.mr.rkey, { scratch: 8 }, 64),
        Wr.write({ rkey: r.mr.rkey, addr: B }, u64(7), { conditional: true }),
      ]);
      const head = `alloc=${cs[0]!.status} flush=${cs[1]!.status} ${cs[1]!.code ?? ''} tail=${cs[2]!.status} B=${r.region.loadU64(B)}`;
      outcomes(states.slice(-1), (i) => `${head} stale=${item64(i, ITEM, 0xcd)}`, seen);
      const want = [`alloc=failed flush=failed PMRPC_ERR_REDIRECT_MISSING tail=skipped B=0 stale=0`, `alloc=failed flush=failed PMRPC_ERR_REDIRECT_MISSING tail=skipped B=0 stale=cd`];
      return check(seen, want, (o) => !o.startsWith('alloc=failed flush=failed PMRPC_ERR_REDIRECT_MISSING tail=skipped B=0 stale='));
    },
  },
  {
    name: 'nic-redirected-flush-refuses-another-qps-scratch',
    layer: 'nic',
    rule: "a chain reads only its own connection's scratch: QP Y's redirected FLUSH at the scratch offset where QP X's ALLOCATE put its pointer is refused ('failed', PMRPC_ERR_REDIRECT_MISSING), flushes nothing, and Y's conditional tail is skipped; X's own FLUSH of it persists the item",
    mustBePossible: "Y refused, X's unflushed item absent in some image at Y's completion; X's own redirected FLUSH works only in the chain that produced the pointer",
    mustBeImpossible: "Y's FLUSH ok or its tail run",
    async run(seed) {
      const seen = new Map<string, number>();
      const r = allocRig(seed);
      const y = r.connect().qp;
      const states = captureCompletions(r.region);
      // X: ALLOCATE → scratch 8 (not flushed yet); Y: redirected FLUSH from its scratch 8.
      await r.qp.post(Wr.allocate(r.mr.rkey, 64, fill64(0xab), { redirect: 8 }));
      states.length = 0;
      const ys = await y.postChain([Wr.flushFrom('persistent', r.mr.rkey, { scratch: 8 }, 64), Wr.write({ rkey: r.mr.rkey, addr: B }, u64(7), { conditional: true })]);
      outcomes(states.splice(0).slice(-1), (i) => `Y flush=${ys[0]!.status} ${ys[0]!.code ?? ''} tail=${ys[1]!.status} item=${item64(i, ITEM, 0xab)}`, seen);
      // X's own pointer is one of an earlier chain of X too: X must produce it again in the chain that flushes.
      const xs = await r.qp.postChain([Wr.read({ rkey: r.mr.rkey, addr: A }, 8, { redirect: 8 }), Wr.flushFrom('persistent', r.mr.rkey, { scratch: 8 }, 8)]);
      const xf = await r.qp.postChain([Wr.flushFrom('persistent', r.mr.rkey, { scratch: 8 }, 64)]);
      seen.set(`X same-chain read→flush=${xs[1]!.status}; X later chain=${xf[0]!.status} ${xf[0]!.code ?? ''}`, 1);
      const want = [
        'Y flush=failed PMRPC_ERR_REDIRECT_MISSING tail=skipped item=0',
        'Y flush=failed PMRPC_ERR_REDIRECT_MISSING tail=skipped item=ab',
        'X same-chain read→flush=ok; X later chain=failed PMRPC_ERR_REDIRECT_MISSING',
      ];
      // X's unflushed item is a subset component: a torn item is possible at Y's completion too.
      return check(seen, want, onlyIn([...want, 'Y flush=failed PMRPC_ERR_REDIRECT_MISSING tail=skipped item=torn']));
    },
  },
  {
    name: 'nic-crash-images-around-redirected-flush',
    layer: 'nic',
    rule: 'crash images at every step of the durable install chain ALLOCATE → redirect; redirected FLUSH; WRITE the pointer into a slot (dataIndirect from scratch); FLUSH the slot: before the redirected FLUSH the item may be lost; after it, it is in every image; no image has the slot pointing at a lost or torn item',
    mustBePossible: 'item=0 before the redirected FLUSH; item=ab slot=0 after it; item=ab slot=item after the slot FLUSH',
    mustBeImpossible: 'slot=item with the item lost or torn; item lost after the redirected FLUSH',
    async run(seed) {
      const seen = new Map<string, number>();
      for (const ddio of [true, false]) {
        const r = allocRig(seed, { ddio });
        const sqp = r.nic.createQp(r.sqp.pd);
        const slot = { rkey: r.mr.rkey, addr: A };
        r.nic.submit({
          type: 'request',
          qpn: sqp.qpn,
          seq: 1,
          wrs: [
            Wr.allocate(r.mr.rkey, 64, fill64(0xab), { redirect: 8 }),
            Wr.flushFrom('persistent', r.mr.rkey, { scratch: 8 }, 64, { conditional: true }),
            Wr.writeFrom(slot, { scratch: 8 }, 8, { conditional: true }),
            Wr.flush('persistent', r.mr.rkey, { addr: A, len: 8 }, { conditional: true }),
          ],
        });
        const names = ['allocate', 'redirected flush', 'slot write', 'slot flush'];
        for (let k = 0; r.nic.step(sqp.qpn); k++) {
          const at = `ddio=${ddio} after ${names[k]}:`;
          outcomes([r.region.crashState()], (i) => {
            const it = item64(i, ITEM, 0xab);
            const sl = i.loadU64(A);
            return `${at} item=${it} slot=${sl === BigInt(ITEM) ? 'item' : sl === 0n ? '0' : 'other'}`;
          }, seen);
        }
      }
      const bad = (o: string): boolean => (o.includes('slot=item') && !o.includes('item=ab')) || o.includes('slot=other') || (/after (redirected flush|slot write|slot flush)/.test(o) && !o.includes('item=ab')) || (o.includes('after slot flush') && !o.includes('slot=item'));
      const want = [true, false].flatMap((d) => [`ddio=${d} after allocate: item=0 slot=0`, `ddio=${d} after redirected flush: item=ab slot=0`, `ddio=${d} after slot flush: item=ab slot=item`]);
      return check(seen, want, bad);
    },
  },
];

/** Items scattered on the free list (a line between each), for the multi-pointer redirected FLUSH. */
const ITEMS = [1024, 1152, 1280];
const GAP = 1088; // a line between two items: the chain writes it, the FLUSH does not cover it
/** A rig with `buffers` 64-byte buffers on its MR's free list (default ITEMS). */
function itemsRig(seed: number, nic: Partial<RnicOptions> = {}, buffers: number[] = ITEMS): Rig {
  const r = rig(seed, { drain: 'onFlush', ...nic }, { idleDrain: false });
  r.nic.postFreeBuffers(r.mr, 64, buffers);
  return r;
}
/** ALLOCATE j pops a 64-byte buffer, writes its first word (8 bytes of `0xa0 + j`: few crash images) and redirects its pointer to scratch 8·j (j < n). */
const allocs = (rkey: number, n: number, first = 0): ReturnType<typeof Wr.allocate>[] => Array.from({ length: n }, (_, j) => Wr.allocate(rkey, 64, new Uint8Array(8).fill(0xa0 + first + j), { redirect: 8 * j }));
/** The items' first words in an image, in `at` order: each '0', 'torn' or the byte it holds. */
const itemsIn = (r: PmemRegion, at: number[] = ITEMS): string => at.map((a) => {
  const b = r.load(a, 8);
  return b.every((x) => x === b[0]) ? b[0]!.toString(16) : 'torn';
}).join(',');

/** The multi-pointer redirected FLUSH (`count`, pmrpc's extension, docs/verbs.md "Redirected FLUSH"). */
const multiRedirectedFlushLitmus: Litmus[] = [
  {
    name: 'nic-multi-redirected-flush-persists-exactly-the-allocated-items',
    layer: 'nic',
    rule: "one FLUSH(persistent) with count n reads the n pointers the chain's ALLOCATEs redirected to scratch 0, 8, 16 and persists exactly those n items, as one work request and one completion (DDIO on and off); a line the chain wrote between the items is not promised",
    mustBePossible: 'every item in every image at the completion; with DDIO, the line between the items (written in the chain, not covered) absent in some image',
    mustBeImpossible: 'an item missing or torn at the FLUSH completion',
    async run(seed) {
      const seen = new Map<string, number>();
      for (const ddio of [true, false]) {
        const r = itemsRig(seed, { ddio });
        const states = captureCompletions(r.region);
        const cs = await r.qp.postChain([
          Wr.write({ rkey: r.mr.rkey, addr: GAP }, u64(5)),
          ...allocs(r.mr.rkey, 3),
          Wr.flushFrom('persistent', r.mr.rkey, { scratch: 0, count: 3 }, 64, { conditional: true }),
        ]);
        const head = `ddio=${ddio} ${cs.map((c) => c.status).join(',')}`;
        // ALLOCATE j may pop any buffer: the items hold {a0, a1, a2} in some order.
        outcomes(states.slice(-1), (i) => `${head} items=${itemsIn(i).split(',').sort().join(',')} gap=${word(i, GAP)}`, seen);
      }
      const ok = 'ok,ok,ok,ok,ok';
      const want = [`ddio=true ${ok} items=a0,a1,a2 gap=0`, `ddio=true ${ok} items=a0,a1,a2 gap=5`, `ddio=false ${ok} items=a0,a1,a2 gap=5`];
      return check(seen, want, onlyIn(want));
    },
  },
  {
    name: 'nic-multi-redirected-flush-all-or-nothing-when-an-allocate-failed',
    layer: 'nic',
    rule: "a FLUSH with count 3 after three ALLOCATEs of which the last failed (the free list held two buffers) flushes nothing — not even the two items whose pointers the chain produced — completes 'failed' (PMRPC_ERR_REDIRECT_MISSING) and the chain's conditional tail is skipped",
    mustBePossible: 'flush failed PMRPC_ERR_REDIRECT_MISSING, tail skipped, and an image at its completion with neither produced item',
    mustBeImpossible: 'the FLUSH ok, the tail run, or the tail\'s WRITE in memory',
    async run(seed) {
      const seen = new Map<string, number>();
      const r = itemsRig(seed, {}, ITEMS.slice(0, 2));
      const states = captureCompletions(r.region);
      const cs = await r.qp.postChain([
        ...allocs(r.mr.rkey, 3),
        Wr.flushFrom('persistent', r.mr.rkey, { scratch: 0, count: 3 }, 64),
        Wr.write({ rkey: r.mr.rkey, addr: B }, u64(7), { conditional: true }),
      ]);
      const head = `${cs.map((c) => c.status).join(',')} ${cs[3]!.code ?? ''} B=${r.region.loadU64(B)}`;
      outcomes(states.slice(-1), (i) => `${head} items=${itemsIn(i, ITEMS.slice(0, 2)).split(',').sort().join(',')}`, seen);
      const pre = 'ok,ok,failed,failed,skipped PMRPC_ERR_REDIRECT_MISSING B=0 items=';
      return check(seen, [`${pre}0,0`], (o) => !o.startsWith(pre));
    },
  },
  {
    name: 'nic-multi-redirected-flush-refuses-a-stale-pointer-slot',
    layer: 'nic',
    rule: "a FLUSH with count 3 whose third pointer slot holds a pointer an earlier chain left (this chain did not produce it) is refused ('failed', PMRPC_ERR_REDIRECT_MISSING): none of the three items is flushed and the conditional tail is skipped; count 2 over the two slots this chain produced persists both",
    mustBePossible: 'count 3 refused with every item absent in some image at its completion; count 2 in a later chain that produced both slots persists them',
    mustBeImpossible: 'count 3 ok or its tail run; an item of the count-2 chain missing at its completion',
    async run(seed) {
      const seen = new Map<string, number>();
      const r = itemsRig(seed, {}, [...ITEMS, 1408, 1536]);
      const all = [...ITEMS, 1408, 1536];
      // An earlier chain: ALLOCATE → scratch 16, its item left unflushed.
      await r.qp.post(Wr.allocate(r.mr.rkey, 64, new Uint8Array(8).fill(0xcd), { redirect: 16 }));
      const states = captureCompletions(r.region);
      const cs = await r.qp.postChain([
        ...allocs(r.mr.rkey, 2),
        Wr.flushFrom('persistent', r.mr.rkey, { scratch: 0, count: 3 }, 64),
        Wr.write({ rkey: r.mr.rkey, addr: B }, u64(7), { conditional: true }),
      ]);
      const head = `count3 ${cs.map((c) => c.status).join(',')} ${cs[2]!.code ?? ''} B=${r.region.loadU64(B)}`;
      // Every image at the refusal: how many of the three items (two new, the stale one) are on media.
      outcomes(states.splice(0).slice(-1), (i) => `${head} present=${all.filter((a) => i.loadU64(a) !== 0n).length}`, seen);
      const cs2 = await r.qp.postChain([...allocs(r.mr.rkey, 2, 4), Wr.flushFrom('persistent', r.mr.rkey, { scratch: 0, count: 2 }, 64)]);
      const ptrs = (await r.qp.postChain([Wr.read({ scratch: 0 }, 16)]))[0]!.data!;
      const at = [0, 8].map((o) => Number(new DataView(ptrs.buffer, ptrs.byteOffset + o).getBigUint64(0, true)));
      outcomes(states.splice(0).slice(0, 1), (i) => `count2 ${cs2.map((c) => c.status).join(',')} items=${itemsIn(i, at)}`, seen);
      const pre = 'count3 ok,ok,failed,skipped PMRPC_ERR_REDIRECT_MISSING B=0 present=';
      const want = [`${pre}0`, 'count2 ok,ok,ok items=a4,a5'];
      return check(seen, want, (o) => (o.startsWith('count3') && !o.startsWith(pre)) || (o.startsWith('count2') && o !== 'count2 ok,ok,ok items=a4,a5'));
    },
  },
  {
    name: 'nic-crash-images-around-multi-redirected-flush',
    layer: 'nic',
    rule: 'crash images at every step of ALLOCATE ×3 (redirected to scratch 0, 8, 16) → FLUSH(persistent, count 3): before the FLUSH the items may be lost; after its completion all three are in every image',
    mustBePossible: 'an item absent after each ALLOCATE; all three present after the FLUSH',
    mustBeImpossible: 'an item missing or torn after the FLUSH',
    async run(seed) {
      const seen = new Map<string, number>();
      for (const ddio of [true, false]) {
        const r = itemsRig(seed, { ddio });
        const sqp = r.nic.createQp(r.sqp.pd);
        r.nic.submit({ type: 'request', qpn: sqp.qpn, seq: 1, wrs: [...allocs(r.mr.rkey, 3), Wr.flushFrom('persistent', r.mr.rkey, { scratch: 0, count: 3 }, 64, { conditional: true })] });
        const names = ['allocate 0', 'allocate 1', 'allocate 2', 'flush'];
        for (let k = 0; r.nic.step(sqp.qpn); k++) {
          outcomes([r.region.crashState()], (i) => {
            const got = itemsIn(i).split(',');
            return `ddio=${ddio} after ${names[k]}: ${got.every((x) => x.startsWith('a')) ? 'all present' : got.includes('torn') ? 'torn' : 'some absent'}`;
          }, seen);
        }
      }
      const want = [true, false].flatMap((d) => [`ddio=${d} after allocate 0: some absent`, `ddio=${d} after allocate 2: some absent`, `ddio=${d} after flush: all present`]);
      return check(seen, want, (o) => o.includes('after flush') && !o.endsWith('all present'));
    },
  },
];

export const nicLitmus: Litmus[] = [
  {
    name: 'nic-completed-write-without-flush-may-be-lost',
    layer: 'nic',
    rule: 'completion of a WRITE means the NIC has it, not that it is durable: with or without DDIO a crash image can lack it',
    mustBePossible: 'A=0 and A=1 at the WRITE completion, ddio on and ddio off',
    mustBeImpossible: 'any other value of A',
    async run(seed) {
      const seen = new Map<string, number>();
      for (const ddio of [true, false]) {
        const r = rig(seed, { ddio });
        const states = captureCompletions(r.region);
        await r.qp.write({ rkey: r.mr.rkey, addr: A }, u64(1));
        for (const [k, v] of outcomes(states.slice(0, 1), (i) => `ddio=${ddio} A=${word(i, A)}`)) seen.set(k, v);
      }
      return check(seen, ['ddio=true A=0', 'ddio=true A=1', 'ddio=false A=0', 'ddio=false A=1'], (o) => !/A=[01]$/.test(o));
    },
  },
  {
    name: 'nic-flush-persistent-write-in-every-image-ddio-on-and-off',
    layer: 'nic',
    rule: 'after FLUSH(persistent) completes, the QP\'s preceding WRITE is in every crash image, with DDIO on and off',
    mustBePossible: 'A=1',
    mustBeImpossible: 'A=0 in any image at the FLUSH completion',
    async run(seed) {
      const seen = new Map<string, number>();
      for (const ddio of [true, false]) {
        const r = rig(seed, { ddio, drain: 'onFlush' });
        r.region.storeU64(B, 5n); // a pending CPU line, so that there are several images
        const states = captureCompletions(r.region);
        await r.qp.postChain([Wr.write({ rkey: r.mr.rkey, addr: A }, u64(1)), Wr.flush('persistent', r.mr.rkey, { addr: A, len: 8 })]);
        outcomes(states, (i) => `A=${word(i, A)}`, seen);
      }
      return check(seen, ['A=1'], (o) => o !== 'A=1');
    },
  },
  {
    name: 'nic-flush-mr-persists-the-whole-region',
    layer: 'nic',
    rule: 'FLUSH(persistent, mr) covers every preceding update of the QP anywhere in the MR',
    mustBePossible: 'A=1,B=2',
    mustBeImpossible: 'A or B missing at the FLUSH completion',
    async run(seed) {
      const r = rig(seed, { drain: 'onFlush' });
      const states = captureCompletions(r.region);
      await r.qp.postChain([Wr.write({ rkey: r.mr.rkey, addr: A }, u64(1)), Wr.write({ rkey: r.mr.rkey, addr: B }, u64(2)), Wr.flush('persistent', r.mr.rkey)]);
      // A later store of the CPU, outside the MR, leaves something pending: several images.
      r.region.storeU64(6000, 3n);
      states.push(r.region.crashState());
      return check(outcomes(states, (i) => `A=${word(i, A)},B=${word(i, B)}`), ['A=1,B=2'], (o) => o !== 'A=1,B=2');
    },
  },
  {
    name: 'nic-flush-global-alone-not-durable-with-ddio-under-adr',
    layer: 'nic',
    rule: 'FLUSH(global) makes data visible, not durable: with DDIO on under ADR it sits in CPU cache lines; under eADR it is durable',
    mustBePossible: 'adr A=0 (lost) at the FLUSH(global) completion',
    mustBeImpossible: 'eadr A=0',
    async run(seed) {
      const seen = new Map<string, number>();
      for (const domain of ['adr', 'eadr'] as const) {
        const r = rig(seed, { ddio: true, drain: 'onFlush' }, {}, { domain });
        const states = captureCompletions(r.region);
        const [, fl] = await r.qp.postChain([Wr.write({ rkey: r.mr.rkey, addr: A }, u64(1)), Wr.flush('global', r.mr.rkey, { addr: A, len: 8 })]);
        const visible = r.region.loadU64(A); // global placement: the CPU sees it
        outcomes(states, (i) => `${domain} A=${word(i, A)}${visible === 1n && fl!.status === 'ok' ? '' : ' (not visible!)'}`, seen);
      }
      return check(seen, ['adr A=0', 'adr A=1', 'eadr A=1'], onlyIn(['adr A=0', 'adr A=1', 'eadr A=1']));
    },
  },
  {
    name: 'nic-read-after-write-same-qp-sees-the-write',
    layer: 'nic',
    rule: 'a NIC read on a QP first drains that QP\'s earlier writes (a read does not pass posted writes), even when the CPU cannot see them yet',
    mustBePossible: 'READ=1 while the server CPU still sees A=0 before the READ',
    mustBeImpossible: 'READ=0',
    async run(seed) {
      const seen = new Map<string, number>();
      for (let k = 0; k < 8; k++) {
        const r = rig(seed + k, { drain: 'onFlush' }, { idleDrain: false });
        await r.qp.write({ rkey: r.mr.rkey, addr: A }, u64(1));
        const cpu = r.region.loadU64(A);
        const got = await r.qp.read({ rkey: r.mr.rkey, addr: A }, 8);
        const o = `cpu=${cpu} READ=${new DataView(got.buffer).getBigUint64(0, true)}`;
        seen.set(o, (seen.get(o) ?? 0) + 1);
      }
      return check(seen, ['cpu=0 READ=1'], (o) => o.endsWith('READ=0'), 'executions');
    },
  },
  {
    name: 'nic-raw-loses-acknowledged-data-with-ddio',
    layer: 'nic',
    rule: 'raw (WRITE + 1-byte READ) only makes data visible: with DDIO on it is in dirty CPU lines, so some crash image at the READ completion lacks it',
    mustBePossible: 'A=0 at the moment raw acknowledged',
    mustBeImpossible: '',
    async run(seed) {
      return check(await strategyOutcomes(seed, 'raw', true), ['A=0', 'A=1'], onlyIn(['A=0', 'A=1']));
    },
  },
  {
    name: 'nic-raw-never-loses-acknowledged-data-without-ddio',
    layer: 'nic',
    rule: 'raw with DDIO off: the READ drains the WRITE straight to media before it completes, so every image at the READ completion holds it',
    mustBePossible: 'A=1',
    mustBeImpossible: 'A=0 in any image',
    async run(seed) {
      return check(await strategyOutcomes(seed, 'raw', false), ['A=1'], (o) => o !== 'A=1');
    },
  },
  {
    name: 'nic-durable-strategies-never-lose-acknowledged-data',
    layer: 'nic',
    rule: 'wflush, sflush, wrflush, srflush and gpspm: at the moment the client is told "durable", the data is in every crash image (DDIO on and off)',
    mustBePossible: 'A=1 for every strategy',
    mustBeImpossible: 'A=0 in any image',
    async run(seed) {
      const seen = new Map<string, number>();
      const correct = FLUSH_STRATEGIES.filter((s) => FLUSH_STRATEGY_TABLE[s].alwaysCorrect);
      for (const s of correct) {
        for (const ddio of [true, false]) for (const [k, v] of await strategyOutcomes(seed, s, ddio)) seen.set(`${s} ${k}`, (seen.get(`${s} ${k}`) ?? 0) + v);
      }
      const want = correct.map((s) => `${s} A=1`);
      return check(seen, want, (o) => !o.endsWith('A=1'));
    },
  },
  {
    name: 'nic-none-loses-acknowledged-data',
    layer: 'nic',
    rule: 'none (a bare WRITE) is never durable at its acknowledgement, DDIO on or off',
    mustBePossible: 'A=0 at the WRITE completion',
    mustBeImpossible: '',
    async run(seed) {
      const seen = await strategyOutcomes(seed, 'none', false);
      for (const [k, v] of await strategyOutcomes(seed, 'none', true)) seen.set(k, (seen.get(k) ?? 0) + v);
      return check(seen, ['A=0', 'A=1'], onlyIn(['A=0', 'A=1']));
    },
  },
  {
    name: 'nic-flush-persistent-persists-other-qps-drained-writes',
    layer: 'nic',
    rule: "FLUSH(persistent, range) on QP X writes back every dirty CPU line of its range, whoever wrote it: QP Y's WRITE drained into visible memory (DDIO: a dirty line) and a CPU store are durable at X's FLUSH completion",
    mustBePossible: "A=0 (Y's drained WRITE lost) at Y's FLUSH(global) completion; A=1,B=5 at X's FLUSH(persistent) completion",
    mustBeImpossible: "A=0 or B=0 in any image at X's FLUSH(persistent) completion",
    async run(seed) {
      const seen = new Map<string, number>();
      for (const drain of ['eager', 'onFlush'] as const) {
        const r = rig(seed, { ddio: true, drain }, { idleDrain: false });
        const y = r.connect().qp;
        const states = captureCompletions(r.region);
        // Y: WRITE A, then FLUSH(global): drained into visible memory, a dirty CPU line — not durable.
        await y.postChain([Wr.write({ rkey: r.mr.rkey, addr: A }, u64(1)), Wr.flush('global', r.mr.rkey, { addr: A, len: 8 })]);
        const drained = states.splice(0);
        r.region.storeU64(B, 5n); // the server CPU's store, also a dirty line of X's range
        await r.qp.flush('persistent', r.mr.rkey, { addr: A, len: B + 8 - A });
        const visible = r.region.loadU64(A) === 1n ? '' : ' (A not visible!)';
        outcomes(drained.slice(-1), (i) => `${drain} after Y's FLUSH(global): A=${word(i, A)}${visible}`, seen);
        outcomes(states.slice(-1), (i) => `${drain} after X's FLUSH(persistent): A=${word(i, A)},B=${word(i, B)}`, seen);
      }
      const want = ['eager', 'onFlush'].flatMap((d) => [`${d} after Y's FLUSH(global): A=0`, `${d} after Y's FLUSH(global): A=1`, `${d} after X's FLUSH(persistent): A=1,B=5`]);
      return check(seen, want, onlyIn(want));
    },
  },
  {
    name: 'nic-flush-persistent-does-not-reach-other-qps-undrained-entries',
    layer: 'nic',
    rule: "FLUSH(persistent, range) on QP X does not reach QP Y's undrained NIC-cache entry, even one that X's CAS compared against (the atomic unit sees it; X's READ, of host memory, does not): a crash at X's FLUSH completion can lose it",
    mustBePossible: "X's CAS fails against Y's undrained 1, X's READ returns 0, and an image at X's FLUSH(persistent) completion holds A=0",
    mustBeImpossible: "X's CAS swaps; X's READ returns Y's undrained 1",
    async run(seed) {
      const seen = new Map<string, number>();
      for (const ddio of [true, false]) {
        const r = rig(seed, { ddio, drain: 'onFlush' }, { idleDrain: false });
        const y = r.connect().qp;
        const at = { rkey: r.mr.rkey, addr: A };
        await y.cas(at, 0n, 1n); // swaps; its result stays in Y's NIC cache (onFlush, no idle drain)
        const states = captureCompletions(r.region);
        const [cas, read] = await r.qp.postChain([Wr.cas(at, 0n, 2n), Wr.read(at, 8), Wr.flush('persistent', r.mr.rkey, { addr: A, len: 8 })]);
        const head = `ddio=${ddio} cas=${cas!.swapped ? 'swap' : 'fail'} old=${new DataView(cas!.data!.buffer, cas!.data!.byteOffset).getBigUint64(0, true)} read=${new DataView(read!.data!.buffer, read!.data!.byteOffset).getBigUint64(0, true)}`;
        outcomes(states.slice(-1), (i) => `${head} A=${word(i, A)}`, seen);
      }
      // Y's undrained entry is a subset component: an image may or may not hold it, so A=1 is possible too.
      const want = [true, false].flatMap((d) => [`ddio=${d} cas=fail old=1 read=0 A=0`, `ddio=${d} cas=fail old=1 read=0 A=1`]);
      return check(seen, want, onlyIn(want));
    },
  },
  {
    name: 'nic-rc-in-order-execution',
    layer: 'nic',
    rule: 'work requests of one RC QP execute in order, whatever other QPs do in between (seeded interleavings)',
    mustBePossible: 'CAS 0→1, 1→2, 2→3 posted back to back all swap',
    mustBeImpossible: 'any of them fails',
    async run(seed) {
      const seen = new Map<string, number>();
      for (let k = 0; k < 16; k++) {
        const r = rig(seed + k, { drain: 'lazy', lazyBound: 2 }, { delivery: 'seeded' });
        const other = r.connect();
        const at = { rkey: r.mr.rkey, addr: A };
        const ps = [r.qp.cas(at, 0n, 1n), other.qp.write({ rkey: r.mr.rkey, addr: B }, u64(7)), r.qp.cas(at, 1n, 2n), other.qp.read(at, 8), r.qp.cas(at, 2n, 3n)];
        const res = await Promise.all(ps);
        const swaps = [res[0], res[2], res[4]].map((x) => ((x as { swapped: boolean }).swapped ? 'y' : 'n')).join('');
        seen.set(swaps, (seen.get(swaps) ?? 0) + 1);
      }
      return check(seen, ['yyy'], (o) => o !== 'yyy', 'executions');
    },
  },
  {
    name: 'nic-atomics-not-atomic-with-cpu-stores',
    layer: 'nic',
    rule: 'NIC atomics are atomic with respect to other NIC atomics only: a CPU increment racing a NIC FAA can be lost; two NIC FAAs never lose one',
    mustBePossible: 'nic+cpu counter=1 (a lost update)',
    mustBeImpossible: 'nic+nic counter=1',
    async run(seed) {
      const seen = new Map<string, number>();
      // NIC FAA, then a CPU read-modify-write before the FAA result drains from the NIC cache.
      const r = rig(seed, { drain: 'onFlush' }, { idleDrain: false });
      const at = { rkey: r.mr.rkey, addr: A };
      await r.qp.faa(at, 1n);
      r.region.storeU64(A, r.region.loadU64(A) + 1n);
      r.nic.drainAll();
      seen.set(`nic+cpu counter=${r.region.loadU64(A)}`, 1);
      // Two NIC FAAs on different QPs, under every drain policy.
      for (const drain of ['eager', 'lazy', 'onFlush'] as const) {
        const s = rig(seed, { drain }, { delivery: 'seeded', idleDrain: false });
        const q2 = s.connect().qp;
        const sat = { rkey: s.mr.rkey, addr: A };
        await Promise.all([s.qp.faa(sat, 1n), q2.faa(sat, 1n)]);
        s.nic.drainAll();
        const k = `nic+nic counter=${s.region.loadU64(A)}`;
        seen.set(k, (seen.get(k) ?? 0) + 1);
      }
      return check(seen, ['nic+cpu counter=1', 'nic+nic counter=2'], (o) => o === 'nic+nic counter=1', 'executions');
    },
  },
  {
    name: 'nic-chain-conditional-skipped-after-failed-cas',
    layer: 'nic',
    rule: 'a conditional op runs only if the previous op of the chain succeeded; a CAS that did not swap is a failure',
    mustBePossible: 'after a failing CAS the conditional WRITE is skipped (B unchanged); after a swapping CAS it runs',
    mustBeImpossible: 'B written after a failed CAS',
    async run(seed) {
      const seen = new Map<string, number>();
      for (const expect of [0, 9]) {
        const r = rig(seed);
        const cs = await r.qp.postChain([
          Wr.prismCas('eq', { rkey: r.mr.rkey, addr: A }, u64(expect), { compareMask: u64(0xff), swapMask: u64(0xff) }),
          Wr.write({ rkey: r.mr.rkey, addr: B }, u64(5), { conditional: true }),
        ]);
        seen.set(`cas=${cs[0]!.swapped ? 'swap' : 'fail'} write=${cs[1]!.status} B=${r.region.loadU64(B)}`, 1);
      }
      return check(seen, ['cas=fail write=skipped B=0', 'cas=swap write=ok B=5'], (o) => o.startsWith('cas=fail') && !o.endsWith('B=0'), 'executions');
    },
  },
  {
    name: 'nic-chain-not-atomic-other-qps-interleave',
    layer: 'nic',
    rule: 'a PRISM chain executes op by op: another QP\'s op can land between two ops of one chain (only each CAS is atomic)',
    mustBePossible: 'the chain\'s READ sees the other QP\'s WRITE (A=2) between its WRITE A=1 and its READ',
    mustBeImpossible: 'READ=0',
    async run(seed) {
      const seen = new Map<string, number>();
      for (let k = 0; k < 32; k++) {
        const r = rig(seed + k, { drain: 'eager' }, { delivery: 'seeded' });
        const other = r.connect();
        const at = { rkey: r.mr.rkey, addr: A };
        const [chain] = await Promise.all([r.qp.postChain([Wr.write(at, u64(1)), Wr.read(at, 8)]), other.qp.write(at, u64(2))]);
        const o = `READ=${new DataView(chain[1]!.data!.buffer).getBigUint64(0, true)}`;
        seen.set(o, (seen.get(o) ?? 0) + 1);
      }
      return check(seen, ['READ=2', 'READ=1'], (o) => o === 'READ=0', 'executions');
    },
  },
  {
    name: 'nic-protection-violation-touches-nothing',
    layer: 'nic',
    rule: 'a WRITE with a bad rkey, outside its MR or without REMOTE_WRITE fails with its code, moves the QP to error (later requests flushed) and touches no memory',
    mustBePossible: 'each violation: its code, then PMRPC_ERR_WR_FLUSHED, memory unchanged in visible memory and every crash image',
    mustBeImpossible: 'a changed byte anywhere',
    async run(seed) {
      const seen = new Map<string, number>();
      const cases: Array<[string, (r: Rig, ro: MemoryRegion) => { rkey: number; addr: number }]> = [
        ['bad-rkey', (r) => ({ rkey: (r.mr.rkey ^ 0x1234) >>> 0, addr: A })],
        ['out-of-mr', (r) => ({ rkey: r.mr.rkey, addr: 4096 - 4 })],
        ['no-access', (_r, ro) => ({ rkey: ro.rkey, addr: 4096 + A })],
      ];
      for (const [name, to] of cases) {
        const r = rig(seed);
        const ro = r.nic.registerMr(r.sqp.pd, 4096, 4096, Access.REMOTE_READ);
        const before = r.region.load(0, 8192);
        const states = captureCompletions(r.region);
        const cs = await r.qp.postChain([Wr.write(to(r, ro), new Uint8Array(8).fill(0xee)), Wr.write({ rkey: r.mr.rkey, addr: B }, u64(1))]);
        let untouched = Buffer.compare(r.region.load(0, 8192), before) === 0;
        outcomes(states, (i) => {
          if (Buffer.compare(i.load(0, 8192), before) !== 0) untouched = false;
          return '';
        });
        seen.set(`${name}: ${cs[0]!.code} then ${cs[1]!.code} ${untouched ? 'untouched' : 'TOUCHED'}`, 1);
      }
      const want = [
        'bad-rkey: PMRPC_ERR_BAD_RKEY then PMRPC_ERR_WR_FLUSHED untouched',
        'out-of-mr: PMRPC_ERR_OUT_OF_BOUNDS then PMRPC_ERR_WR_FLUSHED untouched',
        'no-access: PMRPC_ERR_ACCESS then PMRPC_ERR_WR_FLUSHED untouched',
      ];
      return check(seen, want, onlyIn(want), 'executions');
    },
  },
  {
    name: 'nic-receive-completion-follows-placement',
    layer: 'nic',
    rule: 'a receive completion (SEND, WRITE_WITH_IMM) is delivered only after the QP\'s earlier writes and the message itself are in host memory',
    mustBePossible: 'at the receive completion the CPU sees the earlier WRITE (B=7) and the SEND payload (A=1)',
    mustBeImpossible: 'the CPU sees a receive completion before either is visible',
    async run(seed) {
      const seen = new Map<string, number>();
      for (const drain of ['lazy', 'onFlush'] as const) {
        const r = rig(seed, { drain, lazyBound: 64 }, { idleDrain: false });
        r.sqp.postRecv({ id: 0, addr: A, len: 64 });
        r.sqp.postRecv({ id: 1, addr: A + 256, len: 64 });
        r.sqp.onRecvNotify(() => {
          for (const c of r.sqp.pollRecv()) {
            const o = c.op === 'send' ? `send A=${r.region.loadU64(A)} B=${r.region.loadU64(B)}` : `imm=${c.imm} B+8=${r.region.loadU64(B + 8)}`;
            seen.set(o, (seen.get(o) ?? 0) + 1);
          }
        });
        await r.qp.postChain([Wr.write({ rkey: r.mr.rkey, addr: B }, u64(7)), Wr.send(u64(1))]);
        await r.qp.postChain([Wr.write({ rkey: r.mr.rkey, addr: B + 8 }, u64(8)), Wr.writeImm({ rkey: r.mr.rkey, addr: B }, u64(7), 42)]);
      }
      return check(seen, ['send A=1 B=7', 'imm=42 B+8=8'], onlyIn(['send A=1 B=7', 'imm=42 B+8=8']), 'completions');
    },
  },
  {
    name: 'nic-placement-any-vs-ascending',
    layer: 'nic',
    rule: "an undrained 16-byte WRITE can leave any subset of its 8-byte words with placement 'any', only an ascending prefix with 'ascending'",
    mustBePossible: "any: second word without the first",
    mustBeImpossible: 'ascending: second word without the first',
    async run(seed) {
      const seen = new Map<string, number>();
      for (const placement of ['any', 'ascending'] as const) {
        const r = rig(seed, { placement, drain: 'onFlush' });
        const states = captureCompletions(r.region);
        await r.qp.write({ rkey: r.mr.rkey, addr: A }, new Uint8Array(16).fill(0xab));
        outcomes(states.slice(0, 1), (i) => `${placement} ${i.loadU8(A).toString(16)}/${i.loadU8(A + 8).toString(16)}`, seen);
      }
      return check(seen, ['any 0/ab', 'any ab/0', 'ascending ab/0', 'ascending ab/ab'], (o) => o === 'ascending 0/ab');
    },
  },
  ...redirectedFlushLitmus,
  ...multiRedirectedFlushLitmus,
];
