// Real crashes (issue 7, DESIGN §8 "Real crashes"): a PRISM-KV server in a child process
// (test/apps/kv/fixtures/kv-server.mjs, compiled code) owns a region FILE and serves 127.0.0.1 over TcpNicServer;
// several PrismKvClients in this process run seeded put / get / delete over TcpLinks while the
// server is SIGKILLed (at a seeded moment, after a seeded count of acknowledged operations, or by
// itself at a seeded persistence event), restarted on the same file (recovery: free lists rebuilt,
// epoch bumped), and the clients reconnect. ≥ 3 kill / restart cycles, then a final restart.
//
// Checkers:
// - lost: after every restart, a read of every key; an acknowledged put / delete that the read
//   does not reflect (acknowledged then absent) is lost (lostWrites, Jepsen set-full style);
// - linearizability (checkLinearizable + kvModel, partitioned by key): each cycle on its own —
//   initial values = the reads after the previous restart, then the cycle's operations (those cut
//   by the kill: unknown outcome), then the reads after the next restart, so a cut operation can
//   take effect before the crash or never, not after the restart — and the whole history plus a
//   final read of every key;
// - allocator: auditAllocator() right after every recovery, and of the live state at the end once
//   every client returned its replaced buffers: no leaked, doubly free or free-and-reachable buffer;
//   the index has no slot pointing at garbage;
// - a return batch sent before a crash is refused as stale after it (epoch).
// Seeds are printed; PMRPC_SEED=<n> replays the seeded choices (the interleaving over real TCP is
// the OS's). Loopback only. A run is a plan (sigkillPlan) of the one real-crash loop of every app,
// runRealCrashApp (src/server/supervisor.ts): it starts the server on its Supervisor, runs the
// load, SIGKILLs it at each point the plan yields (an external kill: restarted when the next cycle
// starts; a self-kill the plan waited for: restarted at once with the next planned kill), calls
// the plan's afterKill, finish and teardown, stops the last incarnation with SIGTERM (no child
// survives), then the plan's checkers.
import t from 'tap';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { QueuePair, Wr, type NotifyMessage } from '../../flush/index.js';
import { createPrng, systemClock, type Prng } from '../../pmem/index.js';
import { runRealCrashApp, Supervisor, Wakeup, type KillPlan, type RealCrashEntry, type RealCrashPlan, type RealCrashRun, type RealCrashRunOptions } from '../../src/server/index.js';
import { TcpLink } from '../../src/transport/index.js';
import { checkLinearizable, kvModel, type KvInput, type KvOutput, type Operation } from '../../src/check/linearizability.js';
import {
  computeKvGeometry,
  homeSlot,
  PilafClient,
  PrismKvClient,
  RETURN_IMM,
  RETURN_STALE_IMM,
  validateLayoutOptions,
  type KvFaults,
  type KvLayoutOptions,
} from '../../src/apps/kv/index.js';
import { lostWrites } from '../../src/testing/crash/index.js';

const FIXTURE = fileURLToPath(new URL('../apps/kv/fixtures/kv-server.mjs', import.meta.url));
const COMPILED = fileURLToPath(new URL('../../dist/src/apps/kv/index.js', import.meta.url));
if (!existsSync(COMPILED)) throw new Error(`${COMPILED} is missing: run \`npx tsc -p tsconfig.json\` (npm test does) first`);

const BASE_SEED = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
if (!Number.isSafeInteger(BASE_SEED)) throw new Error(`PMRPC_SEED must be an integer, got ${process.env.PMRPC_SEED}`);

const REGION_BYTES = 1 << 16;
const LAYOUT: Partial<KvLayoutOptions> = {
  slotCount: 32,
  probeSlots: 4,
  keyBytesMax: 16,
  classes: [
    { sizeBytes: 64, count: 96 },
    { sizeBytes: 128, count: 48 },
  ],
  mailboxBuffers: 16,
};
const CLIENTS = 4;
const te = new TextEncoder();
const td = new TextDecoder();

