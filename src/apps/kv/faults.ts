/**
 * Test-only fault switches (DESIGN §8): each removes one persistence step of the PUT chain or of
 * allocator recovery. The crash suite must report violations for each; KV_MUTANTS lists them as
 * data for a CLI (`name<TAB>step`).
 */
import { kebabName } from '../shared/index.js';
import { findPilafMutant, PILAF_MUTANTS, pilafFaultsFor, type PilafFaults } from '../pilaf/index.js';

export interface KvFaults {
  /** PUT chain: no FLUSH(persistent) of the heap before the CAS. */
  dropHeapFlush: boolean;
  /** PUT chain: no FLUSH(persistent) of the index slot after the CAS. */
  dropIndexFlush: boolean;
  /** PUT chain: the CAS runs even when ALLOCATE (and so the heap FLUSH) did not. */
  unconditionalCas: boolean;
  /** PUT chain: the CAS compares nothing (blind swap), so it can overwrite a slot another key claimed. */
  blindCas: boolean;
  /** GET chains: no FLUSH(persistent) of the slots they READ (a GET can return a CAS result a crash takes back). */
  getWithoutFlush: boolean;
  /** PUT chain: the index FLUSH covers only the slot, not the window slots the PUT went past (their claims may not be durable). */
  narrowIndexFlush: boolean;
  /** PUT chain: the index FLUSH covers only the last run of the probe sequence it went past (the group holding the slot), not the earlier groups. */
  finalGroupIndexFlush: boolean;
  /** DELETE of a key whose slot holds a tombstone: acknowledged without making that tombstone durable first. */
  deleteNoopWithoutFlush: boolean;
  /** Recovery: trust every slot word (no pointer validation, no repair of a torn slot). */
  skipPointerValidation: boolean;
  /** Recovery: post only what clients return; unreachable buffers are never reclaimed. */
  skipReclaim: boolean;
  /** Returns: accept a return stamped with an earlier epoch. */
  acceptStaleEpoch: boolean;
  /** Recovery: ALLOCATE is not refused while the free lists are being rebuilt. */
  allowAllocateBeforeRebuild: boolean;
  /** Recovery: the dead item written for a rejected slot is not persisted before the slot points at it. */
  skipDeadItemPersist: boolean;
  /** Recovery: a rejected slot's new word (its dead item's pointer, or empty) is stored, not persisted, before the rejected buffer goes back on a free list. */
  skipRejectedSlotPersist: boolean;
  /** Returns: a return batch whose answer never came (the connection dropped, the server up) is dropped, not sent again after the reconnect (and batches carry no id, so they are not idempotent). */
  dropUnansweredReturns: boolean;
  /** Client: a PUT / DELETE whose answer a drop lost is posted again as if new (its CAS retried on the version it sees), not resolved first: it may take effect twice. */
  retryUncertainPut: boolean;
  /** Client: no reconnect after a drop (the operation fails, as before clients reconnected). */
  noReconnect: boolean;
}

export const NO_KV_FAULTS: Readonly<KvFaults> = Object.freeze({
  dropHeapFlush: false,
  dropIndexFlush: false,
  unconditionalCas: false,
  blindCas: false,
  getWithoutFlush: false,
  narrowIndexFlush: false,
  finalGroupIndexFlush: false,
  deleteNoopWithoutFlush: false,
  skipPointerValidation: false,
  skipReclaim: false,
  acceptStaleEpoch: false,
  allowAllocateBeforeRebuild: false,
  skipDeadItemPersist: false,
  skipRejectedSlotPersist: false,
  dropUnansweredReturns: false,
  retryUncertainPut: false,
  noReconnect: false,
});

export type KvFaultName = keyof KvFaults;

export interface KvMutant {
  /** Mutant name, kebab-case (`--mutant`, `--list-mutants`, replay commands). */
  name: string;
  /** The fault switch it sets. */
  fault: KvFaultName;
  /** Former names `--mutant` still accepts: the fault switch's name (the mutants were named after it, camelCase, before the kebab-case names). */
  aliases: readonly string[];
  /** 'put-chain', 'get-chain', 'allocator-recovery' or 'drops' (the client across a dropped connection). */
  layer: 'put-chain' | 'get-chain' | 'allocator-recovery' | 'drops';
  /** The persistence step it removes. */
  step: string;
  /** Protocols it applies to (a CLI prints `name<TAB>strategies`, as for the RPC mutants). */
  strategies: readonly string[];
  /**
   * The targeted test that shows it in seconds: a step-driven scenario (another chain's CAS
   * visible, not durable, when a read or a PUT past it is acknowledged) or a scripted explorer
   * scenario (a media error, then a crash during recovery or a second one). The plain sweep
   * (`pmrpc crash-test --app kv --mutants all --seeds 1..24`) catches every mutant as well, these
   * included (docs/kv.md, *The explorer's workload*); test/apps/kv/mutants.test.ts checks that the
   * named test runs the mutant and asserts the catch.
   */
  caughtBy?: string;
}

