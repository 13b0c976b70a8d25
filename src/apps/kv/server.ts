/**
 * The PRISM-KV server. Its CPU formats the KV area, recovers it after a crash (each slot decided by a
 * row of KV_SLOT_TABLE, recovery.ts, + allocator recovery through recovery/allocator.ts), posts free
 * lists to the NIC, and handles the buffer-return RPC. GET, PUT and DELETE never reach it: they are NIC chains (client.ts).
 */
import { Access, CpuPoller, type MemoryRegion, type Rnic, type ServerQp } from '../../../flush/index.js';
import { bool, invariant, PmemRegion, PmrpcError, resolveOptions, type OptionChecks } from '../../../pmem/index.js';
import { kvBase } from './checks.js';
import { auditAllocator, checkFreeLists, recoverFreeLists, type AllocatorAudit, type ArenaClass, type PointerVerdict } from '../../../recovery/index.js';
import { decideKvSlot, type KvPointerInput, type KvSlotAction, type KvSlotRow, type KvWordsInput } from './recovery.js';
import { Mailbox, ReturnDesk, type MailboxStats } from '../shared/index.js';
import { NO_KV_FAULTS, type KvFaults } from './faults.js';
import {
  KV_EPOCH_OFFSET,
  KV_HEADER_BYTES,
  KvErrorCodes,
  SLOT_BYTES,
  bytesEqual,
  classOf,
  computeKvGeometry,
  decodeItem,
  decodeKvHeader,
  decodeSlot,
  emptySlot,
  encodeKvHeader,
  encodeItem,
  encodeSlot,
  inProbeSequence,
  probeSequence,
  slotOffset,
  validateLayoutOptions,
  type KvGeometry,
  type KvLayoutOptions,
  type SlotWord,
} from './layout.js';

/** imm of a return-batch SEND, and of the server's replies. */
export const RETURN_IMM = 0x4b56_0001;
export const RETURN_ACK_IMM = 0x4b56_0002;
export const RETURN_STALE_IMM = 0x4b56_0003;

export interface KvServerOptions {
  /** Offset of the KV area in the region (multiple of 64). */
  base: number;
  /** Test-only fault switches (mutants). */
  faults: Partial<KvFaults>;
  /** The CPU poller that runs the return RPC, or how a new one on the NIC schedules its passes (default: queueMicrotask). */
  poller: CpuPoller | { schedule: (fn: () => void) => void } | undefined;
  /** Do not recover in open(): call recover() later (tests of ALLOCATE during recovery). */
  deferRecovery: boolean;
}

export const KV_SERVER_DEFAULTS: Readonly<KvServerOptions> = Object.freeze({ base: 0, faults: Object.freeze({}), poller: undefined, deferRecovery: false });

export interface KvRecoveryReport {
  epoch: bigint;
  slotsScanned: number;
  slotsRepaired: number;
  pointersRejected: Array<{ slot: number; ptr: number; verdict: PointerVerdict }>;
  reachable: number;
  reclaimed: number;
  /** How many slots each row of KV_SLOT_TABLE (recovery.ts) decided. */
  rows: Record<string, number>;
}

/** What recovery's walk learned of one slot: its bytes and the inputs of KV_SLOT_TABLE (the spare is known only after the walk). */
interface KvSlotSeen {
  raw: Uint8Array;
  pointer: KvPointerInput;
  words: KvWordsInput;
  /** The word the slot's item derives (an accepted pointer: rows item, item-repair, dead, dead-repair). */
  fromItem?: Uint8Array;
}

export interface KvServerStats {
  returnBatches: number;
  /** Idempotent return batches received again (a client resending after a drop): nothing freed twice. */
  returnDuplicates: number;
  returnsAccepted: number;
  returnsRefused: Record<string, number>;
}

export interface SlotProblem {
  slot: number;
  problem: string;
}

const KV_SERVER_CHECKS: OptionChecks<KvServerOptions> = { base: kvBase, deferRecovery: bool };

function resolve(options: Partial<KvServerOptions>): KvServerOptions {
  return resolveOptions(KV_SERVER_DEFAULTS, options, KV_SERVER_CHECKS);
}

