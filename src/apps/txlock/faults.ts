/**
 * The fault surface of the lock-based transaction baselines (txfarm, txford), as data: none.
 * The baselines are comparison points for PRISM-TX's benchmarks, not crash-explored systems: the
 * registry lists them with `crash: false` (src/node/apps.ts), there is no crash part for them in
 * src/testing/crash/apps.ts, and their recovery handles the local rows only (TXLOCK_RECOVERY_TABLE, recovery.ts: a LOGGED
 * record stays locked — deciding it needs the other participants, which is not built). A mutant
 * is a claim that a sweep catches it; no sweep runs here, so the list is empty rather than a list
 * of switches nothing checks. docs/tx.md "Baselines" says what a full recovery would need.
 */

/** The baselines' test-only fault switches: none (no option `faults`; the shard's options are TxLockAppOptions). */
export type TxLockFaults = Record<string, never>;

/** One mutant, in the shape of the other apps' lists (kebab-case name, the step it removes, the switches it sets). */
export interface TxLockMutant {
  name: string;
  step: string;
  faults: Partial<TxLockFaults>;
}

/** Empty: the baselines are not crash-swept (the registry's `crash: false`), so no mutant is claimed caught. */
export const TXLOCK_MUTANTS: readonly TxLockMutant[] = Object.freeze([]);
