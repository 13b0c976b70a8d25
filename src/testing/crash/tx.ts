/**
 * PRISM-TX on the explorer (DESIGN §5, §8): S shards (nodes), concurrent TxClients, and a resolver
 * agent that scans the shards while the clients run and resolves every transaction it finds in
 * doubt twice in a row (a lease that ran out: it may fence a slow client's prepare, which then
 * aborts), and after a node restarted or a client crashed.
 *
 * Workloads:
 * - 'append' (list-append, as Elle wants it): an append transaction reads two keys (often on two
 *   shards) and appends its unique element to both; a read transaction reads two or three keys.
 *   Checks, after the resolver settled everything: nothing in doubt is left (no lock, no PREPARED
 *   record); every committed transaction fully present, every aborted one fully absent, every
 *   undecided one (cut by a crash) all-or-nothing; no duplicate or unknown element; every list a
 *   committed transaction read is a prefix of the final list (durable reads, no aborted read);
 *   no fractured read (a committed transaction saw a multi-key append on one key but not the
 *   other); and the Elle-style dependency-cycle check of src/check (checkListAppend).
 * - 'bank': transfers between two accounts and read-only audits of every account: every committed
 *   audit and the final state sum to the initial total (src/check's checkBank).
 * Image tuples (every shard crashes at a crash point, recovers from its image, then the resolver
 * runs) and crash runs (shard subsets and clients crash mid-run; shards restart while the others
 * go on; the whole history is judged).
 */
import { bool, intIn, isInvariantError, oneOf, PmrpcError, resolveOptions, type Clock, type OptionChecks, type PmemRegion, type Prng } from '../../../pmem/index.js';
import type { AppHost, AppProblem } from '../../apps/index.js';
import { parseTxWelcome, TxAgent, TX_MUTANTS, txApp, txFaultsFor, TxClient, TxResolver, txName, type ShardConn, type TxAppOptions, type TxAppServer, type TxOutcome } from '../../apps/tx/index.js';
import { checkBank, checkListAppend, cutRecords, type ListAppendTxn } from '../../check/index.js';
import type { ExplorerApp } from './explorer.js';
import type { World } from './world.js';

export interface TxWorkloadOptions {
  workload: 'append' | 'bank';
  shards: number;
  clients: number;
  txPerClient: number;
  keys: number;
  mutant: string | undefined;
  /** The resolver agent scans while clients run (false: only after restarts, client crashes and at the end). */
  agent: boolean;
}

export const TX_WORKLOAD_DEFAULTS: Readonly<TxWorkloadOptions> = Object.freeze({ workload: 'append', shards: 2, clients: 3, txPerClient: 8, keys: 4, mutant: undefined, agent: true });

/**
 * What `pmrpc crash-test --app tx` (and its plain mutant sweep) runs when not told otherwise: images
 * per crash point, crash runs. Breadth over depth: a crash run costs one workload run (~0.1 s), a
 * seed's image tuples at 16 per point ~10,000 recoveries, so a sweep reaches more seeds — more
 * drawn schedules and configurations — per minute (at 200 images per point one seed took ~100 s).
 */
export const TX_CLI_DEFAULTS = Object.freeze({ imagesPerPoint: 16, crashRuns: 48 });

const TX_WORKLOAD_CHECKS: OptionChecks<TxWorkloadOptions> = {
  workload: oneOf(['append', 'bank']),
  shards: intIn(1, 8),
  clients: intIn(1, 8),
  txPerClient: intIn(1, 200),
  keys: intIn(2, 64),
  agent: bool,
  mutant: (_name, v) => void txFaultsFor(v as string | undefined),
};

/** A mutant's pins (TxMutant.pins: the workload its race needs) stand unless the options say otherwise. */
export function resolveTxWorkload(options: Partial<TxWorkloadOptions>): TxWorkloadOptions {
  const pins = TX_MUTANTS.find((m) => m.name === options.mutant)?.pins ?? {};
  const given = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as Partial<TxWorkloadOptions>;
  return resolveOptions<TxWorkloadOptions>(TX_WORKLOAD_DEFAULTS, { ...pins, ...given }, TX_WORKLOAD_CHECKS);
}

