/**
 * The "nothing acknowledged lost" checker (DESIGN §8, Jepsen set-full style) — of a KV history,
 * and of durable-RPC clients' acknowledged prefixes (at each real restart and at the end) —
 * used by the crash explorer (simulated crashes) and the real-crash harness (SIGKILLs).
 */
import type { KvInput, KvOutput, Operation } from './linearizability.js';

/**
 * Jepsen-style "acknowledged then absent" for a KV history: for each key, the value read after
 * recovery must come from a write (or the initial absence) that no acknowledged write to the key
 * followed in real time. Returns a description of each loss. Reads after recovery have client -1.
 */
export function lostWrites(history: ReadonlyArray<Operation<KvInput, KvOutput>>, finals: ReadonlyMap<string, string | null>): string[] {
  const out: string[] = [];
  for (const [key, got] of finals) {
    const writes = history.filter((h) => h.input.key === key && h.input.kind !== 'get' && h.client !== -1);
    const acked = writes.filter((h) => h.ret !== undefined);
    const producers: Array<{ ret: number | undefined }> = writes.filter((h) => (got === null ? h.input.kind === 'delete' : h.input.kind === 'put' && h.input.value === got));
    if (got === null) producers.push({ ret: -1 }); // the initial absence
    if (producers.length === 0) {
      out.push(`get(${key}) after recovery returned ${got}, which no write wrote`);
      continue;
    }
    const superseded = (p: { ret: number | undefined }): boolean => p.ret !== undefined && acked.some((a) => a !== p && p.ret! < a.call);
    if (producers.every(superseded)) {
      const last = acked.reduce((a, b) => (b.ret! > a.ret! ? b : a));
      out.push(`acknowledged ${describeKvInput(last.input)} [${last.call}, ${last.ret}] lost: get(${key}) after recovery returned ${got === null ? 'absent' : got}`);
    }
  }
  return out;
}

export function describeKvInput(i: KvInput): string {
  return i.kind === 'put' ? `put(${i.key}, ${i.value})` : `${i.kind}(${i.key})`;
}

// ---------------------------------------------------------------------------- per-client acknowledged prefixes (durable RPC)

/**
 * What one client was told was durable. A durable-RPC client's acknowledgements are cumulative
 * (FIFO per client), so it was told every sequence up to `ackedUpTo` — recorded the moment the
 * acknowledgement reached the client, not when anyone asked.
 */
export interface AckedPrefix {
  clientId: number;
  ackedUpTo: number;
}

/** Acknowledged then absent, for one client: the sequences, ascending. */
export interface AckedLoss {
  clientId: number;
  ackedUpTo: number;
  seqs: number[];
}

/**
 * Jepsen-style "acknowledged then absent" for durable RPC: every sequence a client was told was
 * durable must be `present` in what the crash left — in the durable prefix a recovery found (at
 * a restart, before the client resends anything: see `durablePrefixes`), or in the applied
 * state read back at the end. Returns the clients with a loss.
 */
export function lostAcknowledged(acked: readonly AckedPrefix[], present: (clientId: number, seq: number) => boolean): AckedLoss[] {
  const out: AckedLoss[] = [];
  for (const a of acked) {
    const seqs: number[] = [];
    for (let s = 1; s <= a.ackedUpTo; s++) if (!present(a.clientId, s)) seqs.push(s);
    if (seqs.length > 0) out.push({ clientId: a.clientId, ackedUpTo: a.ackedUpTo, seqs });
  }
  return out;
}

/**
 * The presence test of a recovery's report: a client's durable prefix is every sequence before its
 * resume point (applied, or durable and about to be re-executed); a client the recovery does not
 * know has none.
 */
export function durablePrefixes(recovered: ReadonlyArray<{ clientId: number; resumeSeq: number }>): (clientId: number, seq: number) => boolean {
  const upTo = new Map(recovered.map((c) => [c.clientId, c.resumeSeq - 1]));
  return (clientId, seq) => seq <= (upTo.get(clientId) ?? 0);
}

/** One line per loss: `client 3 was told durable up to 120; absent: 96..120 (25)`. */
export function describeAckedLoss(l: AckedLoss, where: string): string {
  const ranges: string[] = [];
  for (let i = 0; i < l.seqs.length; ) {
    let j = i;
    while (j + 1 < l.seqs.length && l.seqs[j + 1] === l.seqs[j]! + 1) j++;
    ranges.push(i === j ? `${l.seqs[i]}` : `${l.seqs[i]}..${l.seqs[j]}`);
    i = j + 1;
  }
  const shown = ranges.length > 4 ? [...ranges.slice(0, 4), '…'] : ranges;
  return `client ${l.clientId} was told durable up to ${l.ackedUpTo}; ${where} lacks ${shown.join(', ')} (${l.seqs.length} acknowledged request${l.seqs.length === 1 ? '' : 's'} lost)`;
}
