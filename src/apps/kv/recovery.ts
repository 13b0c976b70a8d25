/**
 * PRISM-KV's recovery as a decision table of data (docs/kv.md "Recovery"; DESIGN §3, §5), as
 * recovery/decision-table.ts is for the rings and src/apps/pilaf/recovery.ts for the Pilaf
 * baseline. PrismKvServer.recover walks every index slot through the allocator
 * (recovery/allocator.ts `recoverFreeLists`) and evaluates three inputs —
 *
 * - pointer: the slot's ptr word (the truth: the CAS swaps it, the other words are derived) —
 *   'base' (the empty pointer: the KV header), 'item' (the allocator accepts it: a buffer of the
 *   arena, aligned to its class, reached once, holding a live item or tombstone of a key whose
 *   probe sequence holds the slot), 'dead' (accepted: a dead item an earlier recovery linked in
 *   place of a rejected pointer; any slot may hold one), or why the allocator rejected it —
 *   'outside-arena', 'misaligned', 'reached-twice' (an earlier slot reaches the buffer),
 *   'no-item' (the buffer holds no valid item: its checksum or header fails), 'off-sequence' (a
 *   valid item of a key whose probe sequence, every group of it, does not hold the slot);
 * - words: whether the slot's bound and version words are what the pointer calls for — 'match'
 *   for the base pointer with bound 0 and version 0, for an accepted pointer with its class's size
 *   as bound and its item's version; 'differ' otherwise (a rejected pointer has no item to agree
 *   with: always 'differ');
 * - spare: whether a reclaimed buffer is left for the slot once the earlier rejected slots took
 *   theirs ('some' / 'none'; the free lists are known only once the whole index was walked).
 *
 * Exactly one row matches every input (test/apps/kv/recovery-table.test.ts enumerates them), and
 * every row is reached by a test that writes its state into PM by hand. Actions: keep (nothing
 * written), rewrite-empty (bound and version reset under the base pointer), rewrite-from-item
 * (bound and version from the item the ptr word names, the ptr word kept), link-dead-item (a dead
 * item into a reclaimed buffer, persisted, then the slot points at it), write-empty (the last
 * resort: no buffer left). `durable`: the new word is persisted, after the whole walk (the
 * rejected rows need the reclaimed buffers), before the epoch and the free lists; the other rows'
 * words are stored only, during the walk's first pass (the ptr word and the item are all a later
 * recovery reads: a crash before the repair is durable re-derives it the same way, docs/kv.md
 * *Paths no crash reached*). `reaches`: the slot reaches a buffer once the action is done (its
 * own, or the dead item's), so no free list holds it.
 */
import { allCombinations, decideRow, matchRows, type When } from '../../../recovery/index.js';

export type KvRejectedPointer = 'outside-arena' | 'misaligned' | 'reached-twice' | 'no-item' | 'off-sequence';
export type KvPointerInput = 'base' | 'item' | 'dead' | KvRejectedPointer;
export type KvWordsInput = 'match' | 'differ';
export type KvSpareInput = 'some' | 'none';
export type KvSlotAction = 'keep' | 'rewrite-empty' | 'rewrite-from-item' | 'link-dead-item' | 'write-empty';

export interface KvSlotInput {
  pointer: KvPointerInput;
  words: KvWordsInput;
  spare: KvSpareInput;
}

export interface KvSlotRow {
  /** Stable name, for the recovery report's row counts and the docs. */
  id: string;
  when: When<KvSlotInput>;
  action: KvSlotAction;
  /** The slot reaches a buffer once its action is done (its own, or the dead item's): the free-list rebuild leaves it out. */
  reaches: boolean;
  /** The new word is persisted (after the walk, before the epoch and the free lists); otherwise stored only. */
  durable: boolean;
  why: string;
}

export const KV_REJECTED_POINTERS: readonly KvRejectedPointer[] = Object.freeze(['outside-arena', 'misaligned', 'reached-twice', 'no-item', 'off-sequence']);
export const KV_POINTER_VALUES: readonly KvPointerInput[] = Object.freeze(['base', 'item', 'dead', ...KV_REJECTED_POINTERS]);
export const KV_WORDS_VALUES: readonly KvWordsInput[] = Object.freeze(['match', 'differ']);
export const KV_SPARE_VALUES: readonly KvSpareInput[] = Object.freeze(['some', 'none']);

const DEAD_ITEM_WHY =
  'no PUT was acknowledged with it (the heap FLUSH precedes the CAS): the slot cannot simply become empty — an empty slot ends every probe, and keys stored past it in their probe sequences would vanish — so it gets a dead item from a reclaimed buffer, persisted before the slot points at it; probing goes on past it and no key claims it again';