export class PrismKvServer {
  readonly region: PmemRegion;
  readonly nic: Rnic;
  readonly geometry: KvGeometry;
  readonly mr: MemoryRegion;
  readonly pd: ReturnType<Rnic['allocPd']>;
  readonly faults: Readonly<KvFaults>;
  #mailbox: Mailbox;
  #epoch = 0n;
  #recovered = false;
  /** The free lists' mirror and the return RPC (shared with PRISM-RS). */
  #desk: ReturnDesk;
  #lastReport: KvRecoveryReport | undefined;

  /** Writes an empty KV area (header, empty slots, epoch 0) at options.base and persists it. Refuses to overwrite one. */
  static format(region: PmemRegion, layout: Partial<KvLayoutOptions> = {}, options: { base?: number } = {}): KvGeometry {
    if (!(region instanceof PmemRegion)) throw new TypeError('region must be a PmemRegion');
    const base = options.base ?? 0;
    const g = computeKvGeometry(base, validateLayoutOptions(layout));
    if (base + g.totalBytes > region.sizeBytes) throw new PmrpcError(KvErrorCodes.LAYOUT_TOO_LARGE, `the KV area needs ${g.totalBytes} bytes at ${base}; the region has ${region.sizeBytes}`);
    try {
      decodeKvHeader(region.load(base, 128), base);
      throw new PmrpcError(KvErrorCodes.ALREADY_FORMATTED, `offset ${base} already holds a KV area; it is never overwritten`);
    } catch (e) {
      if (!(e instanceof PmrpcError) || e.code !== KvErrorCodes.NOT_FORMATTED) throw e;
    }
    const empty = encodeSlot(emptySlot(g));
    for (let i = 0; i < g.slotCount; i++) region.store(slotOffset(g, i), empty);
    region.storeU64(base + KV_EPOCH_OFFSET, 0n);
    region.persist(base + KV_EPOCH_OFFSET, g.totalBytes - KV_EPOCH_OFFSET);
    // The header last: a format cut short leaves no magic, so open() says NOT_FORMATTED.
    region.store(base, encodeKvHeader(g));
    region.persist(base, 128);
    return g;
  }

  /** Opens the KV area at options.base: registers its MR and (unless deferRecovery) recovers it. */
  static open(region: PmemRegion, nic: Rnic, options: Partial<KvServerOptions> = {}): PrismKvServer {
    if (!(region instanceof PmemRegion)) throw new TypeError('region must be a PmemRegion');
    if (nic === null || typeof nic !== 'object' || nic.region !== region) throw new TypeError('nic must be an Rnic on the same region');
    const o = resolve(options);
    const s = new PrismKvServer(region, nic, o);
    if (!o.deferRecovery) s.recover();
    return s;
  }

