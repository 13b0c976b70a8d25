/**
 * The Pilaf-style baseline (Mitchell et al., ATC'13) on the same emulator, for the comparison of
 * DESIGN §5 / §9: its server. PUT and DELETE are RPCs to the server CPU; GET is the client's
 * (client.ts: one-sided READs with self-verifying checksums).
 *
 * The durable RPC layer (src/rpc) is not used: a PUT is a SEND into a receive buffer the server
 * posted; the server CPU (a CpuPoller, as flush/strategies.ts' gpspm server) writes the item,
 * persists it, writes the entry, persists it, frees the old buffer, and replies with qp.notify.
 * The server CPU is the only writer, so no CAS is needed. Layout: layout.ts.
 */
import { CpuPoller, type MemoryRegion, type RecvCompletion, type Rnic, type ServerQp } from '../../../flush/index.js';
import { Access } from '../../../flush/index.js';
import { invariant, PmemRegion, PmrpcError, resolveOptions } from '../../../pmem/index.js';
import {
  KvErrorCodes,
  Mailbox,
  SLOT_BYTES,
  bytesEqual,
  classFor,
  classOf,
  computeKvGeometry,
  decodeItem,
  decodeKvHeader,
  encodeItem,
  encodeKvHeader,
  homeSlot,
  itemBytes,
  kvBase,
  probeSequence,
  slotOffset,
  validateLayoutOptions,
  type KvGeometry,
  type KvLayoutOptions,
  type MailboxStats,
} from '../shared/index.js';
import { checkPilafFaults, NO_PILAF_FAULTS, type PilafFaults } from './faults.js';
import { decodePilafEntry, encodePilafEntry, OP_DELETE, OP_PUT, PILAF_MAGIC, PILAF_REPLY_IMM, PILAF_REQUEST_IMM, STATUS_BAD, STATUS_FULL, STATUS_INDEX_FULL, STATUS_OK, type PilafEntry } from './layout.js';
import { decidePilafSlot, type PilafSlotInput } from './recovery.js';

export interface PilafServerOptions {
  base: number;
  poller: CpuPoller | undefined;
  /** Test-only fault switches (mutants, faults.ts). */
  faults: Partial<PilafFaults>;
}

export const PILAF_SERVER_DEFAULTS: Readonly<PilafServerOptions> = Object.freeze({ base: 0, poller: undefined, faults: Object.freeze({}) });

/** What opening the area recovered (PilafServer.lastRecovery; the kv app's report of system 'pilaf' is built from it). */
export interface PilafRecovery {
  slotsScanned: number;
  /** Entries rewritten from the item their ptr word names (a torn entry update). */
  entriesRebuilt: number;
  /** Entries cleared to a tombstone (a torn DELETE, or a ptr word that names no item of the arena). */
  entriesCleared: number;
  /** Buffers the entries reach (kept). */
  reachable: number;
  /** Buffers put on the CPU free lists. */
  reclaimed: number;
  /** How many entries each row of PILAF_SLOT_TABLE (recovery.ts) decided. */
  rows: Record<string, number>;
}

export class PilafServer {
  readonly region: PmemRegion;
  readonly nic: Rnic;
  readonly geometry: KvGeometry;
  readonly mr: MemoryRegion;
  readonly pd: ReturnType<Rnic['allocPd']>;
  readonly faults: Readonly<PilafFaults>;
  #mailbox: Mailbox;
  /** CPU free lists per class size. */
  #free = new Map<number, number[]>();
  /**
   * Free-list membership per class size, one flag per buffer (1: on the free list), kept beside
   * the lists so that a pop, a release and an entry's pointer are checked in O(1) (DESIGN §10.1).
   */
  #onFree = new Map<number, Uint8Array>();
  /**
   * The next entry version: one counter for the whole index, above every version on media, so a
   * version is never given twice in a server's life. A GET checks that the item it read carries
   * its entry's version; with per-slot versions, a buffer freed and reused for another key could
   * carry the same small number, and a GET holding the stale entry would take the other key's item
   * for its slot and report its own key absent (found by test/deep/kv-sigkill.test.ts).
   */
  #nextVersion = 1;
  requests = 0;
  #last: PilafRecovery | undefined;

