/**
 * The explorer's deterministic fabric (DESIGN §8 "one explorer, many nodes"): N server nodes, each
 * its own region, NIC and app server, and the clients connected to them, on one seeded scheduler.
 *
 * One scheduler step is one unit of work of one agent, picked by the seeded PRNG among everything
 * runnable: a single work request of one busy QP of any node (so chains of different QPs and nodes
 * interleave op by op), or one CPU pass a node's app scheduled. After every step the client
 * continuations run to quiescence (a macrotask turn: every microtask first), so a completion is
 * *observed* when it is delivered — the workload's history holds the outcome before anything
 * else happens — and every step that delivered something to a client is a crash point
 * ('delivery'), besides the region's own (before every media-changing event, per node).
 *
 * The DMA engine drains by the NIC's policy; while idle it drains only if the configuration says
 * so (`idleDrain`), or when nothing else can run (a real NIC drains eventually). A logical clock
 * (VirtualClock) moves only when nothing is runnable and timers are pending, so bounded waits,
 * retries and leases are deterministic.
 */
import { NicErrorCodes, QueuePair, Rnic, type Link, type ServerMessage, type ClientMessage } from '../../../flush/index.js';
import { isInvariantError, PmemRegion, PmrpcError, seededEntropy, createPrng, VirtualClock, macrotaskTurn, type Prng } from '../../../pmem/index.js';
import type { AppHost, AppServer } from '../../apps/index.js';
import { rnicOptions, type NicConfig } from './config.js';
import { mix } from './seeds.js';
import { VirtualTime, type VirtualTimeStats } from './virtual-time.js';
import type { CostModel } from '../model/index.js';

/**
 * Runs every queued microtask (client continuations) before returning: a macrotask turn — the
 * default of World.turn (pmem/runtime.ts, the one module that schedules on the event loop).
 */
export const quiesce: () => Promise<void> = macrotaskTurn;

/** What World.run awaits after every step: every client continuation has run when it resolves. */
export type Turn = () => Promise<void>;

export type CrashPointListener = (kind: string, node: number) => void;

/** A client's end of a connection to one node: closes (with a cause) when that node crashes. */
class ExplorerLink implements Link {
  readonly qpn: number;
  /** The client this connection belongs to (-1: unlabelled). */
  client = -1;
  #node: WorldNode;
  #world: World;
  #handler: ((m: ServerMessage) => void) | undefined;
  #backlog: ServerMessage[] = [];
  #closed = false;
  #onClose: Array<(err: Error | undefined) => void> = [];

