/**
 * Allocator recovery (DESIGN §2.4, §3): PRISM free lists are NIC-volatile, so after a crash the
 * server rebuilds them from the durable arena layout (size classes) and what the application's
 * index reaches. The application supplies the reachability walk and the object check; this module
 * validates every pointer (inside the arena, aligned to its size class, not reached twice, object
 * check), reclaims every buffer the index does not reach (allocated but never linked, replaced but
 * not yet returned), and keeps ALLOCATE refused until the lists are posted.
 *
 * Buffer returns after recovery carry the server epoch (checkReturn): a return sent before a crash
 * names a buffer that recovery already reclaimed and may have re-posted, so it is refused.
 */
import { invariant } from '../pmem/index.js';
import type { MemoryRegion, Rnic } from '../flush/index.js';

export interface ArenaClass {
  sizeBytes: number;
  /** Region offset of the class's first buffer. */
  offset: number;
  count: number;
}

/** Test-only switches that remove one step of allocator recovery (the crash suite must catch each). */
export interface AllocatorFaults {
  /** Accept every pointer the index holds without checking it. */
  skipPointerValidation: boolean;
  /** Post no buffer the index does not reach: rely on returns to free them (they leak). */
  skipReclaim: boolean;
}

export const NO_ALLOCATOR_FAULTS: Readonly<AllocatorFaults> = Object.freeze({ skipPointerValidation: false, skipReclaim: false });

export type PointerVerdict = 'ok' | 'outside-arena' | 'misaligned' | 'bad-object' | 'reached-twice';

export interface AllocatorRecoveryInput {
  classes: readonly ArenaClass[];
  /**
   * The application walks its durable index and calls `visit(ptr)` for every pointer it holds; a
   * verdict other than 'ok' means the pointer must not be followed: the application clears it
   * (durably) before the lists are posted.
   */
  reach: (visit: (ptr: number) => PointerVerdict) => void;
  /** The application's object check (checksum, self-description) of the buffer at ptr. */
  checkObject: (ptr: number, cls: ArenaClass) => boolean;
  faults?: Partial<AllocatorFaults>;
}

export interface AllocatorRecoveryResult {
  /** Free buffers per class sizeBytes, ascending offsets. */
  free: Map<number, number[]>;
  /** Pointers the index keeps. */
  reachable: Set<number>;
  /** Pointers refused, with why. */
  rejected: Array<{ ptr: number; verdict: PointerVerdict }>;
  /** Buffers neither reachable nor... i.e. every unreachable buffer (all of them are reclaimed). */
  reclaimed: number;
}

/** The class whose sub-arena holds ptr; 'outside-arena' / 'misaligned' otherwise. */
export function locateBuffer(classes: readonly ArenaClass[], ptr: number): ArenaClass | 'outside-arena' | 'misaligned' {
  if (!Number.isSafeInteger(ptr)) return 'outside-arena';
  for (const c of classes) {
    if (ptr >= c.offset && ptr < c.offset + c.sizeBytes * c.count) return (ptr - c.offset) % c.sizeBytes === 0 ? c : 'misaligned';
  }
  return 'outside-arena';
}

/** Walks the index through the application's callback and computes the free lists. Pure: it neither stores nor posts. */
export function recoverFreeLists(input: AllocatorRecoveryInput): AllocatorRecoveryResult {
  const faults = { ...NO_ALLOCATOR_FAULTS, ...input.faults };
  const reachable = new Set<number>();
  const rejected: Array<{ ptr: number; verdict: PointerVerdict }> = [];
  input.reach((ptr) => {
    let verdict: PointerVerdict = 'ok';
    if (!faults.skipPointerValidation) {
      const c = locateBuffer(input.classes, ptr);
      if (typeof c === 'string') verdict = c;
      else if (reachable.has(ptr)) verdict = 'reached-twice';
      else if (!input.checkObject(ptr, c)) verdict = 'bad-object';
    }
    if (verdict === 'ok') reachable.add(ptr);
    else rejected.push({ ptr, verdict });
    return verdict;
  });
  const free = new Map<number, number[]>();
  let reclaimed = 0;
  for (const c of input.classes) {
    const list: number[] = [];
    if (!faults.skipReclaim) {
      for (let i = 0; i < c.count; i++) {
        const p = c.offset + i * c.sizeBytes;
        if (!reachable.has(p)) list.push(p);
      }
    }
    reclaimed += list.length;
    free.set(c.sizeBytes, list);
  }
  return { free, reachable, rejected, reclaimed };
}

