// Under wflush the client gathers the calls of one synchronous run into one chain: their WRITEs into
// consecutive ring slots, then ONE range FLUSH over them (issue 29; docs/rpc.md). The chain stops
// where the ring wraps; no call is durable before the FLUSH that covers its entry completed; every
// call is applied exactly once.
import t from 'tap';
import type { RequestMessage } from '../../flush/index.js';
import { connectInProcess, type RpcStrategy } from '../../src/rpc/index.js';
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

t.test('wflush: a run of calls within the ring is one chain of WRITEs and one FLUSH over their entries', async (t) => {
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
  t.equal(nic.stats.wrs - wrsBefore, 4, 'three WRITEs and the FLUSH');
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

t.test('wflush: the chain is the WRITEs of consecutive slots, then one persistent range FLUSH from the first entry to the end of the last', async (t) => {
  const { client, chains } = run('wflush');
  const calls = [1, 2, 3].map(() => client.call('inc', new Uint8Array(8)));
  t.equal(chains.length, 0, 'nothing posted while the run goes on');
  await Promise.all(calls.map((c) => c.result));
  const chain = chains.find((c) => c.length === 4)!;
  t.ok(chain !== undefined, 'a chain of four work requests');
  const writes = chain.slice(0, 3) as Array<{ op: string; to: { addr: number }; data: Uint8Array }>;
  const flush = chain[3] as { op: string; placement: string; selectivity: string; addr: number; len: number };
  t.same(writes.map((w) => w.op), ['write', 'write', 'write']);
  const slot = writes[1]!.to.addr - writes[0]!.to.addr;
  t.equal(writes[2]!.to.addr - writes[1]!.to.addr, slot, 'consecutive ring slots');
  t.same({ op: flush.op, placement: flush.placement, selectivity: flush.selectivity }, { op: 'flush', placement: 'persistent', selectivity: 'range' });
  t.equal(flush.addr, writes[0]!.to.addr, 'the FLUSH starts at the first entry');
  t.equal(flush.addr + flush.len, writes[2]!.to.addr + writes[2]!.data.length, 'and ends with the last');
});

t.test('sflush posts one chain per call (only wflush gathers)', async (t) => {
  const { nic, client } = run('sflush');
  const msgsBefore = nic.stats.messages;
  const calls = [1, 2, 3].map(() => client.call('inc', new Uint8Array(8)));
  await Promise.all(calls.map((c) => c.result));
  t.equal(nic.stats.messages - msgsBefore, 3, 'one request message per call');
});