/** One micro-operation of a list-append history (the shape src/check's Elle-style checker reads). */
export type TxMop = { f: 'r'; key: number; value: number[] | null } | { f: 'append'; key: number; value: number };

/** One transaction of the history: its outcome as the client learned it, with logical call / return times. */
export interface TxRecord {
  id: number;
  process: number;
  type: 'ok' | 'fail' | 'info';
  mops: TxMop[];
  kind: 'append' | 'read' | 'transfer' | 'audit';
  /** bank: balances read (key → balance) and the sum an audit saw. */
  balances?: Map<number, bigint>;
  call: number;
  ret: number | undefined;
  txid?: string;
}

export const BANK_BALANCE = 100;
/** Scans the agent makes while clients run (then it only polls on the logical clock). */
export const AGENT_SCANS_MAX = 40;

const listBytes = (l: readonly number[]): Uint8Array => {
  const b = new Uint8Array(l.length * 4);
  const dv = new DataView(b.buffer);
  l.forEach((x, i) => dv.setUint32(i * 4, x, true));
  return b;
};
const bytesList = (b: Uint8Array): number[] => {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  return Array.from({ length: b.length >> 2 }, (_, i) => dv.getUint32(i * 4, true));
};
const balanceOf = (b: Uint8Array): bigint => new DataView(b.buffer, b.byteOffset, b.byteLength).getBigInt64(0, true);
const balanceBytes = (v: bigint): Uint8Array => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigInt64(0, v, true);
  return b;
};

function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimer(ms, resolve));
}

export type TxExplorerApp = ExplorerApp<{ time: number }> & { history(): TxRecord[]; outcomes(): Record<string, number> };

/** The history as of logical time t: outcomes delivered before t stand; the rest are 'info' (may or may not have happened). */
export function cutTxHistory(h: readonly TxRecord[], t: number): TxRecord[] {
  return cutRecords(h, t, (r) => ({ ...r, type: 'info' as const, ret: undefined }));
}

/** Checks a list-append history against the final lists (see the file comment). */
export function checkAppendHistory(history: readonly TxRecord[], finals: ReadonlyMap<number, number[]>): AppProblem[] {
  const out: AppProblem[] = [];
  const writer = new Map<number, TxRecord>();
  for (const r of history) for (const m of r.mops) if (m.f === 'append') writer.set(m.value, r);
  for (const [k, l] of finals) {
    const seen = new Set<number>();
    for (const x of l) {
      if (seen.has(x)) out.push({ kind: 'duplicate', detail: `key ${k}: element ${x} twice in [${l.join(',')}]` });
      seen.add(x);
      const w = writer.get(x);
      if (w === undefined || !w.mops.some((m) => m.f === 'append' && m.key === k && m.value === x)) out.push({ kind: 'garbage', detail: `key ${k}: element ${x} was appended by no transaction to this key` });
    }
  }
  for (const r of history) {
    const apps = r.mops.filter((m): m is { f: 'append'; key: number; value: number } => m.f === 'append');
    const present = apps.map((m) => finals.get(m.key)?.includes(m.value) === true);
    const name = `transaction ${r.id} (${r.txid ?? '?'}, client ${r.process})`;
    if (r.type === 'ok' && present.some((p) => !p)) out.push({ kind: 'atomicity', detail: `${name} committed but its append to key ${apps[present.indexOf(false)]!.key} is absent: committed = durable on every participant` });
    if (r.type === 'fail' && present.some((p) => p)) out.push({ kind: 'atomicity', detail: `${name} aborted but its append to key ${apps[present.indexOf(true)]!.key} is present` });
    if (r.type === 'info' && present.some((p) => p) && present.some((p) => !p)) out.push({ kind: 'atomicity', detail: `${name} undecided and partly present: appended to key(s) ${apps.filter((_, i) => present[i]).map((m) => m.key).join(',')} but not ${apps.filter((_, i) => !present[i]).map((m) => m.key).join(',')}` });
    if (r.type !== 'ok') continue;
    const reads = r.mops.filter((m): m is { f: 'r'; key: number; value: number[] } => m.f === 'r' && m.value !== null);
    for (const m of reads) {
      const f = finals.get(m.key) ?? [];
      if (m.value.some((x, i) => f[i] !== x)) out.push({ kind: 'read', detail: `${name} read key ${m.key} = [${m.value.join(',')}], not a prefix of the final [${f.join(',')}] (a read a crash took back, or an aborted read)` });
      for (const x of m.value) if (writer.get(x)?.type === 'fail') out.push({ kind: 'aborted-read', detail: `${name} read element ${x} of aborted transaction ${writer.get(x)!.id} in key ${m.key}` });
    }
    for (const a of reads) {
      for (const b of reads) {
        if (a.key >= b.key) continue;
        for (const x of new Set([...(finals.get(a.key) ?? []), ...(finals.get(b.key) ?? [])])) {
          const w = writer.get(x);
          if (w === undefined || !w.mops.some((m) => m.f === 'append' && m.key === a.key) || !w.mops.some((m) => m.f === 'append' && m.key === b.key)) continue;
          if (a.value.includes(x) !== b.value.includes(x)) out.push({ kind: 'fractured-read', detail: `${name} saw transaction ${w.id}'s append in key ${a.value.includes(x) ? a.key : b.key} but not in key ${a.value.includes(x) ? b.key : a.key}` });
        }
      }
    }
  }
  return out;
}

