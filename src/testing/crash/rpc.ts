/**
 * The durable RPC app on the explorer (DESIGN §8 "the workload has teeth"): clients call the
 * non-idempotent digest handler (a digest of each request appended to a PM log, a counter bumped
 * on another line); the checker compares digests, not just sequence numbers:
 * - every request whose `durable` resolved is applied exactly once; nothing applied that was never
 *   sent; FIFO per client without holes; resume points consistent with what was applied;
 * - clients then reconnect through the real hello/welcome handshake and resend from their resume
 *   points: every request sent is applied exactly once, kept results are the requests' own;
 * - the region reopens from media alone to the same state, with nothing left to re-execute.
 */
import { crc32c, PmemRegion, type Prng, resolveOptions } from '../../../pmem/index.js';
import type { QueuePair } from '../../../flush/index.js';
import { layoutBytes, RecoveryStore, type AppView } from '../../../recovery/index.js';
import { checkRpcFaults, checkStrategy, DurableRpcClient, rpcWorker, type RpcFaults, type RpcPool, type RpcStrategy } from '../../rpc/index.js';
import type { AppHost, AppProblem } from '../../apps/index.js';
import { rpcApp, RpcAppServer, type RpcAppOptions } from '../../apps/rpc/index.js';
import { DIGEST_BYTES, DIGEST_HANDLERS, LOG_BASE, METHOD, digestHandler, readDigestLog } from '../../apps/rpc/index.js';
import { decodeWelcomePayload, encodeHelloPayload, findRpcMutant } from '../../apps/rpc/index.js';
import type { ExplorerApp } from './explorer.js';
import type { Picture, PicturedProblem } from './picture.js';
import type { World } from './world.js';

export interface RpcWorkloadOptions {
  strategy: RpcStrategy;
  requests: number;
  clients: number;
  mutant: string | undefined;
  /** Reconnect and resend after recovery on every n-th checked image (0 = never). */
  resumeEvery: number;
  /** Server nodes, each with its own clients (a multi-node run of independent RPC servers). */
  nodes: number;
  /**
   * Pool mode: the digest method is pooled, computed by the explorer's pool — each task finishes in
   * a CPU pass of its node, a scheduler step of its own — so entries are polled, in flight and not
   * yet applied while the scheduler runs other steps.
   */
  pool: boolean;
  /** Each client reconnects live a few times at seeded scheduler steps, with requests in flight (accept({clientId, awaiting})). */
  liveReconnect: boolean;
  /**
   * Digest-log entries per node (the log is a ring): undefined sizes the log to hold every request
   * (a wrap is then a violation); a smaller value makes it wrap, and the checks cover the ring's window.
   */
  digestEntries: number | undefined;
  /** Fault switches of the RPC layer besides the mutant's (test only: a step's fault switch alone). */
  rpcFaults: RpcFaults | undefined;
}

export const RPC_WORKLOAD_DEFAULTS: Readonly<RpcWorkloadOptions> = Object.freeze({ strategy: 'wflush', requests: 64, clients: 3, mutant: undefined, resumeEvery: 1, nodes: 1, pool: false, liveReconnect: false, rpcFaults: undefined, digestEntries: undefined });

export interface RpcSnapshot {
  /** "node/clientId" -> highest sequence issued / told durable. */
  sentUpTo: Map<string, number>;
  acked: Map<string, number>;
  /** "node/clientId" of clients whose release (goodbye) was acknowledged. */
  released?: Set<string>;
  /** Logical time of the crash point (calls and acknowledgements are on the same clock); for pictures. */
  time?: number;
}

