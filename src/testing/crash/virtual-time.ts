/**
 * Modelled time for the explorer's World (issue 14, DESIGN §7): with a cost model, the World is a
 * discrete-event simulator. Every message on a link, every NIC work request, DMA drain, CPU pass
 * (poll + handler + persists) and timer is an event with a cost, charged to a resource of its node:
 *
 *   nic    the NIC's processing pipeline (per work request; a software NIC's dedicated core)
 *   cpu    the server CPU (one pass at a time); `worker` a second core handlers may charge
 *   pm     the PM media (write-backs and, without DDIO, the NIC's writes)
 *   in/out the node's ingress and egress links (serialisation)
 *   qp     a queue pair's order (RC: its requests start in order)
 *   atomic one address's NIC atomic unit (atomics on one address are serialised)
 *
 * A resource serves one event at a time (a queue); different resources overlap (pipelining). The
 * scheduler always runs the event that can start earliest; ties (same start time) go to the
 * World's chooser or seeded PRNG, so one seed is one exact execution and all times are integers
 * of nanoseconds (bit-for-bit replayable).
 */
import type { ClientMessage, ServerMessage } from '../../../flush/index.js';
import { pmWriteNs, requestBytes, responseBytes, softwareHandoffInNs, softwareHandoffOutNs, wireOneWayNs, wireSerialNs, wrCost, type CostModel } from '../model/index.js';

/** Busy time (ns) per resource kind, summed over nodes: where the modelled time went. */
export interface VirtualTimeStats {
  nowNs: number;
  events: number;
  nicWrs: number;
  cpuPasses: number;
  messagesIn: number;
  messagesOut: number;
  busyNs: Record<string, number>;
}

interface Pending<T> {
  at: number;
  seq: number;
  item: T;
}

/** A sink a link hands a server message to when it is delivered (modelled time decides when). */
export interface TimedLink {
  /** The QP of the connection (per-QP message faults, RC order). */
  readonly qpn: number;
  receive(m: ServerMessage): void;
}

/**
 * Faults of modelled time (the swarm simulation): extra delay of a message on a QP (QPs of
 * different delays reorder relative to each other; RC order within a QP still holds: a QP's
 * messages never overtake one another), and paused nodes (no NIC work request, CPU pass or drain
 * of the node starts inside a pause). Consulted in execution order, so a seeded implementation
 * keeps one seed one execution.
 */
export interface TimeFaults {
  /** Extra ns a message on QP `qpn` of node `node` spends on the fabric ('in': to the NIC; 'out': to the client). */
  messageDelayNs(node: number, qpn: number, dir: 'in' | 'out'): number;
  /** The earliest time ≥ `t` at which node `node` is not paused (t itself when it is not). */
  resumeAt(node: number, t: number): number;
}

/** The node view VirtualTime needs (WorldNode satisfies it). */
export interface TimedNode {
  readonly index: number;
  incarnation: number;
  crashed: boolean;
  readonly cpu: Array<() => void>;
}

const round = (x: number): number => Math.max(0, Math.round(x));

export class VirtualTime {
  readonly model: Readonly<CostModel>;
  #now: () => number;
  #seq = 0;
  #free = new Map<string, number>();
  #busy: Record<string, number> = {};
  /** Messages on their way to a NIC (submitted when they arrive). */
  readonly arrivals: Array<Pending<{ node: TimedNode; msg: ClientMessage; submit: () => void }>> = [];
  /** Server messages on their way to a client. */
  readonly deliveries: Array<Pending<{ link: TimedLink; msg: ServerMessage }>> = [];
  /** Per node: when each queued CPU pass became ready (parallel to node.cpu). */
  #cpuReady = new Map<TimedNode, number[]>();
  /**
   * Per QP: index of the next work request within its current message, when it is done, when its
   * writes are placed, and when the chain's last FLUSH completes (its later requests wait for it).
   */
  #qpState = new Map<string, { wrIndex: number; msgDone: number; placed: number; flushed: number }>();
  /** While a step runs: when its outputs leave, and when CPU work it triggers may start. */
  #out: { node: TimedNode; cpuReady: number; buffered: Array<{ link: TimedLink; msg: ServerMessage }>; charged: Map<string, number>; queued: Map<TimedNode, number> } | undefined;
  #stats = { events: 0, nicWrs: 0, cpuPasses: 0, messagesIn: 0, messagesOut: 0 };
  /** Per QP and direction: when its last message arrives (RC order: a later one never arrives earlier). */
  #lastAt = new Map<string, number>();
  /** Faults (the swarm simulation); undefined: none. */
  faults: TimeFaults | undefined;

