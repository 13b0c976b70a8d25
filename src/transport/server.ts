/**
 * The server end of the TCP link (DESIGN §6): one `Rnic` served over TCP. Each connection says
 * Hello (client) → Welcome or Goodbye (server), then Request frames one way, Response and Notify
 * frames the other. Whoever closes a connection because of a protocol error first sends a Goodbye
 * naming a PMRPC_ERR_ code. docs/wire.md describes the handshake, flow control, auth and error
 * behaviour.
 *
 * Untrusted until bound (DESIGN §6): before its Welcome a connection may send at most
 * handshakeBytesMax bytes, only maxHandshakes connections may be handshaking (one more evicts the
 * oldest once it has had handshakeEvictAfterMs), and each has handshakeTimeoutMs; maxConnections counts only connections past their Hello.
 * Every frame, from anyone, is decoded and executed in slices of work units (decoder.ts): at most
 * tickUnits per turn of the event loop for the whole server, so no peer stalls the others.
 *
 * Time comes from an injected Clock (DESIGN §7): the handshake and close-linger timeouts are the
 * only timers; yielding to the event loop goes through the injected `defer`.
 */
import net from 'node:net';
import { bool, callable, intIn, nextTurn, nonEmptyString, optional, PmrpcError, positiveInt, positiveMs, resolveOptions, systemClock, type Clock, type OptionChecks, type TimerHandle } from '../../pmem/index.js';
import { checkDriverFaults, NicDriver, Rnic, ServerQp, type NicDriverFaults, type RequestMessage, type ServerMessage } from '../../flush/index.js';
import { BAD_FRAME, encodeMessage, FRAME_TOO_LARGE, FrameReader, frameBytes, MAX_FRAME_BYTES_DEFAULT, PROTOCOL_VERSION, sizeFrame, writeSizedFrame, type HelloMessage, type WelcomeMessage, type WireMessage } from './codec.js';
import { FrameDecoder, type DecodeStep } from './decoder.js';
import { isLoopbackHost, tokenEquals } from './auth.js';
import { bareMessage, codeOf, messageOf, TransportErrorCodes } from './errors.js';
import { authTokenCheck, clockCheck, execUnits, frameBound, HANDSHAKE_BYTES_MAX_DEFAULT, MIN_FRAME_BYTES, positiveIntAtLeast, responseBoundBytes, TICK_UNITS_DEFAULT } from './limits.js';


/** What the server's accept callback learns about a client. */
export interface HelloInfo {
  version: number;
  clientName: string;
  /** The client's opaque application payload. */
  payload: Uint8Array;
  remoteAddress: string;
  remotePort: number;
}

/** What the accept callback grants: the QP this connection reaches, and an opaque payload for the client. */
export interface AcceptResult {
  qp: ServerQp;
  welcome?: Uint8Array;
}

/**
 * What a metrics module observes (TcpNicServer.observer): each Request frame submitted to the NIC
 * and each message the NIC sends a connection. Unset (the default), the request path pays one
 * undefined check per frame.
 */
export interface TcpObserver {
  request(qpn: number, seq: number): void;
  message(qpn: number, m: ServerMessage): void;
}

/** Reported once per connection when it is gone. `code` is undefined for an orderly close by the client. */
export interface DisconnectInfo {
  qpn: number | undefined;
  clientName: string;
  remoteAddress: string;
  remotePort: number;
  code: string | undefined;
  message: string;
  /** Bytes the server took from this connection (what a refused peer cost it, in buffers). */
  bytesIn: number;
}

export interface ConnectionStats {
  qpn: number | undefined;
  clientName: string;
  state: 'handshake' | 'accepting' | 'open' | 'closing' | 'closed';
  framesIn: number;
  framesOut: number;
  bytesIn: number;
  bytesOut: number;
  /** Bytes written to the socket and not yet taken by the kernel. */
  outgoingBytes: number;
  /** Whether the server stopped reading this socket (back-pressure or handshake in progress). */
  readPaused: boolean;
  /** How many times back-pressure paused reading. */
  backpressurePauses: number;
  /** Socket reads ('data' events) taken from this connection. */
  reads: number;
  /** Socket writes to this connection (each one buffer: every frame gathered since the last). */
  writes: number;
}

export interface TcpServerStats {
  connectionsAccepted: number;
  connectionsOpened: number;
  framesIn: number;
  framesOut: number;
  /** Goodbyes sent, by code. */
  goodbyes: Record<string, number>;
  /** Times the tick budget ran out and work (decoding or execution) waited for the next turn of the event loop. */
  deferrals: number;
  /** The most work units spent in one turn of the event loop. */
  tickUnitsMaxSeen: number;
}