export function resolveRpcWorkload(options: Partial<RpcWorkloadOptions>): RpcWorkloadOptions {
  const o = resolveOptions<RpcWorkloadOptions>(RPC_WORKLOAD_DEFAULTS, options, {});
  checkStrategy(o.strategy);
  const int = (name: keyof RpcWorkloadOptions, min: number, max: number): void => {
    const v = o[name];
    if (!Number.isSafeInteger(v) || (v as number) < min || (v as number) > max) throw new RangeError(`${name} must be an integer in [${min}, ${max}], got ${String(v)}`);
  };
  int('requests', 1, 100_000);
  int('clients', 1, 64);
  int('resumeEvery', 0, 1_000_000);
  int('nodes', 1, 16);
  if (o.digestEntries !== undefined) int('digestEntries', 1, 1_000_000);
  if (o.mutant !== undefined) findRpcMutant(o.mutant);
  if (typeof o.pool !== 'boolean') throw new TypeError(`pool must be a boolean, got ${String(o.pool)}`);
  if (typeof o.liveReconnect !== 'boolean') throw new TypeError(`liveReconnect must be a boolean, got ${String(o.liveReconnect)}`);
  checkRpcFaults(o.rpcFaults);
  return o;
}

/** The RPC app's geometry in the explorer: small rings and log, so both wrap many times. */
export function rpcCrashLayout(clients: number): RpcAppOptions['layout'] {
  return { maxClients: clients, ringSlots: 4, slotBytes: 128, logRecords: 4, recordBytes: 128 };
}

/** Crash runs: logical-clock waits (1 ms each) for a crashed node to be back before a client gives up. */
const RPC_WAITS_MAX = 200;

/** Live reconnects per client (workload option liveReconnect). */
const RECONNECTS_PER_CLIENT = 4;

const key = (node: number, clientId: number): string => `${node}/${clientId}`;

