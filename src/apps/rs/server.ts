/**
 * One PRISM-RS replica: its CPU formats the RS area, recovers it after a crash (slot repair from
 * the self-describing items, allocator recovery through recovery/allocator.ts), posts the free
 * lists to the NIC, and serves the buffer-return RPC. Reads and writes never reach it: they are NIC
 * chains (client.ts).
 *
 * Recovery, as a decision table over each slot (docs/rs.md):
 *   ptr = base, tag ⟨0,0⟩ or LOST, bound 0          → keep (empty / lost)
 *   ptr = base, anything else                         → rewrite as empty (a torn install whose ptr piece did not persist)
 *   ptr a valid item of this block (arena, aligned,
 *     checksum, item.block = block)                   → keep ptr; rewrite bound and tag from the item if they differ
 *   ptr anything else                                 → LOST (this replica lost its copy; readers' write-back repairs it)
 * then: bump the epoch durably, rebuild the free lists from what no slot reaches, accept ALLOCATE.
 */
import { Access, type MemoryRegion, type Rnic, type ServerQp } from '../../../flush/index.js';
import { PmemRegion, PmrpcError } from '../../../pmem/index.js';
import { auditAllocator, recoverFreeLists, type AllocatorAudit, type ArenaClass } from '../../../recovery/index.js';
import { guardedMicrotask, jsonBytes, type AcceptedClient, type AppHost, type AppProblem, type AppServer } from '../index.js';
import { Mailbox, ReturnDesk, type MailboxStats, type ReturnStats } from '../kv/index.js';
import { NO_RS_FAULTS, type RsFaults } from './faults.js';
import {
  RS_EPOCH_OFFSET,
  RS_INSTALL_RECEIPTS,
  RS_RECEIPT_BYTES,
  RS_RECEIPT_NO_CAS,
  RS_SLOT_BYTES,
  RS_ITEM_HEADER_BYTES,
  RsErrorCodes,
  compareTags,
  computeRsGeometry,
  decodeRsHeader,
  decodeRsItem,
  decodeRsSlot,
  emptyRsSlot,
  encodeRsHeader,
  encodeRsSlot,
  isLostTag,
  lostRsSlot,
  rsClassOf,
  rsSlotOffset,
  validateRsLayout,
  type RsGeometry,
  type RsItem,
  type RsLayoutOptions,
  type RsSlot,
} from './layout.js';

/** imm of a return-batch SEND, and of the replica's replies. */
export const RS_RETURN_IMM = 0x5253_0001;
export const RS_RETURN_ACK_IMM = 0x5253_0002;
export const RS_RETURN_STALE_IMM = 0x5253_0003;

/** Scratches of released QPs kept for their clients' receipt returns (the oldest goes first; a receipt past it is not resolved: its buffer waits for recovery). */
export const RS_DEAD_SCRATCHES_MAX = 1024;