/**
 * The invariant of rebuilt free lists, checked before they are posted (DESIGN §10.1): every buffer on
 * the list of class `size` is a buffer of that class (inside its sub-arena, at a buffer boundary),
 * and none is reachable from the index — a free buffer a slot still points at would be handed to a
 * new owner whose writes the slot's readers then see. O(1) per buffer (the caller's reachable set).
 */
export function checkFreeLists(classes: readonly ArenaClass[], free: ReadonlyMap<number, readonly number[]>, isReachable: (ptr: number) => boolean): void {
  for (const [size, list] of free) {
    for (const p of list) {
      const c = locateBuffer(classes, p);
      invariant(typeof c !== 'string' && c.sizeBytes === size, () => `buffer ${p} on the free list of class ${size} is ${typeof c === 'string' ? c : `a buffer of class ${c.sizeBytes}`}`);
      invariant(!isReachable(p), () => `buffer ${p} is on the free list of class ${size} and reachable from the index`);
    }
  }
}

/**
 * Posts rebuilt lists to the NIC. The caller refused ALLOCATE (nic.refuseAllocate()) before it
 * walked the index; this clears whatever the lists held and accepts ALLOCATE again only after
 * every list is posted.
 */
export function postFreeLists(nic: Rnic, mr: MemoryRegion, free: ReadonlyMap<number, readonly number[]>, options: { acceptAllocate?: boolean } = {}): void {
  // Free-list membership: a buffer is posted once (on two lists, or twice on one, it would be handed to two owners).
  const seen = new Set<number>();
  for (const list of free.values()) {
    for (const p of list) {
      invariant(!seen.has(p), () => `buffer ${p} would be posted to the free lists twice`);
      seen.add(p);
    }
  }
  nic.refuseAllocate();
  nic.clearFreeLists();
  for (const [size, list] of free) if (list.length > 0) nic.postFreeBuffers(mr, size, list);
  if (options.acceptAllocate !== false) nic.acceptAllocate();
}

export type ReturnVerdict = 'ok' | 'stale-epoch' | 'outside-arena' | 'misaligned' | 'reachable' | 'already-free';

/** Whether a returned buffer may go back on a free list. `acceptStaleEpoch` is a test-only fault. */
export function checkReturn(
  r: { epoch: bigint; ptr: number },
  server: { epoch: bigint; classes: readonly ArenaClass[]; isReachable: (ptr: number) => boolean; isFree: (ptr: number) => boolean },
  faults: { acceptStaleEpoch?: boolean } = {},
): ReturnVerdict {
  if (r.epoch !== server.epoch && faults.acceptStaleEpoch !== true) return 'stale-epoch';
  const c = locateBuffer(server.classes, r.ptr);
  if (typeof c === 'string') return c;
  if (faults.acceptStaleEpoch === true) return 'ok'; // the fault also trusts the pointer: that is what a stale return exploits
  if (server.isFree(r.ptr)) return 'already-free';
  if (server.isReachable(r.ptr)) return 'reachable';
  return 'ok';
}

export interface AllocatorAudit {
  /** Buffers neither free nor reachable. */
  leaked: number[];
  /** Buffers on a free list more than once. */
  doubleFree: number[];
  /** Buffers both on a free list and reachable from the index. */
  freeAndReachable: number[];
  /** Free-list entries that are not buffers of their class. */
  foreign: number[];
}

/** The allocator invariant after recovery: free ⊎ reachable = every buffer. */
export function auditAllocator(classes: readonly ArenaClass[], free: ReadonlyMap<number, readonly number[]>, reachable: ReadonlySet<number>): AllocatorAudit {
  const audit: AllocatorAudit = { leaked: [], doubleFree: [], freeAndReachable: [], foreign: [] };
  const seen = new Set<number>();
  for (const [size, list] of free) {
    for (const p of list) {
      const c = locateBuffer(classes, p);
      if (typeof c === 'string' || c.sizeBytes !== size) audit.foreign.push(p);
      if (seen.has(p)) audit.doubleFree.push(p);
      seen.add(p);
      if (reachable.has(p)) audit.freeAndReachable.push(p);
    }
  }
  for (const c of classes) {
    for (let i = 0; i < c.count; i++) {
      const p = c.offset + i * c.sizeBytes;
      if (!seen.has(p) && !reachable.has(p)) audit.leaked.push(p);
    }
  }
  return audit;
}