/** A fresh RPC explorer app (it holds the workload's state: one per explore() call). */
export function rpcExplorerApp(options: Partial<RpcWorkloadOptions> = {}): ExplorerApp<RpcSnapshot> & { acknowledged(): number; applied: number } {
  const w = resolveRpcWorkload(options);
  const m = w.mutant === undefined ? undefined : findRpcMutant(w.mutant);
  const perNodeRequests = Math.ceil(w.requests / w.nodes);
  const layout = rpcCrashLayout(w.clients + 1);
  const appBytes = w.digestEntries !== undefined ? Math.ceil((LOG_BASE + DIGEST_BYTES * w.digestEntries) / 64) * 64 : Math.ceil((LOG_BASE + DIGEST_BYTES * (perNodeRequests + 8)) / 64) * 64 + 64;
  const rpcFaults = m?.rpcFaults !== undefined || w.rpcFaults !== undefined ? { ...m?.rpcFaults, ...w.rpcFaults } : undefined;
  const appOptions = rpcApp.resolveOptions({
    strategy: w.strategy, keepResults: true, layout, appBytesMin: appBytes, partialPollsMax: 1_000_000, rpcFaults, recoveryFaults: m?.recoveryFaults,
    ...(w.pool ? { methods: { [METHOD]: { pooled: true } } } : {}),
  });
  const sentUpTo = new Map<string, number>();
  const acked = new Map<string, number>();
  /** "node/clientId" -> seq -> payload. */
  const payloads = new Map<string, Map<number, Uint8Array>>();
  /** "node/clientId" -> the secret issued in its welcome (presented by its reconnects). */
  const secrets = new Map<string, string>();
  let imagesSeen = 0;
  /** Logical time: calls, durable acknowledgements and crash points (for pictures of violations). */
  let now = 0;
  /** "node/clientId" -> seq -> [call, durable ack]. */
  const times = new Map<string, Map<number, [number, number | undefined]>>();
  /** Crash runs: the workload's clients (index: node * clients + k) and those that crashed. */
  let live: DurableRpcClient[] = [];
  let crashedClients = new Set<number>();
  const app = {
    name: 'rpc',
    nodes: w.nodes,
    clients: w.nodes * w.clients,
    regionBytes: layoutBytes({ ...layout, appBytes }),
    applied: 0,
    acknowledged: () => [...acked.values()].reduce((a, b) => a + b, 0),
    format(region: PmemRegion): void {
      rpcApp.format(region, appOptions);
    },
    open(host: AppHost) {
      return rpcApp.open(host, w.pool ? { ...appOptions, pool: explorerPool(host) } : appOptions);
    },
    async workload(world: World, prng: Prng): Promise<void> {
      // A crash run replays the workload on this app: start afresh.
      for (const m of [sentUpTo, acked, payloads, secrets, times]) m.clear();
      live = [];
      crashedClients = new Set();
      now = 0;
      const streams: Promise<void>[] = [];
      const results: Promise<unknown>[] = [];
      for (let n = 0; n < w.nodes; n++) {
        const reqs = Math.floor(w.requests / w.nodes) + (n < w.requests % w.nodes ? 1 : 0);
        for (let k = 0; k < w.clients; k++) {
          let id = 0;
          let hs: { qp: QueuePair; welcome: Uint8Array } | undefined;
          // Crash runs: the node may be down (or crash during the handshake): wait for it, bounded.
          for (let waits = 0; hs === undefined; waits++) {
            try {
              hs = world.connect(n, encodeHelloPayload({}));
            } catch (e) {
              if (waits >= RPC_WAITS_MAX) throw e;
              await new Promise<void>((resolve) => world.clock.setTimer(1, resolve));
            }
          }
          const { qp, welcome } = hs;
          const onDurable = (s: number): void => {
            const kk = key(n, id);
            for (let q = (acked.get(kk) ?? 0) + 1; q <= s; q++) {
              const t = times.get(kk)?.get(q);
              if (t !== undefined && t[1] === undefined) t[1] = ++now;
            }
            acked.set(kk, Math.max(acked.get(kk) ?? 0, s));
          };
          const c = new DurableRpcClient(qp, decodeWelcomePayload(welcome), { onDurable, faults: rpcFaults });
          id = c.clientId;
          const index = live.length;
          live.push(c);
          // Crash runs: when the node goes down under it, the client waits (bounded, logical clock) for
          // the node's restart and reconnects through the handshake with what it still awaits.
          const watch = (q: typeof qp): void => {
            q.link.onClose?.(() => {
              void (async () => {
                for (let waits = 0; waits < RPC_WAITS_MAX; waits++) {
                  if (crashedClients.has(index)) return;
                  if (!world.nodes[n]!.crashed) {
                    try {
                      const r = world.connect(n, encodeHelloPayload({ clientId: id, secret: c.secret, awaiting: c.awaiting }));
                      c.reconnect(r.qp, decodeWelcomePayload(r.welcome));
                      watch(r.qp);
                      return;
                    } catch {
                      // the node went down again meanwhile
                    }
                  }
                  await new Promise<void>((resolve) => world.clock.setTimer(1, resolve));
                }
              })();
            });
          };
          watch(qp);
          const kk = key(n, id);
          if (c.secret !== undefined) secrets.set(kk, c.secret);
          sentUpTo.set(kk, 0);
          acked.set(kk, 0);
          payloads.set(kk, new Map());
          times.set(kk, new Map());
          const mine = Math.floor(reqs / w.clients) + (k < reqs % w.clients ? 1 : 0);
          const cp = prng.fork();
          // Live reconnects at seeded scheduler steps (not in the client's code: at any moment of the
          // run, e.g. with an entry polled, in the pool, its client's FLUSH not yet executed).
          if (w.liveReconnect) {
            let at = 0;
            for (let i = 0; i < RECONNECTS_PER_CLIENT; i++) {
              at += cp.int(1, 60);
              world.after(at, () => {
                if (c.awaiting.length === 0 || world.nodes[n]!.crashed) return;
                const r = world.connect(n, encodeHelloPayload({ clientId: id, secret: c.secret, awaiting: c.awaiting }));
                c.reconnect(r.qp, decodeWelcomePayload(r.welcome));
              });
            }
          }
          streams.push(
            (async () => {
              for (let seq = 1; seq <= mine; seq++) {
                if (crashedClients.has(index)) return;
                const payload = new Uint8Array(cp.int(8, 90)).map(() => cp.int(0, 255));
                payloads.get(kk)!.set(seq, payload);
                sentUpTo.set(kk, seq);
                times.get(kk)!.set(seq, [++now, undefined]);
                const call = c.call(METHOD, payload);
                results.push(call.result.catch(() => undefined));
                // Sometimes a client waits for its request to be durable before the next one.
                if (cp.chance(0.25)) await call.durable.catch(() => undefined);
                else for (let y = cp.int(0, 6); y > 0; y--) await Promise.resolve();
              }
            })(),
          );
        }
      }
      await Promise.all(streams);
      await Promise.all(results);
    },
    /** Crash runs: client `c` (node * clients + k) stops now; its pending calls are cut. */
    crashClient(c: number): void {
      if (!Number.isSafeInteger(c) || c < 0 || c >= w.nodes * w.clients) throw new RangeError(`client must be in [0, ${w.nodes * w.clients}), got ${String(c)}`);
      crashedClients.add(c);
      live[c]?.close();
    },
    /**
     * Crash runs: after the workload ran through crashes and restarts, every client (crashed ones
     * too, as restarted from their own logs) reconnects and resends from its resume point; then
     * every request sent is applied exactly once and nothing acknowledged is lost (checkDigests).
     */
    async checkHistory(world: World): Promise<AppProblem[]> {
      const msgs = await resume(world, { sentUpTo: new Map(sentUpTo), acked: new Map(acked) });
      return msgs.map((detail) => ({ kind: /lost/.test(detail) ? 'lost' : 'digest', detail }));
    },
    snapshot(): RpcSnapshot {
      return { sentUpTo: new Map(sentUpTo), acked: new Map(acked), time: ++now };
    },
    async checkLive(world: World): Promise<AppProblem[]> {
      const out: AppProblem[] = [];
      const end: RpcSnapshot = { sentUpTo, acked };
      app.applied = 0;
      for (const node of world.nodes) {
        const s = node.server as RpcAppServer;
        for (const p of s.audit()) out.push(p);
        const msgs: string[] = [];
        app.applied += checkDigests(s.store.appView, node.index, end, payloads, msgs, true, w.digestEntries !== undefined);
        for (const d of msgs) out.push({ kind: 'digest', detail: `node ${node.index}: end of run: ${d}` });
      }
      return out;
    },
    async checkRecovered(world: World, snap: RpcSnapshot, ctx: { phase: 'first' | 'nested' }): Promise<AppProblem[]> {
      const msgs: string[] = [];
      for (const node of world.nodes) {
        const s = node.server as RpcAppServer;
        const pre = `node ${node.index}: `;
        const out: string[] = [];
        checkDigests(s.store.appView, node.index, snap, payloads, out, false, w.digestEntries !== undefined);
        for (const c of s.store.conn.entries()) {
          const resume = s.store.resumeSeq(c.clientId);
          if (s.store.conn.appliedSeq(c.clientId) !== resume - 1) out.push(`client ${c.clientId} resumes at ${resume} but is applied up to ${s.store.conn.appliedSeq(c.clientId)}`);
          const sent = snap.sentUpTo.get(key(node.index, c.clientId)) ?? 0;
          if (resume - 1 > sent) out.push(`client ${c.clientId}: durable up to ${resume - 1}, only ${sent} sent`);
        }
        msgs.push(...out.map((x) => pre + x));
      }
      if (msgs.length === 0 && ctx.phase === 'first' && w.resumeEvery > 0 && imagesSeen++ % w.resumeEvery === 0) msgs.push(...(await resume(world, snap)));
      if (msgs.length === 0 && ctx.phase === 'first') for (const node of world.nodes) msgs.push(...reopen(node.region, node.server as RpcAppServer).map((x) => `node ${node.index}: ${x}`));
      return msgs.map((detail): PicturedProblem => ({ kind: /lost/.test(detail) ? 'lost' : 'digest', detail, picture: () => picture(snap, detail) }));
    },
    replayArgs(): string {
      return `--app rpc --strategy ${w.strategy} --requests ${w.requests} --clients ${w.clients}${w.nodes > 1 ? ` --nodes ${w.nodes}` : ''}${w.mutant !== undefined ? ` --mutant ${w.mutant}` : ''}`;
    },
  };

  /**
   * Requests as operations, one lane per client (call → durable acknowledgement), as of the crash:
   * one not acknowledged by then is cut. The requests the detail names are red.
   */
  function picture(snap: RpcSnapshot, detail: string): Picture {
    const crash = snap.time ?? Number.POSITIVE_INFINITY;
    const node = Number(/^node (\d+):/.exec(detail)?.[1] ?? -1);
    const lostRange = /client (\d+) was told durable up to (\d+), applied up to (\d+)/.exec(detail);
    const one = /client (\d+) seq (\d+)/.exec(detail);
    const named = (n: number, c: number, q: number): boolean =>
      (node < 0 || node === n) &&
      (lostRange !== null ? c === Number(lostRange[1]) && q > Number(lostRange[3]) && q <= Number(lostRange[2]) : one !== null && c === Number(one[1]) && q === Number(one[2]));
    const operations: Picture['operations'] = [];
    for (const [kk, seqs] of times) {
      const [n, c] = kk.split('/').map(Number) as [number, number];
      for (const [q, [call, ack]] of seqs) {
        if (call >= crash) continue;
        operations.push({ client: c, call, ret: ack !== undefined && ack < crash ? ack : undefined, label: `${w.nodes > 1 ? `node ${n} ` : ''}#${q}`, highlight: named(n, c, q), ...(w.nodes > 1 ? { node: n } : {}) });
      }
    }
    return { operations, crashes: Number.isFinite(crash) ? [{ time: crash, label: 'crash' }] : [] };
  }

  /** Clients reconnect through the handshake and resend from their resume points. */
  async function resume(world: World, snap: RpcSnapshot): Promise<string[]> {
    const out: string[] = [];
    let issued = 0;
    let settled = 0;
    try {
      for (const node of world.nodes) {
        const s = node.server as RpcAppServer;
        for (const c of s.store.conn.entries()) {
          const kk = key(node.index, c.clientId);
          // A registration whose welcome the crash lost (the node went down after the slot was durable):
          // no client ever knew its id or secret, so none resumes it (its lease gives the slot back);
          // checkDigests still requires that nothing of it was applied.
          if (!secrets.has(kk)) continue;
          const sent = snap.sentUpTo.get(kk) ?? 0;
          const awaiting: number[] = [];
          for (let q = (snap.acked.get(kk) ?? 0) + 1; q <= sent; q++) awaiting.push(q);
          const { qp, welcome } = world.connect(node.index, encodeHelloPayload({ clientId: c.clientId, secret: secrets.get(kk), awaiting }));
          const info = decodeWelcomePayload(welcome);
          const client = new DurableRpcClient(qp, info, { faults: rpcFaults });
          for (const r of info.results) {
            if (r.status === 'error') out.push(`node ${node.index}: after resume: client ${c.clientId} seq ${r.seq} has an error result`);
            else if (r.status === 'ok') {
              const p = payloads.get(kk)?.get(r.seq);
              const got = r.bytes !== undefined && r.bytes.length >= 4 ? new DataView(r.bytes.buffer, r.bytes.byteOffset, 4).getUint32(0, true) : -1;
              if (p === undefined || got !== crc32c(p)) out.push(`node ${node.index}: after resume: client ${c.clientId} seq ${r.seq}: the kept result is not this request's`);
            }
          }
          for (let q = info.resumeSeq; q <= sent; q++) {
            const call = client.call(METHOD, payloads.get(kk)!.get(q)!);
            issued++;
            call.result.then(() => settled++, () => settled++);
          }
        }
      }
    } catch (e) {
      return [`resume failed: ${(e as Error).message}`];
    }
    const r = await world.run(() => settled >= issued, 200_000);
    if (r.status !== 'done') out.push(`after resume: ${issued - settled} resent requests never answered (${r.status})`);
    for (const node of world.nodes) {
      const s = node.server as RpcAppServer;
      for (const p of s.audit()) out.push(`node ${node.index}: after resume: ${p.detail}`);
      const msgs: string[] = [];
      checkDigests(s.store.appView, node.index, snap, payloads, msgs, true, w.digestEntries !== undefined);
      out.push(...msgs.map((x) => `node ${node.index}: ${x}`));
    }
    return out;
  }

  /** Reopens from media alone: recovery finds nothing to re-execute and the same application state. */
  function reopen(region: PmemRegion, s: RpcAppServer): string[] {
    const again = PmemRegion.openImage(region.crashState().media);
    try {
      const s2 = RecoveryStore.open(again, { faults: m?.recoveryFaults });
      const r2 = s2.recover((e, v) => digestHandler({ clientId: e.clientId, seq: e.seq, method: METHOD, payload: e.payload }, v));
      const out: string[] = [];
      if (r2.clients.some((c) => c.reexecute.length > 0)) out.push('reopen found entries to re-execute after everything was applied');
      if (digestState(s2.appView) !== digestState(s.store.appView)) out.push('reopen from media changed the application state');
      return out;
    } catch (e) {
      return [`the region does not reopen cleanly: ${(e as Error).message}`];
    }
  }
  return app;
}