export const KV_SLOT_TABLE: readonly KvSlotRow[] = Object.freeze([
  {
    id: 'empty',
    when: { pointer: ['base'], words: ['match'] },
    action: 'keep',
    reaches: false,
    durable: false,
    why: 'an empty slot (ptr = base, bound 0, version 0): it ends a probe sequence, nothing to repair',
  },
  {
    id: 'torn-empty',
    when: { pointer: ['base'], words: ['differ'] },
    action: 'rewrite-empty',
    reaches: false,
    durable: false,
    why: "the empty pointer under a bound or version of an install: a CAS result torn into 8-byte pieces whose ptr piece did not reach PM; that PUT was never acknowledged (its index FLUSH did not complete), so the slot is empty and its stale words are reset",
  },
  {
    id: 'item',
    when: { pointer: ['item'], words: ['match'] },
    action: 'keep',
    reaches: true,
    durable: false,
    why: "a sound slot: its pointer reaches an item of a key whose probe sequence holds the slot, and its bound and version are the item's class size and version",
  },
  {
    id: 'item-repair',
    when: { pointer: ['item'], words: ['differ'] },
    action: 'rewrite-from-item',
    reaches: true,
    durable: false,
    why: "a torn CAS result: the new ptr word reached PM with an older (or wider) bound or version; the ptr word is the truth and the item describes itself, so bound and version are derived from it again",
  },
  {
    id: 'dead',
    when: { pointer: ['dead'], words: ['match'] },
    action: 'keep',
    reaches: true,
    durable: false,
    why: 'a dead item an earlier recovery linked in place of a rejected pointer: probing goes on past it until a PUT of a key whose sequence holds the slot replaces it',
  },
  {
    id: 'dead-repair',
    when: { pointer: ['dead'], words: ['differ'] },
    action: 'rewrite-from-item',
    reaches: true,
    durable: false,
    why: "a dead item's slot whose bound or version is not the dead item's (a torn word): bound and version derived from the item, as for item-repair",
  },
  {
    id: 'outside-arena',
    when: { pointer: ['outside-arena'], spare: ['some'] },
    action: 'link-dead-item',
    reaches: true,
    durable: true,
    why: `a pointer outside the arena (a media error, a buggy client): ${DEAD_ITEM_WHY}`,
  },
  {
    id: 'misaligned',
    when: { pointer: ['misaligned'], spare: ['some'] },
    action: 'link-dead-item',
    reaches: true,
    durable: true,
    why: `a pointer inside the arena but not at a buffer boundary of its class: ${DEAD_ITEM_WHY}`,
  },
  {
    id: 'reached-twice',
    when: { pointer: ['reached-twice'], spare: ['some'] },
    action: 'link-dead-item',
    reaches: true,
    durable: true,
    why: `a buffer an earlier slot already reaches (a buffer has one owner; the first slot keeps it): ${DEAD_ITEM_WHY}`,
  },
  {
    id: 'no-item',
    when: { pointer: ['no-item'], spare: ['some'] },
    action: 'link-dead-item',
    reaches: true,
    durable: true,
    why: `a buffer that holds no valid item (its checksum or header fails: media damage): ${DEAD_ITEM_WHY}`,
  },
  {
    id: 'off-sequence',
    when: { pointer: ['off-sequence'], spare: ['some'] },
    action: 'link-dead-item',
    reaches: true,
    durable: true,
    why: `an item of a key whose probe sequence does not hold the slot (every group of it checked): no GET of that key probes here, so ${DEAD_ITEM_WHY}`,
  },
  {
    id: 'rejected-no-spare',
    when: { pointer: KV_REJECTED_POINTERS, spare: ['none'] },
    action: 'write-empty',
    reaches: false,
    durable: true,
    why: 'a rejected pointer and no reclaimed buffer left for a dead item (every buffer reachable, or the earlier rejected slots took the rest): the last resort is the empty word, persisted before the free lists are posted',
  },
] satisfies KvSlotRow[]);

/** Every row matching `input` (the table test asserts there is exactly one for every input). */
export function matchingKvSlotRows(input: KvSlotInput, table: readonly KvSlotRow[] = KV_SLOT_TABLE): KvSlotRow[] {
  return matchRows(table, input);
}

/** The row for `input` (in `table`: KV_SLOT_TABLE). Broken coverage is a pmrpc bug: an assertion. */
export function decideKvSlot(input: KvSlotInput, table: readonly KvSlotRow[] = KV_SLOT_TABLE): KvSlotRow {
  return decideRow('kv slot table', table, input);
}

/** Every input combination (8 × 2 × 2 = 32). */
export function allKvSlotInputs(): KvSlotInput[] {
  return allCombinations<KvSlotInput>({ pointer: KV_POINTER_VALUES, words: KV_WORDS_VALUES, spare: KV_SPARE_VALUES });
}

/** Whether the allocator rejected the pointer (the rows that replace the slot's word). */
export function isRejectedPointer(p: KvPointerInput): p is KvRejectedPointer {
  return (KV_REJECTED_POINTERS as readonly string[]).includes(p);
}
