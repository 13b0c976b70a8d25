// Modelled time (issue 14): the World with a cost model. Exact accounting on a hand-computable
// scenario, resource queues, and determinism (one seed = one execution, bit for bit).
import t from 'tap';
import { Wr, type WorkRequest } from '../../flush/index.js';
import { addMemoryNode, modelChains, modelFlushCell, type ModelFlushCell } from '../../bench/index.js';
import { COST_PROFILES, CX4_OPTANE, World, costProfile, nicConfigFor, withCosts, wireOneWayNs, wrCost, type CostModel } from '../../src/testing/index.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/model/virtual-time.test.ts)`);

/** Round numbers so the sum can be checked by hand: 1 ns per byte on the wire, no headers. */
const HAND: CostModel = withCosts(CX4_OPTANE, {
  name: 'hand',
  wireRttUs: 2,
  wireGbps: 8,
  wireHeaderBytes: 0,
  nicVerbUs: 0.01,
  nicDoorbellUs: 0.1,
  doorbellBatch: 16,
  pcieDmaReadNs: 500,
  pcieDmaWriteNs: 200,
  // No media extra on DMA reads here (pmReadNs = dramReadNs): the hand sums below leave it out; its own test adds it.
  pmReadNs: 300,
  dramReadNs: 300,
  pmPersistNs: 50,
  pmPersistNsPer256B: 100,
  softwareNicUs: 0,
});

t.test('one WRITE + FLUSH costs exactly the sum of its parameters', async (t) => {
  const { us, time } = await modelChains(HAND, SEED, false, (rkey) => [[Wr.write({ rkey, addr: 4096 }, new Uint8Array(64)), Wr.flush('persistent', rkey, { addr: 4096, len: 64 })]]);
  const oneWay = (2000 - 10 - 500) / 2; // wireRttUs − nicVerbUs − pcieDmaReadNs, halved: 745
  const request = 2 * 32 + 64; // two WQEs + 64 B payload, at 1 ns/B: 128
  const write = 100 + 10 + 64; // doorbell + verb + 64 B streamed at line rate: 174
  const placed = write + 200 + 100; // + PCIe posted write + PM media for one 256 B XPLine (DDIO off)
  const flushDone = placed + 500; // the FLUSH's read waits for the placement, then one PCIe read
  const response = 2 * 8; // two completions of 8 B
  const total = oneWay + request + flushDone + response + oneWay;
  t.equal(total, 2608);
  t.equal(Math.round(us[0]![0]! * 1000), total, 'modelled round trip = the hand sum, to the nanosecond');
  t.equal(time!.nicWrs, 2);
  t.equal(time!.busyNs.pm, 100, 'the PM media served one XPLine');
  t.equal(time!.busyNs.nic, write + 10);
});

t.test('a small READ costs wireRttUs (the fabric share is derived from it)', async (t) => {
  const m = withCosts(HAND, { wireGbps: 1e9 }); // serialisation ~0
  const { us } = await modelChains(m, SEED, false, (rkey) => [[Wr.read({ rkey, addr: 4096 }, 64)]]);
  t.equal(wireOneWayNs(m), 745);
  // one-way + doorbell + verb + PCIe read + one-way = 2000 + doorbell (100)
  t.equal(Math.round(us[0]![0]! * 1000), 2100);
});

