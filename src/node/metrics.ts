/**
 * Metrics and health of a node for operators (`pmrpc serve --metrics-port N`, docs/deploy.md):
 * Prometheus metrics through prom-client, all named `pmrpc_…`, and the probes `/healthz` (the
 * process is up: 200) and `/readyz` (200 once the node recovered and serves, 503 before and while
 * it shuts down). The HTTP server starts before the node (so /healthz answers during a long
 * recovery); attach() hands it the node once NodeHost.start() resolved.
 *
 * Cost: what the node already counts (TCP server and NIC stats, the app's inspect()) is read at
 * scrape time. The request path is observed only through TcpNicServer.observer, which is set here
 * and nowhere else: without metrics it stays undefined (one undefined check per frame).
 */
import http from 'node:http';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { intIn, nonEmptyString, resolveOptions, systemClock, type Clock } from '../../pmem/index.js';
import type { ServerMessage } from '../../flush/index.js';
import { TransportErrorCodes, type DisconnectInfo, type TcpObserver } from '../transport/index.js';
import { RPC_ACK_IMM, rpcStrategy, type RpcStrategy } from '../rpc/index.js';
import type { NodeHost } from './host.js';
import { findNodeAppFlags } from './apps.js';

export interface NodeMetricsOptions {
  /** Address of the HTTP server (loopback by default: metrics and probes are not for the world). */
  host: string;
  /** 0 picks a free port (NodeMetrics.port). */
  port: number;
  clock: Clock;
}

export const NODE_METRICS_DEFAULTS: Readonly<NodeMetricsOptions> = Object.freeze({ host: '127.0.0.1', port: 0, clock: systemClock });

/** Durable latencies, seconds: 50 µs to 2.5 s. */
const LATENCY_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** Goodbye codes that refuse a client (the connection never served). */
const REFUSALS = [TransportErrorCodes.TOO_MANY_CONNECTIONS, TransportErrorCodes.TOO_MANY_HANDSHAKES, TransportErrorCodes.REFUSED, TransportErrorCodes.QP_IN_USE, TransportErrorCodes.PROTOCOL_VERSION, TransportErrorCodes.HANDSHAKE, TransportErrorCodes.HANDSHAKE_TIMEOUT];

/** Arena use an app reports cheaply (its record's `arena`, from its inspect() and geometry): undefined for an app without one. */
function arenaOf(node: NodeHost): { used: number; capacity: number } | undefined {
  const arena = findNodeAppFlags(node.app.name)?.arena;
  if (arena === undefined) return undefined;
  const server = node.server as unknown as { inspect(): Record<string, unknown>; geometry?: Record<string, unknown> };
  return arena(server.inspect(), server.geometry ?? {});
}

export class NodeMetrics {
  readonly registry = new Registry();
  readonly options: Readonly<NodeMetricsOptions>;
  #server: http.Server;
  #port = 0;
  #node: NodeHost | undefined;
  #ready = false;
  #labels = { app: '', strategy: '' };
  readonly #requests: Counter<'app' | 'strategy'>;
  readonly #durableAcks: Counter<'app' | 'strategy'>;
  readonly #latency: Histogram<'app' | 'strategy'>;

