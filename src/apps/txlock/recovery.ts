/**
 * The lock-based baselines' recovery of one shard (txfarm, txford; docs/tx.md "Baselines") as a
 * decision table of data, as recovery/decision-table.ts is for the rings and src/apps/tx/recovery.ts
 * for PRISM-TX. TxLockAppServer.recover() walks the shard in three scopes, each row deciding by
 * data, one row per thing it walks:
 *
 * - log (per client slot c, its H word and body): `h` — 'none' (H is 0, or carries no state),
 *   'logged', 'committed' or 'aborted'; `body` — 'whole' (a body of H's txid, its crc good) or
 *   'not-whole' (anything else: torn, or a body of the slot's earlier transaction); `protocol` —
 *   'farm' (redo record) or 'ford' (undo log).
 * - entry (per entry on this shard of a FaRM COMMITTED redo record, after its log row): `lock` —
 *   'own' (the object's lock word is the record's txid) or 'other' (free, or another
 *   transaction's); `version` — 'expected' (the object's version is the one the record expects)
 *   or 'other'.
 * - object (per object, after every log): `lock` — 'free', 'backed' (the txid of a whole LOGGED
 *   record in some client slot of this shard) or 'unbacked'.
 *
 * Exactly one row of its scope matches every input (test/apps/txlock/recovery-table.test.ts
 * enumerates them), and every row is reached by a test that writes its state into PM by hand and
 * reads the outcome back from the bytes. Actions: `keep` (nothing written, nothing backed),
 * `hold` (the record backs its locks: in doubt, reported), `redo` (its entries are walked),
 * `apply` (the entry's new value in place: item, persisted, then version + 1 and lock 0,
 * persisted), `release` (lock word 0, persisted). Every store is derived from durable state it
 * does not change, so a crash inside recovery recovers the same way. The baselines are not
 * crash-explored (faults.ts): the rows are the local ones; deciding a LOGGED record needs the
 * other participants (docs/tx.md says what a full recovery would need).
 */
import { invariant } from '../../../pmem/index.js';
import { allCombinations, decideRow, matchRows, type When } from '../../../recovery/index.js';
import { txName } from '../tx/index.js';
import type { LogBody, TxLockGeometry, TxLockProtocol } from './layout.js';

export type TxLockLogHInput = 'none' | 'logged' | 'committed' | 'aborted';
export type TxLockLogBodyInput = 'whole' | 'not-whole';
export type TxLockEntryLockInput = 'own' | 'other';
export type TxLockEntryVersionInput = 'expected' | 'other';
export type TxLockObjectLockInput = 'free' | 'backed' | 'unbacked';

export interface TxLockLogInput {
  h: TxLockLogHInput;
  body: TxLockLogBodyInput;
  protocol: TxLockProtocol;
}
export interface TxLockEntryInput {
  lock: TxLockEntryLockInput;
  version: TxLockEntryVersionInput;
}
export interface TxLockObjectInput {
  lock: TxLockObjectLockInput;
}

/** What a row does (the module comment says each). */
export type TxLockRecoveryAction = 'keep' | 'hold' | 'redo' | 'apply' | 'release';

interface RowBase {
  /** Stable name (docs/tx.md "Baselines", the recovery report's row counts). */
  id: string;
  action: TxLockRecoveryAction;
  why: string;
}
export type TxLockLogRow = RowBase & { scope: 'log'; when: When<TxLockLogInput> };
export type TxLockEntryRow = RowBase & { scope: 'entry'; when: When<TxLockEntryInput> };
export type TxLockObjectRow = RowBase & { scope: 'object'; when: When<TxLockObjectInput> };
export type TxLockRecoveryRow = TxLockLogRow | TxLockEntryRow | TxLockObjectRow;
export type TxLockRecoveryScope = TxLockRecoveryRow['scope'];