t.test('a DMA read of PM pays the media\'s extra over DRAM (pmReadNs − dramReadNs) per dependent PM access; scratch (NIC memory) none', async (t) => {
  const m = withCosts(HAND, { wireGbps: 1e9, pmReadNs: 305, dramReadNs: 102 }); // serialisation ~0; media extra 203 ns
  const one = async (wrs: (rkey: number) => WorkRequest[]): Promise<number> => Math.round((await modelChains(m, SEED, false, (rkey) => [wrs(rkey)])).us[0]![0]! * 1000);
  // The small READ of the test above (2100 ns on DRAM), now of PM: + 203.
  t.equal(await one((rkey) => [Wr.read({ rkey, addr: 4096 }, 64)]), 2100 + 203);
  // wrCost: a bounded indirect READ (PRISM-KV's GET) is two dependent PM reads — the pointer, then the data.
  t.equal(wrCost(m, Wr.read({ rkey: 1, addr: 4096 }, 64, { bounded: true })).latencyNs, 500 + 500 + 2 * 203);
  // The scratch buffer is the NIC's own memory: reading it, or taking an operand or a pointer from it, is no DMA.
  t.equal(wrCost(m, Wr.read({ scratch: 0 }, 8)).latencyNs, 0, 'a scratch READ: no PCIe read, no PM media');
  t.equal(wrCost(m, Wr.read({ scratch: 0 }, 64, { indirect: true, targetRkey: 1 })).latencyNs, 500 + 203, 'through a pointer in scratch: only the data\'s DMA read of PM');
  const slot = { rkey: 1, addr: 4096 };
  t.equal(wrCost(m, Wr.prismCasFrom('gt', slot, { scratch: 8 }, 32)).latencyNs, 500 + 203, 'a PRISM CAS whose operand is in scratch: the target\'s read only');
  t.equal(wrCost(m, Wr.prismCasFrom('gt', slot, { rkey: 1, addr: 8192 }, 32)).latencyNs, 500 + 500 + 2 * 203, 'an operand in PM: one more dependent DMA read of PM');
  t.equal(wrCost(m, { op: 'allocate', rkey: 1, sizeBytes: 64, from: { scratch: 0 }, len: 8 }).latencyNs, 0, 'ALLOCATE of scratch data: no DMA read');
  t.equal(wrCost(m, Wr.writeFrom(slot, { scratch: 0 }, 8)).latencyNs, 0, 'a WRITE of scratch data: no DMA read');
  t.equal(wrCost(m, Wr.flush('persistent', 1, { addr: 4096, len: 64 })).latencyNs, 500, 'a FLUSH reads no data');
  t.equal(wrCost(withCosts(m, { dramReadNs: 305 }), Wr.read({ rkey: 1, addr: 4096 }, 64)).latencyNs, 500, 'pmReadNs = dramReadNs: no extra');
  // A software NIC's loads pay pmReadNs already (no PCIe, no second media charge).
  t.equal(Math.round(wrCost(withCosts(m, { softwareNicUs: 0.2 }), Wr.read({ rkey: 1, addr: 4096 }, 64)).latencyNs), 305);
});

t.test('a work request after a FLUSH in one chain starts when the FLUSH completes (a durable chain: the CAS may not publish before the FLUSH persisted)', async (t) => {
  const m = withCosts(HAND, { wireGbps: 1e9 }); // serialisation ~0
  const wf = (rkey: number): WorkRequest[] => [Wr.write({ rkey, addr: 4096 }, new Uint8Array(64)), Wr.flush('persistent', rkey, { addr: 4096, len: 64 })];
  for (const ddio of [true, false]) {
    const rt = async (wrs: (rkey: number) => WorkRequest[]): Promise<number> => Math.round((await modelChains(m, SEED, ddio, (rkey) => [wrs(rkey)])).us[0]![0]! * 1000);
    const flushed = await rt(wf); // the chain's answer leaves when the FLUSH completes
    for (const conditional of [true, false]) {
      const cas = await rt((rkey) => [...wf(rkey), Wr.cas({ rkey, addr: 8192 }, 0n, 1n, { conditional })]);
      const casNs = wrCost(m, Wr.cas({ rkey: 1, addr: 8192 }, 0n, 1n)).latencyNs; // its own PCIe round trip (500) + media (0 here)
      // The CAS starts only when the FLUSH is done, so it completes one CAS latency after the FLUSH's completion.
      t.ok(cas >= flushed + casNs, `ddio ${String(ddio)}, conditional ${String(conditional)}: CAS done ${cas} >= FLUSH done ${flushed} + CAS latency ${casNs}`);
    }
  }
  // By hand (DDIO on): WRITE issued at doorbell + verb = 110, placed at 110 + 200 = 310; the FLUSH's read
  // waits for it: 310 + 500 = 810, then writes back the dirty line: + pmPersistNs 50 + one XPLine 100 = 960;
  // the CAS starts at 960: issued after verb 10 + nicAtomicUs 19, done one PCIe read later: 989 + 500 = 1489.
  // Round trip: 2 × one-way 745 + 1489.
  const hand = Math.round((await modelChains(m, SEED, true, (rkey) => [[...wf(rkey), Wr.cas({ rkey, addr: 8192 }, 0n, 1n, { conditional: true })]])).us[0]![0]! * 1000);
  t.equal(hand, 2 * 745 + 1489, 'the hand sum, to the nanosecond');
});

t.test('software NIC: a message is handed to the core before any of its work requests, the answer back after its last; a FLUSH is the core\'s fence', async (t) => {
  const m = withCosts(HAND, { wireGbps: 1e9, softwareNicUs: 0.1 }); // serialisation ~0
  const us = async (wrs: (rkey: number) => WorkRequest[]): Promise<number> => Math.round((await modelChains(m, SEED, false, (rkey) => [wrs(rkey)])).us[0]![0]! * 1000);
  // WRITE 64 B + FLUSH: arrives at 745; hand-in 200 (pcieDmaWriteNs); WRITE: doorbell 100 + verb 10 + core 100 → 1155,
  // placed + 200 + one XPLine 100 = 1455; FLUSH: core 110 → 1265, waits for the placement, + fence 50 → 1505;
  // hand-back 500 (pcieDmaReadNs) → 2005; + 745 on the way back.
  t.equal(await us((rkey) => [Wr.write({ rkey, addr: 4096 }, new Uint8Array(64)), Wr.flush('persistent', rkey, { addr: 4096, len: 64 })]), 2750);
  // READ 64 B of PM + FLUSH: the READ (a load, pmReadNs 300) ends the message: 745 + 200 + 210 + 300 + 500 + 745.
  t.equal(await us((rkey) => [Wr.read({ rkey, addr: 4096 }, 64), Wr.flush('persistent', rkey, { addr: 4096, len: 64 })]), 2700);
});

