/**
 * The resolver's decision (docs/tx.md "Resolution — decision table D") as a table of data, as
 * recovery.ts is for a shard's local recovery. TxResolver.resolve (client.ts) reads `H_c` (and the
 * body) on every participant, FLUSHes what it read, and evaluates five inputs over those views:
 *
 * - later: some `H_c` holds a later txid of T's client slot — 'yes' / 'no';
 * - committed: some `H_c` = COMMITTED(T);
 * - ended: some `H_c` = ABORTED(T) or FENCED(T);
 * - record: the participants (from T's body) holding PREPARED(T) — 'all', 'some' (a body of T was
 *   found, some participant holds no record of T), 'none' (no body of T anywhere it looked);
 * - missing: some shard it read did not answer.
 *
 * Exactly one row matches every input (test/apps/tx/decision-table.test.ts enumerates them and
 * builds every row in PM). Rows D8 and D9 are not rows of this table: they are guards inside the
 * actions that write (`fence`, `release`), because their inputs are known only in the middle of an
 * action — D8 (an earlier transaction U of the slot PREPARED where T would be fenced) needs every
 * shard read and U resolved first, recursively, before the fence is posted; D9 (T's lock on a shard
 * whose `H_c` names neither T nor a later transaction) orders a fence before each release of D3's
 * roll back. Both are in client.ts (`#fence`, and the 'abort' action), described in docs/tx.md.
 * D10 guards the 'commit' action's roll forward of a record carrying its new values (docs/tx.md
 * "New values in the record"): it ALLOCATEs each value from the record's bytes and installs it by
 * a PRISM CAS that compares L = T; two roll forwards (a resolver's and the client's round 2, or two
 * resolvers') each ALLOCATE, the later install while L = T replaces the earlier (the sweep retires
 * it: a superseded value), and an install that finds T released swaps nothing — the rest of that
 * chain is skipped and the item it ALLOCATEd, never reachable, is marked dead (commitValuesOn).
 */
import { allCombinations, decideRow, matchRows, type When } from '../../../recovery/index.js';

export type YesNo = 'yes' | 'no';
export type TxRecordSeen = 'all' | 'some' | 'none';

export interface TxResolutionInput {
  later: YesNo;
  committed: YesNo;
  ended: YesNo;
  record: TxRecordSeen;
  missing: YesNo;
}

/**
 * `finish`: T is final, release any lock still naming T; `commit`: roll forward on every
 * participant; `abort`: roll back everywhere (D9's fence before a release where H does not name T);
 * `fence-unrecorded`: fence T where it has no record (D8 first), then roll back; `fence-touched`: fence
 * T where it holds locks (D8 over every shard first), then roll back; `wait`: read again (bounded).
 */
export type TxResolutionAction = 'finish' | 'commit' | 'abort' | 'fence-unrecorded' | 'fence-touched' | 'wait';

export interface TxResolutionRow {
  id: string;
  when: When<TxResolutionInput>;
  action: TxResolutionAction;
  why: string;
}

export const YES_NO: readonly YesNo[] = Object.freeze(['yes', 'no']);
export const TX_RECORD_SEEN_VALUES: readonly TxRecordSeen[] = Object.freeze(['all', 'some', 'none']);

export const TX_RESOLVER_TABLE: readonly TxResolutionRow[] = Object.freeze([
  {
    id: 'D1',
    when: { later: ['yes'] },
    action: 'finish',
    why: "the client moved on to a later transaction of its slot only once T was decided and durable everywhere (a client that restarts resolves its slot's records first): T is final; only locks naming T may be left",
  },
  {
    id: 'D2',
    when: { later: ['no'], committed: ['yes'] },
    action: 'commit',
    why: 'COMMITTED(T) is written only after the commit point (or a resolver decided commit): T commits; roll forward where it is still PREPARED (idempotent)',
  },
  {
    id: 'D3',
    when: { later: ['no'], committed: ['no'], ended: ['yes'] },
    action: 'abort',
    why: 'ABORTED(T) is written only after an abort was decided, and FENCED(T) makes T\'s prepare fail there, so the commit point can never be reached: T aborts; roll back everywhere (D9: fence first where T holds a lock and H names neither T nor a later transaction)',
  },
  {
    id: 'D4',
    when: { later: ['no'], committed: ['no'], ended: ['no'], record: ['all'] },
    action: 'commit',
    why: "every participant holds a durable PREPARED(T) (the resolver FLUSHed what it read): T's commit point is reached, whatever its client saw; roll forward",
  },
  {
    id: 'D5',
    when: { later: ['no'], committed: ['no'], ended: ['no'], record: ['some'], missing: ['no'] },
    action: 'fence-unrecorded',
    why: 'a record of T exists but some participant holds none: T\'s prepare there may still land, so T is fenced there (CAS of the H read → FENCED(T), FLUSH); fenced on all: abort; a CAS that did not swap proves nothing (a late prepare may have landed): read again',
  },
  {
    id: 'D6',
    when: { later: ['no'], committed: ['no'], ended: ['no'], record: ['none'], missing: ['no'] },
    action: 'fence-touched',
    why: 'no record of T anywhere, only its locks (a read for update, or a prepare whose H CAS never landed): fence T on the shards it touched, as D5, then roll back',
  },
  {
    id: 'D7',
    when: { later: ['no'], committed: ['no'], ended: ['no'], record: ['some', 'none'], missing: ['yes'] },
    action: 'wait',
    why: 'a shard that did not answer may hold a durable PREPARED(T) (or a commit point reached) that no row above sees: fencing or aborting now could break a commit; read again (bounded: unknown)',
  },
] satisfies TxResolutionRow[]);

/** Every row matching `input` (the table test asserts there is exactly one for every input). */
export function matchingTxResolutionRows(input: TxResolutionInput, table: readonly TxResolutionRow[] = TX_RESOLVER_TABLE): TxResolutionRow[] {
  return matchRows(table, input);
}

/** The row for `input`. Broken coverage is a pmrpc bug: an assertion. */
export function decideTxResolution(input: TxResolutionInput): TxResolutionRow {
  return decideRow('tx resolver table', TX_RESOLVER_TABLE, input);
}

/** Every input combination (2 × 2 × 2 × 3 × 2 = 48). */
export function allTxResolutionInputs(): TxResolutionInput[] {
  return allCombinations<TxResolutionInput>({ later: YES_NO, committed: YES_NO, ended: YES_NO, record: TX_RECORD_SEEN_VALUES, missing: YES_NO });
}