/**
 * The explorer's handler pool (pool mode): a task is computed as piscina's workers compute it
 * (rpcWorker over the region's shared visible memory), in a CPU pass of its node — a scheduler
 * step of its own, so other steps run while it is in flight. A crashed node's tasks never finish.
 */
function explorerPool(host: AppHost): RpcPool {
  const compute = rpcWorker(DIGEST_HANDLERS);
  return { run: (task) => new Promise((resolve) => host.schedule(() => resolve(compute(task)))) };
}

function digestState(view: AppView): string {
  const n = Math.min(Number(view.loadU64(0)), Math.floor((view.sizeBytes - LOG_BASE) / DIGEST_BYTES));
  return Buffer.from(view.load(0, LOG_BASE + n * DIGEST_BYTES)).toString('hex');
}

/**
 * Checks node `node`'s digest log against what was sent and acknowledged; returns how many requests it holds.
 * `complete`: every request sent must be applied (after the clients resent from their resume points).
 */
export function checkDigests(view: AppView, node: number, snap: RpcSnapshot, payloads: Map<string, Map<number, Uint8Array>>, out: string[], complete: boolean, wraps = false): number {
  const log = readDigestLog(view);
  if (log.first > 0 && !wraps) {
    out.push(`counter ${log.counter} exceeds the digest log's ${log.entries.length} entries (sized to hold every request)`);
    return log.counter;
  }
  const lastSeq = new Map<number, number>();
  log.entries.forEach(({ clientId: c, seq: s, payloadCrc: crc, position: idx }, i) => {
    const at = log.first + i;
    if (idx !== at % 0x1_0000_0000) out.push(`digest ${at} records position ${idx} (effects of two requests mixed)`);
    const sent = snap.sentUpTo.get(key(node, c)) ?? 0;
    const payload = s <= sent ? payloads.get(key(node, c))?.get(s) : undefined;
    if (payload === undefined) out.push(`applied client ${c} seq ${s}, never sent`);
    else if (crc32c(payload) !== crc) out.push(`applied client ${c} seq ${s} with a payload that was not the one sent (torn or stale)`);
    // A wrapped ring: a client's requests before its first digest still in the ring were overwritten, not lost.
    const prev = lastSeq.get(c) ?? (log.first > 0 ? s - 1 : 0);
    if (s <= prev) out.push(`client ${c} seq ${s} applied again or out of order (after ${prev})`);
    else if (s !== prev + 1) out.push(`client ${c} seq ${s} applied after ${prev}: FIFO hole`);
    lastSeq.set(c, Math.max(prev, s));
  });
  /** Applied up to (a client with no digest left in a wrapped ring: everything it sent, overwritten since). */
  const upTo = (c: number, sent: number): number => lastSeq.get(c) ?? (log.first > 0 ? sent : 0);
  const prefix = `${node}/`;
  for (const [k, a] of snap.acked) {
    if (!k.startsWith(prefix)) continue;
    const c = Number(k.slice(prefix.length));
    const applied = upTo(c, snap.sentUpTo.get(k) ?? 0);
    if (applied < a) out.push(`client ${c} was told durable up to ${a}, applied up to ${applied}: acknowledged request lost`);
  }
  if (complete) {
    for (const [k, s] of snap.sentUpTo) {
      if (!k.startsWith(prefix)) continue;
      const c = Number(k.slice(prefix.length));
      if (upTo(c, s) !== s) out.push(`after resume: client ${c} sent up to ${s}, applied up to ${upTo(c, s)}`);
    }
  }
  return log.counter;
}
