/**
 * The recovery procedure as an explicit decision table (DESIGN §3). Recovery visits, per client,
 * ring positions (sequences) from one past the table's applied word; for each it evaluates:
 *
 * - checksum: does the slot's commit checksum match, with a header naming this client?
 * - lap: the slot's lap and header sequence against the expected ones ('expected'; 'previous' =
 *   the entry one lap earlier, already applied; 'other' = anything else, e.g. beyond the credits);
 * - seq: the position against what recovery has established so far: 'next' (one past the applied
 *   sequence, no gap before it), 'inPrefix' (further on, every earlier position durable), or
 *   'pastGap' (after the first gap of the ring);
 * - record: the state of the effect record of (client, seq): none, incomplete (torn), complete
 *   but not applied, applied.
 *
 * Exactly one row matches every input (tested by enumeration). Actions: replay (re-apply the
 * record's after-images, set its flag), reexecute (run the handler on the entry through the redo
 * log), skip (nothing to write), invalidate (durably zero the slot's commit word), refuse (the
 * state cannot come from the protocol: recovery stops with PMRPC_ERR_RECOVERY_REFUSED, untouched).
 * The rows that end the durable prefix (`gap: true`) make the position the client's resume point.
 */
import { allCombinations, decideRow, matchRows, type When } from './table.js';
import type { LapRelation } from './ring.js';

export type ChecksumInput = 'valid' | 'invalid';
export type SeqInput = 'next' | 'inPrefix' | 'pastGap';
export type RecordInput = 'none' | 'incomplete' | 'complete-unapplied' | 'applied';
export type Action = 'replay' | 'reexecute' | 'skip' | 'invalidate' | 'refuse';

export interface DecisionInput {
  checksum: ChecksumInput;
  lap: LapRelation;
  seq: SeqInput;
  record: RecordInput;
}

export interface DecisionRow {
  /** Stable name, for coverage records and docs. */
  id: string;
  when: When<DecisionInput>;
  action: Action;
  /** This position is the first gap (the durable prefix ends before it). */
  gap: boolean;
  /** The position counts as applied once the action is done (the applied sequence advances). */
  advancesApplied: boolean;
  why: string;
}

export const CHECKSUM_VALUES: readonly ChecksumInput[] = Object.freeze(['valid', 'invalid']);
export const LAP_VALUES: readonly LapRelation[] = Object.freeze(['expected', 'previous', 'other']);
export const SEQ_VALUES: readonly SeqInput[] = Object.freeze(['next', 'inPrefix', 'pastGap']);
export const RECORD_VALUES: readonly RecordInput[] = Object.freeze(['none', 'incomplete', 'complete-unapplied', 'applied']);

const NOT_LOGGED = ['none', 'incomplete'] as const;
const IN_PREFIX = ['next', 'inPrefix'] as const;

export const DECISION_TABLE: readonly DecisionRow[] = Object.freeze([
  {
    id: 'applied-skip',
    when: { record: ['applied'], seq: ['next'] },
    action: 'skip',
    gap: false,
    advancesApplied: true,
    why: 'its effects are durably applied (the flag is the truth; the table word lagged): advance the applied sequence, whatever the slot holds now',
  },
  {
    id: 'applied-out-of-order',
    when: { record: ['applied'], seq: ['inPrefix', 'pastGap'] },
    action: 'refuse',
    gap: false,
    advancesApplied: false,
    why: 'an applied record for a request whose predecessor is not applied: FIFO was broken',
  },
  {
    id: 'replay',
    when: { record: ['complete-unapplied'], seq: ['next'] },
    action: 'replay',
    gap: false,
    advancesApplied: true,
    why: 'a complete record not marked applied: re-apply its after-images (idempotent) and set its flag, whatever the slot holds (the entry may have been processed before it was durable)',
  },
  {
    id: 'replay-out-of-order',
    when: { record: ['complete-unapplied'], seq: ['inPrefix', 'pastGap'] },
    action: 'refuse',
    gap: false,
    advancesApplied: false,
    why: 'a logged request whose predecessor is not applied: records were not written in FIFO order',
  },
  {
    id: 'reexecute',
    when: { record: NOT_LOGGED, seq: IN_PREFIX, checksum: ['valid'], lap: ['expected'] },
    action: 'reexecute',
    gap: false,
    advancesApplied: false,
    why: 'a durable entry in the prefix whose effects never reached a complete record: run it again, in FIFO order',
  },
  {
    id: 'gap-previous-lap',
    when: { record: NOT_LOGGED, seq: IN_PREFIX, checksum: ['valid'], lap: ['previous'] },
    action: 'skip',
    gap: true,
    advancesApplied: false,
    why: 'the slot still holds the previous lap (applied) entry: this request never arrived; the old lap cannot be mistaken for it',
  },
  {
    id: 'gap-torn',
    when: { record: NOT_LOGGED, seq: IN_PREFIX, checksum: ['invalid'] },
    action: 'invalidate',
    gap: true,
    advancesApplied: false,
    why: 'torn or never placed: the durable prefix ends here; invalidate so a partial resend cannot validate with stale bytes',
  },
  {
    id: 'alien-lap',
    when: { record: NOT_LOGGED, checksum: ['valid'], lap: ['other'] },
    action: 'invalidate',
    gap: true,
    advancesApplied: false,
    why: 'a valid entry of this client from neither this lap nor the previous one (an older lap left when an entry was executed before it was durable, or an entry placed beyond the credits): this request never arrived; never executed',
  },
  {
    id: 'beyond-gap-entry',
    when: { record: NOT_LOGGED, seq: ['pastGap'], checksum: ['valid'], lap: ['expected'] },
    action: 'invalidate',
    gap: false,
    advancesApplied: false,
    why: 'durable but past the first gap: no acknowledgement can cover it (a flush covers every earlier write), and the client resends from the gap',
  },
  {
    id: 'beyond-gap-previous-lap',
    when: { record: NOT_LOGGED, seq: ['pastGap'], checksum: ['valid'], lap: ['previous'] },
    action: 'skip',
    gap: false,
    advancesApplied: false,
    why: 'the previous lap entry, past the gap: nothing to do',
  },
  {
    id: 'beyond-gap-torn',
    when: { record: NOT_LOGGED, seq: ['pastGap'], checksum: ['invalid'] },
    action: 'invalidate',
    gap: false,
    advancesApplied: false,
    why: 'torn or never placed, past the gap: invalidate (a no-op when the commit word is already zero)',
  },
] satisfies DecisionRow[]);

