/**
 * The hostile peers of `bench hostile`, run as a child process from the compiled code
 * (`node dist/bench/hostile-peer.js '<json {attack, port, token, idleConnections}>'`), so that
 * their own work does not run on the well-behaved client's event loop. Prints {"ready":true} once
 * its frames are built; on SIGTERM stops, prints {rounds, goodbyes} and exits 0.
 */
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { decodeWelcomePayload, encodeHelloPayload } from '../src/server/index.js';
import { decodeMessage, encodeMessage, FrameReader, frameBytes, TCP_SERVER_DEFAULTS, type WireMessage } from '../src/transport/index.js';
import { emptyWrsFrame, helloFrame } from './hostile-frames.js';
import { exitWithParent } from './child.js';

exitWithParent();

export type Attack = 'stranger' | 'trusted' | 'idle';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A raw peer: a socket that speaks frames by hand and keeps every message the server sends. */
class RawPeer {
  readonly socket: net.Socket;
  readonly messages: WireMessage[] = [];
  readonly closed: Promise<void>;
  #reader = new FrameReader(64 << 20);
  #wake: (() => void) | undefined;
  #taken = 0;
  constructor(port: number) {
    this.socket = net.connect({ host: '127.0.0.1', port, noDelay: true });
    this.socket.on('error', () => {});
    this.closed = new Promise((r) => this.socket.on('close', () => r()));
    this.socket.on('data', (b: Buffer) => {
      try {
        for (const f of this.#reader.push(new Uint8Array(b))) this.messages.push(decodeMessage(f));
      } catch {
        this.socket.destroy();
      }
      this.#wake?.();
    });
    this.socket.on('close', () => this.#wake?.());
  }

  /** The next message not yet taken (undefined if the socket closes or `ms` pass first). */
  async next(ms: number): Promise<WireMessage | undefined> {
    const end = performance.now() + ms;
    while (this.messages.length <= this.#taken && !this.socket.destroyed && performance.now() < end) {
      await Promise.race([new Promise<void>((r) => (this.#wake = r)), sleep(Math.max(1, end - performance.now()))]);
    }
    return this.messages.length > this.#taken ? this.messages[this.#taken++] : undefined;
  }

  goodbye(): string | undefined {
    const g = this.messages.find((m) => m.type === 'goodbye');
    return g?.type === 'goodbye' ? g.code : undefined;
  }

  /** Waits for the server to close (then or after `ms`, destroys). */
  async end(ms: number): Promise<void> {
    await Promise.race([this.closed, sleep(ms)]);
    this.socket.destroy();
  }
}


interface AttackStats {
  rounds: number;
  goodbyes: Record<string, number>;
  reconnectMs?: number;
}

function count(stats: AttackStats, code: string | undefined): void {
  const k = code ?? 'none';
  stats.goodbyes[k] = (stats.goodbyes[k] ?? 0) + 1;
}

/** Strangers: the largest frames a peer without the token can send, 4 at a time, until `stop`. */
async function strangers(port: number, stop: () => boolean, stats: AttackStats): Promise<void> {
  const huge = emptyWrsFrame((16 << 20) / 2);
  const accepted = emptyWrsFrame((TCP_SERVER_DEFAULTS.handshakeBytesMax - 4 - 4) / 2);
  const bigHello = helloFrame('wrong', new Uint8Array(TCP_SERVER_DEFAULTS.handshakeBytesMax - 200));
  const kinds = [huge, accepted, bigHello];
  await Promise.all(
    [0, 1, 2, 3].map(async (w) => {
      for (let i = w; !stop(); i++) {
        const p = new RawPeer(port);
        p.socket.write(kinds[i % kinds.length]!);
        await p.next(5000);
        count(stats, p.goodbye());
        stats.rounds++;
        p.socket.destroy();
        await p.closed;
      }
    }),
  );
}

/** A trusted peer (token, an rpc client id): maximal frames, one connection after another, until `stop`. */
async function trusted(port: number, token: string, stop: () => boolean, stats: AttackStats): Promise<void> {
  let clientId: number | undefined;
  let secret: string | undefined;
  for (let i = 0; !stop(); i++) {
    const p = new RawPeer(port);
    // A reconnect presents the secret its first Welcome issued (a trusted client, not an impostor).
    p.socket.write(helloFrame(token, encodeHelloPayload(clientId === undefined ? {} : { clientId, secret, awaiting: [] })));
    const w = await p.next(10_000);
    if (w?.type !== 'welcome') {
      count(stats, p.goodbye() ?? `no welcome: ${w?.type ?? 'closed'}`);
      p.socket.destroy();
      await p.closed;
      await sleep(50);
      continue;
    }
    const info = decodeWelcomePayload(w.payload);
    clientId = info.clientId;
    secret = info.secret ?? secret;
    if (i % 2 === 0) {
      p.socket.write(emptyWrsFrame((16 << 20) / 2 - 8));
    } else {
      const wrs = Array.from({ length: 4096 }, (_, k) => ({ op: 'read' as const, id: k, from: { rkey: info.rkey, addr: info.ringOffset }, len: Math.min(3072, info.ringSlots * info.slotBytes) }));
      p.socket.write(frameBytes(encodeMessage({ type: 'request', qpn: w.qpn, seq: 1, wrs })));
      const r = await p.next(30_000);
      count(stats, r?.type === 'response' ? `response (${r.completions.filter((c) => c.status === 'ok').length} ok)` : p.goodbye());
      stats.rounds++;
      p.socket.end(frameBytes(encodeMessage({ type: 'goodbye', code: 'PMRPC_ERR_SERVER_CLOSED', message: 'done' })));
      await p.end(5000);
      continue;
    }
    await p.next(30_000);
    count(stats, p.goodbye());
    stats.rounds++;
    p.socket.destroy();
    await p.closed;
  }
}

/** Idle connections that never say Hello: `n` opened, topped up to `n` every 250 ms as the server closes them, until `stop`. */
async function idlers(port: number, n: number, stop: () => boolean, stats: AttackStats): Promise<void> {
  const live = new Set<RawPeer>();
  while (!stop()) {
    while (live.size < n && !stop()) {
      const p = new RawPeer(port);
      live.add(p);
      stats.rounds++;
      void p.closed.then(() => {
        count(stats, p.goodbye());
        live.delete(p);
      });
      if (live.size % 16 === 0) await sleep(1);
    }
    await sleep(250);
  }
  for (const p of live) p.socket.destroy();
}

const { attack, port, token, idleConnections } = JSON.parse(process.argv[2] ?? '{}') as { attack: Attack; port: number; token: string; idleConnections: number };
const stats: AttackStats = { rounds: 0, goodbyes: {} };
let over = false;
const stop = (): boolean => over;
const running = attack === 'stranger' ? strangers(port, stop, stats) : attack === 'trusted' ? trusted(port, token, stop, stats) : idlers(port, idleConnections, stop, stats);
// The handler before the ready line: a SIGTERM sent on reading it must find it (until a listener
// exists the kernel's default action kills the process).
process.on('SIGTERM', () => {
  over = true;
  void running.then(() => {
    process.stdout.write(`${JSON.stringify(stats)}\n`);
    process.exit(0);
  });
});
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
