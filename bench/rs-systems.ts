/**
 * The systems `bench rs` compares, one factory each: `start(nodes, opts)` deploys N replicas and
 * returns `client(i)` (a block store: write / read / close) and `close()`. PRISM-RS plugs in as
 * one more factory (prismRsFactory, once src/apps/rs has its client); the lock-based baseline
 * (src/apps/rslock) is always there.
 *
 * Links: 'in-process' — every replica on its own in-memory region, NIC and immediate in-process
 * fabric, in this process; 'tcp' — the replicas are node hosts in a child process
 * (dist/bench/rs-server.js, one node host per replica, each on its own loopback port), reached
 * by one TcpLink per client per replica.
 */
import { createPrng, seededEntropy } from '../pmem/index.js';
import { QueuePair } from '../flush/index.js';
import { RsClient, RsLocalCluster, RS_ITEM_HEADER_BYTES, type RsLayoutOptions } from '../src/apps/rs/index.js';
import { RsLockClient, startLocalRsLock, type RsLockStyle } from '../src/apps/rslock/index.js';
import { TcpLink } from '../src/transport/index.js';
import { benchDistFile, startServerChild } from './child.js';
import { nicWorkRequests } from './nic-work.js';

/** What a benchmark client is: the structural interface both systems' clients have. */
export interface BlockStore {
  write(block: number, data: Uint8Array): Promise<void>;
  read(block: number): Promise<Uint8Array | null>;
  close(): Promise<void>;
  /** Waits for work the client left running in the background (PRISM-RS: installs beyond the majority, buffer returns). */
  settle?(): Promise<void>;
}

export type RsLinkKind = 'in-process' | 'tcp';

export interface RsStartOptions {
  blocks: number;
  blockBytes: number;
  seed: number;
  link: RsLinkKind;
}

export interface RsDeployment {
  /** Client `i` (its own connections to every replica). */
  client(i: number): Promise<BlockStore>;
  /** Round trips of the store's last operation (phases: messages to several replicas in parallel count once), when the system counts them. */
  lastOpRoundTrips(store: BlockStore): number | undefined;
  /** Work requests every replica's NIC executed so far (in-process deployments; over TCP the NICs are another process's). */
  nicWorkRequests?(): number;
  close(): Promise<void>;
}

export interface RsSystemFactory {
  /** Short name (rows, charts). */
  name: string;
  /** What it is, for the report. */
  description: string;
  links: readonly RsLinkKind[];
  start(nodes: number, o: RsStartOptions): Promise<RsDeployment>;
}

/**
 * N node hosts of `app` in one child process (dist/bench/rs-server.js); resolves with their ports
 * once all listen.
 */
export async function startReplicaProcess(app: string, nodes: number, appOptions: Record<string, unknown>, seed: number): Promise<{ ports: number[]; stop(): Promise<void> }> {
  const { ready, stop } = await startServerChild<{ ports: number[] }>(benchDistFile('rs-server.js'), JSON.stringify({ app, nodes, appOptions, seed }), 'the rs bench replicas');
  return { ports: ready.ports, stop };
}

/** The lock-based baseline (src/apps/rslock): CAS locks on a majority, out-of-place FLUSHed writes, validated speculative reads. */
export const lockBasedFactory: RsSystemFactory = lockFactory(
  'lock-based',
  'lock-based replication per SIGMOD\'23 (src/apps/rslock, style sigmod23): one-sided CAS lock per block on its own cache line, majority quorum, write-combined out-of-place WRITE + FLUSH + release, speculative validated reads',
  'sigmod23',
);

/** The paper's baseline (src/apps/rslock, style 'paper'): lock → access → unlock for reads and writes, 3 round trips each. */
export const paperLockFactory: RsSystemFactory = lockFactory(
  'lock-paper',
  'plain lock-based replication, the kind PRISM (SOSP\'21) measured against (src/apps/rslock, style paper): every read and write takes the block\'s CAS lock on a majority, accesses the record (READ; or WRITE + FLUSH out of place), then releases the lock and waits for it — 3 round trips',
  'paper',
);

