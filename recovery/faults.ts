/**
 * Test-only fault switches (DESIGN §8 "the suite must have teeth"): each removes one persistence
 * or validation step of this layer. Production code never sets them; the crash tests enable one at
 * a time and must report a violation for each. docs/recovery.md says which test catches which.
 */
export interface RecoveryFaults {
  /** redo log: apply the after-images without persisting the record first. */
  skipPersistRecordBeforeApply?: boolean;
  /** redo log: set the applied flag without persisting the applied after-images first. */
  skipPersistApplyBeforeFlag?: boolean;
  /** redo log: do not persist the applied flag before returning the credit. */
  skipPersistAppliedFlag?: boolean;
  /** redo log: reuse a record slot without first making its client's applied sequence durable. */
  skipPersistCreditBeforeReuse?: boolean;
  /** ring: consume an entry at poll when lap and header match, without verifying its checksum. */
  skipChecksumAtPoll?: boolean;
  /** recovery: trust lap and header of entries and records without verifying their checksums. */
  skipChecksumAtRecovery?: boolean;
  /** recovery: leave entries beyond the first gap of a ring valid instead of invalidating them. */
  skipInvalidateBeyondGap?: boolean;
  /** registration: write the new client's id word without first persisting the reset of the slot's applied word. */
  skipPersistRegisterReset?: boolean;
  /** release: do not persist the release word (the decision) before the release is acknowledged. */
  skipPersistReleaseMark?: boolean;
  /** registration of a released slot: reset the release word without first persisting the former occupant's id word clear. */
  skipPersistReleaseClear?: boolean;
  /** release: decide a release without checking that every entry of the client is applied first (the order). */
  skipReleaseDrainCheck?: boolean;
}

export const FAULT_NAMES = Object.freeze([
  'skipPersistRecordBeforeApply',
  'skipPersistApplyBeforeFlag',
  'skipPersistAppliedFlag',
  'skipPersistCreditBeforeReuse',
  'skipChecksumAtPoll',
  'skipChecksumAtRecovery',
  'skipInvalidateBeyondGap',
  'skipPersistRegisterReset',
  'skipPersistReleaseMark',
  'skipPersistReleaseClear',
  'skipReleaseDrainCheck',
] as const) satisfies readonly (keyof RecoveryFaults)[];

export const NO_FAULTS: Readonly<RecoveryFaults> = Object.freeze({});

export function checkFaults(f: unknown): RecoveryFaults {
  if (f === undefined) return NO_FAULTS;
  if (f === null || typeof f !== 'object') throw new TypeError(`faults must be an object, got ${String(f)}`);
  for (const [k, v] of Object.entries(f)) {
    if (!(FAULT_NAMES as readonly string[]).includes(k)) throw new TypeError(`unknown fault switch ${k}`);
    if (typeof v !== 'boolean' && v !== undefined) throw new TypeError(`fault switch ${k} must be a boolean, got ${String(v)}`);
  }
  return Object.freeze({ ...(f as RecoveryFaults) });
}
