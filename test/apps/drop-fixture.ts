/**
 * Test fixture shared by the kv and rs drop tests: the connection drops around the client's first
 * buffer-return batch — before its answer arrives (`loseAnswer`: the server took the batch, the ACK
 * never comes) or before the batch is sent (`loseBatch`: the link closes under the SEND).
 */
import type { NotifyMessage, QueuePair } from '../../flush/index.js';

export type ReturnLoss = 'loseAnswer' | 'loseBatch';

/** Wraps `qp` so the first return batch is lost as `how` says; the result tells whether it happened. */
export function loseFirstReturn(qp: QueuePair, how: ReturnLoss, ackImm: number): () => boolean {
  let dropped = false;
  if (how === 'loseAnswer') {
    const on = qp.onNotify.bind(qp);
    qp.onNotify = ((fn: (m: NotifyMessage) => void) =>
      on((m) => {
        if (m.imm === ackImm && !dropped) {
          dropped = true;
          qp.close();
          return;
        }
        fn(m);
      })) as typeof qp.onNotify;
  } else {
    const post = qp.postChain.bind(qp);
    qp.postChain = (async (wrs: Parameters<typeof qp.postChain>[0]) => {
      if (!dropped && wrs.some((w) => w.op === 'send')) {
        dropped = true;
        qp.close();
      }
      return post(wrs);
    }) as typeof qp.postChain;
  }
  return () => dropped;
}
