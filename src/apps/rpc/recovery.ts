/**
 * The durable RPC app's recovery decision tables, named (docs/rpc.md "Recovery decision tables";
 * issue 26 item 4: every app's table as data). The rpc app owns no PM state that recovery decides
 * on by itself: the layout is recovery/'s (superblock, connection table, rings, redo log; layout.ts)
 * and the application area — the digest workload's log and counter (digest.ts), or a library
 * user's state — changes only through the redo log's after-images, which recovery replays or
 * re-executes; no recovery step reads the area to decide anything. So the rpc app's recovery
 * (RpcAppServer.recover → DurableRpcServer.start → RecoveryStore.recover, recovery/recover.ts)
 * decides exactly by recovery/'s two tables, exported here under the app's names:
 *
 * - RPC_CONN_SLOT_TABLE (recovery/conn-table.ts SLOT_TABLE): one row per connection slot, when
 *   the table is read (free, live, a decided release to finish, or refused);
 * - RPC_RECOVERY_TABLE (recovery/decision-table.ts DECISION_TABLE): one row per ring position
 *   walked of every live client (replay, re-execute, skip, invalidate, or refused).
 *
 * - RPC_BEHIND_WORD_TABLE (recovery/decision-table.ts BEHIND_WORD_TABLE): one row per log record
 *   of a live client at or behind its applied word, which the ring walk never reaches (a complete
 *   unapplied one is replayed: the lazy flags of group commit).
 *
 * The report's `rows` (RpcRecoverySummary) counts the rows of all three (docs/recovery.md
 * "Decision table"). test/apps/rpc/recovery-table.test.ts builds a state in an rpc app's
 * region by hand and checks that recover() took, position by position, the rows these tables give.
 */
import { BEHIND_WORD_TABLE, DECISION_TABLE, SLOT_TABLE, type BehindWordRow, type DecisionRow, type SlotRow } from '../../../recovery/index.js';

/** Per ring position of a live client: recovery/decision-table.ts' table, the one recover.ts decides by. */
export const RPC_RECOVERY_TABLE: readonly DecisionRow[] = DECISION_TABLE;

/** Per connection slot: recovery/conn-table.ts' table, the one ConnTable reads every slot by. */
export const RPC_CONN_SLOT_TABLE: readonly SlotRow[] = SLOT_TABLE;

/** Per log record at or behind a live client's applied word: recovery/decision-table.ts' BEHIND_WORD_TABLE. */
export const RPC_BEHIND_WORD_TABLE: readonly BehindWordRow[] = BEHIND_WORD_TABLE;

/** The row of RPC_BEHIND_WORD_TABLE that replays (the report counts it as `rows['replay-behind-word']`). */
export const RPC_REPLAY_BEHIND_WORD = 'replay-behind-word';
