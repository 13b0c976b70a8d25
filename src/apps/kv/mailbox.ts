/**
 * The server-CPU side of the KV servers' one RPC (PRISM-KV's buffer returns, Pilaf's PUT): two
 * receive buffers per connection from the KV area's mailbox, watched by a CPU poller.
 *
 * Buffers are reused: when a connection is gone (goodbye, lease expiry, disconnect — the host calls
 * release(qpn)), its pair goes back on a free list, fenced first (DESIGN §2.2, reclaimed memory):
 * the QP is destroyed — its NIC cache entries drain into the buffers now, and a later SEND from the
 * old connection finds no QP (PMRPC_ERR_NO_SUCH_QP) instead of landing in the next owner's buffer —
 * and every receive completion it had already delivered is served before the pair is handed out.
 * The mailbox holds nothing persistent: its contents are per-message and the layout does not change.
 */
import { CpuPoller, type ProtectionDomain, type RecvCompletion, type Rnic, type ServerQp } from '../../../flush/index.js';
import { MAILBOX_BUFFER_BYTES } from './layout.js';

export type MailboxBuffer = { addr: number; len: number };

interface MailboxConn {
  qp: ServerQp;
  pair: number;
  bufs: MailboxBuffer[];
  onRecv: (c: RecvCompletion) => void;
  stop: () => void;
  released: boolean;
}

export interface MailboxStats {
  /** Connections accepted over the mailbox's lifetime. */
  accepted: number;
  /** Connections whose buffers were reclaimed. */
  released: number;
  /** Connections holding buffers now. */
  live: number;
}

export class Mailbox {
  readonly poller: CpuPoller;
  #ownPoller: boolean;
  #nextPair = 0;
  /** Reclaimed buffer pairs, lowest first out (so a reused pair is the most recently fenced one last). */
  #freePairs: number[] = [];
  #conns = new Map<number, MailboxConn>();
  #stats = { accepted: 0, released: 0 };

  constructor(
    readonly nic: Rnic,
    readonly geometry: { mailboxOffset: number; mailboxBuffers: number },
    /** The CPU poller to run on, or how a poller of its own schedules its passes (default: queueMicrotask). */
    poller: CpuPoller | { schedule: (fn: () => void) => void } | undefined,
    /** Test-only fault switch: release() reuses the buffers without the fence (the QP stays alive). */
    readonly faults: { unfencedRelease?: boolean } = {},
  ) {
    this.#ownPoller = !(poller instanceof CpuPoller);
    this.poller = poller instanceof CpuPoller ? poller : new CpuPoller(nic, poller ?? {});
  }

  get stats(): MailboxStats {
    return { ...this.#stats, live: this.#conns.size };
  }

  /**
   * A server QP in `pd` with two posted receive buffers; `onRecv` runs on a CPU pass per message.
   * At most mailboxBuffers / 2 connections at once (released ones do not count).
   */
  accept(pd: ProtectionDomain, onRecv: (qp: ServerQp, bufs: MailboxBuffer[], c: RecvCompletion) => void): ServerQp {
    const g = this.geometry;
    let pair = this.#freePairs.shift();
    if (pair === undefined) {
      if ((this.#nextPair + 1) * 2 > g.mailboxBuffers) throw new RangeError(`the KV area has ${g.mailboxBuffers} mailbox buffers: at most ${g.mailboxBuffers >> 1} connections at once`);
      pair = this.#nextPair++;
    }
    const qp = this.nic.createQp(pd);
    const bufs = [2 * pair, 2 * pair + 1].map((i) => ({ addr: g.mailboxOffset + i * MAILBOX_BUFFER_BYTES, len: MAILBOX_BUFFER_BYTES }));
    bufs.forEach((b, id) => qp.postRecv({ id, ...b }));
    const conn: MailboxConn = {
      qp,
      pair,
      bufs,
      released: false,
      // A completion polled for a released connection is not served: its buffers may be someone else's now.
      onRecv: (c) => {
        if (!conn.released) onRecv(qp, bufs, c);
      },
      stop: () => undefined,
    };
    conn.stop = this.poller.watchRecv(qp, conn.onRecv);
    this.#conns.set(qp.qpn, conn);
    this.#stats.accepted++;
    return qp;
  }

  /**
   * The connection of QP `qpn` is gone: fence its buffers (destroy the QP, serve what it already
   * delivered) and put them back for the next connection. Idempotent; false for a QP this mailbox
   * does not hold.
   */
  release(qpn: number): boolean {
    const conn = this.#conns.get(qpn);
    if (conn === undefined) return false;
    this.#conns.delete(qpn);
    conn.stop();
    // The fence: no SEND of the old connection can complete into these buffers after this line.
    if (this.faults.unfencedRelease !== true) this.nic.destroyQp(qpn);
    for (const c of conn.qp.pollRecv()) conn.onRecv(c);
    conn.released = true;
    this.#freePairs.push(conn.pair);
    this.#freePairs.sort((a, b) => a - b);
    this.#stats.released++;
    return true;
  }

  close(): void {
    for (const c of this.#conns.values()) c.stop();
    this.#conns.clear();
    if (this.#ownPoller) this.poller.close();
  }
}
