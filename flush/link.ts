/**
 * The in-process link (DESIGN §6): client ends of connections to one Rnic, in the same process.
 *
 * Delivery modes:
 * - 'immediate': a request message executes as soon as it is sent, whole, and its response is
 *   delivered before send() returns (fast, for benchmarks and simple tests);
 * - 'seeded': messages queue; the fabric executes them one work request at a time, picking the
 *   next QP with a seeded PRNG, so ops of different QPs interleave — also between the ops of one
 *   chain — reproducibly. It runs by itself on a microtask after a send (`autoRun`), or by step().
 *
 * When no work is queued, the DMA engine catches up (`idleDrain`): a real NIC's cache does not hold
 * data forever, and a server CPU polling memory must see a WRITE eventually.
 *
 * On a `strict` file-backed region (group commit, flush/driver.ts) 'immediate' delivery runs on the
 * next turn of the event loop after the send (as the RPC server's CPU passes do there): the
 * messages sent in one turn form one pass and share its msync; their responses arrive after it.
 */
import { bool, createPrng, integer, nextTurn, oneOf, PmrpcError, positiveInt, resolveOptions, type OptionChecks, type Prng } from '../pmem/index.js';
import { NicErrorCodes } from './mr.js';
import { checkDriverFaults, NicDriver, type NicDriverFaults } from './driver.js';
import type { Rnic, ServerQp } from './nic.js';
import type { ClientMessage, Link, ServerMessage } from './types.js';

export type DeliveryMode = 'immediate' | 'seeded';

export interface FabricOptions {
  delivery: DeliveryMode;
  /** 'seeded': seed of the scheduling PRNG (ignored when `prng` is given). */
  seed: number;
  prng: Prng | undefined;
  /** 'seeded': run queued work on a microtask after each send (else only step()/run() execute). */
  autoRun: boolean;
  /** Drain the whole NIC cache whenever the fabric has no queued work left. */
  idleDrain: boolean;
  /** Bound of one run(): most work requests executed before it returns. */
  runStepsMax: number;
  /** Test-only fault switches of the NIC loop (flush/driver.ts). */
  faults: NicDriverFaults | undefined;
}

export const FABRIC_DEFAULTS: Readonly<FabricOptions> = Object.freeze({
  delivery: 'immediate',
  seed: 0,
  prng: undefined,
  autoRun: true,
  idleDrain: true,
  runStepsMax: 1_000_000,
  faults: undefined,
});

const FABRIC_CHECKS: OptionChecks<FabricOptions> = { delivery: oneOf(['immediate', 'seeded']), seed: integer, autoRun: bool, idleDrain: bool, runStepsMax: positiveInt, faults: checkDriverFaults };

export class InProcessFabric {
  readonly nic: Rnic;
  readonly options: Readonly<FabricOptions>;
  #prng: Prng;
  #scheduled = false;
  /** One loop, one re-entry guard, for both delivery modes. */
  #driver: NicDriver;

  constructor(nic: Rnic, options: Partial<FabricOptions> = {}) {
    const o = resolveOptions(FABRIC_DEFAULTS, options, FABRIC_CHECKS);
    this.nic = nic;
    this.options = Object.freeze(o);
    this.#prng = o.prng ?? createPrng(mix32(o.seed));
    this.#driver = new NicDriver(nic, o.idleDrain, o.faults === undefined ? {} : Object.freeze({ ...o.faults }));
  }

  /** A client link to server QP `target`: its responses and notifications come back through it. */
  connect(target: ServerQp): InProcessLink {
    const link = new InProcessLink(this, target.qpn);
    this.nic.attach(target.qpn, (m) => link.deliver(m));
    return link;
  }

  /** Executes one queued work request of a (seeded) randomly chosen busy QP. false when idle. */
  step(): boolean {
    const busy = this.nic.busyQps();
    if (busy.length === 0) return false;
    const qpn = busy.length === 1 ? busy[0]! : busy[this.#prng.int(0, busy.length - 1)]!;
    return this.nic.step(qpn);
  }

  /** Runs queued work until idle (bounded by runStepsMax), then the idle drain. Returns the steps taken. */
  run(): number {
    // A response handler that sends again is served by the running loop.
    return this.#driver.runSteps(() => this.step(), this.options.runStepsMax);
  }

  /** @internal */
  submit(msg: ClientMessage): void {
    if (this.options.delivery === 'immediate' && !this.#driver.groupCommit) {
      this.#driver.submit(msg);
      return;
    }
    if (this.options.delivery === 'immediate') {
      // Group commit: what is sent before the next turn of the event loop is one pass, one msync
      // (a microtask would run between two callers' macrotasks: passes of one message each).
      this.nic.submit(msg);
      if (!this.#scheduled) {
        this.#scheduled = true;
        nextTurn(() => {
          this.#scheduled = false;
          this.#driver.runUntilIdle();
        });
      }
      return;
    }
    this.nic.submit(msg);
    if (this.options.autoRun && !this.#scheduled) {
      this.#scheduled = true;
      queueMicrotask(() => {
        this.#scheduled = false;
        this.run();
      });
    }
  }
}

export class InProcessLink implements Link {
  readonly qpn: number;
  #fabric: InProcessFabric;
  #handler: ((msg: ServerMessage) => void) | undefined;
  #closed = false;
  #backlog: ServerMessage[] = [];

  /** @internal */
  constructor(fabric: InProcessFabric, qpn: number) {
    this.#fabric = fabric;
    this.qpn = qpn;
  }

  get closed(): boolean {
    return this.#closed;
  }

  send(msg: ClientMessage): void {
    if (this.#closed) throw new PmrpcError(NicErrorCodes.LINK_CLOSED, `the link to QP ${this.qpn} is closed`);
    this.#fabric.submit(msg);
  }

  onMessage(handler: (msg: ServerMessage) => void): void {
    this.#handler = handler;
    // Messages that arrived before a handler was set are not lost.
    const backlog = this.#backlog.splice(0);
    for (const m of backlog) handler(m);
  }

  close(): void {
    this.#closed = true;
  }

  /** @internal */
  deliver(msg: ServerMessage): void {
    if (this.#closed) return;
    if (this.#handler === undefined) {
      if (this.#backlog.length < 65536) this.#backlog.push(msg);
      return;
    }
    this.#handler(msg);
  }
}


/** murmur3's finalizer: xoroshiro's first outputs from nearby small seeds are correlated, so scheduling seeds are mixed first. */
export function mix32(seed: number): number {
  let h = seed | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h | 0;
}
