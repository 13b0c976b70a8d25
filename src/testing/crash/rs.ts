/**
 * PRISM-RS on the one explorer (DESIGN §5, §8): N replicas, concurrent clients writing and reading
 * a few blocks (values of two size classes, so buffers run short and are returned), one QP per
 * client per replica. A block is a key of the KV model: write(b, v) = put(bN, v), read = get, a
 * never-written block reads as absent — so the KV checkers judge it:
 * - durable linearizability per block (src/check, WGL): the history as of the crash, where an
 *   operation cut by it (or failed for want of a majority) may or may not have happened, plus a
 *   read of every block by a fresh client after recovery;
 * - acknowledged writes survive (src/check/lost.ts);
 * - replicas converge: after that read of every block (its write-backs settled) every replica
 *   holds the same tag for each block;
 * - allocator: stale return batches (sent before the crash) are refused, and every replica's audit
 *   holds (no garbage slot, no leaked or doubly used buffer: free ⊎ reachable = the arena);
 * - ALLOCATE is refused on a replica until its recovery rebuilt the free lists.
 * An image tuple is a crash of every replica at one instant (PM survives); crash runs (multi.ts)
 * crash subsets of replicas — 1..f, all — and clients mid-operation while the rest go on.
 */
import { intIn, oneOf, optional, PmrpcError, resolveOptions, type OptionChecks, type PmemRegion, type Prng } from '../../../pmem/index.js';
import { NicErrorCodes, Wr, type QueuePair } from '../../../flush/index.js';
import { checkLinearizable, cutHistory, kvModel, lostWrites, type KvInput, type KvOutput, type Operation } from '../../check/index.js';
import type { AppHost, AppProblem } from '../../apps/index.js';
import { rsApp, RsClient, RsErrorCodes, rsFaultsFor, RS_MUTANTS, RS_RETURN_IMM, compareTags, parseRsWelcome, type RsServer, type RsClientOptions } from '../../apps/rs/index.js';
import type { ExplorerApp } from './explorer.js';
import { linPicture, lostPicture } from './kv.js';
import type { PicturedProblem } from './picture.js';
import type { World } from './world.js';

export interface RsWorkloadOptions {
  replicas: number;
  clients: number;
  opsPerClient: number;
  blocks: number;
  mutant: string | undefined;
}

export const RS_WORKLOAD_DEFAULTS: Readonly<RsWorkloadOptions> = Object.freeze({ replicas: 3, clients: 3, opsPerClient: 24, blocks: 2, mutant: undefined });

/** The replicas' layout in the crash workload: small, so buffers run short and returns matter. */
export const RS_CRASH_LAYOUT = Object.freeze({ blocks: 2, classes: [{ sizeBytes: 64, count: 24 }, { sizeBytes: 128, count: 12 }], mailboxBuffers: 48 });

/** Logical milliseconds a client waits for a majority before PMRPC_ERR_RS_NO_MAJORITY. */
export const RS_MAJORITY_WAIT_MS = 200;

const RS_WORKLOAD_CHECKS: OptionChecks<RsWorkloadOptions> = {
  replicas: intIn(1, 7),
  clients: intIn(1, 6),
  opsPerClient: intIn(1, 1000),
  blocks: intIn(1, 8),
  mutant: optional(oneOf(RS_MUTANTS.map((m) => m.name))),
};

export function resolveRsWorkload(options: Partial<RsWorkloadOptions>): RsWorkloadOptions {
  return resolveOptions(RS_WORKLOAD_DEFAULTS, options, RS_WORKLOAD_CHECKS);
}

export interface RsOp extends Operation<KvInput, KvOutput> {
  error?: string;
}

const blockKey = (b: number): string => `b${b}`;
const te = new TextEncoder();
const td = new TextDecoder();

/** The history as of time `t`: completed operations keep their output; the rest may or may not have happened. */
export function cutRsHistory(ops: readonly RsOp[], t: number): Array<Operation<KvInput, KvOutput>> {
  return cutHistory(ops, t);
}