  private constructor(region: PmemRegion, nic: Rnic, o: KvServerOptions) {
    this.region = region;
    this.nic = nic;
    this.faults = Object.freeze({ ...NO_KV_FAULTS, ...o.faults });
    this.geometry = decodeKvHeader(region.load(o.base, 128), o.base);
    if (o.base + this.geometry.totalBytes > region.sizeBytes) throw new PmrpcError(KvErrorCodes.NOT_FORMATTED, 'the KV area runs past the end of the region');
    // ALLOCATE waits for the rebuilt lists (unless the mutant lets it through).
    if (this.faults.allowAllocateBeforeRebuild) nic.acceptAllocate();
    else nic.refuseAllocate();
    this.pd = nic.allocPd();
    this.mr = nic.registerMr(this.pd, o.base, this.geometry.mailboxOffset - o.base, Access.ALL);
    this.#mailbox = new Mailbox(nic, this.geometry, o.poller);
    this.#desk = new ReturnDesk({
      region,
      nic,
      mr: this.mr,
      classes: this.arenaClasses,
      classOf: (p) => classOf(this.geometry, p)?.sizeBytes,
      isReachable: (p) => this.#isReachable(p),
      imms: { batch: RETURN_IMM, ack: RETURN_ACK_IMM, stale: RETURN_STALE_IMM },
      acceptStaleEpoch: this.faults.acceptStaleEpoch,
    });
  }

  get epoch(): bigint {
    return this.#epoch;
  }

  get recovered(): boolean {
    return this.#recovered;
  }

  get stats(): Readonly<KvServerStats> {
    const st = this.#desk.stats;
    return { ...st, returnsRefused: { ...st.returnsRefused } };
  }

  get lastRecovery(): KvRecoveryReport | undefined {
    return this.#lastReport;
  }

  /** What a client needs to reach the KV area. */
  get address(): { rkey: number; base: number } {
    return { rkey: this.mr.rkey, base: this.geometry.base };
  }

  get arenaClasses(): ArenaClass[] {
    return this.geometry.classes.map((c) => ({ sizeBytes: c.sizeBytes, offset: c.offset, count: c.count }));
  }

  /**
   * Recovery: decide every slot by KV_SLOT_TABLE (recovery.ts; docs/kv.md "Recovery") — repair,
   * keep, or replace a rejected pointer — bump the epoch durably, rebuild the free lists from what
   * the index does not reach, then accept ALLOCATE. Idempotent, and a crash at any point of it
   * leaves an image that recovers the same way.
   */
  recover(): KvRecoveryReport {
    const g = this.geometry;
    const region = this.region;
    if (!this.faults.allowAllocateBeforeRebuild) this.nic.refuseAllocate();
    let repaired = 0;
    const rejected: KvRecoveryReport['pointersRejected'] = [];
    const rows: Record<string, number> = {};
    const empty = encodeSlot(emptySlot(g));
    // A repair of words derived from the ptr word (rows torn-empty, item-repair, dead-repair) is
    // stored, not persisted: the ptr word and the item it names are all recovery reads, they do
    // not change (the buffer stays linked, so it is never reclaimed or rewritten, until a PUT's CAS
    // replaces the whole slot and its index FLUSH persists it), so a crash before the repair is
    // durable leaves words the next recovery re-derives the same way. (Issue 10: no crash test
    // could tell the persist apart — the explorer with the step skipped: 0 violations over 181
    // repairs on 6 seeds, DDIO off, subset lines, nested crashes, crash runs.) A rejected slot's
    // new word (the table's `durable` rows) is persisted: see below.
    const writeSlot = (i: number, decided: Uint8Array, bytes: Uint8Array, row: KvSlotRow): void => {
      const next = decodeSlot(bytes);
      checkKvSlotRewrite(region, g, i, decided, next, row.action);
      checkKvSlotWrite(region, g, i, next);
      region.store(slotOffset(g, i), bytes);
      if (row.durable && !this.faults.skipRejectedSlotPersist) region.persist(slotOffset(g, i), SLOT_BYTES);
      repaired++;
    };
    // The walk: each slot's bytes and the table's inputs (recovery.ts), in slot order.
    const seen: KvSlotSeen[] = [];
    // Mutant skip-pointer-validation trusts every slot word: the allocator accepts every pointer
    // unchecked, and the slot counts as an item (or empty) whose words match.
    const trusted = this.faults.skipPointerValidation;
    let checking = -1;
    let objectVerdict: 'no-item' | 'off-sequence' = 'no-item';
    const result = recoverFreeLists({
      classes: this.arenaClasses,
      faults: { skipPointerValidation: this.faults.skipPointerValidation, skipReclaim: this.faults.skipReclaim },
      reach: (visit) => {
        for (let i = 0; i < g.slotCount; i++) {
          const raw = region.load(slotOffset(g, i), 24);
          const s = decodeSlot(raw);
          if (s.ptr === g.base) {
            seen.push({ raw, pointer: 'base', words: trusted || (s.bound === 0 && s.version === 0n) ? 'match' : 'differ' });
            continue;
          }
          checking = i;
          const verdict = visit(s.ptr);
          if (verdict !== 'ok') {
            rejected.push({ slot: i, ptr: s.ptr, verdict });
            seen.push({ raw, pointer: verdict === 'bad-object' ? objectVerdict : verdict, words: 'differ' });
            continue;
          }
          if (trusted) {
            seen.push({ raw, pointer: 'item', words: 'match' });
            continue;
          }
          // The ptr word is the truth; bound and version are derived from the item it points at.
          const c = classOf(g, s.ptr)!;
          const item = decodeItem(region.load(s.ptr, c.sizeBytes))!;
          const fromItem = encodeSlot({ ptr: s.ptr, bound: c.sizeBytes, version: item.version });
          seen.push({ raw, pointer: item.dead === true ? 'dead' : 'item', words: bytesEqual(raw, fromItem) ? 'match' : 'differ', fromItem });
        }
      },
      checkObject: (ptr, cls) => {
        const item = decodeItem(region.load(ptr, cls.sizeBytes));
        objectVerdict = 'no-item';
        if (item === undefined) return false;
        if (item.dead === true) return true;
        // The slot must be in the key's probe sequence (its whole sequence: every group).
        objectVerdict = 'off-sequence';
        return inProbeSequence(g, item.key, checking);
      },
    });
    // One row per slot. `spare`: a reclaimed buffer is left once the earlier rejected slots took theirs.
    let spare = [...result.free.values()].reduce((n, list) => n + list.length, 0);
    const decided = seen.map((f) => {
      const row = decideKvSlot({ pointer: f.pointer, words: f.words, spare: spare > 0 ? 'some' : 'none' });
      if (row.action === 'link-dead-item') spare--;
      rows[row.id] = (rows[row.id] ?? 0) + 1;
      return row;
    });
    // First the repairs (stored only), in slot order.
    decided.forEach((row, i) => {
      if (row.durable) return;
      if (row.action === 'rewrite-empty') writeSlot(i, seen[i]!.raw, empty, row);
      else if (row.action === 'rewrite-from-item') writeSlot(i, seen[i]!.raw, seen[i]!.fromItem!, row);
    });
    // Then the rejected slots (rows link-dead-item, write-empty), once the free lists are known. A
    // rejected slot cannot simply become empty: an empty slot ends every probe, and keys stored
    // past it in their probe sequences would vanish. It gets a dead item (durable before the slot
    // points at it — else a crash leaves the slot pointing at whatever the buffer held before,
    // e.g. an old item of a key whose sequence holds the slot: test/apps/kv/repairs.test.ts),
    // taken from the reclaimed buffers; a crash in between leaves the slot rejected again and the
    // buffer unreachable, so the next recovery redoes it. The slot's new word is durable before
    // the free lists are posted: the rejected buffer is reclaimed, and once a PUT reuses it a slot
    // still pointing at it durably would link the item that PUT wrote (or a later one) there after
    // a crash.
    decided.forEach((row, i) => {
      if (!row.durable) return;
      if (row.action === 'write-empty') {
        checkKvLastResort(i, result.free);
        writeSlot(i, seen[i]!.raw, empty, row); // no buffer left at all: the last resort
        return;
      }
      const cls = [...result.free.entries()].find(([, list]) => list.length > 0)!;
      const buf = cls[1].shift()!;
      // Free-list membership: a reclaimed buffer is a buffer of its list's class, reachable from no slot.
      invariant(!result.reachable.has(buf), () => `buffer ${buf} is on a free list and reachable`);
      invariant(classOf(g, buf)?.sizeBytes === cls[0], () => `buffer ${buf} on the free list of class ${cls[0]} is not a buffer of that class`);
      result.reclaimed--;
      const dead = encodeItem({ key: new Uint8Array(0), value: new Uint8Array(0), version: 1n, tombstone: false, dead: true });
      region.store(buf, dead);
      if (!this.faults.skipDeadItemPersist) region.persist(buf, dead.length);
      result.reachable.add(buf);
      writeSlot(i, seen[i]!.raw, encodeSlot({ ptr: buf, bound: cls[0], version: 1n }), row);
    });
    // A new epoch before any return is accepted: returns stamped earlier name buffers this
    // recovery already reclaimed.
    const epoch = region.loadU64(g.base + KV_EPOCH_OFFSET) + 1n;
    // The epoch only grows: past every epoch this server stamped (a word that went back would let returns of an older incarnation through).
    invariant(epoch > this.#epoch && epoch <= U64_MAX, () => `the KV epoch would go from ${this.#epoch} to ${epoch}`);
    this.#epoch = epoch;
    region.storeU64(g.base + KV_EPOCH_OFFSET, this.#epoch);
    region.persist(g.base + KV_EPOCH_OFFSET, 8);
    // The lists about to be posted: buffers of their classes, none reachable from a slot.
    checkFreeLists(this.arenaClasses, result.free, (p) => result.reachable.has(p));
    this.#desk.open(result.free, this.#epoch);
    this.#recovered = true;
    this.#lastReport = { epoch: this.#epoch, slotsScanned: g.slotCount, slotsRepaired: repaired, pointersRejected: rejected, reachable: result.reachable.size, reclaimed: result.reclaimed, rows };
    return this.#lastReport;
  }


  /** A server QP for one client, with receive buffers for the return RPC. */
  accept(): ServerQp {
    return this.#mailbox.accept(this.pd, (qp, bufs, c) => this.#desk.onRecv(qp, bufs, c));
  }

  /** The connection of QP `qpn` is gone: its mailbox buffers are fenced and reused (Mailbox.release). */
  release(qpn: number): boolean {
    return this.#mailbox.release(qpn);
  }

  get mailboxStats(): MailboxStats {
    return this.#mailbox.stats;
  }

  close(): void {
    this.#mailbox.close();
  }

  /** The NIC's current free lists (what was posted, less what ALLOCATE popped from the front). */
  freeLists(): Map<number, number[]> {
    return this.#desk.freeLists();
  }

  /**
   * Independent check of the durable index (for tests and the crash suite): every slot empty or a
   * valid item in the key's probe sequence with matching bound and version, no buffer or key twice.
   */
  inspect(): { reachable: Set<number>; problems: SlotProblem[]; items: Map<string, { slot: number; value: Uint8Array | undefined; version: bigint }> } {
    const g = this.geometry;
    const reachable = new Set<number>();
    const problems: SlotProblem[] = [];
    const items = new Map<string, { slot: number; value: Uint8Array | undefined; version: bigint }>();
    for (let i = 0; i < g.slotCount; i++) {
      const s = decodeSlot(this.region.load(slotOffset(g, i), 24));
      if (s.ptr === g.base) {
        if (s.bound !== 0 || s.version !== 0n) problems.push({ slot: i, problem: 'empty slot with a non-zero bound or version' });
        continue;
      }
      const c = classOf(g, s.ptr);
      if (c === undefined) {
        problems.push({ slot: i, problem: `pointer ${s.ptr} is not a buffer of the arena` });
        continue;
      }
      const item = decodeItem(this.region.load(s.ptr, c.sizeBytes));
      if (item === undefined) {
        problems.push({ slot: i, problem: `pointer ${s.ptr} reaches garbage (checksum)` });
        continue;
      }
      if (s.bound !== c.sizeBytes || s.version !== item.version) problems.push({ slot: i, problem: `slot bound ${s.bound} / version ${s.version} do not match the item (${c.sizeBytes} / ${item.version})` });
      if (reachable.has(s.ptr)) problems.push({ slot: i, problem: `buffer ${s.ptr} reached twice` });
      reachable.add(s.ptr);
      if (item.dead === true) continue;
      if (!inProbeSequence(g, item.key, i)) problems.push({ slot: i, problem: `item of key ${hex(item.key)} outside its probe sequence` });
      const k = hex(item.key);
      if (items.has(k)) problems.push({ slot: i, problem: `key ${k} in two slots` });
      items.set(k, { slot: i, value: item.tombstone ? undefined : item.value, version: item.version });
    }
    return { reachable, problems, items };
  }

  /** Allocator audit against the index as inspect() sees it. */
  auditAllocator(): AllocatorAudit {
    return auditAllocator(this.arenaClasses, this.freeLists(), this.inspect().reachable);
  }

  /** Whether a slot of the buffer's item's probe sequence points at the buffer (the only slots that can). */
  #isReachable(ptr: number): boolean {
    const g = this.geometry;
    const c = classOf(g, ptr);
    if (c === undefined) return false;
    const item = decodeItem(this.region.load(ptr, c.sizeBytes));
    if (item === undefined) return false;
    if (item.dead === true) return true; // dead items are never handed to clients: refuse
    for (const i of probeSequence(g, item.key)) {
      const o = slotOffset(g, i);
      if (this.region.loadU32(o) + this.region.loadU32(o + 4) * 0x1_0000_0000 === ptr) return true;
    }
    return false;
  }
}

