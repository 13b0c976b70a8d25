/**
 * Real crashes of PRISM-RS replicas (DESIGN §8, docs/rs.md), on the real-crash loop
 * (src/server/supervisor.ts runRealCrashApp): three `pmrpc serve --app rs` processes, each on its
 * own PM file and a fixed port, SIGKILLed during load — one replica at a time (f = 1) and all three
 * at once — and restarted on the same file and port (recovery: slots validated, free lists
 * rebuilt, a new epoch). Clients in this process write and read a few blocks the whole time and
 * reconnect by themselves; each outcome is recorded the moment the client receives it. Then a read
 * of every block by a fresh client, and the checks over the whole history (an operation cut by a
 * kill — NO_MAJORITY, a closed link — may or may not have happened): acknowledged writes survive
 * (lostWrites), durable linearizability per block (WGL).
 */
import { join } from 'node:path';
import { createPrng, intIn, resolveOptions, systemClock, type OptionChecks } from '../../pmem/index.js';
import { rsApp, RsErrorCodes, type RsClient } from '../apps/rs/index.js';
import { checkLinearizable, kvModel, lostWrites, type KvInput, type KvOutput, type Operation } from '../check/index.js';
import { runRealCrashApp, seedCheck, type KillStep, type RealCrashEntry, type RealCrashPlan, type RealCrashRun, type RealCrashRunOptions } from '../server/index.js';
import { connectRsCluster } from './rs.js';
import { parseClusterSpec, type ClusterSpec } from './spec.js';
import { freePorts } from './tx.js';

/** mainScript: the compiled CLI (dist/cli/main.js). */
export interface RsRealCrashOptions extends RealCrashRunOptions {
  /** SIGKILLs of replicas in all (an all-at-once round counts three). */
  kills: number;
  /** Blocks the clients write and read. */
  blocks: number;
  /** Client loops in this process (each its own RsClient over the three replicas). */
  clients: number;
  sizeBytes: number;
}

export const RS_REAL_CRASH_DEFAULTS: Readonly<Omit<RsRealCrashOptions, 'mainScript'>> = Object.freeze({
  seed: 1,
  kills: 8,
  blocks: 3,
  clients: 2,
  sizeBytes: 4 << 20,
  dir: undefined,
  keep: false,
  clock: systemClock,
  log: undefined,
});

const CHECKS: OptionChecks<RsRealCrashOptions> = {
  seed: seedCheck,
  kills: intIn(0, 1000),
  blocks: intIn(1, 64),
  clients: intIn(1, 8),
};

/** The replicas of a run (f = 1). */
const REPLICAS = 3;

export interface RsRealCrashReport {
  seed: number;
  /** SIGKILLs done; `allAtOnce` of them in rounds that killed every replica. */
  kills: number;
  allAtOnce: number;
  /** Restarts per replica (each kill is one). */
  restarts: number[];
  /** Operations acknowledged to the clients. */
  acknowledged: number;
  /** Operations a kill cut (NO_MAJORITY: may or may not have happened). */
  cut: number;
  /** Acknowledged writes the final read does not reflect. */
  lost: string[];
  /** Durable linearizability of the whole history (cut operations open). */
  linearizable: true | false | 'unknown';
  linearizabilityReason: string | undefined;
  errors: string[];
  /** lost + (not linearizable) + errors: 0 means the run passed. */
  violations: number;
}

type RsOp = Operation<KvInput, KvOutput> & { error?: string };

/** PRISM-RS's part of a real-crash run (its crash-test registry record's `realCrash`). */
export const RS_REAL_CRASH: RealCrashEntry<RsRealCrashOptions, RsRealCrashReport> = {
  dirPrefix: 'pmrpc-rs-kill-',
  resolveOptions: (options) => resolveOptions(RS_REAL_CRASH_DEFAULTS as Readonly<RsRealCrashOptions>, options, CHECKS),
  plan: rsPlan,
};

export function runRsRealCrash(options: Partial<RsRealCrashOptions> & { mainScript: string }): Promise<RsRealCrashReport> {
  return runRealCrashApp(RS_REAL_CRASH, options);
}

