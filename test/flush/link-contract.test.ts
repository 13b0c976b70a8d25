// The optional parts of the Link contract (back-pressure, close notice) as QueuePair and
// FlushClient use them, an unknown QP answered with a code, and 32-bit sequence wrap.
import t from 'tap';
import { PmrpcError } from '../../pmem/index.js';
import { FlushClient, QueuePair, Wr, type ClientMessage, type Link, type ServerMessage } from '../../flush/index.js';
import { fill, setup } from './helpers.js';

/** A link under the test's control: it records what is sent, can be made full, answers on demand. */
class FakeLink implements Link {
  readonly qpn = 7;
  closed = false;
  writable = true;
  sent: ClientMessage[] = [];
  #handler: ((m: ServerMessage) => void) | undefined;
  #waiters: Array<{ resolve: () => void; reject: (e: unknown) => void }> = [];
  #closeFns: Array<(e: Error | undefined) => void> = [];
  send(msg: ClientMessage): void {
    if (this.closed) throw new PmrpcError('PMRPC_ERR_LINK_CLOSED', 'closed');
    if (!this.writable) throw new PmrpcError('PMRPC_ERR_BACKPRESSURE', 'full');
    this.sent.push(msg);
  }
  onMessage(h: (m: ServerMessage) => void): void {
    this.#handler = h;
  }
  whenWritable(): Promise<void> {
    if (this.writable) return Promise.resolve();
    return new Promise((resolve, reject) => this.#waiters.push({ resolve, reject }));
  }
  onClose(fn: (e: Error | undefined) => void): () => void {
    this.#closeFns.push(fn);
    return () => {};
  }
  drain(): void {
    this.writable = true;
    for (const w of this.#waiters.splice(0)) w.resolve();
  }
  answer(seq: number): void {
    this.#handler?.({ type: 'response', qpn: this.qpn, seq, completions: [{ id: 0, op: 'write', status: 'ok' }] });
  }
  notify(imm: number, data: Uint8Array): void {
    this.#handler?.({ type: 'notify', qpn: this.qpn, imm, data });
  }
  fail(): void {
    this.closed = true;
    for (const w of this.#waiters.splice(0)) w.reject(new PmrpcError('PMRPC_ERR_LINK_CLOSED', 'gone'));
    for (const f of this.#closeFns.splice(0)) f(new PmrpcError('PMRPC_ERR_LINK_CLOSED', 'the server went away'));
  }
  close(): void {
    this.closed = true;
  }
}

const tick = () => new Promise((r) => setImmediate(r));

t.test('a full link holds messages in order and sends them when it drains (no PMRPC_ERR_BACKPRESSURE)', async (t) => {
  const link = new FakeLink();
  const qp = new QueuePair(link);
  const a = qp.postChain([Wr.write({ rkey: 1, addr: 0 }, fill(8, 1))]);
  link.writable = false;
  const b = qp.postChain([Wr.write({ rkey: 1, addr: 8 }, fill(8, 2))]);
  const c = qp.postChain([Wr.write({ rkey: 1, addr: 16 }, fill(8, 3))]);
  await tick();
  t.equal(link.sent.length, 1, 'only the first went out');
  t.equal(qp.held, 2);
  t.equal(qp.outstanding, 3);
  link.drain();
  await tick();
  t.same(link.sent.map((m) => m.seq), [0, 1, 2], 'held messages leave in posting order');
  t.equal(qp.held, 0);
  for (const s of [0, 1, 2]) link.answer(s);
  t.equal((await a)[0]!.status, 'ok');
  t.equal((await b)[0]!.status, 'ok');
  t.equal((await c)[0]!.status, 'ok');
});

t.test('a link that closes rejects outstanding and held work with PMRPC_ERR_LINK_CLOSED', async (t) => {
  const link = new FakeLink();
  const qp = new QueuePair(link);
  const a = qp.postChain([Wr.write({ rkey: 1, addr: 0 }, fill(8, 1))]);
  link.writable = false;
  const b = qp.postChain([Wr.write({ rkey: 1, addr: 8 }, fill(8, 2))]);
  let told: PmrpcError | undefined;
  qp.onClose((e) => (told = e));
  link.fail();
  await t.rejects(a, { code: 'PMRPC_ERR_LINK_CLOSED' });
  await t.rejects(b, { code: 'PMRPC_ERR_LINK_CLOSED' });
  t.equal(told?.code, 'PMRPC_ERR_LINK_CLOSED');
  t.match(told?.message, /the server went away/);
  t.equal(qp.outstanding, 0);
  t.throws(() => qp.postChain([Wr.write({ rkey: 1, addr: 0 }, fill(8, 1))]), { code: 'PMRPC_ERR_LINK_CLOSED' });
});

for (const strategy of ['wrflush', 'srflush', 'gpspm'] as const) {
  t.test(`FlushClient ${strategy}: a waiter for an ACK rejects when the link closes instead of hanging`, async (t) => {
    const link = new FakeLink();
    const qp = new QueuePair(link);
    const fc = new FlushClient(qp, { strategy, rkey: 1 });
    const p = fc.persist(0, fill(16, 9));
    await tick();
    link.answer(0); // the WRITE / SEND completed; the ACK never comes
    await tick();
    link.fail();
    await t.rejects(p, { code: 'PMRPC_ERR_LINK_CLOSED' });
  });
}

t.test('FlushClient: an owner close() also rejects the ACK waiters', async (t) => {
  const link = new FakeLink();
  const qp = new QueuePair(link);
  const fc = new FlushClient(qp, { strategy: 'wrflush', rkey: 1 });
  const p = fc.persist(0, fill(16, 9));
  await tick();
  link.answer(0);
  await tick();
  qp.close();
  await t.rejects(p, { code: 'PMRPC_ERR_LINK_CLOSED' });
});

t.test('posting to a destroyed QP over the in-process link throws PMRPC_ERR_NO_SUCH_QP (no silent hang)', async (t) => {
  const s = setup();
  await s.qp.write({ rkey: s.mr.rkey, addr: 0 }, fill(8, 1));
  s.nic.destroyQp(s.sqp.qpn);
  t.throws(() => s.qp.postChain([Wr.read({ rkey: s.mr.rkey, addr: 0 }, 8)]), { code: 'PMRPC_ERR_NO_SUCH_QP' });
  t.equal(s.qp.outstanding, 0, 'nothing left waiting');
});

t.test('sequence numbers wrap within 32 bits', async (t) => {
  const s = setup();
  const link = s.fabric.connect(s.sqp);
  const seen: number[] = [];
  const send = link.send.bind(link);
  link.send = (m: ClientMessage) => {
    seen.push(m.seq);
    send(m);
  };
  const qp = new QueuePair(link, { firstSeq: 2 ** 32 - 2 });
  for (let i = 0; i < 4; i++) await qp.write({ rkey: s.mr.rkey, addr: 8 * i }, fill(8, i + 1));
  t.same(seen, [2 ** 32 - 2, 2 ** 32 - 1, 0, 1]);
  t.same([...(await qp.read({ rkey: s.mr.rkey, addr: 0 }, 32))], [...fill(8, 1), ...fill(8, 2), ...fill(8, 3), ...fill(8, 4)]);
  t.throws(() => new QueuePair(link, { firstSeq: 2 ** 32 }), new RangeError('firstSeq must be an integer in [0, 2^32), got 4294967296'));
});
