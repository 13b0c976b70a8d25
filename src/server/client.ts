/**
 * The client end of an RpcNode: a DurableRpcClient over a TcpLink, with the RPC handshake in the
 * Hello / Welcome payloads. A client whose connection dropped (the server crashed or restarted)
 * reconnects — to the same or a new address — and resumes from the server's resume point.
 */
import { optional, PmrpcError, positiveMs, resolveOptions, systemClock, type Clock, type TimerHandle } from '../../pmem/index.js';
import { QueuePair } from '../../flush/index.js';
import { DurableRpcClient, RpcErrorCodes, type RpcClientOptions } from '../rpc/index.js';
import { TcpLink, TransportErrorCodes } from '../transport/index.js';
import { decodeWelcomePayload, encodeHelloPayload, rpcAppClient } from '../apps/rpc/index.js';

export interface RemoteClientOptions {
  host: string;
  port: number;
  authToken: string | undefined;
  /** Shown in the server's logs. */
  name: string;
  rpc: Partial<RpcClientOptions>;
  /**
   * After a drop (a crash, a reset: no Goodbye), how long the calls still pending wait for a
   * reconnect() that succeeds; then they settle with PMRPC_ERR_DISCONNECTED and the client closes.
   * undefined: they wait until reconnect() or close(). A server's orderly shutdown (its Goodbye
   * PMRPC_ERR_SERVER_CLOSED) settles them at once with that code.
   */
  reconnectWindowMs: number | undefined;
  clock: Clock;
}

export const REMOTE_CLIENT_DEFAULTS: Readonly<Omit<RemoteClientOptions, 'port'>> = Object.freeze({
  host: '127.0.0.1',
  authToken: undefined,
  name: 'pmrpc-client',
  rpc: {},
  reconnectWindowMs: 60_000,
  clock: systemClock,
});

export class RemoteRpcClient {
  readonly rpc: DurableRpcClient;
  #options: Readonly<RemoteClientOptions>;
  #link: TcpLink;
  #connected = true;
  #closed = false;
  #listeners: Array<(err: PmrpcError | undefined) => void> = [];
  #giveUp: TimerHandle | undefined;

  private constructor(rpc: DurableRpcClient, link: TcpLink, o: RemoteClientOptions) {
    this.rpc = rpc;
    this.#link = link;
    this.#options = Object.freeze(o);
    this.#watch(link);
  }

  /** Connects as a new client. */
  static async connect(options: Partial<RemoteClientOptions> & { port: number }): Promise<RemoteRpcClient> {
    // host, port, authToken, name and clock are checked by TcpLink.connect, rpc by DurableRpcClient.
    const o = resolveOptions(REMOTE_CLIENT_DEFAULTS as Readonly<RemoteClientOptions>, options, { reconnectWindowMs: optional(positiveMs) });
    const { link, welcome } = await TcpLink.connect({ host: o.host, port: o.port, authToken: o.authToken, name: o.name, clock: o.clock, hello: encodeHelloPayload({}) });
    let rpc: DurableRpcClient;
    try {
      rpc = rpcAppClient(new QueuePair(link), welcome, o.rpc);
    } catch (e) {
      link.close();
      throw e;
    }
    return new RemoteRpcClient(rpc, link, o);
  }

  /** The options, with the address last connected to. */
  get options(): Readonly<RemoteClientOptions> {
    return this.#options;
  }

  get clientId(): number {
    return this.rpc.clientId;
  }

  /** false from the moment the connection drops until reconnect() succeeds. */
  get connected(): boolean {
    return this.#connected;
  }

  /** Runs `fn` each time the connection drops (with the cause). Returns its remover. */
  onDisconnect(fn: (err: PmrpcError | undefined) => void): () => void {
    this.#listeners.push(fn);
    return () => {
      const i = this.#listeners.indexOf(fn);
      if (i >= 0) this.#listeners.splice(i, 1);
    };
  }

