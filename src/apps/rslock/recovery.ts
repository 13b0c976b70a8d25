/**
 * The lock-based baseline's replica recovery as a decision table of data (as
 * recovery/decision-table.ts is for the rings and src/apps/rs/recovery.ts for PRISM-RS).
 * RsLockAppServer.recover walks every block and evaluates two inputs —
 *
 * - records: whether either of the block's two slots holds a valid record ('some': the one of the
 *   highest version is the block's value) or neither does ('none': a crash tore both, which the
 *   protocol never does — only the unpublished slot is ever written);
 * - lock: whether the block's lock line already is the one derived from that record (its version
 *   and slot, unlocked; for 'none', version 0 in slot 0) — 'matches' or 'differs'.
 *
 * Exactly one row matches every input (test/apps/rslock/recovery-table.test.ts enumerates them),
 * and every row is reached by a test that writes its state into PM by hand. Actions, in order:
 * `resetRecord` (an empty version-0 record into slot 0, persisted: a lost copy), then
 * `rewriteLock` (the derived lock line, persisted).
 */
import { allCombinations, decideRow, matchRows, type When } from '../../../recovery/index.js';

export type RsLockRecordsInput = 'some' | 'none';
export type RsLockLineInput = 'matches' | 'differs';

export interface RsLockBlockInput {
  records: RsLockRecordsInput;
  lock: RsLockLineInput;
}

export interface RsLockBlockRow {
  /** Stable name, for the recovery report's row counts and the docs. */
  id: string;
  when: When<RsLockBlockInput>;
  /** An empty version-0 record goes into slot 0 (the replica lost its copy). */
  resetRecord: boolean;
  /** The derived lock line is written. */
  rewriteLock: boolean;
  why: string;
}

export const RSLOCK_RECORDS_VALUES: readonly RsLockRecordsInput[] = Object.freeze(['some', 'none']);
export const RSLOCK_LINE_VALUES: readonly RsLockLineInput[] = Object.freeze(['matches', 'differs']);

export const RSLOCK_BLOCK_TABLE: readonly RsLockBlockRow[] = Object.freeze([
  {
    id: 'sound',
    when: { records: ['some'], lock: ['matches'] },
    resetRecord: false,
    rewriteLock: false,
    why: 'the lock line is free and publishes the valid record of the highest version: nothing to repair',
  },
  {
    id: 'lock-rederived',
    when: { records: ['some'], lock: ['differs'] },
    resetRecord: false,
    rewriteLock: true,
    why: "a lock held at the crash (its holder's operation was cut), or a release that did not persist, or a slot FLUSHed but not yet published (a complete write, which may be taken): the line is derived again from the records, unlocked",
  },
  {
    id: 'lost',
    when: { records: ['none'], lock: ['matches'] },
    resetRecord: true,
    rewriteLock: false,
    why: 'both slots invalid (the protocol never tears both): this replica lost its copy; an empty version-0 record makes it answer behind, so readers repair it from a majority (the lock line already names version 0, slot 0)',
  },
  {
    id: 'lost-relock',
    when: { records: ['none'], lock: ['differs'] },
    resetRecord: true,
    rewriteLock: true,
    why: 'both slots invalid and the lock line names something else: the empty version-0 record as in row lost, then the lock line that publishes it',
  },
] satisfies RsLockBlockRow[]);

/** Every row matching `input` (the table test asserts there is exactly one for every input). */
export function matchingRsLockBlockRows(input: RsLockBlockInput, table: readonly RsLockBlockRow[] = RSLOCK_BLOCK_TABLE): RsLockBlockRow[] {
  return matchRows(table, input);
}

/** The row for `input`. Broken coverage is a pmrpc bug: an assertion. */
export function decideRsLockBlock(input: RsLockBlockInput): RsLockBlockRow {
  return decideRow('rslock block table', RSLOCK_BLOCK_TABLE, input);
}

/** Every input combination (2 × 2 = 4). */
export function allRsLockBlockInputs(): RsLockBlockInput[] {
  return allCombinations<RsLockBlockInput>({ records: RSLOCK_RECORDS_VALUES, lock: RSLOCK_LINE_VALUES });
}
