// Dropped connections under PRISM-KV (issue 14): a connection drops while both ends live, so no
// recovery follows that would reclaim what the client held or settle what it had in flight. The
// client reconnects the live server by itself (options.reconnect, the reconnect loop RS uses),
// sends a return batch whose answer the drop lost again with the same number (apps/shared/returns.ts
// ReturnSender: idempotent batches, as RS's), and resolves a PUT whose answer the drop lost before
// anything else (#resolve), so it takes effect once or is reported indeterminate.
// Mutants: dropUnansweredReturns (an unanswered batch is dropped: a buffer leaks), retryUncertainPut
// (a PUT whose answer was lost is posted again as new: it takes effect twice), noReconnect.
import t, { type Test } from 'tap';
import { NicErrorCodes, QueuePair } from '../../../flush/index.js';
import { PmrpcError } from '../../../pmem/index.js';
import { jsonBytes } from '../../../src/apps/index.js';
import { KvErrorCodes, PrismKvClient, RETURN_ACK_IMM, type KvClientOptions, type KvFaults } from '../../../src/apps/kv/index.js';
import { checkLinearizable, kvModel, type KvInput, type KvOutput, type Operation } from '../../../src/check/index.js';
import { loseFirstReturn, type ReturnLoss } from '../drop-fixture.js';
import { swarmRun } from '../../../src/testing/crash/index.js';
import { kvSetup, te, td, type KvSetup } from './helpers.js';

t.setTimeout(240_000);

/** A client whose connections are made here (so a test can tamper with the first), reconnecting through the same server. */
async function dropClient(s: KvSetup, tamper: (qp: QueuePair) => void, options: Partial<KvClientOptions> = {}): Promise<PrismKvClient> {
  const welcome = jsonBytes({ system: 'prism', ...s.server.address });
  const qp = new QueuePair(s.fabric.connect(s.server.accept()));
  tamper(qp);
  return PrismKvClient.connect(qp, s.server.address, {
    clientId: 1,
    reconnect: () => ({ qp: new QueuePair(s.fabric.connect(s.server.accept())), welcome }),
    ...options,
  });
}

/**
 * Two PUTs of one key (the second replaces the first's buffer: a return of one pointer, returnBatch
 * 1). The return batch reaches the server and is taken but the connection drops before its answer
 * (`loseAnswer`), or the connection drops before the batch is sent (`loseBatch`). Then the client
 * flushes its returns (reconnecting).
 */
async function returnScenario(t: Test, how: ReturnLoss, faults: Partial<KvFaults>): Promise<{ leaked: number; doubleFree: number; duplicates: number; accepted: number }> {
  const s = await kvSetup();
  let dropped = (): boolean => false;
  const c = await dropClient(
    s,
    (qp) => {
      dropped = loseFirstReturn(qp, how, RETURN_ACK_IMM);
    },
    { returnBatch: 1, faults },
  );
  await c.put('k', te.encode('first'));
  await c.put('k', te.encode('second'));
  await c.flushReturns();
  t.equal(dropped(), true, `${how}: the connection dropped`);
  t.equal(td.decode((await c.get('k'))!), 'second');
  const a = s.server.auditAllocator();
  return { leaked: a.leaked.length, doubleFree: a.doubleFree.length, duplicates: s.server.stats.returnDuplicates, accepted: s.server.stats.returnsAccepted };
}

t.test('a return batch whose answer a drop lost is sent again after the reconnect and taken once', async (t) => {
  const ok = await returnScenario(t, 'loseAnswer', {});
  t.same({ leaked: ok.leaked, doubleFree: ok.doubleFree }, { leaked: 0, doubleFree: 0 }, 'no buffer leaked or freed twice');
  t.equal(ok.duplicates, 1, 'the server got the batch twice and took it once');
  t.equal(ok.accepted, 1, 'the one pointer was taken once');
});

