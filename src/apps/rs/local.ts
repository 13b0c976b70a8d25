/**
 * PRISM-RS replicas in-process (tests, benchmarks, examples): N replicas, each an in-memory region
 * with its own emulated NIC and the rs app opened through the App contract, reached over
 * in-process links (as the KV bench and tests reach PRISM-KV). `client()` gives an RsClient that
 * reconnects to a replica restarted with `restart(i)`; `crash(i)` drops a replica (its links close;
 * with `tracing` its media survive, as PM does, and `restart(i)` recovers it from them).
 * Over TCP, use connectRsCluster (cluster.ts) instead: nodes run by the node host.
 */
import { createPrng, crashImages, materialize, PmemRegion, resolveOptions, seededEntropy, systemClock, intIn, bool, oneOf, type OptionChecks } from '../../../pmem/index.js';
import { InProcessFabric, QueuePair, Rnic, type DrainPolicy } from '../../../flush/index.js';
import type { AppHost } from '../index.js';
import { rsApp, type RsAppOptions } from './app.js';
import { RsClient, type RsClientOptions, type RsReplicaConnection } from './client.js';
import type { RsServer } from './server.js';

export interface RsLocalOptions {
  replicas: number;
  app: Partial<RsAppOptions>;
  /** NIC drain policy of every replica. */
  drain: DrainPolicy;
  ddio: boolean;
  /** Keep crash states (needed by crash(i) + restart(i); slower). */
  tracing: boolean;
  seed: number;
}

export const RS_LOCAL_DEFAULTS: Readonly<RsLocalOptions> = Object.freeze({ replicas: 3, app: Object.freeze({}), drain: 'eager', ddio: true, tracing: false, seed: 1 });

const RS_LOCAL_CHECKS: OptionChecks<RsLocalOptions> = { replicas: intIn(1, 15), drain: oneOf(['eager', 'lazy', 'onFlush']), ddio: bool, tracing: bool, seed: intIn(0, 2 ** 31) };

interface LocalReplica {
  region: PmemRegion;
  nic: Rnic;
  fabric: InProcessFabric;
  server: RsServer;
  up: boolean;
  incarnation: number;
}

export class RsLocalCluster {
  readonly options: Readonly<RsLocalOptions>;
  readonly appOptions: RsAppOptions;
  #replicas: LocalReplica[] = [];
  #clients: RsClient[] = [];
  /** Replicas a broken invariant stopped (PMRPC_ERR_INVARIANT in a CPU pass): each crashed there, as `pmrpc serve` exits 70. */
  readonly halts: Array<{ replica: number; error: Error }> = [];

  private constructor(o: RsLocalOptions) {
    this.options = Object.freeze(o);
    this.appOptions = rsApp.resolveOptions(o.app);
  }

  /** Formats and recovers `replicas` fresh replicas. */
  static start(options: Partial<RsLocalOptions> = {}): RsLocalCluster {
    const o = resolveOptions(RS_LOCAL_DEFAULTS, options, RS_LOCAL_CHECKS);
    const c = new RsLocalCluster(o);
    for (let i = 0; i < o.replicas; i++) {
      const region = PmemRegion.createInMemory(rsApp.minRegionBytes(c.appOptions), { tracing: o.tracing, entropy: seededEntropy(createPrng(o.seed * 31 + i)) });
      rsApp.format(region, c.appOptions);
      c.#replicas.push(c.#open(region, i, 0));
    }
    return c;
  }

  #open(region: PmemRegion, i: number, incarnation: number): LocalReplica {
    const nic = new Rnic(region, { drain: this.options.drain, ddio: this.options.ddio, entropy: seededEntropy(createPrng(this.options.seed * 977 + i * 13 + incarnation)) });
    const halt = (error: Error): void => {
      this.halts.push({ replica: i, error });
      this.crash(i);
    };
    const host: AppHost = { region, nic, clock: systemClock, schedule: queueMicrotask, entropy: seededEntropy(createPrng(this.options.seed * 7 + i + incarnation * 101)), halt };
    const server = rsApp.open(host, this.appOptions) as RsServer;
    server.recover();
    return { region, nic, fabric: new InProcessFabric(nic), server, up: true, incarnation };
  }

  /** Replica i's app server (for inspection and audits). */
  server(i: number): RsServer {
    return this.#replica(i).server;
  }

  get replicas(): number {
    return this.#replicas.length;
  }

  /** Work requests the replicas' NICs executed so far (every incarnation's NIC since it opened: the bench's per-operation work). */
  nicWorkRequests(): number {
    return this.#replicas.reduce((n, r) => n + r.nic.stats.wrs, 0);
  }

  /** A new connection to replica i (undefined while it is down). */
  connect(i: number): RsReplicaConnection | undefined {
    const r = this.#replica(i);
    if (!r.up) return undefined;
    const { qp, welcome } = r.server.accept(new Uint8Array(0));
    const q = new QueuePair(r.fabric.connect(qp));
    // The client closing its connection is the replica's disconnect: its mailbox buffers are reused.
    q.onClose(() => {
      if (r.up) r.server.release(qp.qpn);
    });
    return { qp: q, welcome };
  }

  /** A client of every replica; it reconnects to restarted replicas by itself. */
  client(options: Partial<RsClientOptions> = {}): RsClient {
    const c = new RsClient(
      this.#replicas.map((_, i) => this.connect(i)),
      { reconnect: (i) => this.connect(i), ...options },
    );
    this.#clients.push(c);
    return c;
  }

  /** Replica i crashes: its NIC stops, its clients' links close; its PM (media) stays. */
  crash(i: number): void {
    const r = this.#replica(i);
    if (!r.up) return;
    r.up = false;
    r.server.close();
    r.nic.close();
  }

  /** Restarts crashed replica i from what its PM holds (media only: the volatile caches are lost), and recovers it. */
  restart(i: number): RsServer {
    const r = this.#replica(i);
    if (r.up) throw new Error(`replica ${i} is up: crash it first`);
    if (!this.options.tracing) throw new TypeError('restart needs tracing: true (the crash state of the region)');
    const st = r.region.crashState();
    const [img] = [...crashImages(st, { engine: 'none' })];
    const region = PmemRegion.openImage(materialize(st, img!), { tracing: true });
    this.#replicas[i] = this.#open(region, i, r.incarnation + 1);
    return this.#replicas[i]!.server;
  }

  async close(): Promise<void> {
    for (const c of this.#clients.splice(0)) await c.close().catch(() => undefined);
    for (const r of this.#replicas) {
      if (!r.up) continue;
      r.up = false;
      r.server.close();
      r.nic.close();
    }
  }

  #replica(i: number): LocalReplica {
    const r = this.#replicas[i];
    if (r === undefined) throw new RangeError(`replica must be an integer in [0, ${this.#replicas.length}), got ${String(i)}`);
    return r;
  }
}