export interface TcpNicServerOptions {
  /** Address to bind. Any non-loopback host requires authToken. */
  host: string;
  /** 0 picks a free port (address() tells which). */
  port: number;
  /** When set, every Hello must carry it (compared in constant time). It crosses the wire in clear. */
  authToken: string | undefined;
  /** Decides what a client gets: its QP (usually nic.createQp(pd)) and an opaque welcome payload. May be async; throw to refuse. */
  accept: ((hello: HelloInfo) => AcceptResult | Promise<AcceptResult>) | undefined;
  /** Largest frame accepted from a client; a longer length prefix closes that connection. */
  maxFrameBytes: number;
  /** Most connections past their Hello (authenticated, bound or being bound to a client); one more is refused with a Goodbye after its Hello. */
  maxConnections: number;
  /** Most connections that have not yet sent a complete Hello; one more closes the oldest of them (Goodbye PMRPC_ERR_TOO_MANY_HANDSHAKES) if it has been handshaking handshakeEvictAfterMs, else the newcomer. */
  maxHandshakes: number;
  /** How long a connection may handshake before a newcomer to a full pool can evict it. */
  handshakeEvictAfterMs: number;
  /** Most bytes a connection may send before its Welcome, length prefixes included (its Hello frame is at most this − 4). */
  handshakeBytesMax: number;
  /** Work units (protobuf fields, work requests decoded and executed) the server spends per turn of the event loop before it yields. */
  tickUnits: number;
  /** How the server yields to the event loop between slices of work (default: setImmediate). */
  defer: (fn: () => void) => void;
  /** Stop reading a socket while its outgoing buffer holds more than this (back-pressure to that client). */
  highWaterBytes: number;
  /** A client whose outgoing buffer would grow past this is disconnected (it does not read). */
  outgoingBytesMax: number;
  /** A connection that has not completed its Hello within this is closed. */
  handshakeTimeoutMs: number;
  /** After a Goodbye, how long the peer has to close before the socket is destroyed. */
  closeLingerMs: number;
  /** Drain the whole NIC cache after each request frame, as the in-process fabric's idleDrain does. */
  idleDrain: boolean;
  /** Destroy a connection's QP when the connection ends (its NIC cache entries drain first). */
  destroyQpOnClose: boolean;
  /** Called once per connection when it is gone. */
  onDisconnect: ((info: DisconnectInfo) => void) | undefined;
  clock: Clock;
  /** Test-only fault switches of the NIC loop (flush/driver.ts), as the in-process fabric's. */
  faults: NicDriverFaults | undefined;
  /**
   * Called when a NIC run finds no work left, inside the run (and so inside its group commit on a
   * strict region, flush/driver.ts): the node host runs the server CPU's passes the run scheduled
   * here, so that their records share the run's msync with the entries it drained (one msync a
   * socket read instead of two in a row). undefined: nothing.
   */
  onRunEnd: (() => void) | undefined;
  /**
   * A socket read that carried at least this many requests (a pipelined burst) holds every frame
   * it produces — the NIC's Responses, the server CPU's ACKs — until the end of the read's
   * microtasks, where the CPU passes its NIC run scheduled have run and written their RESULTs:
   * one socket write per read instead of two (issue 29). A durable signal is only delayed (by the
   * processing of its own burst), never sent earlier. A read with fewer requests (one outstanding
   * call: its client waits for exactly that signal) sends its durable signals at the end of its
   * pump, before any processing (test/node/latency-order).
   *
   * Off by default (Number.MAX_SAFE_INTEGER: no read holds): the hold makes a pipelined client's
   * durable signals wait for its burst's processing (wflush's durable p50 at 2 × 32 in flight
   * ≈ 0.6 → 1.0 ms, docs/benchmarks.md), which erases what a decoupled strategy exists to show.
   * 2 turns it on for every burst.
   */
  gatherReadRequestsMin: number;
}

export const TCP_SERVER_DEFAULTS: Readonly<TcpNicServerOptions> = Object.freeze({
  host: '127.0.0.1',
  port: 0,
  authToken: undefined,
  accept: undefined,
  maxFrameBytes: MAX_FRAME_BYTES_DEFAULT,
  maxConnections: 64,
  maxHandshakes: 64,
  handshakeEvictAfterMs: 500,
  handshakeBytesMax: HANDSHAKE_BYTES_MAX_DEFAULT,
  tickUnits: TICK_UNITS_DEFAULT,
  defer: nextTurn,
  highWaterBytes: 1 << 20,
  outgoingBytesMax: 64 << 20,
  handshakeTimeoutMs: 5_000,
  closeLingerMs: 2_000,
  idleDrain: true,
  destroyQpOnClose: true,
  onDisconnect: undefined,
  clock: systemClock,
  faults: undefined,
  onRunEnd: undefined,
  gatherReadRequestsMin: Number.MAX_SAFE_INTEGER,
});

const TCP_SERVER_CHECKS: OptionChecks<TcpNicServerOptions> = {
  host: nonEmptyString,
  port: intIn(0, 65535),
  authToken: authTokenCheck,
  accept: callable('must be a function (hello) => { qp, welcome }'),
  maxFrameBytes: frameBound,
  maxConnections: positiveInt,
  maxHandshakes: positiveInt,
  handshakeEvictAfterMs: intIn(0, 3_600_000),
  handshakeBytesMax: frameBound,
  tickUnits: positiveInt,
  defer: callable('must be a function (fn) => void that runs fn on a later turn of the event loop'),
  highWaterBytes: positiveInt,
  outgoingBytesMax: positiveIntAtLeast('highWaterBytes'),
  handshakeTimeoutMs: positiveMs,
  closeLingerMs: positiveMs,
  idleDrain: bool,
  destroyQpOnClose: bool,
  onDisconnect: optional(callable()),
  clock: clockCheck,
  faults: checkDriverFaults,
  onRunEnd: optional(callable()),
  gatherReadRequestsMin: positiveInt,
};

/**
 * The server's options, resolved and checked as the constructor does (exact TypeError / RangeError;
 * PMRPC_ERR_AUTH_REQUIRED for a non-loopback host without a token) — callable before anything else
 * is touched (the node host checks them before it opens or creates its PM file).
 */
export function resolveTcpServerOptions(options: Partial<TcpNicServerOptions>): TcpNicServerOptions {
  const o = resolveOptions(TCP_SERVER_DEFAULTS, options, TCP_SERVER_CHECKS);
  // Refused before anything binds: an unauthenticated NIC on a reachable address hands out PM.
  if (o.authToken === undefined && !isLoopbackHost(o.host)) {
    throw new PmrpcError(TransportErrorCodes.AUTH_REQUIRED, `binding ${o.host} (not loopback) requires an authToken`);
  }
  return o;
}

type ConnState = ConnectionStats['state'];

/** Bytes read (and dropped) from a peer after its Goodbye while waiting for it to close. */
const DISCARD_BYTES_MAX = 1 << 20;
/** A connection's output buffer (#write encodes its frames there; larger for a larger frame). */
const OUT_SLAB_BYTES = 16 * 1024;
const NO_OUT = Buffer.alloc(0);