  /**
   * Reconnects (to `to`, default the last address) as the same client: the server answers with its
   * resume point and the results it kept for the sequences this client still awaits; requests from
   * the resume point on are sent again.
   */
  async reconnect(to: { host?: string; port?: number } = {}): Promise<void> {
    if (this.#closed) throw new PmrpcError('PMRPC_ERR_DISCONNECTED', 'the client is closed');
    const host = to.host ?? this.options.host;
    const port = to.port ?? this.options.port;
    if (!this.#link.closed) this.#link.close();
    // The secret issued at registration proves who this client is; its id alone does not.
    const hello = encodeHelloPayload({ clientId: this.rpc.clientId, ...(this.rpc.secret === undefined ? {} : { secret: this.rpc.secret }), awaiting: this.rpc.awaiting });
    const { link, welcome } = await TcpLink.connect({ host, port, authToken: this.options.authToken, name: this.options.name, clock: this.options.clock, hello });
    try {
      this.rpc.reconnect(new QueuePair(link), decodeWelcomePayload(welcome));
    } catch (e) {
      link.close();
      throw e;
    }
    this.#options = Object.freeze({ ...this.#options, host, port });
    this.#link = link;
    this.#connected = true;
    this.#giveUp?.cancel();
    this.#giveUp = undefined;
    this.#watch(link);
  }

  /**
   * Says goodbye (DurableRpcClient.goodbye: the server releases this client's slot once every earlier
   * request is applied; results not yet received are dropped), waiting at most `goodbyeTimeoutMs`
   * of the clock for the answer, then closes. Disconnected, it just closes: the server's lease
   * gives the slot back.
   */
  async close(options: { goodbyeTimeoutMs?: number } = {}): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const timeoutMs = options.goodbyeTimeoutMs ?? 5000;
    if (typeof timeoutMs !== 'number' || !(timeoutMs >= 0)) throw new RangeError(`goodbyeTimeoutMs must be a non-negative number, got ${String(timeoutMs)}`);
    if (this.#connected && !this.#link.closed) {
      let timer: { cancel(): void } | undefined;
      await Promise.race([
        this.rpc.goodbye().catch(() => undefined),
        new Promise<void>((resolve) => {
          timer = this.options.clock.setTimer(timeoutMs, resolve);
        }),
      ]);
      timer?.cancel();
    }
    this.#connected = false;
    this.#giveUp?.cancel();
    this.rpc.close();
    this.#link.close();
  }

  /** The connection ended for good: every pending call settles with `cause`, the client is closed. */
  #end(cause: PmrpcError): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#connected = false;
    this.#giveUp?.cancel();
    this.rpc.close(cause);
    this.#link.close();
  }

  #watch(link: TcpLink): void {
    link.onClose((err) => {
      if (link !== this.#link || this.#closed) return;
      this.#connected = false;
      if (err?.code === TransportErrorCodes.SERVER_CLOSED) {
        // An orderly shutdown (SIGTERM, NodeHost.close()): nothing more will be answered on this connection.
        this.#end(new PmrpcError(TransportErrorCodes.SERVER_CLOSED, `client ${this.clientId}: the server shut down (${err.message}); a call not answered may or may not be durable`));
      } else if (this.#options.reconnectWindowMs !== undefined) {
        const ms = this.#options.reconnectWindowMs;
        this.#giveUp?.cancel();
        this.#giveUp = this.#options.clock.setTimer(ms, () => {
          this.#giveUp = undefined;
          if (!this.#connected) this.#end(new PmrpcError(RpcErrorCodes.DISCONNECTED, `client ${this.clientId}: the connection dropped (${err?.message ?? 'closed'}) and no reconnect succeeded within ${ms} ms (reconnectWindowMs); a call not answered may or may not be durable`));
        });
      }
      for (const fn of [...this.#listeners]) fn(err);
    });
  }
}
