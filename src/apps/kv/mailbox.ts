/**
 * The server-CPU side of the KV servers' one RPC (PRISM-KV's buffer returns, Pilaf's PUT): two
 * receive buffers per connection from the KV area's mailbox, watched by a CPU poller.
 */
import { CpuPoller, type ProtectionDomain, type RecvCompletion, type Rnic, type ServerQp } from '../../../flush/index.js';
import { MAILBOX_BUFFER_BYTES } from './layout.js';

export type MailboxBuffer = { addr: number; len: number };

export class Mailbox {
  readonly poller: CpuPoller;
  #ownPoller: boolean;
  #next = 0;
  #stops: Array<() => void> = [];

  constructor(
    readonly nic: Rnic,
    readonly geometry: { mailboxOffset: number; mailboxBuffers: number },
    poller: CpuPoller | undefined,
  ) {
    this.#ownPoller = poller === undefined;
    this.poller = poller ?? new CpuPoller(nic);
  }

  /** A server QP in `pd` with two posted receive buffers; `onRecv` runs on a CPU pass per message. */
  accept(pd: ProtectionDomain, onRecv: (qp: ServerQp, bufs: MailboxBuffer[], c: RecvCompletion) => void): ServerQp {
    const g = this.geometry;
    if (this.#next + 2 > g.mailboxBuffers) throw new RangeError(`the KV area has ${g.mailboxBuffers} mailbox buffers: at most ${g.mailboxBuffers >> 1} connections`);
    const qp = this.nic.createQp(pd);
    const bufs = [this.#next++, this.#next++].map((i) => ({ addr: g.mailboxOffset + i * MAILBOX_BUFFER_BYTES, len: MAILBOX_BUFFER_BYTES }));
    bufs.forEach((b, id) => qp.postRecv({ id, ...b }));
    this.#stops.push(this.poller.watchRecv(qp, (c) => onRecv(qp, bufs, c)));
    return qp;
  }

  close(): void {
    for (const s of this.#stops.splice(0)) s();
    if (this.#ownPoller) this.poller.close();
  }
}
