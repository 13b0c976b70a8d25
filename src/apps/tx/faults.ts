/**
 * Test-only fault switches of PRISM-TX (DESIGN §8): each removes one step of the commit, the
 * resolution or the recovery. The crash suite (src/testing/crash/tx.ts) must report violations
 * for each; TX_MUTANTS lists them as data for the CLI (`name<TAB>step`).
 */
import type { MutantExplore } from '../index.js';

export interface TxFaults {
  /** Prepare chain: no FLUSH after the record's H CAS (of H and the body) — the client counts a record that is not durable. */
  skipPrepareFlush: boolean;
  /** Prepare chain: the FLUSH after the H CAS covers H only, not the record body (a durable H over a torn body, counted). */
  skipBodyFlush: boolean;
  /** Prepare: read-only keys are not validated (no CAS on their timestamps). */
  skipValidation: boolean;
  /** Prepare: a prepare or validation CAS that did not swap counts as success. */
  countFailedCas: boolean;
  /** Prepare: the record's H is written by a plain WRITE, not a CAS that checks for a fence (a late prepare lands after a fence). */
  noFenceCheck: boolean;
  /** Prepare chain: the ALLOCATEd new values are not FLUSHed (no redirected FLUSH of each item) before the H CAS that publishes the record naming them. */
  skipAllocateFlush: boolean;
  /** Prepare chain: the record body does not carry the new items' addresses (no WRITE of the pointer array from the QP's scratch): a resolver or recovery rolling T forward installs whatever the array held. */
  skipRecordPtrs: boolean;
  /** Prepare chain: the redirected FLUSH of each new item comes after the H CAS and its FLUSH (a durable record may name an item that is not durable). */
  lateItemFlush: boolean;
  /** Prepare chain of a record carrying values: the FLUSH after the H CAS covers H, the header and the entries, not the values (a durable PREPARED(T) over torn values, counted). */
  recordValuesNotFlushed: boolean;
  /** Round 2 of a record carrying values: no redirected FLUSH of the ALLOCATEd item before the install CAS publishes it (a durable slot may point at an item that is not). */
  installWithoutItemFlush: boolean;
  /** Resolver: rolls forward a record carrying values without installing them (as if round 2 had installed them): H := COMMITTED over the old values. */
  rollForwardIgnoresValues: boolean;
  /** Commit (round 2): no FLUSH of T's slots (the installs, and the W its checks and validations raised in round 1) before H := COMMITTED. */
  skipInstallFlush: boolean;
  /** Resolver: commits when any participant holds a record (not every one: the commit point is not reached). */
  resolverWithoutCommitPoint: boolean;
  /** Resolver: acts on records it READ without FLUSHing them (visible, perhaps not durable). */
  resolverTrustsVisible: boolean;
  /** Resolver: decides abort where it found no record without fencing T there first. */
  resolverNoFence: boolean;
  /** Resolver: fences T over an earlier transaction's PREPARED record of the same client slot without resolving that transaction first (row D8) — the record of a transaction already reported committed, whose round 2 has not landed, is replaced. */
  fenceOverPrepared: boolean;
  /** Read for update and round 1: the read chain's lock CAS comes after its READs, and round 1 checks a key locked at read time by order (PRISM gt over [W CT L] with [ts seen T], as this protocol once did; the correct round 1 has no check for it) — it also swaps when L is below T (the lock released, or a smaller txid's), lowering W. */
  checkLockByOrder: boolean;
  /**
   * Prepare: a lock a read for update took is trusted on any connection to the shard — one a
   * restart released (recovery R3) included — so round 1 neither locks nor checks the key. Since
   * round 1 no longer checks a read-time lock, T then prepares over a key it no longer holds and
   * its install finds another's lock or none (test/apps/tx/read-locks.test.ts: the client stops
   * with PMRPC_ERR_INVARIANT).
   */
  readLockAnyConnection: boolean;
  /** Prepare: a transaction whose read-time locks a resolver released after fencing it (D6) prepares over the fence when the client re-learnt that fence as its slot's H (it is not aborted). */
  prepareOverOwnFence: boolean;
  /** Round 2: the install swaps CT and the pointer but leaves W (round 1 no longer raises W of a key locked at read time: the install must, W ≥ CT). */
  installKeepsW: boolean;
  /**
   * Resolver: an abort decided by another shard's fence or ABORTED (D3) releases T's locks on a
   * shard whose H does not name T without fencing T there first (row D9): T, still executing, may
   * prepare there later over a lock it no longer holds (round 1 does not check a read-time lock).
   * Not in TX_MUTANTS: the plain sweep did not reach it in 13 minutes (its harm needs T's late
   * prepare there, another transaction's PREPARED record on the key and a crash of that shard
   * before T's roll-back); caught by test/apps/tx/decision-table.test.ts (D9).
   */
  releaseWithoutFence: boolean;
  /** Recovery: PREPARED records are ignored — their locks are released and H set ABORTED locally. */
  recoveryIgnoresRecords: boolean;
  /** Recovery: a PREPARED H is kept as a record without checking that its body is T's and that its item addresses name T's own items (row R2: a prepare whose one FLUSH of H and body did not complete is not fenced; a torn address array is installed by a roll forward). */
  recoveryTrustsRecord: boolean;
  /**
   * Client restart: a later incarnation of a client slot prepares over an earlier incarnation's
   * PREPARED record without resolving it first (the slot reused before its transactions are
   * resolved). Not in TX_MUTANTS: the explorer never restarts a client; caught by
   * test/apps/tx/slot-reuse.test.ts (the H-edge invariant stops it before its CAS).
   */
  reuseSlotUnsettled: boolean;
  /** Reclamation: the client marks its ALLOCATEd items dead as soon as its commit did not reach the commit point in its own view — a participant that did not answer included — before T's abort is decided, and without the guard that makes the abort durable on the shard first. */
  returnBeforeDecided: boolean;
  /** Live reclamation: a retired item (a superseded value, an aborted transaction's dead item) goes back to the free list at once, without waiting for the chains in flight at its retirement (a chain that dereferenced it may read it reused). Not in TX_MUTANTS: caught by test/apps/tx/live-reclaim.test.ts. */
  freeWithoutGrace: boolean;
  /** Live reclamation: a superseded value is retired once its slot's new pointer is visible, without the CPU persisting it first (a crash may bring the old pointer back over a reused item). Not in TX_MUTANTS: caught by test/apps/tx/live-reclaim.test.ts (with freeWithoutGrace on in both runs). */
  freeWithoutPersist: boolean;
  /** Reclamation switched off (not a safety step: a liveness switch): no item is marked dead, so aborted transactions' items come back only at recovery (R4). */
  skipReturns: boolean;
}