t.test('resources queue: two QPs contending on one NIC take longer than one', async (t) => {
  const chain = (rkey: number) => [[Wr.write({ rkey, addr: 4096 }, new Uint8Array(4096)), Wr.flush('persistent', rkey, { addr: 4096, len: 4096 })]];
  const one = await modelChains(CX4_OPTANE, SEED, false, chain, 1);
  const two = await modelChains(CX4_OPTANE, SEED, false, chain, 2);
  const alone = one.us[0]![0]!;
  const slowest = Math.max(two.us[0]![0]!, two.us[1]![0]!);
  t.ok(slowest > alone, `contended ${slowest} µs > alone ${alone} µs`);
  t.ok(two.time!.busyNs.pm! === 2 * one.time!.busyNs.pm!, 'both writes were served by the one PM media');
  // Pipelining: the pair finishes well before twice the time of one (NIC, PM and links overlap).
  t.ok(slowest < 2 * alone, `pipelined: ${slowest} < ${2 * alone}`);
});

const CELL: ModelFlushCell = { strategy: 'wflush', payloadBytes: 256, clients: 3, outstanding: 2, handlerUs: 0, placement: 'inline', ddio: true, ringSlots: 8 };

t.test('determinism: one seed is one exact execution; other costs give other times', async (t) => {
  const a = await modelFlushCell(CELL, CX4_OPTANE, SEED, 30);
  const b = await modelFlushCell(CELL, CX4_OPTANE, SEED, 30);
  t.same(b, a, 'same seed and costs: identical results, bit for bit');
  t.equal(a.requests, 90);
  t.ok(a.durableP50Us > 0 && a.throughputPerSecond > 0);
  // One client, one outstanding: no queueing, so the round trip shows (a saturated cell's latency is set by its bottleneck).
  const lone = { ...CELL, clients: 1, outstanding: 1 };
  const fast = await modelFlushCell(lone, CX4_OPTANE, SEED, 20);
  const slower = await modelFlushCell(lone, withCosts(CX4_OPTANE, { wireRttUs: 4 }), SEED, 20);
  t.ok(slower.durableP50Us >= fast.durableP50Us + 1.9, `wireRttUs 2 → 4: ${fast.durableP50Us} µs → ${slower.durableP50Us} µs`);
  const coupled = await modelFlushCell({ ...CELL, strategy: 'farm' }, CX4_OPTANE, SEED, 30);
  t.not(coupled.durableP50Us, a.durableP50Us, 'another strategy: another modelled time');
});

t.test('handler time charged to the CPU shows in the modelled latency', async (t) => {
  const base = await modelFlushCell({ ...CELL, strategy: 'farm', clients: 1, outstanding: 1 }, CX4_OPTANE, SEED, 20);
  const slow = await modelFlushCell({ ...CELL, strategy: 'farm', clients: 1, outstanding: 1, handlerUs: 10 }, CX4_OPTANE, SEED, 20);
  t.ok(slow.durableP50Us - base.durableP50Us >= 9.8, `a 10 µs handler adds ~10 µs to farm's reply (${base.durableP50Us} → ${slow.durableP50Us})`);
});

t.test('without a cost model the World is unchanged (no virtual time)', async (t) => {
  const w = new World(nicConfigFor(SEED), SEED);
  t.equal(w.time, undefined);
  t.equal(w.timeStats(), undefined);
  w.charge(5); // a no-op
  t.equal(w.nowUs, 0);
  const m = new World(nicConfigFor(SEED), SEED, { model: CX4_OPTANE });
  addMemoryNode(m, SEED);
  t.ok(m.time !== undefined);
  m.close();
});

t.test('timers fire at their modelled due time, a zero delay included', async (t) => {
  const w = new World(nicConfigFor(SEED), SEED, { model: CX4_OPTANE });
  const fired: number[] = [];
  w.clock.setTimer(0, () => fired.push(Number(w.clock.nowNs())));
  w.clock.setTimer(0.005, () => fired.push(Number(w.clock.nowNs())));
  const r = await w.run(() => fired.length === 2, 100);
  t.equal(r.status, 'done');
  t.same(fired, [0, 5000]);
});

