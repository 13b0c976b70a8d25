/**
 * The buffer-return RPC's server side, shared by PRISM-KV and PRISM-RS: the CPU's door to the NIC's
 * free lists (it posts them after recovery and asks the NIC what is on them: `Rnic.isFreeBuffer`,
 * O(1); accepted returns are posted a batch at a time, one post per size class) and the handler of an
 * epoch-stamped return batch (a SEND into the mailbox: epoch u64 | count u32 | pad | ptr u64 × count).
 * Each pointer is checked (recovery/allocator.ts checkReturn: epoch, arena, alignment, not free,
 * not reachable) before it goes back on its free list; the reply is an 8-byte notify
 * (accepted u32 | refused u32) with imm ACK, or STALE when the batch's epoch is not the server's.
 *
 * Idempotent batches (flag bit 0 of the pad word): the header goes on with the sender's id u64 and
 * its batch number u64 (numbers grow per sender), and the pointers start at byte 32. A batch whose
 * number the desk already took from that sender in this epoch is answered ACK (0, 0) and nothing
 * is freed again: a client whose connection dropped before the answer sends the batch again after
 * its reconnect, whether or not the first one was applied. The table is volatile: a restart starts
 * a new epoch, which refuses every batch of the old one anyway.
 * PRISM-TX's shard CPU gives back the items its sweep found dead through the same checks
 * (giveBack: no mailbox, the server's own epoch).
 *
 * Receipt batches (flag bit 1, "return if unreachable"): the entries are 16 bytes each (qpn u32 |
 * slot u32 | serial u64), each naming the receipt a client's chain left in the scratch of a QP whose
 * answer a dropped connection lost. The app resolves a receipt (config.resolveReceipt: it makes the
 * old QP dead first — no NIC operation of it still in flight — then reads what the chain left
 * unlinked) into pointers, which then pass the same checks as any return: a buffer a slot reaches
 * is never freed. Same epoch stamp, same numbering, same answer (PRISM-RS, docs/rs.md).
 */
import { Wr, type MemoryRegion, type NotifyMessage, type QueuePair, type RecvCompletion, type Rnic, type ServerQp } from '../../../flush/index.js';
import { invariant, type PmemRegion } from '../../../pmem/index.js';
import { checkReturn, postFreeLists, type ArenaClass, type ReturnVerdict } from '../../../recovery/index.js';
import type { MailboxBuffer } from './mailbox.js';

export interface ReturnDeskConfig {
  region: PmemRegion;
  nic: Rnic;
  mr: MemoryRegion;
  classes: readonly ArenaClass[];
  /** The size class (sizeBytes) of a buffer of the arena, or undefined. */
  classOf(ptr: number): number | undefined;
  /** Whether the index reaches this buffer (then it must not be freed). */
  isReachable(ptr: number): boolean;
  /** The imm values of a batch, the ACK and the STALE reply (a desk fed only by giveBack has no mailbox: none). */
  imms?: { batch: number; ack: number; stale: number };
  /** Test-only fault: accept a batch stamped with another epoch. */
  acceptStaleEpoch: boolean;
  /**
   * Resolves a receipt of a receipt batch into the buffers its chain left unlinked (none when the
   * desk's app has no receipts). `unchecked`: test-only fault, freed without the reachability check.
   */
  resolveReceipt?(r: { qpn: number; slot: number; serial: bigint }): { ptrs: number[]; unchecked?: boolean };
}

/** Flag bit of a return batch's pad word: the batch carries sender id and batch number (idempotent). */
export const RETURN_FLAG_IDEMPOTENT = 1;
/** Flag bit of a return batch's pad word: the entries are receipts (16 bytes each), not pointers. */
export const RETURN_FLAG_RECEIPTS = 2;
/** Header bytes of a return batch: 16, or 32 with the idempotent flag (sender id u64, batch number u64). */
export function returnHeaderBytes(idempotent: boolean): number {
  return idempotent ? 32 : 16;
}

/** Encodes a return batch (the layout of the file comment); `id` makes it idempotent. */
export function encodeReturnBatch(epoch: bigint, ptrs: readonly number[], id?: { sender: bigint; batch: bigint }): Uint8Array {
  const h = returnHeaderBytes(id !== undefined);
  const payload = new Uint8Array(h + ptrs.length * 8);
  const dv = new DataView(payload.buffer);
  dv.setBigUint64(0, epoch, true);
  dv.setUint32(8, ptrs.length, true);
  if (id !== undefined) {
    dv.setUint32(12, RETURN_FLAG_IDEMPOTENT, true);
    dv.setBigUint64(16, id.sender, true);
    dv.setBigUint64(24, id.batch, true);
  }
  ptrs.forEach((p, i) => dv.setBigUint64(h + i * 8, BigInt(p), true));
  return payload;
}

