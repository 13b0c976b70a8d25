/**
 * Test-only fault switches (DESIGN §8): each removes one persistence step of the PUT chain or of
 * allocator recovery. The crash suite must report violations for each; KV_MUTANTS lists them as
 * data for a CLI (`name<TAB>step`).
 */
export interface KvFaults {
  /** PUT chain: no FLUSH(persistent) of the heap before the CAS. */
  dropHeapFlush: boolean;
  /** PUT chain: no FLUSH(persistent) of the index slot after the CAS. */
  dropIndexFlush: boolean;
  /** PUT chain: the CAS runs even when ALLOCATE (and so the heap FLUSH) did not. */
  unconditionalCas: boolean;
  /** PUT chain: the CAS compares nothing (blind swap), so it can overwrite a slot another key claimed. */
  blindCas: boolean;
  /** Recovery: trust every slot word (no pointer validation, no repair of a torn slot). */
  skipPointerValidation: boolean;
  /** Recovery: post only what clients return; unreachable buffers are never reclaimed. */
  skipReclaim: boolean;
  /** Returns: accept a return stamped with an earlier epoch. */
  acceptStaleEpoch: boolean;
  /** Recovery: ALLOCATE is not refused while the free lists are being rebuilt. */
  allowAllocateBeforeRebuild: boolean;
}

export const NO_KV_FAULTS: Readonly<KvFaults> = Object.freeze({
  dropHeapFlush: false,
  dropIndexFlush: false,
  unconditionalCas: false,
  blindCas: false,
  skipPointerValidation: false,
  skipReclaim: false,
  acceptStaleEpoch: false,
  allowAllocateBeforeRebuild: false,
});

export type KvFaultName = keyof KvFaults;

export interface KvMutant {
  /** Mutant name (the fault switch it sets). */
  name: KvFaultName;
  /** 'put-chain' or 'allocator-recovery'. */
  layer: 'put-chain' | 'allocator-recovery';
  /** The persistence step it removes. */
  step: string;
  /** Protocols it applies to (a CLI prints `name<TAB>strategies`, as for the RPC mutants). */
  strategies: readonly string[];
}

export const KV_MUTANTS: readonly KvMutant[] = Object.freeze([
  { name: 'dropHeapFlush', layer: 'put-chain', step: 'FLUSH(persistent) of the heap between ALLOCATE and the CAS', strategies: ['prism-kv'] },
  { name: 'dropIndexFlush', layer: 'put-chain', step: 'FLUSH(persistent) of the index slot after the CAS (durable when acknowledged)', strategies: ['prism-kv'] },
  { name: 'unconditionalCas', layer: 'put-chain', step: 'the conditional flag on the CAS (install only what ALLOCATE just wrote)', strategies: ['prism-kv'] },
  { name: 'blindCas', layer: 'put-chain', step: 'the compare of the CAS against the slot version the client last saw', strategies: ['prism-kv'] },
  { name: 'skipPointerValidation', layer: 'allocator-recovery', step: 'validating and repairing every slot pointer before rebuilding the free lists', strategies: ['prism-kv'] },
  { name: 'skipReclaim', layer: 'allocator-recovery', step: 'reclaiming buffers the index does not reach', strategies: ['prism-kv'] },
  { name: 'acceptStaleEpoch', layer: 'allocator-recovery', step: 'refusing buffer returns stamped with an earlier server epoch', strategies: ['prism-kv'] },
  { name: 'allowAllocateBeforeRebuild', layer: 'allocator-recovery', step: 'refusing ALLOCATE until the free lists are rebuilt', strategies: ['prism-kv'] },
] as const satisfies readonly KvMutant[]);

export function faultsFor(mutant: KvFaultName | undefined): KvFaults {
  if (mutant === undefined) return { ...NO_KV_FAULTS };
  if (!KV_MUTANTS.some((m) => m.name === mutant)) throw new TypeError(`mutant must be one of ${KV_MUTANTS.map((m) => m.name).join(', ')}, got ${String(mutant)}`);
  return { ...NO_KV_FAULTS, [mutant]: true };
}

/** `--list-mutants` output for the KV app: one `name<TAB>strategies` line per mutant, as for the RPC mutants. */
export function listKvMutants(): string {
  return KV_MUTANTS.map((m) => `${m.name}\t${m.strategies.join(',')}`).join('\n');
}
