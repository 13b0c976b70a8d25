/**
 * The client end of the TCP link (DESIGN §6): `TcpLink`, a `Link` of flush/ reaching one server
 * QP. One Request frame carries any number of work requests (doorbell batching); frames sent in one
 * turn of the event loop leave in one write.
 */
import net from 'node:net';
import { intIn, must, nonEmptyString, PmrpcError, positiveInt, positiveMs, resolveOptions, systemClock, type Clock, type ErrorCode, type OptionChecks, type TimerHandle } from '../../pmem/index.js';
import type { ClientMessage, Completion, Link, ServerMessage, WorkRequest } from '../../flush/index.js';
import { BAD_FRAME, CLIENT_NAME_CHARS_MAX, decodeMessage, encodeMessage, FRAME_TOO_LARGE, FrameReader, frameBytes, MAX_FRAME_BYTES_DEFAULT, PROTOCOL_VERSION, sizeFrame, writeSizedFrame, type HelloMessage, type WelcomeMessage, type WireMessage } from './codec.js';
import { bareMessage, messageOf, TransportErrorCodes } from './errors.js';
import { authTokenCheck, clockCheck, frameBound, MIN_FRAME_BYTES, positiveIntAtLeast, U32_MAX } from './limits.js';

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

const TCP_LINK_CHECKS: OptionChecks<TcpLinkOptions> = {
  host: nonEmptyString,
  port: intIn(1, 65535),
  authToken: authTokenCheck,
  name: must((v) => typeof v === 'string' && v.length <= CLIENT_NAME_CHARS_MAX, `must be a string of at most ${CLIENT_NAME_CHARS_MAX} characters`),
  hello: must((v) => v instanceof Uint8Array, 'must be a Uint8Array'),
  maxFrameBytes: frameBound,
  highWaterBytes: positiveInt,
  sendBufferBytesMax: positiveIntAtLeast('highWaterBytes'),
  outstandingMessagesMax: positiveInt,
  backlogMessagesMax: positiveInt,
  handshakeTimeoutMs: positiveMs,
  closeLingerMs: positiveMs,
  clock: clockCheck,
};

