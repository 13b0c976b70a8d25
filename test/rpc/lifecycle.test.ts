// Client identity and lifecycle (issue 15, DESIGN §6): a client's id is useless without the secret
// issued at its registration (a takeover attempt gets PMRPC_ERR_CLIENT_AUTH and changes nothing);
// slots are given back on goodbye and on lease expiry, only once every entry of the client is
// applied, and reused: 10,000 distinct clients come and go through a 64-slot table, with a crash in
// the middle of a release (recovery finishes or undoes it; nothing acknowledged is lost), and a
// table that was full at a restart takes new clients once the old ones' leases expire.
import t from 'tap';
import { createPrng, crashImages, materialize, PmemRegion, seededEntropy, VirtualClock, type CrashState } from '../../pmem/index.js';
import { InProcessFabric, Rnic } from '../../flush/index.js';
import { layoutBytes, RecoveryStore, type LayoutOptions } from '../../recovery/index.js';
import { connectInProcess, DurableRpcServer, GOODBYE_METHOD, reconnectInProcess, type DurableRpcClient, type RpcHandler, type RpcServerOptions } from '../../src/rpc/index.js';
import { decodeWelcomePayload, encodeHelloPayload, rpcApp } from '../../src/apps/rpc/index.js';
import { SEED, settle } from './fixtures/rig.js';

