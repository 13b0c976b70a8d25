/**
 * The systems `bench tx` compares (and the baselines' tests drive), one factory each, behind one
 * transaction interface: PRISM-TX (src/apps/tx), the FaRM-style and the FORD-style baselines
 * (src/apps/txlock). Every system runs S shards in this process, each on its own in-memory
 * region, NIC (eager drain, DDIO on) and in-process fabric (startLocalShards), and makes every
 * commit durable on every participant before it returns.
 */
import { systemClock } from '../pmem/index.js';
import { parseTxWelcome, TxClient, txApp, type ShardConn, type TxOutcome, type TxValueKind } from '../src/apps/tx/index.js';
import { FarmTxClient, FordTxClient, parseTxLockWelcome, startLocalShards, txfarmApp, txfordApp, type TxLockConn, type LocalShards } from '../src/apps/txlock/index.js';
import type { AppServer } from '../src/apps/index.js';

/** One client's transactions, whatever the system. */
export interface TxApi {
  begin(): Promise<void>;
  /** `forUpdate`: the transaction will write the key (FORD locks it now; the others ignore the hint). */
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
  close(): void;
}

export interface TxSystemFactory {
  name: string;
  description: string;
  start(o: TxDeployOptions): TxDeployment;
}

function workOf(shards: LocalShards<AppServer>): () => { wrs: number; messages: number; linesWrittenBack: number } {
  return () => ({
    wrs: shards.nics.reduce((a, n) => a + n.stats.wrs, 0),
    messages: shards.nics.reduce((a, n) => a + n.stats.messages, 0),
    linesWrittenBack: shards.regions.reduce((a, r) => a + r.stats.linesWrittenBack, 0),
  });
}

function sourceOf<C>(shards: LocalShards<AppServer>, parse: (c: ReturnType<LocalShards<AppServer>['connect']>) => C): (s: number) => C {
  const conns: C[] = [];
  return (s) => (conns[s] ??= parse(shards.connect(s)));
}

export const prismTxFactory: TxSystemFactory = {
  name: 'prism-tx',
  description: 'PRISM-TX (src/apps/tx): ALLOCATE + FLUSH of the new values, then prepare/validate/record by enhanced CAS + FLUSH (1 RTT), install + COMMITTED + release (1 RTT); no server CPU',
  start(o) {
    const shards = startLocalShards<object, AppServer>(txApp as never, o.shards, (s) => ({ shard: s, shards: o.shards, keysPerShard: o.keysPerShard, clients: o.clients, items: o.items, value: o.value, initialBalance: o.initialBalance }), { nic: { drain: 'eager' }, seed: o.seed });
    return {
      servers: shards.servers,
      work: workOf(shards),
      client(i) {
        const source = sourceOf(shards, (c) => parseTxWelcome(c.qp, c.welcome));
        const c = new TxClient(source as (s: number) => ShardConn, { client: i, incarnation: 1, clock: systemClock, faults: {} });
        let wrote = false;
        return {
          begin: async () => {
            wrote = false;
            await c.begin();
          },
          read: (k) => c.read(k),
          write: async (k, v) => {
            wrote = true;
            await c.write(k, v);
          },
          commit: () => c.commit(),
          rollback: () => c.rollback(),
          // The ALLOCATE + FLUSH of the new values is a round trip of its own before the two of the commit.
          lastCommitRoundTrips: () => c.lastRoundTrips + (wrote && c.lastRoundTrips > 0 ? 1 : 0),
        };
      },
      close: () => shards.close(),
    };
  },
};

function lockFactory(name: string, description: string, protocol: 'farm' | 'ford'): TxSystemFactory {
  return {
    name,
    description,
    start(o) {
      const app = protocol === 'farm' ? txfarmApp : txfordApp;
      const shards = startLocalShards<object, AppServer>(app as never, o.shards, (s) => ({ shard: s, shards: o.shards, keysPerShard: o.keysPerShard, clients: o.clients, value: o.value, initialBalance: o.initialBalance }), { nic: { drain: 'eager' }, seed: o.seed });
      return {
        servers: shards.servers,
        work: workOf(shards),
        client(i) {
          const source = sourceOf(shards, (c) => parseTxLockWelcome(c.qp, c.welcome));
          const c = protocol === 'farm' ? new FarmTxClient(source as (s: number) => TxLockConn, { client: i, incarnation: 1, skipValidation: o.skipValidation === true }) : new FordTxClient(source as (s: number) => TxLockConn, { client: i, incarnation: 1, skipValidation: o.skipValidation === true });
          return {
            begin: () => c.begin(),
            read: (k, forUpdate) => c.read(k, { forUpdate: forUpdate === true }),
            write: (k, v) => c.write(k, v),
            commit: () => c.commit(),
            rollback: () => c.rollback(),
            lastCommitRoundTrips: () => c.lastRoundTrips,
          };
        },
        close: () => shards.close(),
      };
    },
  };
}

export const farmFactory = lockFactory('farm', 'FaRM-style (src/apps/txlock, app txfarm): LOCK by SEND to the shard CPU (locks + durable redo record), VALIDATE by batched READs, COMMIT record by WRITE + FLUSH, applied and unlocked by the CPU', 'farm');
export const fordFactory = lockFactory('ford', 'FORD-style (src/apps/txlock, app txford): CAS lock + speculative READ in execution, undo log WRITE + FLUSH with validation READs (1 RTT), in-place WRITE + selective FLUSH + COMMITTED (1 RTT), asynchronous write-unlatch', 'ford');

/** The systems compared in one run. */
export const TX_FACTORIES: readonly TxSystemFactory[] = [prismTxFactory, farmFactory, fordFactory];
