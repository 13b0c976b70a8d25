/**
 * The test-only replicated register (src/apps/register) on the explorer: N nodes, concurrent
 * ABD clients writing and reading, one QP per client per node. Checks:
 * - durable linearizability (registerModel): the history with crash events removed, where an
 *   operation cut by a crash (its client crashed, or it failed for want of a majority) may or may
 *   not have happened, plus a read of every register by a fresh client at the end;
 * - acknowledged write not lost (Jepsen set-full style, per register);
 * - the nodes' audits (torn or inconsistent cells).
 * Works in both explorer modes: image tuples of every node at a crash point (checkRecovered), and
 * crash runs where nodes crash and restart while the others go on (checkHistory, crashClient).
 * A client that sees fewer than a majority of nodes up waits on the World's logical clock
 * (bounded) and reconnects to the nodes that came back.
 */
import { PmrpcError, type PmemRegion, type Prng, resolveOptions } from '../../../pmem/index.js';
import type { QueuePair } from '../../../flush/index.js';
import type { AppHost, AppProblem, AppServer } from '../../apps/index.js';
import { checkLinearizable, cutHistory, type Model, type Operation } from '../../check/index.js';
import { compareTags, findRegisterMutant, registerApp, RegisterClient, RegisterErrorCodes, REGISTER_MUTANTS, type Cell, type RegisterAppServer, type RegisterFaults } from '../../apps/register/index.js';
import type { ExplorerApp } from './explorer.js';
import type { World } from './world.js';

/** The sequential specification of the register, for checkLinearizable. */
export type RegisterInput = { kind: 'write'; register: number; value: bigint } | { kind: 'read'; register: number };
/** read: the value; write: null. */
export type RegisterOutput = bigint | null;

/** Registers start at 0; partitioned by register. */
export const registerModel: Model<bigint, RegisterInput, RegisterOutput> = {
  init: () => 0n,
  step(state, input, output) {
    if (input.kind === 'write') return input.value;
    if (output === undefined) return state;
    return output === state ? state : undefined;
  },
  key: (s) => s.toString(),
  partition: (input) => String(input.register),
  describe: (op: Operation<RegisterInput, RegisterOutput>) =>
    `client ${op.client} ${op.input.kind === 'write' ? `write(r${op.input.register}, ${op.input.value})` : `read(r${op.input.register}) -> ${op.ret === undefined ? '?' : String(op.output)}`} [${op.call}, ${op.ret ?? '∞'}]`,
};

export interface RegisterWorkloadOptions {
  nodes: number;
  clients: number;
  opsPerClient: number;
  registers: number;
  mutant: string | undefined;
  /** 'mixed': each client writes first, then writes or reads at random; 'writer-reader': client 0 only writes, the others only read (tiny exhaustive workloads). */
  pattern: 'mixed' | 'writer-reader';
}

export const REGISTER_WORKLOAD_DEFAULTS: Readonly<RegisterWorkloadOptions> = Object.freeze({ nodes: 3, clients: 3, opsPerClient: 8, registers: 1, mutant: undefined, pattern: 'mixed' });

/** Waits of one logical millisecond a client makes for a majority of nodes to be up, at most. */
export const REGISTER_WAITS_MAX = 200;

export function resolveRegisterWorkload(options: Partial<RegisterWorkloadOptions>): RegisterWorkloadOptions {
  const o = resolveOptions<RegisterWorkloadOptions>(REGISTER_WORKLOAD_DEFAULTS, options, {});
  const int = (name: keyof RegisterWorkloadOptions, lo: number, hi: number): void => {
    const v = o[name];
    if (!Number.isSafeInteger(v) || (v as number) < lo || (v as number) > hi) throw new RangeError(`${name} must be an integer in [${lo}, ${hi}], got ${String(v)}`);
  };
  int('nodes', 1, 7);
  int('clients', 1, 6);
  int('opsPerClient', 1, 1000);
  int('registers', 1, 8);
  if (o.pattern !== 'mixed' && o.pattern !== 'writer-reader') throw new TypeError(`pattern must be 'mixed' or 'writer-reader', got ${String(o.pattern)}`);
  if (o.mutant !== undefined && findRegisterMutant(o.mutant) === undefined) throw new TypeError(`mutant must be one of ${REGISTER_MUTANTS.map((m) => m.name).join(', ')}, got ${String(o.mutant)}`);
  return o;
}

