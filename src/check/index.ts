/** src/check — the checkers the tests judge histories with: linearizability (DESIGN §5), lost writes, and the Elle-style transactional checkers; the one history cutter. */
export {
  checkListAppend,
  LIST_APPEND_DEFAULTS,
  type ListAppendTxn,
  type ListAppendMop,
  type ListAppendOptions,
  type ListAppendResult,
  type ListAppendStats,
  type ElleAnomaly,
  type ElleAnomalyKind,
  type CycleStep,
  type CycleKind,
  type EdgeKind,
  type TxnId,
  type KeyName,
  type TxnType,
  type CheckerResult,
} from './elle.js';
export {
  checkBank,
  checkCycle,
  initialRing,
  BANK_DEFAULTS,
  CYCLE_DEFAULTS,
  type BankSnapshot,
  type BankOptions,
  type BankAnomaly,
  type BankAnomalyKind,
  type BankResult,
  type CycleSnapshot,
  type CycleOptions,
  type CycleAnomaly,
  type CycleAnomalyKind,
  type CycleResult,
  type SnapshotStats,
  type Snapshot,
  type Balance,
  type Name,
} from './bank.js';
export { checkLinearizable, kvModel, CHECK_DEFAULTS, MAX_CACHE_LIMIT, type KeyVerdict, type Model, type Operation, type CheckResult, type CheckOptions, type KvInput, type KvOutput } from './linearizability.js';
export { lostWrites, describeKvInput, lostAcknowledged, durablePrefixes, describeAckedLoss, type AckedPrefix, type AckedLoss } from './lost.js';
export { cutHistory, cutRecords, type Timed } from './cut.js';