/** The bank check (src/check's checkBank): every committed audit, and the final balances, sum to the total. */
export function checkBankHistory(history: readonly TxRecord[], finals: ReadonlyMap<number, bigint>, total: bigint): AppProblem[] {
  const audits = history.filter((r) => r.kind === 'audit').map((r) => ({ id: r.id, type: r.type, balances: r.type === 'ok' ? (r.balances ?? null) : null }));
  const res = checkBank(audits, { accounts: [...finals.keys()], total, final: finals, negative: true });
  const out: AppProblem[] = res.anomalies.map((a) => ({ kind: 'conservation', detail: `${a.kind}: ${a.detail}` }));
  if (res.valid === 'unknown') out.push({ kind: 'undecided', detail: `the bank check could not decide: ${res.reason ?? '?'}` });
  return out;
}

/**
 * The Elle-style list-append check (src/check's checkListAppend) of the history with crash events
 * removed, plus one transaction that reads every final list: serializability (G0, G1a–c,
 * G-single, G2). A check that cannot decide is a violation.
 */
export function checkAppendSerializable(history: readonly TxRecord[], finals: ReadonlyMap<number, number[]>): AppProblem[] {
  const end = history.reduce((m, r) => Math.max(m, r.ret ?? r.call), 0) + 1;
  const txns: ListAppendTxn[] = history.map((r) => ({ id: r.id, process: r.process, type: r.type, mops: r.mops, call: r.call, ...(r.ret !== undefined ? { ret: r.ret } : {}) }));
  txns.push({ id: 0, process: -1, type: 'ok', mops: [...finals].map(([key, value]) => ({ f: 'r' as const, key, value })), call: end, ret: end + 1 });
  const res = checkListAppend(txns);
  const out: AppProblem[] = res.anomalies.map((a) => ({ kind: `elle-${a.kind}`, detail: `${a.detail}${a.cycle !== undefined ? ` (cycle ${a.cycle.map((c) => `${String(c.from)} -${c.edge}${c.key !== undefined ? `:${String(c.key)}` : ''}-> ${String(c.to)}`).join(', ')})` : ''}` }));
  if (res.valid === false && out.length === 0) out.push({ kind: 'elle', detail: 'the list-append check failed' });
  if (res.valid === 'unknown') out.push({ kind: 'undecided', detail: `the list-append check could not decide: ${res.reason ?? '?'}` });
  return out;
}