export interface RsRecoveryReport {
  epoch: bigint;
  slotsScanned: number;
  slotsRepaired: number;
  slotsLost: number;
  reachable: number;
  reclaimed: number;
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** An empty or LOST slot as recovery leaves it (a torn install whose ptr piece did not persist is neither). */
function isCleanEmpty(s: RsSlot): boolean {
  return s.bound === 0 && ((s.tag.ts === 0n && s.tag.writer === 0n) || isLostTag(s.tag));
}

/** Writes an empty RS area (header, empty slots, epoch 0) at `base` and persists it; refuses to overwrite one. */
export function formatRs(region: PmemRegion, layout: Partial<RsLayoutOptions>, base: number): RsGeometry {
  if (!(region instanceof PmemRegion)) throw new TypeError('region must be a PmemRegion');
  const g = computeRsGeometry(base, validateRsLayout(layout));
  if (base + g.totalBytes > region.sizeBytes) throw new PmrpcError(RsErrorCodes.LAYOUT_TOO_LARGE, `the RS area needs ${g.totalBytes} bytes at ${base}; the region has ${region.sizeBytes}`);
  try {
    decodeRsHeader(region.load(base, 128), base);
    throw new PmrpcError(RsErrorCodes.ALREADY_FORMATTED, `offset ${base} already holds an RS area; it is never overwritten`);
  } catch (e) {
    if (!(e instanceof PmrpcError) || e.code !== RsErrorCodes.NOT_FORMATTED) throw e;
  }
  const empty = encodeRsSlot(emptyRsSlot(g));
  for (let i = 0; i < g.blocks; i++) region.store(rsSlotOffset(g, i), empty);
  region.storeU64(base + RS_EPOCH_OFFSET, 0n);
  region.persist(base + RS_EPOCH_OFFSET, g.totalBytes - RS_EPOCH_OFFSET);
  // The header last: a format cut short leaves no magic, so open() says NOT_FORMATTED.
  region.store(base, encodeRsHeader(g));
  region.persist(base, 128);
  return g;
}

/** The rs app opened on one replica's region. */
export class RsServer implements AppServer {
  readonly app = 'rs';
  readonly region: PmemRegion;
  readonly nic: Rnic;
  readonly geometry: RsGeometry;
  readonly mr: MemoryRegion;
  readonly faults: Readonly<RsFaults>;
  readonly #pd: ReturnType<Rnic['allocPd']>;
  #mailbox: Mailbox;
  #epoch = 0n;
  #recovered = false;
  /** The free lists' mirror and the return RPC (KV's). */
  #desk: ReturnDesk;
  #lastReport: RsRecoveryReport | undefined;
  /** The QPs of live connections (a receipt return names one of its client's old ones). */
  #qps = new Map<number, ServerQp>();
  /** The scratch of each released QP as it was when the QP died (what its install chains' receipts say). */
  #dead = new Map<number, Uint8Array>();

  constructor(host: AppHost, base: number, faults: Partial<RsFaults>) {
    this.region = host.region;
    this.nic = host.nic;
    this.faults = Object.freeze({ ...NO_RS_FAULTS, ...faults });
    this.geometry = decodeRsHeader(host.region.load(base, 128), base);
    if (base + this.geometry.totalBytes > host.region.sizeBytes) throw new PmrpcError(RsErrorCodes.NOT_FORMATTED, 'the RS area runs past the end of the region');
    // ALLOCATE waits for the rebuilt lists (unless the mutant lets it through).
    if (this.faults.allowAllocateBeforeRebuild) host.nic.acceptAllocate();
    else host.nic.refuseAllocate();
    this.#pd = host.nic.allocPd();
    this.mr = host.nic.registerMr(this.#pd, base, this.geometry.mailboxOffset - base, Access.ALL);
    this.#mailbox = new Mailbox(host.nic, this.geometry, { schedule: guardedMicrotask(host) });
    this.#desk = new ReturnDesk({
      region: host.region,
      nic: host.nic,
      mr: this.mr,
      classes: this.arenaClasses,
      classOf: (p) => rsClassOf(this.geometry, p)?.sizeBytes,
      isReachable: (p) => this.#isReachable(p),
      resolveReceipt: (r) => this.#resolveReceipt(r),
      imms: { batch: RS_RETURN_IMM, ack: RS_RETURN_ACK_IMM, stale: RS_RETURN_STALE_IMM },
      acceptStaleEpoch: this.faults.acceptStaleEpoch,
    });
  }

  get stats(): Readonly<ReturnStats> {
    return this.#desk.stats;
  }

  get epoch(): bigint {
    return this.#epoch;
  }

  get recovered(): boolean {
    return this.#recovered;
  }

  get lastRecovery(): RsRecoveryReport | undefined {
    return this.#lastReport;
  }

  get arenaClasses(): ArenaClass[] {
    return this.geometry.classes.map((c) => ({ sizeBytes: c.sizeBytes, offset: c.offset, count: c.count }));
  }

  /** The item at `ptr` if it is a valid buffer holding an item of `block`. */
  itemAt(ptr: number, block: number): RsItem | undefined {
    const c = rsClassOf(this.geometry, ptr);
    if (c === undefined) return undefined;
    const item = decodeRsItem(this.region.load(ptr, c.sizeBytes));
    return item !== undefined && item.block === block ? item : undefined;
  }