  static format(region: PmemRegion, layout: Partial<KvLayoutOptions> = {}, options: { base?: number } = {}): KvGeometry {
    if (!(region instanceof PmemRegion)) throw new TypeError('region must be a PmemRegion');
    const base = options.base ?? 0;
    const g = computeKvGeometry(base, validateLayoutOptions(layout));
    if (base + g.totalBytes > region.sizeBytes) throw new PmrpcError(KvErrorCodes.LAYOUT_TOO_LARGE, `the KV area needs ${g.totalBytes} bytes at ${base}; the region has ${region.sizeBytes}`);
    region.fill(g.indexOffset, g.slotCount * SLOT_BYTES, 0);
    region.persist(g.indexOffset, g.slotCount * SLOT_BYTES);
    region.store(base, encodeKvHeader(g, PILAF_MAGIC));
    region.persist(base, 128);
    return g;
  }

  /** Opens the area: rebuilds the CPU free lists from the entries (validating each; an invalid one is cleared). */
  static open(region: PmemRegion, nic: Rnic, options: Partial<PilafServerOptions> = {}): PilafServer {
    if (!(region instanceof PmemRegion)) throw new TypeError('region must be a PmemRegion');
    if (nic === null || typeof nic !== 'object' || nic.region !== region) throw new TypeError('nic must be an Rnic on the same region');
    const o = resolveOptions(PILAF_SERVER_DEFAULTS, options, { base: kvBase, faults: checkPilafFaults });
    return new PilafServer(region, nic, o);
  }

  private constructor(region: PmemRegion, nic: Rnic, o: PilafServerOptions) {
    this.region = region;
    this.nic = nic;
    this.faults = Object.freeze({ ...NO_PILAF_FAULTS, ...o.faults });
    this.geometry = decodeKvHeader(region.load(o.base, 128), o.base, PILAF_MAGIC);
    this.pd = nic.allocPd();
    // FLUSH_PERSISTENT: a GET makes the index entry it read durable in the same message (DESIGN §5).
    this.mr = nic.registerMr(this.pd, o.base, this.geometry.mailboxOffset - o.base, Access.REMOTE_READ | Access.FLUSH_PERSISTENT);
    this.#mailbox = new Mailbox(nic, this.geometry, o.poller);
    this.#recover();
  }

  /** What opening the area recovered. */
  get lastRecovery(): PilafRecovery {
    return this.#last!;
  }

  get address(): { rkey: number; base: number } {
    return { rkey: this.mr.rkey, base: this.geometry.base };
  }