/** Encodes a receipt batch (file comment): receipts of uncertain installs, resolved by the replica. */
export function encodeReceiptBatch(epoch: bigint, receipts: ReadonlyArray<{ qpn: number; slot: number; serial: bigint }>, id?: { sender: bigint; batch: bigint }): Uint8Array {
  const h = returnHeaderBytes(id !== undefined);
  const payload = encodeReturnBatch(epoch, new Array<number>(receipts.length * 2).fill(0), id);
  const dv = new DataView(payload.buffer);
  dv.setUint32(8, receipts.length, true);
  dv.setUint32(12, dv.getUint32(12, true) | RETURN_FLAG_RECEIPTS, true);
  receipts.forEach((r, i) => {
    dv.setUint32(h + i * 16, r.qpn, true);
    dv.setUint32(h + i * 16 + 4, r.slot, true);
    dv.setBigUint64(h + i * 16 + 8, r.serial, true);
  });
  return payload;
}

export interface ReturnStats {
  returnBatches: number;
  /** Idempotent batches received again (already taken: nothing freed twice). */
  returnDuplicates: number;
  returnsAccepted: number;
  returnsRefused: Record<string, number>;
  /** Receipts resolved (receipt batches), and the buffers they named. */
  receiptsResolved: number;
  receiptBuffers: number;
}

