// PRISM-TX on the explorer's World, driven by hand: commits, conflicts, coded errors, recovery of a
// shard, and the scenarios two mutants need (the crash suite at seed 1 does not reach them): a
// read-only transaction that would see a fractured read without validation, and a resolver that
// fences a slow client's prepare.
import t from 'tap';
import { crashImages, materialize, PmemRegion } from '../../../pmem/index.js';
import { checkAppendHistory, checkAppendSerializable, nicConfigFor, World, type StepChoice, type TxRecord } from '../../../src/testing/crash/index.js';
import { parseTxWelcome, TxClient, TxErrorCodes, TxResolver, txApp, txName, recordOffset, type ShardConn, type TxAppServer, type TxFaults, type TxOutcome } from '../../../src/apps/tx/index.js';

const SEED = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/apps/tx/tx.test.ts)`);

function cluster(shards = 2, faults: Partial<TxFaults> = {}): { world: World; server: (s: number) => TxAppServer; client: (c: number) => TxClient; resolver: () => TxResolver } {
  const world = new World(nicConfigFor(SEED, { eviction: 0, ddio: true }), SEED);
  for (let n = 0; n < shards; n++) {
    const o = txApp.resolveOptions({ shard: n, shards, keysPerShard: 2, clients: 4, items: 32, faults });
    const region = PmemRegion.createInMemory(txApp.minRegionBytes(o) + 64, { tracing: true });
    txApp.format(region, o);
    world.addNode(region, (host) => txApp.open(host, o)).server!.recover();
  }
  const source = (c: number) => {
    const conns: ShardConn[] = [];
    return (s: number): ShardConn | undefined => {
      if (world.nodes[s]!.crashed) return undefined;
      if (conns[s] === undefined || conns[s]!.qp.link.closed === true) {
        const { qp, welcome } = world.connect(s, new Uint8Array(0), c);
        conns[s] = parseTxWelcome(qp, welcome);
      }
      return conns[s];
    };
  };
  return {
    world,
    server: (s) => world.nodes[s]!.server as TxAppServer,
    client: (c) => new TxClient(source(c), { client: c, incarnation: 1, clock: world.clock, faults }),
    resolver: () => new TxResolver(source(3), { clock: world.clock, faults }),
  };
}

/** Runs `fn` on the world's scheduler to its end. */
async function drive<T>(world: World, fn: () => Promise<T>): Promise<T> {
  let done = false;
  let out: T | undefined;
  let err: unknown;
  void fn().then(
    (v) => {
      out = v;
      done = true;
    },
    (e: unknown) => {
      err = e;
      done = true;
    },
  );
  const r = await world.run(() => done, 200_000);
  if (r.status !== 'done') throw new Error(`the world ${r.status}`);
  if (err !== undefined) throw err;
  return out as T;
}

const td = new TextDecoder();
const te = new TextEncoder();

async function transfer(c: TxClient, keys: number[], tag: string): Promise<TxOutcome> {
  await c.begin();
  for (const k of keys) await c.write(k, te.encode(td.decode(await c.read(k)) + tag));
  const o = await c.commit();
  await c.settled(); // round 2 (install, COMMITTED, release) runs after commit() reports
  return o;
}

t.test('commits across two shards in two round trips; values, records and locks afterwards', async (t) => {
  const { world, server, client } = cluster();
  const c = client(0);
  const o1 = await drive(world, () => transfer(c, [0, 1], 'a'));
  t.equal(o1.status, 'committed');
  t.equal(c.lastRoundTrips, 2, 'prepare + install');
  const o2 = await drive(world, () => transfer(c, [0, 1, 2], 'b'));
  t.equal(o2.status, 'committed');
  for (const n of world.nodes) n.nic.drainAll();
  t.equal(td.decode(server(0).value(0)!.value), 'ab');
  t.equal(td.decode(server(1).value(0)!.value), 'ab');
  t.equal(td.decode(server(0).value(1)!.value), 'b');
  t.same([server(0).slot(0).lock, server(1).slot(0).lock], [0n, 0n], 'locks released');
  t.same(server(0).inspect().records, [`client 0: COMMITTED(${txName(o2.txid)})`]);
  t.same(server(0).audit(), []);
  const ro = await drive(world, async () => {
    await c.begin();
    const v = td.decode(await c.read(1));
    return { v, o: await c.commit() };
  });
  t.equal(ro.v, 'ab');
  t.equal(ro.o.status, 'committed', 'a read-only transaction validates and commits');
});

t.test('a conflicting transaction aborts with PMRPC_ERR_TX_CONFLICT and leaves nothing behind', async (t) => {
  const { world, server, client } = cluster();
  const a = client(0);
  const b = client(1);
  const outcomes = await drive(world, async () => {
    await a.begin();
    await b.begin();
    await a.write(0, te.encode('A'));
    await b.write(0, te.encode('B'));
    await a.write(1, te.encode('A'));
    await b.write(1, te.encode('B'));
    const oa = await a.commit();
    const ob = await b.commit();
    await a.settled();
    return [oa, ob];
  });
  t.equal(outcomes[0]!.status, 'committed');
  t.match(outcomes[1], { status: 'aborted', code: TxErrorCodes.CONFLICT }, 'the second saw a changed CT');
  for (const n of world.nodes) n.nic.drainAll();
  t.equal(td.decode(server(0).value(0)!.value), 'A');
  t.equal(td.decode(server(1).value(0)!.value), 'A');
  t.same([server(0).slot(0).lock, server(1).slot(0).lock], [0n, 0n]);
});

t.test('skip-validation: a read-only transaction that read across a commit aborts (mutant: commits a fractured read)', async (t) => {
  for (const mutant of [false, true]) {
    const { world, client } = cluster(2, { skipValidation: mutant });
    const reader = client(1);
    const writer = client(0);
    const r = await drive(world, async () => {
      await reader.begin();
      const k0 = td.decode(await reader.read(0));
      const ow = await transfer(writer, [0, 1], 'w');
      const k1 = td.decode(await reader.read(1));
      return { k0, k1, ow, or: await reader.commit() };
    });
    t.equal(r.ow.status, 'committed');
    t.same([r.k0, r.k1], ['', 'w'], 'the reader saw key 0 before and key 1 after the writer');
    if (!mutant) t.match(r.or, { status: 'aborted', code: TxErrorCodes.CONFLICT }, 'validation of key 0 failed: CT changed');
    else t.equal(r.or.status, 'committed', 'mutant skip-validation: the fractured read committed (caught)');
  }
});

/** A client's prepare on shard 1 is held back while a resolver runs: the resolver fences it. */
async function latePrepare(faults: Partial<TxFaults>): Promise<{ outcome: TxOutcome; k0: string; k1: string }> {
  const { world, server, client, resolver } = cluster(2, faults);
  const c = client(0);
  let hold = false;
  // Held: client 0's QP on shard 1 once round 1 began there and ran its first step (the check of
  // key 1, which the read locked: the resolver's release of that lock does not stop the rest of
  // the chain, so only the H CAS's compare with the fence does).
  let ran = 0;
  const mine = (ch: StepChoice): boolean => hold && c.lastRoundTrips >= 1 && ch.node === 1 && ch.client === 0;
  const held = (ch: StepChoice): boolean => mine(ch) && ran >= 1;
  world.chooser = (choices) => {
    const i = Math.max(0, choices.findIndex((ch) => !held(ch)));
    if (choices[i] !== undefined && mine(choices[i]!)) ran++;
    return i;
  };
  let outcome: TxOutcome | undefined;
  await drive(world, async () => {
    await c.begin();
    await c.write(0, te.encode('x'));
    await c.write(1, te.encode('x'));
  });
  hold = true;
  void c.commit().then((o) => void (outcome = o));
  // Until only the held prepare (shard 1) can run: shard 0 holds T's record.
  await world.run(() => c.lastRoundTrips >= 1 && world.choices().length > 0 && world.choices().every(held), 100_000);
  await drive(world, () => resolver().resolveAll(4));
  hold = false;
  await world.run(() => outcome !== undefined, 100_000);
  await drive(world, () => resolver().resolveAll(4));
  for (const n of world.nodes) n.nic.drainAll();
  return { outcome: outcome!, k0: td.decode(server(0).value(0)!.value), k1: td.decode(server(1).value(0)!.value) };
}

t.test('a resolver fences a slow client\'s prepare; the late prepare fails and the transaction aborts everywhere', async (t) => {
  const ok = await latePrepare({});
  t.match(ok.outcome, { status: 'aborted', code: TxErrorCodes.CONFLICT });
  t.same([ok.k0, ok.k1], ['', ''], 'nothing of it anywhere');
  for (const [name, faults] of [['no-fence-check', { noFenceCheck: true }], ['resolver-no-fence', { resolverNoFence: true }]] as const) {
    const m = await latePrepare(faults);
    const atomic = (m.k0 === 'x') === (m.k1 === 'x') && (m.outcome.status !== 'committed' || m.k0 === 'x');
    t.notOk(atomic, `mutant ${name}: ${m.outcome.status}, key 0 '${m.k0}', key 1 '${m.k1}' (caught)`);
  }
});

t.test('a shard crashes after the commit point: recovery keeps T prepared, the resolver rolls it forward', async (t) => {
  const { world, server, client, resolver } = cluster();
  const c = client(0);
  // Stop right after round 1: the records are durable on both shards, nothing installed.
  const o = await drive(world, () => transfer(c, [0, 1], 'z'));
  t.equal(o.status, 'committed');
  // A second transaction, crashed between its rounds: shard 1 crashes once every prepare is durable.
  await drive(world, async () => {
    await c.begin();
    await c.write(0, te.encode('P'));
    await c.write(1, te.encode('P'));
  });
  let crashed = false;
  world.onCrashPoint = (kind) => {
    if (crashed || kind !== 'delivery') return;
    if (server(1).record(0).h % 4n === 1n && server(0).record(0).h % 4n === 1n) {
      crashed = true;
      const st = world.nodes[1]!.region.crashState();
      const img = materialize(st, [...crashImages(st, { engine: 'none' })][0]!);
      world.crash(1);
      world.after(5, () => {
        const o2 = txApp.resolveOptions({ shard: 1, shards: 2, keysPerShard: 2, clients: 4, items: 32 });
        const region = PmemRegion.openImage(img, {});
        world.restart(1, region, (host) => txApp.open(host, o2)).server!.recover();
      });
    }
  };
  const o2 = await drive(world, () => c.commit());
  world.onCrashPoint = undefined;
  t.ok(crashed, 'shard 1 crashed between the rounds');
  t.equal(o2.status, 'committed', 'the commit point was reached: committed');
  await drive(world, () => resolver().resolveAll(4));
  for (const n of world.nodes) n.nic.drainAll();
  t.equal(td.decode(server(0).value(0)!.value), 'P');
  t.equal(td.decode(server(1).value(0)!.value), 'P', 'rolled forward on the restarted shard');
  t.same([...server(0).audit(), ...server(1).audit()], []);
});

t.test('bad input: coded errors and exact messages', async (t) => {
  const { world, client, server } = cluster(1);
  const c = client(0);
  await t.rejects(drive(world, () => c.read(0)), { code: TxErrorCodes.BAD_STATE });
  await t.rejects(drive(world, () => c.commit()), { code: TxErrorCodes.BAD_STATE });
  await drive(world, () => c.begin());
  await t.rejects(drive(world, () => c.begin()), { code: TxErrorCodes.BAD_STATE });
  await t.rejects(drive(world, () => c.write(0, new Uint8Array(200))), { code: TxErrorCodes.TOO_LARGE });
  await t.rejects(drive(world, () => c.write(0, 'x' as never)), new TypeError('value must be a Uint8Array'));
  const keys = server(0).geometry.keys;
  await t.rejects(drive(world, () => c.read(Number.NaN)), { code: TxErrorCodes.BAD_KEY, message: 'key must be a non-negative integer, got NaN' });
  await t.rejects(drive(world, () => c.read(-1)), { code: TxErrorCodes.BAD_KEY });
  await t.rejects(drive(world, () => c.write(keys, new Uint8Array(1))), { code: TxErrorCodes.BAD_KEY, message: `key ${keys} is not in [0, ${keys}): 1 shards of ${keys} keys` });
  t.equal((await drive(world, () => c.read(keys - 1))).length, 0, 'the last key still reads (the transaction stays usable)');
  t.throws(() => txApp.resolveOptions({ shards: 0 }), RangeError);
  t.throws(() => txApp.resolveOptions({ value: 'x' as never }), TypeError);
  t.throws(() => new TxClient(() => undefined, { client: 300, incarnation: 1, clock: world.clock, faults: {} }), new RangeError('client must be an integer in [0, 255], got 300'));
  const region = PmemRegion.createInMemory(1 << 16, {});
  txApp.format(region, txApp.resolveOptions({}));
  t.throws(() => txApp.format(region, txApp.resolveOptions({})), { code: TxErrorCodes.ALREADY_FORMATTED });
  t.throws(() => txApp.format(PmemRegion.createInMemory(1024, {}), txApp.resolveOptions({})), { code: TxErrorCodes.LAYOUT_TOO_LARGE });
});

/**
 * resolver-trusts-visible: a client's prepare on shard 1 stops after its H CAS, before its FLUSH
 * (the record is visible, not durable); a resolver decides, commits on shard 0, and shard 1 crashes
 * before the resolver reaches it. A resolver that FLUSHed what it read made the record durable.
 */
async function visibleRecord(faults: Partial<TxFaults>): Promise<{ k0: string; k1: string; error: string | undefined }> {
  const { world, server, client, resolver } = cluster(2, faults);
  const c = client(0);
  await drive(world, async () => {
    await c.begin();
    await c.write(0, te.encode('x'));
    await c.write(1, te.encode('x'));
  });
  // Client 0's prepare chain on shard 1: lock, check, body, the item's FLUSH, H CAS run; its FLUSH of H and the body waits.
  const recAddr = recordOffset(server(1).geometry, 0);
  const held = (ch: StepChoice): boolean => {
    if (c.lastRoundTrips < 1 || ch.node !== 1 || ch.client !== 0) return false;
    const next = world.nodes[1]!.nic.peekWr(ch.qpn)?.wr;
    return next?.op === 'flush' && next.addr === recAddr;
  };
  world.chooser = (choices) => {
    const i = choices.findIndex((ch) => !held(ch));
    return i < 0 ? 0 : i;
  };
  void c.commit().catch(() => undefined);
  await world.run(() => c.lastRoundTrips >= 1 && world.choices().length > 0 && world.choices().every(held), 100_000);
  world.nodes[1]!.nic.drainAll(); // the H CAS result reaches visible memory (a dirty line): visible, not durable
  let image: Uint8Array | undefined;
  world.onCrashPoint = () => {
    if (image !== undefined || world.nodes[0]!.crashed) return;
    if (server(0).record(0).h % 4n === 2n) {
      const st = world.nodes[1]!.region.crashState();
      image = materialize(st, [...crashImages(st, { engine: 'none' })][0]!);
      world.crash(1);
    }
  };
  let error: string | undefined;
  await drive(world, () => resolver().resolve(server(0).record(0).body!.txid)).catch((e: unknown) => void (error = String(e)));
  world.onCrashPoint = undefined;
  world.chooser = undefined;
  if (image === undefined) throw new Error(`shard 1 never crashed (${error ?? 'no error'}; shard 0: ${JSON.stringify(server(0).inspect().records)}, shard 1: ${JSON.stringify(server(1).inspect().records)})`);
  const o = txApp.resolveOptions({ shard: 1, shards: 2, keysPerShard: 2, clients: 4, items: 32 });
  world.restart(1, PmemRegion.openImage(image, {}), (host) => txApp.open(host, o)).server!.recover();
  await drive(world, () => resolver().resolveAll(4)).catch((e: unknown) => void (error ??= String(e)));
  for (const n of world.nodes) n.nic.drainAll();
  return { k0: td.decode(server(0).value(0)!.value), k1: td.decode(server(1).value(0)!.value), error };
}

t.test('a resolver FLUSHes the records it read before acting (mutant resolver-trusts-visible: commits on a record a crash takes back)', async (t) => {
  const ok = await visibleRecord({});
  t.same(ok, { k0: 'x', k1: 'x', error: undefined }, 'committed on both shards: the record the resolver read was durable');
  const m = await visibleRecord({ resolverTrustsVisible: true });
  t.ok(m.error !== undefined || m.k0 !== m.k1, `mutant: ${m.error ?? `key 0 '${m.k0}', key 1 '${m.k1}'`} (caught)`);
});

t.test('the explorer\'s history adapter: a fractured read is a G-single cycle, a lost commit an atomicity violation', async (t) => {
  const writer: TxRecord = { id: 1, process: 0, type: 'ok', kind: 'append', call: 1, ret: 4, mops: [{ f: 'r', key: 0, value: [] }, { f: 'r', key: 1, value: [] }, { f: 'append', key: 0, value: 1 }, { f: 'append', key: 1, value: 1 }] };
  const reader: TxRecord = { id: 2, process: 1, type: 'ok', kind: 'read', call: 2, ret: 5, mops: [{ f: 'r', key: 0, value: [] }, { f: 'r', key: 1, value: [1] }] };
  const finals = new Map([[0, [1]], [1, [1]]]);
  t.same(checkAppendSerializable([writer], finals), [], 'the writer alone is serializable');
  const bad = checkAppendSerializable([writer, reader], finals);
  t.ok(bad.some((p) => p.kind === 'elle-G-single'), bad.map((p) => `${p.kind}: ${p.detail}`).join('; '));
  t.ok(checkAppendHistory([writer, reader], finals).some((p) => p.kind === 'fractured-read'));
  const lost = checkAppendHistory([writer], new Map([[0, [1]], [1, []]]));
  t.match(lost, [{ kind: 'atomicity', detail: /committed but its append to key 1 is absent/ }]);
});

t.test('values carried in the record when the write set fits; the pointer path (items ALLOCATEd in round 1) when it does not — both commit, the record flag says which', async (t) => {
  // One shard: two 100-byte values make a body of 32 + 2·16 + 2·124 = 312 B (fits the 448 of a
  // record); four make 32 + 4·16 + 4·124 = 592 B (do not).
  const world = new World(nicConfigFor(SEED, { eviction: 0, ddio: true }), SEED);
  const o = txApp.resolveOptions({ shard: 0, shards: 1, keysPerShard: 4, clients: 2, items: 32 });
  const region = PmemRegion.createInMemory(txApp.minRegionBytes(o) + 64, { tracing: true });
  txApp.format(region, o);
  const srv = world.addNode(region, (host) => txApp.open(host, o)).server! as TxAppServer;
  srv.recover();
  const { qp, welcome } = world.connect(0, new Uint8Array(0), 0);
  const conn = parseTxWelcome(qp, welcome);
  const c = new TxClient(() => conn, { client: 0, incarnation: 1, clock: world.clock, faults: {} });
  const flag = (): boolean => (region.loadU32(recordOffset(srv.geometry, 0) + 64 + 4) & 0x8000_0000) !== 0;
  const write = async (keys: number[], len: number): Promise<TxOutcome> => {
    await c.begin();
    for (const k of keys) {
      await c.read(k);
      await c.write(k, te.encode(String(k).repeat(len).slice(0, len)));
    }
    const out = await c.commit();
    await c.settled();
    return out;
  };
  t.equal((await drive(world, () => write([0, 1], 100))).status, 'committed');
  t.ok(flag(), 'two 100-byte values: carried in the record');
  t.equal((await drive(world, () => write([0, 1, 2, 3], 100))).status, 'committed');
  t.notOk(flag(), 'four 100-byte values do not fit: the pointer path');
  for (const k of [0, 1, 2, 3]) t.equal(td.decode(srv.value(k)!.value), String(k).repeat(100), `key ${k} installed`);
  world.nodes[0]!.nic.drainAll();
  srv.sweep();
  t.equal(srv.freeItems().length, 32 - 4, 'every item but the four values back on the free list');
  t.same(srv.audit(), []);
});
