/**
 * Real crashes of PRISM-TX (DESIGN §8, docs/tx.md "Real crashes"): S shard processes (`pmrpc serve
 * --app tx --cluster FILE`, each on its own PM file, each running the resolver agent over
 * node-to-node links) and C bank-client processes (tx-client-proc.ts), all run by the one real-crash
 * loop (src/server/supervisor.ts runRealCrashApp; this file is PRISM-TX's part, TX_REAL_CRASH, its
 * registry record's `realCrash`), whose supervisor hands over each history line a client prints the
 * moment it arrives (the waits below wake on those, bounded): SIGKILLs at seeded moments — of a client while its commit is in flight
 * (its history's last line is an intent), of one shard, of every shard at once — each followed by
 * a restart on the same file (a client restarts as a new incarnation of its slot). At the end the
 * clients are SIGKILLed mid-commit for good: what they left prepared must be resolved by the
 * shards alone. Then the checks:
 *   - nothing in doubt: no lock, no PREPARED record (a scan that does not resolve, then every PM file);
 *   - bank conservation in every committed audit and in the final state (src/check checkBank);
 *   - atomicity and nothing acknowledged lost: every account's version chain, walked back from its
 *     final value through the writers each transfer read, holds every committed transfer on both
 *     of its accounts, no aborted one, and each undecided one on both or neither;
 *   - each shard's audit after recovery.
 */
import { copyFileSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createPrng, cryptoEntropy, intIn, PmemRegion, resolveOptions, systemClock, type Clock, type OptionChecks } from '../../pmem/index.js';
import { Rnic } from '../../flush/index.js';
import { TxClient, TxResolver, txApp, txName, type TxAppServer } from '../apps/tx/index.js';
import { checkBank } from '../check/index.js';
import { runRealCrashApp, seedCheck, type RealCrashEntry, type RealCrashPlan, type RealCrashRun, type RealCrashRunOptions, type Supervisor } from '../server/index.js';
import { parseClusterSpec, type ClusterSpec } from './spec.js';
import { freePorts, txNodeAppOptions, txShardSource } from './tx.js';

export const encodeAccount = (balance: bigint, writer: bigint): Uint8Array => {
  const b = new Uint8Array(16);
  const dv = new DataView(b.buffer);
  dv.setBigInt64(0, balance, true);
  dv.setBigUint64(8, writer, true);
  return b;
};
export const decodeAccount = (b: Uint8Array): { balance: bigint; writer: bigint } => {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  return { balance: dv.getBigInt64(0, true), writer: b.length >= 16 ? dv.getBigUint64(8, true) : 0n };
};

/** mainScript: the compiled CLI (dist/cli/main.js); the client script is dist/src/cluster/tx-client-proc.js beside it. */
export interface TxRealCrashOptions extends RealCrashRunOptions {
  shards: number;
  clients: number;
  keysPerShard: number;
  /** SIGKILLs in all (clients mid-commit, one shard, every shard; the final client kills included). */
  kills: number;
  /** The shards' agent pass period. */
  leaseMs: number;
  /** Keep the PM files (and the histories) when `dir` is not given. */
  keep: boolean;
  dir: string | undefined;
  clock: Clock;
  log: ((line: string) => void) | undefined;
}

export const TX_REAL_CRASH_DEFAULTS: Readonly<Omit<TxRealCrashOptions, 'mainScript'>> = Object.freeze({
  seed: 1,
  shards: 3,
  clients: 4,
  keysPerShard: 3,
  kills: 52,
  leaseMs: 200,
  keep: false,
  dir: undefined,
  clock: systemClock,
  log: undefined,
});

const CHECKS: OptionChecks<TxRealCrashOptions> = {
  seed: seedCheck,
  shards: intIn(1, 8),
  clients: intIn(1, 16),
  keysPerShard: intIn(1, 64),
  kills: intIn(0, 1000),
  leaseMs: intIn(10, 60_000),
};

export interface TxRealCrashReport {
  seed: number;
  kills: { total: number; clientsMidCommit: number; clients: number; shard: number; allShards: number; finalClients: number };
  /** Transactions held at their commit point when their client was SIGKILLed for good (the shards resolved them alone). */
  held: number;
  transactions: { intents: number; committed: number; aborted: number; unknown: number; audits: number };
  /** Transactions in doubt right after the final client kills (what the shards had to resolve alone). */
  inDoubtAfterFinalKills: number;
  /** Milliseconds the shards took to leave nothing in doubt after the final kills. */
  resolveMs: number;
  /** PREPARED records and locks found in the PM files at the end (must be 0). */
  preparedAtEnd: number;
  lost: string[];
  atomicity: string[];
  bank: string[];
  audit: string[];
  errors: string[];
  seconds: number;
  violations: number;
}