t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/rpc/lifecycle.test.ts)`);

const CLIENTS = 10_000;
const MARKS = 16;
const GEOMETRY: Partial<LayoutOptions> = Object.freeze({ maxClients: 64, ringSlots: 4, slotBytes: 128, logRecords: 16, recordBytes: 128, appBytes: Math.ceil((MARKS + CLIENTS * 2 + 64) / 64) * 64 });

const u32 = (n: number): Uint8Array => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n, true);
  return b;
};

/** Not idempotent: bumps the byte of request `index` (the payload); a byte of 2 is a request applied twice. */
const mark: RpcHandler = (req, view) => {
  const i = new DataView(req.payload.buffer, req.payload.byteOffset, 4).getUint32(0, true);
  const v = view.load(MARKS + i, 1)[0]!;
  return { images: [{ offset: MARKS + i, bytes: new Uint8Array([v + 1]) }] };
};

function server(region: PmemRegion, clock: VirtualClock, seed: number, format: boolean, opts: Partial<RpcServerOptions> = {}) {
  const store = format ? RecoveryStore.format(region, GEOMETRY) : RecoveryStore.open(region);
  const nic = new Rnic(region, { entropy: seededEntropy(createPrng(seed + 1)) });
  const fabric = new InProcessFabric(nic, { delivery: 'seeded', seed: seed + 2 });
  const s = new DurableRpcServer(nic, store, { entropy: seededEntropy(createPrng(seed + 3)), clock, leaseMs: 1000, ...opts });
  s.register('mark', mark);
  return { store, nic, fabric, server: s };
}

function newRegion(seed: number): PmemRegion {
  return PmemRegion.createInMemory(layoutBytes(GEOMETRY), { tracing: true, entropy: seededEntropy(createPrng(seed)) });
}

const codeOf = async (fn: () => unknown): Promise<string | undefined> => {
  try {
    await fn();
  } catch (e) {
    return (e as { code?: string }).code ?? `not coded: ${(e as Error).message}`;
  }
  return undefined;
};

t.test('a Hello naming another client\'s id (no secret, a wrong one) gets PMRPC_ERR_CLIENT_AUTH and changes nothing', async (t) => {
  const clock = new VirtualClock();
  const region = newRegion(SEED);
  const { server: s, fabric, store } = server(region, clock, SEED, true);
  s.start();
  const victim = connectInProcess(s, fabric);
  t.match(victim.secret, /^[A-Za-z0-9_-]{43}$/, 'a 32-byte secret, base64url');
  await victim.call('mark', u32(0)).result;
  const before = region.load(0, region.sizeBytes);
  const applied = store.conn.appliedSeq(victim.clientId);
  const wrong = Buffer.alloc(32, 1).toString('base64url');
  t.equal(await codeOf(() => s.accept({ clientId: victim.clientId })), 'PMRPC_ERR_CLIENT_AUTH', 'no secret');
  t.equal(await codeOf(() => s.accept({ clientId: victim.clientId, secret: wrong })), 'PMRPC_ERR_CLIENT_AUTH', 'a wrong secret');
  t.same(region.load(0, region.sizeBytes), before, 'the failed attempts wrote nothing');
  t.equal(store.conn.appliedSeq(victim.clientId), applied);
  // The victim's connection was not taken over: it goes on, and reconnects with its own secret.
  await victim.call('mark', u32(1)).result;
  reconnectInProcess(s, fabric, victim);
  await victim.call('mark', u32(2)).result;
  t.same([...region.load(store.geometry.appOffset + MARKS, 3)], [1, 1, 1], 'the victim\'s requests, each once, and nothing else');
  // Another client's secret does not open the victim's slot either.
  const other = connectInProcess(s, fabric);
  t.equal(await codeOf(() => s.accept({ clientId: victim.clientId, secret: other.secret! })), 'PMRPC_ERR_CLIENT_AUTH');
  s.close();
});

t.test('through the app\'s Hello bytes (what a raw TCP peer sends): a victim\'s id without its secret is refused, nothing written', async (t) => {
  const o = rpcApp.resolveOptions({ layout: { maxClients: 4, ringSlots: 4, slotBytes: 128, logRecords: 8, recordBytes: 128 } });
  const region = PmemRegion.createInMemory(rpcApp.minRegionBytes(o), { entropy: seededEntropy(createPrng(SEED)) });
  rpcApp.format(region, o);
  const nic = new Rnic(region, { entropy: seededEntropy(createPrng(SEED + 1)) });
  const app = rpcApp.open({ region, nic, clock: new VirtualClock(), schedule: queueMicrotask, entropy: seededEntropy(createPrng(SEED + 2)) }, o);
  app.recover();
  const victim = decodeWelcomePayload(app.accept(new Uint8Array(0)).welcome);
  t.type(victim.secret, 'string', 'the welcome carries the new client\'s secret');
  const before = region.load(0, region.sizeBytes);
  for (const hello of [{ clientId: victim.clientId }, { clientId: victim.clientId, secret: Buffer.alloc(32).toString('base64url') }]) {
    t.equal(await codeOf(() => app.accept(encodeHelloPayload(hello))), 'PMRPC_ERR_CLIENT_AUTH', JSON.stringify(hello));
  }
  t.equal(await codeOf(() => app.accept(new TextEncoder().encode(JSON.stringify({ clientId: victim.clientId, secret: 5 })))), 'PMRPC_ERR_BAD_HANDSHAKE');
  t.same(region.load(0, region.sizeBytes), before, 'nothing written');
  const back = decodeWelcomePayload(app.accept(encodeHelloPayload({ clientId: victim.clientId, secret: victim.secret! })).welcome);
  t.equal(back.clientId, victim.clientId, 'the owner of the secret gets in');
  t.equal(back.secret, undefined, 'a reconnect is not sent the secret again');
  app.close();
});

t.test('goodbye releases the slot; a released id is refused with PMRPC_ERR_CLIENT_RELEASED; canRelease keeps a slot', async (t) => {
  const clock = new VirtualClock();
  const keep = new Set<number>();
  const { server: s, fabric, store } = server(newRegion(SEED), clock, SEED, true, { canRelease: (id) => !keep.has(id) });
  s.start();
  const a = connectInProcess(s, fabric);
  const b = connectInProcess(s, fabric);
  await Promise.all([a.call('mark', u32(0)).result, b.call('mark', u32(1)).result]);
  const secretA = a.secret!;
  await a.goodbye();
  t.notOk(store.conn.has(a.clientId), 'a is out of the table');
  t.equal(await codeOf(() => s.accept({ clientId: a.clientId, secret: secretA })), 'PMRPC_ERR_CLIENT_RELEASED');
  t.equal(await codeOf(() => a.call('mark', u32(9))), 'PMRPC_ERR_DISCONNECTED', 'a closed client sends nothing');
  keep.add(b.clientId);
  await b.goodbye();
  t.ok(store.conn.has(b.clientId), 'canRelease false: the slot is kept after the goodbye');
  t.equal(await codeOf(() => s.accept({ clientId: b.clientId, secret: b.secret! })), 'PMRPC_ERR_CLIENT_RELEASED', 'but the client that said goodbye cannot come back');
  keep.delete(b.clientId);
  t.same(s.releaseExpired(), [b.clientId], 'released once canRelease allows');
  // A client that places requests after its goodbye (only a raw client can): they are void, and
  // do not keep the slot.
  const c = connectInProcess(s, fabric);
  const bye = c.call(GOODBYE_METHOD, new Uint8Array(0));
  const after = [c.call('mark', u32(50)), c.call('mark', u32(51))];
  await bye.result;
  await settle(200);
  t.notOk(store.conn.has(c.clientId), 'released despite the entries placed after the goodbye');
  t.same([...store.appView.load(MARKS + 50, 2)], [0, 0], 'nothing after the goodbye was applied');
  c.close();
  await Promise.all(after.map((x) => x.result.catch(() => undefined)));
  t.same(s.releases, { goodbye: 3, lease: 0 });
  s.close();
});

t.test('a lease expires: a silent client loses its slot when a new one needs it', async (t) => {
  const clock = new VirtualClock();
  const { server: s, fabric, store } = server(newRegion(SEED), clock, SEED, true);
  s.start();
  const held: DurableRpcClient[] = [];
  for (let i = 0; i < 64; i++) held.push(connectInProcess(s, fabric));
  t.equal(await codeOf(() => s.accept()), 'PMRPC_ERR_TABLE_FULL', 'full, every lease alive');
  clock.advanceMs(500);
  await held[5]!.call('mark', u32(5)).result; // a sign of life
  clock.advanceMs(600);
  const fresh = connectInProcess(s, fabric);
  t.notOk(store.conn.has(held[0]!.clientId), 'the longest silent client was released');
  t.ok(store.conn.has(held[5]!.clientId), 'the client that called lately was not');
  t.equal(await codeOf(() => reconnectInProcess(s, fabric, held[0]!)), 'PMRPC_ERR_CLIENT_RELEASED');
  await fresh.call('mark', u32(7)).result;
  t.same(s.releases, { goodbye: 0, lease: 1 });
  s.close();
});

t.test(`${CLIENTS} distinct clients through a 64-slot table, a crash in the middle of a release, a full table after the restart`, async (t) => {
  const prng = createPrng(SEED);
  const clock = new VirtualClock();
  let region = newRegion(SEED);
  let srv = server(region, clock, SEED, true);
  srv.server.start();
  /** Request index -> told durable. */
  const acked = new Set<number>();
  let issued = 0;
  let crashed = false;
  let captured: { state: CrashState; ackedThen: Set<number> } | undefined;
  let restarts = 0;
  const live = new Map<number, DurableRpcClient>();
  const victimAt = Math.floor(CLIENTS / 2);
  let finishes = 0;
  let victimId = -1;

  /** One client: connect, 1-3 requests, goodbye (the victim: its goodbye is where the server crashes). */
  const cycle = async (n: number): Promise<void> => {
    const c = connectInProcess(srv.server, srv.fabric);
    live.set(n, c);
    const calls = Array.from({ length: prng.int(1, 3) }, () => {
      const i = issued++;
      const call = c.call('mark', u32(i));
      call.durable.then(() => acked.add(i), () => undefined);
      return call;
    });
    await Promise.all(calls.map((x) => x.result.catch(() => undefined)));
    if (n === victimAt) {
      victimId = c.clientId;
      // The crash state at each crash point of this client's goodbye (alone on the server: its
      // record, its release, its answer); the server dies at the answer: the release is decided
      // (durable release word), its id word clear is not durable yet — the middle of the release.
      const states: Array<{ kind: string; state: CrashState }> = [];
      region.setCrashPointHook((e) => states.push({ kind: e.kind, state: region.crashState() }));
      await c.goodbye();
      region.setCrashPointHook(undefined);
      const at = states.map((x) => x.kind).lastIndexOf('completion');
      captured = { state: states[at]!.state, ackedThen: new Set(acked) };
      t.comment(`the victim's goodbye had ${states.length} crash points (${states.map((x) => x.kind).join(', ')}); the crash is at #${at}`);
      crashed = true;
      return;
    }
    await c.goodbye();
    live.delete(n);
  };

  let n = 0;
  while (n < CLIENTS) {
    if (n === victimAt) {
      // Bystanders: connected, with acknowledged requests, when the server dies.
      for (let b = 0; b < 8; b++) {
        const c = connectInProcess(srv.server, srv.fabric);
        live.set(-1 - b, c);
        const i = issued++;
        await c.call('mark', u32(i)).durable;
        acked.add(i);
      }
      await cycle(n++);
      await crashAndRestart();
    }
    const wave = Array.from({ length: Math.min(32, CLIENTS - n, n < victimAt ? victimAt - n : CLIENTS) }, () => cycle(n++));
    await Promise.all(wave);
  }

  async function crashAndRestart(): Promise<void> {
    if (crashed && captured !== undefined) {
      crashed = false;
      // The server dies at the captured point: a random image of it, a restart, recovery.
      srv.server.close();
      // Media alone: nothing pending survives (the id word clear is lost, the release word is not).
      const imgs = [...crashImages(captured.state, { engine: 'none' })];
      region = PmemRegion.openImage(materialize(captured.state, imgs[0]!), { tracing: true });
      srv = server(region, clock, SEED + 100, false);
      const report = srv.server.start()!;
      finishes += report.releasesFinished.length;
      t.ok(report.releasesFinished.includes(victimId), 'the victim\'s release, cut in the middle, is finished by recovery');
      restarts++;
      const view = srv.store.appView;
      const lost = [...captured.ackedThen].filter((i) => view.load(MARKS + i, 1)[0] !== 1);
      t.same(lost, [], `after the crash: every request acknowledged before it is applied (${captured.ackedThen.size} checked)`);
      t.comment(`recovery: ${report.releasesFinished.length} decided release(s) finished, ${report.clients.length} clients in the table`);
      // The clients that were alive reconnect with their secrets and leave.
      for (const [k, c] of live) {
        if (k === victimAt) continue;
        reconnectInProcess(srv.server, srv.fabric, c);
        await c.goodbye();
      }
      live.clear();
      // Requests acknowledged after the captured point never reached this image: those clients are gone; forget them.
      for (const i of acked) if (!captured.ackedThen.has(i)) acked.delete(i);
      captured = undefined;
    }
  }
  await settle(100);
  t.equal(restarts, 1, 'one crash in the middle of a release');
  t.ok(finishes >= 1, `recovery finished ${finishes} decided releases whose id word clear was not durable yet (row release-finish), the victim's among them`);
  t.equal(srv.store.conn.entries().length, 0, 'every slot given back');
  const view = srv.store.appView;
  const twice: number[] = [];
  const missing: number[] = [];
  for (let i = 0; i < issued; i++) {
    const v = view.load(MARKS + i, 1)[0]!;
    if (v > 1) twice.push(i);
    if (acked.has(i) && v !== 1) missing.push(i);
  }
  t.same(twice, [], 'nothing applied twice');
  t.same(missing, [], `every acknowledged request applied (${acked.size})`);
 t.ok(srv.store.layout.nextClientId > CLIENTS + 8, `${srv.store.layout.nextClientId - 1} ids issued, never reused`);
  t.comment(`releases after the restart: ${JSON.stringify(srv.server.releases)}; finished by recovery: ${finishes}`);

  // A table that was full at a restart: new clients are accepted once the old leases expire.
  const full: DurableRpcClient[] = [];
  for (let i = 0; i < 64; i++) full.push(connectInProcess(srv.server, srv.fabric));
  await Promise.all(full.map((c, i) => c.call('mark', u32(issued + i)).durable));
  srv.server.close();
  const st = region.crashState();
  const again = server(PmemRegion.openImage(materialize(st, [...crashImages(st, { engine: 'none' })][0]!), { tracing: true }), clock, SEED + 200, false);
  again.server.start();
  t.equal(again.store.conn.entries().length, 64, 'restarted with a full table');
  t.equal(await codeOf(() => again.server.accept()), 'PMRPC_ERR_TABLE_FULL', 'every old client has a fresh lease after the restart');
  clock.advanceMs(500);
  reconnectInProcess(again.server, again.fabric, full[0]!);
  clock.advanceMs(600);
  const fresh = connectInProcess(again.server, again.fabric);
  await fresh.call('mark', u32(issued + 100)).result;
  t.pass('a new client is accepted once a lease expired');
  t.equal(again.server.releaseExpired().length, 62, 'the other silent clients are released; the one that reconnected is not (its lease was renewed at its reconnect)');
  again.server.close();
});
