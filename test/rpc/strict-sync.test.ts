// strict over the durable RPC server (wrflush: the server CPU persists the polled batch, then ACKs):
// with a recording msync shim (what a machine crash keeps), every ACK leaves only when the acked
// entries' bytes are on the disk; the ackBeforePersist fault switch makes the same check fail; a
// failing msync acknowledges nothing and cuts the connection with PMRPC_ERR_SYNC_FAILED.
// wflush (the NIC's FLUSH completion is the acknowledgement; group commit in flush/driver.ts): a
// shim on the link records, when each response leaves, whether its FLUSH range is on the disk;
// fewer msyncs than requests; the respondBeforeSync fault switch makes it fail; a failing msync
// answers every FLUSH with PMRPC_ERR_SYNC_FAILED and acknowledges none.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPrng, HEADER_BYTES, PmemRegion, seededEntropy, type MsyncAsyncFn, type MsyncFn } from '../../pmem/index.js';
import { InProcessFabric, Rnic, type DeliveryMode, type NicDriverFaults, type RequestMessage, type ServerMessage } from '../../flush/index.js';
import { layoutBytes, RecoveryStore } from '../../recovery/index.js';
import { connectInProcess, DurableRpcServer, reconnectInProcess, RPC_ACK_IMM, RPC_RESULT_IMM, RPC_RESULTS_IMM, type RpcFaults } from '../../src/rpc/index.js';
import { GEOMETRY, inc, SEED } from './fixtures/rig.js';
import { macrotaskTurn } from '../../pmem/index.js';
import { decodeAck, decodeResult, decodeResults } from '../../src/rpc/wire.js';

/** On a strict file region the server's passes run one per event-loop turn: let turns go by (bounded). */
async function turns(n = 200): Promise<void> {
  for (let i = 0; i < n; i++) await macrotaskTurn();
}