export class ReturnDesk {
  readonly stats: ReturnStats = { returnBatches: 0, returnDuplicates: 0, returnsAccepted: 0, returnsRefused: {}, receiptsResolved: 0, receiptBuffers: 0 };
  readonly #c: ReturnDeskConfig;
  /** The size classes whose free lists the desk posted (the NIC holds the lists: membership and order are its own). */
  #sizes: number[] = [];
  /** The server's epoch; undefined until recovery posted the lists (every return is refused before). */
  #epoch: bigint | undefined;
  /** Idempotent batches: the highest batch number taken from each sender in this epoch. */
  #taken = new Map<bigint, bigint>();
  /** The last pointer config.isReachable said no slot reaches (so the invariant at the post needs no second walk). */
  #unreached = -1;
  readonly #isReachable = (p: number): boolean => {
    const r = this.#c.isReachable(p);
    if (!r) this.#unreached = p;
    return r;
  };

  constructor(config: ReturnDeskConfig) {
    this.#c = config;
  }

  /** After recovery: posts the rebuilt free lists to the NIC (accepting ALLOCATE) and takes returns of `epoch`. */
  open(free: ReadonlyMap<number, readonly number[]>, epoch: bigint): void {
    this.#sizes = [...free.keys()];
    postFreeLists(this.#c.nic, this.#c.mr, free);
    this.#epoch = epoch;
    this.#taken.clear();
  }

  /** The NIC's current free lists. */
  freeLists(): Map<number, number[]> {
    const out = new Map<number, number[]>();
    for (const size of this.#sizes) out.set(size, this.#c.nic.freeBuffers(this.#c.mr, size));
    return out;
  }

  /** The mailbox's receive handler. */
  onRecv(qp: ServerQp, bufs: MailboxBuffer[], c: RecvCompletion): void {
    const b = bufs[c.recvId]!;
    const reply = new Uint8Array(8);
    const imms = this.#c.imms ?? { batch: -1, ack: 0, stale: 0 };
    let imm = imms.stale;
    if (c.op === 'send' && c.imm === imms.batch && c.byteLen >= 16) {
      const msg = this.#c.region.load(c.addr, c.byteLen);
      const dv = new DataView(msg.buffer);
      const epoch = dv.getBigUint64(0, true);
      const count = dv.getUint32(8, true);
      const flags = dv.getUint32(12, true);
      const idempotent = (flags & RETURN_FLAG_IDEMPOTENT) !== 0;
      const receipts = (flags & RETURN_FLAG_RECEIPTS) !== 0;
      const h = returnHeaderBytes(idempotent);
      if (h + count * (receipts ? 16 : 8) <= c.byteLen) {
        const id = idempotent ? { sender: dv.getBigUint64(16, true), batch: dv.getBigUint64(24, true) } : undefined;
        const entries = (): { ptrs: number[]; unchecked: boolean } => {
          const ptrs: number[] = [];
          if (!receipts) {
            for (let i = 0; i < count; i++) ptrs.push(Number(dv.getBigUint64(h + i * 8, true)));
            return { ptrs, unchecked: false };
          }
          let unchecked = false;
          for (let i = 0; i < count; i++) {
            const got = this.#c.resolveReceipt?.({ qpn: dv.getUint32(h + i * 16, true), slot: dv.getUint32(h + i * 16 + 4, true), serial: dv.getBigUint64(h + i * 16 + 8, true) });
            this.stats.receiptsResolved++;
            if (got === undefined) continue;
            ptrs.push(...got.ptrs);
            this.stats.receiptBuffers += got.ptrs.length;
            unchecked ||= got.unchecked === true;
          }
          return { ptrs, unchecked };
        };
        const { accepted, refused } = this.#acceptOnce(epoch, entries, id, receipts ? count : 0);
        new DataView(reply.buffer).setUint32(0, accepted, true);
        new DataView(reply.buffer).setUint32(4, refused, true);
        if (epoch === this.#epoch || this.#c.acceptStaleEpoch) imm = imms.ack;
      }
    }
    qp.postRecv({ id: c.recvId, ...b });
    qp.notify(reply, imm);
  }

  /**
   * The server CPU's own returns (PRISM-TX's sweep of dead items): the same checks as a batch
   * stamped with the current epoch (arena, alignment, not free, not reachable), the accepted ones
   * posted in one batch; `onAccepted` runs for each of them right after the post (same synchronous
   * step: no ALLOCATE in between). Refused before open().
   */
  giveBack(ptrs: readonly number[], onAccepted?: (ptr: number) => void): { accepted: number; refused: number } {
    return this.#accept(this.#epoch ?? -1n, ptrs, false, onAccepted);
  }

  /**
   * An idempotent batch is taken once per epoch (a duplicate frees nothing); others as they come.
   * A receipt batch is resolved only when it is taken, and only in the desk's epoch.
   */
  #acceptOnce(epoch: bigint, entries: () => { ptrs: number[]; unchecked: boolean }, id: { sender: bigint; batch: bigint } | undefined, receipts: number): { accepted: number; refused: number } {
    const take = (): { accepted: number; refused: number } => {
      // Receipts of another epoch are never resolved: they name QPs of another NIC incarnation (numbers restart).
      if (receipts > 0 && (this.#epoch === undefined || epoch !== this.#epoch)) {
        this.stats.returnBatches++;
        this.stats.returnsRefused['stale-epoch'] = (this.stats.returnsRefused['stale-epoch'] ?? 0) + receipts;
        return { accepted: 0, refused: receipts };
      }
      const { ptrs, unchecked } = entries();
      return this.#accept(epoch, ptrs, unchecked);
    };
    if (id === undefined || this.#epoch === undefined || epoch !== this.#epoch) return take();
    const last = this.#taken.get(id.sender);
    if (last !== undefined && id.batch <= last) {
      this.stats.returnDuplicates++;
      return { accepted: 0, refused: 0 };
    }
    this.#taken.set(id.sender, id.batch);
    return take();
  }

  /**
   * Checks each pointer of a batch and posts the accepted ones to their free lists, one post per
   * size class for the whole batch (a pointer twice in a batch: the second is already free).
   * `onAccepted` runs for each accepted pointer after the post, in the same synchronous step.
   */
  #accept(epoch: bigint, ptrs: readonly number[], unchecked: boolean, onAccepted?: (ptr: number) => void): { accepted: number; refused: number } {
    this.stats.returnBatches++;
    let accepted = 0;
    let refused = 0;
    const { nic, mr } = this.#c;
    /** Accepted in this batch, by size class: posted at the end. */
    const posts = new Map<number, number[]>();
    const inBatch = new Set<number>();
    const isFree = (p: number): boolean => {
      const size = this.#c.classOf(p);
      return size !== undefined && (inBatch.has(p) || nic.isFreeBuffer(mr, size, p));
    };
    const isReachable = (p: number): boolean => !unchecked && this.#isReachable(p);
    for (const ptr of ptrs) {
      this.#unreached = -1;
      const v: ReturnVerdict =
        this.#epoch !== undefined ? checkReturn({ epoch, ptr }, { epoch: this.#epoch, classes: this.#c.classes, isFree, isReachable }, { acceptStaleEpoch: this.#c.acceptStaleEpoch }) : 'stale-epoch';
      if (v !== 'ok') {
        refused++;
        this.stats.returnsRefused[v] = (this.stats.returnsRefused[v] ?? 0) + 1;
        continue;
      }
      // Free-list membership: a buffer goes back only when no slot reaches it (DESIGN §10.1). The
      // checks above asked the index already; only a path that skipped them (a mutant's) asks again.
      invariant(this.#unreached === ptr || !this.#c.isReachable(ptr), () => `returned buffer ${ptr} would go back on a free list while a slot reaches it`);
      const size = this.#c.classOf(ptr)!;
      let list = posts.get(size);
      if (list === undefined) posts.set(size, (list = []));
      list.push(ptr);
      inBatch.add(ptr);
      accepted++;
      this.stats.returnsAccepted++;
    }
    for (const [size, list] of posts) nic.postFreeBuffers(mr, size, list);
    if (onAccepted !== undefined) for (const list of posts.values()) for (const p of list) onAccepted(p);
    return { accepted, refused };
  }
}

export interface ReturnSenderConfig {
  /** The imm of a batch, of the ACK and of the STALE reply. */
  imms: { batch: number; ack: number; stale: number };
  /** Pointers one batch carries (what the server's mailbox buffer holds behind the idempotent header). */
  batchMax: number;
  /** The client's sender id in its batches (unique among the server's clients). */
  sender: bigint;
  /** Test-only fault (mutant drop-unanswered-returns): batches carry no id, and one whose answer never came is dropped, not sent again. */
  dropUnanswered: boolean;
  /** Called with each batch sent (the crash suites replay old ones after a crash). */
  onBatch: ((payload: Uint8Array) => void) | undefined;
  /** Receipts one batch carries (PRISM-RS's uncertain installs; 0 or absent: this sender holds none). */
  receiptBatchMax?: number;
}

/** An install chain's receipt (PRISM-RS): the old QP, its scratch receipt slot and the chain's serial. */
export interface ReturnReceipt {
  qpn: number;
  slot: number;
  serial: bigint;
}

/** What one flush() got back. */
export interface ReturnRound {
  accepted: number;
  refused: number;
  /** The server answered STALE (it restarted): every held buffer was forgotten (its recovery reclaimed them). */
  stale: boolean;
  /** An answer that is neither ACK nor STALE (its imm). */
  unexpected: number | undefined;
  /** Receipts the server answered (it resolved each: freed what the chain left unlinked). */
  receiptsResolved: number;
}

/**
 * The client side of the buffer-return RPC, shared by PRISM-KV and PRISM-RS (one per client and
 * server): it holds replaced buffers, sends them in epoch-stamped, numbered batches (idempotent, see
 * the file comment), one at a time, and keeps a batch whose answer did not come (the connection
 * dropped: the server may or may not have taken it) to send again, same number, on the next
 * connection of the same epoch. A new epoch (the server restarted, its recovery reclaimed every
 * unlinked buffer) forgets everything held.
 */
export class ReturnSender {
  readonly stats = { rpcs: 0, accepted: 0, refused: 0 };
  readonly #c: ReturnSenderConfig;
  #qp: QueuePair | undefined;
  #epoch: bigint | undefined;
  #pending: number[] = [];
  #receipts: ReturnReceipt[] = [];
  #unacked: { batch: bigint; ptrs: number[]; receipts: ReturnReceipt[] } | undefined;
  #batches = 0n;
  #returning: Promise<ReturnRound> | undefined;
  #waiter: { resolve: (m: NotifyMessage) => void; reject: (e: Error) => void } | undefined;

  constructor(config: ReturnSenderConfig) {
    this.#c = config;
  }

  /** Sends on `qp` from now on; a different `epoch` than the last connection's forgets what is held. */
  attach(qp: QueuePair, epoch: bigint): void {
    if (this.#epoch !== undefined && epoch !== this.#epoch) this.forget();
    this.#epoch = epoch;
    this.#qp = qp;
    qp.onNotify((m) => {
      if (this.#qp !== qp) return;
      const w = this.#waiter;
      this.#waiter = undefined;
      w?.resolve(m);
    });
    qp.onClose((err) => {
      if (this.#qp !== qp) return;
      const w = this.#waiter;
      this.#waiter = undefined;
      w?.reject(err);
    });
  }

  /** The server's epoch as learned again on the same connection: a different one forgets what is held. */
  renew(epoch: bigint): void {
    if (epoch !== this.#epoch) this.forget();
    this.#epoch = epoch;
  }

  /** Buffers held and not yet in a batch. */
  get pending(): number {
    return this.#pending.length;
  }

  /** Buffers and receipts held, an unanswered batch's included. */
  get held(): number {
    return this.#pending.length + this.receiptsHeld + (this.#unacked?.ptrs.length ?? 0);
  }

  /** Receipts held, an unanswered batch's included. */
  get receiptsHeld(): number {
    return this.#receipts.length + (this.#unacked?.receipts.length ?? 0);
  }

  /** Whether a batch was sent whose answer never came (sent again on the next connection). */
  get unanswered(): boolean {
    return this.#unacked !== undefined;
  }

  /** Whether a flush() is running. */
  get busy(): boolean {
    return this.#returning !== undefined;
  }

  push(ptr: number): void {
    this.#pending.push(ptr);
  }

  /** Holds an uncertain install's receipt (sent before any pointer, on the next connection). */
  pushReceipt(receipt: ReturnReceipt): void {
    this.#receipts.push(receipt);
  }

  /** Drops every held buffer (the server restarted: its recovery reclaimed them). */
  forget(): void {
    this.#pending = [];
    this.#receipts = [];
    this.#unacked = undefined;
  }

  /** Sends what is held while the connection is up (a batch at a time). Never throws: a batch the connection lost stays held. */
  async flush(): Promise<ReturnRound> {
    while (this.#returning !== undefined) await this.#returning.catch(() => undefined);
    this.#returning = this.#run();
    try {
      return await this.#returning;
    } finally {
      this.#returning = undefined;
    }
  }

  async #run(): Promise<ReturnRound> {
    const out: ReturnRound = { accepted: 0, refused: 0, stale: false, unexpected: undefined, receiptsResolved: 0 };
    for (;;) {
      const qp = this.#qp;
      if ((this.#unacked === undefined && this.#pending.length === 0 && this.#receipts.length === 0) || qp === undefined || qp.link.closed === true || qp.state === 'error') return out;
      // Receipts first (the server resolves each: frees what its chain left unlinked), then pointers.
      const b = (this.#unacked ??=
        this.#receipts.length > 0
          ? { batch: ++this.#batches, ptrs: [], receipts: this.#receipts.splice(0, Math.max(1, Math.min(this.#c.receiptBatchMax ?? 1, this.#receipts.length))) }
          : { batch: ++this.#batches, ptrs: this.#pending.splice(0, Math.min(this.#c.batchMax, this.#pending.length)), receipts: [] });
      const id = this.#c.dropUnanswered ? undefined : { sender: this.#c.sender, batch: b.batch };
      const payload = b.receipts.length > 0 ? encodeReceiptBatch(this.#epoch!, b.receipts, id) : encodeReturnBatch(this.#epoch!, b.ptrs, id);
      this.#c.onBatch?.(payload);
      const reply = new Promise<NotifyMessage>((resolve, reject) => (this.#waiter = { resolve, reject }));
      reply.catch(() => undefined);
      this.stats.rpcs++;
      let m: NotifyMessage;
      try {
        const [c] = await qp.postChain([Wr.send(payload, this.#c.imms.batch)]);
        if (c?.status === 'error' || this.#qp !== qp) throw new Error('not sent');
        m = await reply;
      } catch {
        // The answer did not come: sent again after the reconnect (the mutant drops it, as before idempotent batches).
        if (this.#c.dropUnanswered && this.#unacked === b) this.#unacked = undefined;
        return out;
      }
      if (this.#unacked === b) this.#unacked = undefined;
      const rdv = new DataView(m.data.buffer, m.data.byteOffset, m.data.byteLength);
      const accepted = m.data.length >= 8 ? rdv.getUint32(0, true) : 0;
      const refused = m.data.length >= 8 ? rdv.getUint32(4, true) : b.ptrs.length;
      out.accepted += accepted;
      out.refused += refused;
      this.stats.accepted += accepted;
      this.stats.refused += refused;
      if (m.imm === this.#c.imms.stale) {
        this.forget();
        out.stale = true;
        return out;
      }
      out.receiptsResolved += b.receipts.length;
      if (m.imm !== this.#c.imms.ack) {
        out.unexpected = m.imm;
        return out;
      }
    }
  }
}
