// Bad input over the wire (issue 5, item 5): seeded, bounded fast-check fuzzing of a TcpNicServer
// on a file-backed region — random bytes, truncated frames, oversized lengths, unknown fields,
// random work requests with wrong rkeys and out-of-bounds addresses, wrong QP numbers, wrong auth
// tokens, frames of the wrong kind. Each gets a coded Goodbye, a coded completion or a closed
// connection; meanwhile a well-behaved client keeps writing, flushing and reading back; afterwards
// the server still accepts, and the region — closed as a crash would (no write-back) and reopened —
// holds exactly what it should outside the fuzzed client's MR.
//
// Replay: PMRPC_SEED=<printed seed> npx tap test/transport/fuzz.test.ts
import t from 'tap';
import fc from 'fast-check';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Access, QueuePair, Rnic, Wr, type Loc, type WorkRequest } from '../../flush/index.js';
import { createPrng, PmemRegion, seededEntropy } from '../../pmem/index.js';
import { encodeMessage, frameBytes, PROTOCOL_VERSION, type WireMessage } from '../../src/transport/index.js';
import { TcpLink, TcpNicServer, type DisconnectInfo } from '../../src/transport/index.js';
import { RawClient } from './fixtures/helpers.js';

const seed = Number(process.env.PMRPC_SEED ?? Date.now() % 2 ** 31);
t.comment(`fuzz seed ${seed} (replay: PMRPC_SEED=${seed} npx tap test/transport/fuzz.test.ts)`);

const REGION = 1 << 16;
const F = { offset: 0, len: 16384 }; // the fuzzed client's MR
const G = { offset: 32768, len: 16384 }; // the good client's MR
const TOKEN = 'fuzz-token';
const MAX_FRAME = 64 * 1024;
const RUNS = Number(process.env.PMRPC_FUZZ_RUNS ?? 2000);
const GOODBYE_CODES = new Set([
  'PMRPC_ERR_BAD_FRAME',
  'PMRPC_ERR_FRAME_TOO_LARGE',
  'PMRPC_ERR_HANDSHAKE',
  'PMRPC_ERR_PROTOCOL_VERSION',
  'PMRPC_ERR_AUTH',
  'PMRPC_ERR_WRONG_QP',
  'PMRPC_ERR_HANDSHAKE_TIMEOUT',
]);

const sentinel = (off: number): number => (off * 31 + 7) & 0xff;

