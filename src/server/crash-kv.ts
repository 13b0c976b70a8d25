/**
 * A PRISM-KV cluster under real crashes (DESIGN §8 "real crashes"): the kv app's part (KV_REAL_CRASH,
 * its registry record's `realCrash`) of the one real-crash loop (supervisor.ts runRealCrashApp): `pmrpc serve --app kv` processes, each on its own PM file, kill rounds and
 * self-kills, restarts on the same file, a read-back after each restart and at the end, and the
 * checks (nothing acknowledged lost, durable linearizability per node, the app's audit).
 * `pmrpc demo --app kv` and test/server/kv-cluster-crash.test.ts run this.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createPrng, cryptoEntropy, intIn, oneOf, PmemRegion, resolveOptions, systemClock, type Clock, type OptionChecks } from '../../pmem/index.js';
import { QueuePair, Rnic } from '../../flush/index.js';
import { TcpLink, TransportErrorCodes } from '../transport/index.js';
import { connectKvClient, kvApp, type KvFaults, type KvSystem, type PilafClient, type PrismKvClient } from '../apps/kv/index.js';
import { KV_SYSTEMS } from '../node/index.js';
import { checkLinearizable, describeKvInput, kvModel, lostWrites, type KvInput, type KvOutput, type Operation } from '../check/index.js';
import { crashesOf, MIN_SERVE_MS, runRealCrashApp, secondsCheck, seedCheck, type KillPlan, type RealCrashEntry, type RealCrashPlan, type RealCrashRun, type RealCrashRunOptions, type Supervisor } from './supervisor.js';
import { kvNodeKeys } from './workload.js';

/** The kv app's real-crash options (mainScript, seed, dir, keep, clock, log: RealCrashRunOptions). */
export interface KvRealCrashOptions extends RealCrashRunOptions {
  /** Nodes, each a `pmrpc serve --app kv` process on its own PM file. */
  nodes: number;
  /** Client loops; each keeps one connection per node and one operation in flight. */
  clients: number;
  /** Keys per node (each key lives on one node). */
  keysPerNode: number;
  seconds: number;
  /** External kill rounds, at seeded moments: each SIGKILLs a seeded non-empty subset of the nodes at once. */
  killRounds: number;
  /** Node incarnations that SIGKILL themselves after a seeded number of persistence events (spread over the nodes). */
  selfKills: number;
  selfKillEvents: readonly [number, number];
  /** PRISM-KV or the Pilaf baseline (KV_SYSTEMS; the first is the default). */
  system: KvSystem;
  sizeBytes: number;
  /** Test-only fault switches of the PRISM-KV clients (a mutant: the checks must catch it). */
  kvFaults: Partial<KvFaults> | undefined;
  /** A kill round waits (at most 30 s) until each node it kills acknowledged this many PUTs since it last started: kills hit a loaded node whatever the machine's speed. */
  putsBeforeKill: number;
}

export const KV_REAL_CRASH_DEFAULTS: Readonly<Omit<KvRealCrashOptions, 'mainScript'>> = Object.freeze({
  nodes: 3,
  clients: 3,
  keysPerNode: 6,
  seconds: 6,
  seed: 1,
  killRounds: 2,
  selfKills: 1,
  selfKillEvents: [20, 150] as const,
  system: KV_SYSTEMS[0]!,
  sizeBytes: 4 << 20,
  kvFaults: undefined,
  putsBeforeKill: 0,
  dir: undefined,
  keep: false,
  clock: systemClock,
  log: undefined,
});

export interface KvNodeReport {
  node: number;
  pmFile: string;
  operations: number;
  acknowledged: number;
  /** Operations a crash cut (outcome unknown: may or may not have happened). */
  cut: number;
  crashes: number;
  lost: string[];
  /** Durable linearizability of the node's history (crash events removed, cut operations open). */
  linearizable: true | false | 'unknown';
  linearizabilityReason: string | undefined;
  /** The app's audit of the final file (after recovery on a copy): index and allocator problems. */
  auditProblems: string[];
  recoveryMs: number;
}