t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/rpc/strict-sync.test.ts)`);

async function run(t: Tap.Test, faults: RpcFaults | undefined, failing = false, strategy: 'wrflush' | 'gpspm' = 'wrflush', overlapped = false, reconnectWhileSyncing = false, clientCount = overlapped ? 2 : 1, geometry = GEOMETRY) {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-strict-rpc-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const disk = new Map<number, number>();
  let syncs = 0;
  const ctl = { failing: false };
  // Bytes a later msync wrote while an async one was in flight: its landing must not put older ones back.
  const newer = new Set<Set<number>>();
  const msync: MsyncFn = (mapping, off, len) => {
    if (ctl.failing) throw Object.assign(new Error('msync: Input/output error'), { code: 'EIO' });
    syncs++;
    const b = new Uint8Array(mapping);
    for (let i = off; i < off + len; i++) {
      disk.set(i, b[i]!);
      for (const n of newer) n.add(i);
    }
  };
  // overlapped: the batch's msync off the thread (PmemRegion.syncAsync). The shim copies the bytes
  // as they are at the call (what a real msync is sure to sync) and lands them on the disk a
  // few macrotasks later, then calls back: an acknowledgement sent before that finds them missing.
  let asyncSyncs = 0;
  let running = 0;
  // Most RESULTs of different clients released by one msync's call back, or in the microtasks right
  // after it (their records shared it).
  let resultsInCallback = new Set<number>();
  let clientsPerMsync = 0;
  let drainsWhileSyncing = 0;
  // An msync started from inside the previous one's call back: a group that found one running was
  // queued behind it (PmemRegion.syncAsync) instead of syncing on the thread.
  let inCallback = false;
  let queuedSyncs = 0;
  // RESULTs released by a call back that left after the next msync had started in it (the waiting
  // passes ran and started it first: their socket writes overlap it).
  let startedInWindow = false;
  let resultsAfterNextMsync = 0;
  const msyncAsync: MsyncAsyncFn = (mapping, off, len, done) => {
    if (ctl.failing) {
      setImmediate(() => done(Object.assign(new Error('msync: Input/output error'), { code: 'EIO' })));
      return;
    }
    asyncSyncs++;
    if (inCallback) {
      queuedSyncs++;
      startedInWindow = true;
    }
    running++;
    // at once, as a reconnect that arrives while this msync runs (the drop-reconnect tests reconnect
    // from inside a pass the same way)
    if (reconnectWhileSyncing && !reconnectedWhileSyncing) reconnect();
    const copy = new Uint8Array(mapping).slice(off, off + len);
    const rewritten = new Set<number>();
    newer.add(rewritten);
    // three turns later: the server's next passes (one per turn) run while it is in flight
    setImmediate(() => setImmediate(() => setImmediate(() => {
      newer.delete(rewritten);
      for (let i = 0; i < len; i++) if (!rewritten.has(off + i)) disk.set(off + i, copy[i]!);
      running--;
      inCallback = true;
      startedInWindow = false;
      resultsInCallback = new Set();
      try {
        done(null);
      } finally {
        // The replies it releases leave in a microtask right after it (strict-batch.ts: the next
        // msync starts first): count those too, then close the window.
        queueMicrotask(() => {
          inCallback = false;
          clientsPerMsync = Math.max(clientsPerMsync, resultsInCallback.size);
        });
      }
    })));
  };
  const region = PmemRegion.create(join(dir, 'r.pm'), layoutBytes(geometry), { strict: true, msync, ...(overlapped ? { msyncAsync } : {}), entropy: seededEntropy(createPrng(SEED)) });
  t.teardown(() => region.close({ writeBack: false }));
  const store = RecoveryStore.format(region, geometry);
  const nic = new Rnic(region, { ddio: true, entropy: seededEntropy(createPrng(SEED + 1)) });
  // Where an acknowledgement leaves: the NIC's sink of each QP (the link's end), right after the
  // ack gate. Each QP is one client's connection (`connecting` names it while it is set up).
  let connecting = 0;
  const clientOfQp = new Map<number, number>();
  const onMessage: Array<(client: number, m: ServerMessage) => void> = [];
  const attach = nic.attach.bind(nic);
  nic.attach = (qpn: number, sink: (m: ServerMessage, lazy?: boolean) => void) => {
    clientOfQp.set(qpn, connecting);
    return attach(qpn, (m, lazy) => {
      for (const f of onMessage) f(clientOfQp.get(m.qpn)!, m);
      sink(m, lazy);
    });
  };
  const fabric = new InProcessFabric(nic, { delivery: 'seeded', seed: SEED + 2 });
  const server = new DurableRpcServer(nic, store, { strategy, faults });
  server.register('inc', inc);
  server.start();
  // overlapped: two clients, so that one's batch is received and processed while the other's syncs
  // (a client's next batch waits for its credits, which come with the RESULTs).
  const clients = Array.from({ length: clientCount }, (_, k) => {
    connecting = k;
    return connectInProcess(server, fabric);
  });
  syncs = 0; // count the requests' msyncs, not the format's and the registration's
  // Requests committed (their records written) while an async msync ran: a batch that arrived while
  // the previous one synced ran at once, its redo-log step ordered after that msync (isOrdered).
  let committedWhileSyncing = 0;
  const commit = store.commit.bind(store);
  store.commit = (...args: Parameters<typeof store.commit>) => {
    if (running > 0) committedWhileSyncing++;
    return commit(...args);
  };
  const rings = clients.map((c) => ({ ring: store.ring(c.clientId), ackedUpTo: 0 }));
  /**
   * The complete records (of `client`, up to `upTo`; every one without them) on the disk (what a
   * machine crash keeps): a RESULT tells its client about its request and, by its credit, about
   * every earlier one; a resume point about all of them.
   */
  const recordsOnDisk = (when: string, client?: number, upTo?: number): void => {
    for (const rec of store.log.scan()) {
      if (rec.state !== 'applied' && rec.state !== 'complete-unapplied') continue;
      if (client !== undefined && (rec.clientId !== clients[client]!.clientId || rec.seq > upTo!)) continue;
      const off = store.layout.recordOffset(rec.index);
      const want = region.load(off + 8, 40); // the record's header past the flag word
      if (!want.every((v, i) => disk.get(HEADER_BYTES + off + 8 + i) === v)) violations.push(`record ${rec.lsn} (client ${rec.clientId} seq ${rec.seq}) not synced when ${when}`);
    }
  };
  // reconnectWhileSyncing: the first client reconnects while an async msync runs (its batch not
  // synced on the thread by another pass); the resume point it gets counts every request before
  // it as durable.
  let reconnectedWhileSyncing = false;
  const reconnect = (): void => {
    reconnectedWhileSyncing = running > 0 && region.unsyncedBytes > 0;
    connecting = 0;
    reconnectInProcess(server, fabric, clients[0]!);
    recordsOnDisk('a reconnect handed out the resume point');
  };
  const slotBytes = store.geometry.slotBytes;
  const violations: string[] = [];
  let acks = 0;
  let results = 0;
  region.setCrashPointHook((e) => {
    if (e.kind === 'drain' && running > 0) drainsWhileSyncing++;
  });
  // Checked as each message leaves the NIC for its client, right after the ack gate.
  onMessage.push((k, m) => {
    if (m.type !== 'notify') return;
    if (m.imm === RPC_RESULT_IMM || m.imm === RPC_RESULTS_IMM) {
      // A RESULT says "processed" (its request's record is replayed by recovery, even while its
      // applied flag lags: lazy flags), and its credit says "applied" up to appliedSeq: those
      // records must be on the disk when it leaves. (Packed RESULTs: each of them.)
      const one = (seq: number, appliedSeq: number): void => {
        results++;
        if (inCallback) resultsInCallback.add(k);
        if (inCallback && startedInWindow) resultsAfterNextMsync++;
        recordsOnDisk(`a RESULT (seq ${seq}, applied ${appliedSeq}) left`, k, Math.max(seq, appliedSeq));
      };
      if (m.imm === RPC_RESULT_IMM) {
        const r = decodeResult(m.data)!;
        one(r.seq, r.appliedSeq);
      } else if (!decodeResults(m.data, one)) violations.push('a malformed packed RESULT frame');
      return;
    }
    if (m.imm !== RPC_ACK_IMM) return;
    acks++;
    // The ACK covers every sequence of its client up to upTo: their entries' bytes must be synced now.
    const upTo = decodeAck(m.data)!;
    const r = rings[k]!;
    for (let seq = r.ackedUpTo + 1; seq <= upTo; seq++) {
      const off = r.ring.slotOffset(seq);
      const want = region.load(off, slotBytes);
      // A held ACK of an old connection can leave after the client, reconnected, reused the slot
      // (its resume point counted the entry as consumed): that entry is no longer there to check.
      if (new DataView(want.buffer).getUint32(16, true) !== seq) continue;
      if (!want.every((v, i) => disk.get(HEADER_BYTES + off + i) === v)) violations.push(`seq ${seq} of client ${k} acknowledged before its entry was synced`);
    }
    r.ackedUpTo = Math.max(r.ackedUpTo, upTo);
  });
  ctl.failing = failing;
  const calls = clients.flatMap((client) => Array.from({ length: 12 }, (_, i) => client.call('inc', new Uint8Array(16).fill(i))));
  const durable = calls.map((c) => c.durable.then(() => true, (e: unknown) => e));
  for (const c of calls) void c.result.catch(() => undefined);
  await turns();
  const settled = await Promise.race([Promise.all(durable), turns(50).then(() => undefined)]);
  return { violations, acks, results, syncs, asyncSyncs, clientsPerMsync, resultsAfterNextMsync, queuedSyncs, drainsWhileSyncing, committedWhileSyncing, reconnectedWhileSyncing, server, settled, durableCount: calls.length };
}

t.test('every ACK leaves after the acked entries are synced', async (t) => {
  const r = await run(t, undefined);
  t.ok(r.acks > 0, `${r.acks} ACKs, ${r.syncs} msyncs`);
  t.same(r.violations, [], 'no entry acknowledged before it was on the disk');
});

t.test('group commit: one msync per poll batch (entries, records, the previous batches\' images, flags and applied words)', async (t) => {
  const r = await run(t, undefined);
  t.equal(r.results, 12, 'every request answered');
  // Each poll batch sends one ACK (its entries) with its RESULTs; before lazy flags a batch cost 3
  // msyncs (records; images; flags at the ack gate), so this failed.
  t.ok(r.syncs <= r.acks, `${r.syncs} msyncs for ${r.acks} batches (ACKs) of 12 requests`);
  t.same(r.violations, []);
});

t.test('overlapped msync: a batch syncs off the thread while the next is received; no ACK or RESULT leaves before its msync', async (t) => {
  for (const strategy of ['wrflush', 'gpspm'] as const) {
    const r = await run(t, undefined, false, strategy, true);
    t.equal(r.results, 24, `${strategy}: every request of the two clients answered`);
    t.ok(r.asyncSyncs > 0, `${strategy}: ${r.asyncSyncs} msyncs off the thread, ${r.syncs} on it`);
    // A batch that found an msync running queued behind it (its msync started from that one's call back).
    t.ok(r.queuedSyncs > 0, `${strategy}: ${r.queuedSyncs} msyncs queued behind a running one`);
    // The redo log's next step depends on the running batch: the next CPU pass waits for its msync
    // (the requests keep arriving meanwhile) instead of syncing it on the thread.
    t.equal(r.syncs, 0, `${strategy}: no msync on the thread (${r.drainsWhileSyncing} drains while one ran)`);
    t.same(r.violations, [], `${strategy}: no entry acknowledged, no RESULT sent, before its bytes were on the disk`);
  }
});

t.test('overlapped msync: a reconnect while a batch syncs gets a resume point whose requests are on the disk', async (t) => {
  const r = await run(t, undefined, false, 'wrflush', true, true);
  t.ok(r.reconnectedWhileSyncing, 'the reconnect came while an msync ran, with its batch not synced yet');
  t.same(r.violations, [], 'every record before the resume point on the disk when it was handed out; every ACK and RESULT after its msync');
});

t.test('overlapped msync: the fault switch ackBeforePersist makes the same check fail', async (t) => {
  const r = await run(t, { ackBeforePersist: true }, false, 'wrflush', true);
  t.ok(r.violations.length > 0, `caught: ${r.violations[0] ?? 'nothing'}`);
});

t.test('overlapped msync: a failing msync acknowledges nothing; the connection is cut with PMRPC_ERR_SYNC_FAILED', async (t) => {
  const r = await run(t, undefined, true, 'wrflush', true);
  t.equal(r.acks, 0, 'no ACK left');
  t.equal(r.results, 0, 'no RESULT left');
  t.same(r.violations, []);
  t.ok(r.server.connectionErrors.some((e) => (e.error as { code?: string }).code === 'PMRPC_ERR_SYNC_FAILED'), 'the server recorded the coded error for the connection');
});

t.test('gpspm: one batch per pass for the flush requests received together (was one msync per request)', async (t) => {
  const r = await run(t, undefined, false, 'gpspm');
  t.equal(r.results, 12, 'every request answered');
  t.ok(r.acks > 0, `${r.acks} ACKs`);
  t.ok(r.syncs < 12, `${r.syncs} msyncs for 12 requests`);
  t.same(r.violations, [], 'no entry acknowledged before it was on the disk');
});

t.test('gpspm: the fault switch ackBeforePersist makes the same check fail', async (t) => {
  const r = await run(t, { ackBeforePersist: true }, false, 'gpspm');
  t.ok(r.violations.length > 0, `caught: ${r.violations[0] ?? 'nothing'}`);
});

t.test('the fault switch ackBeforePersist makes the same check fail', async (t) => {
  const r = await run(t, { ackBeforePersist: true });
  t.ok(r.violations.length > 0, `caught: ${r.violations[0] ?? 'nothing'}`);
});

t.test('a failing msync: nothing acknowledged after it, the connection is cut with PMRPC_ERR_SYNC_FAILED', async (t) => {
  const r = await run(t, undefined, true); // every msync from the first call on fails
  t.equal(r.acks, 0, 'no ACK left');
  t.same(r.violations, []);
  t.ok(r.server.connectionErrors.some((e) => (e.error as { code?: string }).code === 'PMRPC_ERR_SYNC_FAILED'), 'the server recorded the coded error for the connection');
});

/** wflush on a strict region: the link-side record of every response against the disk (the msync shim's copy). */
async function runWflush(t: Tap.Test, delivery: DeliveryMode, faults: NicDriverFaults | undefined, failing = false, overlapped = false, clientCount = 1) {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-strict-wflush-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const disk = new Map<number, number>();
  let syncs = 0;
  const ctl = { failing: false };
  // Bytes a later msync wrote while an async one was in flight: its landing must not put older ones back.
  const newer = new Set<Set<number>>();
  const msync: MsyncFn = (mapping, off, len) => {
    if (ctl.failing) throw Object.assign(new Error('msync: Input/output error'), { code: 'EIO' });
    syncs++;
    const b = new Uint8Array(mapping);
    for (let i = off; i < off + len; i++) {
      disk.set(i, b[i]!);
      for (const n of newer) n.add(i);
    }
  };
  // overlapped: the NIC pass's msync off the thread (flush/driver.ts, PmemRegion.syncAsync), as in
  // run(): the bytes as they are at the call land on the disk three macrotasks later, then the call back.
  let asyncSyncs = 0;
  // An msync started from inside the previous one's call back: a pass queued behind a running one.
  let inCallback = false;
  let queuedSyncs = 0;
  const msyncAsync: MsyncAsyncFn = (mapping, off, len, done) => {
    if (ctl.failing) {
      setImmediate(() => done(Object.assign(new Error('msync: Input/output error'), { code: 'EIO' })));
      return;
    }
    asyncSyncs++;
    if (inCallback) queuedSyncs++;
    syncs++;
    const copy = new Uint8Array(mapping).slice(off, off + len);
    const rewritten = new Set<number>();
    newer.add(rewritten);
    setImmediate(() => setImmediate(() => setImmediate(() => {
      newer.delete(rewritten);
      for (let i = 0; i < len; i++) if (!rewritten.has(off + i)) disk.set(off + i, copy[i]!);
      inCallback = true;
      try {
        done(null);
      } finally {
        inCallback = false;
      }
    })));
  };
  const region = PmemRegion.create(join(dir, 'r.pm'), layoutBytes(GEOMETRY), { strict: true, msync, ...(overlapped ? { msyncAsync } : {}), entropy: seededEntropy(createPrng(SEED)) });
  t.teardown(() => region.close({ writeBack: false }));
  const store = RecoveryStore.format(region, GEOMETRY);
  const nic = new Rnic(region, { ddio: true, entropy: seededEntropy(createPrng(SEED + 1)) });
  // The shim where an acknowledgement leaves: the NIC's sink of each QP (the link's end).
  const ranges = new Map<string, Array<{ addr: number; len: number }>>();
  const submit = nic.submit.bind(nic);
  nic.submit = (m: RequestMessage) => {
    const fl: Array<{ addr: number; len: number }> = [];
    for (const w of m.wrs) if (w.op === 'flush' && w.selectivity === 'range') fl.push({ addr: w.addr!, len: w.len! });
    ranges.set(`${m.qpn}/${m.seq}`, fl);
    return submit(m);
  };
  const violations: string[] = [];
  const codes: string[] = [];
  let acks = 0;
  const attach = nic.attach.bind(nic);
  nic.attach = (qpn: number, sink: (m: ServerMessage) => void) =>
    attach(qpn, (m) => {
      if (m.type === 'response') {
        const fl = ranges.get(`${m.qpn}/${m.seq}`) ?? [];
        m.completions.forEach((c) => {
          if (c.op !== 'flush') return;
          if (c.status !== 'ok') {
            codes.push(c.code ?? '?');
            return;
          }
          acks++;
          for (const { addr, len } of fl) {
            const want = region.load(addr, len);
            if (!want.every((v, i) => disk.get(HEADER_BYTES + addr + i) === v)) violations.push(`message ${m.seq}: FLUSH of [${addr}, ${addr + len}) acknowledged before it was synced`);
          }
        });
      }
      sink(m);
    });
  const fabric = new InProcessFabric(nic, { delivery, seed: SEED + 2, ...(faults === undefined ? {} : { faults }) });
  const server = new DurableRpcServer(nic, store, { strategy: 'wflush' });
  server.register('inc', inc);
  server.start();
  const clients = Array.from({ length: clientCount }, () => connectInProcess(server, fabric));
  syncs = 0;
  ctl.failing = failing;
  const n = 12 * clientCount;
  const calls = clients.flatMap((client) => Array.from({ length: 12 }, (_, i) => client.call('inc', new Uint8Array(16).fill(i))));
  let durable = 0;
  for (const c of calls) {
    c.durable.then(() => durable++, () => undefined);
    void c.result.catch(() => undefined);
  }
  await turns();
  return { violations, acks, syncs, asyncSyncs, queuedSyncs, durable, codes, n, results: calls.length };
}

for (const delivery of ['immediate', 'seeded'] as const) {
  t.test(`wflush (${delivery} delivery): every FLUSH completion leaves after its range is synced, fewer msyncs than requests`, async (t) => {
    const r = await runWflush(t, delivery, undefined);
    t.equal(r.durable, r.n, 'every request durable');
    // The client gathers each run of calls into one chain with one FLUSH (DurableRpcClient #gatheredWrs): one completion per chain, at least one.
    t.ok(r.acks >= 1 && r.acks <= r.n, `${r.acks} FLUSH completions for ${r.n} requests`);
    t.same(r.violations, [], 'no FLUSH acknowledged before its bytes were on the disk');
    // Before group commit in the NIC loop, every FLUSH msynced on its own: ≥ 12 msyncs for 12 requests.
    t.ok(r.syncs < r.n, `${r.syncs} msyncs for ${r.n} requests (FLUSHes and the server's batches)`);
  });

  t.test(`wflush (${delivery}): the fault switch respondBeforeSync makes the same check fail`, async (t) => {
    const r = await runWflush(t, delivery, { respondBeforeSync: true });
    t.ok(r.violations.length > 0, `caught: ${r.violations[0] ?? 'nothing'}`);
  });

  t.test(`wflush (${delivery}): a failing msync acknowledges no FLUSH; each is answered with PMRPC_ERR_SYNC_FAILED`, async (t) => {
    const r = await runWflush(t, delivery, undefined, true);
    t.equal(r.acks, 0, 'no FLUSH completion ok');
    t.equal(r.durable, 0, 'no request durable');
    t.ok(r.codes.length > 0 && r.codes.every((c) => c === 'PMRPC_ERR_SYNC_FAILED'), `error completions: ${r.codes.length}, codes ${[...new Set(r.codes)].join(', ')}`);
    t.same(r.violations, []);
  });
}