  accept(): ServerQp {
    return this.#mailbox.accept(this.pd, (qp, bufs, c) => this.#onRecv(qp, bufs, c));
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

  #recover(): void {
    const g = this.geometry;
    const reachable = new Set<number>();
    let rebuilt = 0;
    let cleared = 0;
    const put = (i: number, b: Uint8Array): void => {
      this.region.store(slotOffset(g, i), b);
      this.region.persist(slotOffset(g, i), SLOT_BYTES);
    };
    const rows: Record<string, number> = {};
    const tombstone = encodePilafEntry({ ptr: 0, len: 0, version: 1 });
    for (let i = 0; i < g.slotCount; i++) {
      const raw = this.region.load(slotOffset(g, i), SLOT_BYTES);
      const e = decodePilafEntry(raw);
      if (e !== 'empty' && e !== undefined) this.#nextVersion = Math.max(this.#nextVersion, e.version + 1);
      // The inputs of PILAF_SLOT_TABLE (recovery.ts). The ptr word (the first 8 bytes, persisted
      // first within the line) is the truth: a crash in the middle of an entry update leaves a new
      // ptr with an old length, version and CRC.
      const ptr = Number(new DataView(raw.buffer, raw.byteOffset).getBigUint64(0, true));
      const c = e === 'empty' || ptr === 0 ? undefined : classOf(g, ptr);
      const item = c !== undefined && !reachable.has(ptr) ? decodeItem(this.region.load(ptr, c.sizeBytes)) : undefined;
      const want = item === undefined ? undefined : { ptr, len: itemBytes(item.key.length, item.value.length), version: Number(BigInt.asUintN(32, item.version)) };
      const input: PilafSlotInput =
        e === 'empty'
          ? { entry: 'empty', pointer: 'zero', words: 'match' }
          : {
              entry: e === undefined ? 'torn' : 'valid',
              // Mutant clear-torn-entry: a torn entry's ptr word is ignored (as though it named no item).
              pointer: ptr === 0 ? 'zero' : want === undefined || (e === undefined && this.faults.clearTornEntry) ? 'no-item' : 'item',
              words: e !== undefined && want !== undefined && e.len === want.len && e.version === want.version ? 'match' : 'differ',
            };
      const row = decidePilafSlot(input);
      rows[row.id] = (rows[row.id] ?? 0) + 1;
      if (row.action === 'write-tombstone') {
        put(i, tombstone);
        cleared++;
      } else if (row.action === 'rewrite-from-item') {
        put(i, encodePilafEntry(want!));
        rebuilt++;
      }
      if (row.reaches) {
        this.#nextVersion = Math.max(this.#nextVersion, want!.version + 1);
        reachable.add(ptr);
      }
    }
    for (const c of g.classes) {
      const list: number[] = [];
      const flags = new Uint8Array(c.count);
      for (let i = c.count - 1; i >= 0; i--) {
        if (reachable.has(c.offset + i * c.sizeBytes)) continue;
        list.push(c.offset + i * c.sizeBytes);
        flags[i] = 1;
      }
      this.#free.set(c.sizeBytes, list);
      this.#onFree.set(c.sizeBytes, flags);
    }
    const reclaimed = [...this.#free.values()].reduce((a, l) => a + l.length, 0);
    this.#last = { slotsScanned: g.slotCount, entriesRebuilt: rebuilt, entriesCleared: cleared, reachable: reachable.size, reclaimed, rows };
  }

  #onRecv(qp: ServerQp, bufs: Array<{ addr: number; len: number }>, c: RecvCompletion): void {
    this.requests++;
    const b = bufs[c.recvId]!;
    let status = STATUS_BAD;
    if (c.op === 'send' && c.imm === PILAF_REQUEST_IMM && c.byteLen >= 8) {
      const req = this.region.load(c.addr, c.byteLen);
      const dv = new DataView(req.buffer);
      const op = dv.getUint8(0);
      const keyLen = dv.getUint8(1);
      const valueLen = dv.getUint32(4, true);
      if ((op === OP_PUT || op === OP_DELETE) && keyLen > 0 && 8 + keyLen + valueLen <= c.byteLen) {
        status = this.#apply(op, req.slice(8, 8 + keyLen), req.slice(8 + keyLen, 8 + keyLen + valueLen));
      }
    }
    qp.postRecv({ id: c.recvId, ...b });
    const reply = new Uint8Array(4);
    new DataView(reply.buffer).setUint32(0, status, true);
    qp.notify(reply, PILAF_REPLY_IMM);
  }