export interface KvRealCrashReport {
  seed: number;
  nodes: KvNodeReport[];
  /** Kill rounds done, each with the nodes it killed. */
  killRounds: Array<{ atS: number; nodes: number[] }>;
  crashes: number;
  externalKills: number;
  selfKills: number;
  operations: number;
  acknowledged: number;
  cut: number;
  lost: number;
  errors: string[];
  loadSeconds: number;
  /** lost + non-linearizable nodes + audit problems + errors: 0 means the run passed. */
  violations: number;
}

const KV_REAL_CRASH_CHECKS: OptionChecks<KvRealCrashOptions> = {
  nodes: intIn(1, 16),
  clients: intIn(1, 32),
  keysPerNode: intIn(1, 64),
  killRounds: intIn(0, 100),
  selfKills: intIn(0, 100),
  putsBeforeKill: intIn(0, 10_000),
  seed: seedCheck,
  seconds: secondsCheck,
  system: oneOf(KV_SYSTEMS),
};

export function resolveKvRealCrashOptions(options: Partial<KvRealCrashOptions> & { mainScript: string }): KvRealCrashOptions {
  return resolveOptions(KV_REAL_CRASH_DEFAULTS as Readonly<KvRealCrashOptions>, options, KV_REAL_CRASH_CHECKS);
}

type KvOp = Operation<KvInput, KvOutput> & { error?: string };

const LINK_GONE = new Set<string>([TransportErrorCodes.LINK_CLOSED, TransportErrorCodes.SERVER_CLOSED]);

/** One client's connection to one node: reconnects (a new KV client) after the node restarts. */
class KvConn {
  kv: PrismKvClient | PilafClient | undefined;
  constructor(
    readonly sup: Supervisor,
    readonly name: string,
    readonly clock: Clock,
    readonly faults: Partial<KvFaults> | undefined,
  ) {}

  /** The KV client on the node's current incarnation, connecting (retried while it restarts) if needed; undefined if unreachable by `deadline`. */
  async get(deadline: number): Promise<PrismKvClient | PilafClient | undefined> {
    if (this.kv !== undefined) return this.kv;
    try {
      await this.sup.connect(async (up) => {
        const { link, welcome } = await TcpLink.connect({ port: up.port, name: this.name, clock: this.clock });
        const qp = new QueuePair(link);
        try {
          this.kv = await connectKvClient(qp, welcome, this.faults === undefined ? {} : { faults: this.faults });
        } catch (e) {
          qp.close();
          throw e;
        }
        link.onClose(() => {
          if (this.kv?.qp === qp) this.kv = undefined;
        });
      }, deadline);
    } catch {
      // unreachable within the deadline
    }
    return this.kv;
  }

  close(): void {
    this.kv?.qp.close();
    this.kv = undefined;
  }
}

/** The kv app's part of a real-crash run (its crash-test registry record's `realCrash`). */
export const KV_REAL_CRASH: RealCrashEntry<KvRealCrashOptions, KvRealCrashReport> = {
  dirPrefix: 'pmrpc-kv-cluster-',
  resolveOptions: resolveKvRealCrashOptions,
  plan: kvPlan,
};

/**
 * A PRISM-KV cluster under real crashes (DESIGN §8): `nodes` serve processes, each on its own PM
 * file; clients spread puts, gets and deletes over every node's keys; kill rounds SIGKILL a seeded
 * subset of the nodes at once at seeded moments, some incarnations kill themselves after a seeded
 * number of persistence events; each node restarts on its own file and recovers; then every key is
 * read back and each node's history is checked — nothing acknowledged lost, durably linearizable —
 * and the app's audit runs on a copy of each final file.
 */
export function runKvRealCrash(options: Partial<KvRealCrashOptions> & { mainScript: string }): Promise<KvRealCrashReport> {
  return runRealCrashApp(KV_REAL_CRASH, options);
}

