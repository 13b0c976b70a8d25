// The one "acknowledged then absent" checker (src/check/lost.ts) for durable-RPC clients: every
// sequence a client was told was durable must be present — in the durable prefix a recovery
// reports (the real-crash restart check) or in the applied state at the end.
import t from 'tap';
import { describeAckedLoss, durablePrefixes, lostAcknowledged } from '../../src/check/index.js';

t.test('a recovered durable prefix that covers every acknowledgement: nothing lost', async (t) => {
  const present = durablePrefixes([{ clientId: 1, resumeSeq: 11 }, { clientId: 2, resumeSeq: 1 }]);
  t.same(lostAcknowledged([{ clientId: 1, ackedUpTo: 10 }, { clientId: 2, ackedUpTo: 0 }], present), []);
});

t.test('a prefix that ends before the acknowledgements: the gap is lost, per client', async (t) => {
  const present = durablePrefixes([{ clientId: 1, resumeSeq: 8 }, { clientId: 2, resumeSeq: 4 }]);
  const losses = lostAcknowledged([{ clientId: 1, ackedUpTo: 10 }, { clientId: 2, ackedUpTo: 3 }, { clientId: 3, ackedUpTo: 2 }], present);
  t.same(losses, [
    { clientId: 1, ackedUpTo: 10, seqs: [8, 9, 10] },
    // A client the recovery does not know has no durable prefix at all.
    { clientId: 3, ackedUpTo: 2, seqs: [1, 2] },
  ]);
  t.equal(describeAckedLoss(losses[0]!, 'the recovered prefix'), 'client 1 was told durable up to 10; the recovered prefix lacks 8..10 (3 acknowledged requests lost)');
  t.equal(describeAckedLoss(losses[1]!, 'PM'), 'client 3 was told durable up to 2; PM lacks 1..2 (2 acknowledged requests lost)');
});

t.test('holes in an applied set are reported as ranges', async (t) => {
  const applied = new Set([1, 2, 4, 7]);
  const losses = lostAcknowledged([{ clientId: 5, ackedUpTo: 7 }], (c, s) => c === 5 && applied.has(s));
  t.same(losses, [{ clientId: 5, ackedUpTo: 7, seqs: [3, 5, 6] }]);
  t.equal(describeAckedLoss(losses[0]!, 'the log'), 'client 5 was told durable up to 7; the log lacks 3, 5..6 (3 acknowledged requests lost)');
});
