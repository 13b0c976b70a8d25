/**
 * The Pilaf-style baseline's recovery as a decision table of data (as recovery/decision-table.ts
 * is for the rings and src/apps/rs/recovery.ts for PRISM-RS). PilafServer rebuilds its index as it
 * opens: it walks every index entry and evaluates three inputs —
 *
 * - entry: what the entry's 20 bytes decode to — 'empty' (all zero: never written), 'valid' (its
 *   checksum holds), or 'torn' (a crash cut an entry update: the checksum fails);
 * - pointer: the ptr word (the first 8 bytes, persisted first within the line: the truth) — 'zero'
 *   (a DELETE's tombstone), 'item' (a buffer of one of the arena's classes, not reached by an
 *   earlier entry, holding an item whose checksum holds), or 'no-item' (anything else);
 * - words: whether the entry's length and version are the item's — 'match' or 'differ' (a torn
 *   entry has no words to agree with: always 'differ'; an empty entry is not looked at further).
 *
 * Exactly one row matches every input (test/apps/kv/pilaf-recovery-table.test.ts enumerates them),
 * and every row is reached by a test that writes its state into PM by hand. Actions: keep (nothing
 * written), write-tombstone (ptr 0: probing goes on past it), rewrite-from-item (length and version
 * from the item the ptr word names). Each write is persisted before the next entry. `reaches`: the
 * entry keeps its buffer (the CPU free lists leave it out).
 */
import { allCombinations, decideRow, matchRows, type When } from '../../../recovery/index.js';

export type PilafEntryInput = 'empty' | 'valid' | 'torn';
export type PilafPointerInput = 'zero' | 'item' | 'no-item';
export type PilafWordsInput = 'match' | 'differ';
export type PilafEntryAction = 'keep' | 'write-tombstone' | 'rewrite-from-item';

export interface PilafSlotInput {
  entry: PilafEntryInput;
  pointer: PilafPointerInput;
  words: PilafWordsInput;
}

export interface PilafSlotRow {
  /** Stable name, for the recovery report's row counts and the docs. */
  id: string;
  when: When<PilafSlotInput>;
  action: PilafEntryAction;
  /** The entry keeps its buffer: it is reachable, so it goes on no free list. */
  reaches: boolean;
  why: string;
}

export const PILAF_ENTRY_VALUES: readonly PilafEntryInput[] = Object.freeze(['empty', 'valid', 'torn']);
export const PILAF_POINTER_VALUES: readonly PilafPointerInput[] = Object.freeze(['zero', 'item', 'no-item']);
export const PILAF_WORDS_VALUES: readonly PilafWordsInput[] = Object.freeze(['match', 'differ']);

export const PILAF_SLOT_TABLE: readonly PilafSlotRow[] = Object.freeze([
  {
    id: 'empty',
    when: { entry: ['empty'] },
    action: 'keep',
    reaches: false,
    why: 'an entry never written (all zero): it ends a probe sequence, nothing to repair',
  },
  {
    id: 'tombstone',
    when: { entry: ['valid'], pointer: ['zero'] },
    action: 'keep',
    reaches: false,
    why: "a DELETE's durable tombstone (ptr 0, checksum good): probing goes on past it; it reaches no buffer",
  },
  {
    id: 'torn-delete',
    when: { entry: ['torn'], pointer: ['zero'] },
    action: 'write-tombstone',
    reaches: false,
    why: 'the ptr word is 0 under a torn entry: a DELETE whose entry update the crash cut after its ptr word (persisted first) reached PM; the key is deleted, so the entry becomes a whole tombstone',
  },
  {
    id: 'no-item',
    when: { entry: ['valid', 'torn'], pointer: ['no-item'] },
    action: 'write-tombstone',
    reaches: false,
    why: 'a ptr word recovery cannot follow (outside the classes, misaligned, reached by an earlier entry, or an item whose checksum fails): no PUT was acknowledged with it (the item is persisted before its entry), so the entry is cleared to a tombstone, which keeps probing going past it',
  },
  {
    id: 'item',
    when: { entry: ['valid'], pointer: ['item'], words: ['match'] },
    action: 'keep',
    reaches: true,
    why: "a sound entry: its ptr word names an item and its length and version are the item's",
  },
  {
    id: 'item-repair',
    when: { entry: ['valid'], pointer: ['item'], words: ['differ'] },
    action: 'rewrite-from-item',
    reaches: true,
    why: "a whole entry whose length or version is not its item's (an update whose new ptr word landed with older words): the ptr word is the truth and the item describes itself, so the entry is rebuilt from it",
  },
  {
    id: 'torn-item',
    when: { entry: ['torn'], pointer: ['item'] },
    action: 'rewrite-from-item',
    reaches: true,
    why: 'a torn entry whose ptr word names an item: a PUT whose entry update the crash cut after its ptr word reached PM (the item was persisted before it); the entry is rebuilt from the item (length, version, checksum)',
  },
] satisfies PilafSlotRow[]);

/** Every row matching `input` (the table test asserts there is exactly one for every input). */
export function matchingPilafSlotRows(input: PilafSlotInput, table: readonly PilafSlotRow[] = PILAF_SLOT_TABLE): PilafSlotRow[] {
  return matchRows(table, input);
}

/** The row for `input`. Broken coverage is a pmrpc bug: an assertion. */
export function decidePilafSlot(input: PilafSlotInput): PilafSlotRow {
  return decideRow('pilaf slot table', PILAF_SLOT_TABLE, input);
}

/** Every input combination (3 × 3 × 2 = 18). */
export function allPilafSlotInputs(): PilafSlotInput[] {
  return allCombinations<PilafSlotInput>({ entry: PILAF_ENTRY_VALUES, pointer: PILAF_POINTER_VALUES, words: PILAF_WORDS_VALUES });
}
