/**
 * Test-only fault switches of PRISM-RS (DESIGN §8 "the suite must have teeth"): each removes one
 * step of the protocol or of replica recovery. `pmrpc crash-test --app rs --list-mutants` prints
 * RS_MUTANTS; `--mutant NAME` must report violations.
 */
import type { MutantExplore } from '../index.js';

export interface RsFaults {
  /** Install chain: no FLUSH(persistent) of the item between ALLOCATE and the CAS. */
  dropItemFlush: boolean;
  /** Install chain: the redirected FLUSH covers only the item's 32-byte header, not the whole item it ALLOCATEd. */
  flushItemHeadOnly: boolean;
  /** Install chain: no FLUSH(persistent) of the slot after the CAS (acknowledged before durable). */
  dropSlotFlush: boolean;
  /** Tags carry no writer id (⟨ts, 0⟩): two writers of one timestamp tie. */
  noWriterId: boolean;
  /** A read returns the highest value of a majority without writing it back where it is missing. */
  readWithoutWriteBack: boolean;
  /** A write returns once one replica counts, not a majority. */
  minorityWrite: boolean;
  /** A read's chain does not FLUSH the slot it read: it may return a value a crash takes back. */
  readWithoutFlush: boolean;
  /** A direct read (at the block's location hint) returns the item it found there when its checksum and block check out, without comparing its tag with the slot READ after it: a stale hint returns an overwritten value. */
  trustLocationHint: boolean;
  /** A replica whose CAS did not swap counts at once, without a FLUSHed READ showing a tag ≥ the writer's. */
  countFailedCas: boolean;
  /** Recovery: trust every slot (no pointer validation, no repair of a torn slot from its item). */
  skipSlotRepair: boolean;
  /** Recovery: unreachable buffers are never reclaimed. */
  skipReclaim: boolean;
  /** Returns: accept a return stamped with an earlier epoch. */
  acceptStaleEpoch: boolean;
  /** Recovery: ALLOCATE is not refused while the free lists are being rebuilt. */
  allowAllocateBeforeRebuild: boolean;
  /** Write: the tag's ts is the query's max + 1 only, not above this writer's own last ts (an indeterminate write of ours may hold that tag on a minority). */
  reuseOwnTag: boolean;
  /** Returns: a return batch whose answer never came (the connection dropped, the replica up) is dropped, not sent again after the reconnect (and batches carry no number, so they are not idempotent). */
  dropUnansweredReturns: boolean;
  /** Receipt returns: an uncertain install's two buffers (the one it ALLOCATEd, the one its CAS read) are both freed, whether or not the CAS swapped, without the reachability check. */
  freeUncertainBlindly: boolean;
}

export const NO_RS_FAULTS: Readonly<RsFaults> = Object.freeze({
  dropItemFlush: false,
  flushItemHeadOnly: false,
  dropSlotFlush: false,
  noWriterId: false,
  readWithoutWriteBack: false,
  minorityWrite: false,
  readWithoutFlush: false,
  trustLocationHint: false,
  countFailedCas: false,
  skipSlotRepair: false,
  skipReclaim: false,
  acceptStaleEpoch: false,
  allowAllocateBeforeRebuild: false,
  reuseOwnTag: false,
  dropUnansweredReturns: false,
  freeUncertainBlindly: false,
});

export type RsFaultName = keyof RsFaults;

export interface RsMutant {
  name: RsFaultName;
  layer: 'write' | 'read' | 'recovery';
  /** The step it removes. */
  step: string;
  /** The test that catches it, when it is not the seeded crash workload of test/deep/rs-mutants.test.ts. */
  caughtBy?: string;
  /** NIC pins and schedule the explorer runs it with unless told otherwise (`--mutant NAME --seed 1` uses them). */
  explore?: MutantExplore;
}