  /** Recovery (the decision table of the file comment). Idempotent; a crash anywhere in it recovers the same way. */
  recover(): Record<string, unknown> {
    const r = this.recoverReplica();
    return { app: 'rs', epoch: r.epoch.toString(), slotsScanned: r.slotsScanned, slotsRepaired: r.slotsRepaired, slotsLost: r.slotsLost, reachable: r.reachable, reclaimed: r.reclaimed };
  }

  recoverReplica(): RsRecoveryReport {
    const g = this.geometry;
    const region = this.region;
    if (!this.faults.allowAllocateBeforeRebuild) this.nic.refuseAllocate();
    let repaired = 0;
    let lost = 0;
    const writeSlot = (i: number, bytes: Uint8Array): void => {
      region.store(rsSlotOffset(g, i), bytes);
      region.persist(rsSlotOffset(g, i), RS_SLOT_BYTES);
      repaired++;
    };
    let checking = -1;
    const result = recoverFreeLists({
      classes: this.arenaClasses,
      faults: { skipPointerValidation: this.faults.skipSlotRepair, skipReclaim: this.faults.skipReclaim },
      reach: (visit) => {
        for (let i = 0; i < g.blocks; i++) {
          const raw = region.load(rsSlotOffset(g, i), RS_SLOT_BYTES);
          const s = decodeRsSlot(raw);
          if (s.ptr === g.base) {
            if (!isCleanEmpty(s) && !this.faults.skipSlotRepair) writeSlot(i, encodeRsSlot(emptyRsSlot(g)));
            continue;
          }
          checking = i;
          if (visit(s.ptr) !== 'ok') {
            writeSlot(i, encodeRsSlot(lostRsSlot(g)));
            lost++;
            continue;
          }
          if (this.faults.skipSlotRepair) continue;
          const c = rsClassOf(g, s.ptr)!;
          const item = decodeRsItem(region.load(s.ptr, c.sizeBytes))!;
          const want = encodeRsSlot({ ptr: s.ptr, bound: RS_ITEM_HEADER_BYTES + item.value.length, tag: item.tag });
          if (!bytesEqual(raw, want)) writeSlot(i, want);
        }
      },
      checkObject: (ptr) => this.itemAt(ptr, checking) !== undefined,
    });
    // A new epoch before any return is accepted: returns stamped earlier name buffers this recovery reclaimed.
    this.#epoch = region.loadU64(g.base + RS_EPOCH_OFFSET) + 1n;
    region.storeU64(g.base + RS_EPOCH_OFFSET, this.#epoch);
    region.persist(g.base + RS_EPOCH_OFFSET, 8);
    this.#dead.clear(); // receipts of the crashed incarnation's QPs: recovery reclaimed what they name
    this.#desk.open(result.free, this.#epoch);
    this.#recovered = true;
    this.#lastReport = { epoch: this.#epoch, slotsScanned: g.blocks, slotsRepaired: repaired, slotsLost: lost, reachable: result.reachable.size, reclaimed: result.reclaimed };
    return this.#lastReport;
  }

  /** A connection: a QP with two receive buffers of the return RPC; the welcome is the RS address and the epoch. */
  accept(_hello: Uint8Array): AcceptedClient {
    // Clients may connect before recovery ends (ALLOCATE is refused meanwhile; the welcome's epoch is then stale).
    const qp = this.#mailbox.accept(this.#pd, (q, bufs, c) => this.#desk.onRecv(q, bufs, c));
    this.#qps.set(qp.qpn, qp);
    const g = this.geometry;
    return { qp, welcome: jsonBytes({ app: 'rs', rkey: this.mr.rkey, base: g.base, epoch: this.#epoch.toString(), layout: { blocks: g.blocks, classes: g.classes.map((c) => ({ sizeBytes: c.sizeBytes, count: c.count })), mailboxBuffers: g.mailboxBuffers } }) };
  }

  /**
   * The connection of QP `qpn` is gone: its mailbox buffers are fenced and reused (Mailbox.release:
   * the QP is destroyed, its NIC cache entries drained, none of its chains runs any further), and
   * its scratch is kept for the receipts its client may hand back.
   */
  release(qpn: number): void {
    this.#mailbox.release(qpn);
    const qp = this.#qps.get(qpn);
    if (qp === undefined) return;
    this.#qps.delete(qpn);
    this.#dead.set(qpn, qp.scratch());
    if (this.#dead.size > RS_DEAD_SCRATCHES_MAX) this.#dead.delete(this.#dead.keys().next().value!);
  }

  /**
   * A receipt return (docs/rs.md "Uncertain installs"): the client lost the answer of an install
   * chain on its old QP `qpn` and names the chain's receipt. The old QP is made dead first (a
   * connection the replica still holds is released: no operation of it is in flight after that),
   * then the receipt says what the chain left unlinked:
   *   serial ≠ the client's (the chain never reached the NIC, or another chain reused the slot)  → nothing
   *   ptr 0 (ALLOCATE did not run, or failed)                                                   → nothing
   *   old slot bound = RS_RECEIPT_NO_CAS (the CAS did not run)                                  → the ALLOCATEd buffer
   *   the old tag ≥ the chain's tag (the CAS did not swap)                                      → the ALLOCATEd buffer
   *   the old tag < the chain's tag (the CAS swapped: the ALLOCATEd buffer is linked)           → the old slot's buffer, unless empty
   * The desk then checks each like any return (not free, no slot reaches it). Mutant
   * freeUncertainBlindly names both buffers whatever the CAS did, without the reachability check.
   */
  #resolveReceipt(r: { qpn: number; slot: number; serial: bigint }): { ptrs: number[]; unchecked?: boolean } {
    if (!Number.isSafeInteger(r.slot) || r.slot < 0 || r.slot >= RS_INSTALL_RECEIPTS) return { ptrs: [] };
    if (this.#qps.has(r.qpn)) this.release(r.qpn);
    const scratch = this.#dead.get(r.qpn);
    if (scratch === undefined || scratch.length < (r.slot + 1) * RS_RECEIPT_BYTES) return { ptrs: [] };
    const dv = new DataView(scratch.buffer, scratch.byteOffset + r.slot * RS_RECEIPT_BYTES, RS_RECEIPT_BYTES);
    if (dv.getBigUint64(0, true) !== r.serial) return { ptrs: [] };
    const mine = Number(dv.getBigUint64(8, true));
    if (mine === 0) return { ptrs: [] };
    const tag = { writer: dv.getBigUint64(24, true), ts: dv.getBigUint64(32, true) };
    const old = decodeRsSlot(scratch.slice(r.slot * RS_RECEIPT_BYTES + 40, r.slot * RS_RECEIPT_BYTES + 72));
    const casRan = BigInt(old.bound) !== RS_RECEIPT_NO_CAS;
    const oldPtr = casRan && old.ptr !== this.geometry.base && old.ptr > 0 ? [old.ptr] : [];
    if (this.faults.freeUncertainBlindly) return { ptrs: [mine, ...oldPtr], unchecked: true };
    if (!casRan || compareTags(tag, old.tag) <= 0) return { ptrs: [mine] };
    return { ptrs: oldPtr };
  }

  get mailboxStats(): MailboxStats {
    return this.#mailbox.stats;
  }

  close(): void {
    this.#mailbox.close();
  }

  /** The slot of `block` as it is now (visible memory). */
  slot(block: number): ReturnType<typeof decodeRsSlot> {
    if (!Number.isSafeInteger(block) || block < 0 || block >= this.geometry.blocks) throw new PmrpcError(RsErrorCodes.BAD_BLOCK, `block must be an integer in [0, ${this.geometry.blocks}), got ${String(block)}`);
    return decodeRsSlot(this.region.load(rsSlotOffset(this.geometry, block), RS_SLOT_BYTES));
  }

  /** What this replica holds for `block`: its item, 'empty', or 'lost'; undefined when the slot is unsound (audit says why). */
  value(block: number): RsItem | 'empty' | 'lost' | undefined {
    const s = this.slot(block);
    if (s.ptr === this.geometry.base) return isLostTag(s.tag) ? 'lost' : 'empty';
    return this.itemAt(s.ptr, block);
  }

  /** The durable index as it is now: reachable buffers and slot problems. */
  #scan(): { reachable: Set<number>; problems: string[] } {
    const g = this.geometry;
    const reachable = new Set<number>();
    const problems: string[] = [];
    for (let i = 0; i < g.blocks; i++) {
      const s = this.slot(i);
      if (s.ptr === g.base) {
        if (!isCleanEmpty(s)) problems.push(`block ${i}: empty slot with bound ${s.bound}, tag ⟨${s.tag.ts}, ${s.tag.writer}⟩`);
        continue;
      }
      const c = rsClassOf(g, s.ptr);
      const item = this.itemAt(s.ptr, i);
      if (c === undefined || item === undefined) {
        problems.push(`block ${i}: pointer ${s.ptr} reaches no item of the block`);
        continue;
      }
      const exact = RS_ITEM_HEADER_BYTES + item.value.length;
      if (s.bound !== exact || compareTags(s.tag, item.tag) !== 0) problems.push(`block ${i}: slot bound ${s.bound} / tag ⟨${s.tag.ts}, ${s.tag.writer}⟩ do not match the item (${exact} / ⟨${item.tag.ts}, ${item.tag.writer}⟩)`);
      if (reachable.has(s.ptr)) problems.push(`block ${i}: buffer ${s.ptr} reached twice`);
      reachable.add(s.ptr);
    }
    return { reachable, problems };
  }

  inspect(): Record<string, unknown> {
    const { reachable, problems } = this.#scan();
    let written = 0;
    let lostSlots = 0;
    for (let i = 0; i < this.geometry.blocks; i++) {
      const v = this.value(i);
      if (v === 'lost') lostSlots++;
      else if (v !== 'empty' && v !== undefined) written++;
    }
    return { app: 'rs', epoch: this.#epoch.toString(), blocks: this.geometry.blocks, written, lost: lostSlots, reachable: reachable.size, problems };
  }

  /** The NIC's current free lists (what was posted, less what ALLOCATE popped from the front). */
  freeLists(): Map<number, number[]> {
    return this.#desk.freeLists();
  }

  auditAllocator(): AllocatorAudit {
    return auditAllocator(this.arenaClasses, this.freeLists(), this.#scan().reachable);
  }

  audit(): AppProblem[] {
    const out: AppProblem[] = this.#scan().problems.map((detail) => ({ kind: 'slot', detail }));
    const a = this.auditAllocator();
    const bad = { leaked: a.leaked.length, doubleFree: a.doubleFree.length, freeAndReachable: a.freeAndReachable.length, foreign: a.foreign.length };
    const show = (ptrs: number[]): string =>
      ptrs
        .slice(0, 3)
        .map((p) => {
          const c = rsClassOf(this.geometry, p);
          const it = c === undefined ? undefined : decodeRsItem(this.region.load(p, c.sizeBytes));
          return it === undefined ? `${p}` : `${p} (block ${it.block} ⟨${it.tag.ts}, ${it.tag.writer}⟩)`;
        })
        .join(', ');
    const lists = { leaked: a.leaked, doubleFree: a.doubleFree, freeAndReachable: a.freeAndReachable, foreign: a.foreign };
    for (const [k, n] of Object.entries(bad)) if (n > 0) out.push({ kind: 'allocator', detail: `${n} buffers ${k}: ${show(lists[k as keyof typeof lists])}` });
    return out;
  }

  /** Whether the slot of the buffer's item's block points at the buffer (the only slot that can). */
  #isReachable(ptr: number): boolean {
    const c = rsClassOf(this.geometry, ptr);
    if (c === undefined) return false;
    const item = decodeRsItem(this.region.load(ptr, c.sizeBytes));
    if (item === undefined || item.block >= this.geometry.blocks) return false;
    return this.slot(item.block).ptr === ptr;
  }
}
