/**
 * PRISM-KV (and its Pilaf-style baseline) on the explorer (DESIGN §5, §8). Concurrent clients run
 * PUT / GET / DELETE over a small KV area whose keys collide (they race for free slots); every
 * operation records its call and the moment its answer was delivered (logical time). Checks of a
 * recovered image:
 * - early PUT (PRISM-KV): before recovery rebuilt the free lists a PUT is refused, not "full";
 * - stale return batches: batches clients sent before the crash carry the old epoch, refused;
 * - index and allocator (the app's audit): no garbage slot, free ⊎ reachable = the arena;
 * - lost: every acknowledged PUT / DELETE is reflected (Jepsen set-full style);
 * - durable linearizability (src/check): the history as of the crash — operations cut by it may or
 *   may not have happened — plus a read of every key after recovery; a search that gives up
 *   ('undecided') is a violation too.
 */
import { PmrpcError, resolveOptions } from '../../../pmem/index.js';
import { NicErrorCodes, QueuePair, Wr } from '../../../flush/index.js';
import type { PmemRegion, Prng } from '../../../pmem/index.js';
import { checkLinearizable, cutHistory, describeKvInput, kvModel, lostWrites, type KvInput, type KvOutput, type Operation } from '../../check/index.js';
import type { AppHost, AppProblem } from '../../apps/index.js';
import { connectKvClient, kvApp, KvAppServer, kvSystemReconnects, type KvAppRecoveryReport, type KvSystem } from '../../apps/kv/index.js';
import { KV_SYSTEM_MUTANTS, NO_KV_FAULTS, type KvFaults } from '../../apps/kv/index.js';
import { classOf, computeKvGeometry, decodeItem, decodeSlot, homeSlot, KvErrorCodes, probeSequence, slotOffset, validateLayoutOptions, type KvGeometry, type KvLayoutOptions } from '../../apps/kv/index.js';
import type { PrismKvClient } from '../../apps/kv/index.js';
import type { PilafClient } from '../../apps/kv/index.js';
import { PrismKvServer, RETURN_IMM } from '../../apps/kv/index.js';
import type { ExplorerApp } from './explorer.js';
import { kvLabel, kvWellFormed, shortestNonLinearizable, timelineOperations } from '../timeline/index.js';
import type { Picture, PicturedProblem } from './picture.js';
import type { World } from './world.js';

/** One operation of a scripted workload: `key` indexes the workload's keys; a PUT's value has `valueBytes` bytes. */
export interface KvScriptOp {
  client: number;
  kind: 'put' | 'get' | 'delete';
  key: number;
  valueBytes?: number;
}

export interface KvWorkloadOptions {
  system: KvSystem;
  /** A mutant of the system's (KV_SYSTEM_MUTANTS: PRISM-KV's KV_MUTANTS, by its name or an alias, or the Pilaf baseline's PILAF_MUTANTS). */
  mutant: string | undefined;
  clients: number;
  opsPerClient: number;
  keys: number;
  /** Fault switches besides the mutant's (test only: one step's switch, alone or with another). */
  faults: Partial<KvFaults> | undefined;
  /**
   * Test only: these operations, one after the other (each awaited), instead of the seeded random
   * ones — a scenario the scheduler then interleaves with the NIC's and the server's own steps.
   */
  script: readonly KvScriptOp[] | undefined;
  /**
   * Test only, a media error (not a crash): before a crash image is recovered (a checked image, or a
   * node restarting in a crash run), a bit flips in the first tombstone item the index links. Its
   * key reads as deleted either way, so no guarantee changes; recovery rejects the slot and gives it
   * a dead item — the repair path a correct run never takes.
   */
  damageTombstone: boolean;
}

export const KV_WORKLOAD_DEFAULTS: Readonly<KvWorkloadOptions> = Object.freeze({ system: 'prism', mutant: undefined, clients: 3, opsPerClient: 20, keys: 6, faults: undefined, script: undefined, damageTombstone: false });

/** The KV area the crash workload uses: small, so keys collide and buffers run short. */
export const KV_CRASH_LAYOUT: Readonly<Partial<KvLayoutOptions>> = Object.freeze({
  slotCount: 16,
  probeSlots: 8,
  keyBytesMax: 16,
  classes: [
    { sizeBytes: 64, count: 16 },
    { sizeBytes: 128, count: 4 },
  ],
  mailboxBuffers: 14,
});

const REGION_BYTES = 32 * 1024;
/** Crash runs: logical-clock waits (1 ms each) for a crashed node to be back before a client gives up. */
const KV_WAITS_MAX = 200;
const te = new TextEncoder();
const td = new TextDecoder();

