/**
 * The Pilaf-style baseline (Mitchell et al., ATC'13) on the same emulator, for the comparison of
 * DESIGN §5 / §9. GET is one-sided: READ the key's index entry, then READ the item extent it
 * names; self-verifying checksums (CRC32C here, CRC64 in Pilaf) on the entry and on the item
 * detect a read racing with the server's writes, and the client retries. PUT and DELETE are RPCs
 * to the server CPU.
 *
 * The durable RPC layer (src/rpc) is not used: a PUT is a SEND into a receive buffer the server
 * posted; the server CPU (a CpuPoller, as flush/strategies.ts' gpspm server) writes the item,
 * persists it, writes the entry, persists it, frees the old buffer, and replies with qp.notify.
 *
 * Layout: the KV area of layout.ts with PILAF_MAGIC; a slot is an entry
 *   +0 ptr u64 (0: never used)  +8 itemLen u32  +12 version u32  +16 crc32c u32 over [0, 16)
 * A deleted key leaves ptr 0 with a non-zero version (a tombstone: probing goes on past it).
 * Items use PRISM-KV's item format. The server CPU is the only writer, so no CAS is needed.
 */
import { CpuPoller, QueuePair, Wr, type MemoryRegion, type RecvCompletion, type Rnic, type ServerQp, type WorkRequest } from '../../../flush/index.js';
import { Access } from '../../../flush/index.js';
import { crc32c, PmemRegion, PmrpcError, resolveOptions, type ErrorCode } from '../../../pmem/index.js';
import { kvBase } from './checks.js';
import { Mailbox, type MailboxStats } from '../shared/index.js';
import {
  KV_HEADER_BYTES,
  KvErrorCodes,
  MAILBOX_BUFFER_BYTES,
  PILAF_MAGIC,
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
  probeSequence,
  probeStages,
  slotOffset,
  slotRuns,
  validateLayoutOptions,
  type KvGeometry,
  type KvLayoutOptions,
} from './layout.js';

export const PILAF_REQUEST_IMM = 0x504c_0001;
export const PILAF_REPLY_IMM = 0x504c_0002;
const OP_PUT = 1;
const OP_DELETE = 2;
const STATUS_OK = 0;
const STATUS_FULL = 1;
const STATUS_INDEX_FULL = 2;
const STATUS_BAD = 3;

interface Entry {
  ptr: number;
  len: number;
  version: number;
}

export function encodePilafEntry(e: Entry): Uint8Array {
  const b = new Uint8Array(SLOT_BYTES);
  const dv = new DataView(b.buffer);
  dv.setBigUint64(0, BigInt(e.ptr), true);
  dv.setUint32(8, e.len, true);
  dv.setUint32(12, e.version, true);
  dv.setUint32(16, crc32c(b.subarray(0, 16)), true);
  return b;
}

/** The entry, 'empty' (never used), or undefined when its checksum fails (torn by a concurrent write). */
export function decodePilafEntry(b: Uint8Array, off = 0): Entry | 'empty' | undefined {
  const dv = new DataView(b.buffer, b.byteOffset + off, SLOT_BYTES);
  const ptr = dv.getBigUint64(0, true);
  const len = dv.getUint32(8, true);
  const version = dv.getUint32(12, true);
  if (ptr === 0n && len === 0 && version === 0 && dv.getUint32(16, true) === 0) return 'empty';
  if (dv.getUint32(16, true) !== crc32c(b, off, off + 16)) return undefined;
  return { ptr: Number(ptr), len, version };
}

export interface PilafServerOptions {
  base: number;
  poller: CpuPoller | undefined;
}

export const PILAF_SERVER_DEFAULTS: Readonly<PilafServerOptions> = Object.freeze({ base: 0, poller: undefined });