  private constructor(o: NodeMetricsOptions) {
    this.options = Object.freeze(o);
    const registers = [this.registry];
    const self = this;
    const node = (): NodeHost | undefined => self.#node;
    this.#requests = new Counter({ name: 'pmrpc_requests_total', help: 'Request frames (work-request chains) received and submitted to the NIC', labelNames: ['app', 'strategy'], registers });
    this.#durableAcks = new Counter({ name: 'pmrpc_durable_acks_total', help: 'Durable acknowledgements sent (rpc app): the Response of wflush/sflush/raw, the ACK of the acknowledging strategies', labelNames: ['app', 'strategy'], registers });
    this.#latency = new Histogram({ name: 'pmrpc_durable_latency_seconds', help: 'From a request frame\'s arrival to its durable acknowledgement (rpc app, strategies whose Response is durable: wflush, sflush, raw)', labelNames: ['app', 'strategy'], buckets: LATENCY_BUCKETS, registers });
    new Gauge({ name: 'pmrpc_ready', help: '1 once the node recovered and serves', registers, collect() { this.set(self.#ready ? 1 : 0); } });
    new Gauge({ name: 'pmrpc_recovery_seconds', help: 'Duration of the last start-up: open (or create) and recover', registers, collect() { const n = node(); if (n !== undefined) this.set(n.recovery.recoveryMs / 1000); } });
    new Gauge({ name: 'pmrpc_recovery_replayed_entries', help: 'Redo-log entries replayed by the last recovery (rpc app)', registers, collect() { const v = node()?.recovery.replayed; if (typeof v === 'number') this.set(v); } });
    new Gauge({ name: 'pmrpc_recovery_reexecuted_requests', help: 'Requests re-executed by the last recovery (rpc app)', registers, collect() { const v = node()?.recovery.reexecuted; if (typeof v === 'number') this.set(v); } });
    new Gauge({ name: 'pmrpc_clients_connected', help: 'Client connections open now', registers, collect() { const n = node(); if (n !== undefined) this.set(n.tcp.connectionStats().length); } });
    new Counter({ name: 'pmrpc_clients_accepted_total', help: 'Client connections accepted (past the handshake)', registers, collect() { const n = node(); if (n !== undefined) { this.reset(); this.inc(n.tcp.stats.connectionsOpened); } } });
    new Counter({
      name: 'pmrpc_clients_refused_total', help: 'Connections refused at the handshake, by code (full, handshake errors, refused by the app)', labelNames: ['code'], registers,
      collect() {
        const n = node();
        if (n === undefined) return;
        const g = n.tcp.stats.goodbyes;
        this.reset();
        for (const code of REFUSALS) if ((g[code] ?? 0) > 0) this.inc({ code }, g[code]!);
      },
    });
    new Counter({ name: 'pmrpc_auth_failures_total', help: 'Hellos with a wrong or missing auth token', registers, collect() { const n = node(); if (n !== undefined) { this.reset(); this.inc(n.tcp.stats.goodbyes[TransportErrorCodes.AUTH] ?? 0); } } });
    new Gauge({ name: 'pmrpc_nic_cache_entries', help: 'Writes held in the emulated NIC cache, not yet drained to host memory', registers, collect() { const n = node(); if (n !== undefined) this.set(n.nic.cacheEntries); } });
    new Counter({ name: 'pmrpc_nic_flushes_total', help: 'FLUSH work requests the NIC executed', registers, collect() { const n = node(); if (n !== undefined) { this.reset(); this.inc(n.nic.stats.flushes); } } });
    new Counter({ name: 'pmrpc_nic_work_requests_total', help: 'Work requests the NIC executed', registers, collect() { const n = node(); if (n !== undefined) { this.reset(); this.inc(n.nic.stats.wrs); } } });
    const arena = (): { used: number; capacity: number } | undefined => {
      const n = node();
      return n === undefined || n.closed ? undefined : arenaOf(n);
    };
    new Gauge({ name: 'pmrpc_arena_used', help: 'What the app holds of its fixed capacity: rpc connection-table rows, kv keys, rs written blocks, tx items in use', labelNames: ['app'], registers, collect() { const a = arena(); if (a !== undefined) this.set({ app: self.#labels.app }, a.used); } });
    new Gauge({ name: 'pmrpc_arena_capacity', help: 'The app\'s fixed capacity (same units as pmrpc_arena_used)', labelNames: ['app'], registers, collect() { const a = arena(); if (a !== undefined) this.set({ app: self.#labels.app }, a.capacity); } });
    this.#server = http.createServer((req, res) => void this.#serve(req, res));
  }

  /** Starts the HTTP server: /healthz answers 200 at once, /readyz 503 until attach(). */
  static async start(options: Partial<NodeMetricsOptions> = {}): Promise<NodeMetrics> {
    const o = resolveOptions(NODE_METRICS_DEFAULTS, options, { host: nonEmptyString, port: intIn(0, 65535) });
    const m = new NodeMetrics(o);
    await new Promise<void>((resolve, reject) => {
      m.#server.once('error', reject);
      m.#server.listen(o.port, o.host, () => {
        m.#server.off('error', reject);
        resolve();
      });
    });
    m.#port = (m.#server.address() as { port: number }).port;
    return m;
  }

  get port(): number {
    return this.#port;
  }

  get ready(): boolean {
    return this.#ready;
  }

  /** The node recovered and serves: its counters are read from now on, its requests observed, /readyz is 200. */
  attach(node: NodeHost): void {
    this.#node = node;
    const rpc = findNodeAppFlags(node.app.name)?.flags.includes('strategy') === true ? (node.server as unknown as { rpc?: { strategy?: RpcStrategy } }).rpc?.strategy : undefined;
    const labels = { app: node.app.name, strategy: rpc ?? 'none' };
    this.#labels = labels;
    const requests = this.#requests.labels(labels);
    const acks = this.#durableAcks.labels(labels);
    const latency = this.#latency.labels(labels);
    const clock = this.options.clock;
    const rec = rpc === undefined ? undefined : rpcStrategy(rpc);
    // Durable at the request's own Response (the NIC's completion of WRITE+FLUSH, SEND+FLUSH, WRITE+READ).
    const timed = rec?.durableAt === 'completion';
    const acked = rec?.serverAcks === true;
    /** Per QP: arrival (clock ms) of each request whose Response is awaited (timed strategies only). */
    const arrivals = new Map<number, Map<number, number>>();
    const observer: TcpObserver = {
      request(qpn: number, seq: number): void {
        requests.inc();
        if (!timed) return;
        let q = arrivals.get(qpn);
        if (q === undefined) arrivals.set(qpn, (q = new Map()));
        if (q.size >= 65536) q.clear(); // a connection that vanished with requests outstanding
        q.set(seq, clock.nowMs());
      },
      message(qpn: number, m: ServerMessage): void {
        if (m.type === 'response') {
          if (!timed) return;
          const t0 = arrivals.get(qpn)?.get(m.seq);
          if (t0 === undefined) return;
          arrivals.get(qpn)!.delete(m.seq);
          if (m.completions.every((c) => c.status === 'ok')) {
            acks.inc();
            latency.observe((clock.nowMs() - t0) / 1000);
          }
        } else if (acked && m.imm === RPC_ACK_IMM) acks.inc();
      },
    };
    node.tcp.observer = observer;
    this.#ready = true;
  }

  /** /readyz answers 503 from now on (the node is shutting down). */
  unready(): void {
    this.#ready = false;
  }

  async close(): Promise<void> {
    this.#ready = false;
    if (this.#node !== undefined) this.#node.tcp.observer = undefined;
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async #serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      return;
    }
    if (path === '/readyz') {
      res.writeHead(this.#ready ? 200 : 503, { 'content-type': 'text/plain' }).end(this.#ready ? 'ready\n' : 'not ready: recovering or shutting down\n');
      return;
    }
    if (path === '/metrics') {
      try {
        const body = await this.registry.metrics();
        res.writeHead(200, { 'content-type': this.registry.contentType }).end(body);
      } catch (e) {
        res.writeHead(500, { 'content-type': 'text/plain' }).end(`${(e as Error).message}\n`);
      }
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: /metrics, /healthz, /readyz\n');
  }
}

/**
 * The server's log line of each failed authentication (a Hello with a wrong or missing token),
 * at most `perSecond` lines per second of the clock; what is held back is counted in the next line.
 * Returns an onDisconnect listener (NodeHostOptions.onDisconnect).
 */
export function authFailureLogger(log: (line: string) => void, options: { clock?: Clock; perSecond?: number } = {}): (info: DisconnectInfo) => void {
  const clock = options.clock ?? systemClock;
  const perSecond = options.perSecond ?? 10;
  let windowStart = -Infinity;
  let inWindow = 0;
  let held = 0;
  return (info) => {
    if (info.code !== TransportErrorCodes.AUTH) return;
    const now = clock.nowMs();
    if (now - windowStart >= 1000) {
      windowStart = now;
      inWindow = 0;
    }
    if (++inWindow > perSecond) {
      held++;
      return;
    }
    const more = held > 0 ? ` (${held} more held back)` : '';
    held = 0;
    log(`authentication failed: ${info.remoteAddress}:${info.remotePort}${info.clientName === '' ? '' : ` (client ${JSON.stringify(info.clientName)})`}: ${info.message}${more}`);
  };
}