interface Intent {
  kind: 'transfer' | 'audit';
  txid: string;
  a?: number;
  b?: number;
  prevA?: string;
  prevB?: string;
  balances?: Record<string, string>;
  status: 'committed' | 'aborted' | 'unknown';
}

function readHistory(file: string): Intent[] {
  if (!existsSync(file)) return [];
  const byTx = new Map<string, Intent>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    let v: Record<string, unknown>;
    try {
      v = JSON.parse(line) as Record<string, unknown>;
    } catch {
      continue; // a line cut by a SIGKILL (appendFileSync writes whole lines, but be safe)
    }
    if (v.t === 'intent') byTx.set(v.txid as string, { ...(v as unknown as Intent), status: 'unknown' });
    else if (v.t === 'outcome') {
      const i = byTx.get(v.txid as string);
      if (i !== undefined && (v.status === 'committed' || v.status === 'aborted')) i.status = v.status;
    }
  }
  return [...byTx.values()];
}

/** PRISM-TX's part of a real-crash run (its crash-test registry record's `realCrash`). */
export const TX_REAL_CRASH: RealCrashEntry<TxRealCrashOptions, TxRealCrashReport> = {
  dirPrefix: 'pmrpc-tx-kill-',
  resolveOptions: (options) => resolveOptions(TX_REAL_CRASH_DEFAULTS as Readonly<TxRealCrashOptions>, options, CHECKS),
  plan: txPlan,
};

export function runTxRealCrash(options: Partial<TxRealCrashOptions> & { mainScript: string }): Promise<TxRealCrashReport> {
  return runRealCrashApp(TX_REAL_CRASH, options);
}