export class PilafServer {
  readonly region: PmemRegion;
  readonly nic: Rnic;
  readonly geometry: KvGeometry;
  readonly mr: MemoryRegion;
  readonly pd: ReturnType<Rnic['allocPd']>;
  #mailbox: Mailbox;
  /** CPU free lists per class size. */
  #free = new Map<number, number[]>();
  /**
   * The next entry version: one counter for the whole index, above every version on media, so a
   * version is never given twice in a server's life. A GET checks that the item it read carries
   * its entry's version; with per-slot versions, a buffer freed and reused for another key could
   * carry the same small number, and a GET holding the stale entry would take the other key's item
   * for its slot and report its own key absent (found by test/deep/kv-sigkill.test.ts).
   */
  #nextVersion = 1;
  requests = 0;

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
    const o = resolveOptions(PILAF_SERVER_DEFAULTS, options, { base: kvBase });
    return new PilafServer(region, nic, o);
  }

  private constructor(region: PmemRegion, nic: Rnic, o: PilafServerOptions) {
    this.region = region;
    this.nic = nic;
    this.geometry = decodeKvHeader(region.load(o.base, 128), o.base, PILAF_MAGIC);
    this.pd = nic.allocPd();
    // FLUSH_PERSISTENT: a GET makes the index entry it read durable in the same message (DESIGN §5).
    this.mr = nic.registerMr(this.pd, o.base, this.geometry.mailboxOffset - o.base, Access.REMOTE_READ | Access.FLUSH_PERSISTENT);
    this.#mailbox = new Mailbox(nic, this.geometry, o.poller);
    this.#recover();
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
    const put = (i: number, b: Uint8Array): void => {
      this.region.store(slotOffset(g, i), b);
      this.region.persist(slotOffset(g, i), SLOT_BYTES);
    };
    for (let i = 0; i < g.slotCount; i++) {
      const raw = this.region.load(slotOffset(g, i), SLOT_BYTES);
      const e = decodePilafEntry(raw);
      if (e !== 'empty' && e !== undefined) this.#nextVersion = Math.max(this.#nextVersion, e.version + 1);
      if (e === 'empty' || (e !== undefined && e.ptr === 0)) continue;
      // The ptr word (the first 8 bytes, persisted first within the line) is the truth: a crash
      // in the middle of an entry update leaves a new ptr with an old length, version and CRC.
      const ptr = Number(new DataView(raw.buffer).getBigUint64(0, true));
      if (ptr === 0) {
        put(i, encodePilafEntry({ ptr: 0, len: 0, version: 1 })); // a torn DELETE: the tombstone
        continue;
      }
      const c = classOf(g, ptr);
      const item = c !== undefined && !reachable.has(ptr) ? decodeItem(this.region.load(ptr, c.sizeBytes)) : undefined;
      if (item === undefined) {
        put(i, encodePilafEntry({ ptr: 0, len: 0, version: 1 })); // keeps probing going past it
        continue;
      }
      this.#nextVersion = Math.max(this.#nextVersion, Number(BigInt.asUintN(32, item.version)) + 1);
      const want = encodePilafEntry({ ptr, len: itemBytes(item.key.length, item.value.length), version: Number(BigInt.asUintN(32, item.version)) });
      if (e === undefined || e.len !== itemBytes(item.key.length, item.value.length) || e.version !== Number(BigInt.asUintN(32, item.version))) put(i, want);
      reachable.add(ptr);
    }
    for (const c of g.classes) {
      const list: number[] = [];
      for (let i = c.count - 1; i >= 0; i--) if (!reachable.has(c.offset + i * c.sizeBytes)) list.push(c.offset + i * c.sizeBytes);
      this.#free.set(c.sizeBytes, list);
    }
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
    let old: Entry | undefined;
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
    if (op === OP_DELETE) {
      if (found < 0) return STATUS_OK;
      this.region.store(slotOffset(g, slot), encodePilafEntry({ ptr: 0, len: 0, version: this.#takeVersion() }));
      this.region.persist(slotOffset(g, slot), SLOT_BYTES);
      this.#release(old!.ptr);
      return STATUS_OK;
    }
    if (slot < 0) return STATUS_INDEX_FULL;
    const n = itemBytes(key.length, value.length);
    const cls = classFor(g, n);
    if (cls === undefined) return STATUS_BAD;
    const buf = this.#free.get(cls.sizeBytes)!.pop();
    if (buf === undefined) return STATUS_FULL;
    const version = this.#takeVersion();
    this.region.store(buf, encodeItem({ key, value, version: BigInt(version), tombstone: false }));
    this.region.persist(buf, n);
    this.region.store(slotOffset(g, slot), encodePilafEntry({ ptr: buf, len: n, version }));
    this.region.persist(slotOffset(g, slot), SLOT_BYTES);
    if (old !== undefined) this.#release(old.ptr);
    return STATUS_OK;
  }

  #takeVersion(): number {
    // u32 on media: 2^32 PUTs and DELETEs in one server life before it would wrap.
    if (this.#nextVersion > 0xffff_ffff) throw new PmrpcError(KvErrorCodes.CORRUPT, 'the entry version counter is exhausted');
    return this.#nextVersion++;
  }

  #release(ptr: number): void {
    const c = classOf(this.geometry, ptr);
    if (c !== undefined) this.#free.get(c.sizeBytes)!.push(ptr);
  }
}

export interface PilafClientStats {
  roundTrips: number;
  lastOpRoundTrips: number;
  readRetries: number;
}

const encoder = new TextEncoder();

export class PilafClient {
  readonly qp: QueuePair;
  readonly rkey: number;
  readonly geometry: KvGeometry;
  readonly readRetriesMax: number;
  #stats: PilafClientStats = { roundTrips: 0, lastOpRoundTrips: 0, readRetries: 0 };
  #op = 0;
  #waiter: { resolve: (status: number) => void; reject: (e: Error) => void } | undefined;
  #busy: Promise<unknown> | undefined;

  /** `getWithoutFlush` (test-only): the GET's entry READs carry no FLUSH (the dirty read of DESIGN §5 comes back). */
  static async connect(qp: QueuePair, address: { rkey: number; base: number }, options: { readRetriesMax?: number; getWithoutFlush?: boolean } = {}): Promise<PilafClient> {
    if (!(qp instanceof QueuePair)) throw new TypeError('qp must be a QueuePair');
    const h = await qp.read({ rkey: address.rkey, addr: address.base }, KV_HEADER_BYTES);
    return new PilafClient(qp, address.rkey, decodeKvHeader(h, address.base, PILAF_MAGIC), options.readRetriesMax ?? 8, options.getWithoutFlush === true);
  }

  readonly getWithoutFlush: boolean;

  private constructor(qp: QueuePair, rkey: number, g: KvGeometry, readRetriesMax: number, getWithoutFlush: boolean) {
    this.qp = qp;
    this.rkey = rkey;
    this.geometry = g;
    this.readRetriesMax = readRetriesMax;
    this.getWithoutFlush = getWithoutFlush;
    qp.onNotify((m) => {
      const w = this.#waiter;
      this.#waiter = undefined;
      w?.resolve(m.data.length >= 4 ? new DataView(m.data.buffer, m.data.byteOffset).getUint32(0, true) : STATUS_BAD);
    });
    // A reply that will never come (the connection died after the SEND completed) must not hang the caller.
    qp.onClose((err) => {
      const w = this.#waiter;
      this.#waiter = undefined;
      w?.reject(err);
    });
  }

  get stats(): Readonly<PilafClientStats> {
    return { ...this.#stats };
  }

  async get(key: string | Uint8Array): Promise<Uint8Array | undefined> {
    const k = this.#key(key);
    this.#op = 0;
    try {
      const g = this.geometry;
      let seq: number[] | undefined; // computed only past the home slot
      const stages = probeStages(g.probeSlots, g.groupSlots);
      for (let attempt = 0; attempt <= this.readRetriesMax; attempt++) {
        if (attempt > 0) this.#stats.readRetries++;
        // Home entry first (the common case: no collision), then the rest of the probe sequence
        // in PRISM-KV's stages (kv/layout.ts probeStages), one message each. Each entry READ
        // carries a FLUSH(persistent) of what it read, so a GET never returns an entry the server
        // CPU has stored but not yet persisted (visible before durable, DESIGN §2.1): a crash
        // could take it back (DESIGN §5). The item needs none: the server persists it before it
        // stores the entry that points at it.
        let r: 'retry' | 'absent' | 'next' | { value: Uint8Array } = 'next';
        for (const [from, to] of stages) {
          if (from === 0) r = await this.#scan(k, [decodePilafEntry(await this.#read(slotOffset(g, homeSlot(g, k)), SLOT_BYTES, true))]);
          else {
            seq ??= probeSequence(g, k);
            if (from >= seq.length) break;
            r = await this.#scan(k, await this.#readEntries(seq.slice(from, to)));
          }
          if (r !== 'next') break;
        }
        if (r === 'retry') continue;
        return r === 'next' || r === 'absent' ? undefined : r.value;
      }
      throw new PmrpcError(KvErrorCodes.CORRUPT, `the entry or item of key ${Buffer.from(k).toString('hex')} failed its checksum ${this.readRetriesMax + 1} times`);
    } finally {
      this.#stats.lastOpRoundTrips = this.#op;
    }
  }

  async #scan(k: Uint8Array, entries: Array<Entry | 'empty' | undefined>): Promise<'retry' | 'absent' | 'next' | { value: Uint8Array }> {
    for (const e of entries) {
      if (e === undefined) return 'retry';
      if (e === 'empty') return 'absent';
      if (e.ptr === 0) continue;
      const item = decodeItem(await this.#read(e.ptr, e.len));
      if (item === undefined || item.version !== BigInt(e.version)) return 'retry'; // the extent changed under us
      if (bytesEqual(item.key, k)) return { value: item.value };
    }
    return 'next';
  }

  async put(key: string | Uint8Array, value: Uint8Array): Promise<void> {
    const k = this.#key(key);
    if (!(value instanceof Uint8Array)) throw new TypeError('value must be a Uint8Array');
    const max = this.geometry.classes[this.geometry.classes.length - 1]!.sizeBytes;
    if (itemBytes(k.length, value.length) > max || 8 + k.length + value.length > MAILBOX_BUFFER_BYTES) {
      throw new PmrpcError(KvErrorCodes.VALUE_TOO_LARGE, `an item of ${itemBytes(k.length, value.length)} bytes exceeds what a PUT can carry`);
    }
    await this.#rpc(OP_PUT, k, value);
  }

  async delete(key: string | Uint8Array): Promise<void> {
    await this.#rpc(OP_DELETE, this.#key(key), new Uint8Array(0));
  }

  async #rpc(op: number, k: Uint8Array, value: Uint8Array): Promise<void> {
    while (this.#busy !== undefined) await this.#busy;
    this.#op = 1;
    const run = async (): Promise<void> => {
      const req = new Uint8Array(8 + k.length + value.length);
      const dv = new DataView(req.buffer);
      dv.setUint8(0, op);
      dv.setUint8(1, k.length);
      dv.setUint32(4, value.length, true);
      req.set(k, 8);
      req.set(value, 8 + k.length);
      const reply = new Promise<number>((resolve, reject) => (this.#waiter = { resolve, reject }));
      reply.catch(() => undefined); // awaited below unless the SEND itself fails
      this.#stats.roundTrips++;
      const [c] = await this.qp.postChain([Wr.send(req, PILAF_REQUEST_IMM)]);
      if (c!.status !== 'ok') throw new PmrpcError((c!.code ?? 'PMRPC_ERR_WR_FAILED') as ErrorCode, `PUT request: ${c!.message ?? c!.status}`);
      const status = await reply;
      if (status === STATUS_FULL) throw new PmrpcError(KvErrorCodes.FULL, 'the server has no free buffer of that size');
      if (status === STATUS_INDEX_FULL) throw new PmrpcError(KvErrorCodes.INDEX_FULL, 'every slot of the probe window belongs to another key');
      if (status !== STATUS_OK) throw new PmrpcError(KvErrorCodes.CORRUPT, `the server refused the request (status ${status})`);
    };
    const p = run();
    this.#busy = p.catch(() => undefined);
    try {
      await p;
    } finally {
      this.#busy = undefined;
      this.#stats.lastOpRoundTrips = this.#op;
    }
  }

  #key(key: string | Uint8Array): Uint8Array {
    const k = typeof key === 'string' ? encoder.encode(key) : key;
    if (!(k instanceof Uint8Array)) throw new TypeError('key must be a string or a Uint8Array');
    if (k.length === 0 || k.length > this.geometry.keyBytesMax) throw new PmrpcError(KvErrorCodes.KEY_TOO_LONG, `a key holds 1..${this.geometry.keyBytesMax} bytes, got ${k.length}`);
    return k;
  }

  /** The entries of `slots` (in that order): one message, a READ and a FLUSH(persistent) per run of contiguous slots. */
  async #readEntries(slots: number[]): Promise<Array<Entry | 'empty' | undefined>> {
    const g = this.geometry;
    const runs = slotRuns(slots);
    this.#stats.roundTrips++;
    this.#op++;
    const wrs: WorkRequest[] = [];
    for (const r of runs) {
      const at = { addr: slotOffset(g, r.first), len: r.count * SLOT_BYTES };
      wrs.push(Wr.read({ rkey: this.rkey, addr: at.addr }, at.len));
      if (!this.getWithoutFlush) wrs.push(Wr.flush('persistent', this.rkey, at));
    }
    const cs = await this.qp.postChain(wrs);
    const bytes = new Map<number, Uint8Array>();
    cs.forEach((c, j) => {
      if (c.status !== 'ok') throw new PmrpcError((c.code ?? 'PMRPC_ERR_WR_FAILED') as ErrorCode, `${c.op}: ${c.message ?? c.status}`);
      if (c.op === 'read') bytes.set(runs[this.getWithoutFlush ? j : j / 2]!.first, c.data!);
    });
    return slots.map((s) => {
      const run = runs.find((r) => s >= r.first && s < r.first + r.count)!;
      return decodePilafEntry(bytes.get(run.first)!, (s - run.first) * SLOT_BYTES);
    });
  }

  #read(addr: number, len: number, durable = false): Promise<Uint8Array> {
    this.#stats.roundTrips++;
    this.#op++;
    const wrs: WorkRequest[] = [Wr.read({ rkey: this.rkey, addr }, len)];
    if (durable && !this.getWithoutFlush) wrs.push(Wr.flush('persistent', this.rkey, { addr, len }));
    return this.qp.postChain(wrs).then(([c, f]) => {
      if (f !== undefined && f.status !== 'ok') throw new PmrpcError((f.code ?? 'PMRPC_ERR_WR_FAILED') as ErrorCode, `FLUSH: ${f.message ?? f.status}`);
      if (c!.status !== 'ok') throw new PmrpcError((c!.code ?? 'PMRPC_ERR_WR_FAILED') as ErrorCode, `READ: ${c!.message ?? c!.status}`);
      return c!.data!;
    });
  }
}