export const NO_TX_FAULTS: Readonly<TxFaults> = Object.freeze({
  skipPrepareFlush: false,
  skipBodyFlush: false,
  skipValidation: false,
  countFailedCas: false,
  noFenceCheck: false,
  skipAllocateFlush: false,
  skipRecordPtrs: false,
  lateItemFlush: false,
  recordValuesNotFlushed: false,
  installWithoutItemFlush: false,
  rollForwardIgnoresValues: false,
  skipInstallFlush: false,
  resolverWithoutCommitPoint: false,
  resolverTrustsVisible: false,
  resolverNoFence: false,
  fenceOverPrepared: false,
  checkLockByOrder: false,
  readLockAnyConnection: false,
  prepareOverOwnFence: false,
  installKeepsW: false,
  releaseWithoutFence: false,
  recoveryIgnoresRecords: false,
  recoveryTrustsRecord: false,
  reuseSlotUnsettled: false,
  returnBeforeDecided: false,
  freeWithoutGrace: false,
  freeWithoutPersist: false,
  skipReturns: false,
});

export type TxFaultName = keyof TxFaults;

export interface TxMutant {
  name: string;
  fault: TxFaultName;
  step: string;
  /** Where it is caught when the crash explorer at seed 1 (DDIO on) does not reach it: a targeted test. */
  caughtBy?: string;
  /**
   * Workload the explorer runs this mutant with unless told otherwise: what its race needs (e.g.
   * hot keys for a validation bug). The correct protocol under the same pins reports nothing.
   */
  pins?: { keys?: number; clients?: number; agent?: boolean };
  /** NIC pins and adversarial schedule the explorer runs it with unless told otherwise (`--mutant NAME --seed 1` uses them). */
  explore?: MutantExplore;
}