/** Every row matching `input` (the coverage test asserts there is exactly one for every input). */
export function matchingRows(input: DecisionInput, table: readonly DecisionRow[] = DECISION_TABLE): DecisionRow[] {
  return matchRows(table, input);
}

/** The row for `input`. Broken coverage is a pmrpc bug: an assertion. */
export function decide(input: DecisionInput): DecisionRow {
  return decideRow('decision table', DECISION_TABLE, input);
}

/** Every input combination (2 × 3 × 3 × 4 = 72). */
export function allInputs(): DecisionInput[] {
  return allCombinations<DecisionInput>({ checksum: CHECKSUM_VALUES, lap: LAP_VALUES, seq: SEQ_VALUES, record: RECORD_VALUES });
}

/**
 * Records at or behind a live client's applied word (the word recovery starts its ring walk past).
 * The ring walk above never sees them; this table decides each one (docs/recovery.md "Group
 * commit", case c). Input: the record's state after the torn-tail rule ('none' records are not
 * records of the client: they are never walked).
 */
export type BehindWordInput = { record: Exclude<RecordInput, 'none'> };

export interface BehindWordRow {
  /** Stable name, for coverage records, the report's row counts and the docs. */
  id: string;
  when: When<BehindWordInput>;
  action: 'replay' | 'skip';
  why: string;
}

export const BEHIND_WORD_RECORD_VALUES: readonly BehindWordInput['record'][] = Object.freeze(['incomplete', 'complete-unapplied', 'applied']);

export const BEHIND_WORD_TABLE: readonly BehindWordRow[] = Object.freeze([
  {
    id: 'replay-behind-word',
    when: { record: ['complete-unapplied'] },
    action: 'replay',
    why: "group commit's lazy flags: a batch's applied words are persisted with its images, one msync before its flags, so a torn msync can keep the word and lose the images; the record was synced complete before its RESULT left, so it is replayed (redo is idempotent, in LSN order with the other replays)",
  },
  {
    id: 'applied-behind-word',
    when: { record: ['applied'] },
    action: 'skip',
    why: 'its after-images and its flag are durable, and the word already counts it: nothing to do',
  },
  {
    id: 'torn-behind-word',
    when: { record: ['incomplete'] },
    action: 'skip',
    why: "no request at or behind the word has only a torn record (a batch's words are persisted after its records were synced complete): a torn record here is a reused slot's other lap, or a torn tail past a missing LSN whose requests are ahead of the word; nothing to replay",
  },
] satisfies BehindWordRow[]);

/** Every row matching `input` (the coverage test asserts there is exactly one for every input). */
export function matchingBehindWordRows(input: BehindWordInput, table: readonly BehindWordRow[] = BEHIND_WORD_TABLE): BehindWordRow[] {
  return matchRows(table, input);
}

/** The row for a record at or behind the applied word. Broken coverage is a pmrpc bug: an assertion. */
export function decideBehindWord(input: BehindWordInput): BehindWordRow {
  return decideRow('behind-word table', BEHIND_WORD_TABLE, input);
}

/** Every input (3). */
export function allBehindWordInputs(): BehindWordInput[] {
  return allCombinations<BehindWordInput>({ record: BEHIND_WORD_RECORD_VALUES });
}
