/**
 * The TCP link (DESIGN §6): one `Rnic` served over TCP (`TcpNicServer`) and the client end of a
 * connection (`TcpLink`, a `Link` of flush/). Frames are the length-delimited protobuf frames of
 * codec.ts; one Request frame carries any number of work requests (doorbell batching).
 *
 * A connection: Hello (client) → Welcome or Goodbye (server) → Request frames one way, Response and
 * Notify frames the other. Whoever closes a connection because of a protocol error first sends a
 * Goodbye naming a PMRPC_ERR_ code. docs/wire.md describes the handshake, flow control, auth and
 * error behaviour; the codes are listed there.
 *
 * Time comes from an injected Clock (DESIGN §7): the handshake and close-linger timeouts are the
 * only timers.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import net from 'node:net';
import { PmrpcError, systemClock, type Clock, type ErrorCode, type TimerHandle } from '../../pmem/index.js';
import { MAX_WR_BYTES, MAX_WRS_PER_MESSAGE, NicErrorCodes, Rnic, ServerQp, type ClientMessage, type Completion, type Link, type RequestMessage, type ServerMessage, type WrOp } from '../../flush/index.js';
import {
  AUTH_TOKEN_CHARS_MAX,
  BAD_FRAME,
  CLIENT_NAME_CHARS_MAX,
  decodeMessage,
  encodeMessage,
  FRAME_TOO_LARGE,
  FrameReader,
  frameBytes,
  MAX_FRAME_BYTES_DEFAULT,
  PROTOCOL_VERSION,
  type HelloMessage,
  type WelcomeMessage,
  type WireMessage,
} from './codec.js';

/** The codes of the transport (docs/wire.md). */
export const TransportErrorCodes = Object.freeze({
  /** A frame that does not decode, or a message the receiver does not expect at that point. */
  BAD_FRAME,
  /** A length prefix past the receiver's bound, or a message that cannot fit the peer's bound. */
  FRAME_TOO_LARGE,
  /** A server was asked to bind a non-loopback host without an auth token. */
  AUTH_REQUIRED: 'PMRPC_ERR_AUTH_REQUIRED',
  /** The Hello carried a wrong (or no) auth token. */
  AUTH: 'PMRPC_ERR_AUTH',
  /** The first frame of a connection was not a Hello (or the Welcome was not a Welcome). */
  HANDSHAKE: 'PMRPC_ERR_HANDSHAKE',
  /** No Hello (server) or no Welcome (client) within handshakeTimeoutMs. */
  HANDSHAKE_TIMEOUT: 'PMRPC_ERR_HANDSHAKE_TIMEOUT',
  /** The peers speak different protocol versions. */
  PROTOCOL_VERSION: 'PMRPC_ERR_PROTOCOL_VERSION',
  /** A Request named a QP other than the one its connection was given. */
  WRONG_QP: 'PMRPC_ERR_WRONG_QP',
  /** The server's accept callback refused the client (or returned something unusable). */
  REFUSED: 'PMRPC_ERR_REFUSED',
  /** accept() returned a QP that another live connection already reaches. */
  QP_IN_USE: 'PMRPC_ERR_QP_IN_USE',
  /** The server already holds maxConnections connections. */
  TOO_MANY_CONNECTIONS: 'PMRPC_ERR_TOO_MANY_CONNECTIONS',
  /** Client: the send buffer is full past sendBufferBytesMax. Server: a client that does not read. */
  BACKPRESSURE: 'PMRPC_ERR_BACKPRESSURE',
  /** The server is shutting down (close()). */
  SERVER_CLOSED: 'PMRPC_ERR_SERVER_CLOSED',
  /** The TCP connection could not be opened. */
  CONNECT: 'PMRPC_ERR_CONNECT',
  /** The server could not bind its address. */
  LISTEN: 'PMRPC_ERR_LISTEN',
  /** The link is closed: what was outstanding can no longer complete. */
  LINK_CLOSED: NicErrorCodes.LINK_CLOSED,
  /** Too many requests outstanding on one link (outstandingMessagesMax). */
  QUEUE_FULL: NicErrorCodes.QUEUE_FULL,
  /** The server failed while executing a frame (a bug, or a closed region): that connection closes. */
  INTERNAL: 'PMRPC_ERR_INTERNAL',
  /** The connection's QP was destroyed (or the NIC closed) under it: a request could not be answered. */
  NO_SUCH_QP: NicErrorCodes.NO_SUCH_QP,
} as const);

/** A frame bound smaller than this could not carry a handshake. */
export const MIN_FRAME_BYTES = 1024;
const U32_MAX = 0xffffffff;
/** Upper bound of one completion's encoding without its data (ids, op, status, code, message). */
const COMPLETION_OVERHEAD_BYTES = 512;

// ---------------------------------------------------------------------------- shared helpers

const loopback = new net.BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

