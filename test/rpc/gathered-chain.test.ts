// Under wflush the client gathers the calls of one synchronous run into one chain: ONE WRITE of
// their consecutive ring slots (each entry followed by zeros to its slot's end, the last without),
// then ONE range FLUSH over them (issue 29; docs/rpc.md). The chain stops where the ring wraps; no
// call is durable before the FLUSH that covers its entry completed; every call is applied exactly once.
import t from 'tap';
import type { RequestMessage } from '../../flush/index.js';
import { connectInProcess, type RpcStrategy } from '../../src/rpc/index.js';
import { ENTRY_HEADER_BYTES } from '../../recovery/index.js';
import { readU64, rig, settle } from './fixtures/rig.js';

function run(strategy: RpcStrategy) {
  const r = rig({ strategy });
  r.server.start();
  // Every request message the NIC is handed, as its work requests.
  const chains: RequestMessage['wrs'][] = [];
  const submit = r.nic.submit.bind(r.nic);
  r.nic.submit = (m: RequestMessage) => {
    chains.push(m.wrs);
    return submit(m);
  };
  const client = connectInProcess(r.server, r.fabric);
  return { ...r, client, chains };
}

t.test('wflush: a run of calls within the ring is one chain: one WRITE of their slots and one FLUSH over their entries', async (t) => {
  const { nic, client } = run('wflush');
  const before = nic.stats.flushes;
  const wrsBefore = nic.stats.wrs;
  const msgsBefore = nic.stats.messages;
  // ringSlots 4 (the rig's geometry): 3 calls from slot 0 fit without a wrap.
  const calls = [1, 2, 3].map(() => client.call('inc', new Uint8Array(8)));
  const durable: number[] = [];
  calls.forEach((c, i) => void c.durable.then(() => durable.push(i)));
  await Promise.all(calls.map((c) => c.result));
  t.same(durable.sort(), [0, 1, 2], 'every call durable');
  t.equal(nic.stats.messages - msgsBefore, 1, 'one request message for the run');
  t.equal(nic.stats.flushes - before, 1, 'one FLUSH');
  t.equal(nic.stats.wrs - wrsBefore, 2, 'one WRITE for the three entries, and the FLUSH');
  t.same(calls.map((c) => c.seq), [1, 2, 3]);
  const results = await Promise.all(calls.map((c) => c.result));
  t.same(results.map((b) => Number(readU64(b))), [1, 2, 3], 'each applied once, in order');
});

t.test('wflush: the chain stops where the ring wraps (and at the credit): more calls than slots take several chains', async (t) => {
  const { nic, client } = run('wflush');
  const msgsBefore = nic.stats.messages;
  const flushesBefore = nic.stats.flushes;
  const calls = Array.from({ length: 6 }, () => client.call('inc', new Uint8Array(8)));
  const results = await Promise.all(calls.map((c) => c.result));
  t.same(results.map((b) => Number(readU64(b))), [1, 2, 3, 4, 5, 6], 'each applied once, in order');
  const chains = nic.stats.messages - msgsBefore;
  t.ok(chains >= 2 && chains <= 6, `${chains} chains for 6 calls over a 4-slot ring`);
  t.equal(nic.stats.flushes - flushesBefore, chains, 'one FLUSH per chain');
});

t.test('wflush: the chain is one WRITE of consecutive slots (entries of any length, zeros to each slot end), then one persistent range FLUSH from the first entry to the end of the last', async (t) => {
  const { client, chains, region, store } = run('wflush');
  // Payloads of three lengths: three entry lengths, three paddings.
  const calls = [8, 40, 1].map((n) => client.call('inc', new Uint8Array(n).fill(0xab)));
  t.equal(chains.length, 0, 'nothing posted while the run goes on');
  const results = await Promise.all(calls.map((c) => c.result));
  t.same(results.map((b) => Number(readU64(b))), [1, 2, 3], 'each applied once, in order');
  const chain = chains.find((c) => c.length === 2 && c[0]!.op === 'write')!;
  t.ok(chain !== undefined, 'a chain of two work requests');
  const write = chain[0] as { op: string; to: { addr: number }; data: Uint8Array; unsignaled?: boolean };
  const flush = chain[1] as { op: string; placement: string; selectivity: string; addr: number; len: number };
  const slotBytes = store.geometry.slotBytes;
  t.equal(write.unsignaled, true, 'unsignaled: the FLUSH answers for it');
  // Each entry at its slot: ENTRY_HEADER_BYTES of header (its payload length at +24), the payload, padded to 8.
  const d = write.data;
  const dv = new DataView(d.buffer, d.byteOffset, d.byteLength);
  const entryLen = (i: number): number => (ENTRY_HEADER_BYTES + dv.getUint32(i * slotBytes + 24, true) + 7) & ~7;
  t.same([0, 1, 2].map((i) => dv.getUint32(i * slotBytes + 24, true)), [8, 40, 1], 'the three entries, each at its slot');
  t.equal(d.length, 2 * slotBytes + entryLen(2), 'the WRITE covers two whole slots and the last entry');
  for (let i = 0; i < 2; i++) {
    const pad = d.subarray(i * slotBytes + entryLen(i), (i + 1) * slotBytes);
    t.ok(pad.length > 0 && pad.every((x) => x === 0), `slot ${i}: zeros after its entry to the slot's end (${pad.length} bytes)`);
  }
  // What the server's ring holds: the WRITE's bytes (the FLUSH persisted them).
  t.same(region.load(write.to.addr, d.length), d, 'the ring holds the WRITE\'s bytes');
  t.same({ op: flush.op, placement: flush.placement, selectivity: flush.selectivity }, { op: 'flush', placement: 'persistent', selectivity: 'range' });
  t.equal(flush.addr, write.to.addr, 'the FLUSH starts at the first entry');
  t.equal(flush.addr + flush.len, write.to.addr + d.length, 'and ends with the last entry');
});

t.test('sflush posts one chain per call (only wflush gathers)', async (t) => {
  const { nic, client } = run('sflush');
  const msgsBefore = nic.stats.messages;
  const calls = [1, 2, 3].map(() => client.call('inc', new Uint8Array(8)));
  await Promise.all(calls.map((c) => c.result));
  t.equal(nic.stats.messages - msgsBefore, 3, 'one request message per call');
});
