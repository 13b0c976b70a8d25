/** pmem/ — layer 1: the emulated persistent-memory device. Other layers import only this file. */
export {
  ErrorCodes,
  PmrpcError,
  PmrpcIoError,
  isPmrpcError,
  invariant,
  isInvariantError,
  defineErrorCodes,
  registeredErrorCodes,
  type ErrorCode,
  type ErrorCodesOf,
  type PmrpcErrorCodeRegistry,
} from './errors.js';
export { VirtualClock, type Clock, type TimerHandle } from './clock.js';
export { createPrng, seededEntropy, type Prng, type Entropy } from './prng.js';
export { systemClock, cryptoEntropy, randomSeed, wallClockMs, macrotaskTurn, nextTurn, exitWithParent, EXIT_WITH_PARENT_ENV } from './runtime.js';
export { crc32c } from './crc32.js';
export { SeqMap } from './seq-map.js';
export { HEADER_BYTES, LINE_BYTES, LAYOUT_VERSION, MAX_REGION_BYTES, decodeHeader, type RegionHeader } from './header.js';
export {
  PmemRegion,
  PmemReadView,
  PMEM_DEFAULTS,
  checkRange,
  formatTempPath,
  lockHolder,
  type PmemOptions,
  type PersistenceDomain,
  type CrashPointKind,
  type CrashPointEvent,
  type CrashPiece,
  type CrashComponent,
  type CrashState,
  type CrashContributor,
  type PmemStats,
} from './region.js';
export type { MsyncAsyncFn, MsyncFn } from './region.js';
export { JOURNAL_BYTES, journalPath, readJournal, type JournalRecord } from './journal.js';
export { dataExtents } from './native.js';
export { crashImages, countImages, materialize, writeImageFile, CRASH_ENGINES, IMAGE_DEFAULTS, type CrashEngine, type CrashImage, type ImageChoice, type ImageOptions } from './crash.js';
export {
  resolveOptions,
  definedOptions,
  must,
  optional,
  onlyIf,
  bool,
  integer,
  positiveInt,
  nonNegativeInt,
  intAtLeast,
  intIn,
  probability,
  positiveMs,
  oneOf,
  nonEmptyString,
  callable,
  type OptionCheck,
  type OptionChecks,
} from './options.js';
export { buggify, setBuggifyHook, FAULT_SITES, FAULT_SITE_NAMES, type FaultSite, type BuggifyHook } from './buggify.js';