/** A fresh PRISM-TX explorer app (it holds the workload's history; workload() starts it afresh). */
export function txExplorerApp(options: Partial<TxWorkloadOptions> = {}): TxExplorerApp {
  const w = resolveTxWorkload(options);
  const faults = txFaultsFor(w.mutant);
  const mutantExplore = TX_MUTANTS.find((m) => m.name === w.mutant)?.explore;
  const keysPerShard = Math.ceil(w.keys / w.shards);
  const appOptions = (n: number): TxAppOptions =>
    txApp.resolveOptions({ shard: n, shards: w.shards, keysPerShard, clients: w.clients + 1, items: keysPerShard + 2 * w.clients * w.txPerClient + 8, value: w.workload === 'bank' ? 'balance' : 'list', initialBalance: BANK_BALANCE, faults });
  const regionBytes = txApp.minRegionBytes(appOptions(0)) + 64;
  const total = BigInt(BANK_BALANCE * keysPerShard * w.shards);
  const allKeys = Array.from({ length: keysPerShard * w.shards }, (_, k) => k);
  let now = 0;
  let history: TxRecord[] = [];
  let crashedClients = new Set<number>();
  let conns: Array<Array<ShardConn | undefined>> = [];
  let live: World | undefined;
  let wakeAgent = false;
  let nextId = 1;
  const counts: Record<string, number> = {};
  /** Clients and agents of the live run that a broken invariant stopped (PMRPC_ERR_INVARIANT): each is a violation of kind 'invariant'. */
  let stopped: string[] = [];
  let liveClients: TxClient[] = [];
  const invariantProblems = (label: string): AppProblem[] => [
    ...stopped.map((d) => ({ kind: 'invariant', detail: `${label}${d}` })),
    // A client whose last round 2 broke one after the workload ended (it threw from no call).
    ...liveClients.flatMap((cl) => (cl.broken !== undefined && !stopped.some((d) => d.startsWith(`client ${cl.client} `)) ? [{ kind: 'invariant', detail: `${label}client ${cl.client} stopped: ${cl.broken.message}` }] : [])),
  ];

  /** Client c's way to shard s (c = w.clients: the agent; -1: a checker's resolver). */
  const sourceFor =
    (world: World, c: number, table: Array<Array<ShardConn | undefined>>) =>
    (s: number): ShardConn | undefined => {
      const row = (table[c + 1] ??= []);
      const cur = row[s];
      if (cur !== undefined && cur.qp.link.closed !== true) return cur;
      if (crashedClients.has(c)) return undefined;
      const node = world.nodes[s];
      if (node === undefined || node.crashed || node.server === undefined) return undefined;
      try {
        const { qp, welcome } = world.connect(s, new Uint8Array(0), c);
        row[s] = parseTxWelcome(qp, welcome);
        return row[s];
      } catch {
        return undefined;
      }
    };

  /** Settles everything in doubt with a fresh resolver; then reads every key from the shards. */
  const judge = async (world: World, h: TxRecord[], label: string): Promise<AppProblem[]> => {
    const out: AppProblem[] = [];
    const table: Array<Array<ShardConn | undefined>> = [];
    const resolver = new TxResolver(sourceFor(world, -1, table), { clock: world.clock, faults });
    let done = false;
    let left: bigint[] = [];
    void resolver.resolveAll(12).then(
      (r) => {
        left = r.left;
        done = true;
      },
      (e: unknown) => {
        done = true;
        out.push({ kind: 'resolver', detail: `${label}the resolver failed: ${String(e instanceof Error ? e.message : e)}` });
      },
    );
    const r = await world.run(() => done, 400_000);
    if (r.status !== 'done') out.push({ kind: 'resolver', detail: `${label}the resolver did not finish (${r.status})` });
    if (left.length > 0) {
      const state = world.nodes.map((n) => (n.crashed ? `shard ${n.index}: down` : `shard ${n.index}: ${JSON.stringify((n.server as TxAppServer).inspect(), (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}`)).join('; ');
      out.push({ kind: 'prepared-forever', detail: `${label}still in doubt after resolution: ${left.map(txName).join(', ')} (${state})` });
    }
    // The NICs drain (as they do eventually) before the state is read from visible memory.
    for (const node of world.nodes) if (!node.crashed) node.nic.drainAll();
    for (const node of world.nodes) if (!node.crashed) for (const p of node.server!.audit()) out.push({ kind: p.kind, detail: `${label}shard ${node.index}: ${p.detail}` });
    if (out.length > 0) return out;
    for (const node of world.nodes) {
      const s = node.server as TxAppServer;
      if (s.prepared().size > 0) out.push({ kind: 'prepared-forever', detail: `${label}shard ${node.index} still holds PREPARED records: ${[...s.prepared().keys()].map(txName).join(', ')}` });
    }
    const values = new Map<number, Uint8Array>();
    for (const k of allKeys) {
      const node = world.nodes[k % w.shards]!;
      const v = (node.server as TxAppServer).value(Math.floor(k / w.shards));
      if (v === undefined) out.push({ kind: 'slot', detail: `${label}key ${k}: no valid value` });
      else {
        if (v.lock !== 0n) out.push({ kind: 'prepared-forever', detail: `${label}key ${k} still locked by ${txName(v.lock)}` });
        values.set(k, v.value);
      }
    }
    if (w.workload === 'append') {
      const finals = new Map([...values].map(([k, v]) => [k, bytesList(v)]));
      for (const p of [...checkAppendHistory(h, finals), ...checkAppendSerializable(h, finals)]) out.push({ ...p, detail: label + p.detail });
    } else {
      for (const p of checkBankHistory(h, new Map([...values].map(([k, v]) => [k, balanceOf(v)])), total)) out.push({ ...p, detail: label + p.detail });
    }
    return out;
  };

  const runClient = async (world: World, c: number, prng: Prng): Promise<void> => {
    const client = new TxClient(sourceFor(world, c, conns), { client: c, incarnation: 1, clock: world.clock, faults });
    liveClients.push(client);
    for (let i = 0; i < w.txPerClient; i++) {
      if (crashedClients.has(c)) return;
      try {
        await client.begin();
      } catch (e) {
        if (isInvariantError(e)) stopped.push(`client ${c} stopped: ${e.message}`);
        return; // its previous transaction could not be settled (a shard stayed down): the client retires
      }
      const r = prng.int(0, 99);
      const pick = (): number => allKeys[prng.int(0, allKeys.length - 1)]!;
      const a = pick();
      let b = pick();
      if (b === a) b = (a + 1) % allKeys.length;
      const rec: TxRecord = { id: nextId++, process: c, type: 'info', mops: [], kind: 'read', call: ++now, ret: undefined };
      history.push(rec);
      let outcome: TxOutcome | undefined;
      try {
        if (w.workload === 'append') {
          const keys = r < 60 ? [a, b] : r < 85 ? [a, b] : [a, b, pick()].filter((x, j, arr) => arr.indexOf(x) === j);
          rec.kind = r < 60 ? 'append' : 'read';
          for (const k of keys) rec.mops.push({ f: 'r', key: k, value: bytesList(await client.read(k, { forUpdate: rec.kind === 'append' })) });
          if (rec.kind === 'append') {
            for (const k of keys) {
              const l = (rec.mops.find((m) => m.f === 'r' && m.key === k) as { value: number[] }).value;
              await client.write(k, listBytes([...l, rec.id]));
              rec.mops.push({ f: 'append', key: k, value: rec.id });
            }
          }
        } else if (r < 65) {
          rec.kind = 'transfer';
          const x = BigInt(prng.int(1, 5));
          const va = balanceOf(await client.read(a, { forUpdate: true }));
          const vb = balanceOf(await client.read(b, { forUpdate: true }));
          await client.write(a, balanceBytes(va - x));
          await client.write(b, balanceBytes(vb + x));
        } else {
          rec.kind = 'audit';
          rec.balances = new Map();
          for (const k of allKeys) rec.balances.set(k, balanceOf(await client.read(k)));
        }
      } catch {
        client.rollback();
        if (crashedClients.has(c)) return;
        rec.type = 'fail'; // nothing of it was prepared anywhere
        rec.mops = rec.mops.filter((m) => m.f === 'r');
        rec.ret = ++now;
        counts.readFailed = (counts.readFailed ?? 0) + 1;
        continue;
      }
      try {
        outcome = await client.commit();
      } catch (e) {
        if (isInvariantError(e)) stopped.push(`client ${c} stopped: ${e.message}`);
        if (crashedClients.has(c)) return;
        counts.commitThrew = (counts.commitThrew ?? 0) + 1;
        rec.txid = String(e instanceof PmrpcError ? e.code : e);
        return; // outcome unknown ('info'); the client retires
      }
      if (crashedClients.has(c)) return; // a crashed client never learned the outcome
      rec.txid = txName(outcome.txid);
      rec.type = outcome.status === 'committed' ? 'ok' : outcome.status === 'aborted' ? 'fail' : 'info';
      counts[outcome.status] = (counts[outcome.status] ?? 0) + 1;
      if (outcome.status !== 'unknown') rec.ret = ++now;
      else return;
    }
  };

  /** The resolver agent (a shard whose clients' leases ran out, or a restarted shard's). */
  const runAgent = async (world: World, isDone: () => boolean): Promise<void> => {
    const agent = new TxAgent(sourceFor(world, w.clients, conns), { clock: world.clock, faults });
    try {
      await agentLoop(agent, world, isDone);
    } catch (e) {
      if (!isInvariantError(e)) throw e;
      stopped.push(`the resolver agent stopped: ${e.message}`);
    }
  };
  const agentLoop = async (agent: TxAgent, world: World, isDone: () => boolean): Promise<void> => {
    let scans = 0;
    while (!isDone()) {
      if (w.agent && scans < AGENT_SCANS_MAX) {
        scans++;
        await agent.pass();
        continue;
      }
      await sleep(world.clock, 2);
      if (wakeAgent) {
        wakeAgent = false;
        await agent.resolveAll(4);
      }
    }
  };

  const app: TxExplorerApp = {
    name: 'tx',
    ...(mutantExplore !== undefined ? { exploreDefaults: mutantExplore } : {}),
    nodes: w.shards,
    clients: w.clients,
    regionBytes,
    history: () => history,
    outcomes: () => ({ ...counts }),
    format(region: PmemRegion, n: number): void {
      txApp.format(region, appOptions(n));
    },
    open(host: AppHost, n: number) {
      if (live !== undefined && live.nodes[n]?.crashed === true) wakeAgent = true; // a restart: its agent resolves
      return txApp.open(host, appOptions(n));
    },
    async workload(world: World, prng: Prng): Promise<void> {
      now = 0;
      history = [];
      nextId = 1;
      crashedClients = new Set();
      stopped = [];
      liveClients = [];
      conns = [];
      live = world;
      wakeAgent = false;
      for (const k of Object.keys(counts)) delete counts[k];
      let finished = 0;
      const clients = Array.from({ length: w.clients }, (_, c) => {
        const p = prng.fork();
        return runClient(world, c, p).finally(() => void finished++);
      });
      await Promise.all([...clients, runAgent(world, () => finished === w.clients)]);
      live = undefined;
    },
    crashClient(c: number): void {
      if (!Number.isSafeInteger(c) || c < 0 || c >= w.clients) throw new RangeError(`client must be in [0, ${w.clients}), got ${String(c)}`);
      crashedClients.add(c);
      wakeAgent = true;
      for (const l of conns[c + 1] ?? []) l?.qp.close();
    },
    snapshot(): { time: number } {
      return { time: ++now };
    },
    async checkLive(world: World): Promise<AppProblem[]> {
      const out = await judge(world, cutTxHistory(history, Number.POSITIVE_INFINITY), 'live: ');
      return [...invariantProblems('live: '), ...out];
    },
    async checkRecovered(world: World, snap: { time: number }): Promise<AppProblem[]> {
      return judge(world, cutTxHistory(history, snap.time), '');
    },
    async checkHistory(world: World): Promise<AppProblem[]> {
      const out = await judge(world, cutTxHistory(history, Number.POSITIVE_INFINITY), '');
      return [...invariantProblems(''), ...out];
    },
    replayArgs(): string {
      // What the CLI resolves for this mutant (its workload pins included): a plain run of a pinned mutant names the defaults.
      const d = resolveTxWorkload({ mutant: w.mutant });
      return [
        '--app tx',
        w.workload !== d.workload ? `--workload ${w.workload}` : '',
        w.shards !== d.shards ? `--nodes ${w.shards}` : '',
        w.clients !== d.clients ? `--clients ${w.clients}` : '',
        w.txPerClient !== d.txPerClient ? `--requests ${w.txPerClient}` : '',
        w.keys !== d.keys ? `--keys ${w.keys}` : '',
        w.mutant !== undefined ? `--mutant ${w.mutant}` : '',
        !w.agent ? '--no-agent' : '',
      ]
        .filter((x) => x !== '')
        .join(' ');
    },
  };
  return app;
}

export { TX_MUTANTS };
