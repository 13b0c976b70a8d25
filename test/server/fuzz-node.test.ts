// Bad input against a durable RPC node (issue 5 item 5, "checked by inspect and recovery after the
// fuzz"): an RpcNode on a PM file serves a well-behaved client while fuzzed connections send bad
// handshakes (random Hello payloads) and a connected client sends random work requests (wrong
// rkeys, out-of-bounds and in-ring garbage). The good client's calls all complete; then the node
// dies as a crash would (no write-back), `inspect` reads the file, recovery runs on it, and the
// digest log holds every acknowledged request of the good client exactly once.
//
// Replay: PMRPC_SEED=<printed seed> npx tap test/server/fuzz-node.test.ts
import t from 'tap';
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QueuePair, Wr, type WorkRequest } from '../../flush/index.js';
import { TcpLink } from '../../src/transport/index.js';
import { RpcNode } from '../../src/server/node.js';
import { RemoteRpcClient } from '../../src/server/client.js';
import { decodeWelcomePayload, encodeHelloPayload } from '../../src/apps/rpc/index.js';
import { inspectFile } from '../../src/node/index.js';
import { verifyDigestLog, WORKLOAD_HANDLERS, WORKLOAD_METHOD, workloadPayload } from '../../src/server/workload.js';

const seed = Number(process.env.PMRPC_SEED ?? Date.now() % 2 ** 31);
t.comment(`fuzz-node seed ${seed} (replay: PMRPC_SEED=${seed} npx tap test/server/fuzz-node.test.ts)`);
const RUNS = 60;

t.test('fuzzed handshakes and work requests: the good client is served, inspect and recovery find the file sound', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-fuzz-node-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const pm = join(dir, 'node.pm');
  const node = await RpcNode.start({ pmPath: pm, create: true, sizeBytes: 2 << 20, strategy: 'wflush', handlers: WORKLOAD_HANDLERS });
  const { port } = node.address();
  const good = await RemoteRpcClient.connect({ port, name: 'good' });
  let sent = 0;
  const results: Array<Promise<Uint8Array>> = [];
  const goodCall = (): void => {
    sent++;
    results.push(good.rpc.call(WORKLOAD_METHOD, workloadPayload(seed, good.clientId, sent)).result);
  };

  // Bad handshakes: random bytes and random JSON as the Hello payload.
  const refusedCodes = new Set<string>();
  let accepted = 0;
  await fc.assert(
    fc.asyncProperty(fc.oneof(fc.uint8Array({ maxLength: 64 }), fc.json().map((s) => new TextEncoder().encode(s))), async (hello) => {
      goodCall();
      try {
        const { link } = await TcpLink.connect({ port, name: 'fuzz', hello });
        accepted++; // a payload that happens to be a valid request ({} or {awaiting: []}): a new client
        link.close();
      } catch (e) {
        refusedCodes.add((e as { code: string }).code);
      }
    }),
    { seed, numRuns: RUNS },
  );
  t.ok(refusedCodes.size > 0, `refused with ${[...refusedCodes].join(', ')}; ${accepted} accepted`);
  for (const c of refusedCodes) t.match(c, /^PMRPC_ERR_(BAD_HANDSHAKE|UNKNOWN_CLIENT|CLIENT_AUTH|CLIENT_RELEASED|REFUSED|LINK_CLOSED)$/);

  // A connected client sending random work requests into its ring, to wrong rkeys, out of bounds.
  const first = await TcpLink.connect({ port, name: 'evil', hello: encodeHelloPayload({}) });
  let evilLink = first.link;
  const info = decodeWelcomePayload(first.welcome);
  let evil = new QueuePair(evilLink);
  let evilReconnects = 0;
  const statuses = new Map<string, number>();
  const wr = fc.oneof(
    fc.record({ addr: fc.integer({ min: 0, max: info.ringSlots * info.slotBytes - 8 }), len: fc.integer({ min: 1, max: 64 }), rkeyOk: fc.boolean() }).map(
      ({ addr, len, rkeyOk }): WorkRequest => Wr.write({ rkey: rkeyOk ? info.rkey : (info.rkey ^ 0x55) >>> 0, addr: info.ringOffset + addr }, new Uint8Array(len).fill(0xa5)),
    ),
    fc.integer({ min: 0, max: 2 ** 32 - 1 }).map((addr): WorkRequest => Wr.read({ rkey: info.rkey, addr }, 8)),
    fc.constant(Wr.flush('persistent', info.rkey)),
  );
  await fc.assert(
    fc.asyncProperty(fc.array(wr, { minLength: 1, maxLength: 4 }), async (wrs) => {
      goodCall();
      if (evil.state === 'error' || evilLink.closed) {
        // A QP in the error state flushes everything: come back as the same client (a live reconnect).
        evilLink.close();
        const again = await TcpLink.connect({ port, name: 'evil', hello: encodeHelloPayload({ clientId: info.clientId, secret: info.secret }) });
        evilLink = again.link;
        evil = new QueuePair(evilLink);
        evilReconnects++;
      }
      try {
        for (const c of await evil.postChain(wrs)) statuses.set(c.code ?? c.status, (statuses.get(c.code ?? c.status) ?? 0) + 1);
      } catch (e) {
        statuses.set((e as { code: string }).code, (statuses.get((e as { code: string }).code) ?? 0) + 1);
      }
    }),
    { seed: seed + 1, numRuns: RUNS },
  );
  t.comment(`evil client completions: ${JSON.stringify(Object.fromEntries(statuses))}; ${evilReconnects} reconnects`);
  t.ok([...statuses.keys()].some((k) => k.startsWith('PMRPC_ERR_')), 'bad work requests got coded completions');

  await Promise.all(results);
  t.equal(good.rpc.durableUpTo, sent, `the good client's ${sent} calls are all durable and answered`);
  const acked = good.rpc.durableUpTo;
  good.close();
  evilLink.close();

  // Die as a crash would: no Goodbye drain of the NIC cache, no write-back.
  await node.tcp.close();
  node.rpc.close();
  node.nic.detach();
  node.region.close({ writeBack: false });

  const ins = inspectFile(pm);
  t.equal(ins.recovery.refused, undefined, 'recovery would not refuse');
  t.ok((ins.connections ?? []).some((c) => c.clientId === good.clientId), 'the good client is in the connection table');
  const again = await RpcNode.start({ pmPath: pm, strategy: 'wflush', handlers: WORKLOAD_HANDLERS });
  t.equal(again.recovery.created, false);
  const v = verifyDigestLog(again.store.appView, seed, [{ clientId: good.clientId, sentUpTo: sent, ackedUpTo: acked }]);
  t.same(v.messages, []);
  t.equal(v.lost + v.duplicates + v.corrupt + v.outOfOrder, 0);
  t.equal(v.applied, sent, 'every good request applied once, nothing else');
  await again.close();
  t.equal(inspectFile(pm).recovery.reexecute, 0, 'after recovery and an orderly close nothing is left to do');
});
