/**
 * The Pilaf-style baseline's client (DESIGN §5 / §9). GET is one-sided: READ the key's index entry,
 * then READ the item extent it names; self-verifying checksums (CRC32C here, CRC64 in Pilaf) on
 * the entry and on the item detect a read racing with the server's writes, and the client
 * retries. PUT and DELETE are RPCs to the server CPU (server.ts).
 */
import { QueuePair, Wr, type WorkRequest } from '../../../flush/index.js';
import { PmrpcError, type ErrorCode } from '../../../pmem/index.js';
import { KV_HEADER_BYTES, KvErrorCodes, MAILBOX_BUFFER_BYTES, SLOT_BYTES, bytesEqual, decodeItem, decodeKvHeader, homeSlot, itemBytes, probeSequence, probeStages, slotOffset, slotRuns, type KvGeometry } from '../shared/index.js';
import { decodePilafEntry, OP_DELETE, OP_PUT, PILAF_MAGIC, PILAF_REQUEST_IMM, STATUS_BAD, STATUS_FULL, STATUS_INDEX_FULL, STATUS_OK, type PilafEntry } from './layout.js';

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
        // in PRISM-KV's stages (shared/kv-area.ts probeStages), one message each. Each entry READ
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

  async #scan(k: Uint8Array, entries: Array<PilafEntry | 'empty' | undefined>): Promise<'retry' | 'absent' | 'next' | { value: Uint8Array }> {
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
  async #readEntries(slots: number[]): Promise<Array<PilafEntry | 'empty' | undefined>> {
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
