// The one history cutter (src/check/cut.ts): what the kv, rs, register and tx crash suites judge at a crash.
import t from 'tap';
import { cutHistory, cutRecords, type Operation } from '../../src/check/index.js';

type Op = Operation<string, number> & { error?: string };
const ops: Op[] = [
  { client: 0, input: 'acked', output: 1, call: 1, ret: 2 },
  { client: 1, input: 'in flight', output: undefined, call: 3, ret: undefined },
  { client: 2, input: 'returned at the crash', output: 3, call: 4, ret: 10 },
  { client: 0, input: 'failed', output: undefined, call: 5, ret: 6, error: 'PMRPC_ERR_X' },
  { client: 1, input: 'after the crash', output: 5, call: 10, ret: 11 },
];

t.test('cutHistory: acknowledged before the crash keeps its outcome, the rest called before it is pending, later calls did not happen', async (t) => {
  t.same(cutHistory(ops, 10), [
    { client: 0, input: 'acked', output: 1, call: 1, ret: 2 },
    { client: 1, input: 'in flight', output: undefined, call: 3, ret: undefined },
    { client: 2, input: 'returned at the crash', output: undefined, call: 4, ret: undefined },
    { client: 0, input: 'failed', output: undefined, call: 5, ret: undefined },
  ]);
  t.notOk('error' in cutHistory(ops, 10)[3]!, 'the recorded error is not part of the checked operation');
  t.equal(cutHistory(ops, Number.POSITIVE_INFINITY).length, ops.length, 'no crash: every operation');
  t.same(cutHistory(ops, Number.POSITIVE_INFINITY)[4], { client: 1, input: 'after the crash', output: 5, call: 10, ret: 11 });
  t.same(cutHistory(ops, 1), [], 'nothing was called before the first call');
});

t.test('cutRecords: a record form of its own for the pending ones (tx: type info)', async (t) => {
  const recs = [
    { id: 1, type: 'ok' as const, call: 1, ret: 2 },
    { id: 2, type: 'ok' as const, call: 3, ret: 8 },
    { id: 3, type: 'fail' as const, call: 4, ret: 5 },
    { id: 4, type: 'ok' as const, call: 9, ret: 12 },
  ];
  const cut = cutRecords(recs, 6, (r) => ({ ...r, type: 'info' as const, ret: undefined }));
  t.same(cut, [
    { id: 1, type: 'ok', call: 1, ret: 2 },
    { id: 2, type: 'info', call: 3, ret: undefined },
    { id: 3, type: 'fail', call: 4, ret: 5 },
  ]);
  t.equal(cut[0], recs[0], 'an acknowledged record is kept as it is');
});