t.test('a return batch the drop kept from the server is sent after the reconnect', async (t) => {
  const ok = await returnScenario(t, 'loseBatch', {});
  t.same({ leaked: ok.leaked, doubleFree: ok.doubleFree, accepted: ok.accepted }, { leaked: 0, doubleFree: 0, accepted: 1 }, 'taken, nothing leaked');

  const bad = await returnScenario(t, 'loseBatch', { dropUnansweredReturns: true });
  t.equal(bad.leaked, 1, `mutant dropUnansweredReturns caught: ${bad.leaked} buffer leaked`);
});

/**
 * Client A PUTs k = 'y' over 'x'; its chain runs on the server, and before its answer comes the
 * connection drops. Meanwhile (`between`) other clients act. Returns what A's put did and the history.
 */
async function lostPut(faults: Partial<KvFaults>, between: (s: KvSetup, clock: () => number, ops: Array<Operation<KvInput, KvOutput>>) => Promise<void>) {
  const s = await kvSetup();
  let now = 0;
  const clock = (): number => ++now;
  const ops: Array<Operation<KvInput, KvOutput>> = [];
  let dropped = false;
  const a = await dropClient(
    s,
    (qp) => {
      const post = qp.postChain.bind(qp);
      qp.postChain = (async (wrs: Parameters<typeof qp.postChain>[0]) => {
        if (dropped || !wrs.some((w) => w.op === 'allocate')) return post(wrs);
        const cs = await post(wrs);
        if (cs.some((c) => c.op === 'allocate' && c.status === 'ok') && ops.length > 1) {
          dropped = true; // the chain ran on the server, and its answer is lost with the connection
          await between(s, clock, ops);
          qp.close();
          throw new PmrpcError(NicErrorCodes.LINK_CLOSED, 'the link dropped');
        }
        return cs;
      }) as typeof qp.postChain;
    },
    { faults },
  );
  const put = async (c: PrismKvClient, id: number, value: string): Promise<void> => {
    const op: Operation<KvInput, KvOutput> = { client: id, input: { kind: 'put', key: 'k', value }, output: undefined, call: clock(), ret: undefined };
    ops.push(op);
    try {
      await c.put('k', te.encode(value));
      op.output = null;
      op.ret = clock();
    } catch (e) {
      if (!(e instanceof PmrpcError && e.code === KvErrorCodes.INDETERMINATE)) throw e;
    }
  };
  await put(a, 0, 'x');
  const before = a.stats.uncertainInstalls;
  let outcome = 'ok';
  try {
    await put(a, 0, 'y');
  } catch (e) {
    outcome = String(e);
  }
  const reader = await s.client();
  const call = clock();
  const v = await reader.get('k');
  ops.push({ client: 9, input: { kind: 'get', key: 'k' }, output: v === undefined ? null : td.decode(v), call, ret: clock() });
  if (outcome === 'ok' && ops[1]!.ret === undefined) outcome = 'indeterminate';
  return { dropped, uncertain: a.stats.uncertainInstalls - before, reconnects: a.stats.reconnects, outcome, ops, audit: s.server.auditAllocator() };
}

t.test('a PUT whose answer a drop lost is resolved: it takes effect once', async (t) => {
  const r = await lostPut({}, async () => undefined);
  t.equal(r.dropped, true, 'the connection dropped after the chain ran');
  t.equal(r.outcome, 'ok', 'the PUT is acknowledged (its slot holds its item at the version it installed)');
  t.same([r.uncertain, r.reconnects], [1, 1], 'one uncertain install, one reconnect');
  t.equal(r.ops.at(-1)!.output, 'y');
  t.ok(r.audit.leaked.length <= 1, `at most one buffer leaked per uncertain install (${r.audit.leaked.length})`);
  t.same([r.audit.doubleFree.length, r.audit.freeAndReachable.length], [0, 0]);
  t.equal(checkLinearizable(kvModel, r.ops).ok, true);
});

