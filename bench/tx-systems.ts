/**
 * The systems `bench tx` compares (and the baselines' tests drive), one factory each, behind one
 * transaction interface: PRISM-TX (src/apps/tx), the FaRM-style and the FORD-style baselines
 * (src/apps/txlock). Every system runs S shards in this process, each on its own in-memory
 * region, NIC (eager drain, DDIO on) and in-process fabric (startLocalShards), and makes every
 * commit durable on every participant before it returns.
 */
import { systemClock, type Clock } from '../pmem/index.js';
import { parseTxWelcome, TxClient, txApp, type ShardConn, type TxOutcome, type TxValueKind } from '../src/apps/tx/index.js';
import { FarmTxClient, FordTxClient, parseTxLockWelcome, startLocalShards, txfarmApp, txfordApp, type TxLockConn, type LocalShards } from '../src/apps/txlock/index.js';
import type { App, AppServer } from '../src/apps/index.js';
import type { QueuePair } from '../flush/index.js';
import { nicWorkRequests, RoleTimer, type RoleTimes } from './nic-work.js';

/** One client's transactions, whatever the system. */
export interface TxApi {
  begin(): Promise<void>;
  /** `forUpdate`: the transaction will write the key (FORD and PRISM-TX lock it now; FaRM-style ignores the hint). */
  read(key: number, forUpdate?: boolean): Promise<Uint8Array>;
  write(key: number, value: Uint8Array): Promise<void>;
  commit(): Promise<TxOutcome>;
  rollback(): void;
  /** Round trips of the last commit (from the end of execution to the outcome; asynchronous unlocks not counted). */
  lastCommitRoundTrips(): number;
}

export interface TxDeployOptions {
  shards: number;
  keysPerShard: number;
  clients: number;
  value: TxValueKind;
  initialBalance: number;
  /** PRISM-TX: items per shard's arena (every committed write ALLOCATEs one). */
  items: number;
  seed: number;
  /** Baselines, test-only: commit without validating the read-only keys (a mutant the checks must catch). */
  skipValidation?: boolean;
}

export interface TxDeployment {
  client(i: number): TxApi;
  servers: readonly AppServer[];
  /** Work done by the shards' NICs and PM so far (summed over the shards). */
  work(): { wrs: number; messages: number; linesWrittenBack: number };
  /** Time spent so far in the shards' emulated NICs and in their server CPUs' passes (bench/nic-work.ts). */
  /** CPU by role so far, and the server-CPU passes timed so far. */
  roleTimes(): RoleTimes & { hostPasses: number };
  close(): void;
}

export interface TxSystemFactory {
  name: string;
  description: string;
  start(o: TxDeployOptions): TxDeployment;
}

function workOf(shards: LocalShards<AppServer>): () => { wrs: number; messages: number; linesWrittenBack: number } {
  return () => ({
    wrs: nicWorkRequests(shards.nics),
    messages: shards.nics.reduce((a, n) => a + n.stats.messages, 0),
    linesWrittenBack: shards.regions.reduce((a, r) => a + r.stats.linesWrittenBack, 0),
  });
}

function sourceOf<C>(connect: TxConnect, parse: (c: ReturnType<TxConnect>) => C): (s: number) => C {
  const conns: C[] = [];
  return (s) => (conns[s] ??= parse(connect(s)));
}

/** A connection to shard s: the queue pair and the shard's welcome (in-process shards or a World's nodes). */
export type TxConnect = (s: number) => { qp: QueuePair; welcome: Uint8Array };

export type TxSystemName = 'prism-tx' | 'farm' | 'ford';

/** The app (and its per-shard options) of `system`: the same for in-process shards and for a World's nodes. */
export function txSystemApp(system: TxSystemName, o: Pick<TxDeployOptions, 'shards' | 'keysPerShard' | 'clients' | 'value' | 'initialBalance' | 'items'>): { app: App<object>; options: (shard: number) => object } {
  if (system === 'prism-tx') return { app: txApp as never, options: (s) => ({ shard: s, shards: o.shards, keysPerShard: o.keysPerShard, clients: o.clients, items: o.items, value: o.value, initialBalance: o.initialBalance }) };
  return { app: (system === 'farm' ? txfarmApp : txfordApp) as never, options: (s) => ({ shard: s, shards: o.shards, keysPerShard: o.keysPerShard, clients: o.clients, value: o.value, initialBalance: o.initialBalance }) };
}