export interface KvOp extends Operation<KvInput, KvOutput> {
  error?: string;
}

export function resolveKvWorkload(options: Partial<KvWorkloadOptions>): KvWorkloadOptions {
  const o = resolveOptions<KvWorkloadOptions>(KV_WORKLOAD_DEFAULTS, options, {});
  if (o.system !== 'prism' && o.system !== 'pilaf') throw new TypeError(`system must be 'prism' or 'pilaf', got ${String(o.system)}`);
  if (o.mutant !== undefined && KV_SYSTEM_MUTANTS[o.system].find(o.mutant) === undefined) {
    const of = Object.entries(KV_SYSTEM_MUTANTS).find(([, m]) => m.find(o.mutant!) !== undefined)?.[0];
    throw new TypeError(`mutant must be one of ${KV_SYSTEM_MUTANTS[o.system].names.join(', ')} (the mutants of system ${o.system}), got ${String(o.mutant)}${of !== undefined ? ` (a mutant of --system ${of})` : ''}`);
  }
  const int = (name: keyof KvWorkloadOptions, lo: number, hi: number): void => {
    const v = o[name];
    if (!Number.isSafeInteger(v) || (v as number) < lo || (v as number) > hi) throw new RangeError(`${name} must be an integer in [${lo}, ${hi}], got ${String(v)}`);
  };
  int('clients', 1, 6);
  int('opsPerClient', 1, 1000);
  int('keys', 1, 8);
  if (o.faults !== undefined) for (const k of Object.keys(o.faults)) if (!(k in NO_KV_FAULTS)) throw new TypeError(`unknown KV fault switch ${k}`);
  if (o.script !== undefined) {
    if (!Array.isArray(o.script)) throw new TypeError('script must be an array of operations');
    for (const op of o.script) {
      if (!Number.isSafeInteger(op.client) || op.client < 0 || op.client >= o.clients) throw new RangeError(`script: client must be in [0, ${o.clients}), got ${String(op.client)}`);
      if (!Number.isSafeInteger(op.key) || op.key < 0 || op.key >= o.keys) throw new RangeError(`script: key must be in [0, ${o.keys}), got ${String(op.key)}`);
      if (op.kind !== 'put' && op.kind !== 'get' && op.kind !== 'delete') throw new TypeError(`script: kind must be put, get or delete, got ${String(op.kind)}`);
    }
  }
  if (typeof o.damageTombstone !== 'boolean') throw new TypeError(`damageTombstone must be a boolean, got ${String(o.damageTombstone)}`);
  return o;
}

const keyName = (i: number): string => `k${i}`;

/** Keys whose probe windows start at slot 0 or 3 (windows [0, 4) and [3, 7) share slot 3): collisions and races for free slots. */
function clusteredKeys(g: KvGeometry, n: number): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < n && i < 100_000; i++) {
    const h = homeSlot(g, te.encode(keyName(i)));
    const want = out.length % 2 === 0 && out.length < 4 ? 0 : 3;
    if (h === want || (out.length >= 4 && (h === 0 || h === 3))) out.push(keyName(i));
  }
  return out;
}

/**
 * The homes of the random workload's rounds (KV_CRASH_LAYOUT: 16 slots, probe sequences of two
 * groups of 4, two slots per cache line): round r's keys, one per client, share home
 * ROUND_HOMES[r] (group 0). Where two claims of a round fall on different cache lines (slots 5 | 6,
 * 11 | 12), the index FLUSH of the second must cover the first's line — the claim it went past.
 * Round 1's group 0 [6, 10) starts with round 0's slots 6 and 7 taken: its third key finds group 0
 * full (the second's claim of slot 9 its last slot) and goes to its group 1, another run of slots,
 * whose FLUSHes must cover group 0 as well.
 */
export const ROUND_HOMES: readonly number[] = Object.freeze([5, 5, 4]);
/**
 * The random workload's quiet corner, slots [0, 4) (no round's window reaches it): the hot key
 * (home 0, PUT with small items and read by every client, never deleted) and the retired key
 * (home 2, in the hot key's window, on another cache line: written once, deleted, never touched
 * again). Nothing but the hot key's own operations — which FLUSH only its home line — reaches the
 * retired key's slot, so a recovery's repair of that slot (a media error in its tombstone) stays as
 * durable as recovery made it while the hot key's PUTs reuse the buffers recovery reclaimed.
 */
export const QUIET_HOMES: Readonly<{ hot: number; retired: number }> = Object.freeze({ hot: 0, retired: 2 });

/**
 * The first `n` keys `k<i>` whose home slot is `home` (none of `taken`) and whose group 1 neither
 * touches group 0 (so it is another run of slots) nor the quiet corner [0, 4) (QUIET_HOMES: no
 * probe of another key reads there).
 */