export type RsExplorerApp = ExplorerApp<{ time: number }> & { history(): RsOp[]; undecided: number };

/** A fresh rs explorer app (it holds the workload's history; workload() starts it afresh). */
export function rsExplorerApp(options: Partial<RsWorkloadOptions> = {}): RsExplorerApp {
  const w = resolveRsWorkload(options);
  const faults = rsFaultsFor(w.mutant);
  const mutantExplore = RS_MUTANTS.find((m) => m.name === w.mutant)?.explore;
  const appOptions = rsApp.resolveOptions({ layout: { ...RS_CRASH_LAYOUT, blocks: w.blocks }, faults });
  const regionBytes = Math.ceil(rsApp.minRegionBytes(appOptions) / 4096) * 4096;
  let now = 0;
  let ops: RsOp[] = [];
  let clients: RsClient[] = [];
  let crashed = new Set<number>();
  let returns: Array<{ time: number; client: number; replica: number; payload: Uint8Array }> = [];
  /** One tag, one value (ABD): every ⟨block, tag⟩ a replica held during the run, with the value and where it was first seen. */
  let tagValues = new Map<string, { value: string; where: string }>();
  /** The first tag seen naming two values (a 'diverged' problem of the whole run). */
  let tagReused: string | undefined;

  const clientOptions = (world: World, c: number, extra: Partial<RsClientOptions> = {}): Partial<RsClientOptions> => ({
    writerId: c + 1,
    clock: world.clock,
    majorityWaitMs: RS_MAJORITY_WAIT_MS,
    returnBatch: 2,
    faults,
    reconnect: (i) => {
      if (crashed.has(c) || world.nodes[i]!.crashed) return undefined;
      return world.connect(i, new Uint8Array(0), c);
    },
    ...extra,
  });
  const connectAll = (world: World, c: number): Array<{ qp: QueuePair; welcome: Uint8Array } | undefined> =>
    world.nodes.map((node, i) => {
      if (node.crashed) return undefined;
      try {
        return world.connect(i, new Uint8Array(0), c);
      } catch {
        return undefined;
      }
    });

  /** Runs `fn` on the world's scheduler to its end (bounded); problems if it never finishes or throws. */
  const drive = async (world: World, what: string, fn: () => Promise<void>, out: AppProblem[]): Promise<void> => {
    let done = false;
    fn().then(
      () => void (done = true),
      (e: unknown) => {
        done = true;
        out.push({ kind: 'read-error', detail: `${what}: ${String(e)}` });
      },
    );
    const r = await world.run(() => done, 200_000);
    if (r.status !== 'done') out.push({ kind: 'read-error', detail: `${what} never finished (${r.status})` });
  };

  const replicaState = (world: World, b: number): string =>
    world.nodes
      .map((node) => {
        if (node.crashed) return `replica ${node.index}: down`;
        const v = (node.server as RsServer).value(b);
        return `replica ${node.index}: ${typeof v === 'object' ? `⟨${v.tag.ts}, ${v.tag.writer}⟩ ${td.decode(v.value)}` : String(v)}`;
      })
      .join(', ');

  /**
   * Watches the invariant that makes a tag an identity: a tag names one value. A write's tag is new
   * (above every tag its query saw and above its writer's own last one), a write-back copies an item
   * as it is, so no two replicas — nor one replica at two times — may hold one tag with two values.
   * Sampled after every operation of the workload (crashed replicas skipped): a writer that reuses a
   * tag of its own indeterminate write (mutant reuseOwnTag) is seen the moment its second install
   * lands, without needing reads that happen to flip between the two values.
   */
  const watchTags = (world: World, after: string): void => {
    if (tagReused !== undefined) return;
    for (const node of world.nodes) {
      if (node.crashed || node.server === undefined) continue;
      for (let b = 0; b < w.blocks; b++) {
        let v;
        try {
          v = (node.server as RsServer).value(b);
        } catch {
          continue;
        }
        if (typeof v !== 'object') continue;
        const key = `${b}/${v.tag.ts}/${v.tag.writer}`;
        const value = td.decode(v.value);
        const where = `replica ${node.index} after ${after}`;
        const seen = tagValues.get(key);
        if (seen === undefined) tagValues.set(key, { value, where });
        else if (seen.value !== value) {
          tagReused = `block ${b}: tag ⟨${v.tag.ts}, ${v.tag.writer}⟩ names two values: ${seen.value} (${seen.where}) and ${value} (${where})`;
          return;
        }
      }
    }
  };
  const tagProblems = (): AppProblem[] => (tagReused !== undefined ? [{ kind: 'diverged', detail: `one tag, two values: ${tagReused}` }] : []);

  /** Install chains on replica i whose answer a dropped connection lost, over every client of the run: [lost, receipts answered, receipts still held]. */
  const uncertainInstalls = (i: number): [number, number, number] =>
    clients.reduce<[number, number, number]>((a, c) => {
      const s = c.stats;
      return [a[0] + (s.uncertainInstalls[i] ?? 0), a[1] + (s.uncertainResolved[i] ?? 0), a[2] + (s.receiptsHeld[i] ?? 0)];
    }, [0, 0, 0]);

  /** Reads every block with a fresh client, then judges the history (lost, linearizability, convergence, audits). */
  const judge = async (world: World, history: Array<Operation<KvInput, KvOutput>>, t0: number, label: string, crash: Array<{ time: number; label: string }>, leaksExpected = false): Promise<AppProblem[]> => {
    const out: AppProblem[] = [];
    const finals = new Map<string, string | null>();
    let t = t0;
    let reader: RsClient | undefined;
    await drive(
      world,
      'reads of every block at the end',
      async () => {
        reader = new RsClient(connectAll(world, -1), clientOptions(world, -1, { writerId: 99, faults: {} }));
        for (let b = 0; b < w.blocks; b++) {
          const call = t++;
          try {
            const v = await reader.read(b);
            const got = v === null ? null : td.decode(v);
            finals.set(blockKey(b), got);
            history.push({ client: -1, input: { kind: 'get', key: blockKey(b) }, output: got, call, ret: t++ });
          } catch (e) {
            if (e instanceof PmrpcError && e.code === RsErrorCodes.NO_MAJORITY) out.push({ kind: 'unavailable', detail: `${label}read(b${b}) at the end: no majority of replicas answered (${replicaState(world, b)})` });
            else throw e;
          }
        }
        await reader.close();
      },
      out,
    );
    // Replicas converge: after the reads (write-backs settled), every up replica holds the same tag.
    for (let b = 0; b < w.blocks; b++) {
      const tags = world.nodes.filter((n) => !n.crashed).map((n) => (n.server as RsServer).slot(b).tag);
      if (tags.some((x) => compareTags(x, tags[0]!) !== 0)) out.push({ kind: 'diverged', detail: `${label}block ${b} after a read: ${replicaState(world, b)}` });
    }
    for (const node of world.nodes) {
      if (node.crashed) continue;
      for (const p of node.server!.audit()) {
        // A crashed client never returns the buffers it held: leaked until the replica's next recovery reclaims them.
        if (leaksExpected && p.kind === 'allocator' && / leaked:/.test(p.detail)) continue;
        // An install whose answer a dropped connection lost (RsClientStats.uncertainInstalls) leaves one
        // buffer unlinked until its client, reconnected, hands the chain's receipt back and the replica
        // resolves it: a leak is accepted only for a receipt a client still holds (not answered yet).
        const [lost, resolved, held] = uncertainInstalls(node.index);
        const leaked = p.kind === 'allocator' ? /^(\d+) buffers leaked:/.exec(p.detail) : null;
        if (leaked !== null && Number(leaked[1]) <= held) continue;
        const why = leaked !== null && lost > 0 ? ` (${lost} uncertain installs on it, ${resolved} receipts answered, ${held} held: at most ${held} may leak)` : '';
        out.push({ kind: p.kind, detail: `${label}replica ${node.index}: ${p.detail}${why}` });
      }
    }
    for (const d of lostWrites(history, finals)) out.push({ kind: 'lost', detail: `${label}${d} (${replicaState(world, Number(/get\(b(\d+)\)/.exec(d)?.[1] ?? 0))})`, picture: () => lostPicture(history, d, crash) } as PicturedProblem);
    const lin = checkLinearizable(kvModel, history);
    if (lin.ok === false) out.push({ kind: 'linearizability', detail: `${label}${lin.reason}: ${lin.operations.map((x) => kvModel.describe!(x)).join('; ')}`, picture: () => linPicture(history, lin.operations, crash) } as PicturedProblem);
    else if (lin.ok === 'unknown') {
      app.undecided++;
      out.push({ kind: 'undecided', detail: `${label}the linearizability search gave up` });
    }
    return out;
  };

  const app: RsExplorerApp = {
    name: 'rs',
    ...(mutantExplore !== undefined ? { exploreDefaults: mutantExplore } : {}),
    nodes: w.replicas,
    clients: w.clients,
    regionBytes,
    undecided: 0,
    history: () => ops,
    format(region: PmemRegion): void {
      rsApp.format(region, appOptions);
    },
    open(host: AppHost) {
      return rsApp.open(host, appOptions);
    },
    async workload(world: World, prng: Prng): Promise<void> {
      now = 0;
      ops = [];
      crashed = new Set();
      returns = [];
      tagValues = new Map();
      tagReused = undefined;
      clients = Array.from({ length: w.clients }, (_, c) => new RsClient(connectAll(world, c), clientOptions(world, c, { onReturnBatch: (replica, payload) => returns.push({ time: ++now, client: c, replica, payload: payload.slice() }) })));
      const run = async (c: number): Promise<void> => {
        const r = prng.fork();
        const client = clients[c]!;
        for (let k = 0; k < w.opsPerClient; k++) {
          if (crashed.has(c)) return;
          const block = r.int(0, w.blocks - 1);
          const write = k === 0 || r.int(0, 1) === 0;
          const value = `c${c}n${k}`.padEnd(r.int(4, 80), '.');
          const op: RsOp = { client: c, input: write ? { kind: 'put', key: blockKey(block), value } : { kind: 'get', key: blockKey(block) }, output: write ? null : undefined, call: ++now, ret: undefined };
          ops.push(op);
          try {
            if (write) await client.write(block, te.encode(value));
            else {
              const v = await client.read(block);
              op.output = v === null ? null : td.decode(v);
            }
            if (crashed.has(c)) return; // a crashed client never saw it
            op.ret = ++now;
          } catch (e) {
            if (crashed.has(c)) return;
            op.error = e instanceof Error ? e.message : String(e);
            if (!(e instanceof PmrpcError && (e.code === RsErrorCodes.NO_MAJORITY || e.code === RsErrorCodes.CLOSED))) throw e;
          } finally {
            watchTags(world, `client ${c}'s ${write ? 'write' : 'read'} of b${block} [${op.call}, ${op.ret ?? '?'}]`);
          }
        }
      };
      await Promise.all(Array.from({ length: w.clients }, (_, c) => run(c)));
    },
    /** Its clients reconnect a live replica after a dropped connection (RsClientOptions.reconnect): crash runs drop connections. */
    drops: true,
    /**
     * A quorum of replicas: crash runs of kind 0 crash a majority (two of three) over and over while
     * writes are in flight (a write then lands on the one replica left: indeterminate, and its
     * writer's next tag must not reuse it); runs of kind 3 drop connections all through the run (a
     * return batch or an install whose answer is outstanding, the replica up).
     */
    crashShapes: { majorities: true, dropStorms: true },
    crashClient(c: number): void {
      if (!Number.isSafeInteger(c) || c < 0 || c >= w.clients) throw new RangeError(`client must be in [0, ${w.clients}), got ${String(c)}`);
      crashed.add(c);
      clients[c]?.abort();
    },
    snapshot(): { time: number } {
      return { time: ++now };
    },
    async checkLive(world: World): Promise<AppProblem[]> {
      const out: AppProblem[] = [];
      // Every background install settled and every buffer returned: then free ⊎ reachable = the arena.
      await drive(world, 'settling the clients', async () => void (await Promise.all(clients.map((c) => c.settle()))), out);
      return [...out, ...tagProblems(), ...(await judge(world, cutRsHistory(ops, Number.POSITIVE_INFINITY), now + 1, 'live: ', []))];
    },
    async beforeRecover(world: World, node: number): Promise<AppProblem[]> {
      // ALLOCATE before the free lists are rebuilt must be refused (not served from lists of the crashed incarnation).
      const out: AppProblem[] = [];
      await drive(
        world,
        `early ALLOCATE on replica ${node}`,
        async () => {
          const { qp, welcome } = world.connect(node, new Uint8Array(0));
          const { rkey } = parseRsWelcome(welcome);
          const [c] = await qp.postChain([Wr.allocate(rkey, 64, new Uint8Array(8))]);
          if (c!.status === 'ok') out.push({ kind: 'early-allocate', detail: `replica ${node}: ALLOCATE succeeded before recovery rebuilt the free lists` });
          else if (c!.code !== NicErrorCodes.ALLOC_REFUSED) out.push({ kind: 'early-allocate', detail: `replica ${node}: ALLOCATE before recovery failed as ${String(c!.code)}, not refused` });
          qp.close();
        },
        out,
      );
      return out;
    },
    async checkRecovered(world: World, snap: { time: number }): Promise<AppProblem[]> {
      const out: AppProblem[] = [];
      // Return batches sent before the crash arrive now (a slow network): the old epoch is refused.
      const last = new Map<string, { replica: number; payload: Uint8Array }>();
      for (const r of returns) if (r.time < snap.time) last.set(`${r.client}/${r.replica}`, r);
      await drive(
        world,
        'stale return batches',
        async () => {
          for (const { replica, payload } of last.values()) {
            const { qp } = world.connect(replica, new Uint8Array(0));
            const reply = new Promise<void>((resolve) => qp.onNotify(() => resolve()));
            await qp.postChain([Wr.send(payload, RS_RETURN_IMM)]);
            await reply;
            qp.close();
          }
        },
        out,
      );
      const crash = [{ time: snap.time, label: 'crash' }];
      return [...out, ...(await judge(world, cutRsHistory(ops, snap.time), snap.time + 1, '', crash))];
    },
    async checkHistory(world: World): Promise<AppProblem[]> {
      const out: AppProblem[] = [];
      await drive(world, 'settling the clients', async () => void (await Promise.all(clients.map((c, i) => (crashed.has(i) ? undefined : c.settle())))), out);
      return [...out, ...tagProblems(), ...(await judge(world, cutRsHistory(ops, Number.POSITIVE_INFINITY), now + 1, '', [], crashed.size > 0))];
    },
    replayArgs(): string {
      const d = RS_WORKLOAD_DEFAULTS;
      return [
        '--app rs',
        w.replicas !== d.replicas ? `--nodes ${w.replicas}` : '',
        w.clients !== d.clients ? `--clients ${w.clients}` : '',
        w.opsPerClient !== d.opsPerClient ? `--requests ${w.opsPerClient}` : '',
        w.blocks !== d.blocks ? `--registers ${w.blocks}` : '',
        w.mutant !== undefined ? `--mutant ${w.mutant}` : '',
      ]
        .filter((x) => x !== '')
        .join(' ');
    },
  };
  return app;
}
