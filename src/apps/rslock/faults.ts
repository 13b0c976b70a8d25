/**
 * Test-only fault switches of the lock-based baseline (DESIGN §8 "the suite must have teeth"): each
 * removes one step of the client's write protocol. `pmrpc crash-test --app rslock --list-mutants`
 * prints RSLOCK_MUTANTS; `--mutant NAME` must report violations, and the plain sweep
 * (`--mutants all`) catches each (test/deep/mutants-all-rslock.test.ts). The names were kebab-case
 * from the start: no aliases.
 */

/**
 * - skipFlush: no FLUSH(persistent) of the record before the release: a write is acknowledged
 *   (and readers may return it) before it is durable.
 * - inPlace: the record overwrites the slot the lock word names instead of the other one: a crash
 *   mid-write can tear the block's last acknowledged value on every replica of the quorum.
 */
export interface RsLockFaults {
  skipFlush: boolean;
  inPlace: boolean;
}

/** One mutant: its kebab-case name, the step it removes, the switches it sets. */
export interface RsLockMutant {
  name: string;
  step: string;
  faults: Partial<RsLockFaults>;
}

export const RSLOCK_MUTANTS: readonly RsLockMutant[] = Object.freeze([
  { name: 'skip-flush', step: 'the FLUSH(persistent) of the record before the release', faults: { skipFlush: true } },
  { name: 'in-place', step: 'out-of-place writes (the record goes to the slot the publish word does not name)', faults: { inPlace: true } },
]);

/** The mutant called `name`, or undefined. */
export function findRsLockMutant(name: string): RsLockMutant | undefined {
  return RSLOCK_MUTANTS.find((m) => m.name === name);
}