t.test('fuzzing the wire: coded errors or closed connections, other clients served, the region intact', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-fuzz-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'pm');
  const region = PmemRegion.create(path, REGION, { entropy: seededEntropy(createPrng(seed)) });
  // Everything outside F starts as a persisted sentinel pattern.
  const init = Uint8Array.from({ length: REGION - F.len }, (_, i) => sentinel(F.len + i));
  region.store(F.len, init);
  region.persist(F.len, init.length);
  const nic = new Rnic(region, { entropy: seededEntropy(createPrng(seed + 1)) });
  const pdF = nic.allocPd();
  const pdG = nic.allocPd();
  const mrF = nic.registerMr(pdF, F.offset, F.len, Access.ALL);
  const mrG = nic.registerMr(pdG, G.offset, G.len, Access.ALL);
  const disconnects: DisconnectInfo[] = [];
  const server = new TcpNicServer(nic, {
    authToken: TOKEN,
    maxFrameBytes: MAX_FRAME,
    handshakeTimeoutMs: 3000,
    closeLingerMs: 500,
    maxConnections: 16,
    accept: (h) => ({ qp: nic.createQp(h.clientName === 'good' ? pdG : pdF) }),
    onDisconnect: (d) => disconnects.push(d),
  });
  const { port } = await server.listen();

  // ---------------------------------------------------------------- the good client, running throughout
  const shadow = region.load(G.offset, G.len); // what G must hold (persisted sentinel, then the good writes)
  const { link } = await TcpLink.connect({ port, authToken: TOKEN, name: 'good' });
  const good = new QueuePair(link);
  let goodOps = 0;
  let goodFailure: unknown;
  let fuzzing = true;
  const goodLoop = (async () => {
    const rng = createPrng(seed ^ 0x5a5a);
    while (fuzzing && goodOps < 100_000) {
      const off = G.offset + rng.int(0, G.len / 64 - 1) * 64;
      const data = Uint8Array.from({ length: 64 }, () => rng.int(0, 255));
      try {
        const cs = await good.postChain([Wr.write({ rkey: mrG.rkey, addr: off }, data), Wr.flush('persistent', mrG.rkey, { addr: off, len: 64 }), Wr.read({ rkey: mrG.rkey, addr: off }, 64)]);
        if (!cs.every((c) => c.status === 'ok') || Buffer.compare(cs[2]!.data!, data) !== 0) throw new Error(`good client: ${JSON.stringify(cs.map((c) => [c.status, c.code]))}`);
        shadow.set(data, off - G.offset);
        goodOps++;
      } catch (e) {
        goodFailure = e;
        return;
      }
      await new Promise((r) => setImmediate(r));
    }
  })();

  // ---------------------------------------------------------------- arbitraries
  const rkey = fc.oneof(fc.constant(mrF.rkey), fc.constant(mrG.rkey), fc.integer({ min: 0, max: 0xffffffff }));
  const addr = fc.oneof(fc.integer({ min: 0, max: REGION + 4096 }), fc.constantFrom(0, F.len - 8, F.len - 1, F.len, G.offset, REGION - 8), fc.integer({ min: 0, max: 2 ** 40 }));
  const loc: fc.Arbitrary<Loc> = fc.oneof(fc.record({ rkey, addr }), fc.record({ scratch: fc.integer({ min: 0, max: 300 }) }));
  const data = fc.uint8Array({ maxLength: 64 });
  const len = fc.oneof(fc.integer({ min: 0, max: 64 }), fc.integer({ min: 0, max: 70_000 }));
  const opt = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });
  const flags = { conditional: opt(fc.boolean()), redirect: opt(fc.integer({ min: 0, max: 300 })), unsignaled: opt(fc.boolean()) };
  const ptrFlags = { indirect: opt(fc.boolean()), bounded: opt(fc.boolean()), targetRkey: opt(rkey) };
  const wr: fc.Arbitrary<WorkRequest> = fc.oneof(
    fc.record({ ...flags, ...ptrFlags, op: fc.constant('write' as const), to: loc, data }),
    fc.record({ ...flags, ...ptrFlags, op: fc.constant('write' as const), to: loc, from: loc, len }),
    fc.record({ ...flags, ...ptrFlags, op: fc.constant('read' as const), from: loc, len }),
    fc.record({ ...flags, op: fc.constant('send' as const), data }),
    fc.record({ ...flags, op: fc.constant('cas' as const), at: loc, compare: fc.uint8Array({ minLength: 8, maxLength: 8 }), swap: fc.uint8Array({ minLength: 7, maxLength: 9 }) }),
    fc.record({ ...flags, op: fc.constant('faa' as const), at: loc, add: fc.uint8Array({ minLength: 8, maxLength: 8 }) }),
    fc.record({ ...flags, op: fc.constant('atomicWrite' as const), at: loc, value: fc.uint8Array({ minLength: 8, maxLength: 8 }) }),
    fc.record({ ...flags, op: fc.constant('flush' as const), placement: fc.constantFrom('global' as const, 'persistent' as const), selectivity: fc.constantFrom('range' as const, 'mr' as const), rkey, addr: opt(addr), len: opt(len) }),
    fc.record({ ...flags, op: fc.constant('prismCas' as const), mode: fc.constantFrom('eq' as const, 'ne' as const, 'lt' as const, 'le' as const, 'gt' as const, 'ge' as const), at: loc, indirect: opt(fc.boolean()), targetRkey: opt(rkey), data: fc.uint8Array({ maxLength: 40 }), len: fc.integer({ min: 0, max: 40 }) }),
    fc.record({ ...flags, op: fc.constant('allocate' as const), rkey, sizeBytes: fc.constantFrom(8, 64, 100, 4096), data }),
  ) as fc.Arbitrary<WorkRequest>;
  const hello = (token: string): WireMessage => ({ type: 'hello', version: PROTOCOL_VERSION, authToken: token, clientName: 'fuzz', maxFrameBytes: 16 << 20, payload: new Uint8Array(0) });

  type Case =
    | { kind: 'raw'; bytes: Uint8Array }
    | { kind: 'afterHello'; bytes: Uint8Array }
    | { kind: 'framedJunk'; body: Uint8Array; handshake: boolean }
    | { kind: 'truncated'; wrs: WorkRequest[]; cut: number }
    | { kind: 'oversized'; len: number; handshake: boolean }
    | { kind: 'unknownField'; wrs: WorkRequest[]; field: number; value: number }
    | { kind: 'wrs'; wrs: WorkRequest[] }
    | { kind: 'wrongQp'; delta: number }
    | { kind: 'wrongToken'; token: string }
    | { kind: 'wrongKind'; which: 'response' | 'welcome' | 'hello' | 'notify' };
  const wrs = fc.array(wr, { minLength: 1, maxLength: 8 });
  const cases: fc.Arbitrary<Case> = fc.oneof(
    fc.record({ kind: fc.constant('raw' as const), bytes: fc.uint8Array({ maxLength: 300 }) }),
    fc.record({ kind: fc.constant('afterHello' as const), bytes: fc.uint8Array({ maxLength: 300 }) }),
    fc.record({ kind: fc.constant('framedJunk' as const), body: fc.uint8Array({ maxLength: 200 }), handshake: fc.boolean() }),
    fc.record({ kind: fc.constant('truncated' as const), wrs, cut: fc.integer({ min: 1, max: 1000 }) }),
    fc.record({ kind: fc.constant('oversized' as const), len: fc.integer({ min: MAX_FRAME + 1, max: 0xffffffff }), handshake: fc.boolean() }),
    fc.record({ kind: fc.constant('unknownField' as const), wrs, field: fc.integer({ min: 100, max: 5000 }), value: fc.integer({ min: 0, max: 0x7fffffff }) }),
    fc.record({ kind: fc.constant('wrs' as const), wrs }),
    fc.record({ kind: fc.constant('wrongQp' as const), delta: fc.integer({ min: 1, max: 1000 }) }),
    fc.record({ kind: fc.constant('wrongToken' as const), token: fc.string({ maxLength: 40 }).filter((s) => s !== TOKEN) }),
    fc.record({ kind: fc.constant('wrongKind' as const), which: fc.constantFrom('response' as const, 'welcome' as const, 'hello' as const, 'notify' as const) }),
  );

  const counts: Record<string, number> = {};
  const goodbyes: Record<string, number> = {};
  let completionsChecked = 0;

  const property = fc.asyncProperty(cases, async (c) => {
    counts[c.kind] = (counts[c.kind] ?? 0) + 1;
    const needsHello = !['raw', 'wrongToken'].includes(c.kind) && !((c.kind === 'oversized' || c.kind === 'framedJunk') && !c.handshake);
    let raw: RawClient;
    let qpn = 0;
    if (needsHello) ({ raw, qpn } = await RawClient.open(port, { authToken: TOKEN }));
    else raw = await RawClient.connect(port);
    const request = (w: WorkRequest[], q = qpn): Uint8Array => encodeMessage({ type: 'request', qpn: q, seq: 77, wrs: w });
    let expectCode: string | undefined;
    let expectResponse: WorkRequest[] | undefined;
    switch (c.kind) {
      case 'raw':
      case 'afterHello':
        raw.write(c.bytes);
        break;
      case 'framedJunk':
        // A well-framed body of random bytes: the decoder itself is fuzzed (before and after the handshake).
        raw.write(frameBytes(c.body));
        break;
      case 'truncated': {
        const f = frameBytes(request(c.wrs));
        raw.write(f.subarray(0, Math.max(0, f.length - c.cut)));
        break;
      }
      case 'oversized': {
        const b = new Uint8Array(8);
        new DataView(b.buffer).setUint32(0, c.len, true);
        raw.write(b);
        expectCode = 'PMRPC_ERR_FRAME_TOO_LARGE';
        break;
      }
      case 'unknownField': {
        // An unknown varint field appended to the Frame: skipped, the request is served.
        const tag: number[] = [];
        for (let v = (c.field << 3) >>> 0; ; v >>>= 7) {
          if (v < 0x80) {
            tag.push(v);
            break;
          }
          tag.push((v & 0x7f) | 0x80);
        }
        const val: number[] = [];
        for (let v = c.value; ; v = Math.floor(v / 128)) {
          if (v < 0x80) {
            val.push(v);
            break;
          }
          val.push((v & 0x7f) | 0x80);
        }
        raw.write(frameBytes(Uint8Array.from([...request(c.wrs), ...tag, ...val])));
        expectResponse = c.wrs;
        break;
      }
      case 'wrs':
        raw.write(frameBytes(request(c.wrs)));
        expectResponse = c.wrs;
        break;
      case 'wrongQp':
        raw.write(frameBytes(request([{ op: 'read', from: { rkey: mrF.rkey, addr: 0 }, len: 8 }], qpn + c.delta)));
        expectCode = 'PMRPC_ERR_WRONG_QP';
        break;
      case 'wrongToken':
        raw.send(hello(c.token));
        expectCode = 'PMRPC_ERR_AUTH';
        break;
      case 'wrongKind': {
        const m: WireMessage =
          c.which === 'response'
            ? { type: 'response', qpn, seq: 1, completions: [] }
            : c.which === 'notify'
              ? { type: 'notify', qpn, data: new Uint8Array(3) }
              : c.which === 'welcome'
                ? { type: 'welcome', version: 1, qpn, maxFrameBytes: 4096, payload: new Uint8Array(0) }
                : hello(TOKEN);
        raw.send(m);
        expectCode = 'PMRPC_ERR_BAD_FRAME';
        break;
      }
    }
    if (expectResponse !== undefined) {
      const m = await raw.next();
      // Every signaled work request answers; an unsignaled one only when it did not succeed.
      const signaled = expectResponse.filter((w) => w.unsignaled !== true).length;
      if (m?.type !== 'response' || m.seq !== 77 || m.completions.length < signaled || m.completions.length > expectResponse.length) throw new Error(`${c.kind}: expected a response, got ${JSON.stringify(m)}`);
      if (m.completions.filter((cp) => cp.status === 'ok').length > signaled) throw new Error(`${c.kind}: an unsignaled work request answered 'ok': ${JSON.stringify(m)}`);
      for (const cp of m.completions) {
        if (!['ok', 'failed', 'skipped', 'error'].includes(cp.status)) throw new Error(`bad status ${cp.status}`);
        if ((cp.status === 'error' || cp.status === 'failed') && !/^PMRPC_ERR_[A-Z_]+$/.test(cp.code ?? '')) throw new Error(`uncoded ${cp.status}: ${JSON.stringify(cp)}`);
        completionsChecked++;
      }
    }
    raw.socket.end(); // whatever is half-sent stays incomplete: the server must close, not wait forever
    if (!(await raw.untilClosed(5000))) throw new Error(`${c.kind}: the server did not close the connection`);
    if (raw.badFrames.length > 0) throw new Error(`${c.kind}: the server sent an undecodable frame`);
    const g = raw.goodbye();
    if (g !== undefined) {
      goodbyes[g.code] = (goodbyes[g.code] ?? 0) + 1;
      if (!GOODBYE_CODES.has(g.code)) throw new Error(`${c.kind}: unexpected goodbye ${g.code}`);
    }
    if (expectCode !== undefined && g?.code !== expectCode) throw new Error(`${c.kind}: expected ${expectCode}, got ${JSON.stringify(g)}`);
    if (raw.received.some((m) => m.type === 'welcome') && !needsHello) throw new Error(`${c.kind}: a Welcome without the token`);
    return true;
  });

  const started = Date.now();
  await fc.assert(property, { seed, numRuns: RUNS, endOnFailure: true });
  const ms = Date.now() - started;
  fuzzing = false;
  await goodLoop;
  t.comment(`fuzz: ${RUNS} inputs in ${ms} ms; by kind ${JSON.stringify(counts)}; goodbyes ${JSON.stringify(goodbyes)}; ${completionsChecked} completions checked; good client ${goodOps} ops`);
  t.equal(goodFailure, undefined, 'the good client never failed');
  t.ok(goodOps >= 20, `the good client kept being served (${goodOps} write+flush+read chains)`);
  t.ok((goodbyes.PMRPC_ERR_FRAME_TOO_LARGE ?? 0) > 0 && (goodbyes.PMRPC_ERR_AUTH ?? 0) > 0 && (goodbyes.PMRPC_ERR_WRONG_QP ?? 0) > 0, 'the coded refusals were exercised');
  t.ok(completionsChecked > 0);

  // Still serving new clients after the storm.
  const { link: after } = await TcpLink.connect({ port, authToken: TOKEN, name: 'good' });
  const q2 = new QueuePair(after);
  t.equal((await q2.post(Wr.read({ rkey: mrG.rkey, addr: G.offset }, 8))).status, 'ok', 'a new client is served after the fuzzing');
  q2.close();
  good.close();
  await server.close();
  t.equal(server.connections, 0);

  // Crash-close (no write-back) and reopen: outside F, media holds exactly the persisted sentinel and the good client's flushed writes.
  nic.detach();
  region.close({ writeBack: false });
  const back = PmemRegion.open(path);
  t.teardown(() => back.close());
  const expected = Uint8Array.from({ length: REGION - F.len }, (_, i) => sentinel(F.len + i));
  expected.set(shadow, G.offset - F.len);
  const got = back.load(F.len, REGION - F.len);
  let diff = -1;
  for (let i = 0; i < got.length && diff < 0; i++) if (got[i] !== expected[i]) diff = F.len + i;
  t.equal(diff, -1, 'the region file reopens and nothing outside the fuzzed MR changed (beyond the good client’s writes)');
});

