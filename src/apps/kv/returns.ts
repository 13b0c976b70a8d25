/**
 * The buffer-return RPC's server side, shared by PRISM-KV and PRISM-RS: a mirror of the NIC's free
 * lists (what the CPU posted, less what ALLOCATE popped from the front) and the handler of an
 * epoch-stamped return batch (a SEND into the mailbox: epoch u64 | count u32 | pad | ptr u64 × count).
 * Each pointer is checked (recovery/allocator.ts checkReturn: epoch, arena, alignment, not free,
 * not reachable) before it goes back on its free list; the reply is an 8-byte notify
 * (accepted u32 | refused u32) with imm ACK, or STALE when the batch's epoch is not the server's.
 * PRISM-TX's shard CPU gives back the items its sweep found dead through the same checks
 * (giveBack: no mailbox, the server's own epoch).
 */
import type { MemoryRegion, RecvCompletion, Rnic, ServerQp } from '../../../flush/index.js';
import type { PmemRegion } from '../../../pmem/index.js';
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
}

export interface ReturnStats {
  returnBatches: number;
  returnsAccepted: number;
  returnsRefused: Record<string, number>;
}

export class ReturnDesk {
  readonly stats: ReturnStats = { returnBatches: 0, returnsAccepted: 0, returnsRefused: {} };
  readonly #c: ReturnDeskConfig;
  #posted = new Map<number, { list: number[]; head: number; members: Set<number> }>();
  /** The server's epoch; undefined until recovery posted the lists (every return is refused before). */
  #epoch: bigint | undefined;

  constructor(config: ReturnDeskConfig) {
    this.#c = config;
  }

  /** After recovery: posts the rebuilt free lists to the NIC (accepting ALLOCATE), mirrors them, and takes returns of `epoch`. */
  open(free: ReadonlyMap<number, readonly number[]>, epoch: bigint): void {
    this.#posted = new Map([...free].map(([k, v]) => [k, { list: [...v], head: 0, members: new Set(v) }]));
    postFreeLists(this.#c.nic, this.#c.mr, free);
    this.#epoch = epoch;
  }

  /** The NIC's current free lists. */
  freeLists(): Map<number, number[]> {
    const out = new Map<number, number[]>();
    for (const [size, m] of this.#sync()) out.set(size, m.list.slice(m.head));
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
      if (16 + count * 8 <= c.byteLen) {
        const ptrs: number[] = [];
        for (let i = 0; i < count; i++) ptrs.push(Number(dv.getBigUint64(16 + i * 8, true)));
        const { accepted, refused } = this.#accept(epoch, ptrs);
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
   * stamped with the current epoch (arena, alignment, not free, not reachable). Refused before open().
   */
  giveBack(ptrs: readonly number[]): { accepted: number; refused: number } {
    return this.#accept(this.#epoch ?? -1n, ptrs);
  }

  /** Catches the mirror up with what ALLOCATE popped since. */
  #sync(): Map<number, { list: number[]; head: number; members: Set<number> }> {
    for (const [size, m] of this.#posted) {
      const n = this.#c.nic.freeBufferCount(this.#c.mr, size);
      while (m.list.length - m.head > n) m.members.delete(m.list[m.head++]!);
      if (m.head > 1024 && m.head * 2 > m.list.length) {
        m.list.splice(0, m.head);
        m.head = 0;
      }
    }
    return this.#posted;
  }

  #accept(epoch: bigint, ptrs: readonly number[]): { accepted: number; refused: number } {
    this.stats.returnBatches++;
    let accepted = 0;
    let refused = 0;
    const mirror = this.#sync();
    for (const ptr of ptrs) {
      const v: ReturnVerdict =
        this.#epoch !== undefined
          ? checkReturn(
              { epoch, ptr },
              { epoch: this.#epoch, classes: this.#c.classes, isFree: (p) => mirror.get(this.#c.classOf(p) ?? -1)?.members.has(p) === true, isReachable: (p) => this.#c.isReachable(p) },
              { acceptStaleEpoch: this.#c.acceptStaleEpoch },
            )
          : 'stale-epoch';
      if (v !== 'ok') {
        refused++;
        this.stats.returnsRefused[v] = (this.stats.returnsRefused[v] ?? 0) + 1;
        continue;
      }
      const size = this.#c.classOf(ptr)!;
      this.#c.nic.postFreeBuffers(this.#c.mr, size, [ptr]);
      const m = mirror.get(size)!;
      m.list.push(ptr);
      m.members.add(ptr);
      accepted++;
      this.stats.returnsAccepted++;
    }
    return { accepted, refused };
  }
}