export interface RegisterOp extends Operation<RegisterInput, RegisterOutput> {
  error?: string;
}


/**
 * Acknowledged then absent: the value read at the end (client -1) of each register must come from
 * a write (or the initial 0) that no acknowledged write of that register followed in real time.
 */
export function lostRegisterWrites(history: ReadonlyArray<Operation<RegisterInput, RegisterOutput>>, finals: ReadonlyMap<number, bigint>): string[] {
  const out: string[] = [];
  for (const [r, got] of finals) {
    const writes = history.filter((h) => h.input.register === r && h.input.kind === 'write' && h.client !== -1);
    const acked = writes.filter((h) => h.ret !== undefined);
    const producers: Array<{ ret: number | undefined }> = writes.filter((h) => h.input.kind === 'write' && h.input.value === got);
    if (got === 0n) producers.push({ ret: -1 });
    if (producers.length === 0) {
      out.push(`read(r${r}) at the end returned ${got}, which no write wrote`);
      continue;
    }
    const superseded = (p: { ret: number | undefined }): boolean => p.ret !== undefined && acked.some((a) => a !== p && p.ret! < a.call);
    if (producers.every(superseded)) {
      const last = acked.reduce((a, b) => (b.ret! > a.ret! ? b : a));
      out.push(`acknowledged write(r${r}, ${(last.input as { value: bigint }).value}) [${last.call}, ${last.ret}] lost: read(r${r}) at the end returned ${got}`);
    }
  }
  return out;
}

export type RegisterExplorerApp = ExplorerApp<{ time: number }> & { history(): RegisterOp[]; undecided: number };

/**
 * Another replicated system run as registers of u64 values on this same workload and checkers
 * (the lock-based baseline, src/testing/crash/rslock.ts): its nodes, its client, what counts as
 * "unavailable" (an operation that failed and may or may not have happened), and how its nodes
 * are described in a violation.
 */
export interface RegisterSystem {
  name: string;
  regionBytes: number;
  format(region: PmemRegion): void;
  open(host: AppHost): AppServer;
  /** A client of client index `c` (-1: the final reader) over one link per node (undefined = down). */
  client(world: World, links: Array<{ qp: QueuePair; welcome: Uint8Array } | undefined>, c: number): { write(r: number, v: bigint): Promise<void>; read(r: number): Promise<bigint> };
  unavailable(e: unknown): boolean;
  /** What a repair from the peers would find for register `r` when the final read is unavailable. */
  best(world: World, r: number): bigint;
  describe(world: World, n: number): string;
  /** Replay arguments after `--app NAME` (mutant, …). */
  replayArgs: string;
}