const PRIVATE = Symbol('TcpLink');
/** The link's output buffer (send() encodes its frames there; larger for a larger frame). */
const OUT_SLAB_BYTES = 16 * 1024;
const NO_OUT = Buffer.alloc(0);

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
  /** Chains cross the wire (the server's NIC checks them decoded): not marked checked here (Link.remote). */
  readonly remote = true;
  /** The server's frame bound (from its Welcome): send() refuses larger frames locally. */
  readonly serverMaxFrameBytes: number;
  readonly options: Readonly<TcpLinkOptions>;
  #socket: net.Socket;
  #reader: FrameReader;
  #handler: ((m: ServerMessage) => void) | undefined;
  #backlog: ServerMessage[] = [];
  /** The work requests of each request sent whose response has not arrived (their ids and ops answer a close). */
  #pending = new Map<number, readonly WorkRequest[]>();
  #closed = false;
  #closeError: PmrpcError | undefined;
  #closeListeners: Array<(e: PmrpcError | undefined) => void> = [];
  #writable: { promise: Promise<void>; resolve: () => void; reject: (e: unknown) => void } | undefined;
  /**
   * Frames sent in one turn are encoded into #out (no buffer per frame) and leave in one write of
   * one buffer, out[#outStart, #outPos), at the end of the turn's microtasks (#flushOut). A region
   * handed to the socket is not written again until the socket has sent everything.
   */
  #out: Buffer = NO_OUT;
  #outStart = 0;
  #outPos = 0;
  #flushArmed = false;
  #paused = false;
  #socketError: Error | undefined;
  #lingerTimer: TimerHandle | undefined;

  /** Opens a connection, says Hello, and resolves once the server's Welcome arrives. */
  static async connect(options: Partial<TcpLinkOptions> & { port: number }): Promise<{ link: TcpLink; welcome: Uint8Array }> {
    const o = resolveOptions(TCP_LINK_DEFAULTS as Readonly<TcpLinkOptions>, options, TCP_LINK_CHECKS);
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
    return this.#socket.writableLength + this.#outPos - this.#outStart;
  }

  /** false while the send buffer is above highWaterBytes: wait for whenWritable() before sending more. */
  get writable(): boolean {
    return !this.#closed && !this.#overHighWater();
  }

  /** Past the high-water mark: the socket waits for its drain, or the frames gathered in this turn take it there. */
  #overHighWater(): boolean {
    const s = this.#socket;
    return s.writableNeedDrain || s.writableLength + this.#outPos - this.#outStart >= s.writableHighWaterMark;
  }

  /** Requests sent whose response has not arrived. */
  get outstanding(): number {
    return this.#pending.size;
  }

  /** Resolves once the send buffer has drained below the high-water mark; rejects with PMRPC_ERR_LINK_CLOSED if the link closes first. */
  whenWritable(): Promise<void> {
    if (this.#closed) return Promise.reject(this.#closedError());
    if (!this.#overHighWater()) return Promise.resolve();
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
    let framedLength: number;
    try {
      framedLength = sizeFrame(msg);
    } catch (e) {
      throw new TypeError(`the message cannot be encoded: ${messageOf(e)}`);
    }
    const frameLength = framedLength - 4;
    if (frameLength > this.serverMaxFrameBytes) {
      throw new PmrpcError(FRAME_TOO_LARGE, `a request of ${frameLength} bytes exceeds the server's frame bound of ${this.serverMaxFrameBytes}`);
    }
    const buffered = this.bufferedBytes;
    if (buffered + framedLength > this.options.sendBufferBytesMax) {
      throw new PmrpcError(TransportErrorCodes.BACKPRESSURE, `${buffered} bytes wait to be sent to QP ${this.qpn}; sending ${framedLength} more would pass sendBufferBytesMax (${this.options.sendBufferBytesMax}): await whenWritable()`);
    }
    this.#pending.set(msg.seq, msg.wrs);
    if (this.#outPos + framedLength > this.#out.length) {
      const pending = this.#outPos - this.#outStart;
      const out = Buffer.allocUnsafe(Math.max(OUT_SLAB_BYTES, pending + framedLength));
      if (pending > 0) out.set(this.#out.subarray(this.#outStart, this.#outPos), 0);
      this.#out = out;
      this.#outStart = 0;
      this.#outPos = pending;
    }
    writeSizedFrame(msg, this.#out, this.#outPos);
    this.#outPos += framedLength;
    // Frames sent in one turn of the event loop leave in one write (fewer syscalls, same order).
    if (!this.#flushArmed) {
      this.#flushArmed = true;
      queueMicrotask(() => this.#flushOut());
    }
  }

  /** Hands the frames gathered since the last flush to the socket in one write (one buffer). */
  #flushOut(): void {
    this.#flushArmed = false;
    if (this.#outPos === this.#outStart) return;
    const s = this.#socket;
    const chunk = this.#out.subarray(this.#outStart, this.#outPos);
    this.#outStart = this.#outPos;
    if (s.destroyed || s.writableEnded) return;
    s.write(chunk);
    // Written through to the kernel: the buffer is free again.
    if (s.writableLength === 0) this.#outStart = this.#outPos = 0;
    else if (this.#outPos > this.#out.length >>> 1) this.#out = NO_OUT; // the socket holds a view of it
    // The socket emits 'drain' only after a write that found it past its high-water mark: one that
    // took everything at once (or left it below the mark) frees a whenWritable() waiter here.
    if (this.#writable !== undefined && !this.#overHighWater()) this.#onDrain();
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
    this.#flushOut(); // what was sent leaves first
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
      this.#flushOut(); // what was sent leaves before the Goodbye
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
      const completions: Completion[] = wrs.map((w, i) => ({
        id: w.id ?? i,
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