function kvPlan(o: KvRealCrashOptions): RealCrashPlan<KvRealCrashReport> {
  const clock = o.clock;
  const prng = createPrng(o.seed >>> 0);
  // A node's i-th self-kill goes to its i-th incarnation (counted from the open: format or recovery
  // included — a few events).
  const killPlans: KillPlan[][] = Array.from({ length: o.nodes }, () => []);
  for (let i = 0; i < o.selfKills; i++) killPlans[prng.int(0, o.nodes - 1)]!.push({ events: prng.int(o.selfKillEvents[0], o.selfKillEvents[1]) });
  const rounds: Array<{ at: number; nodes: number[] }> = [];
  for (let i = 0; i < o.killRounds; i++) {
    const slot = 0.7 / o.killRounds;
    const at = o.seconds * 1000 * (0.15 + slot * i + slot * (0.2 + (0.6 * prng.int(0, 1000)) / 1000));
    const subset = Array.from({ length: o.nodes }, (_, k) => k).filter(() => prng.int(0, 1) === 1);
    rounds.push({ at, nodes: subset.length > 0 ? subset : [prng.int(0, o.nodes - 1)] });
  }
  let pmFiles: string[] = [];
  let sups: Supervisor[] = [];
  const histories: KvOp[][] = Array.from({ length: o.nodes }, () => []);
  const keys = histories.map((_, k) => kvNodeKeys(k, o.keysPerNode));
  const killRounds: KvRealCrashReport['killRounds'] = [];
  const conns: KvConn[] = [];
  const finals: Array<Map<string, string | null>> = histories.map(() => new Map());
  /** PUTs acknowledged by each node's current incarnation (reset at each kill round). */
  const putsAcked: number[] = histories.map(() => 0);
  /** A killed node's clients wait here until its restart read-back is done (see afterKill). */
  const gates: Array<Promise<void>> = histories.map(() => Promise.resolve());
  const opens = new Map<number, () => void>();
  const te = new TextEncoder();
  const td = new TextDecoder();
  let t0 = 0;
  let stopped = false;
  let loadSeconds = 0;
  let loops: Array<Promise<void>> = [];
  /** Reads every key of node k on a fresh connection, as history client `client`; false if unreachable. */
  const readBack = async (k: number, client: number, name: string): Promise<boolean> => {
    const c = new KvConn(sups[k]!, `${name}@kv${k}`, clock, undefined);
    try {
      const kv = await c.get(clock.nowMs() + 30_000);
      if (kv === undefined) return false;
      for (const key of keys[k]!) {
        const op: KvOp = { client, input: { kind: 'get', key }, output: undefined, call: clock.nowMs(), ret: undefined };
        histories[k]!.push(op);
        const v = await kv.get(key);
        op.output = v === undefined ? null : td.decode(v);
        op.ret = clock.nowMs();
        if (client === -1) finals[k]!.set(key, op.output);
      }
      return true;
    } finally {
      c.close();
    }
  };
  return {
    nodes: (run) => {
      pmFiles = histories.map((_, k) => join(run.dir, `kv-${k}.pm`));
      return [
        pmFiles.map((pm, k) => ({
          name: `node kv${k}`,
          pmFile: pm,
          args: (plan: KillPlan | undefined) => {
            const a = [o.mainScript, 'serve', '--app', kvApp.name, '--create', '--system', o.system, '--node', `kv${k}`, '--pm', pm, '--size', String(o.sizeBytes), '--port', '0', '--json'];
            if (plan?.events !== undefined) a.push('--kill-after-events', String(plan.events));
            return a;
          },
          killPlan: killPlans[k]!,
          restartsMax: o.killRounds + killPlans[k]!.length + 3,
        })),
      ];
    },
    load: async (run) => {
      sups = run.sups;
      t0 = clock.nowMs();
      loops = Array.from({ length: o.clients }, async (_, ci) => {
        const mine = sups.map((s, k) => new KvConn(s, `c${ci}@kv${k}`, clock, o.kvFaults));
        conns.push(...mine);
        const rr = prng.fork();
        for (let n = 0; !stopped; n++) {
          const k = rr.int(0, o.nodes - 1);
          const key = keys[k]![rr.int(0, o.keysPerNode - 1)]!;
          await gates[k];
          const kv = await mine[k]!.get(clock.nowMs() + o.seconds * 1000 + 30_000);
          if (kv === undefined) {
            run.errors.push(`client ${ci}: node kv${k} unreachable`);
            return;
          }
          if (stopped) break;
          const roll = rr.int(0, 99);
          const input: KvInput = roll < 50 ? { kind: 'put', key, value: `c${ci}n${n}` } : roll < 85 ? { kind: 'get', key } : { kind: 'delete', key };
          const op: KvOp = { client: ci, input, output: undefined, call: clock.nowMs(), ret: undefined };
          histories[k]!.push(op);
          try {
            if (input.kind === 'put') await kv.put(key, te.encode(input.value));
            else if (input.kind === 'delete') await kv.delete(key);
            else {
              const v = await kv.get(key);
              op.output = v === undefined ? null : td.decode(v);
            }
            if (input.kind !== 'get') op.output = null;
            op.ret = clock.nowMs();
            if (input.kind === 'put') {
              putsAcked[k]!++;
              // Wakes a kill round waiting for acknowledged PUTs (no polling: it strikes at the acknowledgement).
              run.wakeup.notify();
            }
          } catch (e) {
            const code = (e as { code?: string }).code ?? String(e);
            op.error = code;
            op.output = undefined;
            if (!LINK_GONE.has(code) && run.errors.length < 20) run.errors.push(`client ${ci} ${describeKvInput(input)} on kv${k}: ${(e as Error).message}`);
            mine[k]!.close();
          }
        }
      });
    },
    kills: async function* (run) {
      for (const r of rounds) {
        await run.sleep(t0 + r.at - clock.nowMs());
        // Each kill hits nodes that have served a while (not ones still starting up).
        for (const k of r.nodes) await sups[k]!.servedFor(MIN_SERVE_MS);
        await run.wakeup.until(() => r.nodes.every((k) => putsAcked[k]! >= o.putsBeforeKill), 30_000);
        for (const k of r.nodes) putsAcked[k] = 0;
        // The killed nodes' clients hold back until the restart read-back (afterKill) has read every
        // key: what the kill took back is seen before any later write can hide it.
        for (const k of r.nodes) gates[k] = new Promise<void>((res) => opens.set(k, res));
        o.log?.(`SIGKILL of node(s) ${r.nodes.map((k) => `kv${k}`).join(', ')} at ${((clock.nowMs() - t0) / 1000).toFixed(2)} s`);
        killRounds.push({ atS: (clock.nowMs() - t0) / 1000, nodes: r.nodes });
        yield { nodes: r.nodes };
      }
    },
    afterKill: async (step, run) => {
      await Promise.all(
        step.nodes.map(async (k) => {
          try {
            if (!(await readBack(k, -2 - killRounds.length, 'restart-check'))) run.errors.push(`node kv${k} unreachable for the restart read-back`);
          } catch (e) {
            // A self-kill may strike the restarted incarnation during the read-back: its reads are cut.
            const code = (e as { code?: string }).code ?? String(e);
            if (!LINK_GONE.has(code)) run.errors.push(`the restart read-back of kv${k}: ${(e as Error).message}`);
          } finally {
            opens.get(k)?.();
          }
        }),
      );
    },
    finish: async (run) => {
      await Promise.all(sups.map((s) => s.up().catch(() => undefined)));
      await run.sleep(Math.max(t0 + o.seconds * 1000, ...sups.map((s) => s.upAtMs + 2 * MIN_SERVE_MS)) - clock.nowMs());
      stopped = true;
      loadSeconds = (clock.nowMs() - t0) / 1000;
      await Promise.all(loops);
      // Read every key back (client -1), on a fresh connection to each node.
      for (let k = 0; k < o.nodes; k++) if (!(await readBack(k, -1, 'final'))) run.errors.push(`node kv${k} unreachable for the final reads`);
    },
    teardown: () => {
      // Gates a failed kill round left closed would hold its clients: open them.
      for (const open of opens.values()) open();
      for (const c of conns) c.close();
    },
    check: (run) => kvCheck(o, run, { pmFiles, histories, finals, killRounds, loadSeconds }),
  };
}