  constructor(model: Readonly<CostModel>, now: () => number) {
    this.model = model;
    this.#now = now;
  }

  get nowNs(): number {
    return this.#now();
  }

  stats(): VirtualTimeStats {
    return { nowNs: this.nowNs, ...this.#stats, busyNs: { ...this.#busy } };
  }

  #key(node: TimedNode, res: string): string {
    return `${node.index}.${node.incarnation}/${res}`;
  }

  freeAt(node: TimedNode, res: string): number {
    return this.#free.get(this.#key(node, res)) ?? 0;
  }

  /** Occupies `res` of `node` for `ns` from the earliest moment ≥ `from` it is free; returns the end. */
  #use(node: TimedNode, res: string, from: number, ns: number): number {
    const k = this.#key(node, res);
    const start = Math.max(from, this.#free.get(k) ?? 0);
    const end = start + round(ns);
    this.#free.set(k, end);
    const kind = res.startsWith('atomic@') ? 'atomic' : res.startsWith('qp') ? 'qp' : res;
    if (kind !== 'qp') this.#busy[kind] = (this.#busy[kind] ?? 0) + round(ns);
    return end;
  }

  // ------------------------------------------------------------------ what links and hosts call

  /** A client posts `msg` to `node` now: it arrives after the fabric and the node's ingress link. */
  send(node: TimedNode, qpn: number, msg: ClientMessage, submit: () => void): void {
    const m = this.model;
    const t = this.nowNs + round(wireOneWayNs(m));
    const at = this.#delayed(node, qpn, 'in', this.#use(node, 'in', t, wireSerialNs(m, requestBytes(msg))));
    this.arrivals.push({ at, seq: this.#seq++, item: { node, msg, submit } });
    this.#stats.messagesIn++;
  }

  /**
   * `at` plus the faults' delay of a message on (node, qpn, dir), never before that QP's previous
   * message — with faults off too: a message delayed while they were on may still be on the
   * fabric when they are turned off (the swarm's liveness phase), and RC order holds for the
   * messages posted after it (docs/swarm.md, "Dropped connections": rpc seed 153).
   */
  #delayed(node: TimedNode, qpn: number, dir: 'in' | 'out', at: number): number {
    const k = `${this.#key(node, `qp${qpn}`)}/${dir}`;
    const delay = this.faults === undefined ? 0 : round(this.faults.messageDelayNs(node.index, qpn, dir));
    const t = Math.max(at + delay, this.#lastAt.get(k) ?? 0);
    this.#lastAt.set(k, t);
    return t;
  }

  /** `t`, or the end of the pause of `node` it falls into. */
  #resume(node: TimedNode, t: number): number {
    return this.faults === undefined ? t : this.faults.resumeAt(node.index, t);
  }

  /** When an idle NIC of `node` may drain (its pipeline free, the node not paused). */
  drainStart(node: TimedNode): number {
    return this.#resume(node, Math.max(this.nowNs, this.freeAt(node, 'nic')));
  }

  /** The NIC or CPU of the running step emits `msg` to a client: it leaves when the step's output is done. */
  emit(link: TimedLink, msg: ServerMessage): boolean {
    if (this.#out === undefined) return false;
    this.#out.buffered.push({ link, msg });
    return true;
  }

  /** A CPU pass was queued on `node` (host.schedule). */
  cpuScheduled(node: TimedNode): void {
    let q = this.#cpuReady.get(node);
    if (q === undefined) this.#cpuReady.set(node, (q = []));
    q.push(this.#out !== undefined ? this.#out.cpuReady : this.nowNs);
    if (this.#out !== undefined) this.#out.queued.set(node, (this.#out.queued.get(node) ?? 0) + 1);
  }

  /** The running CPU pass spends `ns` more on `res` ('cpu': the pass's own core; 'worker': a second core). */
  charge(ns: number, res = 'cpu'): void {
    if (!(ns >= 0) || !Number.isFinite(ns)) throw new RangeError(`charge ns must be a finite number >= 0, got ${String(ns)}`);
    if (this.#out === undefined) return; // outside a step (set-up, recovery before the run): free
    this.#out.charged.set(res, (this.#out.charged.get(res) ?? 0) + ns);
  }

  /** Node `node` crashed or restarted: its CPU readiness queue is gone with its passes. */
  forget(node: TimedNode): void {
    this.#cpuReady.delete(node);
  }

  // ------------------------------------------------------------------ step timing

  /**
   * When the next work request of QP `qpn` on `node` can start: after the NIC pipeline and the QP's
   * previous request are free and, inside a chain, after the chain's last FLUSH has completed — a
   * chain executes op by op (DESIGN §2.4): the request after a FLUSH runs on its durability (a
   * durable chain's CAS publishes only what the FLUSH persisted; a conditional one needs its result).
   */
  nicStart(node: TimedNode, qpn: number): number {
    const flushed = this.#qpState.get(this.#key(node, `qp${qpn}`))?.flushed ?? 0;
    return this.#resume(node, Math.max(this.nowNs, this.freeAt(node, 'nic'), this.freeAt(node, `qp${qpn}`), flushed));
  }

  /** When the oldest queued CPU pass of `node` can start (undefined: none queued). */
  cpuStart(node: TimedNode): number | undefined {
    if (node.cpu.length === 0) return undefined;
    const ready = this.#cpuReady.get(node)?.[0] ?? this.nowNs;
    return this.#resume(node, Math.max(this.nowNs, ready, this.freeAt(node, 'cpu')));
  }

  /** Next arrival or delivery time (undefined: none in flight). */
  nextMessageAt(): number | undefined {
    let t: number | undefined;
    for (const q of [this.arrivals, this.deliveries]) for (const p of q) if (t === undefined || p.at < t) t = p.at;
    return t;
  }

  /** Takes every arrival and delivery due at `at` (in posting order). */
  takeMessagesAt(at: number): { arrivals: Array<VirtualTime['arrivals'][number]['item']>; deliveries: Array<VirtualTime['deliveries'][number]['item']> } {
    const take = <T>(q: Array<Pending<T>>): T[] => {
      const due = q.filter((p) => p.at === at).sort((a, b) => a.seq - b.seq);
      for (const p of due) q.splice(q.indexOf(p), 1);
      return due.map((p) => p.item);
    };
    const arrivals = take(this.arrivals);
    const deliveries = take(this.deliveries);
    this.#stats.events += arrivals.length + deliveries.length;
    return { arrivals, deliveries };
  }

  /**
   * Runs one work request of `qpn` on `node` at the current time (= nicStart): `run` executes it
   * (the NIC's step); `wr` is what it runs (peekWr), `last` whether it ends its message.
   */
  nicStep(node: TimedNode, qpn: number, wr: Parameters<typeof wrCost>[1], last: boolean, ddio: boolean, run: () => void, linesWrittenBack: () => number): void {
    const m = this.model;
    const s = this.nowNs;
    const qk = this.#key(node, `qp${qpn}`);
    const st = this.#qpState.get(qk) ?? { wrIndex: 0, msgDone: 0, placed: 0, flushed: 0 };
    const c = wrCost(m, wr);
    let occ = c.occupancyNs;
    if (st.wrIndex % m.doorbellBatch === 0) occ += m.nicDoorbellUs * 1000;
    // A software NIC's core sees a message only once the hardware NIC has handed it over: every
    // work request of the message starts after that (the answer's hand-back is added at its end).
    const from = st.wrIndex === 0 ? s + round(softwareHandoffInNs(m)) : s;
    const issued = this.#use(node, 'nic', from, occ);
    this.#use(node, `qp${qpn}`, from, occ);
    let done: number;
    let placed = st.placed;
    if (c.atomicAddr !== undefined) {
      // One address's atomics are serialised (the NIC holds the line for ~ a PCIe round trip).
      const a = this.#use(node, `atomic@${c.atomicAddr}`, Math.max(issued, st.placed), m.nicAtomicSameAddrUs * 1000);
      done = Math.max(a, Math.max(issued, st.placed) + c.latencyNs);
      placed = Math.max(placed, done);
    } else if (wr.op === 'write' || wr.op === 'writeImm' || wr.op === 'send' || wr.op === 'allocate') {
      done = issued + c.latencyNs; // a WRITE completes when the NIC has it (posted)
      let p = done + m.pcieDmaWriteNs;
      if (!ddio && c.writeBytes > 0) p = this.#use(node, 'pm', p, pmWriteNs(m, c.writeBytes));
      placed = Math.max(placed, round(p));
    } else {
      // READ, FLUSH, PRISM CAS through a pointer: after the QP's earlier writes are placed (rule i).
      done = Math.max(issued, st.placed) + c.latencyNs;
    }
    const before = linesWrittenBack();
    this.#out = { node, cpuReady: round(placed), buffered: [], charged: new Map(), queued: new Map() };
    try {
      run();
    } finally {
      const out = this.#out;
      this.#out = undefined;
      // A persistent FLUSH under DDIO writes back dirty lines: the PM media's time, waited for.
      const wb = linesWrittenBack() - before;
      if (wb > 0) done = Math.max(done, this.#use(node, 'pm', done, m.pmPersistNs + pmWriteNs(m, wb * 64)));
      st.msgDone = Math.max(st.msgDone, round(done));
      st.placed = round(placed);
      // The chain's next request starts when this FLUSH is done (nicStart); a new message does not wait.
      st.flushed = wr.op === 'flush' && !last ? round(done) : last ? 0 : st.flushed;
      const end = last ? st.msgDone + round(softwareHandoffOutNs(m)) : round(done);
      st.wrIndex = last ? 0 : st.wrIndex + 1;
      if (last) st.msgDone = 0;
      this.#qpState.set(qk, st);
      this.#stats.nicWrs++;
      this.#stats.events++;
      if (out !== undefined) this.#flushOut(node, out.buffered, end);
    }
  }

  /** Runs the oldest CPU pass of `node` at the current time (= cpuStart). */
  cpuStep(node: TimedNode, run: () => void, pm: () => { linesWrittenBack: number; drains: number }): void {
    const m = this.model;
    const s = this.nowNs;
    this.#cpuReady.get(node)?.shift();
    const before = pm();
    const out = { node, cpuReady: s, buffered: [], charged: new Map<string, number>(), queued: new Map<TimedNode, number>() };
    this.#out = out;
    try {
      run();
    } finally {
      this.#out = undefined;
      const after = pm();
      const wb = after.linesWrittenBack - before.linesWrittenBack;
      const drains = after.drains - before.drains;
      const cpuNs = m.cpuPassUs * 1000 + (out.charged.get('cpu') ?? 0);
      let end = s + round(cpuNs);
      if (wb > 0 || drains > 0) {
        // The pass waits at its fences for the media: the PM resource and the CPU both.
        const persistNs = drains * m.pmPersistNs + pmWriteNs(m, wb * 64);
        end = this.#use(node, 'pm', end, persistNs);
      }
      this.#use(node, 'cpu', s, end - s);
      for (const [res, ns] of out.charged) if (res !== 'cpu') end = Math.max(end, this.#use(node, res, s, ns));
      this.#stats.cpuPasses++;
      this.#stats.events++;
      // CPU passes this one queued are ready when it ends.
      for (const [n, count] of out.queued) {
        const q = this.#cpuReady.get(n);
        if (q !== undefined) for (let i = Math.max(0, q.length - count); i < q.length; i++) q[i] = end;
      }
      this.#flushOut(node, out.buffered, end);
    }
  }

  #flushOut(node: TimedNode, buffered: Array<{ link: TimedLink; msg: ServerMessage }>, end: number): void {
    const m = this.model;
    for (const { link, msg } of buffered) {
      const left = this.#use(node, 'out', end, wireSerialNs(m, responseBytes(msg)));
      this.deliveries.push({ at: this.#delayed(node, link.qpn, 'out', left + round(wireOneWayNs(m))), seq: this.#seq++, item: { link, msg } });
      this.#stats.messagesOut++;
    }
  }
}