function rsPlan(o: RsRealCrashOptions): RealCrashPlan<RsRealCrashReport> {
  const te = new TextEncoder();
  const td = new TextDecoder();
  const prng = createPrng(o.seed >>> 0);
  let spec!: ClusterSpec;
  /** A logical clock of the history: each call and each return is one tick, in the order this process sees them. */
  let now = 0;
  const ops: RsOp[] = [];
  const clients: RsClient[] = [];
  let loads: Array<Promise<void>> = [];
  let stop = false;
  let acknowledged = 0;
  let kills = 0;
  let allAtOnce = 0;
  const finals = new Map<string, string | null>();
  /** A bounded wait on events (acknowledgements), not on speed. */
  const waitAcks = async (run: RealCrashRun, n: number): Promise<void> => {
    const target = acknowledged + n;
    await run.wakeup.until(() => acknowledged >= target, 15_000);
  };
  const load = async (run: RealCrashRun, c: number): Promise<void> => {
    const r = prng.fork();
    for (let k = 0; !stop; k++) {
      const block = r.int(0, o.blocks - 1);
      const write = r.int(0, 1) === 0;
      const value = `c${c}k${k}`;
      const op: RsOp = { client: c, input: write ? { kind: 'put', key: `b${block}`, value } : { kind: 'get', key: `b${block}` }, output: write ? null : undefined, call: ++now, ret: undefined };
      ops.push(op);
      try {
        if (write) await clients[c]!.write(block, te.encode(value));
        else {
          const v = await clients[c]!.read(block);
          op.output = v === null ? null : td.decode(v);
        }
        op.ret = ++now;
        acknowledged++;
        run.wakeup.notify();
      } catch (e) {
        op.error = (e as Error).message;
        if ((e as { code?: string }).code !== RsErrorCodes.NO_MAJORITY) {
          run.errors.push(`client ${c}: ${(e as Error).message}`);
          return;
        }
      }
    }
  };
  /** Restarts the replicas of a step (killed with restart 'later'): on the same file and port. */
  const restart = (run: RealCrashRun, step: KillStep): Promise<unknown> => Promise.all(step.nodes.map((i) => run.sups[i]!.start()));
  return {
    nodes: async (run) => {
      const ports = await freePorts(REPLICAS);
      spec = parseClusterSpec({ version: 1, nodes: ports.map((port, i) => ({ id: `r${i}`, app: rsApp.name, port, pm: join(run.dir, `r${i}.pm`), options: { sizeBytes: o.sizeBytes } })) });
      return [
        spec.nodes.map((n) => ({
          name: n.id,
          pmFile: n.pm,
          args: () => [o.mainScript, 'serve', '--app', n.app, '--create', '--node', n.id, '--pm', n.pm, '--host', n.host, '--port', String(n.port), '--json', '--size', String(o.sizeBytes)],
          restartsMax: o.kills + 3,
        })),
      ];
    },
    load: async (run) => {
      for (let c = 0; c < o.clients; c++) clients.push(await connectRsCluster(spec, { clock: o.clock, client: { writerId: c + 1, majorityWaitMs: 60_000, retryDelayMs: 20 } }));
      loads = clients.map((_, c) => load(run, c));
    },
    kills: async function* (run) {
      for (let round = 0; kills < o.kills; round++) {
        await waitAcks(run, prng.int(1, 12));
        if (round % 5 === 4 && kills + REPLICAS <= o.kills) {
          // All at once: PM survives.
          const step: KillStep = { nodes: Array.from({ length: REPLICAS }, (_, i) => i), restart: 'later' };
          yield step;
          kills += REPLICAS;
          allAtOnce += REPLICAS;
          await restart(run, step);
        } else {
          const step: KillStep = { nodes: [prng.int(0, REPLICAS - 1)], restart: 'later' };
          yield step;
          kills++;
          await waitAcks(run, prng.int(0, 6)); // the others go on at a majority
          await restart(run, step);
        }
      }
      await waitAcks(run, 5);
    },
    // No inspection after a restart: the clients reconnect the replica by themselves; the final read covers every block.
    finish: async () => {
      stop = true;
      await Promise.all(loads);
      // A read of every block by a fresh client.
      const reader = await connectRsCluster(spec, { clock: o.clock, client: { writerId: 9, majorityWaitMs: 30_000 } });
      clients.push(reader);
      for (let b = 0; b < o.blocks; b++) {
        const call = ++now;
        const v = await reader.read(b);
        const got = v === null ? null : td.decode(v);
        finals.set(`b${b}`, got);
        ops.push({ client: -1, input: { kind: 'get', key: `b${b}` }, output: got, call, ret: ++now });
      }
    },
    teardown: async () => {
      stop = true;
      for (const c of clients) await c.close();
    },
    check: (run) => {
      const history: Array<Operation<KvInput, KvOutput>> = ops.map((op) => (op.ret !== undefined && op.error === undefined ? op : { client: op.client, input: op.input, output: undefined, call: op.call, ret: undefined }));
      const errors = run.errors;
      const lost = finals.size === o.blocks ? lostWrites(history, finals) : [];
      if (finals.size !== o.blocks) errors.push('the final read of every block did not complete');
      const lin = checkLinearizable(kvModel, history);
      const linearizabilityReason = lin.ok === false ? `${lin.reason}: ${lin.operations.map((x) => kvModel.describe!(x)).join('; ')}` : lin.ok === true ? undefined : lin.reason;
      const restarts = run.sups.map((s) => s.incarnations.length - 1);
      return {
        seed: o.seed,
        kills,
        allAtOnce,
        restarts,
        acknowledged,
        cut: history.filter((x) => x.ret === undefined).length,
        lost,
        linearizable: lin.ok,
        linearizabilityReason,
        errors,
        violations: lost.length + (lin.ok === false ? 1 : 0) + errors.length,
      };
    },
  };
}
