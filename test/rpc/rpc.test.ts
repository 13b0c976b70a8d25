// Durable RPC round trips for every strategy, FIFO, back-pressure on a full ring, option checks.
import t from 'tap';
import { DurableRpcClient, DurableRpcServer, RPC_STRATEGIES, connectInProcess, methodId } from '../../src/rpc/index.js';
import { QueuePair } from '../../flush/index.js';
import { inc, readU64, rig, SEED, settle } from './fixtures/rig.js';

t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/rpc/rpc.test.ts)`);

for (const strategy of RPC_STRATEGIES) {
  t.test(`${strategy}: round trips, FIFO, results in order`, async (t) => {
    const { server, fabric } = rig({ strategy });
    server.start();
    const a = connectInProcess(server, fabric);
    const b = connectInProcess(server, fabric);
    const calls = Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b).call('inc', new Uint8Array(i + 1).fill(i)));
    const results = await Promise.all(calls.map((c) => c.result));
    const values = results.map((r) => Number(readU64(r)));
    t.same([...values].sort((x, y) => x - y), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 'every request applied exactly once');
    const perClient = (k: number): number[] => values.filter((_, i) => i % 2 === k);
    t.same(perClient(0), [...perClient(0)].sort((x, y) => x - y), 'client a applied in its order');
    t.same(perClient(1), [...perClient(1)].sort((x, y) => x - y), 'client b applied in its order');
    t.same(calls.filter((_, i) => i % 2 === 0).map((c) => c.seq), [1, 2, 3, 4, 5], 'sequences from 1');
    const durable = await Promise.allSettled(calls.map((c) => c.durable));
    if (strategy === 'none') t.ok(durable.every((d) => d.status === 'rejected' && (d.reason as { code: string }).code === 'PMRPC_ERR_NEVER_DURABLE'), 'none: never durable');
    else t.ok(durable.every((d) => d.status === 'fulfilled'), 'every request durable');
    t.equal(a.durableUpTo, strategy === 'none' ? 0 : 5);
    server.close();
  });
}

t.test('durable resolves before result for decoupled strategies; the coupled ones only with the reply', async (t) => {
  for (const strategy of ['wflush', 'wrflush', 'farm'] as const) {
    // The server CPU's passes never run unless we let them: durable must not need one for wflush;
    // wrflush is durable at the server CPU's ACK, which it sends at the end of the NIC run that
    // brought the entry (Rnic.runEnded: poll, persist, ACK — no processing); farm needs the pass.
    const held: Array<() => void> = [];
    const { server, fabric } = rig({ strategy, schedule: (fn) => held.push(fn) });
    server.start();
    const c = connectInProcess(server, fabric);
    const call = c.call('inc', new Uint8Array(8));
    let durable = false;
    let result = false;
    void call.durable.then(() => (durable = true));
    void call.result.then(() => (result = true));
    await settle();
    t.equal(durable, strategy !== 'farm', `${strategy}: durable before the server CPU's pass ran`);
    t.equal(result, false, `${strategy}: no result before the server CPU ran`);
    for (let i = 0; i < 100 && held.length > 0; i++) {
      held.shift()!();
      await settle(50);
    }
    t.equal(durable, true, `${strategy}: durable after the server CPU ran`);
    t.equal(result, true, `${strategy}: result after the server CPU ran`);
    server.close();
  }
});

t.test('a full ring back-pressures: calls wait for credit, none dropped; beyond pendingCallsMax a coded refusal', async (t) => {
  const held: Array<() => void> = [];
  const { server, fabric } = rig({ strategy: 'wflush', schedule: (fn) => held.push(fn) });
  server.start();
  const c = connectInProcess(server, fabric, { pendingCallsMax: 6 });
  const calls = Array.from({ length: 10 }, (_, i) => c.call('inc', new Uint8Array(4).fill(i)));
  t.equal(c.waitingForCredit, 6, '4 slots placed, 6 wait for credit');
  t.throws(() => c.call('inc', new Uint8Array(4)), { code: 'PMRPC_ERR_CALLS_PENDING_FULL' });
  await settle();
  t.equal(c.durableUpTo, 4, 'only the ring-full of requests is durable while the server does not process');
  for (let i = 0; i < 1000 && held.length > 0; i++) {
    held.shift()!();
    await settle(50);
  }
  const values = (await Promise.all(calls.map((x) => x.result))).map((r) => Number(readU64(r)));
  t.same(values, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 'all ten applied, in order');
  t.equal(c.waitingForCredit, 0);
  server.close();
});

t.test('options and arguments are validated with exact messages', async (t) => {
  const { server, fabric, nic, store } = rig();
  t.throws(() => new DurableRpcServer(nic, store, { strategy: 'tflush' as never }), new TypeError('strategy must be one of wflush, sflush, wrflush, srflush, raw, gpspm, farm, darpc, none, got tflush'));
  t.throws(() => new DurableRpcServer(nic, store, { batchMax: 0 }), new RangeError('batchMax must be a positive integer, got 0'));
  t.throws(() => new DurableRpcServer(nic, store, { keepResults: 1 as never }), new TypeError('keepResults must be a boolean, got 1'));
  t.throws(() => new DurableRpcServer(nic, store, { faults: { nope: true } as never }), new TypeError('unknown fault switch nope'));
  t.throws(() => new DurableRpcServer({} as never, store), new TypeError('nic must be an Rnic'));
  t.throws(() => new DurableRpcServer(nic, {} as never), new TypeError('store must be a RecoveryStore'));
  t.throws(() => server.register('bad name', inc), new TypeError('method must be a name matching /^[A-Za-z_][A-Za-z0-9_.:/-]{0,127}$/, got bad name'));
  t.throws(() => server.register('x', 1 as never), new TypeError('handler must be a function'));
  t.throws(() => server.register('inc', inc), { code: 'PMRPC_ERR_METHOD_EXISTS' });
  t.throws(() => server.accept(), { code: 'PMRPC_ERR_NOT_SERVING' });
  server.start();
  t.throws(() => server.start(), { code: 'PMRPC_ERR_NOT_SERVING' });
  t.throws(() => server.accept({ awaiting: [0] }), new TypeError('awaiting must be an array of positive integers'));
  t.throws(() => server.accept({ clientId: 99 }), { code: 'PMRPC_ERR_UNKNOWN_CLIENT' });
  const { sqp, info } = server.accept();
  const qp = new QueuePair(fabric.connect(sqp));
  t.throws(() => new DurableRpcClient(qp, info, { pendingCallsMax: -1 }), new RangeError('pendingCallsMax must be a non-negative integer, got -1'));
  t.throws(() => new DurableRpcClient({} as never, info), new TypeError('qp must be a QueuePair'));
  t.throws(() => new DurableRpcClient(qp, { ...info, rkey: -1 }), new TypeError('info.rkey must be a non-negative integer, got -1'));
  const c = new DurableRpcClient(qp, info);
  t.throws(() => c.call('', new Uint8Array(1)), new TypeError('method must be a non-empty string, got '));
  t.throws(() => c.call('inc', [1] as never), new TypeError('payload must be a Uint8Array'));
  t.equal(methodId('inc'), methodId('inc'), 'method ids are stable');
  t.not(methodId('inc'), methodId('dec'));
  server.close();
});