export const TXLOCK_LOG_H_VALUES: readonly TxLockLogHInput[] = Object.freeze(['none', 'logged', 'committed', 'aborted']);
export const TXLOCK_LOG_BODY_VALUES: readonly TxLockLogBodyInput[] = Object.freeze(['whole', 'not-whole']);
export const TXLOCK_PROTOCOL_VALUES: readonly TxLockProtocol[] = Object.freeze(['farm', 'ford']);
export const TXLOCK_ENTRY_LOCK_VALUES: readonly TxLockEntryLockInput[] = Object.freeze(['own', 'other']);
export const TXLOCK_ENTRY_VERSION_VALUES: readonly TxLockEntryVersionInput[] = Object.freeze(['expected', 'other']);
export const TXLOCK_OBJECT_LOCK_VALUES: readonly TxLockObjectLockInput[] = Object.freeze(['free', 'backed', 'unbacked']);

export const TXLOCK_RECOVERY_TABLE: readonly TxLockRecoveryRow[] = Object.freeze([
  // Per log (client slot c), first: the LOGGED records found here back their locks below.
  {
    scope: 'log',
    id: 'no-record',
    when: { h: ['none'] },
    action: 'keep',
    why: 'H is 0 (the slot never logged a transaction) or carries no state: nothing in doubt, nothing to apply; it backs no lock',
  },
  {
    scope: 'log',
    id: 'torn-record',
    when: { h: ['logged', 'committed', 'aborted'], body: ['not-whole'] },
    action: 'keep',
    why: "H names T but the body is not T's (crc bad, or the slot's earlier transaction's): FORD's R1 chain (body WRITE, H WRITE, one FLUSH) was cut with H's line in PM and the body's not, so R1's FLUSH never completed, the client wrote nothing in place and counted nothing; FaRM's CPU persists the body before H, so only media damage leaves it. It backs no lock: T's locks are released below",
  },
  {
    scope: 'log',
    id: 'logged',
    when: { h: ['logged'], body: ['whole'] },
    action: 'hold',
    why: "a whole LOGGED record of T (FaRM: the redo record LOCK stored; FORD: the undo log R1 flushed): T may have committed on another participant, so its locks stay and T is reported in doubt — deciding it needs the other participants (not built: docs/tx.md \"Baselines\")",
  },
  {
    scope: 'log',
    id: 'farm-committed',
    when: { h: ['committed'], body: ['whole'], protocol: ['farm'] },
    action: 'redo',
    why: "FaRM: COMMITTED(T) over T's whole redo record: T committed (the client's durable COMMITTED WRITE is its decision), but the CPU's apply may not have reached PM — each entry on this shard is walked (entry rows) and applied again where it was not; its locks go below (nothing backs them)",
  },
  {
    scope: 'log',
    id: 'ford-committed',
    when: { h: ['committed'], body: ['whole'], protocol: ['ford'] },
    action: 'keep',
    why: "FORD: COMMITTED(T) over T's whole undo log: R2's selective FLUSH of the new values completed before the COMMITTED WRITE, so T's data is durable in place; nothing to apply, and its locks (the asynchronous unlatch may not have landed) are released below",
  },
  {
    scope: 'log',
    id: 'aborted',
    when: { h: ['aborted'], body: ['whole'] },
    action: 'keep',
    why: "ABORTED(T): T wrote nothing in place (FaRM applies only on COMMITTED; FORD writes in place only after every participant's R1 succeeded, and aborts before that), so nothing to undo; the locks it left are released below",
  },
  // Per entry on this shard of a record the farm-committed row redoes.
  {
    scope: 'entry',
    id: 'apply',
    when: { lock: ['own'], version: ['expected'] },
    action: 'apply',
    why: "the object is still locked by T at the version T's record expects: the CPU's apply did not reach PM (or not its version word); store the new value in place as the CPU does — the item, persisted, then version + 1 and lock 0, persisted (idempotent: once applied, the object no longer matches)",
  },
  {
    scope: 'entry',
    id: 'applied-locked',
    when: { lock: ['own'], version: ['other'] },
    action: 'keep',
    why: "still locked by T but the version moved on: the apply's item and version reached PM and its unlock did not (the two words are on one line, stored 8 bytes at a time); nothing to apply — the lock, which no LOGGED record backs, is released by the object row",
  },
  {
    scope: 'entry',
    id: 'applied',
    when: { lock: ['other'] },
    action: 'keep',
    why: "not locked by T: the apply completed and unlocked (a later transaction may hold the object since); applying again would overwrite a later value, so nothing is written",
  },
  // Per object, after every log.
  {
    scope: 'object',
    id: 'free',
    when: { lock: ['free'] },
    action: 'keep',
    why: 'no lock: nothing to release',
  },
  {
    scope: 'object',
    id: 'in-doubt',
    when: { lock: ['backed'] },
    action: 'keep',
    why: "locked by a transaction a whole LOGGED record of this shard holds (the logged row): T is in doubt, and a resolver would need the lock to roll T forward (FaRM) or undo it (FORD) without a reader seeing its values; kept",
  },
  {
    scope: 'object',
    id: 'release',
    when: { lock: ['unbacked'] },
    action: 'release',
    why: "a lock no whole LOGGED record of this shard backs: T never logged here (a FORD lock CAS of execution, a torn R1), or T is decided here (COMMITTED — applied above — or ABORTED); nothing needs it, lock word 0, persisted",
  },
] satisfies TxLockRecoveryRow[]);