for (const delivery of ['immediate', 'seeded'] as const) {
  t.test(`wflush (${delivery}), the NIC pass's msync off the thread: every FLUSH completion leaves after its range landed on the disk`, async (t) => {
    const r = await runWflush(t, delivery, undefined, false, true);
    t.equal(r.durable, r.n, 'every request durable');
    t.ok(r.asyncSyncs > 0, `${r.asyncSyncs} msyncs off the thread`);
    // The client gathers each run of calls into one chain with one FLUSH (DurableRpcClient #gatheredWrs): one completion per chain, at least one.
    t.ok(r.acks >= 1 && r.acks <= r.n, `${r.acks} FLUSH completions for ${r.n} requests`);
    t.same(r.violations, [], 'no FLUSH acknowledged before its bytes were on the disk');
  });

  t.test(`wflush (${delivery}), msync off the thread: the fault switch respondBeforeSync makes the same check fail`, async (t) => {
    const r = await runWflush(t, delivery, { respondBeforeSync: true }, false, true);
    t.ok(r.violations.length > 0, `caught: ${r.violations[0] ?? 'nothing'}`);
  });

  t.test(`wflush (${delivery}), msync off the thread: a failing msync acknowledges no FLUSH; each is answered with PMRPC_ERR_SYNC_FAILED`, async (t) => {
    const r = await runWflush(t, delivery, undefined, true, true);
    t.equal(r.acks, 0, 'no FLUSH completion ok');
    t.equal(r.durable, 0, 'no request durable');
    t.ok(r.codes.length > 0 && r.codes.every((c) => c === 'PMRPC_ERR_SYNC_FAILED'), `error completions: ${r.codes.length}, codes ${[...new Set(r.codes)].join(', ')}`);
    t.same(r.violations, []);
  });
}