/** Whether `host` is a loopback address (127.0.0.0/8, ::1, ::ffff:127.x.x.x) or `localhost`. */
export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost') return true;
  const family = net.isIP(host);
  if (family === 4) return loopback.check(host, 'ipv4');
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(host);
    if (mapped) return loopback.check(mapped[1]!, 'ipv4');
    return loopback.check(host, 'ipv6');
  }
  return false;
}

/** Constant-time token comparison: hashing first makes the time independent of the lengths too. */
function tokenEquals(a: string, b: string): boolean {
  const h = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();
  return timingSafeEqual(h(a), h(b));
}

function resolve<T extends object>(defaults: Readonly<T>, options: Partial<T>): T {
  return { ...defaults, ...Object.fromEntries(Object.entries(options ?? {}).filter(([, v]) => v !== undefined)) } as T;
}

function positiveInt(name: string, v: unknown): void {
  if (!Number.isSafeInteger(v) || (v as number) < 1) throw new RangeError(`${name} must be a positive integer, got ${String(v)}`);
}

function positiveMs(name: string, v: unknown): void {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw new RangeError(`${name} must be a positive number of milliseconds, got ${String(v)}`);
}

function frameBound(name: string, v: unknown): void {
  if (!Number.isSafeInteger(v) || (v as number) < MIN_FRAME_BYTES || (v as number) > U32_MAX) {
    throw new RangeError(`${name} must be an integer in [${MIN_FRAME_BYTES}, ${U32_MAX}], got ${String(v)}`);
  }
}

function checkClock(clock: unknown): void {
  const c = clock as Partial<Clock> | null;
  if (c === null || typeof c !== 'object' || typeof c.setTimer !== 'function' || typeof c.nowMs !== 'function') throw new TypeError('clock must be a Clock (nowMs, setTimer)');
}

function checkToken(token: unknown): void {
  if (token !== undefined && (typeof token !== 'string' || token.length === 0 || token.length > AUTH_TOKEN_CHARS_MAX)) {
    throw new TypeError(`authToken must be a non-empty string of at most ${AUTH_TOKEN_CHARS_MAX} characters`);
  }
}