  constructor(world: World, node: WorldNode, qpn: number) {
    this.#world = world;
    this.#node = node;
    this.qpn = qpn;
    node.nic.attach(qpn, (m) => this.#deliver(m));
  }

  get closed(): boolean {
    return this.#closed;
  }

  send(msg: ClientMessage): void {
    if (this.#closed) throw new PmrpcError(NicErrorCodes.LINK_CLOSED, `the link to QP ${this.qpn} is closed`);
    const vt = this.#world.time;
    if (vt === undefined) this.#node.nic.submit(msg);
    else {
      // Modelled time: the message reaches the NIC after the fabric (a QP gone by then: the link closes).
      const node = this.#node;
      vt.send(node, this.qpn, msg, () => {
        if (this.#closed || node.crashed) return;
        try {
          node.nic.submit(msg);
        } catch (err) {
          this.down(err instanceof Error ? err : undefined);
        }
      });
    }
  }

  onMessage(handler: (m: ServerMessage) => void): void {
    this.#handler = handler;
    for (const m of this.#backlog.splice(0)) handler(m);
  }

  onClose(fn: (err: Error | undefined) => void): () => void {
    this.#onClose.push(fn);
    return () => {
      const i = this.#onClose.indexOf(fn);
      if (i >= 0) this.#onClose.splice(i, 1);
    };
  }

  close(): void {
    this.down(undefined);
  }

  /** The node went away (crash): the client sees the link close. */
  down(err: Error | undefined): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const fn of this.#onClose.splice(0)) fn(err);
  }

  #deliver(m: ServerMessage): void {
    if (this.#closed) return;
    if (this.#world.time?.emit(this, m) === true) return; // modelled time: delivered when it arrives
    this.receive(m);
  }

  /** A server message reaches the client (at once, or when modelled time says it arrives). */
  receive(m: ServerMessage): void {
    if (this.#closed) return;
    this.#world.deliveries++;
    if (this.#handler === undefined) this.#backlog.push(m);
    else this.#handler(m);
  }
}

/** One server node: its region, NIC and app server, and the CPU passes its app scheduled. */
export class WorldNode {
  readonly index: number;
  readonly region: PmemRegion;
  readonly nic: Rnic;
  server: AppServer | undefined;
  readonly cpu: Array<() => void> = [];
  readonly links: ExplorerLink[] = [];
  crashed = false;
  /** Restarts so far of this node index (0: the first incarnation). */
  incarnation = 0;

  constructor(index: number, region: PmemRegion, nic: Rnic) {
    this.index = index;
    this.region = region;
    this.nic = nic;
  }
}

/** One runnable unit of work the scheduler may pick (what a chooser sees). */
export interface StepChoice {
  node: number;
  /** The QP whose next work request runs; -1 for one CPU pass of the node's app. */
  qpn: number;
  /** The client label of that QP's connection (world.connect's `client`); -1 for CPU passes. */
  client: number;
  /** Stable identity of the agent within a run: "node/qpn" or "node/cpu". */
  key: string;
}

/** Picks the index of the choice to run (the default draws it from the world's seeded PRNG). */
export type Chooser = (choices: readonly StepChoice[]) => number;

/** World options beyond the NIC configuration and seed. */
export interface WorldOptions {
  /**
   * Modelled time (virtual-time.ts): every event costs what this model says and the clock moves by
   * those costs. Absent (default): today's scheduler, where time moves only when nothing can run.
   */
  model?: Readonly<CostModel>;
}

export interface RunResult {
  status: 'done' | 'stalled' | 'bound';
  steps: number;
}

export class World {
  readonly config: NicConfig;
  readonly clock = new VirtualClock();
  readonly nodes: WorldNode[] = [];
  readonly seed: number;
  /** Deliveries to clients so far (a step that raised it is a 'delivery' crash point). */
  deliveries = 0;
  /** Called at every crash point of every node, and after every step that delivered to a client. */
  onCrashPoint: CrashPointListener | undefined;
  /**
   * Test only: client continuations run only once no QP has work left, as in the old engines'
   * fabric (an answer observed late). The explorer's 'late' observation mode uses it.
   */
  lateObservation = false;
  /** Scheduler steps taken so far (over every run() call). */
  steps = 0;
  /** Picks the next step among the runnable ones (exhaustive exploration); default: the seeded PRNG. */
  chooser: Chooser | undefined;
  /**
   * Injected scheduling (DESIGN §7): how a step's continuations are run to quiescence. Default: one
   * macrotask turn (pmem/runtime.ts). Nothing else queues macrotasks during a run (time is the
   * VirtualClock's, links are in-process), so the turn orders only "every continuation, then the
   * next step" — the same on every run.
   */
  turn: Turn = macrotaskTurn;
  /** Modelled time (undefined unless the World was built with a cost model). */
  readonly time: VirtualTime | undefined;
  #prng: Prng;
  #running = false;
  #events: Array<{ at: number; seq: number; fn: () => void }> = [];
  /** Events on the virtual clock (afterNs): `at` in virtual ns. */
  #timedEvents: Array<{ at: number; seq: number; fn: () => void }> = [];
  #eventSeq = 0;

  constructor(config: NicConfig, seed: number, options: WorldOptions = {}) {
    this.config = config;
    this.seed = seed;
    this.#prng = createPrng(mix(seed, 0x5c4ed));
    this.time = options.model === undefined ? undefined : new VirtualTime(options.model, () => Number(this.clock.nowNs()));
  }

  /** Modelled time now, in µs (0 without a cost model). */
  get nowUs(): number {
    return Number(this.clock.nowNs()) / 1000;
  }

  /** Where modelled time went (undefined without a cost model). */
  timeStats(): VirtualTimeStats | undefined {
    return this.time?.stats();
  }

  /** Modelled time: the running CPU pass spends `ns` more on `resource` ('cpu', or 'worker' — a second core). No-op without a model. */
  charge(ns: number, resource = 'cpu'): void {
    this.time?.charge(ns, resource);
  }

  /** Adds a node on `region` (formatted or an image) and opens its app server through `open` (not yet recovered). */
  addNode(region: PmemRegion, open: (host: AppHost) => AppServer): WorldNode {
    const node = this.#makeNode(this.nodes.length, region, open, 0);
    return node;
  }

  /**
   * Restarts crashed node `n` on `region` (an image of it): a fresh NIC and app server in this
   * World, opened through `open` (not yet recovered); the old node's links stay closed, clients
   * reconnect through connect(n, ...).
   */
  restart(n: number, region: PmemRegion, open: (host: AppHost) => AppServer): WorldNode {
    const old = this.nodes[n];
    if (old === undefined) throw new RangeError(`no node ${n}`);
    if (!old.crashed) throw new Error(`node ${n} is up: crash it before restarting it`);
    return this.#makeNode(n, region, open, old.incarnation + 1);
  }

  #makeNode(index: number, region: PmemRegion, open: (host: AppHost) => AppServer, incarnation: number): WorldNode {
    const nic = new Rnic(region, { ...rnicOptions(this.config), entropy: seededEntropy(createPrng(mix(this.seed, 0x41c, index, incarnation))) });
    const node = new WorldNode(index, region, nic);
    node.incarnation = incarnation;
    this.nodes[index] = node;
    region.setCrashPointHook((e) => this.onCrashPoint?.(e.kind, index));
    const host: AppHost = {
      region,
      nic,
      clock: this.clock,
      schedule: (fn) => {
        if (node.crashed) return;
        node.cpu.push(fn);
        this.time?.cpuScheduled(node);
      },
      entropy: seededEntropy(createPrng(mix(this.seed, 0xe27, index, incarnation))),
      halt: (e) => this.#halt(node, e),
    };
    node.server = open(host);
    return node;
  }

  /**
   * Runs `fn` once `afterSteps` more scheduler steps have been taken — or earlier, when nothing
   * else can run (no work request, CPU pass, drain or timer): e.g. a crashed node's restart.
   */
  after(afterSteps: number, fn: () => void): void {
    if (!Number.isSafeInteger(afterSteps) || afterSteps < 0) throw new RangeError(`afterSteps must be a non-negative integer, got ${String(afterSteps)}`);
    this.#events.push({ at: this.steps + afterSteps, seq: this.#eventSeq++, fn });
    this.#events.sort((a, b) => a.at - b.at || a.seq - b.seq);
  }

  /**
   * Modelled time only: runs `fn` as an event on the virtual clock, `ns` virtual ns from now (e.g.
   * a crashed node's restart after a modelled delay). It runs when the clock reaches that time —
   * the scheduler takes events in virtual-time order — whatever the number of steps in between.
   */
  afterNs(ns: number, fn: () => void): void {
    if (this.time === undefined) throw new Error('afterNs needs modelled time (a World built with a cost model)');
    if (!Number.isSafeInteger(ns) || ns < 0) throw new RangeError(`afterNs ns must be a non-negative integer, got ${String(ns)}`);
    this.#timedEvents.push({ at: Number(this.clock.nowNs()) + ns, seq: this.#eventSeq++, fn });
    this.#timedEvents.sort((a, b) => a.at - b.at || a.seq - b.seq);
  }

  /** Events scheduled with after() or afterNs() that have not run yet. */
  get pendingEvents(): number {
    return this.#events.length + this.#timedEvents.length;
  }

  /** Runs every event still scheduled, in order (e.g. restarts still due when the workload ended): step events, then virtual-time ones. */
  flushEvents(): void {
    while (this.#events.length > 0) this.#events.shift()!.fn();
    while (this.#timedEvents.length > 0) this.#timedEvents.shift()!.fn();
  }

  /** A new client connection to node `n`: the app accepts `hello`; returns the client's queue pair and the welcome. */
  connect(n: number, hello: Uint8Array, client = -1): { qp: QueuePair; welcome: Uint8Array } {
    const node = this.nodes[n];
    if (node === undefined || node.server === undefined) throw new RangeError(`no node ${n}`);
    if (node.crashed) throw new PmrpcError(NicErrorCodes.LINK_CLOSED, `node ${n} is down`);
    const { qp, welcome } = node.server.accept(hello);
    // A crash point inside the handshake (the server persisting the client's row) may have crashed the node.
    if (node.crashed) throw new PmrpcError(NicErrorCodes.LINK_CLOSED, `node ${n} crashed during the handshake`);
    const link = new ExplorerLink(this, node, qp.qpn);
    link.client = client;
    node.links.push(link);
    return { qp: new QueuePair(link), welcome };
  }

  /**
   * Nodes stopped by a broken invariant of pmrpc's own state in a CPU pass (PMRPC_ERR_INVARIANT,
   * DESIGN §10): the check refused to write bad state, and the node stops as its process would
   * (exit 70, a crash). The explorer reports each as a violation of kind 'invariant'.
   */
  readonly halts: Array<{ node: number; detail: string }> = [];

  /** Runs node's next CPU pass; a broken invariant halts the node (see halts). */
  #cpuPass(node: WorldNode): void {
    const fn = node.cpu.shift()!;
    try {
      fn();
    } catch (e) {
      if (!isInvariantError(e)) throw e;
      this.#halt(node, e as Error);
    }
  }

  #halt(node: WorldNode, e: Error): void {
    if (node.crashed) return;
    this.halts.push({ node: node.index, detail: `node ${node.index} halted: ${e.message}` });
    this.crash(node.index);
  }

  /** Crashes node `n` now: its volatile state is gone, its clients see their links close. */
  crash(n: number): void {
    const node = this.nodes[n]!;
    node.crashed = true;
    node.region.setCrashPointHook(undefined);
    node.cpu.length = 0;
    this.time?.forget(node);
    node.nic.detach();
    for (const l of node.links) l.down(new PmrpcError(NicErrorCodes.LINK_CLOSED, `node ${n} crashed`));
  }

  /**
   * Drops one client connection while both ends live (a dropped connection): the `k`-th (mod their
   * count) of the open links of the up nodes, in node and connection order, closes as on a crash of
   * its node; the client sees the link close and reconnects if its app does. Returns what it
   * dropped (undefined: no open link).
   */
  dropConnection(k: number): string | undefined {
    const open = this.nodes.flatMap((n) => (n.crashed ? [] : n.links.filter((l) => !l.closed).map((l) => ({ n, l }))));
    if (open.length === 0) return undefined;
    const { n, l } = open[k % open.length]!;
    l.down(new PmrpcError(NicErrorCodes.LINK_CLOSED, `the connection to node ${n.index} (QP ${l.qpn}) dropped`));
    return `node ${n.index} QP ${l.qpn}${l.client >= 0 ? ` (client ${l.client})` : ''}`;
  }

  /** Stops every node in order (no crash): app servers close, NIC caches drain. */
  close(): void {
    for (const node of this.nodes) {
      node.region.setCrashPointHook(undefined);
      if (node.crashed) continue;
      try {
        node.server?.close();
      } catch {
        // a server that failed its recovery may not close cleanly; the region is discarded anyway
      }
      node.nic.close();
    }
  }

  /**
   * Drives the scheduler until `done()` (checked after every quiescence), nothing can run
   * ('stalled'), or `stepsMax` steps ('bound').
   */
  async run(done: () => boolean, stepsMax: number): Promise<RunResult> {
    if (this.#running) throw new Error('World.run is not reentrant');
    this.#running = true;
    let steps = 0;
    try {
      await this.turn();
      for (;;) {
        if (done()) return { status: 'done', steps };
        if (steps >= stepsMax) return { status: 'bound', steps };
        const before = this.deliveries;
        if (this.#events.length > 0 && this.#events[0]!.at <= this.steps) {
          this.#events.shift()!.fn();
          await this.turn();
          continue;
        }
        if (!this.#step()) return { status: 'stalled', steps };
        steps++;
        this.steps++;
        if (this.lateObservation && this.time === undefined && this.nodes.some((n) => !n.crashed && n.nic.busyQps().length > 0)) continue;
        await this.turn();
        if (this.deliveries !== before) this.onCrashPoint?.('delivery', -1);
      }
    } finally {
      this.#running = false;
    }
  }

  /**
   * Drives the scheduler until `p` settles (e.g. a checker's client reading every key), nothing
   * can run, or `stepsMax` steps: the run's status and how `p` ended (`failed`: it rejected).
   */
  async settle(p: Promise<unknown>, stepsMax: number): Promise<{ status: RunResult['status']; failed: boolean; error: unknown }> {
    let settled = false;
    let failed = false;
    let error: unknown;
    p.then(
      () => void (settled = true),
      (e: unknown) => {
        settled = true;
        failed = true;
        error = e;
      },
    );
    const r = await this.run(() => settled, stepsMax);
    return { status: r.status, failed, error };
  }

  /** What can run now, in a stable order (nodes by index, QPs by number, then the node's CPU). */
  choices(): StepChoice[] {
    const out: StepChoice[] = [];
    for (const node of this.nodes) {
      if (node.crashed) continue;
      for (const qpn of node.nic.busyQps()) {
        const link = node.links.find((l) => l.qpn === qpn);
        out.push({ node: node.index, qpn, client: link?.client ?? -1, key: `${node.index}.${node.incarnation}/${qpn}` });
      }
      if (node.cpu.length > 0) out.push({ node: node.index, qpn: -1, client: -1, key: `${node.index}.${node.incarnation}/cpu` });
    }
    return out;
  }

  /** One scheduler step; false when nothing at all can run. */
  #step(): boolean {
    if (this.time !== undefined) return this.#timedStep(this.time);
    const choices = this.choices();
    if (choices.length > 0) {
      let i = 0;
      if (this.chooser !== undefined) i = this.chooser(choices);
      else if (choices.length > 1) i = this.#prng.int(0, choices.length - 1);
      const c = choices[i];
      if (c === undefined) throw new RangeError(`the chooser picked ${i} of ${choices.length} choices`);
      const node = this.nodes[c.node]!;
      if (c.qpn >= 0) node.nic.step(c.qpn);
      else this.#cpuPass(node);
      if (this.config.idleDrain) for (const node of this.nodes) if (!node.crashed && node.nic.busyQps().length === 0 && node.cpu.length === 0) node.nic.drainAll();
      // A NIC step that left its NIC idle ended a NIC run: the server CPU's run-end listeners run
      // (Rnic.runEnded), as at the end of a transport server's NIC run (flush/driver.ts).
      if (c.qpn >= 0 && !node.crashed && node.nic.busyQps().length === 0) node.nic.runEnded();
      return true;
    }
    // Nothing runnable: the DMA engine catches up (a NIC drains eventually), then the clock moves.
    for (const node of this.nodes) {
      if (!node.crashed && node.nic.cacheEntries > 0) {
        node.nic.drainAll();
        node.nic.runEnded();
        return true;
      }
    }
    // Scheduled events (restarts) before time moves on: nothing else could happen meanwhile.
    if (this.#events.length > 0) {
      this.#events.shift()!.fn();
      return true;
    }
    if (this.clock.pendingTimers > 0) {
      this.clock.advanceMs(1);
      return true;
    }
    return false;
  }

  /**
   * One step in modelled time: the event that can start earliest — a message arriving at a NIC or
   * a client, a work request, a CPU pass, a DMA drain, a timer; ties among work requests and CPU
   * passes go to the chooser (or the seeded PRNG), ties among messages to posting order.
   */
  #timedStep(vt: VirtualTime): boolean {
    type Cand = { at: number; choice: StepChoice };
    const cands: Cand[] = [];
    for (const c of this.choices()) {
      const node = this.nodes[c.node]!;
      const at = c.qpn >= 0 ? vt.nicStart(node, c.qpn) : vt.cpuStart(node);
      if (at !== undefined) cands.push({ at, choice: c });
    }
    const msgAt = vt.nextMessageAt();
    const timerNs = this.clock.nextDueNs();
    const timerAt = timerNs === undefined ? undefined : Number(timerNs);
    const eventAt = this.#timedEvents[0]?.at;
    let best = Number.POSITIVE_INFINITY;
    for (const c of cands) best = Math.min(best, c.at);
    if (msgAt !== undefined) best = Math.min(best, msgAt);
    if (timerAt !== undefined) best = Math.min(best, timerAt);
    if (eventAt !== undefined) best = Math.min(best, eventAt);
    // The DMA engine drains an idle NIC once its pipeline is free (a real NIC drains eventually).
    let drainNode: WorldNode | undefined;
    for (const node of this.nodes) {
      if (node.crashed || node.nic.cacheEntries === 0 || node.nic.busyQps().length > 0) continue;
      const at = vt.drainStart(node);
      // Without idle drain, an idle NIC's DMA engine catches up only when nothing else can happen before (as in the untimed scheduler).
      if (at < best && (this.config.idleDrain || (cands.length === 0 && msgAt === undefined))) {
        best = at;
        drainNode = node;
      }
    }
    if (best === Number.POSITIVE_INFINITY) {
      if (this.#events.length > 0) {
        this.#events.shift()!.fn();
        return true;
      }
      return false;
    }
    const now = Number(this.clock.nowNs());
    this.clock.advanceNs(BigInt(Math.max(0, best - now))); // fires a timer due at `best` (also one due now)
    if (timerAt !== undefined && timerAt === best) return true;
    // An event on the virtual clock (a restart) due now runs before the work that starts at the same instant.
    if (eventAt !== undefined && eventAt === best) {
      this.#timedEvents.shift()!.fn();
      return true;
    }
    if (drainNode !== undefined) {
      drainNode.nic.drainAll();
      return true;
    }
    if (msgAt === best) {
      const { arrivals, deliveries } = vt.takeMessagesAt(best);
      for (const a of arrivals) a.submit();
      for (const d of deliveries) d.link.receive(d.msg);
      return true;
    }
    const tied = cands.filter((c) => c.at === best).map((c) => c.choice);
    let i = 0;
    if (this.chooser !== undefined) i = this.chooser(tied);
    else if (tied.length > 1) i = this.#prng.int(0, tied.length - 1);
    const c = tied[i];
    if (c === undefined) throw new RangeError(`the chooser picked ${i} of ${tied.length} choices`);
    const node = this.nodes[c.node]!;
    const region = node.region;
    if (c.qpn >= 0) {
      const peek = node.nic.peekWr(c.qpn)!;
      vt.nicStep(node, c.qpn, peek.wr, peek.last, this.config.ddio, () => void node.nic.step(c.qpn), () => region.stats.linesWrittenBack);
    } else {
      vt.cpuStep(node, () => this.#cpuPass(node), () => region.stats);
    }
    return true;
  }
}