t.test('fuzzing the client: a server that answers with junk after its Welcome gets a coded close, never a crash', async (t) => {
  const net = await import('node:net');
  let next: Uint8Array = new Uint8Array(0);
  const clientGoodbyes: string[] = [];
  const srv = net.createServer((s) => {
    s.on('error', () => {});
    const junk = next;
    let greeted = false;
    s.on('data', (c: Buffer) => {
      if (!greeted) {
        greeted = true;
        s.write(frameBytes(encodeMessage({ type: 'welcome', version: PROTOCOL_VERSION, qpn: 1, maxFrameBytes: 1 << 20, payload: new Uint8Array(0) })));
        s.write(junk);
        return;
      }
      // What the client says on its way out: a Goodbye frame (4-byte length, then tag 0x32 = field 6).
      if (c.length > 4 && c[4] === 0x32) clientGoodbyes.push('goodbye');
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => srv.close(() => r())));
  const port = (srv.address() as { port: number }).port;
  const outcomes: Record<string, number> = {};
  const junk = fc.oneof(
    fc.uint8Array({ maxLength: 200 }),
    fc.uint8Array({ maxLength: 200 }).map((b) => frameBytes(b)),
    fc.integer({ min: 1 << 20, max: 0xffffffff }).map((n) => {
      const b = new Uint8Array(4);
      new DataView(b.buffer).setUint32(0, n, true);
      return b;
    }),
  );
  await fc.assert(
    fc.asyncProperty(junk, async (bytes) => {
      next = bytes;
      let link: TcpLink;
      try {
        ({ link } = await TcpLink.connect({ port, maxFrameBytes: 1 << 20 }));
      } catch (e) {
        const code = (e as { code?: string }).code ?? 'uncoded';
        outcomes[`connect:${code}`] = (outcomes[`connect:${code}`] ?? 0) + 1;
        return /^PMRPC_ERR_/.test(code);
      }
      link.onMessage(() => {});
      await new Promise((r) => setTimeout(r, 2));
      const code = link.closed ? (link.closeError?.code ?? 'uncoded') : 'open';
      outcomes[code] = (outcomes[code] ?? 0) + 1;
      link.close();
      return code === 'open' || /^PMRPC_ERR_/.test(code);
    }),
    { seed, numRuns: 300 },
  );
  t.comment(`client fuzz: 300 inputs; outcomes ${JSON.stringify(outcomes)}`);
  t.ok((outcomes.PMRPC_ERR_BAD_FRAME ?? 0) + (outcomes.PMRPC_ERR_FRAME_TOO_LARGE ?? 0) + (outcomes['connect:PMRPC_ERR_FRAME_TOO_LARGE'] ?? 0) > 0, 'junk was refused with codes');
  await new Promise((r) => setTimeout(r, 20));
  t.ok(clientGoodbyes.length > 0, 'the client says Goodbye before closing on a bad frame');
});