/** A fresh register explorer app (it holds the workload's history; workload() starts it afresh). */
export function registerExplorerApp(options: Partial<RegisterWorkloadOptions> = {}, system?: RegisterSystem): RegisterExplorerApp {
  const w = resolveRegisterWorkload(system === undefined ? options : { ...options, mutant: undefined });
  const faults = (w.mutant === undefined ? undefined : findRegisterMutant(w.mutant))?.faults ?? {};
  const appOptions = registerApp.resolveOptions({ registers: w.registers });
  let now = 0;
  let ops: RegisterOp[] = [];
  /** conns[c][n]: client c's connection to node n (closed when the node crashed; replaced on reconnect). */
  let conns: Array<Array<{ qp: QueuePair; welcome: Uint8Array } | undefined>> = [];
  let crashedClients = new Set<number>();

  const tryConnect = (world: World, c: number, n: number): void => {
    const cur = conns[c]![n];
    if (cur !== undefined && cur.qp.link.closed !== true) return;
    if (world.nodes[n]!.crashed) return;
    try {
      conns[c]![n] = world.connect(n, new Uint8Array(0), c);
    } catch {
      // the node is not accepting (yet): it counts as down for this operation
    }
  };
  const clientOf = (world: World, c: number): { write(r: number, v: bigint): Promise<void>; read(r: number): Promise<bigint> } =>
    system !== undefined ? system.client(world, conns[c]!, c) : RegisterClient.connect(conns[c]!.map((l) => l!), c + 1, faults);
  const unavailable = (e: unknown): boolean => (system !== undefined ? system.unavailable(e) : e instanceof PmrpcError && e.code === RegisterErrorCodes.NO_MAJORITY);

  /** A fresh reader (client -1) reads every register; appends to `history`; returns the values. */
  const readAll = async (world: World, history: Array<Operation<RegisterInput, RegisterOutput>>, t0: number, out: AppProblem[]): Promise<Map<number, bigint>> => {
    const finals = new Map<number, bigint>();
    let t = t0;
    const res = await world.settle(
      (async () => {
        const links = world.nodes.map((_, n) => world.connect(n, new Uint8Array(0), -1));
        const reader = system !== undefined ? system.client(world, links, -1) : RegisterClient.connect(links, w.clients + 1, {});
        for (let r = 0; r < w.registers; r++) {
          try {
            const call = t++;
            const v = await reader.read(r);
            finals.set(r, v);
            history.push({ client: -1, input: { kind: 'read', register: r }, output: v, call, ret: t++ });
          } catch (e) {
            if (!unavailable(e)) {
              out.push({ kind: 'read-error', detail: `read(r${r}) at the end: ${String(e)}` });
              continue;
            }
            // Too many nodes lost their copy (a broken install; this test app does not repair from peers):
            // unavailable, not unsafe. What a repair from the peers would find: the highest valid cell.
            if (system !== undefined) {
              finals.set(r, system.best(world, r));
              continue;
            }
            let best: Cell | undefined;
            for (const node of world.nodes) {
              const c = node.crashed ? undefined : (node.server as RegisterAppServer).cell(r);
              if (c !== undefined && (best === undefined || compareTags(c, best) > 0)) best = c;
            }
            finals.set(r, best?.value ?? 0n);
          }
        }
      })(),
      100_000,
    );
    if (res.failed) out.push({ kind: 'read-error', detail: `reader: ${String(res.error)}` });
    if (res.status !== 'done') out.push({ kind: 'read-error', detail: `reads at the end never answered (${res.status})` });
    return finals;
  };

  const judge = async (world: World, history: Array<Operation<RegisterInput, RegisterOutput>>, t0: number, label: string): Promise<AppProblem[]> => {
    const out: AppProblem[] = [];
    for (const node of world.nodes) if (!node.crashed) for (const p of node.server!.audit()) out.push({ kind: p.kind, detail: `${label}node ${node.index}: ${p.detail}` });
    const finals = await readAll(world, history, t0, out);
    const cells = (): string =>
      world.nodes
        .map((node) => {
          if (node.crashed) return `node ${node.index}: down`;
          if (system !== undefined) return system.describe(world, node.index);
          const c = (node.server as RegisterAppServer).cell(0);
          return `node ${node.index}: ${c === undefined ? 'lost copy' : `⟨${c.ts}, ${c.writer}⟩ ${c.value}`}`;
        })
        .join(', ');
    for (const d of lostRegisterWrites(history, finals)) out.push({ kind: 'lost', detail: `${label}${d} (register 0 now: ${cells()})` });
    const lin = checkLinearizable(registerModel, history);
    if (lin.ok === false) out.push({ kind: 'linearizability', detail: `${label}${lin.reason}: ${lin.operations.map((x) => registerModel.describe!(x)).join('; ')}` });
    else if (lin.ok === 'unknown') {
      app.undecided++;
      out.push({ kind: 'undecided', detail: `${label}the linearizability search gave up` });
    }
    return out;
  };

  const app: RegisterExplorerApp = {
    name: system?.name ?? 'register',
    nodes: w.nodes,
    clients: w.clients,
    regionBytes: system?.regionBytes ?? 4096,
    undecided: 0,
    history: () => ops,
    format(region: PmemRegion): void {
      if (system !== undefined) system.format(region);
      else registerApp.format(region, appOptions);
    },
    open(host: AppHost) {
      return system !== undefined ? system.open(host) : registerApp.open(host, appOptions);
    },
    async workload(world: World, prng: Prng): Promise<void> {
      now = 0;
      ops = [];
      crashedClients = new Set();
      conns = Array.from({ length: w.clients }, (_, c) => world.nodes.map((_, n) => world.connect(n, new Uint8Array(0), c)));
      const majority = Math.floor(w.nodes / 2) + 1;
      const run = async (c: number): Promise<void> => {
        const r = prng.fork();
        for (let k = 0; k < w.opsPerClient; k++) {
          if (crashedClients.has(c)) return;
          // Bounded wait (logical clock) for a majority of nodes to be up; reconnect to those that came back.
          for (let waits = 0; ; waits++) {
            for (let n = 0; n < w.nodes; n++) tryConnect(world, c, n);
            const up = conns[c]!.filter((l) => l !== undefined && l.qp.link.closed !== true).length;
            if (up >= majority || waits >= REGISTER_WAITS_MAX) break;
            await new Promise<void>((resolve) => world.clock.setTimer(1, resolve));
            if (crashedClients.has(c)) return;
          }
          const register = r.int(0, w.registers - 1);
          const write = w.pattern === 'writer-reader' ? c === 0 : k === 0 || r.int(0, 1) === 0;
          const value = BigInt((c + 1) * 1000 + k + 1);
          const op: RegisterOp = { client: c, input: write ? { kind: 'write', register, value } : { kind: 'read', register }, output: write ? null : undefined, call: ++now, ret: undefined };
          ops.push(op);
          try {
            const client = clientOf(world, c);
            if (write) await client.write(register, value);
            else op.output = await client.read(register);
            if (crashedClients.has(c)) return; // a crashed client never saw it
            op.ret = ++now;
          } catch (e) {
            if (crashedClients.has(c)) return;
            op.error = e instanceof Error ? e.message : String(e);
            if (!unavailable(e)) throw e;
          }
        }
      };
      await Promise.all(Array.from({ length: w.clients }, (_, c) => run(c)));
    },
    crashClient(c: number): void {
      if (!Number.isSafeInteger(c) || c < 0 || c >= w.clients) throw new RangeError(`client must be in [0, ${w.clients}), got ${String(c)}`);
      crashedClients.add(c);
      for (const l of conns[c] ?? []) l?.qp.close();
    },
    snapshot(): { time: number } {
      return { time: ++now };
    },
    async checkLive(world: World): Promise<AppProblem[]> {
      return judge(world, cutHistory(ops, Number.POSITIVE_INFINITY), now + 1, 'live: ');
    },
    async checkRecovered(world: World, snap: { time: number }): Promise<AppProblem[]> {
      return judge(world, cutHistory(ops, snap.time), snap.time + 1, '');
    },
    async checkHistory(world: World): Promise<AppProblem[]> {
      return judge(world, cutHistory(ops, Number.POSITIVE_INFINITY), now + 1, '');
    },
    replayArgs(): string {
      const d = REGISTER_WORKLOAD_DEFAULTS;
      return [
        system !== undefined ? `--app ${system.name}${system.replayArgs}` : '--app register',
        w.nodes !== d.nodes ? `--nodes ${w.nodes}` : '',
        w.clients !== d.clients ? `--clients ${w.clients}` : '',
        w.opsPerClient !== d.opsPerClient ? `--requests ${w.opsPerClient}` : '',
        w.registers !== d.registers ? `--registers ${w.registers}` : '',
        w.mutant !== undefined ? `--mutant ${w.mutant}` : '',
        w.pattern !== d.pattern ? `--pattern ${w.pattern}` : '',
      ]
        .filter((x) => x !== '')
        .join(' ');
    },
  };
  return app;
}

/** The RegisterAppServer of node `n` of `world`. */
export function registerServerOf(world: World, n: number): RegisterAppServer {
  return world.nodes[n]!.server as RegisterAppServer;
}
