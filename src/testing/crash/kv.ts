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
import { resolveOptions } from '../../../pmem/index.js';
import { QueuePair, Wr } from '../../../flush/index.js';
import type { PmemRegion, Prng } from '../../../pmem/index.js';
import { checkLinearizable, describeKvInput, kvModel, lostWrites, type KvInput, type KvOutput, type Operation } from '../../check/index.js';
import type { AppHost, AppProblem } from '../../apps/index.js';
import { connectKvClient, kvApp, KvAppServer, type KvSystem } from '../../apps/kv/index.js';
import { faultsFor, KV_MUTANTS, type KvFaultName } from '../../apps/kv/index.js';
import { homeSlot, KvErrorCodes, type KvGeometry, type KvLayoutOptions } from '../../apps/kv/index.js';
import type { PrismKvClient } from '../../apps/kv/index.js';
import type { PilafClient } from '../../apps/kv/index.js';
import { PrismKvServer, RETURN_IMM } from '../../apps/kv/index.js';
import type { ExplorerApp } from './explorer.js';
import { kvLabel, kvWellFormed, shortestNonLinearizable, timelineOperations } from '../timeline/index.js';
import type { Picture, PicturedProblem } from './picture.js';
import type { World } from './world.js';

export interface KvWorkloadOptions {
  system: KvSystem;
  mutant: KvFaultName | undefined;
  clients: number;
  opsPerClient: number;
  keys: number;
}

export const KV_WORKLOAD_DEFAULTS: Readonly<KvWorkloadOptions> = Object.freeze({ system: 'prism', mutant: undefined, clients: 3, opsPerClient: 20, keys: 6 });

/** The KV area the crash workload uses: small, so keys collide and buffers run short. */
export const KV_CRASH_LAYOUT: Readonly<Partial<KvLayoutOptions>> = Object.freeze({
  slotCount: 12,
  probeSlots: 4,
  keyBytesMax: 16,
  classes: [
    { sizeBytes: 64, count: 12 },
    { sizeBytes: 128, count: 4 },
  ],
  mailboxBuffers: 14,
});

const REGION_BYTES = 32 * 1024;
const te = new TextEncoder();
const td = new TextDecoder();

export interface KvOp extends Operation<KvInput, KvOutput> {
  error?: string;
}