/** Client `i` of `system` over `connect` (one connection per shard, made on first use), as a TxApi. */
export function txClientApi(system: TxSystemName, connect: TxConnect, i: number, o: { clock: Clock; skipValidation?: boolean }): TxApi {
  if (system === 'prism-tx') {
    // A second connection per shard for round 2 (install, COMMITTED, release), which runs after
    // the commit is reported: the next transaction's reads do not queue behind it.
    const source = sourceOf(connect, (x) => parseTxWelcome(x.qp, x.welcome)) as (s: number) => ShardConn;
    const installSource = sourceOf(connect, (x) => parseTxWelcome(x.qp, x.welcome)) as (s: number) => ShardConn;
    const c = new TxClient(source, { client: i, incarnation: 1, clock: o.clock, faults: {}, installSource });
    return {
      begin: () => c.begin(),
      read: (k, forUpdate) => c.read(k, { forUpdate: forUpdate === true }),
      write: (k, v) => c.write(k, v),
      commit: () => c.commit(),
      rollback: () => c.rollback(),
      // The new values ride in the prepare record and are ALLOCATEd + FLUSHed in round 2's chain: the commit's two round trips are all.
      lastCommitRoundTrips: () => c.lastRoundTrips,
    };
  }
  const source = sourceOf(connect, (x) => parseTxLockWelcome(x.qp, x.welcome)) as (s: number) => TxLockConn;
  const lo = { client: i, incarnation: 1, skipValidation: o.skipValidation === true };
  const c = system === 'farm' ? new FarmTxClient(source, lo) : new FordTxClient(source, lo);
  return {
    begin: () => c.begin(),
    read: (k, forUpdate) => c.read(k, { forUpdate: forUpdate === true }),
    write: (k, v) => c.write(k, v),
    commit: () => c.commit(),
    rollback: () => c.rollback(),
    lastCommitRoundTrips: () => c.lastRoundTrips,
  };
}

function factory(system: TxSystemName, description: string): TxSystemFactory {
  return {
    name: system,
    description,
    start(o) {
      const { app, options } = txSystemApp(system, o);
      const timer = new RoleTimer();
      const shards = startLocalShards<object, AppServer>(timer.instrumentApp(app), o.shards, options, { nic: { drain: 'eager' }, seed: o.seed });
      return {
        servers: shards.servers,
        work: workOf(shards),
        roleTimes: () => ({ ...timer.times(), hostPasses: timer.hostPasses }),
        client: (i) => txClientApi(system, (s) => shards.connect(s), i, { clock: systemClock, ...(o.skipValidation === true ? { skipValidation: true } : {}) }),
        close: () => shards.close(),
      };
    },
  };
}

export const prismTxFactory: TxSystemFactory = factory('prism-tx', 'PRISM-TX (src/apps/tx): ALLOCATE + redirected FLUSH of the new items with prepare/validate/record by enhanced CAS + FLUSH (1 RTT), install + COMMITTED + release (1 RTT); the shard CPU only reclaims (sweeps superseded and aborted items back to the free lists), off the commit path');
export const farmFactory = factory('farm', 'FaRM-style (src/apps/txlock, app txfarm): LOCK by SEND to the shard CPU (locks + durable redo record), VALIDATE by batched READs, COMMIT record by WRITE + FLUSH, applied and unlocked by the CPU');
export const fordFactory = factory('ford', 'FORD-style (src/apps/txlock, app txford): CAS lock + speculative READ in execution, undo log WRITE + FLUSH with validation READs (1 RTT), in-place WRITE + selective FLUSH + COMMITTED (1 RTT), asynchronous write-unlatch');

/** The systems compared in one run. */
export const TX_FACTORIES: readonly TxSystemFactory[] = [prismTxFactory, farmFactory, fordFactory];