function keysHomedAt(g: KvGeometry, home: number, n: number, taken: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < n && i < 100_000; i++) {
    const k = keyName(i);
    if (taken.has(k) || homeSlot(g, te.encode(k)) !== home) continue;
    const group1 = probeSequence(g, te.encode(k)).slice(g.groupSlots);
    if (group1.length > 0 && group1.every((x) => x >= 4 && (x < home - 1 || x > home + g.groupSlots))) out.push(k);
  }
  return out;
}

/**
 * A barrier of the workload's clients: arrive(r) resolves once every client still running has
 * arrived at round r (a client that stops — crashed, its node gone for good — leaves).
 */
class RoundBarrier {
  #active: number;
  #arrived = new Map<number, number>();
  #waiters = new Map<number, Array<() => void>>();
  constructor(clients: number) {
    this.#active = clients;
  }
  arrive(round: number): Promise<void> {
    this.#arrived.set(round, (this.#arrived.get(round) ?? 0) + 1);
    const p = new Promise<void>((resolve) => this.#waiters.set(round, [...(this.#waiters.get(round) ?? []), resolve]));
    this.#release();
    return p;
  }
  leave(): void {
    this.#active--;
    this.#release();
  }
  #release(): void {
    for (const [r, ws] of this.#waiters) {
      if ((this.#arrived.get(r) ?? 0) < this.#active) continue;
      this.#waiters.delete(r);
      for (const w of ws) w();
    }
  }
}

/**
 * The drop shape of the random workload, drawn by seeds ≡ 1 (mod 4) (the others run as before; a
 * seed's crash runs and its images share it): a client whose connection dropped is slow to
 * reconnect — it is back only once the logical clock has moved, once the other clients did what
 * they could (to the end of their round) — and half the random operations of client c follow the
 * writer before it (client c - 1): a GET of the key it last PUT or DELETEd, then a PUT of it. So the
 * chain whose answer a drop lost has run while its client is away, and the next client reads what
 * it installed and writes over it: the window in which a client that posts that chain again as new
 * (mutant retryUncertainPut) applies it a second time, over a write that came after a read saw it.
 */
export function kvDropShape(seed: number): boolean {
  return seed % 4 === 1;
}



/** The shortest non-linearizable sub-history (delta debugging, keeping what explains each read), the checker's operations red. */
export function linPicture(history: Array<Operation<KvInput, KvOutput>>, named: ReadonlyArray<Operation<KvInput, KvOutput>>, crashes: Picture['crashes']): Picture {
  const short = shortestNonLinearizable(kvModel, history, { wellFormed: kvWellFormed(history), maxAttempts: 400 });
  const last = Math.max(...short.ops.map((o) => o.ret ?? o.call));
  return { operations: timelineOperations(short.ops, kvLabel, (op) => named.includes(op)), crashes: crashes.filter((c) => c.time <= last + 1) };
}

/** A lost write: the history cut at the crash, for the key the read after recovery got wrong (its writes and that read red). */
export function lostPicture(history: Array<Operation<KvInput, KvOutput>>, detail: string, crashes: Picture['crashes']): Picture {
  const key = /get\(([^)]*)\) after recovery/.exec(detail)?.[1];
  const ops = key === undefined ? history : history.filter((h) => h.input.key === key);
  return { operations: timelineOperations(ops, kvLabel, (op) => op.client === -1 || (op.input.kind !== 'get' && op.ret !== undefined)), crashes };
}


type KvClient = PrismKvClient | PilafClient;

/** Byte 12 of an item: in the checksummed header, always 0 in a valid item. */
const DAMAGED_BYTE = 12;

/** The media error of the damageTombstone option, in an image's data area `d`: a byte of the first linked tombstone item goes bad (idempotent). */
function damageTombstone(g: KvGeometry, d: Uint8Array): void {
  for (let i = 0; i < g.slotCount; i++) {
    const s = decodeSlot(d, slotOffset(g, i));
    const c = classOf(g, s.ptr);
    if (s.ptr === g.base || c === undefined) continue;
    const item = decodeItem(d.subarray(s.ptr, s.ptr + c.sizeBytes));
    if (item?.tombstone !== true) continue;
    d[s.ptr + DAMAGED_BYTE] = 0x5a;
    return;
  }
}

/** A fresh KV explorer app (it holds the workload's history: one per explore() call). */
export function kvExplorerApp(options: Partial<KvWorkloadOptions> = {}): ExplorerApp<{ time: number }> & { history(): KvOp[]; uncertainInstalls(): number; undecided: number; slotsRepaired: number; slotsRejected: number; staleReturnsRefused: Record<string, number> } {
  const w = resolveKvWorkload(options);
  const mutantFaults = KV_SYSTEM_MUTANTS[w.system].faults(w.mutant);
  const faults: KvFaults = { ...mutantFaults.faults, ...w.faults };
  const pilafFaults = mutantFaults.pilafFaults;
  const appOptions = kvApp.resolveOptions({ system: w.system, layout: KV_CRASH_LAYOUT, faults, pilafFaults });
  /** Logical time: calls, returns and crash points. */
  let now = 0;
  const ops: KvOp[] = [];
  const returns: Array<{ time: number; client: number; payload: Uint8Array }> = [];
  let keys: string[] = [];
  const clients: KvClient[] = [];
  /** Crash runs: clients that crashed (they stop mid-operation, never resume). */
  const crashedClients = new Set<number>();
  /** PUTs / DELETEs whose answer a drop lost, of the clients a restart retired (KvClientStats.uncertainInstalls). */
  let retiredUncertain = 0;
  /** Crash runs: clients an operation failed on after a dropped connection while node 0 stayed up (they should have reconnected). */
  const stoppedByDrop: string[] = [];
  const app = {
    name: 'kv',
    nodes: 1,
    regionBytes: REGION_BYTES,
    undecided: 0,
    /** Slots every recovery (checked images, nested ones, crash-run restarts) repaired, and rejected (PRISM-KV; each rejected one got a dead item). */
    slotsRepaired: 0,
    slotsRejected: 0,
    /** Verdicts on the stale return batches replayed after recovery (PRISM-KV), summed over checked images. */
    staleReturnsRefused: {} as Record<string, number>,
    history: () => ops,
    /** PUTs / DELETEs whose answer a dropped connection lost, over the run's clients (KvClientStats.uncertainInstalls). */
    uncertainInstalls: () => clients.reduce((a, c) => a + (c !== undefined && 'uncertainInstalls' in c.stats ? c.stats.uncertainInstalls : 0), retiredUncertain),
    format(region: PmemRegion): void {
      kvApp.format(region, appOptions);
    },
    open(host: AppHost) {
      const server = kvApp.open(host, appOptions) as KvAppServer;
      // Tally what every recovery repaired (checked images, nested ones, crash-run restarts).
      const recover = server.recover.bind(server) as () => KvAppRecoveryReport;
      (server as { recover: () => KvAppRecoveryReport }).recover = () => {
        const r = recover();
        if (server.kv instanceof PrismKvServer && server.kv.lastRecovery !== undefined) {
          app.slotsRepaired += server.kv.lastRecovery.slotsRepaired;
          app.slotsRejected += server.kv.lastRecovery.pointersRejected.length;
        }
        return r;
      };
      return server;
    },
    async workload(world: World, prng: Prng): Promise<void> {
      // A crash run replays the workload on this app: start afresh.
      now = 0;
      ops.length = 0;
      returns.length = 0;
      clients.length = 0;
      crashedClients.clear();
      stoppedByDrop.length = 0;
      retiredUncertain = 0;
      const server = world.nodes[0]!.server as KvAppServer;
      const g = server.kv.geometry;
      // Scripted: the clustered keys the script indexes. Random: the keys of every round (ROUND_HOMES).
      const rounds: string[][] = [];
      let hot = '';
      let retired = '';
      if (w.script !== undefined) keys = clusteredKeys(g, w.keys);
      else {
        const taken = new Set<string>();
        for (const home of ROUND_HOMES) {
          const ks = keysHomedAt(g, home, w.clients, taken);
          for (const k of ks) taken.add(k);
          rounds.push(ks);
        }
        hot = keysHomedAt(g, QUIET_HOMES.hot, 1, taken)[0]!;
        retired = keysHomedAt(g, QUIET_HOMES.retired, 1, taken)[0]!;
        keys = [hot, retired, ...rounds.flat()];
      }
      /** Client c's generation: a restarted client is a new one (a new sender id for its return batches). */
      const generation = new Array<number>(w.clients).fill(0);
      const dropShape = kvDropShape(world.seed);
      /** The key each client last PUT or DELETEd (the drop shape: client c follows client c - 1). */
      const lastWrite = new Array<string | undefined>(w.clients).fill(undefined);
      /** The incarnation of node 0 client c last connected to. */
      const connectedIn = new Array<number>(w.clients).fill(0);
      /** The drop shape's slow reconnects: the logical time client c first tried to reconnect after its drop. */
      const reconnectingSince: Array<number | undefined> = new Array<number | undefined>(w.clients).fill(undefined);
      const connect = async (c: number): Promise<KvClient> => {
        const { qp, welcome } = world.connect(0, new Uint8Array(0), c);
        const incarnation = world.nodes[0]!.incarnation;
        connectedIn[c] = incarnation;
        const opening = connectKvClient(qp, welcome, {
          faults,
          returnBatch: 2,
          clientId: 1 + c + w.clients * generation[c]!,
          clock: world.clock,
          onReturnBatch: (payload) => returns.push({ time: ++now, client: c, payload: payload.slice() }),
          // A dropped connection: the client reconnects the live node by itself. After a restart the workload connects it afresh (reconnect below).
          reconnect: () => {
            const node = world.nodes[0]!;
            if (crashedClients.has(c)) throw new PmrpcError(NicErrorCodes.LINK_CLOSED, `client ${c} crashed`);
            if (node.crashed || node.incarnation !== incarnation) throw new PmrpcError(NicErrorCodes.LINK_CLOSED, `node 0 crashed under client ${c}`);
            if (dropShape) {
              // A slow reconnect: the client is back only once the logical clock has moved since it
              // first tried (when nothing else could run: the others finished what they could).
              const since = (reconnectingSince[c] ??= world.clock.nowMs());
              if (world.clock.nowMs() === since) return undefined;
              reconnectingSince[c] = undefined;
            }
            // The host learns that the old connection is gone (its socket closed) no later than the client is back: it
            // releases it (AppServer.release: the QP is destroyed, so nothing of it runs after this, and its mailbox pair is reused).
            const old = clients[c];
            if (old !== undefined && old.qp.link.closed === true) node.server!.release?.(old.qp.qpn);
            return world.connect(0, new Uint8Array(0), c);
          },
        });
        return opening.catch((e: unknown) => {
          // The connection dropped while the client read the header: the host releases it (the caller connects again).
          const node = world.nodes[0]!;
          if (qp.link.closed === true && !node.crashed && node.incarnation === incarnation) node.server!.release?.(qp.qpn);
          throw e;
        });
      };
      /**
       * Crash runs: client c's node crashed under it; a bounded wait (logical clock) for the node to
       * be back, then a new connection (the epoch read afresh; what the old one held is reclaimed).
       */
      const reconnect = async (c: number): Promise<boolean> => {
        for (let waits = 0; waits < KV_WAITS_MAX; waits++) {
          if (crashedClients.has(c)) return false;
          if (!world.nodes[0]!.crashed) {
            try {
              clients[c] = await connect(c);
              return true;
            } catch {
              // the node went down again meanwhile
            }
          }
          await new Promise<void>((resolve) => world.clock.setTimer(1, resolve));
        }
        return false;
      };
      /** One operation, recorded in the history; false when the client stops (its QP broke, its node did not come back, or it crashed). */
      const perform = async (c: number, input: KvInput): Promise<boolean> => {
        const client = clients[c]!;
        const op: KvOp = { client: c, input, output: undefined, call: ++now, ret: undefined };
        if (input.kind !== 'get') lastWrite[c] = input.key;
        ops.push(op);
        try {
          let output: KvOutput = null;
          if (input.kind === 'put') await client.put(input.key, te.encode(input.value));
          else if (input.kind === 'delete') await client.delete(input.key);
          else {
            const v = await client.get(input.key);
            output = v === undefined ? null : td.decode(v);
          }
          if (crashedClients.has(c)) return false; // a crashed client never saw it: cut
          op.output = output;
          op.ret = ++now;
        } catch (e) {
          op.error = e instanceof Error ? e.message : String(e);
          if (crashedClients.has(c)) return false;
          if (world.nodes[0]!.crashed || world.nodes[0]!.incarnation > 0) return client.qp.state === 'error' || client.qp.link.closed === true ? reconnect(c) : true;
          if (client.qp.state === 'error' || client.qp.link.closed === true) {
            // Node 0 never went down: only a dropped connection closes a link now, and the client reconnects the live node by itself.
            if (e instanceof PmrpcError && e.code === NicErrorCodes.LINK_CLOSED) stoppedByDrop.push(`client ${c}: ${input.kind}(${input.key}) failed after a dropped connection while node 0 was up: ${op.error}`);
            return false;
          }
        }
        return true;
      };
      for (let c = 0; c < w.clients; c++) {
        try {
          clients.push(await connect(c));
        } catch (e) {
          // Crash runs: the node crashed while this client connected (or the connection dropped: connect again).
          const dropped = e instanceof PmrpcError && e.code === NicErrorCodes.LINK_CLOSED;
          if (!world.nodes[0]!.crashed && world.nodes[0]!.incarnation === 0 && !dropped) throw e;
          clients.push(undefined as unknown as KvClient);
          if (!(await reconnect(c))) crashedClients.add(c);
        }
      }
      if (w.script !== undefined) {
        for (const step of w.script) {
          const key = keys[step.key]!;
          const input: KvInput = step.kind === 'put' ? { kind: 'put', key, value: `c${step.client}n${ops.length}`.padEnd(step.valueBytes ?? 8, '.') } : { kind: step.kind, key };
          if (!(await perform(step.client, input))) return;
        }
        return;
      }
      /**
       * A client restarts (its process: the replaced buffers it holds returned, the connection
       * closed and released, a new client — empty slot cache, new sender id — connected). False
       * when it cannot come back (crashed, or its node did not).
       */
      const restart = async (c: number): Promise<boolean> => {
        const old = clients[c]!;
        if ('flushReturns' in old) await old.flushReturns().catch(() => 0);
        if (crashedClients.has(c)) return false;
        retiredUncertain += 'uncertainInstalls' in old.stats ? old.stats.uncertainInstalls : 0;
        const node = world.nodes[0]!;
        const same = !node.crashed && node.incarnation === connectedIn[c];
        old.qp.close();
        // The host learns that the connection is gone (its socket closed): it releases it (unless the node restarted since).
        if (same) node.server!.release?.(old.qp.qpn);
        generation[c]!++;
        return reconnect(c);
      };
      const barrier = new RoundBarrier(w.clients);
      /**
       * Rounds (ROUND_HOMES): at the start of each, each client restarts (after the first), and
       * once every client got there, PUTs its new key of the round's window (they race for its free
       * slots: the slot one claims is what the next one's probe goes past) and DELETEs the key of the
       * previous round that the round's owner had — the owner first, the others after their PUT
       * (their fresh clients locate it: a DELETE that finds the owner's tombstone is a no-op that
       * must wait for its FLUSH); then random operations over the keys so far.
       */
      const run = async (c: number): Promise<void> => {
        const r = prng.fork();
        let round = -1;
        for (let n = 0; n < w.opsPerClient; n++) {
          const at = Math.min(rounds.length - 1, Math.floor((n * rounds.length) / w.opsPerClient));
          if (at !== round) {
            round = at;
            if (round > 0 && !(await restart(c))) return;
            // The quiet corner, first thing: the first client writes the retired key once and deletes it.
            if (round === 0 && c === 0 && !((await perform(c, { kind: 'put', key: retired, value: 'r' })) && (await perform(c, { kind: 'delete', key: retired })))) return;
            await barrier.arrive(round);
            const owner = round % w.clients;
            const victim: KvInput | undefined = round > 0 ? { kind: 'delete', key: rounds[round - 1]![owner]! } : undefined;
            if (victim !== undefined && c === owner && !(await perform(c, victim))) return;
            if (!(await perform(c, { kind: 'put', key: rounds[round]![c]!, value: `c${c}n${n}`.padEnd(r.int(4, 80), '.') }))) return;
            if (victim !== undefined && c !== owner && !(await perform(c, victim))) return;
            continue;
          }
          const pool = rounds.slice(0, round + 1).flat();
          const key = pool[r.int(0, pool.length - 1)]!;
          const leader = w.clients > 1 ? lastWrite[(c + w.clients - 1) % w.clients] : undefined;
          if (dropShape && leader !== undefined && r.int(0, 1) === 0) {
            // The drop shape: half the operations read the key the client before this one last wrote, then PUT it.
            if (!(await perform(c, { kind: 'get', key: leader }))) return;
            if (!(await perform(c, { kind: 'put', key: leader, value: `c${c}n${n}`.padEnd(r.int(4, leader === hot ? 30 : 80), '.') }))) return;
            continue;
          }
          const roll = r.int(0, 99);
          let input: KvInput;
          // The hot key: small items (its 64-byte class), never deleted.
          if (roll < 20) input = { kind: 'put', key: hot, value: `c${c}n${n}`.padEnd(r.int(4, 30), '.') };
          else if (roll < 25) input = { kind: 'get', key: hot };
          else if (roll < 59) input = { kind: 'put', key, value: `c${c}n${n}`.padEnd(r.int(4, 80), '.') };
          else if (roll < 89) input = { kind: 'get', key };
          else input = { kind: 'delete', key };
          if (!(await perform(c, input))) return;
        }
      };
      await Promise.all(clients.map((_, c) => run(c).finally(() => barrier.leave())));
    },
    snapshot(): { time: number } {
      return { time: ++now };
    },
    clients: w.clients,
    /** Its clients reconnect the live node after a dropped connection (connectKvClient's reconnect): crash runs drop connections. */
    // Drops of a live server's connections: only for a system whose client reconnects (PRISM-KV's; Pilaf's fails the operation).
    drops: kvSystemReconnects(w.system),
    crashClient(c: number): void {
      if (!Number.isSafeInteger(c) || c < 0 || c >= w.clients) throw new RangeError(`client must be in [0, ${w.clients}), got ${String(c)}`);
      crashedClients.add(c);
      clients[c]?.qp.close();
    },
    /**
     * Crash runs: the node crashed (maybe more than once), restarted from an image, recovered, and
     * the clients went on. Once every live client returned its replaced buffers: the index and the
     * allocator (free ⊎ reachable = the arena), then a read of every key against the whole history
     * (operations cut by a crash may or may not have happened).
     */
    async checkHistory(world: World): Promise<AppProblem[]> {
      const out: AppProblem[] = [];
      for (const d of stoppedByDrop) out.push({ kind: 'drop', detail: `${d} (it did not reconnect)` });
      const server = world.nodes[0]!.server as KvAppServer;
      let flushed = 0;
      const toFlush = clients.filter((c, i) => !crashedClients.has(i) && c.qp.state === 'ready' && 'flushReturns' in c) as PrismKvClient[];
      for (const c of toFlush) c.flushReturns().then(() => flushed++, () => flushed++);
      const r = await world.run(() => flushed >= toFlush.length, 100_000);
      if (r.status !== 'done') out.push({ kind: 'recovery', detail: `returns at the end never answered (${r.status})` });
      for (const p of server.audit()) {
        // A crashed client never returns what it replaced: those buffers wait for the next recovery.
        if (p.kind === 'allocator' && /leaked$/.test(p.detail) && crashedClients.size > 0) continue;
        // Nor the (at most one) buffer of each PUT / DELETE whose answer a dropped connection lost (KvClientStats.uncertainInstalls).
        if (leakExplained(p.detail)) continue;
        out.push({ kind: p.kind, detail: `at the end: ${p.detail}` });
      }
      out.push(...(await readAndJudge(world, cutHistory(ops, Number.POSITIVE_INFINITY), now, [])));
      return out;
    },
    async checkLive(world: World): Promise<AppProblem[]> {
      const out: AppProblem[] = [];
      const server = world.nodes[0]!.server as KvAppServer;
      for (const p of server.audit()) if (p.kind === 'index') out.push({ kind: 'live-index', detail: p.detail });
      // Without a crash, once every client returned its replaced buffers: free ⊎ reachable = the arena.
      let flushed = 0;
      const toFlush = clients.filter((c) => c.qp.state === 'ready' && 'flushReturns' in c) as PrismKvClient[];
      for (const c of toFlush) c.flushReturns().then(() => flushed++, () => flushed++);
      await world.run(() => flushed >= toFlush.length, 100_000);
      for (const p of server.audit()) if (p.kind === 'allocator' && !leakExplained(p.detail)) out.push({ kind: 'live-allocator', detail: `after the workload and every return: ${p.detail}` });
      const whole = cutHistory(ops, Number.POSITIVE_INFINITY);
      const lin = checkLinearizable(kvModel, whole);
      if (lin.ok === false) out.push({ kind: 'linearizability', detail: `live history: ${lin.reason}: ${lin.operations.map((x) => kvModel.describe!(x)).join('; ')}`, picture: () => linPicture(whole, lin.operations, []) } as PicturedProblem);
      else if (lin.ok === 'unknown') out.push({ kind: 'undecided', detail: 'live history: the linearizability search gave up' });
      return out;
    },
    async beforeRecover(world: World): Promise<AppProblem[]> {
      if (w.system !== 'prism') return [];
      // A client that reconnects before the free lists are rebuilt: its PUT must be refused (retry later), not told "full".
      const out: AppProblem[] = [];
      let settled = false;
      (async () => {
        const { qp, welcome } = world.connect(0, new Uint8Array(0));
        const early = await connectKvClient(qp, welcome);
        try {
          await early.put('probe', te.encode('p'));
          out.push({ kind: 'spurious-full', detail: 'a PUT succeeded before recovery rebuilt the free lists' });
        } catch (e) {
          const code = (e as { code?: string }).code;
          if (code === KvErrorCodes.FULL) out.push({ kind: 'spurious-full', detail: 'ALLOCATE ran before the free lists were rebuilt: the PUT failed as "full"' });
          else if (code !== KvErrorCodes.RECOVERING && code !== KvErrorCodes.INDEX_FULL && code !== KvErrorCodes.CORRUPT) out.push({ kind: 'recovery', detail: `early PUT: ${String(e)}` });
        }
      })().then(
        () => void (settled = true),
        (e: unknown) => {
          settled = true;
          out.push({ kind: 'recovery', detail: `early client: ${String(e)}` });
        },
      );
      const r = await world.run(() => settled, 100_000);
      if (r.status !== 'done') out.push({ kind: 'recovery', detail: `early PUT never answered (${r.status})` });
      return out;
    },
    async checkRecovered(world: World, snap: { time: number }): Promise<AppProblem[]> {
      const out: AppProblem[] = [];
      const server = world.nodes[0]!.server as KvAppServer;
      // Return batches sent before the crash arrive now (a slow network, or a client resending): the old epoch is refused.
      if (server.kv instanceof PrismKvServer) {
        const last = new Map<number, Uint8Array>();
        for (const r of returns) if (r.time < snap.time) last.set(r.client, r.payload);
        let pending = last.size;
        for (const payload of last.values()) {
          const { qp } = world.connect(0, new Uint8Array(0));
          const reply = new Promise<void>((resolve) => qp.onNotify(() => resolve()));
          void qp.postChain([Wr.send(payload, RETURN_IMM)]).then(() => reply).then(() => pending--, () => pending--);
        }
        const r = await world.run(() => pending === 0, 100_000);
        if (r.status !== 'done') out.push({ kind: 'recovery', detail: `stale return batches never answered (${r.status})` });
        for (const [k, n] of Object.entries(server.kv.stats.returnsRefused)) app.staleReturnsRefused[k] = (app.staleReturnsRefused[k] ?? 0) + n;
        for (const p of server.audit()) out.push(p);
      }
      out.push(...(await readAndJudge(world, cutHistory(ops, snap.time), snap.time, [{ time: snap.time, label: 'crash' }])));
      return out;
    },
    ...(w.damageTombstone && w.system === 'prism'
      ? {
          damageImage(image: Uint8Array): void {
            damageTombstone(computeKvGeometry(appOptions.base, validateLayoutOptions(appOptions.layout)), image.subarray(image.length - REGION_BYTES));
          },
        }
      : {}),
    replayArgs(): string {
      return `--app kv${w.system !== 'prism' ? ` --system ${w.system}` : ''} --clients ${w.clients}${w.mutant !== undefined ? ` --mutant ${w.mutant}` : ''}${w.damageTombstone && w.system === 'prism' ? ' --damage-tombstone' : ''}`;
    },
  };
  /** Whether an allocator finding is the buffers PUTs whose answer a drop lost may leave unlinked (at most one each, KvClientStats.uncertainInstalls). */
  function leakExplained(detail: string): boolean {
    const m = /^(\d+) buffers leaked$/.exec(detail);
    const uncertain = clients.reduce((a, c) => a + ('uncertainInstalls' in c.stats ? c.stats.uncertainInstalls : 0), retiredUncertain);
    return m !== null && Number(m[1]) <= uncertain;
  }
  /** Reads every key with a fresh reader (appended to `history` after `t0`), then: lost writes and durable linearizability. */
  async function readAndJudge(world: World, history: Array<Operation<KvInput, KvOutput>>, t0: number, crash: Picture['crashes']): Promise<AppProblem[]> {
    const out: AppProblem[] = [];
    const finals = new Map<string, string | null>();
    let t = t0 + 1;
    const r = await world.settle(
      (async () => {
        const { qp, welcome } = world.connect(0, new Uint8Array(0));
        const reader = await connectKvClient(qp, welcome);
        for (const key of keys) {
          try {
            const v = await reader.get(key);
            const got = v === undefined ? null : td.decode(v);
            finals.set(key, got);
            history.push({ client: -1, input: { kind: 'get', key }, output: got, call: t++, ret: t++ });
          } catch (e) {
            out.push({ kind: 'read-error', detail: `get(${key}) after recovery: ${String(e)}` });
          }
        }
      })(),
      100_000,
    );
    if (r.failed) out.push({ kind: 'read-error', detail: `reader: ${String(r.error)}` });
    if (r.status !== 'done') out.push({ kind: 'read-error', detail: `reads after recovery never answered (${r.status})` });
    for (const d of lostWrites(history, finals)) out.push({ kind: 'lost', detail: d, picture: () => lostPicture(history, d, crash) } as PicturedProblem);
    const lin = checkLinearizable(kvModel, history);
    if (lin.ok === false) out.push({ kind: 'linearizability', detail: `${lin.reason}: ${lin.operations.map((x) => kvModel.describe!(x)).join('; ')}`, picture: () => linPicture(history, lin.operations, crash) } as PicturedProblem);
    else if (lin.ok === 'unknown') {
      app.undecided++;
      out.push({ kind: 'undecided', detail: 'the linearizability search gave up' });
    }
    return out;
  }
  return app;
}