class ServerConn {
  state: ConnState = 'handshake';
  readonly reader: FrameReader;
  /** The frame being decoded (in slices), if any. */
  decoding: FrameDecoder | undefined;
  qp: ServerQp | undefined;
  clientName = '';
  /** The client's receive bound (from its Hello). */
  outFrameMax = MIN_FRAME_BYTES;
  /**
   * Frames are encoded into `out` (no buffer per frame) and handed to the socket as one buffer —
   * out[outStart, outPos) — when no cork holds them (`corks`, counted like a socket's cork: #pump,
   * a gathering, a NIC run): one `write` of one buffer per flush instead of a corked `writev` of a
   * buffer per frame. A region handed to the socket is not written again until the socket has
   * sent everything (writableLength 0: the kernel has the bytes), so a pending write keeps its bytes.
   */
  out: Buffer = NO_OUT;
  outStart = 0;
  outPos = 0;
  corks = 0;
  /** Reading paused for back-pressure: #pump continues on the socket's 'drain' (or #flushOut's, if the socket emits none). */
  drainWait = false;
  /** Inside #pump (the connection is corked until its end). */
  pumping = false;
  /** Lazy frames gathered outside #pump wait in a cork until this connection's next durable write or the end of the turn (#write). */
  gathering = false;
  /** Counts gatherings: a deferred flush armed for an earlier one (already flushed) leaves a later one alone. */
  gatherGen = 0;
  /** Corked by a NIC run outside #pump (#runNic): uncorked when the run ends. */
  runCorked = false;
  /** Requests decoded by the outermost #pump in progress. */
  pumpRequests = 0;
  /** A pipelined read's cork, held until the end of its microtasks (#releaseRead; gatherReadRequestsMin). */
  readHeld = false;
  /** #releaseRead of this connection, as one closure (not one per read). */
  release: (() => void) | undefined;
  reads = 0;
  writes = 0;
  readPaused = false;
  handshakeTimer: TimerHandle | undefined;
  lingerTimer: TimerHandle | undefined;
  reason: { code: string | undefined; message: string } | undefined;
  framesIn = 0;
  framesOut = 0;
  bytesIn = 0;
  bytesOut = 0;
  backpressurePauses = 0;
  /** Bytes read and dropped after a Goodbye. */
  discarded = 0;
  /** When the connection arrived (the clock's ms). */
  since = 0;
  readonly remoteAddress: string;
  readonly remotePort: number;
  constructor(
    readonly socket: net.Socket,
    firstFrameBytesMax: number,
  ) {
    this.reader = new FrameReader(firstFrameBytesMax);
    this.remoteAddress = socket.remoteAddress ?? '';
    this.remotePort = socket.remotePort ?? 0;
  }
}

/**
 * Serves one Rnic over TCP. Each connection reaches the one QP that the accept callback gives it;
 * its Request frames execute on the NIC as the in-process fabric's immediate mode does (submit,
 * run, then drain the NIC cache when idle), and the NIC's responses and the server CPU's
 * notifications on that QP go back as frames on that socket.
 */
export class TcpNicServer {
  readonly nic: Rnic;
  readonly options: Readonly<TcpNicServerOptions>;
  /** Metrics hooks (src/node/metrics.ts); undefined unless metrics are on. */
  observer: TcpObserver | undefined;
  #server: net.Server | undefined;
  #conns = new Set<ServerConn>();
  #byQpn = new Map<number, ServerConn>();
  #driver: NicDriver;
  #closing: Promise<void> | undefined;
  #onEmpty: (() => void) | undefined;
  #stats: TcpServerStats = { connectionsAccepted: 0, connectionsOpened: 0, framesIn: 0, framesOut: 0, goodbyes: {}, deferrals: 0, tickUnitsMaxSeen: 0 };
  /** Connections that have not sent a complete Hello, oldest first (the one evicted when full). */
  #handshaking = new Set<ServerConn>();
  /** Connections with frames left to decode, waiting for the next turn (round robin). */
  #waiting = new Set<ServerConn>();
  /** Work units left in this turn of the event loop. */
  #budget: number;
  #tickArmed = false;
  #tickSpent = 0;
  /** QPs whose execution threw: not stepped again (their connection is closing). */
  #failedQps = new Set<number>();
  #rr = 0;
  /** Requests submitted by #execute that no NIC run has picked up yet (the run comes once per socket read). */
  #runPending = false;
  /** Bounds of the Responses of those requests (responseBoundBytes): #pump runs the NIC early when they could pass the high-water mark. */
  #unrunBytes = 0;
  /** Connections corked by the NIC run in progress (#runNic), uncorked at its end. */
  #runCorked: ServerConn[] = [];
  #inRun = false;

  constructor(nic: Rnic, options: Partial<TcpNicServerOptions>) {
    if (!(nic instanceof Rnic)) throw new TypeError('nic must be an Rnic');
    const o = resolveTcpServerOptions(options);
    this.nic = nic;
    this.options = Object.freeze(o);
    this.#driver = new NicDriver(nic, o.idleDrain, o.faults === undefined ? {} : Object.freeze({ ...o.faults }), (send) => this.#corked(send));
    this.#budget = o.tickUnits;
  }