function lockFactory(name: string, description: string, style: RsLockStyle): RsSystemFactory {
  return {
    name,
    description,
    links: ['in-process', 'tcp'],
    async start(nodes: number, o: RsStartOptions): Promise<RsDeployment> {
      const lastOpRoundTrips = (s: BlockStore): number | undefined => (s instanceof RsLockClient ? s.stats.lastOpRoundTrips : undefined);
      if (o.link === 'in-process') {
        const cl = startLocalRsLock(nodes, { app: { blocks: o.blocks, blockBytes: o.blockBytes }, nic: { drain: 'eager' }, seed: o.seed });
        return {
          client: async (i) => cl.client({ style, prng: createPrng(o.seed * 1009 + i) }),
          lastOpRoundTrips,
          nicWorkRequests: () => nicWorkRequests(cl.nics),
          close: async () => cl.close(),
        };
      }
      const proc = await startReplicaProcess('rslock', nodes, { blocks: o.blocks, blockBytes: o.blockBytes }, o.seed);
      const clients: RsLockClient[] = [];
      return {
        async client(i: number): Promise<BlockStore> {
          const links = await Promise.all(proc.ports.map(async (port, n) => {
            const { link, welcome } = await TcpLink.connect({ port, name: `bench-rslock-${i}-${n}` });
            return { qp: new QueuePair(link), welcome };
          }));
          const c = RsLockClient.connect(links, { style, prng: createPrng(o.seed * 1009 + i) });
          clients.push(c);
          return c;
        },
        lastOpRoundTrips,
        async close(): Promise<void> {
          for (const c of clients) await c.close();
          await proc.stop();
        },
      };
    },
  };
}

/**
 * PRISM-RS's layout for a bench cell: `blocks` slots and one size class that holds a block's item
 * (32-byte header + value), with buffers for every block, the clients' unreturned buffers (a
 * return batch per client) and the installs in flight, with room to spare.
 */
export function prismRsBenchLayout(blocks: number, blockBytes: number): Partial<RsLayoutOptions> {
  let size = 64;
  while (size < RS_ITEM_HEADER_BYTES + blockBytes) size *= 2;
  return { blocks, classes: [{ sizeBytes: size, count: blocks * 4 }], mailboxBuffers: 128 };
}

/** PRISM-RS (src/apps/rs): ABD over durable PRISM chains — query, then ALLOCATE + redirected FLUSH + CAS gt + FLUSH on every replica, done at a majority. */
export const prismRsFactory: RsSystemFactory = {
  name: 'prism-rs',
  description: 'PRISM-RS (src/apps/rs): ABD over durable PRISM chains: write = tag query (1 RTT) + ALLOCATE/redirected FLUSH of the item/CAS gt/FLUSH slot chain on every live replica, done at a majority (1 RTT); read = one chain per replica — with a location hint a direct READ of exactly the item + READ of the slot (the item counts when it carries the tag of the slot) + FLUSH of the slot, without one (and on one spare replica always) the slot(s) + bounded indirect READ + FLUSH —, done at a majority once the item of the highest tag is in hand from any replica (a moved slot answers its tag, the spare the item: one round trip), write-back when the majority disagreed',
  links: ['in-process', 'tcp'],
  async start(nodes: number, o: RsStartOptions): Promise<RsDeployment> {
    const layout = prismRsBenchLayout(o.blocks, o.blockBytes);
    const lastOpRoundTrips = (s: BlockStore): number | undefined => (s instanceof RsClient ? s.stats.lastOpRoundTrips : undefined);
    const options = (i: number) => ({ writerId: i + 1, entropy: seededEntropy(createPrng(o.seed * 1013 + i)) });
    if (o.link === 'in-process') {
      const cl = RsLocalCluster.start({ replicas: nodes, app: { layout }, drain: 'eager', seed: o.seed });
      return { client: async (i) => cl.client(options(i)), lastOpRoundTrips, nicWorkRequests: () => cl.nicWorkRequests(), close: () => cl.close() };
    }
    const proc = await startReplicaProcess('rs', nodes, { layout }, o.seed);
    const clients: RsClient[] = [];
    return {
      async client(i: number): Promise<BlockStore> {
        const conns = await Promise.all(proc.ports.map(async (port, n) => {
          const { link, welcome } = await TcpLink.connect({ port, name: `bench-rs-${i}-${n}` });
          return { qp: new QueuePair(link), welcome };
        }));
        const c = new RsClient(conns, options(i));
        clients.push(c);
        return c;
      },
      lastOpRoundTrips,
      async close(): Promise<void> {
        for (const c of clients) await c.close().catch(() => undefined);
        await proc.stop();
      },
    };
  },
};

/** The factories compared in one run: PRISM-RS, the SIGMOD'23-guided lock-based baseline and the paper's plain one, cell by cell. */
export const RS_FACTORIES: readonly RsSystemFactory[] = [prismRsFactory, lockBasedFactory, paperLockFactory];