export const KV_AREA_HEADER_BYTES = KV_HEADER_BYTES;

const U64_MAX = 0xffff_ffff_ffff_ffffn;

/**
 * The invariant of a slot word the server CPU writes (recovery's repairs and rejections), checked
 * before the store: empty (ptr = base, bound 0, version 0), or a pointer to a buffer of the arena at
 * a buffer boundary of its size class, with that class's size as bound and the version of the
 * valid item the buffer holds (the slot's derived words agree with the ptr word, the one truth).
 * O(1): one item read, at recovery only.
 */
export function checkKvSlotWrite(region: PmemRegion, g: KvGeometry, i: number, s: SlotWord): void {
  invariant(Number.isInteger(i) && i >= 0 && i < g.slotCount, () => `index slot ${i} is outside the index (${g.slotCount} slots)`);
  if (s.ptr === g.base) {
    invariant(s.bound === 0 && s.version === 0n, () => `empty index slot ${i} would hold bound ${s.bound}, version ${s.version}`);
    return;
  }
  const c = classOf(g, s.ptr);
  invariant(c !== undefined, () => `index slot ${i} would point at ${s.ptr}, not a buffer boundary of the arena`);
  invariant(s.bound === c.sizeBytes, () => `index slot ${i} would hold bound ${s.bound} for a buffer of class ${c.sizeBytes}`);
  const item = decodeItem(region.load(s.ptr, c.sizeBytes));
  invariant(item !== undefined && item.version === s.version, () => `index slot ${i} would hold version ${s.version} for ${item === undefined ? 'a buffer that holds no valid item' : `an item of version ${item.version}`} at ${s.ptr}`);
}