export const TX_MUTANTS: readonly TxMutant[] = Object.freeze([
  { name: 'skip-prepare-flush', fault: 'skipPrepareFlush', step: 'FLUSH(persistent) of the prepare record (H and body, one FLUSH after the H CAS) before it counts' },
  { name: 'skip-body-flush', fault: 'skipBodyFlush', step: "the FLUSH(persistent) after the H CAS covers the record body, not only H" },
  {
    name: 'skip-validation',
    fault: 'skipValidation',
    step: 'validation of the read set (CAS: unlocked, CT unchanged, raise W)',
    // Two hot keys on two shards, six clients: read-only transactions read across concurrent commits (a fractured
    // read in the live run). Four clients, the three-round-trip commit's pin, reach it at seed 1 of the two-round-trip
    // commit only in a crash run after every crash image of the seed (tens of minutes on a loaded 2-core machine).
    pins: { keys: 2, clients: 6 },
  },
  { name: 'count-failed-cas', fault: 'countFailedCas', step: 'a prepare or validation CAS that did not swap aborts (never counts as success)' },
  {
    name: 'no-fence-check',
    fault: 'noFenceCheck',
    step: "the prepare's H CAS checks the fence (a slow client's late prepare fails)",
    // One participant's prepare chain held back (a QP stall) while the other participant's record is durable and
    // the resolver agent, finding T in doubt twice, fences T where it has no record and aborts it; the held chain then
    // resumes and its plain WRITE of H replaces the fence, the client counts every participant prepared and reports
    // commit (live: committed but absent). Since the two-round-trip commit a client posts every participant's prepare
    // chain at once, so a whole-client stall (the pin of the three-round-trip commit) holds both chains and opens no
    // window; QP stalls of up to 400 steps in the first 800 do.
    explore: { schedule: { stalls: 20, stallSteps: 400, stallUnit: 'qp', horizon: 800 } },
  },
  { name: 'skip-allocate-flush', fault: 'skipAllocateFlush', step: 'redirected FLUSH(persistent) of each ALLOCATEd new item in the prepare chain, before the H CAS' },
  { name: 'skip-record-ptrs', fault: 'skipRecordPtrs', step: "WRITE of the new items' addresses from the QP's scratch into the prepare record (what roll-forward installs)" },
  { name: 'late-item-flush', fault: 'lateItemFlush', step: 'the new items are FLUSHed before the H CAS that publishes the record naming them (not after)' },
  { name: 'record-values-not-flushed', fault: 'recordValuesNotFlushed', step: "the prepare's FLUSH after the H CAS covers the new values a record carries (the crc covers them: a torn value is a torn record)" },
  { name: 'install-without-item-flush', fault: 'installWithoutItemFlush', step: 'round 2 FLUSHes exactly the item it ALLOCATEd from a carried value (redirected FLUSH) before the install CAS publishes it' },
  { name: 'roll-forward-ignores-record-values', fault: 'rollForwardIgnoresValues', step: "the resolver's roll forward of a record carrying values ALLOCATEs and installs them from the record's bytes before H := COMMITTED" },
  { name: 'skip-install-flush', fault: 'skipInstallFlush', step: "FLUSH(persistent) of T's slots (installs, and the W its checks and validations raised) before H := COMMITTED" },
  { name: 'check-lock-by-order', fault: 'checkLockByOrder', step: "round 1 never checks a key locked at read time by order (the read chain's lock CAS returns the W and CT it locked; a check by order passes a released or smaller lock and lowers W)" },
  { name: 'read-lock-any-connection', fault: 'readLockAnyConnection', step: 'round 1 trusts a lock taken at read time only on the connection it was taken on (a restart released it)' },
  { name: 'prepare-over-own-fence', fault: 'prepareOverOwnFence', step: "a transaction fenced by a resolver while it held read-time locks (D6) aborts when the H its client re-learnt is that fence (never prepares over it)" },
  { name: 'install-keeps-w', fault: 'installKeepsW', step: "round 2's install raises W with CT (W := ts: round 1 does not touch a key its read locked)" },
  { name: 'resolver-without-commit-point', fault: 'resolverWithoutCommitPoint', step: 'the resolver commits only when every participant holds a durable record' },
  {
    name: 'resolver-trusts-visible',
    fault: 'resolverTrustsVisible',
    step: 'the resolver FLUSHes what it read before acting on it',
    // A prepare record visible (drained at once: drain eager) but not yet FLUSHed while its client's QP is held back
    // and the resolver agent decides on it; a crash in that window loses H under what the resolver did (pct.ts
    // stalls). Since the two-round-trip commit a prepare chain runs its slot CASes, two WRITEs and two FLUSHes before
    // H's CAS and H's FLUSH right after it, so a stall at a drawn step rarely falls between the two (seed 1 no longer
    // had one); stalls armed on an atomic (stallOn 'atomic': held from the step after the QP's next CAS) do.
    explore: { pins: { drain: 'eager' }, schedule: { stalls: 20, stallSteps: 400, stallUnit: 'qp', stallOn: 'atomic', horizon: 800 } },
  },
  { name: 'fence-over-prepared', fault: 'fenceOverPrepared', step: "the resolver resolves an earlier transaction of the slot still PREPARED where it would fence T (row D8)" },
  { name: 'resolver-no-fence', fault: 'resolverNoFence', step: 'the resolver fences T where it found no record before deciding abort' },
  { name: 'recovery-ignores-records', fault: 'recoveryIgnoresRecords', step: 'recovery keeps PREPARED records (and their locks) for the resolver' },
  { name: 'recovery-trusts-record', fault: 'recoveryTrustsRecord', step: "recovery fences a PREPARED H whose body is not T's or whose item addresses do not name T's items (row R2: that prepare's FLUSH never completed)" },
  { name: 'return-before-decided', fault: 'returnBeforeDecided', step: "an aborted transaction's ALLOCATEd items are marked dead (and swept back to the free list) only once its abort is decided and durable" },
] as const satisfies readonly TxMutant[]);

export function txFaultsFor(mutant: string | undefined): TxFaults {
  if (mutant === undefined) return { ...NO_TX_FAULTS };
  const m = TX_MUTANTS.find((x) => x.name === mutant);
  if (m === undefined) throw new TypeError(`mutant must be one of ${TX_MUTANTS.map((x) => x.name).join(', ')}, got ${String(mutant)}`);
  return { ...NO_TX_FAULTS, [m.fault]: true };
}