  /** Binds and starts accepting; resolves with the bound address. */
  listen(): Promise<{ host: string; port: number }> {
    if (this.#server !== undefined) return Promise.reject(new TypeError('listen() may be called only once'));
    const server = net.createServer({ noDelay: true, highWaterMark: this.options.highWaterBytes }, (s) => this.#onConnection(s));
    this.#server = server;
    return new Promise((resolve, reject) => {
      const onError = (e: Error): void => reject(new PmrpcError(TransportErrorCodes.LISTEN, `cannot listen on ${this.options.host}:${this.options.port}: ${e.message}`, { cause: e }));
      server.once('error', onError);
      server.listen({ host: this.options.host, port: this.options.port }, () => {
        server.off('error', onError);
        const a = this.address();
        // A hostname that resolved to a non-loopback address is caught here (the check above sees names only).
        if (this.options.authToken === undefined && !isLoopbackHost(a.host)) {
          server.close();
          reject(new PmrpcError(TransportErrorCodes.AUTH_REQUIRED, `${this.options.host} bound ${a.host} (not loopback): an authToken is required`));
          return;
        }
        resolve(a);
      });
    });
  }

  /** The bound address (after listen()). */
  address(): { host: string; port: number } {
    const a = this.#server?.address();
    if (a === undefined || a === null || typeof a === 'string') throw new TypeError('address(): the server is not listening');
    return { host: a.address, port: a.port };
  }

  get connections(): number {
    return this.#conns.size;
  }

  get stats(): TcpServerStats {
    return { ...this.#stats, goodbyes: { ...this.#stats.goodbyes } };
  }

  connectionStats(): ConnectionStats[] {
    return [...this.#conns].map((c) => ({
      qpn: c.qp?.qpn,
      clientName: c.clientName,
      state: c.state,
      framesIn: c.framesIn,
      framesOut: c.framesOut,
      bytesIn: c.bytesIn,
      bytesOut: c.bytesOut,
      outgoingBytes: c.socket.writableLength + c.outPos - c.outStart,
      readPaused: c.readPaused,
      backpressurePauses: c.backpressurePauses,
      reads: c.reads,
      writes: c.writes,
    }));
  }

  /** Stops accepting, says Goodbye (PMRPC_ERR_SERVER_CLOSED) to every connection; resolves when all are closed. The Rnic stays open. */
  close(): Promise<void> {
    if (this.#closing !== undefined) return this.#closing;
    const server = this.#server;
    this.#closing = new Promise<void>((resolve) => {
      if (server === undefined || !server.listening) {
        for (const c of this.#conns) c.socket.destroy();
        resolve();
        return;
      }
      // net.Server's close callback runs once every socket is gone (the linger timer bounds that);
      // our own 'close' handlers (onDisconnect) may still be pending then, so wait for them too.
      server.close(() => {
        if (this.#conns.size === 0) resolve();
        else this.#onEmpty = resolve;
      });
      for (const c of [...this.#conns]) this.#goodbye(c, TransportErrorCodes.SERVER_CLOSED, 'the server is shutting down');
    });
    return this.#closing;
  }

  // ------------------------------------------------------------------ connection engine

  #onConnection(socket: net.Socket): void {
    if (this.#closing !== undefined) {
      socket.destroy();
      return;
    }
    const c = new ServerConn(socket, Math.min(this.options.maxFrameBytes, this.options.handshakeBytesMax - 4));
    c.since = this.options.clock.nowMs();
    this.#stats.connectionsAccepted++;
    socket.on('data', (chunk: Buffer) => this.#onData(c, chunk));
    socket.on('drain', () => {
      c.drainWait = false;
      this.#pump(c);
    });
    socket.on('end', () => this.#setReason(c, undefined, 'the client closed the connection'));
    socket.on('error', (e) => this.#setReason(c, TransportErrorCodes.LINK_CLOSED, `socket error: ${e.message}`));
    socket.on('close', () => this.#finalize(c));
    this.#conns.add(c);
    this.#handshaking.add(c);
    if (this.#handshaking.size > this.options.maxHandshakes) {
      // Handshaking connections have their own pool. When it is full, the oldest makes room if it
      // has had handshakeEvictAfterMs to say Hello: idle connections cannot lock out a client that
      // is (re)connecting, and a burst of clients connecting at once does not evict its own members.
      const oldest = this.#handshaking.values().next().value as ServerConn;
      const evict = this.options.clock.nowMs() - oldest.since >= this.options.handshakeEvictAfterMs ? oldest : c;
      this.#goodbye(evict, TransportErrorCodes.TOO_MANY_HANDSHAKES, evict === c ? `${this.options.maxHandshakes} connections are handshaking (maxHandshakes), none for ${this.options.handshakeEvictAfterMs} ms yet: try again` : `${this.options.maxHandshakes} connections were handshaking (maxHandshakes): the oldest is closed to make room`);
    }
    c.handshakeTimer = this.options.clock.setTimer(this.options.handshakeTimeoutMs, () => {
      if (c.state === 'handshake' || c.state === 'accepting') this.#goodbye(c, TransportErrorCodes.HANDSHAKE_TIMEOUT, `no handshake within ${this.options.handshakeTimeoutMs} ms`);
    });
  }

  #onData(c: ServerConn, chunk: Buffer): void {
    if (c.state === 'closing' || c.state === 'closed') {
      // After a Goodbye, input is discarded while the peer closes — up to DISCARD_BYTES_MAX: a peer
      // that keeps sending is no longer read (the linger timer destroys its socket).
      c.discarded += chunk.length;
      if (c.discarded > DISCARD_BYTES_MAX) this.#pause(c);
      return;
    }
    c.bytesIn += chunk.length;
    c.reads++;
    c.reader.append(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
    this.#pump(c);
    // Untrusted until bound: before its Welcome a peer may cost only handshakeBytesMax bytes (a
    // first frame announced longer was refused by the reader's bound inside pump).
    if ((c.state === 'handshake' || c.state === 'accepting') && c.bytesIn > this.options.handshakeBytesMax) {
      this.#goodbye(c, TransportErrorCodes.HANDSHAKE, `${c.bytesIn} bytes before the Welcome, more than handshakeBytesMax (${this.options.handshakeBytesMax})`);
    }
  }

  /**
   * Decodes and handles this connection's frames, one slice at a time, while the tick budget lasts
   * and its outgoing buffer is below the high-water mark; otherwise stops reading it until the next
   * turn (budget) or its drain (back-pressure). Memory: the reader holds at most one partial frame
   * and the rest of one socket read.
   */
  #pump(c: ServerConn): void {
    const s = c.socket;
    c.corks++;
    const nested = c.pumping;
    c.pumping = true;
    try {
      for (;;) {
        if (c.state !== 'handshake' && c.state !== 'open') return;
        // Requests submitted but not yet run whose Responses could pass the high-water mark run now
        // (their Responses count in the check below).
        if (this.#runPending && s.writableLength + c.outPos - c.outStart + this.#unrunBytes > this.options.highWaterBytes) this.#runNic();
        if (c.state === 'open' && s.writableLength + c.outPos - c.outStart > this.options.highWaterBytes) {
          if (!c.readPaused) c.backpressurePauses++;
          c.drainWait = true;
          this.#pause(c);
          return;
        }
        if (this.#budget <= 0) {
          this.#wait(c);
          return;
        }
        if (c.decoding === undefined) {
          let frame: Uint8Array | undefined;
          try {
            frame = c.reader.next();
          } catch (e) {
            this.#goodbye(c, codeOf(e, FRAME_TOO_LARGE), c.state === 'handshake' ? `${bareMessage(e)} (a connection's first frame, before its Welcome)` : bareMessage(e));
            return;
          }
          if (frame === undefined) break;
          c.framesIn++;
          this.#stats.framesIn++;
          // A canonical Request within the budget: decoded in one call, as the decoder's one step would.
          const whole = c.state === 'open' ? FrameDecoder.decodeRequest(frame, this.#budget, this.#whole) : undefined;
          if (whole !== undefined) {
            const m = whole.message!;
            whole.message = undefined;
            this.#spend(whole.units);
            this.#onMessage(c, m);
            continue;
          }
          c.decoding = new FrameDecoder(frame, { firstFrame: c.state === 'handshake' });
        }
        let step;
        try {
          step = c.decoding.step(this.#budget);
        } catch (e) {
          c.decoding = undefined;
          this.#goodbye(c, codeOf(e, BAD_FRAME), bareMessage(e));
          return;
        }
        this.#spend(step.units);
        if (step.message !== undefined) {
          c.decoding = undefined;
          this.#onMessage(c, step.message);
        }
      }
      // Everything buffered is handled: read more.
      this.#resume(c);
    } finally {
      // One NIC run for every request decoded from this read (one pass: strict mode's one msync),
      // its Responses into the cork, before the pump's frames leave.
      if (!nested && this.#runPending) this.#runNic();
      c.pumping = nested;
      if (!nested && c.pumpRequests >= this.options.gatherReadRequestsMin && !c.readHeld && c.state === 'open') {
        // A pipelined burst: its NIC run scheduled the server CPU's passes (microtasks); the
        // pump's cork stays until they have run, so the burst's Responses, ACKs and RESULTs leave
        // in one write. Delayed by the burst's processing, never advanced: every frame was handed
        // over as before (an ACK after the persist it reports), only the write comes later.
        c.readHeld = true;
        queueMicrotask((c.release ??= () => this.#releaseRead(c)));
      } else {
        this.#uncork(c);
        // The pump's frames (durable Responses) leave now, with anything gathered before them.
        if (!nested) this.#flushGathered(c);
      }
      if (!nested) c.pumpRequests = 0;
    }
  }

  /** The end of a pipelined read's microtasks: its frames and its passes' leave in one write. */
  #releaseRead(c: ServerConn): void {
    if (!c.readHeld) return;
    c.readHeld = false;
    this.#uncork(c);
    this.#flushGathered(c);
  }

  #pause(c: ServerConn): void {
    if (c.readPaused) return;
    c.readPaused = true;
    c.socket.pause();
  }

  #resume(c: ServerConn): void {
    if (!c.readPaused) return;
    c.readPaused = false;
    c.socket.resume();
  }

  /** Out of budget: stop reading `c` and continue it on the next turn of the event loop. */
  #wait(c: ServerConn): void {
    this.#pause(c);
    if (!this.#waiting.has(c)) {
      this.#waiting.add(c);
      this.#stats.deferrals++;
    }
    this.#armTick();
  }

  #spend(units: number): void {
    this.#budget -= units;
    this.#tickSpent += units;
    this.#armTick();
  }

  #armTick(): void {
    if (this.#tickArmed) return;
    this.#tickArmed = true;
    this.options.defer(this.#tick);
  }

  /** #onTick, as one closure (not one per turn). */
  readonly #tick = (): void => this.#onTick();

  /** A new turn of the event loop: a fresh budget, the NIC's pending work, then waiting connections in order. */
  #onTick(): void {
    this.#tickArmed = false;
    if (this.#tickSpent > this.#stats.tickUnitsMaxSeen) this.#stats.tickUnitsMaxSeen = this.#tickSpent;
    this.#tickSpent = 0;
    this.#budget = this.options.tickUnits;
    // Waiting connections first, oldest first (one that waits again goes to the back): their
    // requests join the NIC's round robin, so a long request cannot starve the others.
    for (const c of [...this.#waiting]) {
      if (this.#budget <= 0) break;
      this.#waiting.delete(c);
      this.#pump(c);
    }
    this.#runNic();
    if (this.#waiting.size > 0 || this.#nicBusy()) this.#armTick();
  }

  #onMessage(c: ServerConn, m: WireMessage): void {
    if (c.state === 'handshake') {
      if (m.type !== 'hello') this.#goodbye(c, TransportErrorCodes.HANDSHAKE, `the first frame must be a Hello, got ${m.type}`);
      else this.#onHello(c, m);
      return;
    }
    if (m.type === 'goodbye') {
      this.#setReason(c, m.code, `the client said goodbye: ${m.message}`);
      c.socket.end();
      c.state = 'closing';
      this.#linger(c);
      return;
    }
    if (m.type !== 'request') {
      this.#goodbye(c, BAD_FRAME, `after the handshake a client sends only Request frames, got ${m.type}`);
      return;
    }
    const qpn = c.qp!.qpn;
    if (m.qpn !== qpn) {
      // A client reaches only its own QP (and through it only its own PD's MRs).
      this.#goodbye(c, TransportErrorCodes.WRONG_QP, `this connection reaches QP ${qpn}, the request names QP ${m.qpn}`);
      return;
    }
    const bound = responseBoundBytes(m);
    if (bound > c.outFrameMax) {
      this.#goodbye(c, FRAME_TOO_LARGE, `the response to request ${m.seq} could take ${bound} bytes, past the client's frame bound of ${c.outFrameMax}`);
      return;
    }
    this.#execute(c, m, bound);
  }

  /**
   * The in-process fabric's immediate mode, through the same NIC loop (flush/ NicDriver): submit,
   * run, drain when idle — but at most the tick budget of work requests per turn of the event loop,
   * round robin over the QPs with work; what is left runs on the next turns.
   */
  #execute(c: ServerConn, m: RequestMessage, bound: number): void {
    // A QP destroyed under the connection (or a closed NIC): submit() throws PMRPC_ERR_NO_SUCH_QP,
    // which becomes this connection's Goodbye, so the client does not wait forever.
    try {
      this.nic.submit(m);
    } catch (e) {
      this.#goodbye(c, codeOf(e, TransportErrorCodes.INTERNAL), `request ${m.seq}: ${bareMessage(e)}`);
      return;
    }
    if (this.observer !== undefined) this.observer.request(m.qpn, m.seq);
    // The NIC runs once per socket read, after every request of the read is submitted (#pump's
    // end): one pass, so a strict region msyncs once for them all. A sink or a host-write listener
    // that submits while the loop runs: the running loop serves the request.
    this.#runPending = true;
    this.#unrunBytes += bound;
    c.pumpRequests++;
    if (!c.pumping) this.#runNic();
  }

  #nicBusy(): boolean {
    return this.nic.busyQpsInto(this.#busyScratch, this.#failedQps) > 0;
  }

  /** #pump's decoded step of a whole Request frame, reused (one object per request otherwise). */
  readonly #whole: DecodeStep = { units: 0, message: undefined };

  /** #stepOne's list of busy QPs, reused (one per work request otherwise). */
  readonly #busyScratch: number[] = [];

  /** The step of #runNic's loop (one closure, not one per run). */
  readonly #step = (): boolean => this.#stepOne();

  #runNic(): void {
    if (this.#driver.running) return;
    this.#runPending = false;
    this.#unrunBytes = 0;
    // Frames the run writes outside a pump (a later turn's work) wait in a cork until its end: one
    // write per connection per run. The run is NIC work only (the server CPU's pass is a later
    // microtask), so no durable signal waits behind processing.
    try {
      this.#corked(this.#runSteps);
    } catch (e) {
      // The idle drain threw (a closed region): nothing to blame a connection for; the next request reports it.
      void e;
    }
    if (this.#nicBusy()) this.#armTick();
  }

  /** #runNic's run, as one closure. */
  readonly #runSteps = (): void => {
    this.#driver.runSteps(this.#step, Number.MAX_SAFE_INTEGER);
  };

  /**
   * Runs `fn` (a NIC run, or the release of a strict pass's Responses when its msync calls back)
   * with the frames it writes outside a pump gathered: one write per connection at its end.
   */
  #corked(fn: () => void): void {
    if (this.#inRun) return fn();
    this.#inRun = true;
    try {
      fn();
    } finally {
      this.#inRun = false;
      const corked = this.#runCorked;
      if (corked.length > 0) {
        this.#runCorked = [];
        for (const c of corked) {
          c.runCorked = false;
          this.#uncork(c);
          this.#flushGathered(c);
        }
      }
    }
  }

  /** Executes one work request of the next busy QP (round robin), within the budget. */
  #stepOne(): boolean {
    if (this.#budget <= 0) return false;
    const busy = this.#busyScratch;
    const n = this.nic.busyQpsInto(busy, this.#failedQps.size === 0 ? undefined : this.#failedQps);
    if (n === 0) {
      this.options.onRunEnd?.();
      return false;
    }
    const q = busy[this.#rr++ % n]!;
    this.#spend(execUnits(this.nic.peekWr(q)?.wr));
    try {
      this.nic.step(q);
    } catch (e) {
      this.#failedQps.add(q);
      const c = this.#byQpn.get(q);
      if (c !== undefined) this.#goodbye(c, codeOf(e, TransportErrorCodes.INTERNAL), `executing a request on QP ${q} failed: ${bareMessage(e)}`);
    }
    return true;
  }

  #onHello(c: ServerConn, h: HelloMessage): void {
    if (h.version !== PROTOCOL_VERSION) {
      this.#goodbye(c, TransportErrorCodes.PROTOCOL_VERSION, `the server speaks protocol version ${PROTOCOL_VERSION}, the client ${h.version}`);
      return;
    }
    if (this.options.authToken !== undefined && !tokenEquals(h.authToken, this.options.authToken)) {
      this.#goodbye(c, TransportErrorCodes.AUTH, h.authToken === '' ? 'this server requires an auth token' : 'wrong auth token');
      return;
    }
    if (h.maxFrameBytes < MIN_FRAME_BYTES) {
      this.#goodbye(c, TransportErrorCodes.HANDSHAKE, `the client's maxFrameBytes ${h.maxFrameBytes} is below ${MIN_FRAME_BYTES}`);
      return;
    }
    let bound = 0;
    for (const x of this.#conns) if (x.state === 'accepting' || x.state === 'open') bound++;
    if (bound >= this.options.maxConnections) {
      this.#goodbye(c, TransportErrorCodes.TOO_MANY_CONNECTIONS, `the server holds its maximum of ${this.options.maxConnections} connections`);
      return;
    }
    c.clientName = h.clientName;
    c.outFrameMax = h.maxFrameBytes;
    c.state = 'accepting';
    this.#handshaking.delete(c);
    // Frames are not decoded while the application decides (the client waits for its Welcome); bytes
    // are still read and counted against handshakeBytesMax.
    const info: HelloInfo = { version: h.version, clientName: h.clientName, payload: h.payload, remoteAddress: c.remoteAddress, remotePort: c.remotePort };
    let r: AcceptResult | Promise<AcceptResult>;
    try {
      r = this.options.accept!(info);
    } catch (e) {
      this.#goodbye(c, codeOf(e, TransportErrorCodes.REFUSED), bareMessage(e));
      return;
    }
    if (r !== null && typeof r === 'object' && typeof (r as Promise<AcceptResult>).then === 'function') {
      (r as Promise<AcceptResult>).then(
        (ok) => this.#finishAccept(c, ok),
        (e: unknown) => {
          if (c.state === 'accepting') this.#goodbye(c, codeOf(e, TransportErrorCodes.REFUSED), bareMessage(e));
        },
      );
    } else {
      this.#finishAccept(c, r as AcceptResult);
    }
  }

  #finishAccept(c: ServerConn, r: AcceptResult): void {
    const valid = r !== null && typeof r === 'object' && r.qp instanceof ServerQp && (r.welcome === undefined || r.welcome instanceof Uint8Array);
    if (c.state !== 'accepting') {
      // The connection went away while the application decided: its QP has no client.
      if (valid && this.options.destroyQpOnClose && !this.#byQpn.has(r.qp.qpn)) this.nic.destroyQp(r.qp.qpn);
      return;
    }
    if (!valid) {
      this.#goodbye(c, TransportErrorCodes.REFUSED, 'accept() must return { qp: ServerQp, welcome?: Uint8Array }');
      return;
    }
    const qpn = r.qp.qpn;
    if (this.#byQpn.has(qpn)) {
      this.#goodbye(c, TransportErrorCodes.QP_IN_USE, `QP ${qpn} already serves another connection`);
      return;
    }
    try {
      this.nic.attach(qpn, (m, lazy) => this.#sink(c, m, lazy));
    } catch (e) {
      this.#goodbye(c, TransportErrorCodes.REFUSED, `accept() returned QP ${qpn}, which this NIC does not have: ${messageOf(e)}`);
      return;
    }
    c.qp = r.qp;
    this.#byQpn.set(qpn, c);
    c.state = 'open';
    c.reader.maxFrameBytes = this.options.maxFrameBytes;
    c.handshakeTimer?.cancel();
    this.#stats.connectionsOpened++;
    const welcome: WelcomeMessage = { type: 'welcome', version: PROTOCOL_VERSION, qpn, maxFrameBytes: this.options.maxFrameBytes, payload: r.welcome ?? new Uint8Array(0) };
    this.#write(c, welcome);
    this.#pump(c);
  }

  /** The NIC's (and the server CPU's) messages for this connection's QP. */
  #sink(c: ServerConn, m: ServerMessage, lazy?: boolean): void {
    if (c.state !== 'open') return;
    if (this.observer !== undefined) this.observer.message(m.qpn, m);
    this.#write(c, m, lazy === true);
  }

  /**
   * Writes one frame to the connection. Inside #pump the socket is corked and the frames leave in
   * one write at its end; inside a NIC run outside a pump (a later turn's work, #runNic) likewise at
   * the run's end. Outside both (the server CPU's notifications) a frame the sender marks `lazy` (a
   * RESULT of a decoupled strategy: never a durable signal) is gathered: the socket stays corked
   * until this connection's next write of a durable signal or, at the latest, the end of the
   * current turn of the event loop (options.defer) — the RESULTs of every CPU pass of a turn leave
   * in one write per connection. Any other frame (a durable signal: a Response, an ACK, a
   * coupled reply) leaves at once (at the end of its pump or run), with what was gathered before
   * it — a durable signal never waits behind processing, nor behind its RESULT
   * (test/node/latency-order) — except after a read of a pipelined burst (gatherReadRequestsMin):
   * its pump's cork is held to the end of the read's microtasks, so the burst's durable signals
   * leave with the RESULTs of its passes in one write (#pump, #releaseRead).
   */
  #write(c: ServerConn, m: WireMessage, lazy = false): void {
    let framedLength: number;
    try {
      framedLength = sizeFrame(m);
    } catch (e) {
      this.#goodbye(c, TransportErrorCodes.INTERNAL, `cannot encode a ${m.type}: ${messageOf(e)}`);
      return;
    }
    const frameLength = framedLength - 4;
    if (frameLength > c.outFrameMax) {
      this.#goodbye(c, FRAME_TOO_LARGE, `a ${m.type} of ${frameLength} bytes exceeds the client's frame bound of ${c.outFrameMax}`);
      return;
    }
    const s = c.socket;
    const outgoing = s.writableLength + c.outPos - c.outStart;
    if (outgoing + framedLength > this.options.outgoingBytesMax) {
      // Requests are already held back by the pause; this is server-initiated traffic to a client that does not read.
      this.#setReason(c, TransportErrorCodes.BACKPRESSURE, `the client does not read: ${outgoing} bytes wait to be sent (outgoingBytesMax ${this.options.outgoingBytesMax})`);
      c.state = 'closing';
      s.destroy();
      return;
    }
    if (c.outPos + framedLength > c.out.length) this.#growOut(c, framedLength);
    writeSizedFrame(m, c.out, c.outPos);
    c.outPos += framedLength;
    if (lazy && !c.pumping && !c.gathering && !c.readHeld) {
      c.gathering = true;
      const gen = ++c.gatherGen;
      c.corks++;
      // Until the end of this turn of the event loop (after every socket read of the turn and the
      // CPU passes they started): the RESULTs of all of them leave in one write per connection,
      // unless a durable signal takes them along earlier. (Holding them to the next turn, for the
      // next read's Responses, was tried: it delays a RESULT by up to a round trip when few
      // requests are in flight, and did not cut the server's writes — docs/benchmarks.md.)
      this.options.defer(() => {
        if (c.gatherGen === gen) this.#flushGathered(c);
      });
    } else if (this.#inRun && !c.pumping && !c.runCorked) {
      c.runCorked = true;
      c.corks++;
      this.#runCorked.push(c);
    }
    if (c.corks === 0) this.#flushOut(c);
    else if (!lazy && !c.pumping && !c.runCorked) this.#flushGathered(c);
    c.framesOut++;
    c.bytesOut += framedLength;
    this.#stats.framesOut++;
  }

  /** Room for `n` more bytes in c's output: a new buffer, with the bytes not yet handed to the socket. */
  #growOut(c: ServerConn, n: number): void {
    const pending = c.outPos - c.outStart;
    const out = Buffer.allocUnsafe(Math.max(OUT_SLAB_BYTES, pending + n));
    if (pending > 0) out.set(c.out.subarray(c.outStart, c.outPos), 0);
    c.out = out;
    c.outStart = 0;
    c.outPos = pending;
  }

  /** Ends one cork of c (#pump, a gathering, a NIC run): the last one hands c's frames to the socket. */
  #uncork(c: ServerConn): void {
    if (--c.corks === 0) this.#flushOut(c);
  }

  /** Hands c's gathered frames to the socket in one write (one buffer). */
  #flushOut(c: ServerConn): void {
    if (c.outPos === c.outStart) return;
    const s = c.socket;
    const chunk = c.out.subarray(c.outStart, c.outPos);
    c.outStart = c.outPos;
    if (s.destroyed) return;
    s.write(chunk);
    c.writes++;
    // Written through to the kernel (the usual case on an uncongested socket): the buffer is free again.
    if (s.writableLength === 0) c.outStart = c.outPos = 0;
    else if (c.outPos > c.out.length >>> 1) c.out = NO_OUT; // the socket holds a view of it: the next frame starts a new one
    // A socket emits 'drain' only after a write() that found it past its high-water mark; one write
    // of everything the pump gathered can pass the mark and reach the kernel at once (no 'drain'):
    // the pump paused for it continues on the next turn.
    if (c.drainWait && !s.writableNeedDrain) {
      c.drainWait = false;
      this.options.defer(() => {
        if (c.readPaused && !c.drainWait) this.#pump(c);
      });
    }
  }

  /** Uncorks what #write gathered (once; a later call does nothing). */
  #flushGathered(c: ServerConn): void {
    if (!c.gathering) return;
    c.gathering = false;
    this.#uncork(c);
  }

  /** Sends a Goodbye and closes the connection; every other connection is untouched. */
  #goodbye(c: ServerConn, code: string, message: string): void {
    if (c.state === 'closing' || c.state === 'closed') return;
    // Requests decoded before the bad frame run first: their Responses precede the Goodbye.
    if (this.#runPending && c.state === 'open') this.#runNic();
    this.#setReason(c, code, message);
    this.#stats.goodbyes[code] = (this.#stats.goodbyes[code] ?? 0) + 1;
    c.state = 'closing';
    c.decoding = undefined;
    this.#handshaking.delete(c);
    this.#waiting.delete(c);
    c.handshakeTimer?.cancel();
    let bytes: Uint8Array | undefined;
    try {
      bytes = frameBytes(encodeMessage({ type: 'goodbye', code, message }));
    } catch {
      bytes = undefined; // a code the codec refuses: close without a Goodbye
    }
    // Keep reading (and discarding) so the client's FIN is seen; end() sends the Goodbye first.
    this.#resume(c);
    // What #write gathered leaves first (a cork still open will find nothing to flush).
    this.#flushOut(c);
    if (bytes !== undefined) c.socket.end(bytes);
    else c.socket.end();
    this.#linger(c);
  }

  #linger(c: ServerConn): void {
    c.lingerTimer ??= this.options.clock.setTimer(this.options.closeLingerMs, () => c.socket.destroy());
  }

  /** The first reason wins: it is the cause, later ones are consequences. */
  #setReason(c: ServerConn, code: string | undefined, message: string): void {
    c.reason ??= { code, message };
  }

  #finalize(c: ServerConn): void {
    if (c.state === 'closed') return;
    c.state = 'closed';
    c.handshakeTimer?.cancel();
    c.lingerTimer?.cancel();
    c.decoding = undefined;
    this.#conns.delete(c);
    this.#handshaking.delete(c);
    this.#waiting.delete(c);
    const qpn = c.qp?.qpn;
    if (qpn !== undefined && this.#byQpn.get(qpn) === c) {
      this.#byQpn.delete(qpn);
      this.#failedQps.delete(qpn);
      if (this.options.destroyQpOnClose) this.nic.destroyQp(qpn);
      else {
        try {
          this.nic.attach(qpn, () => {}); // the QP outlives the connection: its messages now go nowhere
        } catch {
          // the application destroyed the QP itself
        }
      }
    }
    const reason = c.reason ?? { code: TransportErrorCodes.LINK_CLOSED, message: 'the connection closed' };
    try {
      this.options.onDisconnect?.({ qpn, clientName: c.clientName, remoteAddress: c.remoteAddress, remotePort: c.remotePort, code: reason.code, message: reason.message, bytesIn: c.bytesIn });
    } finally {
      if (this.#conns.size === 0 && this.#onEmpty !== undefined) {
        const done = this.#onEmpty;
        this.#onEmpty = undefined;
        done();
      }
    }
  }
}