function txPlan(o: TxRealCrashOptions): RealCrashPlan<TxRealCrashReport> {
  const clock = o.clock;
  const t0 = clock.nowMs();
  const prng = createPrng(o.seed >>> 0);
  const clientScript = join(dirname(o.mainScript), '..', 'src', 'cluster', 'tx-client-proc.js');
  const accounts = o.shards * o.keysPerShard;
  let spec!: ClusterSpec;
  let histories: string[] = [];
  const kills = { total: 0, clientsMidCommit: 0, clients: 0, shard: 0, allShards: 0, finalClients: 0 };
  const incarnations = Array.from({ length: o.clients }, () => 0);
  const holdNext = Array.from({ length: o.clients }, () => false);
  // What the clients print, as it arrives (their history files, appended first, are what the checks read).
  let outcomes = 0;
  /** The kind of each client's last history line (across its incarnations, as its history file ends). */
  const lastLine: Array<string | undefined> = Array.from({ length: o.clients }, () => undefined);
  /** The transaction each client holds at its commit point (the final kills). */
  const heldTx: Array<string | undefined> = Array.from({ length: o.clients }, () => undefined);
  const onLine = (c: number, text: string): void => {
    let v: { t?: unknown; txid?: unknown };
    try {
      v = JSON.parse(text) as typeof v;
    } catch {
      return;
    }
    lastLine[c] = typeof v.t === 'string' ? v.t : undefined;
    if (v.t === 'outcome') outcomes++;
    if (v.t === 'held') heldTx[c] = String(v.txid);
  };
  /** The processes: the shards first (run.sups[0 .. shards-1]), then the clients. */
  const shardSup = (run: RealCrashRun, s: number): Supervisor => run.sups[s]!;
  const clientIndex = (c: number): number => o.shards + c;
  const clientSup = (run: RealCrashRun, c: number): Supervisor => run.sups[clientIndex(c)]!;
  /** Waits (at most 1 s) for n more outcomes. */
  const waitOutcomes = async (run: RealCrashRun, n: number): Promise<void> => {
    const target = outcomes + n;
    await run.wakeup.until(() => outcomes >= target, 1000);
  };
  /** A client whose commit is in flight (the first found within ~1.5 s; else a seeded one of the candidates). */
  const clientMidCommit = async (run: RealCrashRun, candidates: number[]): Promise<number> => {
    let victim: number | undefined;
    await run.wakeup.until(() => (victim = candidates.find((c) => clientSup(run, c).child?.exitCode === null && clientSup(run, c).child?.signalCode === null && lastLine[c] === 'intent')) !== undefined, 1500);
    if (victim !== undefined) kills.clientsMidCommit++;
    return victim ?? candidates[prng.int(0, candidates.length - 1)]!;
  };
  const held: string[] = [];
  let inDoubtAfterFinalKills = 0;
  let resolveMs = 0;
  const finalBalances = new Map<number, bigint>();
  const finalWriters = new Map<number, bigint>();
  return {
    nodes: async (run) => {
      const ports = await freePorts(o.shards);
      const clusterFile = join(run.dir, 'cluster.json');
      const nodeOptions = { sizeBytes: 4 << 20, keysPerShard: o.keysPerShard, txClients: o.clients + 2, txItems: 8192, txValue: 'balance', initialBalance: 100 };
      const doc = { version: 1, name: 'tx-kill', nodes: ports.map((port, i) => ({ id: `tx${i}`, app: txApp.name, host: '127.0.0.1', port, pm: join(run.dir, `tx${i}.pm`), options: nodeOptions })) };
      writeFileSync(clusterFile, JSON.stringify(doc, null, 2));
      spec = parseClusterSpec(doc, { baseDir: run.dir, file: clusterFile });
      histories = Array.from({ length: o.clients }, (_, c) => join(run.dir, `client${c}.jsonl`));
      const shards = spec.nodes.map((n) => ({
        name: `shard ${n.id}`,
        pmFile: n.pm,
        args: () => [o.mainScript, 'serve', '--app', txApp.name, '--create', '--cluster', clusterFile, '--node', n.id, '--pm', n.pm, '--port', String(n.port), '--lease-ms', String(o.leaseMs), '--json'],
        restartsMax: o.kills + 3,
      }));
      const clients = histories.map((h, c) => ({
        name: `client ${c}`,
        pmFile: h,
        args: () => {
          const inc = ++incarnations[c]!;
          return [clientScript, '--cluster', clusterFile, '--client', String(c), '--incarnation', String(inc), '--seed', String((o.seed >>> 0) * 7919 + c * 131 + inc), '--history', h, ...(holdNext[c] ? ['--hold-after-prepare'] : [])];
        },
        restartsMax: o.kills + 3,
        onLine: (line: string) => onLine(c, line),
      }));
      return [shards, clients];
    },
    load: (run) => waitOutcomes(run, 10),
    kills: async function* (run) {
      const shardSups = run.sups.slice(0, o.shards);
      const finalKills = 2 * o.clients;
      while (kills.total < o.kills - finalKills) {
        await waitOutcomes(run, prng.int(1, 3));
        const roll = prng.int(0, 99);
        if (roll < 40) {
          yield { nodes: [clientIndex(await clientMidCommit(run, Array.from({ length: o.clients }, (_, c) => c)))] };
          kills.total++;
          kills.clients++;
        } else if (roll < 75 || kills.total + o.shards > o.kills - finalKills) {
          // A shard that serves now (one still restarting is not waited for, unless all are).
          const upNow = shardSups.flatMap((s, i) => (s.serving ? [i] : []));
          const s = upNow.length > 0 ? upNow[prng.int(0, upNow.length - 1)]! : prng.int(0, o.shards - 1);
          await shardSup(run, s).up().catch(() => undefined);
          yield { nodes: [s] };
          kills.total++;
          kills.shard++;
        } else {
          await Promise.all(shardSups.map((s) => s.up().catch(() => undefined)));
          yield { nodes: shardSups.map((_, s) => s) };
          kills.total += o.shards;
          kills.allShards++;
        }
        o.log?.(`kill ${kills.total}: ${outcomes} outcomes so far`);
      }
      await Promise.all(shardSups.map((s) => s.up().catch(() => undefined)));
      await waitOutcomes(run, 5);
      // The final kills: every client mid-commit, restarted to hold its next transaction at the commit
      // point (records durable everywhere, nothing installed), SIGKILLed there for good. The shards
      // alone must resolve what they left: roll every held transaction forward.
      for (let c = 0; c < o.clients; c++) {
        holdNext[c] = true;
        await clientSup(run, c).up().catch(() => undefined);
        yield { nodes: [clientIndex(await clientMidCommit(run, [c]))] };
        kills.total++;
        kills.finalClients++;
      }
      for (let c = 0; c < o.clients; c++) {
        await clientSup(run, c).up().catch(() => undefined);
        await run.wakeup.until(() => heldTx[c] !== undefined, 60_000);
        const t = heldTx[c];
        if (t === undefined) run.errors.push(`client ${c} never reached a commit point to be held at`);
        else held.push(t);
        yield { nodes: [clientIndex(c)], restart: false };
        kills.total++;
        kills.finalClients++;
      }
    },
    // What the shards resolved alone, then the final state.
    finish: async (run) => {
      const links = txShardSource(spec, { name: 'tx-kill-checker', clock });
      try {
        const scanner = new TxResolver(links.source, { clock }); // scan() only: it never resolves
        const tr = clock.nowMs();
        for (let i = 0; i < 200 && spec.nodes.some((_, s) => links.source(s) === undefined); i++) await run.sleep(20);
        let first = true;
        for (let i = 0; ; i++) {
          const { inDoubt } = await scanner.scan();
          if (first) inDoubtAfterFinalKills = inDoubt.length;
          first = false;
          if (inDoubt.length === 0) break;
          if (clock.nowMs() - tr > 60_000) {
            run.errors.push(`still in doubt 60 s after the final kills: ${inDoubt.map(txName).join(', ')}`);
            break;
          }
          await run.sleep(o.leaseMs / 2);
        }
        resolveMs = clock.nowMs() - tr;
        // The final state: one read-only transaction over every account (client slot `clients`, never used before).
        const reader = new TxClient(links.source, { client: o.clients, incarnation: 1, clock, faults: {} });
        for (let attempt = 0; attempt < 20; attempt++) {
          await reader.begin();
          const vals = new Map<number, { balance: bigint; writer: bigint }>();
          for (let k = 0; k < accounts; k++) vals.set(k, decodeAccount(await reader.read(k)));
          const r = await reader.commit();
          if (r.status === 'committed') {
            for (const [k, v] of vals) {
              finalBalances.set(k, v.balance);
              finalWriters.set(k, v.writer);
            }
            break;
          }
        }
        if (finalBalances.size !== accounts) run.errors.push('the final read of every account did not commit');
      } finally {
        links.close();
      }
    },
    // The client processes are not stopped in order: they die (a client killed for good already has).
    teardown: (run) => {
      for (let c = 0; c < o.clients; c++) run.sups[clientIndex(c)]?.destroy();
    },
    check: (run) => txCheck(o, run, { spec, histories, kills, held, inDoubtAfterFinalKills, resolveMs, finalBalances, finalWriters, t0 }),
  };
}