t.test('wflush, two clients, msync off the thread: a pass that finds an msync running queues behind it; no FLUSH completion leaves before its own msync', async (t) => {
  for (const delivery of ['immediate', 'seeded'] as const) {
    const r = await runWflush(t, delivery, undefined, false, true, 2);
    t.equal(r.durable, r.n, `${delivery}: every request of both clients durable`);
    t.ok(r.queuedSyncs > 0, `${delivery}: ${r.queuedSyncs} of ${r.asyncSyncs} msyncs queued behind a running one`);
    t.same(r.violations, [], `${delivery}: no FLUSH acknowledged before its bytes were on the disk`);
  }
});

t.test('overlapped msync, four clients: a batch that came while an msync ran is committed at once, the passes that waited for one msync share the next (one redo-log batch); no ACK or RESULT leaves before its msync', async (t) => {
  for (const strategy of ['wrflush', 'gpspm'] as const) {
    const r = await run(t, undefined, false, strategy, true, false, 4, { ...GEOMETRY, logRecords: 64 });
    t.equal(r.results, 48, `${strategy}: every request of the four clients answered`);
    t.equal(r.syncs, 0, `${strategy}: no msync on the thread`);
    // Each client's batch came while another's msync ran and waited for it; those that waited for
    // the same one run as one batch with one msync (was: one msync per client batch, 12 for 48 requests).
    t.ok(r.clientsPerMsync >= 2, `${strategy}: up to ${r.clientsPerMsync} clients answered by one msync's call back`);
    t.ok(r.asyncSyncs < 12, `${strategy}: ${r.asyncSyncs} msyncs for 48 requests (12 client batches)`);
    // A batch that came while an msync ran is committed at once (its redo-log step ordered after
    // that msync: what it writes reaches the file only after it), not held until its call back.
    t.ok(r.committedWhileSyncing > 0, `${strategy}: ${r.committedWhileSyncing} requests committed while an msync ran`);
    // The replies a call back releases leave after the passes that waited for it started the next
    // msync (was: written first, the next msync starting only after their socket writes).
    t.ok(r.resultsAfterNextMsync > 0, `${strategy}: ${r.resultsAfterNextMsync} RESULTs left after the next msync started`);
    t.same(r.violations, [], `${strategy}: no entry acknowledged, no RESULT sent, before its bytes were on the disk`);
  }
});