  /** The server CPU's PUT / DELETE: item, persist, entry, persist, then free the old buffer. */
  #apply(op: number, key: Uint8Array, value: Uint8Array): number {
    const g = this.geometry;
    let found = -1;
    let free = -1;
    let old: PilafEntry | undefined;
    // Group 0 first (contiguous from the home slot: nearly every key ends there), then the rest of the sequence.
    const home = homeSlot(g, key);
    const group0 = Array.from({ length: g.groupSlots }, (_, j) => home + j);
    const slots = function* (): Generator<number> {
      yield* group0;
      yield* probeSequence(g, key).slice(g.groupSlots);
    };
    for (const i of slots()) {
      const e = decodePilafEntry(this.region.load(slotOffset(g, i), SLOT_BYTES));
      if (e === 'empty' || e === undefined) {
        if (free < 0) free = i;
        break;
      }
      if (e.ptr === 0) {
        if (free < 0) free = i;
        continue;
      }
      const item = decodeItem(this.region.load(e.ptr, e.len));
      if (item !== undefined && bytesEqual(item.key, key)) {
        found = i;
        old = e;
        break;
      }
    }
    const slot = found >= 0 ? found : free;
    // The entry found names a buffer this server handed out: an item boundary of the arena that is
    // not on a free list (else the write below would publish, or the release free, a buffer
    // another key may be given).
    if (old !== undefined) this.#checkInUse(slot, old);
    if (op === OP_DELETE) {
      if (found < 0) return STATUS_OK;
      const version = this.#takeVersion();
      this.#checkVersion(slot, old!, version);
      this.region.store(slotOffset(g, slot), encodePilafEntry({ ptr: 0, len: 0, version }));
      if (!this.faults.skipEntryPersist) this.region.persist(slotOffset(g, slot), SLOT_BYTES);
      this.#release(old!.ptr);
      return STATUS_OK;
    }
    if (slot < 0) return STATUS_INDEX_FULL;
    const n = itemBytes(key.length, value.length);
    const cls = classFor(g, n);
    if (cls === undefined) return STATUS_BAD;
    const buf = this.#free.get(cls.sizeBytes)!.pop();
    if (buf === undefined) return STATUS_FULL;
    // The buffer taken is one of the class, on its free list (taken off it now), and not the one
    // the entry names now.
    const flags = this.#onFree.get(cls.sizeBytes)!;
    const bi = (buf - cls.offset) / cls.sizeBytes;
    invariant(Number.isInteger(bi) && bi >= 0 && bi < cls.count && flags[bi] === 1 && buf !== old?.ptr, () => `buffer ${buf} taken from the free list of class ${cls.sizeBytes} is ${Number.isInteger(bi) && bi >= 0 && bi < cls.count ? 'not on it' : 'not a buffer of the class'}`);
    flags[bi] = 0;
    const version = this.#takeVersion();
    if (old !== undefined) this.#checkVersion(slot, old, version);
    this.region.store(buf, encodeItem({ key, value, version: BigInt(version), tombstone: false }));
    if (!this.faults.publishBeforeItemPersist) this.region.persist(buf, n);
    this.region.store(slotOffset(g, slot), encodePilafEntry({ ptr: buf, len: n, version }));
    if (!this.faults.skipEntryPersist) this.region.persist(slotOffset(g, slot), SLOT_BYTES);
    if (this.faults.publishBeforeItemPersist) this.region.persist(buf, n); // mutant: the item only after its entry
    if (old !== undefined) this.#release(old.ptr);
    return STATUS_OK;
  }

  #takeVersion(): number {
    // u32 on media: 2^32 PUTs and DELETEs in one server life before it would wrap.
    if (this.#nextVersion > 0xffff_ffff) throw new PmrpcError(KvErrorCodes.CORRUPT, 'the entry version counter is exhausted');
    return this.#nextVersion++;
  }

  /** Frees a buffer an entry no longer names: a buffer of a class, not on its free list already (freed once). */
  #release(ptr: number): void {
    const c = classOf(this.geometry, ptr);
    invariant(c !== undefined, () => `buffer ${ptr} released is not a buffer boundary of the arena`);
    const flags = this.#onFree.get(c.sizeBytes)!;
    const i = (ptr - c.offset) / c.sizeBytes;
    invariant(flags[i] === 0, () => `buffer ${ptr} (class ${c.sizeBytes}) would be freed twice`);
    flags[i] = 1;
    this.#free.get(c.sizeBytes)!.push(ptr);
  }

  /** The entry a PUT or DELETE replaces names a buffer of the arena, its item fits it, and the buffer is not on a free list. */
  #checkInUse(slot: number, e: PilafEntry): void {
    const c = classOf(this.geometry, e.ptr);
    invariant(c !== undefined && e.len <= c.sizeBytes, () => `entry ${slot} names ${e.len} bytes at ${e.ptr}, not an item of a buffer of the arena`);
    invariant(this.#onFree.get(c.sizeBytes)![(e.ptr - c.offset) / c.sizeBytes] === 0, () => `entry ${slot} names buffer ${e.ptr}, which is on the free list of class ${c.sizeBytes}`);
  }

  /** Entry versions only grow: the one written is above the one it replaces (a GET holding the old entry must not match the new item). */
  #checkVersion(slot: number, old: PilafEntry, version: number): void {
    invariant(version > old.version, () => `entry ${slot} would go from version ${old.version} to ${version}`);
  }
}
