/**
 * The "nothing acknowledged lost" checker of a KV history (DESIGN §8, Jepsen set-full style),
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