type RowOf<S extends TxLockRecoveryScope> = Extract<TxLockRecoveryRow, { scope: S }>;
type InputOf<S extends TxLockRecoveryScope> = S extends 'log' ? TxLockLogInput : S extends 'entry' ? TxLockEntryInput : TxLockObjectInput;
type Matchable<S extends TxLockRecoveryScope> = RowOf<S> & { readonly when: When<InputOf<S>> };

/** The rows of one scope. */
export function txLockRecoveryRows<S extends TxLockRecoveryScope>(scope: S, table: readonly TxLockRecoveryRow[] = TXLOCK_RECOVERY_TABLE): RowOf<S>[] {
  return table.filter((r): r is RowOf<S> => r.scope === scope);
}

/** Every row of `scope` matching `input` (the table test asserts there is exactly one for every input). */
export function matchingTxLockRecoveryRows<S extends TxLockRecoveryScope>(scope: S, input: InputOf<S>, table: readonly TxLockRecoveryRow[] = TXLOCK_RECOVERY_TABLE): RowOf<S>[] {
  return matchRows<InputOf<S>, Matchable<S>>(txLockRecoveryRows(scope, table) as Matchable<S>[], input);
}

/** The row of `scope` for `input`. Broken coverage is a pmrpc bug: an assertion. */
export function decideTxLockRecovery<S extends TxLockRecoveryScope>(scope: S, input: InputOf<S>): RowOf<S> {
  return decideRow<InputOf<S>, Matchable<S>>(`txlock recovery table (${scope})`, txLockRecoveryRows(scope) as Matchable<S>[], input);
}

/** Every input combination of `scope` (log 4 × 2 × 2, entry 2 × 2, object 3). */
export function allTxLockRecoveryInputs<S extends TxLockRecoveryScope>(scope: S): InputOf<S>[] {
  switch (scope) {
    case 'log':
      return allCombinations<TxLockLogInput>({ h: TXLOCK_LOG_H_VALUES, body: TXLOCK_LOG_BODY_VALUES, protocol: TXLOCK_PROTOCOL_VALUES }) as InputOf<S>[];
    case 'entry':
      return allCombinations<TxLockEntryInput>({ lock: TXLOCK_ENTRY_LOCK_VALUES, version: TXLOCK_ENTRY_VERSION_VALUES }) as InputOf<S>[];
    default:
      return allCombinations<TxLockObjectInput>({ lock: TXLOCK_OBJECT_LOCK_VALUES }) as InputOf<S>[];
  }
}

/**
 * PMRPC_ERR_INVARIANT unless the redo records the farm-committed row walks can be applied from
 * (checked before recovery stores anything): every entry on this shard names a key of its object
 * table. The LOCK handler refuses any other key, so only a bug writes one — and applying it would
 * store past the object table, over the logs.
 */
export function checkTxLockRedoRecords(g: Pick<TxLockGeometry, 'shard' | 'shards' | 'keys'>, records: readonly LogBody[]): void {
  for (const body of records) {
    for (const e of body.entries) {
      if (e.key % g.shards !== g.shard) continue;
      invariant(Math.floor(e.key / g.shards) < g.keys, () => `${txName(body.txid)}'s COMMITTED redo record names key ${e.key}, outside shard ${g.shard}'s object table (${g.keys} objects)`);
    }
  }
}