function codeOf(e: unknown, fallback: string): string {
  return e instanceof PmrpcError ? e.code : fallback;
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Strips a PmrpcError's "CODE: " prefix, so a Goodbye does not repeat its code in its message. */
function bareMessage(e: unknown): string {
  const m = messageOf(e);
  return e instanceof PmrpcError && m.startsWith(`${e.code}: `) ? m.slice(e.code.length + 2) : m;
}

/** The largest Response a Request can produce: checked before executing, so a reply never exceeds the client's frame bound. */
export function responseBoundBytes(msg: RequestMessage): number {
  const n = Math.min(msg.wrs.length, MAX_WRS_PER_MESSAGE);
  let bytes = 64;
  for (let i = 0; i < n; i++) {
    const w = msg.wrs[i]!;
    // A READ longer than MAX_WR_BYTES is refused by the NIC (BAD_WR) and returns no data.
    const data = w.op === 'read' ? (w.len <= MAX_WR_BYTES ? w.len : 0) : w.op === 'prismCas' ? Math.min(w.len, 64) : 8;
    bytes += COMPLETION_OVERHEAD_BYTES + data;
  }
  return bytes;
}

// ---------------------------------------------------------------------------- server

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

/** Reported once per connection when it is gone. `code` is undefined for an orderly close by the client. */
export interface DisconnectInfo {
  qpn: number | undefined;
  clientName: string;
  remoteAddress: string;
  remotePort: number;
  code: string | undefined;
  message: string;
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
}

export interface TcpServerStats {
  connectionsAccepted: number;
  connectionsOpened: number;
  framesIn: number;
  framesOut: number;
  /** Goodbyes sent, by code. */
  goodbyes: Record<string, number>;
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
  /** Most simultaneous connections (handshaking ones included); one more is refused with a Goodbye. */
  maxConnections: number;
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
}

export const TCP_SERVER_DEFAULTS: Readonly<TcpNicServerOptions> = Object.freeze({
  host: '127.0.0.1',
  port: 0,
  authToken: undefined,
  accept: undefined,
  maxFrameBytes: MAX_FRAME_BYTES_DEFAULT,
  maxConnections: 64,
  highWaterBytes: 1 << 20,
  outgoingBytesMax: 64 << 20,
  handshakeTimeoutMs: 10_000,
  closeLingerMs: 2_000,
  idleDrain: true,
  destroyQpOnClose: true,
  onDisconnect: undefined,
  clock: systemClock,
});

type ConnState = ConnectionStats['state'];

class ServerConn {
  state: ConnState = 'handshake';
  readonly reader: FrameReader;
  readonly queue: Uint8Array[] = [];
  qp: ServerQp | undefined;
  clientName = '';
  /** The client's receive bound (from its Hello). */
  outFrameMax = MIN_FRAME_BYTES;
  readPaused = false;
  handshakeTimer: TimerHandle | undefined;
  lingerTimer: TimerHandle | undefined;
  reason: { code: string | undefined; message: string } | undefined;
  framesIn = 0;
  framesOut = 0;
  bytesIn = 0;
  bytesOut = 0;
  backpressurePauses = 0;
  readonly remoteAddress: string;
  readonly remotePort: number;
  constructor(
    readonly socket: net.Socket,
    maxFrameBytes: number,
  ) {
    this.reader = new FrameReader(maxFrameBytes);
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
  #server: net.Server | undefined;
  #conns = new Set<ServerConn>();
  #byQpn = new Map<number, ServerConn>();
  #running = false;
  #closing: Promise<void> | undefined;
  #onEmpty: (() => void) | undefined;
  #stats: TcpServerStats = { connectionsAccepted: 0, connectionsOpened: 0, framesIn: 0, framesOut: 0, goodbyes: {} };

  constructor(nic: Rnic, options: Partial<TcpNicServerOptions>) {
    if (!(nic instanceof Rnic)) throw new TypeError('nic must be an Rnic');
    if (options === null || typeof options !== 'object') throw new TypeError('options must be an object');
    const o = resolve(TCP_SERVER_DEFAULTS, options);
    if (typeof o.host !== 'string' || o.host.length === 0) throw new TypeError(`host must be a non-empty string, got ${String(o.host)}`);
    if (!Number.isInteger(o.port) || o.port < 0 || o.port > 65535) throw new RangeError(`port must be an integer in [0, 65535], got ${String(o.port)}`);
    checkToken(o.authToken);
    if (typeof o.accept !== 'function') throw new TypeError('accept must be a function (hello) => { qp, welcome }');
    frameBound('maxFrameBytes', o.maxFrameBytes);
    positiveInt('maxConnections', o.maxConnections);
    positiveInt('highWaterBytes', o.highWaterBytes);
    positiveInt('outgoingBytesMax', o.outgoingBytesMax);
    if (o.outgoingBytesMax < o.highWaterBytes) throw new RangeError(`outgoingBytesMax (${o.outgoingBytesMax}) must be >= highWaterBytes (${o.highWaterBytes})`);
    positiveMs('handshakeTimeoutMs', o.handshakeTimeoutMs);
    positiveMs('closeLingerMs', o.closeLingerMs);
    if (typeof o.idleDrain !== 'boolean') throw new TypeError(`idleDrain must be a boolean, got ${String(o.idleDrain)}`);
    if (typeof o.destroyQpOnClose !== 'boolean') throw new TypeError(`destroyQpOnClose must be a boolean, got ${String(o.destroyQpOnClose)}`);
    if (o.onDisconnect !== undefined && typeof o.onDisconnect !== 'function') throw new TypeError('onDisconnect must be a function');
    checkClock(o.clock);
    // Refused before anything binds: an unauthenticated NIC on a reachable address hands out PM.
    if (o.authToken === undefined && !isLoopbackHost(o.host)) {
      throw new PmrpcError(TransportErrorCodes.AUTH_REQUIRED, `binding ${o.host} (not loopback) requires an authToken`);
    }
    this.nic = nic;
    this.options = Object.freeze(o);
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
      outgoingBytes: c.socket.writableLength,
      readPaused: c.readPaused,
      backpressurePauses: c.backpressurePauses,
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
    const c = new ServerConn(socket, this.options.maxFrameBytes);
    this.#stats.connectionsAccepted++;
    socket.on('data', (chunk: Buffer) => this.#onData(c, chunk));
    socket.on('drain', () => this.#pump(c));
    socket.on('end', () => this.#setReason(c, undefined, 'the client closed the connection'));
    socket.on('error', (e) => this.#setReason(c, TransportErrorCodes.LINK_CLOSED, `socket error: ${e.message}`));
    socket.on('close', () => this.#finalize(c));
    if (this.#conns.size >= this.options.maxConnections) {
      this.#conns.add(c);
      this.#goodbye(c, TransportErrorCodes.TOO_MANY_CONNECTIONS, `the server holds its maximum of ${this.options.maxConnections} connections`);
      return;
    }
    this.#conns.add(c);
    c.handshakeTimer = this.options.clock.setTimer(this.options.handshakeTimeoutMs, () => {
      if (c.state === 'handshake' || c.state === 'accepting') this.#goodbye(c, TransportErrorCodes.HANDSHAKE_TIMEOUT, `no handshake within ${this.options.handshakeTimeoutMs} ms`);
    });
  }

  #onData(c: ServerConn, chunk: Buffer): void {
    if (c.state === 'closing' || c.state === 'closed') return; // after a Goodbye, input is discarded
    c.bytesIn += chunk.length;
    let frames: Uint8Array[];
    try {
      frames = c.reader.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
    } catch (e) {
      this.#goodbye(c, codeOf(e, BAD_FRAME), bareMessage(e));
      return;
    }
    // Bounded: frames queue only from the chunk in hand; while any are left the socket is paused.
    for (const f of frames) c.queue.push(f);
    this.#pump(c);
  }

  /** Handles queued frames while the socket's outgoing buffer is below the high-water mark. */
  #pump(c: ServerConn): void {
    const s = c.socket;
    s.cork();
    try {
      while (c.queue.length > 0 && (c.state === 'handshake' || c.state === 'open')) {
        if (c.state === 'open' && s.writableLength > this.options.highWaterBytes) {
          if (!c.readPaused) c.backpressurePauses++;
          this.#pause(c);
          return;
        }
        this.#onFrame(c, c.queue.shift()!);
      }
      if (c.state === 'open' && c.queue.length === 0 && s.writableLength <= this.options.highWaterBytes) this.#resume(c);
    } finally {
      s.uncork();
    }
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

  #onFrame(c: ServerConn, frame: Uint8Array): void {
    c.framesIn++;
    this.#stats.framesIn++;
    let m: WireMessage;
    try {
      m = decodeMessage(frame);
    } catch (e) {
      this.#goodbye(c, codeOf(e, BAD_FRAME), bareMessage(e));
      return;
    }
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
    this.#execute(c, m);
  }

  /** Exactly the in-process fabric's immediate mode: submit, run everything, drain when idle. */
  #execute(c: ServerConn, m: RequestMessage): void {
    if (this.#running) {
      // Only a sink or a host-write listener could get here; the running loop serves the request.
      try {
        this.nic.submit(m);
      } catch (e) {
        this.#goodbye(c, codeOf(e, TransportErrorCodes.INTERNAL), `request ${m.seq}: ${bareMessage(e)}`);
      }
      return;
    }
    // A QP destroyed under the connection (or a closed NIC): submit() throws PMRPC_ERR_NO_SUCH_QP,
    // which becomes this connection's Goodbye, so the client does not wait forever.
    try {
      this.nic.submit(m);
      this.#running = true;
      try {
        this.nic.runAll();
        if (this.options.idleDrain) this.nic.drainAll();
      } finally {
        this.#running = false;
      }
    } catch (e) {
      this.#goodbye(c, codeOf(e, TransportErrorCodes.INTERNAL), `executing request ${m.seq} failed: ${bareMessage(e)}`);
    }
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
    c.clientName = h.clientName;
    c.outFrameMax = h.maxFrameBytes;
    c.state = 'accepting';
    // Nothing is read while the application decides: the client must wait for its Welcome anyway.
    this.#pause(c);
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
      this.nic.attach(qpn, (m) => this.#sink(c, m));
    } catch (e) {
      this.#goodbye(c, TransportErrorCodes.REFUSED, `accept() returned QP ${qpn}, which this NIC does not have: ${messageOf(e)}`);
      return;
    }
    c.qp = r.qp;
    this.#byQpn.set(qpn, c);
    c.state = 'open';
    c.handshakeTimer?.cancel();
    this.#stats.connectionsOpened++;
    const welcome: WelcomeMessage = { type: 'welcome', version: PROTOCOL_VERSION, qpn, maxFrameBytes: this.options.maxFrameBytes, payload: r.welcome ?? new Uint8Array(0) };
    this.#write(c, welcome);
    this.#pump(c);
  }

  /** The NIC's (and the server CPU's) messages for this connection's QP. */
  #sink(c: ServerConn, m: ServerMessage): void {
    if (c.state !== 'open') return;
    this.#write(c, m);
  }

  #write(c: ServerConn, m: WireMessage): void {
    let frame: Uint8Array;
    try {
      frame = encodeMessage(m);
    } catch (e) {
      this.#goodbye(c, TransportErrorCodes.INTERNAL, `cannot encode a ${m.type}: ${messageOf(e)}`);
      return;
    }
    if (frame.length > c.outFrameMax) {
      this.#goodbye(c, FRAME_TOO_LARGE, `a ${m.type} of ${frame.length} bytes exceeds the client's frame bound of ${c.outFrameMax}`);
      return;
    }
    const s = c.socket;
    if (s.writableLength + frame.length + 4 > this.options.outgoingBytesMax) {
      // Requests are already held back by the pause; this is server-initiated traffic to a client that does not read.
      this.#setReason(c, TransportErrorCodes.BACKPRESSURE, `the client does not read: ${s.writableLength} bytes wait to be sent (outgoingBytesMax ${this.options.outgoingBytesMax})`);
      c.state = 'closing';
      s.destroy();
      return;
    }
    s.write(frameBytes(frame));
    c.framesOut++;
    c.bytesOut += frame.length + 4;
    this.#stats.framesOut++;
  }

  /** Sends a Goodbye and closes the connection; every other connection is untouched. */
  #goodbye(c: ServerConn, code: string, message: string): void {
    if (c.state === 'closing' || c.state === 'closed') return;
    this.#setReason(c, code, message);
    this.#stats.goodbyes[code] = (this.#stats.goodbyes[code] ?? 0) + 1;
    c.state = 'closing';
    c.queue.length = 0;
    c.handshakeTimer?.cancel();
    let bytes: Uint8Array | undefined;
    try {
      bytes = frameBytes(encodeMessage({ type: 'goodbye', code, message }));
    } catch {
      bytes = undefined; // a code the codec refuses: close without a Goodbye
    }
    // Keep reading (and discarding) so the client's FIN is seen; end() sends the Goodbye first.
    this.#resume(c);
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
    c.queue.length = 0;
    this.#conns.delete(c);
    const qpn = c.qp?.qpn;
    if (qpn !== undefined && this.#byQpn.get(qpn) === c) {
      this.#byQpn.delete(qpn);
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
      this.options.onDisconnect?.({ qpn, clientName: c.clientName, remoteAddress: c.remoteAddress, remotePort: c.remotePort, code: reason.code, message: reason.message });
    } finally {
      if (this.#conns.size === 0 && this.#onEmpty !== undefined) {
        const done = this.#onEmpty;
        this.#onEmpty = undefined;
        done();
      }
    }
  }
}

// ---------------------------------------------------------------------------- client

export interface TcpLinkOptions {
  host: string;
  port: number;
  authToken: string | undefined;
  /** Shown to the server's accept callback and in its logs. */
  name: string;
  /** Opaque application payload for the server's accept callback. */
  hello: Uint8Array;
  /** Largest frame accepted from the server (announced in the Hello: the server never sends more). */
  maxFrameBytes: number;
  /** The socket's high-water mark: above it `writable` is false and whenWritable() waits for the drain. */
  highWaterBytes: number;
  /** send() refuses with PMRPC_ERR_BACKPRESSURE when the socket would buffer more than this. */
  sendBufferBytesMax: number;
  /** Most requests awaiting their response; send() refuses with PMRPC_ERR_QUEUE_FULL beyond. */
  outstandingMessagesMax: number;
  /** Messages held while no handler is set; beyond it the link stops reading (back-pressure). */
  backlogMessagesMax: number;
  /** connect() fails with PMRPC_ERR_HANDSHAKE_TIMEOUT if no Welcome arrives within this. */
  handshakeTimeoutMs: number;
  /** After close(), how long the server has to close its side before the socket is destroyed. */
  closeLingerMs: number;
  clock: Clock;
}

export const TCP_LINK_DEFAULTS: Readonly<Omit<TcpLinkOptions, 'port'>> = Object.freeze({
  host: '127.0.0.1',
  authToken: undefined,
  name: '',
  hello: new Uint8Array(0),
  maxFrameBytes: MAX_FRAME_BYTES_DEFAULT,
  highWaterBytes: 1 << 20,
  sendBufferBytesMax: 64 << 20,
  outstandingMessagesMax: 65536,
  backlogMessagesMax: 65536,
  handshakeTimeoutMs: 10_000,
  closeLingerMs: 2_000,
  clock: systemClock,
});

const PRIVATE = Symbol('TcpLink');

interface PendingWr {
  id: number;
  op: WrOp;
}

/**
 * The client end of a TCP connection to one server QP (a `Link`).
 *
 * Closure: when the connection ends without the owner asking (a Goodbye, a reset, a server
 * shutdown, a bad frame from the server), every request still outstanding gets a Response whose
 * completions are all 'error' with PMRPC_ERR_LINK_CLOSED — so a QueuePair's promises settle and
 * nothing hangs; whether such a request executed on the server is unknown — then the onClose
 * listeners run with the cause (`closeError`). When the owner calls close(), nothing more is
 * delivered (QueuePair.close() rejects what it has outstanding).
 */
export class TcpLink implements Link {
  readonly qpn: number;
  /** The server's frame bound (from its Welcome): send() refuses larger frames locally. */
  readonly serverMaxFrameBytes: number;
  readonly options: Readonly<TcpLinkOptions>;
  #socket: net.Socket;
  #reader: FrameReader;
  #handler: ((m: ServerMessage) => void) | undefined;
  #backlog: ServerMessage[] = [];
  #pending = new Map<number, PendingWr[]>();
  #closed = false;
  #closeError: PmrpcError | undefined;
  #closeListeners: Array<(e: PmrpcError | undefined) => void> = [];
  #writable: { promise: Promise<void>; resolve: () => void; reject: (e: unknown) => void } | undefined;
  #corked = false;
  #paused = false;
  #socketError: Error | undefined;
  #lingerTimer: TimerHandle | undefined;

  /** Opens a connection, says Hello, and resolves once the server's Welcome arrives. */
  static async connect(options: Partial<TcpLinkOptions> & { port: number }): Promise<{ link: TcpLink; welcome: Uint8Array }> {
    if (options === null || typeof options !== 'object') throw new TypeError('options must be an object');
    const o = resolve(TCP_LINK_DEFAULTS as Readonly<TcpLinkOptions>, options);
    if (typeof o.host !== 'string' || o.host.length === 0) throw new TypeError(`host must be a non-empty string, got ${String(o.host)}`);
    if (!Number.isInteger(o.port) || o.port < 1 || o.port > 65535) throw new RangeError(`port must be an integer in [1, 65535], got ${String(o.port)}`);
    checkToken(o.authToken);
    if (typeof o.name !== 'string' || o.name.length > CLIENT_NAME_CHARS_MAX) throw new TypeError(`name must be a string of at most ${CLIENT_NAME_CHARS_MAX} characters`);
    if (!(o.hello instanceof Uint8Array)) throw new TypeError('hello must be a Uint8Array');
    frameBound('maxFrameBytes', o.maxFrameBytes);
    positiveInt('highWaterBytes', o.highWaterBytes);
    positiveInt('sendBufferBytesMax', o.sendBufferBytesMax);
    if (o.sendBufferBytesMax < o.highWaterBytes) throw new RangeError(`sendBufferBytesMax (${o.sendBufferBytesMax}) must be >= highWaterBytes (${o.highWaterBytes})`);
    positiveInt('outstandingMessagesMax', o.outstandingMessagesMax);
    positiveInt('backlogMessagesMax', o.backlogMessagesMax);
    positiveMs('handshakeTimeoutMs', o.handshakeTimeoutMs);
    positiveMs('closeLingerMs', o.closeLingerMs);
    checkClock(o.clock);
    const opts = Object.freeze(o);
    const hello: HelloMessage = { type: 'hello', version: PROTOCOL_VERSION, authToken: o.authToken ?? '', clientName: o.name, maxFrameBytes: o.maxFrameBytes, payload: o.hello };
    const helloFrame = frameBytes(encodeMessage(hello));

    // writableHighWaterMark reaches the stream (net.Socket passes its options to Duplex); @types/node omits it.
    const connectOpts: net.NetConnectOpts & { writableHighWaterMark: number } = { host: o.host, port: o.port, noDelay: true, writableHighWaterMark: o.highWaterBytes };
    const socket = net.connect(connectOpts);
    const reader = new FrameReader(o.maxFrameBytes);
    return new Promise((resolveP, rejectP) => {
      let done = false;
      const timer = o.clock.setTimer(o.handshakeTimeoutMs, () => fail(new PmrpcError(TransportErrorCodes.HANDSHAKE_TIMEOUT, `no Welcome from ${o.host}:${o.port} within ${o.handshakeTimeoutMs} ms`)));
      const cleanup = (): void => {
        done = true;
        timer.cancel();
        socket.off('data', onData);
        socket.off('error', onError);
        socket.off('close', onClose);
        socket.off('connect', onConnect);
      };
      const fail = (e: PmrpcError): void => {
        if (done) return;
        cleanup();
        socket.on('error', () => {}); // a late reset on a socket nobody owns must not crash the process
        socket.destroy();
        rejectP(e);
      };
      const onConnect = (): void => void socket.write(helloFrame);
      const onError = (e: Error): void => fail(new PmrpcError(TransportErrorCodes.CONNECT, `cannot connect to ${o.host}:${o.port}: ${e.message}`, { cause: e }));
      const onClose = (): void => fail(new PmrpcError(TransportErrorCodes.LINK_CLOSED, `${o.host}:${o.port} closed the connection during the handshake`));
      const onData = (chunk: Buffer): void => {
        let frames: Uint8Array[];
        try {
          frames = reader.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
        } catch (e) {
          fail(e as PmrpcError);
          return;
        }
        if (frames.length === 0) return;
        let m: WireMessage;
        try {
          m = decodeMessage(frames[0]!);
        } catch (e) {
          fail(e as PmrpcError);
          return;
        }
        if (m.type === 'goodbye') return fail(new PmrpcError(m.code as ErrorCode, m.message));
        if (m.type !== 'welcome') return fail(new PmrpcError(TransportErrorCodes.HANDSHAKE, `expected a Welcome or a Goodbye, got ${m.type}`));
        if (m.version !== PROTOCOL_VERSION) return fail(new PmrpcError(TransportErrorCodes.PROTOCOL_VERSION, `the server speaks protocol version ${m.version}, the client ${PROTOCOL_VERSION}`));
        if (m.maxFrameBytes < MIN_FRAME_BYTES) return fail(new PmrpcError(TransportErrorCodes.HANDSHAKE, `the server's maxFrameBytes ${m.maxFrameBytes} is below ${MIN_FRAME_BYTES}`));
        cleanup();
        const link = new TcpLink(PRIVATE, socket, reader, m, opts);
        resolveP({ link, welcome: m.payload });
        // Frames that came with the Welcome (a notification sent at accept time) are not lost.
        link.#onFrames(frames.slice(1));
      };
      socket.on('connect', onConnect);
      socket.on('error', onError);
      socket.on('close', onClose);
      socket.on('data', onData);
    });
  }

  /** @internal use TcpLink.connect() */
  constructor(token: symbol, socket: net.Socket, reader: FrameReader, welcome: WelcomeMessage, options: Readonly<TcpLinkOptions>) {
    if (token !== PRIVATE) throw new TypeError('use TcpLink.connect()');
    this.qpn = welcome.qpn;
    this.serverMaxFrameBytes = welcome.maxFrameBytes;
    this.options = options;
    this.#socket = socket;
    this.#reader = reader;
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('drain', () => this.#onDrain());
    socket.on('error', (e) => void (this.#socketError ??= e));
    socket.on('close', () => this.#onSocketClose());
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Why the link closed when the owner did not ask (undefined while open or after close()). */
  get closeError(): PmrpcError | undefined {
    return this.#closeError;
  }

  /** Bytes sent and not yet taken by the kernel. */
  get bufferedBytes(): number {
    return this.#socket.writableLength;
  }

  /** false while the send buffer is above highWaterBytes: wait for whenWritable() before sending more. */
  get writable(): boolean {
    return !this.#closed && !this.#socket.writableNeedDrain;
  }

  /** Requests sent whose response has not arrived. */
  get outstanding(): number {
    return this.#pending.size;
  }

  /** Resolves once the send buffer has drained below the high-water mark; rejects with PMRPC_ERR_LINK_CLOSED if the link closes first. */
  whenWritable(): Promise<void> {
    if (this.#closed) return Promise.reject(this.#closedError());
    if (!this.#socket.writableNeedDrain) return Promise.resolve();
    if (this.#writable === undefined) {
      let resolveW!: () => void;
      let rejectW!: (e: unknown) => void;
      const promise = new Promise<void>((res, rej) => {
        resolveW = res;
        rejectW = rej;
      });
      this.#writable = { promise, resolve: resolveW, reject: rejectW };
    }
    return this.#writable.promise;
  }

  /** One Request frame per message. Throws PMRPC_ERR_LINK_CLOSED, _BACKPRESSURE, _QUEUE_FULL or _FRAME_TOO_LARGE without sending anything. */
  send(msg: ClientMessage): void {
    if (this.#closed) throw this.#closedError();
    if (msg === null || typeof msg !== 'object' || msg.type !== 'request' || !Array.isArray(msg.wrs)) throw new TypeError('send() takes a request message { type: "request", qpn, seq, wrs }');
    if (msg.qpn !== this.qpn) throw new TypeError(`this link reaches QP ${this.qpn}, the message names QP ${String(msg.qpn)}`);
    if (!Number.isInteger(msg.seq) || msg.seq < 0 || msg.seq > U32_MAX) throw new TypeError(`seq must be a 32-bit unsigned integer, got ${String(msg.seq)}`);
    if (this.#pending.has(msg.seq)) throw new TypeError(`request ${msg.seq} is already outstanding on this link`);
    if (this.#pending.size >= this.options.outstandingMessagesMax) {
      throw new PmrpcError(TransportErrorCodes.QUEUE_FULL, `${this.#pending.size} requests are outstanding on the link to QP ${this.qpn} (outstandingMessagesMax)`);
    }
    let frame: Uint8Array;
    try {
      frame = encodeMessage(msg);
    } catch (e) {
      throw new TypeError(`the message cannot be encoded: ${messageOf(e)}`);
    }
    if (frame.length > this.serverMaxFrameBytes) {
      throw new PmrpcError(FRAME_TOO_LARGE, `a request of ${frame.length} bytes exceeds the server's frame bound of ${this.serverMaxFrameBytes}`);
    }
    const s = this.#socket;
    if (s.writableLength + frame.length + 4 > this.options.sendBufferBytesMax) {
      throw new PmrpcError(TransportErrorCodes.BACKPRESSURE, `${s.writableLength} bytes wait to be sent to QP ${this.qpn}; sending ${frame.length + 4} more would pass sendBufferBytesMax (${this.options.sendBufferBytesMax}): await whenWritable()`);
    }
    this.#pending.set(
      msg.seq,
      msg.wrs.map((w, i) => ({ id: w.id ?? i, op: w.op })),
    );
    // Frames sent in one turn of the event loop leave in one write (fewer syscalls, same order).
    if (!this.#corked) {
      this.#corked = true;
      s.cork();
      queueMicrotask(() => {
        this.#corked = false;
        s.uncork();
      });
    }
    s.write(frameBytes(frame));
  }

  onMessage(handler: (msg: ServerMessage) => void): void {
    if (typeof handler !== 'function') throw new TypeError('handler must be a function');
    this.#handler = handler;
    // Messages that arrived before a handler was set are not lost.
    for (const m of this.#backlog.splice(0)) handler(m);
    if (this.#paused && !this.#closed) {
      this.#paused = false;
      this.#socket.resume();
    }
  }

  /** Runs `fn` once when the link closes: with the cause, or undefined after close(). Returns its remover. */
  onClose(fn: (err: PmrpcError | undefined) => void): () => void {
    if (typeof fn !== 'function') throw new TypeError('onClose takes a function');
    if (this.#closed) {
      queueMicrotask(() => fn(this.#closeError));
      return () => {};
    }
    this.#closeListeners.push(fn);
    return () => {
      const i = this.#closeListeners.indexOf(fn);
      if (i >= 0) this.#closeListeners.splice(i, 1);
    };
  }

  /** Orderly close by the owner: what was sent is still flushed; nothing more is delivered. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#pending.clear();
    this.#socket.end();
    this.#linger();
    this.#finishClose(undefined);
  }

  // ------------------------------------------------------------------ engine

  #closedError(): PmrpcError {
    const why = this.#closeError === undefined ? '' : ` (${this.#closeError.message})`;
    return new PmrpcError(TransportErrorCodes.LINK_CLOSED, `the link to QP ${this.qpn} is closed${why}`);
  }

  #onData(chunk: Buffer): void {
    if (this.#closed) return;
    let frames: Uint8Array[];
    try {
      frames = this.#reader.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
    } catch (e) {
      this.#fail(e as PmrpcError, true);
      return;
    }
    this.#onFrames(frames);
  }

  #onFrames(frames: Uint8Array[]): void {
    for (const f of frames) {
      if (this.#closed) return;
      let m: WireMessage;
      try {
        m = decodeMessage(f);
      } catch (e) {
        this.#fail(e as PmrpcError, true);
        return;
      }
      switch (m.type) {
        case 'response':
          this.#pending.delete(m.seq);
          this.#dispatch(m);
          break;
        case 'notify':
          this.#dispatch(m);
          break;
        case 'goodbye':
          this.#fail(new PmrpcError(m.code as ErrorCode, m.message), false);
          return;
        default:
          this.#fail(new PmrpcError(BAD_FRAME, `unexpected ${m.type} frame from the server`), true);
          return;
      }
    }
  }

  #dispatch(m: ServerMessage): void {
    if (this.#handler !== undefined) {
      this.#handler(m);
      return;
    }
    this.#backlog.push(m);
    // No handler to take them: stop reading, so the server's buffers (and then the server) wait.
    if (this.#backlog.length >= this.options.backlogMessagesMax && !this.#paused) {
      this.#paused = true;
      this.#socket.pause();
    }
  }

  #onDrain(): void {
    const w = this.#writable;
    this.#writable = undefined;
    w?.resolve();
  }

  #onSocketClose(): void {
    this.#lingerTimer?.cancel();
    if (this.#closed) return;
    const why = this.#socketError === undefined ? 'the server closed the connection' : `the connection failed: ${this.#socketError.message}`;
    this.#fail(new PmrpcError(TransportErrorCodes.LINK_CLOSED, why), false);
  }

  /** A close the owner did not ask for: settle what is outstanding, then tell the listeners. */
  #fail(err: PmrpcError, tellServer: boolean): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#closeError = err;
    if (tellServer && !this.#socket.destroyed) {
      let bytes: Uint8Array | undefined;
      try {
        bytes = frameBytes(encodeMessage({ type: 'goodbye', code: err.code, message: bareMessage(err) }));
      } catch {
        bytes = undefined;
      }
      if (bytes === undefined) this.#socket.end();
      else this.#socket.end(bytes);
      this.#linger();
    } else {
      this.#socket.destroy();
    }
    const pending = [...this.#pending];
    this.#pending.clear();
    for (const [seq, wrs] of pending) {
      const completions: Completion[] = wrs.map((w) => ({
        id: w.id,
        op: w.op,
        status: 'error',
        code: TransportErrorCodes.LINK_CLOSED,
        message: `the link closed before the response arrived (${err.message}); the request may or may not have executed`,
      }));
      this.#dispatch({ type: 'response', qpn: this.qpn, seq, completions });
    }
    this.#finishClose(err);
  }

  #finishClose(err: PmrpcError | undefined): void {
    const w = this.#writable;
    this.#writable = undefined;
    if (w !== undefined) {
      w.promise.catch(() => {}); // nobody may be waiting any more
      w.reject(this.#closedError());
    }
    for (const fn of this.#closeListeners.splice(0)) fn(err);
  }

  #linger(): void {
    this.#lingerTimer ??= this.options.clock.setTimer(this.options.closeLingerMs, () => this.#socket.destroy());
  }
}