/** The checks of a tx run once every process stopped: every PM file (nothing in doubt, audit), then the histories (bank, atomicity, nothing lost). */
function txCheck(
  o: TxRealCrashOptions,
  run: RealCrashRun,
  r: { spec: ClusterSpec; histories: string[]; kills: TxRealCrashReport['kills']; held: string[]; inDoubtAfterFinalKills: number; resolveMs: number; finalBalances: Map<number, bigint>; finalWriters: Map<number, bigint>; t0: number },
): TxRealCrashReport {
  const { spec, histories, kills, held, inDoubtAfterFinalKills, resolveMs, finalBalances, finalWriters, t0 } = r;
  const clock = o.clock;
  const errors = run.errors;
  const accounts = o.shards * o.keysPerShard;
  let preparedAtEnd = 0;
  if (spec === undefined) return { seed: o.seed, kills, held: 0, transactions: { intents: 0, committed: 0, aborted: 0, unknown: 0, audits: 0 }, inDoubtAfterFinalKills, resolveMs, preparedAtEnd, lost: [], atomicity: [], bank: [], audit: [], errors, seconds: (clock.nowMs() - t0) / 1000, violations: errors.length };
  // Every PM file: nothing PREPARED, nothing locked (before recovery touches it), then recovered and audited.
  const audit: string[] = [];
  spec.nodes.forEach((n, i) => {
    try {
      const copy = `${n.pm}.check`;
      copyFileSync(n.pm, copy);
      const region = PmemRegion.open(copy, { clock });
      const nic = new Rnic(region);
      const server = txApp.open({ region, nic, clock, schedule: queueMicrotask, entropy: cryptoEntropy }, txApp.resolveOptions(txNodeAppOptions(spec, n.id))) as TxAppServer;
      const prepared = server.prepared();
      preparedAtEnd += prepared.size;
      for (const t of prepared.keys()) audit.push(`shard ${i}: ${txName(t)} still PREPARED`);
      for (let k = 0; k < server.geometry.keys; k++) {
        if (server.slot(k).lock !== 0n) {
          preparedAtEnd++;
          audit.push(`shard ${i}: slot ${k} still locked by ${txName(server.slot(k).lock)}`);
        }
      }
      server.recover();
      for (const p of server.audit()) audit.push(`shard ${i}: ${p.kind}: ${p.detail}`);
      server.close();
      nic.detach();
      region.close({ writeBack: false });
      rmSync(copy, { force: true });
    } catch (e) {
      audit.push(`shard ${i}: the final file does not open: ${(e as Error).message}`);
    }
  });
  // The histories.
  const intents = histories.flatMap((h) => readHistory(h));
  const byTxid = new Map(intents.map((i) => [i.txid, i]));
  const total = BigInt(100 * accounts);
  const accountNames = Array.from({ length: accounts }, (_, k) => k);
  const bank: string[] = [];
  const snapshots = intents.filter((i) => i.kind === 'audit').map((i) => ({ id: i.txid, type: i.status === 'committed' ? ('ok' as const) : ('info' as const), balances: new Map(Object.entries(i.balances ?? {}).map(([k, v]) => [Number(k), BigInt(v)])) }));
  if (finalBalances.size === accounts) {
    const r = checkBank(snapshots, { accounts: accountNames, total, final: finalBalances, negative: true });
    if (r.valid !== true) bank.push(...(r.anomalies.length > 0 ? r.anomalies.map((a) => `${a.kind} in ${a.id}: ${a.detail}`) : [r.reason ?? 'undecided']));
  }
  // Version chains: (txid, account) pairs installed in the final state's history.
  const present = new Set<string>();
  const atomicity: string[] = [];
  for (const [k, w0] of finalWriters) {
    let w = w0;
    for (let steps = 0; w !== 0n && steps <= intents.length; steps++) {
      const it = byTxid.get(String(w));
      if (it === undefined || it.kind !== 'transfer' || (it.a !== k && it.b !== k)) {
        atomicity.push(`account ${k}: version by ${txName(w)}, which no client wrote`);
        break;
      }
      present.add(`${it.txid}/${k}`);
      w = BigInt(it.a === k ? it.prevA! : it.prevB!);
    }
  }
  const lost: string[] = [];
  const counts = { intents: intents.length, committed: 0, aborted: 0, unknown: 0, audits: snapshots.length };
  for (const it of intents) {
    counts[it.status]++;
    if (it.kind !== 'transfer' || finalWriters.size !== accounts) continue;
    const pa = present.has(`${it.txid}/${it.a}`);
    const pb = present.has(`${it.txid}/${it.b}`);
    const name = txName(BigInt(it.txid));
    if (it.status === 'committed' && !(pa && pb)) (pa || pb ? atomicity : lost).push(`${name} committed but ${pa || pb ? 'partly' : 'not'} present (accounts ${it.a}: ${pa}, ${it.b}: ${pb})`);
    if (it.status === 'aborted' && (pa || pb)) atomicity.push(`${name} aborted but present (accounts ${it.a}: ${pa}, ${it.b}: ${pb})`);
    if (it.status === 'unknown' && pa !== pb) atomicity.push(`${name} undecided and partly present (accounts ${it.a}: ${pa}, ${it.b}: ${pb})`);
  }
  // A held transaction reached its commit point: the shards must have rolled it forward.
  for (const t of held) {
    const it = byTxid.get(t);
    if (it === undefined || it.kind !== 'transfer' || finalWriters.size !== accounts) continue;
    if (!present.has(`${t}/${it.a}`) || !present.has(`${t}/${it.b}`)) atomicity.push(`${txName(BigInt(t))} reached its commit point (held, then its client SIGKILLed) but the shards did not roll it forward`);
  }
  if (counts.committed === 0) errors.push('no transaction committed');
  const violations = lost.length + atomicity.length + bank.length + audit.length + errors.length + preparedAtEnd;
  return { seed: o.seed, kills, held: held.length, transactions: counts, inDoubtAfterFinalKills, resolveMs, preparedAtEnd, lost, atomicity, bank, audit, errors, seconds: (clock.nowMs() - t0) / 1000, violations };
}