export const RS_MUTANTS: readonly RsMutant[] = Object.freeze([
  // Without DDIO a drained item goes to media at once (the CAS drains its QP first): the missing FLUSH shows only with DDIO on.
  { name: 'dropItemFlush', layer: 'write', step: 'the redirected FLUSH(persistent) of the item between ALLOCATE and the CAS (the item is durable before a durable slot points at it)', explore: { pins: { ddio: true } } },
  // The redirected FLUSH's range is exactly the item: its first line only leaves the value's later lines in the CPU cache.
  { name: 'flushItemHeadOnly', layer: 'write', step: 'the redirected FLUSH covering the whole item ALLOCATE placed (its len), not only its header line', explore: { pins: { ddio: true } } },
  { name: 'dropSlotFlush', layer: 'write', step: 'FLUSH(persistent) of the slot after the CAS (a replica counts only once its slot is durable)', explore: { pins: { ddio: true } } },
  {
    name: 'noWriterId',
    layer: 'write',
    step: 'the writer id in the tag (two writers of one timestamp must not tie)',
    // Needs two writers of one block whose queries both miss the other's install: since reads go
    // direct (location hints: a read takes one round trip, no dereference), seed 1's random schedule
    // no longer overlaps two writes so; stalls of a client right after its atomics do (point 488).
    explore: { schedule: { mode: 'random', stalls: 40, stallSteps: 400, stallUnit: 'client', stallOn: 'atomic' } },
  },
  {
    name: 'readWithoutWriteBack',
    layer: 'read',
    step: 'the write-back of the highest value to a majority before a read returns it',
    // Needs a read that returns a write only a minority holds, then a crash: with DDIO on and eager
    // drains a CAS result reaches the LLC (visible to READs) long before media, so a crash of every
    // replica keeps it at most on that minority, and the read after recovery returns the older value.
    // Since reads go direct (location hints), seed 1 no longer reaches it with 2 images per point;
    // the plain sweep (14 images per point, no pins) catches it at seed 1, point 445; the op-by-op
    // test drives it.
    caughtBy: 'test/apps/rs/read-flush.test.ts',
    explore: { pins: { drain: 'eager', ddio: true } },
  },
  { name: 'minorityWrite', layer: 'write', step: 'waiting for a majority of replicas before a write returns' },
  {
    name: 'readWithoutFlush',
    layer: 'read',
    step: 'FLUSH(persistent) of the slot a read READ, in its chain (a read returns only durable state)',
    // Needs a read of a slot whose CAS drained to the LLC but not to media (DDIO on, eager drains:
    // visible to the READ, not durable) before the writer's slot FLUSH, then a crash of every replica.
    // Since reads go direct (location hints), seed 1 no longer holds a writer between its CAS and
    // its slot FLUSH long enough (not with 14 images per point, nor with stalls of a QP after its
    // atomics); the plain sweep (`--mutants`, no pins) catches it at seed 5 (point 52, crashed again
    // during recovery), and the op-by-op test holds the writer there. The pins stay for `--mutant` runs.
    caughtBy: 'test/apps/rs/read-flush.test.ts',
    explore: { pins: { drain: 'eager', ddio: true } },
  },
  {
    name: 'trustLocationHint',
    layer: 'read',
    step: 'a direct read at a location hint counts only when the item it found carries the tag of the slot READ after it, in its chain (the slot has not moved)',
    // Needs a read through a hint that another writer's install made stale while the old buffer is not reused yet, whose two
    // direct answers come before the spare replica's: the plain sweep catches it at seed 1 (the live run); test/apps/rs/hints.test.ts drives it op by op.
    caughtBy: 'test/apps/rs/hints.test.ts',
  },
  {
    name: 'countFailedCas',
    layer: 'write',
    step: 'a replica whose CAS did not swap counts only once a FLUSHed READ of its slot shows a tag >= the writer\'s',
    // Needs another writer's CAS result held undrained in a NIC cache (drain onFlush) while this
    // writer's CAS compares against it: a client stalled right after its CASes (pct.ts), under PCT.
    explore: { pins: { drain: 'onFlush', ddio: true }, schedule: { mode: 'pct', depth: 5, horizon: 3000, stalls: 40, stallSteps: 300, stallUnit: 'client', stallOn: 'atomic' } },
  },
  { name: 'skipSlotRepair', layer: 'recovery', step: 'validating every slot pointer and repairing a torn slot from the item it points at' },
  { name: 'skipReclaim', layer: 'recovery', step: 'reclaiming buffers no slot reaches' },
  { name: 'acceptStaleEpoch', layer: 'recovery', step: 'refusing buffer returns stamped with an earlier epoch' },
  { name: 'allowAllocateBeforeRebuild', layer: 'recovery', step: 'refusing ALLOCATE until the free lists are rebuilt' },
  {
    name: 'reuseOwnTag',
    layer: 'write',
    step: 'a new tag above the writer\'s own last one (its indeterminate write may hold that tag, with another value, on a minority the query missed)',
    // Also caught op by op by test/apps/rs/own-tag.test.ts. Needs a write of one client installed on one replica only when the other two crash (NO_MAJORITY:
    // indeterminate), then that client's next write, whose query misses that replica, on the same
    // block: a crash run of replicas 1 and 2 together at crash point 12 of seed 1 (restarted at once).
    // The correct build passes the same run: crash-test --app rs --seed 1 --crash-plan 'p12:n1,n2@0/r0'.
    explore: { crashPlan: 'p12:n1,n2@0/r0' },
  },
  {
    name: 'dropUnansweredReturns',
    layer: 'recovery',
    step: 'sending a return batch again (same number, idempotent) after a reconnect when the connection dropped before its answer (the replica is up: no recovery reclaims it)',
    // Needs a dropped connection with the replica up: test/apps/rs/drops.test.ts, and the plain sweep's crash runs, which drop connections (docs/cli.md "The plain sweep's draw").
    caughtBy: 'test/apps/rs/drops.test.ts',
  },
  {
    name: 'freeUncertainBlindly',
    layer: 'recovery',
    step: 'resolving an uncertain install by its receipt: free the ALLOCATEd buffer only if the CAS did not swap, else the buffer it replaced; never a buffer a slot reaches',
    // Needs an install whose answer a dropped connection lost (the replica up): test/apps/rs/drops.test.ts; the plain sweep's drop storms (src/testing/crash/multi.ts) catch it at seed 1.
    caughtBy: 'test/apps/rs/drops.test.ts',
  },
] as const satisfies readonly RsMutant[]);

export function rsFaultsFor(mutant: string | undefined): RsFaults {
  if (mutant === undefined) return { ...NO_RS_FAULTS };
  if (!RS_MUTANTS.some((m) => m.name === mutant)) throw new TypeError(`mutant must be one of ${RS_MUTANTS.map((m) => m.name).join(', ')}, got ${String(mutant)}`);
  return { ...NO_RS_FAULTS, [mutant]: true };
}

/** `--list-mutants` output: one `name<TAB>step` line per mutant. */
export function listRsMutants(): string {
  return RS_MUTANTS.map((m) => `${m.name}\t${m.step}`).join('\n');
}