// Between A's chain and its resolution, C reads 'y' and then B PUTs 'z': A's PUT happened (C saw
// it) before B's. The slot moved past A's version, so A cannot tell its PUT from another's: it
// says so (PMRPC_ERR_KV_INDETERMINATE), and the history is linearizable with A's PUT either way.
// The mutant posts A's chain again as new: it installs 'y' over 'z', a second effect of one PUT.
t.test('a PUT whose answer a drop lost, the slot moved on since: indeterminate, never applied twice', async (t) => {
  const between = async (s: KvSetup, clock: () => number, ops: Array<Operation<KvInput, KvOutput>>): Promise<void> => {
    const c = await s.client();
    const call = clock();
    const v = await c.get('k');
    ops.push({ client: 2, input: { kind: 'get', key: 'k' }, output: v === undefined ? null : td.decode(v), call, ret: clock() });
    const b = await s.client();
    const op: Operation<KvInput, KvOutput> = { client: 1, input: { kind: 'put', key: 'k', value: 'z' }, output: undefined, call: clock(), ret: undefined };
    ops.push(op);
    await b.put('k', te.encode('z'));
    op.output = null;
    op.ret = clock();
  };
  const ok = await lostPut({}, between);
  t.equal(ok.ops.find((o) => o.client === 2)!.output, 'y', 'C saw A\'s PUT');
  t.equal(ok.outcome, 'indeterminate', 'A reports its PUT indeterminate');
  t.equal(ok.ops.at(-1)!.output, 'z', 'B\'s PUT stands');
  t.equal(checkLinearizable(kvModel, ok.ops).ok, true, 'linearizable');

  const bad = await lostPut({ retryUncertainPut: true }, between);
  const lin = checkLinearizable(kvModel, bad.ops);
  t.equal(bad.ops.at(-1)!.output, 'y', 'the mutant applied A\'s PUT a second time, over B\'s');
  t.equal(lin.ok, false, `mutant retryUncertainPut caught: ${lin.ok === false ? lin.reason : 'linearizable'}`);
});

t.test('without reconnects an operation fails on a dropped connection', async (t) => {
  const s = await kvSetup();
  const c = await dropClient(s, () => undefined, { faults: { noReconnect: true } });
  await c.put('k', te.encode('x'));
  c.qp.close();
  await t.rejects(c.get('k'), { code: NicErrorCodes.LINK_CLOSED }, 'mutant noReconnect caught: the GET fails');
  const ok = await dropClient(s, () => undefined);
  await ok.put('k', te.encode('x'));
  ok.qp.close();
  t.equal(td.decode((await ok.get('k'))!), 'x', 'the client reconnects and reads');
  t.equal(ok.stats.reconnects, 1);
});

t.test('reconnect options are checked', async (t) => {
  const s = await kvSetup();
  const qp = new QueuePair(s.fabric.connect(s.server.accept()));
  await t.rejects(PrismKvClient.connect(qp, s.server.address, { reconnectsMax: -1 }), new RangeError('reconnectsMax must be an integer in [0, 1024], got -1'));
  await t.rejects(PrismKvClient.connect(qp, s.server.address, { clientId: 0 }), new RangeError('clientId must be an integer in [1, 9007199254740991], got 0'));
});

// The swarm with drops on kv (overrides are not in the replay command).
t.test('swarm seeds 2 and 50 (kv) with dropped connections: no violation', async (t) => {
  for (const seed of [2, 50]) {
    t.comment(`seed ${seed} (replay: swarmRun(${seed}, 'kv', { overrides: { dropRate: 0.01 } }))`);
    const r = await swarmRun(seed, 'kv', { overrides: { dropRate: 0.01 } });
    t.match(r.plan, /d\d+/, `seed ${seed}: the plan drops connections: ${r.plan}`);
    t.same(r.failures.map((f) => f.violation), [], `seed ${seed}: no violation`);
  }
});
