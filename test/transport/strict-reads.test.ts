// strict (msync) over TCP: the server runs the NIC loop once per socket read — every request
// decoded from one read is submitted, then one pass executes them and (group commit, flush/driver.ts)
// msyncs once. Before (issue 16) it ran the loop per decoded request: one msync per WRITE + FLUSH.
// A recording msync shim counts the msyncs and keeps what a machine crash keeps (the synced bytes);
// every FLUSH completion, when it leaves the server (the NIC's sink), must find its range on the
// disk. The client writes 16 requests in ONE socket write; the server's reads of that socket are
// counted at the socket ('data' events), so the check holds whatever the kernel does to the bytes.
// The driver's fault switch respondBeforeSync (passed through TcpNicServer's `faults`) makes the
// durability check fail.
import t from 'tap';
import net from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPrng, HEADER_BYTES, PmemRegion, seededEntropy, type MsyncFn } from '../../pmem/index.js';
import { Access, Rnic, Wr, type NicDriverFaults, type ServerMessage } from '../../flush/index.js';
import { encodeMessage, frameBytes, TcpNicServer, type WireMessage } from '../../src/transport/index.js';
import { RawClient } from './fixtures/helpers.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/transport/strict-reads.test.ts)`);

const N = 16;

async function run(t: Tap.Test, faults?: NicDriverFaults) {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-strict-reads-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const disk = new Map<number, number>();
  let msyncs = 0;
  const msync: MsyncFn = (mapping, off, len) => {
    msyncs++;
    const b = new Uint8Array(mapping);
    for (let i = off; i < off + len; i++) disk.set(i, b[i]!);
  };
  const region = PmemRegion.create(join(dir, 'r.pm'), 1 << 16, { strict: true, msync, entropy: seededEntropy(createPrng(SEED)) });
  t.teardown(() => region.close({ writeBack: false }));
  const nic = new Rnic(region, { ddio: true, entropy: seededEntropy(createPrng(SEED + 1)) });
  const pd = nic.allocPd();
  const mr = nic.registerMr(pd, 0, 1 << 16, Access.ALL);
  const at = (i: number): number => 4096 + i * 256;
  // The shim where an acknowledgement leaves the server: the NIC's sink of the QP.
  const violations: string[] = [];
  let flushesOk = 0;
  const attach = nic.attach.bind(nic);
  nic.attach = (qpn: number, sink: (m: ServerMessage, lazy?: boolean) => void) =>
    attach(qpn, (m, lazy) => {
      if (m.type === 'response') {
        for (const c of m.completions) {
          if (c.op !== 'flush') continue;
          if (c.status !== 'ok') {
            violations.push(`message ${m.seq}: FLUSH failed (${c.code ?? '?'})`);
            continue;
          }
          flushesOk++;
          const addr = at(m.seq - 1);
          const want = region.load(addr, 64);
          if (!want.every((v, i) => disk.get(HEADER_BYTES + addr + i) === v)) violations.push(`message ${m.seq}: FLUSH acknowledged before its range was synced`);
        }
      }
      sink(m, lazy);
    });
  const server = new TcpNicServer(nic, { accept: () => ({ qp: nic.createQp(pd) }), ...(faults === undefined ? {} : { faults }) });
  const { port } = await server.listen();
  t.teardown(() => server.close());
  // The server's reads of the client's socket: 'data' events on the accepted socket (local port = the server's).
  let reads = 0;
  const emit = net.Socket.prototype.emit;
  net.Socket.prototype.emit = function (this: net.Socket, event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'data' && this.localPort === port) reads++;
    return Reflect.apply(emit, this, [event, ...args]) as boolean;
  } as typeof emit;
  t.teardown(() => {
    net.Socket.prototype.emit = emit;
  });
  const { raw, qpn } = await RawClient.open(port);
  t.teardown(() => raw.socket.destroy());
  reads = 0;
  msyncs = 0;
  // N requests (WRITE 64 B + FLUSH of its range), in one socket write.
  const frames: Uint8Array[] = [];
  for (let seq = 1; seq <= N; seq++) {
    const req: WireMessage = { type: 'request', qpn, seq, wrs: [Wr.write({ rkey: mr.rkey, addr: at(seq - 1) }, new Uint8Array(64).fill(seq)), Wr.flush('persistent', mr.rkey, { addr: at(seq - 1), len: 64 })] };
    frames.push(frameBytes(encodeMessage(req)));
  }
  raw.write(Buffer.concat(frames));
  const got: WireMessage[] = [];
  while (got.length < N) {
    const m = await raw.next();
    if (m === undefined) break;
    if (m.type === 'response') got.push(m);
  }
  return { got: got.length, flushesOk, violations, reads, msyncs };
}

t.test('strict over TCP: one msync per socket read (not per request), no FLUSH acknowledged before its range is synced', async (t) => {
  const r = await run(t);
  t.equal(r.got, N, `${N} Responses`);
  t.equal(r.flushesOk, N, 'every FLUSH completed ok');
  t.same(r.violations, [], 'no FLUSH acknowledged before its range was on the disk');
  t.ok(r.reads >= 1, `${r.reads} socket read(s) of ${N} requests`);
  t.ok(r.msyncs <= r.reads, `${r.msyncs} msync(s) for ${r.reads} socket read(s) of ${N} requests (one NIC pass per read)`);
});

t.test('strict over TCP: the fault switch respondBeforeSync makes the same check fail', async (t) => {
  const r = await run(t, { respondBeforeSync: true });
  t.ok(r.violations.length > 0, `caught: ${r.violations[0] ?? 'nothing'}`);
});

t.test('the TCP server checks its faults option as the fabric does', async (t) => {
  const nic = new Rnic(PmemRegion.createInMemory(4096));
  const accept = () => ({ qp: nic.createQp(nic.allocPd()) });
  t.throws(() => new TcpNicServer(nic, { accept, faults: 3 as never }), new TypeError('faults must be an object, got 3'));
  t.throws(() => new TcpNicServer(nic, { accept, faults: { nope: true } as never }), new TypeError('unknown fault switch nope'));
});