type System = 'prism' | 'pilaf';
type KillMode = 'time' | 'ops' | 'events';
type Op = Operation<KvInput, KvOutput> & { error?: string; cycle: number };

interface KvLike {
  get(key: string): Promise<Uint8Array | undefined>;
  put(key: string, value: Uint8Array): Promise<void>;
  delete(key: string): Promise<void>;
  readonly qp: QueuePair;
}

interface ServerInfo {
  port: number;
  pid: number;
  address: { rkey: number; base: number };
  epoch?: string;
  formatted: boolean;
  recovery?: { slotsScanned: number; slotsRepaired: number; reachable: number; reclaimed: number; pointersRejected: unknown[] };
  audit?: { leaked: number; doubleFree: number; freeAndReachable: number; foreign: number };
  problems?: Array<{ slot: number; problem: string }>;
  items?: number;
  stats?: { returnsAccepted: number; returnsRefused: Record<string, number> };
}

/** The kv server of a run, on the Supervisor: one incarnation after another on the same PM file. */
class KvServers {
  readonly sup: Supervisor;
  readonly wakeup = new Wakeup(systemClock);
  #answers: string[] = [];

  /** `kills`: the self-kills planned (at the N-th persistence event), one per incarnation in order; none after them. */
  constructor(t: Tap.Test, cfg: { path: string; system: System }, kills: number[] = []) {
    const args = (plan: KillPlan | undefined): string[] => [FIXTURE, JSON.stringify({ ...cfg, regionBytes: REGION_BYTES, layout: LAYOUT, ...(plan?.events !== undefined ? { killAfterEvents: plan.events } : {}) })];
    this.sup = new Supervisor({ args, clock: systemClock, log: undefined, restartsMax: kills.length + 8, name: 'kv', wakeup: this.wakeup, onLine: (line) => this.#answers.push(line) }, cfg.path, kills.map((events) => ({ events })));
    t.teardown(() => this.sup.destroy());
  }

  /** The current incarnation, once listening: what its start line says. */
  async info(): Promise<ServerInfo> {
    await this.sup.up();
    return this.sup.incarnations.at(-1)!.startLine as unknown as ServerInfo;
  }

  /** The current incarnation has exited (waited for, at most `boundMs`). */
  exited(boundMs: number): Promise<boolean> {
    const c = this.sup.child!;
    return this.wakeup.until(() => c.exitCode !== null || c.signalCode !== null, boundMs);
  }

  /** Sends a stdin command; resolves with the next JSON line. */
  async ask(cmd: string): Promise<ServerInfo> {
    this.#answers.length = 0;
    this.sup.child!.stdin!.write(`${cmd}\n`);
    if (!(await this.wakeup.until(() => this.#answers.length > 0, 15_000))) throw new Error(`no answer to ${cmd} from the server in 15 s`);
    return JSON.parse(this.#answers.shift()!) as ServerInfo;
  }
}

/** `count` keys with collisions (overlapping probe windows) but never more than probeSlots keys competing for one window. */
function pickKeys(count: number): { keys: string[]; collisions: number } {
  const g = computeKvGeometry(0, validateLayoutOptions(LAYOUT));
  const homes: number[] = [];
  const keys: string[] = [];
  for (let i = 0; keys.length < count && i < 10_000; i++) {
    const k = `k${i}`;
    const h = homeSlot(g, te.encode(k));
    const near = homes.filter((x) => Math.abs(x - h) < g.probeSlots).length;
    if (near >= g.probeSlots - 1) continue;
    if (homes.some((x) => Math.abs(x - h) < g.probeSlots && homes.filter((y) => Math.abs(y - x) < g.probeSlots).length >= g.probeSlots - 1)) continue;
    homes.push(h);
    keys.push(k);
  }
  let collisions = 0;
  for (let i = 0; i < homes.length; i++) for (let j = i + 1; j < homes.length; j++) if (Math.abs(homes[i]! - homes[j]!) < g.probeSlots) collisions++;
  return { keys, collisions };
}

interface RunOptions {
  system: System;
  kill: KillMode;
  seed: number;
  cycles: number;
  /** Client fault switches (a mutant: the suite must catch it). */
  faults?: Partial<KvFaults>;
}

interface RunResult {
  seed: number;
  cycles: number;
  operations: number;
  acknowledged: number;
  cut: number;
  lost: string[];
  /** Failures other than the kill's (a refused or contended operation, an unexpected error). */
  unexpectedErrors: string[];
  /** Operations still pending 5 s after the server died. */
  hung: number;
  segmentViolations: string[];
  wholeHistory: ReturnType<typeof checkLinearizable<string | null, KvInput, KvOutput>>;
  epochs: string[];
  auditsAfterRecovery: Array<NonNullable<ServerInfo['audit']>>;
  problemsAfterRecovery: number;
  finalLiveAudit: ServerInfo | undefined;
  staleReturns: { sent: number; refusedAsStale: number };
  killedBySelf: number;
  seconds: number;
  /** Problems of the run itself (an exception of a plan part, the Supervisor's failures). */
  runErrors: string[];
  /** How the last incarnation ended, the Supervisor's failures, and how many incarnations ran. */
  lastStop: { end: string; failures: string[]; incarnations: number } | undefined;
}

const LINK_GONE = new Set(['PMRPC_ERR_LINK_CLOSED', 'PMRPC_ERR_SERVER_CLOSED']);

async function connect(system: System, port: number, address: ServerInfo['address'], name: string, faults: Partial<KvFaults> | undefined, onReturnBatch: (p: Uint8Array) => void): Promise<KvLike> {
  const { link } = await TcpLink.connect({ port, name });
  const qp = new QueuePair(link);
  return system === 'prism' ? PrismKvClient.connect(qp, address, { returnBatch: 2, faults, onReturnBatch }) : PilafClient.connect(qp, address);
}

/** A run's options: the loop's own (RealCrashRunOptions; mainScript is the fixture) and the test's. */
interface SigkillOptions extends RealCrashRunOptions, RunOptions {}

/** The test's part of a real-crash run: what the one loop (runRealCrashApp) calls, with the checkers. */
function sigkillEntry(t: Tap.Test): RealCrashEntry<SigkillOptions, RunResult> {
  return {
    dirPrefix: 'pmrpc-kv-sigkill-',
    resolveOptions: (o) => ({ dir: undefined, keep: false, clock: systemClock, log: undefined, ...o }) as SigkillOptions,
    plan: (o) => sigkillPlan(t, o),
  };
}

async function runSigkill(t: Tap.Test, o: RunOptions): Promise<RunResult> {
  return runRealCrashApp(sigkillEntry(t), { ...o, mainScript: FIXTURE });
}

/**
 * One kv server (the fixture) on its file; per cycle: clients connect (after a restart: a stale
 * return batch is replayed, every key read back), load until the kill (kills: a seeded moment, a
 * seeded count of acknowledged operations, or the server's own self-kill the plan waits for), the
 * operations in flight settle (afterKill), the next incarnation starts; then the final restart's
 * reads, operations and live audit (finish), the loop's orderly stop, and the checkers (check).
 */
function sigkillPlan(t: Tap.Test, o: SigkillOptions): RealCrashPlan<RunResult> {
  const t0 = performance.now();
  const prng: Prng = createPrng(o.seed);
  const { keys, collisions } = pickKeys(12);
  t.ok(collisions > 0, `the ${keys.length} keys share probe windows (${collisions} overlapping pairs)`);
  const ops: Op[] = [];
  const readsAfter: Array<Map<string, string | null>> = []; // reads after restart k (k = 1..cycles)
  const readOps: Op[][] = [];
  let finalReads = new Map<string, string | null>();
  const r: RunResult = {
    seed: o.seed, cycles: 0, operations: 0, acknowledged: 0, cut: 0, lost: [], unexpectedErrors: [], hung: 0, segmentViolations: [],
    wholeHistory: { ok: true, explored: 0, partitions: 0, keys: [] }, epochs: [], auditsAfterRecovery: [], problemsAfterRecovery: 0, finalLiveAudit: undefined,
    staleReturns: { sent: 0, refusedAsStale: 0 }, killedBySelf: 0, seconds: 0, runErrors: [], lastStop: undefined,
  };
  let lastReturnBatch: Uint8Array | undefined;
  const now = (): number => performance.now();
  const answers: string[] = [];
  // Self-kills: one per cycle, planned up front (the Supervisor restarts a self-killed server at once, with the next).
  const kills = o.kill === 'events' ? Array.from({ length: o.cycles }, () => prng.int(300, 3000)) : [];
  let sup!: Supervisor;
  // The current cycle's state.
  let cycle = 0;
  let clients: KvLike[] = [];
  let loops: Array<Promise<void>> = [];
  let pending = new Set<Op>();
  let dead = false;
  let acked = 0;
  let killAtOps: number | undefined;
  let killAtMs: number | undefined;
  let cycleChild: ChildProcess | undefined;
  /** The kill of this cycle came from the 20 s safety net, not from the plan. */
  let safetyKill = false;

  /** Sends a stdin command; resolves with the next JSON line. */
  const ask = async (run: RealCrashRun, cmd: string): Promise<ServerInfo> => {
    answers.length = 0;
    sup.child!.stdin!.write(`${cmd}\n`);
    if (!(await run.wakeup.until(() => answers.length > 0, 15_000))) throw new Error(`no answer to ${cmd} from the server in 15 s`);
    return JSON.parse(answers.shift()!) as ServerInfo;
  };

  /** The current incarnation, once listening: what its start line says. */
  const info = async (): Promise<ServerInfo> => {
    await sup.up();
    return sup.incarnations.at(-1)!.startLine as unknown as ServerInfo;
  };

  /** One client reads every key (client -1: the checkers' "after recovery" reads). */
  const readAll = async (c: KvLike, at: number): Promise<Map<string, string | null>> => {
    const finals = new Map<string, string | null>();
    const mine: Op[] = [];
    for (const key of keys) {
      const op: Op = { client: -1, input: { kind: 'get', key }, output: undefined, call: now(), ret: undefined, cycle: at };
      const v = await c.get(key);
      op.output = v === undefined ? null : td.decode(v);
      op.ret = now();
      finals.set(key, op.output);
      mine.push(op);
    }
    readOps.push(mine);
    return finals;
  };

  /** A return batch sent before the crash, delivered now: the epoch moved on, it must be refused. */
  const replayStaleReturn = async (i: ServerInfo): Promise<void> => {
    if (o.system !== 'prism' || lastReturnBatch === undefined) return;
    const { link } = await TcpLink.connect({ port: i.port, name: 'stale' });
    const qp = new QueuePair(link);
    const reply = new Promise<NotifyMessage>((res) => qp.onNotify(res));
    await qp.postChain([Wr.send(lastReturnBatch, RETURN_IMM)]);
    r.staleReturns.sent++;
    if ((await reply).imm === RETURN_STALE_IMM) r.staleReturns.refusedAsStale++;
    qp.close();
    lastReturnBatch = undefined;
  };

  const afterRecovery = (i: ServerInfo): void => {
    if (o.system !== 'prism') return;
    r.epochs.push(i.epoch!);
    r.auditsAfterRecovery.push(i.audit!);
    r.problemsAfterRecovery += i.problems!.length;
  };

  /** Cycle `cycle` on the incarnation that just started: clients, the restart checks, then the load until the server dies. */
  const startCycle = async (run: RealCrashRun): Promise<void> => {
    const i = await info();
    cycleChild = sup.child;
    t.equal(i.formatted, cycle === 0, cycle === 0 ? 'the first start formats the file' : `restart ${cycle} opens the same file`);
    afterRecovery(i);
    clients = [];
    for (let c = 0; c < CLIENTS; c++) clients.push(await connect(o.system, i.port, i.address, `c${c}`, o.faults, (p) => (lastReturnBatch = p.slice())));
    if (cycle > 0) {
      await replayStaleReturn(i);
      readsAfter.push(await readAll(clients[0]!, cycle));
    }
    dead = false;
    acked = 0;
    safetyKill = false;
    killAtOps = o.kill === 'ops' ? prng.int(30, 400) : undefined;
    killAtMs = o.kill === 'time' ? prng.int(100, 700) : undefined;
    pending = new Set<Op>();
    const at = cycle;
    loops = clients.map(async (c, ci) => {
      const rr = prng.fork();
      for (let n = 0; !dead; n++) {
        const key = keys[rr.int(0, keys.length - 1)]!;
        const roll = rr.int(0, 99);
        const input: KvInput = roll < 50 ? { kind: 'put', key, value: `c${ci}y${at}n${n}`.padEnd(rr.int(4, 80), '.') } : roll < 85 ? { kind: 'get', key } : { kind: 'delete', key };
        const op: Op = { client: ci, input, output: undefined, call: now(), ret: undefined, cycle: at };
        ops.push(op);
        pending.add(op);
        try {
          if (input.kind === 'put') await c.put(key, te.encode(input.value));
          else if (input.kind === 'delete') await c.delete(key);
          else {
            const v = await c.get(key);
            op.output = v === undefined ? null : td.decode(v);
          }
          if (input.kind !== 'get') op.output = null;
          op.ret = now();
          pending.delete(op);
          acked++;
          // Wakes the kill waiting for this count (it strikes at the acknowledgement, no polling).
          if (acked === killAtOps) run.wakeup.notify();
        } catch (e) {
          pending.delete(op);
          const code = (e as { code?: string }).code ?? String(e);
          op.error = code;
          if (LINK_GONE.has(code)) return;
          r.unexpectedErrors.push(`cycle ${at} client ${ci} ${input.kind}(${key}): ${String(e)}`);
        }
      }
    });
  };

  const exited = (c: ChildProcess | undefined): boolean => c === undefined || c.exitCode !== null || c.signalCode !== null;

  return {
    nodes: (run) => [[{
      name: 'kv',
      pmFile: join(run.dir, 'kv.pm'),
      args: (plan: KillPlan | undefined) => [FIXTURE, JSON.stringify({ path: join(run.dir, 'kv.pm'), system: o.system, regionBytes: REGION_BYTES, layout: LAYOUT, ...(plan?.events !== undefined ? { killAfterEvents: plan.events } : {}) })],
      killPlan: kills.map((events) => ({ events })),
      restartsMax: kills.length + 8,
      onLine: (line: string) => answers.push(line),
    }]],
    load: async (run) => {
      sup = run.sups[0]!;
      await startCycle(run);
    },
    kills: async function* (run) {
      for (; cycle < o.cycles; ) {
        if (o.kill === 'time') await run.sleep(killAtMs!);
        else if (o.kill === 'ops') safetyKill = !(await run.wakeup.until(() => acked >= killAtOps!, 20_000));
        else {
          // The server kills itself at its planned persistence event; the safety net: a kill the plan never made comes after 20 s.
          const c = cycleChild;
          safetyKill = !(await run.wakeup.until(() => exited(c), 20_000));
          if (!safetyKill) {
            yield { nodes: [], selfKilled: [0] };
            continue;
          }
        }
        yield { nodes: [0], restart: 'later' };
      }
    },
    afterKill: async (_step, run) => {
      dead = true;
      const end = sup.incarnations[cycle]!.end;
      t.same({ signal: cycleChild?.signalCode, end }, { signal: 'SIGKILL', end: o.kill === 'events' && !safetyKill ? 'self' : 'external' }, `cycle ${cycle}: the server died by SIGKILL`);
      t.notOk(safetyKill, `cycle ${cycle}: the kill came from the test's plan, not from the 20 s safety net`);
      if (end === 'self') r.killedBySelf++;
      // Every client learns the connection is gone; an operation that never settles is a bug.
      const settled = await Promise.race([Promise.all(loops).then(() => true), new Promise<boolean>((res) => setTimeout(() => res(false), 5000))]);
      if (!settled) r.hung += pending.size;
      for (const c of clients) c.qp.close();
      r.cycles++;
      cycle++;
      // The next incarnation: after an external kill it starts now (a self-killed one was restarted already).
      if (o.kill !== 'events' || safetyKill) void sup.start();
      if (cycle < o.cycles) await startCycle(run);
    },
    finish: async (run) => {
      // The final restart: recovery once more, reads of every key, a few more operations, the live audit.
      const i = await info();
      afterRecovery(i);
      clients = [];
      for (let c = 0; c < 2; c++) clients.push(await connect(o.system, i.port, i.address, `final${c}`, o.faults, () => {}));
      await replayStaleReturn(i);
      readsAfter.push(await readAll(clients[0]!, o.cycles));
      const finalCycle = o.cycles;
      const rr = prng.fork();
      await Promise.all(
        clients.map(async (c, ci) => {
          for (let n = 0; n < 20; n++) {
            const key = keys[rr.int(0, keys.length - 1)]!;
            const input: KvInput = n % 2 === 0 ? { kind: 'put', key, value: `f${ci}n${n}` } : { kind: 'get', key };
            const op: Op = { client: ci, input, output: undefined, call: now(), ret: undefined, cycle: finalCycle };
            ops.push(op);
            try {
              if (input.kind === 'put') await c.put(key, te.encode(input.value));
              else {
                const v = await c.get(key);
                op.output = v === undefined ? null : td.decode(v);
              }
              if (input.kind !== 'get') op.output = null;
              op.ret = now();
            } catch (e) {
              op.error = String(e);
              r.unexpectedErrors.push(`final client ${ci}: ${String(e)}`);
            }
          }
        }),
      );
      finalReads = await readAll(clients[0]!, finalCycle + 1);
      if (o.system === 'prism') {
        for (const c of clients) await (c as PrismKvClient).flushReturns();
        r.finalLiveAudit = await ask(run, 'audit');
      }
    },
    teardown: () => {
      dead = true;
      for (const c of clients) c.qp.close();
    },
    check: (run) => {
      r.runErrors = [...run.errors];
      r.lastStop = { end: sup.incarnations.at(-1)!.end, failures: [...sup.failures], incarnations: sup.incarnations.length };
      // ---- the checkers
      const asOp = (op: Op): Operation<KvInput, KvOutput> =>
        op.ret !== undefined && op.error === undefined ? { client: op.client, input: op.input, output: op.output, call: op.call, ret: op.ret } : { client: op.client, input: op.input, output: undefined, call: op.call, ret: undefined };
      for (let k = 0; k < r.cycles; k++) {
        const start = k === 0 ? undefined : readsAfter[k - 1]!;
        const segStart = Math.min(...ops.filter((x) => x.cycle === k).map((x) => x.call), ...(readOps[k - 1] ?? []).map((x) => x.call));
        const init: Array<Operation<KvInput, KvOutput>> = [];
        if (start !== undefined) {
          for (const [key, v] of start) init.push({ client: -2, input: v === null ? { kind: 'delete', key } : { kind: 'put', key, value: v }, output: null, call: segStart - 2, ret: segStart - 1 });
        }
        const history = [...init, ...(readOps[k - 1] ?? []).map(asOp), ...ops.filter((x) => x.cycle === k).map(asOp), ...(readOps[k] ?? []).map(asOp)];
        for (const d of lostWrites(history, readsAfter[k] ?? new Map())) r.lost.push(`cycle ${k}: ${d}`);
        const lin = checkLinearizable(kvModel, history);
        if (lin.ok !== true) r.segmentViolations.push(`cycle ${k}: ${lin.ok === false ? `${lin.reason}: ${lin.operations.map((x) => kvModel.describe!(x)).join('; ')}` : lin.reason}`);
      }
      const whole = [...ops.map(asOp), ...readOps.flat().map(asOp)];
      for (const d of lostWrites(whole, finalReads)) r.lost.push(`whole history: ${d}`);
      r.wholeHistory = checkLinearizable(kvModel, whole);
      r.operations = ops.length + readOps.flat().length;
      r.acknowledged = ops.filter((x) => x.ret !== undefined && x.error === undefined).length + readOps.flat().length;
      r.cut = ops.filter((x) => x.ret === undefined || x.error !== undefined).length;
      r.seconds = Math.round((performance.now() - t0) / 100) / 10;
      return r;
    },
  };
}

function report(t: Tap.Test, name: string, r: RunResult): void {
  t.comment(
    `${name}: seed ${r.seed} (replay: PMRPC_SEED=${BASE_SEED} npx tap test/deep/kv-sigkill.test.ts) — ${r.cycles} kill/restart cycles, ${r.operations} operations, ${r.acknowledged} acknowledged, ${r.cut} cut, lost ${r.lost.length}, ` +
      `linearizable ${String(r.wholeHistory.ok)} (whole history, ${r.wholeHistory.explored} steps) / ${r.cycles - r.segmentViolations.length} of ${r.cycles} cycles, epochs ${r.epochs.join(',') || '-'}, ` +
      `stale returns refused ${r.staleReturns.refusedAsStale}/${r.staleReturns.sent}, hung ${r.hung}, ${r.seconds} s`,
  );
}

function checkClean(t: Tap.Test, r: RunResult, o: RunOptions): void {
  t.same(r.runErrors, [], 'the run itself went through (no exception of the plan, no Supervisor failure)');
  t.same(r.lastStop, { end: 'stop', failures: [], incarnations: o.cycles + 1 }, 'the last server shuts down cleanly (SIGTERM, exit 0), after one incarnation per cycle');
  t.ok(r.cycles >= 3, `${r.cycles} kill/restart cycles`);
  t.same(r.lost, [], 'no acknowledged put / delete lost');
  t.same(r.segmentViolations, [], 'every cycle is linearizable (cut operations before the crash or never)');
  t.equal(r.wholeHistory.ok, true, `the whole history is linearizable${r.wholeHistory.ok === false ? `: ${r.wholeHistory.reason}` : ''}`);
  t.same(r.unexpectedErrors, [], 'no operation failed except those the kill cut');
  t.equal(r.hung, 0, 'every operation in flight at the kill settled (rejected with the link)');
  t.ok(r.acknowledged > r.cycles * 20, `operations were acknowledged in every cycle (${r.acknowledged})`);
  t.ok(r.cut >= 1, `the kills cut operations in flight (${r.cut})`);
  if (o.system === 'prism') {
    t.same(r.epochs, Array.from({ length: r.cycles + 1 }, (_, i) => String(i + 1)), 'every restart recovers and bumps the epoch');
    t.same(r.auditsAfterRecovery, Array.from({ length: r.cycles + 1 }, () => ({ leaked: 0, doubleFree: 0, freeAndReachable: 0, foreign: 0 })), 'after every recovery: no leaked or doubly used buffer');
    t.equal(r.problemsAfterRecovery, 0, 'after every recovery: no slot points at garbage');
    t.same(r.finalLiveAudit?.audit, { leaked: 0, doubleFree: 0, freeAndReachable: 0, foreign: 0 }, 'the final live state, once every client returned its buffers: no leak, no double use');
    t.same(r.finalLiveAudit?.problems, [], 'the final index is clean');
    t.ok(r.staleReturns.sent >= 1, `return batches from before a crash were replayed (${r.staleReturns.sent})`);
    t.equal(r.staleReturns.refusedAsStale, r.staleReturns.sent, 'every return batch from before a crash is refused as stale');
  }
}

t.test(`PRISM-KV: SIGKILL at a seeded moment, 4 clients over TCP, 3 cycles (seed ${BASE_SEED})`, async (t) => {
  const o: RunOptions = { system: 'prism', kill: 'time', seed: BASE_SEED, cycles: 3 };
  const r = await runSigkill(t, o);
  report(t, 'time', r);
  checkClean(t, r, o);
});

t.test(`PRISM-KV: SIGKILL after a seeded count of acknowledged operations (seed ${BASE_SEED + 1})`, async (t) => {
  const o: RunOptions = { system: 'prism', kill: 'ops', seed: BASE_SEED + 1, cycles: 3 };
  const r = await runSigkill(t, o);
  report(t, 'ops', r);
  checkClean(t, r, o);
});

t.test(`PRISM-KV: the server SIGKILLs itself at a seeded persistence event (seed ${BASE_SEED + 2})`, async (t) => {
  const o: RunOptions = { system: 'prism', kill: 'events', seed: BASE_SEED + 2, cycles: 3 };
  const r = await runSigkill(t, o);
  report(t, 'events', r);
  checkClean(t, r, o);
  t.equal(r.killedBySelf, 3, 'each kill came from the server itself, mid-chain');
});

t.test(`Pilaf-style: SIGKILL at a seeded moment (seed ${BASE_SEED + 3})`, async (t) => {
  const o: RunOptions = { system: 'pilaf', kill: 'time', seed: BASE_SEED + 3, cycles: 3 };
  const r = await runSigkill(t, o);
  report(t, 'pilaf', r);
  checkClean(t, r, o);
});

t.test(`the checkers have teeth: without the index FLUSH of the PUT chain, a SIGKILL loses acknowledged puts (seed ${BASE_SEED + 4})`, async (t) => {
  const o: RunOptions = { system: 'prism', kill: 'ops', seed: BASE_SEED + 4, cycles: 1, faults: { dropIndexFlush: true } };
  const r = await runSigkill(t, o);
  report(t, 'mutant dropIndexFlush', r);
  t.same(r.runErrors, [], 'the run itself went through');
  t.ok(r.lost.length > 0 || r.segmentViolations.length > 0, `the mutant is caught: ${r.lost.length} lost, ${r.segmentViolations.length} non-linearizable cycles${r.lost.length > 0 ? ` (${r.lost[0]})` : ''}`);
});

for (const system of ['prism', 'pilaf'] as System[]) {
  t.test(`${system}: an RPC whose reply the crash swallowed does not hang (PRISM-KV: the PUT resolves, its batch held; Pilaf: rejects with the link)`, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'pmrpc-kv-sigkill-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const srv = new KvServers(t, { path: join(dir, 'kv.pm'), system });
    void srv.sup.start();
    const info = await srv.info();
    const c = await connect(system, info.port, info.address, 'rpc', undefined, () => {});
    if (system === 'prism') await c.put('a', te.encode('1'));
    t.same(await srv.ask('stall-cpu'), { stalled: true });
    // PRISM-KV: two more puts replace two buffers, so the return RPC (returnBatch 2) runs and waits
    // for the stalled server CPU's reply. Pilaf-style: the PUT itself is an RPC to the server CPU.
    const op = (async () => {
      if (system === 'prism') {
        await c.put('a', te.encode('2'));
        await c.put('a', te.encode('3'));
      } else await c.put('a', te.encode('1'));
    })();
    const outcome = op.then(() => 'resolved', (e: unknown) => (e as { code?: string }).code ?? String(e));
    await new Promise((res) => setTimeout(res, 200));
    await srv.sup.kill(false);
    const got = await Promise.race([outcome, new Promise<string>((res) => setTimeout(() => res('still pending 3 s after the kill'), 3000))]);
    // PRISM-KV: the PUTs took effect; the return batch whose answer the crash swallowed stays with the
    // client (an idempotent batch, sent again on its next connection: docs/kv.md, "Dropped connections").
    if (system === 'prism') {
      t.equal(got, 'resolved', 'the PUT resolves (it took effect): the unanswered return batch does not hang it');
      t.equal((c as PrismKvClient).pendingReturns, 2, 'the unanswered batch is held');
    } else t.equal(got, 'PMRPC_ERR_LINK_CLOSED', 'the operation rejects when the connection goes');
    c.qp.close();
  });
}