/** The checks of a kv run once every node stopped: per node, nothing acknowledged lost, durable linearizability, the app's audit of its file. */
function kvCheck(o: KvRealCrashOptions, run: RealCrashRun, r: { pmFiles: string[]; histories: KvOp[][]; finals: Array<Map<string, string | null>>; killRounds: KvRealCrashReport['killRounds']; loadSeconds: number }): KvRealCrashReport {
  const { pmFiles, histories, finals, killRounds, loadSeconds } = r;
  const clock = o.clock;
  const errors = run.errors;
  const sups = run.sups;
  const nodes: KvNodeReport[] = [];
  for (let k = 0; k < pmFiles.length; k++) {
    const sup = sups[k]!;
    const h = histories[k]!.map((x): Operation<KvInput, KvOutput> => (x.ret !== undefined && x.error === undefined ? x : { client: x.client, input: x.input, output: undefined, call: x.call, ret: undefined }));
    const lin = checkLinearizable(kvModel, h);
    const auditProblems: string[] = [];
    try {
      const region = PmemRegion.openImage(new Uint8Array(readFileSync(pmFiles[k]!)));
      const nic = new Rnic(region);
      const server = kvApp.open({ region, nic, clock, schedule: queueMicrotask, entropy: cryptoEntropy }, kvApp.resolveOptions({ system: o.system }));
      server.recover();
      for (const p of server.audit()) auditProblems.push(`${p.kind}: ${p.detail}`);
      server.close();
      nic.detach();
      region.close({ writeBack: false });
    } catch (e) {
      auditProblems.push(`the final file does not open: ${(e as Error).message}`);
    }
    const crashes = crashesOf(sup.incarnations).length;
    const restarts = sup.incarnations.slice(1);
    nodes.push({
      node: k,
      pmFile: pmFiles[k]!,
      operations: h.length,
      acknowledged: h.filter((x) => x.ret !== undefined).length,
      cut: h.filter((x) => x.ret === undefined).length,
      crashes,
      lost: lostWrites(h, finals[k]!),
      linearizable: lin.ok,
      linearizabilityReason: lin.ok === true ? undefined : lin.reason,
      auditProblems,
      recoveryMs: restarts.length === 0 ? 0 : restarts.reduce((a, r) => a + Number((r.recovered as { recoveryMs?: number } | undefined)?.recoveryMs ?? 0), 0) / restarts.length,
    });
  }
  const all = sups.flatMap((s) => s.incarnations);
  const lost = nodes.reduce((a, n) => a + n.lost.length, 0);
  return {
    seed: o.seed,
    nodes,
    killRounds,
    crashes: crashesOf(all).length,
    externalKills: all.filter((r) => r.end === 'external').length,
    selfKills: all.filter((r) => r.end === 'self').length,
    operations: nodes.reduce((a, n) => a + n.operations, 0),
    acknowledged: nodes.reduce((a, n) => a + n.acknowledged, 0),
    cut: nodes.reduce((a, n) => a + n.cut, 0),
    lost,
    errors,
    loadSeconds,
    violations: lost + nodes.filter((n) => n.linearizable === false).length + nodes.reduce((a, n) => a + n.auditProblems.length, 0) + errors.length,
  };
}