/** The mutants by fault switch (KV_MUTANTS adds each one's name and aliases). */
const KV_FAULT_MUTANTS = [
  { fault: 'dropHeapFlush', layer: 'put-chain', step: 'FLUSH(persistent) of the heap between ALLOCATE and the CAS', strategies: ['prism-kv'] },
  { fault: 'dropIndexFlush', layer: 'put-chain', step: 'FLUSH(persistent) of the index slot after the CAS (durable when acknowledged)', strategies: ['prism-kv'] },
  { fault: 'unconditionalCas', layer: 'put-chain', step: 'the conditional flag on the CAS (install only what ALLOCATE just wrote)', strategies: ['prism-kv'] },
  { fault: 'blindCas', layer: 'put-chain', step: 'the compare of the CAS against the slot version the client last saw', strategies: ['prism-kv'] },
  { fault: 'getWithoutFlush', layer: 'get-chain', step: 'FLUSH(persistent) of the slots a GET READ, in its chain (a read returns only durable state)', strategies: ['prism-kv'], caughtBy: 'test/apps/kv/dirty-read.test.ts' },
  { fault: 'narrowIndexFlush', layer: 'put-chain', step: 'the index FLUSH covering the window slots the PUT went past (another chain\'s not-yet-durable claim)', strategies: ['prism-kv'], caughtBy: 'test/apps/kv/lost-put.test.ts' },
  { fault: 'finalGroupIndexFlush', layer: 'put-chain', step: 'the index FLUSHes covering the earlier groups of the probe sequence the PUT went past (only the group holding the slot is flushed)', strategies: ['prism-kv'], caughtBy: 'test/apps/kv/lost-put.test.ts' },
  { fault: 'deleteNoopWithoutFlush', layer: 'put-chain', step: 'FLUSH(persistent) of a tombstone before a DELETE that found it is acknowledged as done', strategies: ['prism-kv'], caughtBy: 'test/apps/kv/lost-put.test.ts' },
  { fault: 'skipPointerValidation', layer: 'allocator-recovery', step: 'validating and repairing every slot pointer before rebuilding the free lists', strategies: ['prism-kv'] },
  { fault: 'skipReclaim', layer: 'allocator-recovery', step: 'reclaiming buffers the index does not reach', strategies: ['prism-kv'] },
  { fault: 'acceptStaleEpoch', layer: 'allocator-recovery', step: 'refusing buffer returns stamped with an earlier server epoch', strategies: ['prism-kv'] },
  { fault: 'allowAllocateBeforeRebuild', layer: 'allocator-recovery', step: 'refusing ALLOCATE until the free lists are rebuilt', strategies: ['prism-kv'] },
  { fault: 'skipDeadItemPersist', layer: 'allocator-recovery', step: "persisting a rejected slot's dead item before the slot points at it", strategies: ['prism-kv'], caughtBy: 'test/apps/kv/repairs.test.ts' },
  { fault: 'skipRejectedSlotPersist', layer: 'allocator-recovery', step: "persisting a rejected slot's new word before the rejected buffer goes back on a free list", strategies: ['prism-kv'], caughtBy: 'test/apps/kv/repairs.test.ts' },
  { fault: 'dropUnansweredReturns', layer: 'drops', step: 'sending a return batch whose answer a drop lost again, same number, after the reconnect (idempotent batches)', strategies: ['prism-kv'], caughtBy: 'test/apps/kv/drops.test.ts' },
  { fault: 'retryUncertainPut', layer: 'drops', step: 'resolving a PUT whose answer a drop lost (a FLUSHed READ of its slot) before posting it again', strategies: ['prism-kv'], caughtBy: 'test/apps/kv/drops.test.ts' },
  { fault: 'noReconnect', layer: 'drops', step: 'reconnecting the live server after a dropped connection', strategies: ['prism-kv'], caughtBy: 'test/apps/kv/drops.test.ts' },
] as const satisfies ReadonlyArray<Omit<KvMutant, 'name' | 'aliases'>>;

export const KV_MUTANTS: readonly KvMutant[] = Object.freeze(KV_FAULT_MUTANTS.map((m): KvMutant => ({ ...m, name: kebabName(m.fault), aliases: [m.fault] })));

/** The mutant called `name` or one of its aliases (undefined: none). */
export function findKvMutant(name: string): KvMutant | undefined {
  return KV_MUTANTS.find((m) => m.name === name) ?? KV_MUTANTS.find((m) => m.aliases.includes(name));
}


/** The fault switches of mutant `mutant` (its name or an alias; undefined: none on). */
export function faultsFor(mutant: string | undefined): KvFaults {
  if (mutant === undefined) return { ...NO_KV_FAULTS };
  const m = findKvMutant(mutant);
  if (m === undefined) throw new TypeError(`mutant must be one of ${KV_MUTANTS.map((x) => x.name).join(', ')}, got ${String(mutant)}`);
  return { ...NO_KV_FAULTS, [m.fault]: true };
}

/** `--list-mutants` output for the KV app: one `name<TAB>strategies` line per mutant, as for the RPC mutants. */
export function listKvMutants(): string {
  return KV_MUTANTS.map((m) => `${m.name}\t${m.strategies.join(',')}`).join('\n');
}

/** A kv system's mutants: PRISM-KV's (KV_MUTANTS) or the Pilaf baseline's (PILAF_MUTANTS, src/apps/pilaf/faults.ts). */
interface KvSystemMutants {
  readonly names: readonly string[];
  /** The mutant's name, from its name or an alias (undefined: not one of this system's). */
  find(name: string): string | undefined;
  /** The kv app's fault options of a mutant of this system (undefined: none on). */
  faults(mutant: string | undefined): { faults: KvFaults; pilafFaults: PilafFaults };
}

/** Each kv system's mutants, by system: the one place the workload and the registry learn which mutant belongs to which system. */
export const KV_SYSTEM_MUTANTS: Readonly<Record<'prism' | 'pilaf', KvSystemMutants>> = Object.freeze({
  prism: Object.freeze({ names: KV_MUTANTS.map((m) => m.name), find: (n: string) => findKvMutant(n)?.name, faults: (m: string | undefined) => ({ faults: faultsFor(m), pilafFaults: pilafFaultsFor(undefined) }) }),
  pilaf: Object.freeze({ names: PILAF_MUTANTS.map((m) => m.name), find: (n: string) => findPilafMutant(n)?.name, faults: (m: string | undefined) => ({ faults: faultsFor(undefined), pilafFaults: pilafFaultsFor(m) }) }),
});
