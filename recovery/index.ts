/** recovery/ — layer 3: persistent rings, connection table, redo log of effects, recovery. Other layers import only this file. */
export {
  Layout,
  LAYOUT_DEFAULTS,
  RECOVERY_LAYOUT_VERSION,
  RECOVERY_MAGIC,
  RecoveryErrorCodes,
  SUPERBLOCK_BYTES,
  CONN_ENTRY_BYTES,
  computeGeometry,
  layoutBytes,
  type Geometry,
  type LayoutOptions,
} from './layout.js';
export {
  ENTRY_HEADER_BYTES,
  RING_DEFAULTS,
  Ring,
  checkCredit,
  encodeEntry,
  entryOffset,
  inspectSlot,
  invalidateSlot,
  lapOf,
  maxPayloadBytes,
  type LapRelation,
  type PollResult,
  type RequestHeader,
  type RingEntry,
  type RingOptions,
  type SlotInspection,
} from './ring.js';
export { ConnTable, SLOT_TABLE, ID_VALUES, RELEASE_VALUES, decideSlot, matchingSlotRows, secretHash, SECRET_HASH_BYTES, type ConnEntry, type SlotRow, type SlotAction, type IdInput, type ReleaseInput } from './conn-table.js';
export { allCombinations, decideRow, matchRows, rowMatches, type When } from './table.js';
export { RECORD_HEADER_BYTES, RedoLog, readRecord, encodeRecord, checkEffects, type EffectImage, type Effects, type RecordInfo, type RecordState } from './redo-log.js';
export {
  DECISION_TABLE,
  CHECKSUM_VALUES,
  LAP_VALUES,
  SEQ_VALUES,
  RECORD_VALUES,
  allInputs,
  decide,
  matchingRows,
  type Action,
  type DecisionInput,
  type DecisionRow,
  BEHIND_WORD_TABLE,
  BEHIND_WORD_RECORD_VALUES,
  allBehindWordInputs,
  decideBehindWord,
  matchingBehindWordRows,
  type BehindWordInput,
  type BehindWordRow,
} from './decision-table.js';
export { recover, executeEntry, RecoveryRefusedError, type AppView, type Handler, type ClientRecovery, type RecoveryReport } from './recover.js';
export { FAULT_NAMES, NO_FAULTS, type RecoveryFaults } from './faults.js';
export { RecoveryStore, STORE_DEFAULTS, type ClientInfo, type StoreOptions } from './store.js';
export { recoverFreeLists, postFreeLists, checkFreeLists, checkReturn, auditAllocator, locateBuffer, NO_ALLOCATOR_FAULTS, type ArenaClass, type AllocatorFaults, type AllocatorRecoveryInput, type AllocatorRecoveryResult, type AllocatorAudit, type PointerVerdict, type ReturnVerdict } from './allocator.js';
