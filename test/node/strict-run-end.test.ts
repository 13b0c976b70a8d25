// A strict PM file served by the rpc app over TCP (issue 29): the server CPU's pass that a NIC run
// schedules runs at the end of that run, inside its group commit (NodeHost's run-end scheduler,
// TcpNicServer's onRunEnd), so one socket read's entries and records share ONE msync, and its
// Responses and RESULTs leave from that msync's call back — where before a RESULT waited for two
// msyncs in a row (the NIC pass's, then the CPU pass's, queued behind it).
//
// The msync shim runs off the thread as the addon does (the bytes at the call land three macrotasks
// later, then the call back). Checked where each message leaves the NIC for its client (the
// region's ack gate runs first, and syncs on the thread whatever is still waiting): nothing was
// synced on the thread — every FLUSH completion and RESULT left from an msync's call back that
// covered it — and each RESULT's ring entry is on the shim's disk. Without the run-end
// scheduler the same rounds take about two async msyncs each (the count check fails).
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HEADER_BYTES, macrotaskTurn, type MsyncAsyncFn, type MsyncFn } from '../../pmem/index.js';
import type { ServerMessage } from '../../flush/index.js';
import { NodeHost } from '../../src/node/index.js';
import { RemoteRpcClient, WORKLOAD_METHOD, workloadPayload } from '../../src/server/index.js';
import { RPC_RESULT_IMM, RPC_RESULTS_IMM } from '../../src/rpc/index.js';
import { decodeResult, decodeResults } from '../../src/rpc/wire.js';
import type { RpcAppServer } from '../../src/apps/rpc/index.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/node/strict-run-end.test.ts)`);

const ROUNDS = 6;
const PER_ROUND = 16;

t.test('strict rpc over TCP: a round of requests takes one msync (entries and records); nothing leaves before its bytes are on the disk', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-run-end-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const disk = new Map<number, number>();
  let onThread = 0;
  let asyncSyncs = 0;
  let counting = false;
  const msync: MsyncFn = (mapping, off, len) => {
    if (counting) onThread++;
    const b = new Uint8Array(mapping);
    for (let i = off; i < off + len; i++) disk.set(i, b[i]!);
  };
  const msyncAsync: MsyncAsyncFn = (mapping, off, len, done) => {
    if (counting) asyncSyncs++;
    const b = new Uint8Array(mapping);
    const bytes = b.slice(off, off + len); // what the msync writes: the bytes at its call
    void (async () => {
      for (let i = 0; i < 3; i++) await macrotaskTurn();
      for (let i = 0; i < bytes.length; i++) disk.set(off + i, bytes[i]!);
      done(null);
    })();
  };
  const node = await NodeHost.start<RpcAppServer>({
    app: 'rpc',
    pmPath: join(dir, 'node.pm'),
    create: true,
    sizeBytes: 4 << 20,
    strict: true,
    appOptions: { strategy: 'wflush' },
    region: { msync, msyncAsync },
  });
  t.teardown(() => node.close());
  const region = node.region;
  const onDisk = (offset: number, len: number): boolean => region.load(offset, len).every((v, i) => disk.get(HEADER_BYTES + offset + i) === v);
  const store = node.server.store;
  // The ring entry of (the one client's) sequence seq: its 32-byte header, with the commit word's lap in it.
  const entryOnDisk = (seq: number): boolean => {
    const clientId = store.conn.entries()[0]!.clientId;
    return onDisk(store.ring(clientId).slotOffset(seq), 32);
  };
  // Where a message leaves the NIC for its client.
  const violations: string[] = [];
  let results = 0;
  let flushes = 0;
  const attach = node.nic.attach.bind(node.nic);
  node.nic.attach = (qpn: number, sink: (m: ServerMessage, lazy?: boolean) => void) =>
    attach(qpn, (m, lazy) => {
      if (counting && m.type === 'response') {
        for (const c of m.completions) {
          if (c.op !== 'flush' || c.status !== 'ok') continue;
          flushes++;
        }
      } else if (counting && m.type === 'notify' && m.imm === RPC_RESULT_IMM) {
        results++;
        const r = decodeResult(m.data)!;
        if (!entryOnDisk(r.seq)) violations.push(`RESULT of seq ${r.seq} left before its entry was on the disk`);
      } else if (counting && m.type === 'notify' && m.imm === RPC_RESULTS_IMM) {
        // Packed RESULTs (the client reads them): each one checked as it leaves.
        const ok = decodeResults(m.data, (seq) => {
          results++;
          if (!entryOnDisk(seq)) violations.push(`RESULT of seq ${seq} left (packed) before its entry was on the disk`);
        });
        if (!ok) violations.push('a malformed packed RESULT frame');
      }
      sink(m, lazy);
    });
  const client = await RemoteRpcClient.connect({ port: node.address().port, name: 'run-end' });
  t.teardown(() => client.close());
  let seq = 0;
  // One round to warm up (the handshake's syncs), then count.
  await Promise.all(Array.from({ length: PER_ROUND }, () => client.rpc.call(WORKLOAD_METHOD, workloadPayload(SEED, client.clientId, ++seq)).result));
  counting = true;
  const writes = (): number => node.tcp.connectionStats().find((c) => c.state === 'open')!.writes;
  const writesBefore = writes();
  for (let r = 0; r < ROUNDS; r++) {
    await Promise.all(Array.from({ length: PER_ROUND }, () => client.rpc.call(WORKLOAD_METHOD, workloadPayload(SEED, client.clientId, ++seq)).result));
  }
  counting = false;
  const serverWrites = writes() - writesBefore;
  t.same(violations, [], 'no RESULT left before its entry was on the disk');
  // The FLUSH's ACK (released by the NIC pass's call back) waits for the RESULTs the same call back
  // releases (flush/driver.ts): one socket write a round, not two.
  t.ok(serverWrites <= ROUNDS + 1, `${serverWrites} socket writes for ${ROUNDS} rounds (the ACK and the RESULTs of a round in one)`);
  t.equal(onThread, 0, 'nothing synced on the thread (the ack gate found every message\'s bytes synced)');
  t.ok(results >= ROUNDS * PER_ROUND, `${results} RESULTs checked`);
  // The client gathers a round's calls into chains of one WRITE (their slots) and one FLUSH (DurableRpcClient #gatheredWrs): one completion a chain.
  t.ok(flushes >= ROUNDS, `${flushes} FLUSH completions for ${ROUNDS} rounds`);
  t.ok(asyncSyncs <= ROUNDS + 1, `${asyncSyncs} async msyncs for ${ROUNDS} rounds of ${PER_ROUND} requests (one a round; two in a row without the run-end scheduler)`);
});
