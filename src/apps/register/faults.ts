/**
 * Test-only fault switches of the replicated register (DESIGN §8 "the suite must have teeth"):
 * each removes one step of the client's protocol. `pmrpc crash-test --app register
 * --list-mutants` prints REGISTER_MUTANTS; the plain sweep (`--mutants all`) catches each
 * (test/deep/mutants-all-register.test.ts).
 */

/**
 * Test-only fault switches (mutants of the protocol, for the crash explorer's teeth):
 * - countFailedCas: a node whose CAS did not swap counts at once, without the flushed READ;
 * - skipInstallFlush: the install chain has no FLUSH of the cell (WRITE; FLUSH record; CAS; READ): acknowledged before durable;
 * - skipRecordFlush: the install chain has no FLUSH of the record before the CAS: a durable cell may point at a record a crash takes back;
 * - skipReadFlush: the READ of phase 1 is not FLUSHed: a read may return what a crash takes back.
 */
export interface RegisterFaults {
  countFailedCas?: boolean;
  skipInstallFlush?: boolean;
  skipRecordFlush?: boolean;
  skipReadFlush?: boolean;
}

export interface RegisterMutant {
  name: string;
  step: string;
  faults: RegisterFaults;
}

export const REGISTER_MUTANTS: readonly RegisterMutant[] = Object.freeze([
  { name: 'count-failed-cas', step: 'a replica whose CAS did not swap counts only once a flushed READ shows a tag >= the writer\'s', faults: { countFailedCas: true } },
  { name: 'skip-install-flush', step: 'the FLUSH(persistent) of the cell word after the install CAS: a write is acknowledged before it is durable', faults: { skipInstallFlush: true } },
  { name: 'skip-record-flush', step: 'the FLUSH(persistent) of the record before the install CAS: a durable cell word may point at a record a crash takes back', faults: { skipRecordFlush: true } },
  { name: 'skip-read-flush', step: 'the FLUSH(persistent) of what a read returns: a read may return a value a crash takes back', faults: { skipReadFlush: true } },
] satisfies RegisterMutant[]);

/** The mutant called `name`, or undefined. */
export function findRegisterMutant(name: string): RegisterMutant | undefined {
  return REGISTER_MUTANTS.find((m) => m.name === name);
}
