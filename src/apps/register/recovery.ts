/**
 * The replicated register's recovery as a decision table of data (as recovery/decision-table.ts is
 * for the rings). RegisterAppServer.recover walks every register and evaluates one input —
 *
 * - word: what the cell word says of the register — 'carried' (the initial word, or a word whose
 *   record slot carries it: the register's value), 'lost' (LOST_WORD: an earlier recovery marked
 *   the copy lost), or 'orphan' (a word naming a record out of range or one that does not carry
 *   it: a torn or overwritten record, which only a broken install can leave).
 *
 * Exactly one row matches every input (test/testing/register-table.test.ts enumerates them), and
 * every row is reached by a test that writes its state into PM by hand. Actions: keep (nothing
 * written) or mark-lost (LOST_WORD into the cell word, persisted).
 */
import { allCombinations, decideRow, matchRows, type When } from '../../../recovery/index.js';

export type RegisterWordInput = 'carried' | 'lost' | 'orphan';

export interface RegisterCellInput {
  word: RegisterWordInput;
}

export interface RegisterCellRow {
  /** Stable name, for the recovery report's row counts and the docs. */
  id: string;
  when: When<RegisterCellInput>;
  action: 'keep' | 'mark-lost';
  why: string;
}

export const REGISTER_WORD_VALUES: readonly RegisterWordInput[] = Object.freeze(['carried', 'lost', 'orphan']);

export const REGISTER_CELL_TABLE: readonly RegisterCellRow[] = Object.freeze([
  {
    id: 'sound',
    when: { word: ['carried'] },
    action: 'keep',
    why: 'the initial word, or a word whose record carries it (the record is durable before the install CAS): the register\'s value, nothing to repair',
  },
  {
    id: 'lost',
    when: { word: ['lost'] },
    action: 'keep',
    why: 'LOST_WORD, left by an earlier recovery: the copy stays lost until a write installs over it (clients count it behind)',
  },
  {
    id: 'orphan',
    when: { word: ['orphan'] },
    action: 'mark-lost',
    why: 'a word whose record does not carry it (out of range, torn or overwritten): this node lost its copy; LOST_WORD, so it never answers with a value it does not hold',
  },
] satisfies RegisterCellRow[]);

/** Every row matching `input` (the table test asserts there is exactly one for every input). */
export function matchingRegisterCellRows(input: RegisterCellInput, table: readonly RegisterCellRow[] = REGISTER_CELL_TABLE): RegisterCellRow[] {
  return matchRows(table, input);
}

/** The row for `input`. Broken coverage is a pmrpc bug: an assertion. */
export function decideRegisterCell(input: RegisterCellInput): RegisterCellRow {
  return decideRow('register cell table', REGISTER_CELL_TABLE, input);
}

/** Every input (3). */
export function allRegisterCellInputs(): RegisterCellInput[] {
  return allCombinations<RegisterCellInput>({ word: REGISTER_WORD_VALUES });
}