t.test('profiles and parameter checks', async (t) => {
  t.same(Object.keys(COST_PROFILES), ['cx4-optane', 'cx3-optane', 'software-nic']);
  t.equal(costProfile('software-nic').softwareNicUs, 0.2);
  t.throws(() => costProfile('nope'), new TypeError('model must be one of cx4-optane, cx3-optane, software-nic, got nope'));
  t.throws(() => withCosts(CX4_OPTANE, { wireRttUs: -1 }), new RangeError('cost wireRttUs must be a finite number >= 0, got -1'));
  t.throws(() => withCosts(CX4_OPTANE, { doorbellBatch: 0 }), new RangeError('cost doorbellBatch must be an integer >= 1, got 0'));
  const w = new World(nicConfigFor(SEED), SEED, { model: CX4_OPTANE });
  t.throws(() => w.charge(Number.NaN), new RangeError('charge ns must be a finite number >= 0, got NaN'));
});

t.test('time faults (the swarm): a message delay on a QP adds exactly its ns, RC order holds, a pause holds the node', async (t) => {
  const m = withCosts(HAND, { wireGbps: 1e9 }); // serialisation ~0: a small READ costs 2100 ns (above)
  const readUs = async (faults: ((w: World) => void) | undefined, reads = 1): Promise<number[]> => {
    const world = new World({ drain: 'eager', ddio: false, placement: 'ascending', cacheEntriesMax: 65536, eviction: 0, idleDrain: false, lineModel: 'prefix' }, SEED, { model: m });
    const rkey = addMemoryNode(world, SEED);
    faults?.(world);
    const { qp } = world.connect(0, new Uint8Array(0), 0);
    const out: number[] = [];
    const t0 = world.nowUs;
    // Posted back to back: their completions must come back in posting order (RC) whatever the delays.
    const all = Array.from({ length: reads }, (_, i) => qp.postChain([Wr.read({ rkey, addr: 4096 }, 64)]).then(() => out.push(i === 0 ? Math.round((world.nowUs - t0) * 1000) : -i)));
    const r = await world.settle(Promise.all(all), 100_000);
    t.equal(r.status, 'done');
    world.close();
    return out;
  };
  t.same(await readUs(undefined), [2100]);
  t.same(await readUs((w) => (w.time!.faults = { messageDelayNs: (_n, _q, dir) => (dir === 'in' ? 1000 : 500), resumeAt: (_n, x) => x })), [3600], 'in 1000 + out 500 ns');
  // A pause of node 0 until 10 µs: the READ's work request starts at 10,000 ns, not at its arrival
  // (745 ns); it then takes what it takes from its start: 2100 − 745 ns (doorbell, verb, PCIe read, way back).
  t.same(await readUs((w) => (w.time!.faults = { messageDelayNs: () => 0, resumeAt: (_n, x) => (x < 10_000 ? 10_000 : x) })), [10_000 + 2100 - 745]);
  // Decreasing delays (later messages would overtake earlier ones): the QP's messages still arrive in order.
  let k = 0;
  const order = await readUs((w) => (w.time!.faults = { messageDelayNs: (_n, _q, dir) => (dir === 'in' ? Math.max(0, 5000 - 1000 * k++) : 0), resumeAt: (_n, x) => x }), 4);
  t.same(order.slice(1), [-1, -2, -3], 'completions in posting order');
});

t.test('time faults turned off with a delayed message still on the fabric: the QP\'s next message does not overtake it (RC order)', async (t) => {
  // The swarm turns its faults off for the liveness phase while messages delayed in the fault phase
  // may still be in flight. A message posted after that on the same QP once arrived first: rpc seed 153
  // (darpc) had SEND 45 land in the receive buffer posted for 42, read as PMRPC_ERR_RING_OVERRUN.
  const m = withCosts(HAND, { wireGbps: 1e9 });
  const world = new World({ drain: 'eager', ddio: false, placement: 'ascending', cacheEntriesMax: 65536, eviction: 0, idleDrain: false, lineModel: 'prefix' }, SEED, { model: m });
  const rkey = addMemoryNode(world, SEED);
  world.time!.faults = { messageDelayNs: (_n, _q, dir) => (dir === 'in' ? 5000 : 0), resumeAt: (_n, x) => x };
  const { qp } = world.connect(0, new Uint8Array(0), 0);
  const done: number[] = [];
  const first = qp.postChain([Wr.read({ rkey, addr: 4096 }, 64)]).then(() => done.push(1));
  world.time!.faults = undefined; // faults off: the first READ is still on its way (5 µs late)
  const second = qp.postChain([Wr.read({ rkey, addr: 4096 }, 64)]).then(() => done.push(2));
  const r = await world.settle(Promise.all([first, second]), 100_000);
  t.equal(r.status, 'done');
  t.same(done, [1, 2], 'completions in posting order');
  world.close();
});