export function resolveKvWorkload(options: Partial<KvWorkloadOptions>): KvWorkloadOptions {
  const o = resolveOptions<KvWorkloadOptions>(KV_WORKLOAD_DEFAULTS, options, {});
  if (o.system !== 'prism' && o.system !== 'pilaf') throw new TypeError(`system must be 'prism' or 'pilaf', got ${String(o.system)}`);
  if (o.mutant !== undefined && !KV_MUTANTS.some((m) => m.name === o.mutant)) throw new TypeError(`mutant must be one of ${KV_MUTANTS.map((m) => m.name).join(', ')}, got ${String(o.mutant)}`);
  const int = (name: keyof KvWorkloadOptions, lo: number, hi: number): void => {
    const v = o[name];
    if (!Number.isSafeInteger(v) || (v as number) < lo || (v as number) > hi) throw new RangeError(`${name} must be an integer in [${lo}, ${hi}], got ${String(v)}`);
  };
  int('clients', 1, 6);
  int('opsPerClient', 1, 1000);
  int('keys', 1, 8);
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

/** The history as of a crash at `t`: completed operations keep their output; the rest are unknown. */
export function cutHistoryAt(ops: readonly KvOp[], t: number): Array<Operation<KvInput, KvOutput>> {
  return ops
    .filter((op) => op.call < t)
    .map((op) =>
      op.ret !== undefined && op.ret < t && op.error === undefined
        ? { client: op.client, input: op.input, output: op.output, call: op.call, ret: op.ret }
        : { client: op.client, input: op.input, output: undefined, call: op.call, ret: undefined },
    );
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

/** A fresh KV explorer app (it holds the workload's history: one per explore() call). */
export function kvExplorerApp(options: Partial<KvWorkloadOptions> = {}): ExplorerApp<{ time: number }> & { history(): KvOp[]; undecided: number } {
  const w = resolveKvWorkload(options);
  const faults = faultsFor(w.mutant);
  const appOptions = kvApp.resolveOptions({ system: w.system, layout: KV_CRASH_LAYOUT, faults });
  /** Logical time: calls, returns and crash points. */
  let now = 0;
  const ops: KvOp[] = [];
  const returns: Array<{ time: number; client: number; payload: Uint8Array }> = [];
  let keys: string[] = [];
  const clients: KvClient[] = [];
  const app = {
    name: 'kv',
    nodes: 1,
    regionBytes: REGION_BYTES,
    undecided: 0,
    history: () => ops,
    format(region: PmemRegion): void {
      kvApp.format(region, appOptions);
    },
    open(host: AppHost) {
      return kvApp.open(host, appOptions);
    },
    async workload(world: World, prng: Prng): Promise<void> {
      const server = world.nodes[0]!.server as KvAppServer;
      keys = clusteredKeys(server.kv.geometry, w.keys);
      for (let c = 0; c < w.clients; c++) {
        const { qp, welcome } = world.connect(0, new Uint8Array(0));
        clients.push(await connectKvClient(qp, welcome, { faults, returnBatch: 2, onReturnBatch: (payload) => returns.push({ time: ++now, client: c, payload: payload.slice() }) }));
      }
      const run = async (c: number): Promise<void> => {
        const client = clients[c]!;
        const r = prng.fork();
        for (let n = 0; n < w.opsPerClient; n++) {
          // Each client starts with a PUT of a new key of the same window as the others': they race for one free slot.
          const key = n === 0 ? keys[c % keys.length]! : keys[r.int(0, keys.length - 1)]!;
          const roll = n === 0 ? 0 : r.int(0, 99);
          let input: KvInput;
          if (roll < 45) input = { kind: 'put', key, value: `c${c}n${n}`.padEnd(r.int(4, 80), '.') };
          else if (roll < 85) input = { kind: 'get', key };
          else input = { kind: 'delete', key };
          const op: KvOp = { client: c, input, output: undefined, call: ++now, ret: undefined };
          ops.push(op);
          try {
            if (input.kind === 'put') await client.put(key, te.encode(input.value));
            else if (input.kind === 'delete') await client.delete(key);
            else {
              const v = await client.get(key);
              op.output = v === undefined ? null : td.decode(v);
            }
            if (input.kind !== 'get') op.output = null;
            op.ret = ++now;
          } catch (e) {
            op.error = e instanceof Error ? e.message : String(e);
            if (client.qp.state === 'error') return;
          }
        }
      };
      await Promise.all(clients.map((_, c) => run(c)));
    },
    snapshot(): { time: number } {
      return { time: ++now };
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
      for (const p of server.audit()) if (p.kind === 'allocator') out.push({ kind: 'live-allocator', detail: `after the workload and every return: ${p.detail}` });
      const whole = cutHistoryAt(ops, Number.POSITIVE_INFINITY);
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
        for (const p of server.audit()) out.push(p);
      }
      // Read every key after recovery.
      const history = cutHistoryAt(ops, snap.time);
      const finals = new Map<string, string | null>();
      let t = snap.time + 1;
      let done = false;
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
      })().then(
        () => void (done = true),
        (e: unknown) => {
          done = true;
          out.push({ kind: 'read-error', detail: `reader: ${String(e)}` });
        },
      );
      const r = await world.run(() => done, 100_000);
      if (r.status !== 'done') out.push({ kind: 'read-error', detail: `reads after recovery never answered (${r.status})` });
      const crash = [{ time: snap.time, label: 'crash' }];
      for (const d of lostWrites(history, finals)) out.push({ kind: 'lost', detail: d, picture: () => lostPicture(history, d, crash) } as PicturedProblem);
      const lin = checkLinearizable(kvModel, history);
      if (lin.ok === false) out.push({ kind: 'linearizability', detail: `${lin.reason}: ${lin.operations.map((x) => kvModel.describe!(x)).join('; ')}`, picture: () => linPicture(history, lin.operations, crash) } as PicturedProblem);
      else if (lin.ok === 'unknown') {
        app.undecided++;
        out.push({ kind: 'undecided', detail: 'the linearizability search gave up' });
      }
      return out;
    },
    replayArgs(): string {
      return `--app kv${w.system !== 'prism' ? ` --system ${w.system}` : ''} --clients ${w.clients}${w.mutant !== undefined ? ` --mutant ${w.mutant}` : ''}`;
    },
  };
  return app;
}
