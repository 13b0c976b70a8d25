/**
 * PRISM-RS replica recovery as a decision table of data (docs/rs.md "Replica recovery"), as
 * recovery/decision-table.ts is for the rings. RsServer.recoverReplica walks every slot and
 * evaluates two inputs:
 *
 * - pointer: the slot's ptr word — 'base' (the empty pointer: the RS header), 'item' (the allocator
 *   accepts it: a buffer of the arena, aligned to its class, reached once, holding an item whose
 *   checksum is good and whose block is this slot's), or 'rejected' (anything else);
 * - words: whether the slot's other words (bound, tag) are what its pointer calls for —
 *   'consistent' for a base pointer with bound 0 and tag ⟨0,0⟩ or LOST, for an item pointer with
 *   the item's exact length and its tag; 'inconsistent' otherwise (a rejected pointer has no item
 *   to agree with: always 'inconsistent').
 *
 * Exactly one row matches every input (test/apps/rs/recovery-table.test.ts enumerates them), and
 * every row is reached by a test that writes its state into a replica's PM by hand. Actions: keep
 * (nothing written), rewrite-empty, rewrite-from-item (bound and tag from the item, the ptr word
 * kept), mark-lost (ptr base, bound 0, tag LOST). Each write is persisted before the next slot.
 * `reaches`: the slot keeps its buffer (it is not reclaimed by the free-list rebuild).
 */
import { allCombinations, decideRow, matchRows, type When } from '../../../recovery/index.js';

export type RsPointerInput = 'base' | 'item' | 'rejected';
export type RsWordsInput = 'consistent' | 'inconsistent';
export type RsSlotAction = 'keep' | 'rewrite-empty' | 'rewrite-from-item' | 'mark-lost';

export interface RsSlotInput {
  pointer: RsPointerInput;
  words: RsWordsInput;
}

export interface RsSlotRow {
  /** Stable name, for the recovery report's row counts and the docs. */
  id: string;
  when: When<RsSlotInput>;
  action: RsSlotAction;
  /** The slot keeps its buffer: it is reachable, so the free-list rebuild does not reclaim it. */
  reaches: boolean;
  why: string;
}

export const RS_POINTER_VALUES: readonly RsPointerInput[] = Object.freeze(['base', 'item', 'rejected']);
export const RS_WORDS_VALUES: readonly RsWordsInput[] = Object.freeze(['consistent', 'inconsistent']);

export const RS_SLOT_TABLE: readonly RsSlotRow[] = Object.freeze([
  {
    id: 'empty',
    when: { pointer: ['base'], words: ['consistent'] },
    action: 'keep',
    reaches: false,
    why: 'an empty slot (never written here) or a LOST one (an earlier recovery could not follow its pointer; a write or a write-back installs over it): nothing to repair',
  },
  {
    id: 'torn-empty',
    when: { pointer: ['base'], words: ['inconsistent'] },
    action: 'rewrite-empty',
    reaches: false,
    why: 'the empty pointer with a bound or tag of an install: a torn install whose ptr piece did not persist; its write never counted on this replica (counting needs the slot FLUSH), so the slot is empty',
  },
  {
    id: 'item',
    when: { pointer: ['item'], words: ['consistent'] },
    action: 'keep',
    reaches: true,
    why: 'a sound slot: its pointer reaches an item of this block and its bound and tag are the item\'s',
  },
  {
    id: 'item-repair',
    when: { pointer: ['item'], words: ['inconsistent'] },
    action: 'rewrite-from-item',
    reaches: true,
    why: 'the ptr word is the truth and the item is self-describing: a CAS result torn into 8-byte pieces (or a class-size bound of an older build) is rebuilt from the item, bound = its exact length, tag = its tag',
  },
  {
    id: 'lost',
    when: { pointer: ['rejected'] },
    action: 'mark-lost',
    reaches: false,
    why: 'a pointer recovery cannot follow (outside the arena, misaligned, reached twice, a bad checksum, another block\'s item): this replica lost its copy; LOST, not empty, so it never answers "never written" for a block it may have held, and readers\' write-back repairs it',
  },
] satisfies RsSlotRow[]);

/** Every row matching `input` (the table test asserts there is exactly one for every input). */
export function matchingRsSlotRows(input: RsSlotInput, table: readonly RsSlotRow[] = RS_SLOT_TABLE): RsSlotRow[] {
  return matchRows(table, input);
}

/** The row for `input`. Broken coverage is a pmrpc bug: an assertion. */
export function decideRsSlot(input: RsSlotInput): RsSlotRow {
  return decideRow('rs slot table', RS_SLOT_TABLE, input);
}

/** Every input combination (3 × 2 = 6). */
export function allRsSlotInputs(): RsSlotInput[] {
  return allCombinations<RsSlotInput>({ pointer: RS_POINTER_VALUES, words: RS_WORDS_VALUES });
}