/**
 * The invariant of a slot rewrite by recovery, checked before the store (after KV_SLOT_TABLE
 * decided the slot): the slot still holds the word its row was decided on (a word that changed
 * under recovery — a stray store, a chain that ran — is not what the row was chosen for), and only
 * a rejected pointer is replaced: a repair (rewrite-empty, rewrite-from-item) keeps the ptr word,
 * the truth (a repair that moved it would unlink an item an acknowledged PUT may have linked, or
 * link one to a slot that never held it). O(1): one slot read, at recovery only.
 */
export function checkKvSlotRewrite(region: PmemRegion, g: KvGeometry, i: number, decided: Uint8Array, next: SlotWord, action: KvSlotAction): void {
  const now = region.load(slotOffset(g, i), 24);
  invariant(bytesEqual(now, decided), () => `index slot ${i} holds ${hex(now)}, not the word ${hex(decided)} its row was decided on`);
  const from = decodeSlot(decided).ptr;
  invariant(action === 'link-dead-item' || action === 'write-empty' || next.ptr === from, () => `a ${action} of index slot ${i} would move its ptr word from ${from} to ${next.ptr}`);
}

/**
 * The invariant of recovery's last resort (row rejected-no-spare): a rejected slot becomes empty
 * only when no reclaimed buffer is left for a dead item — an empty slot ends every probe, so keys
 * stored past it in their probe sequences would vanish. O(classes).
 */
export function checkKvLastResort(i: number, free: ReadonlyMap<number, readonly number[]>): void {
  const left = [...free.values()].reduce((n, list) => n + list.length, 0);
  invariant(left === 0, () => `rejected index slot ${i} would become empty while ${left} reclaimed buffers are left for a dead item`);
}

function hex(b: Uint8Array): string {
  return Buffer.from(b).toString('hex');
}
