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
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createPrng } from '../pmem/index.js';
import { QueuePair } from '../flush/index.js';
import { RsLockClient, startLocalRsLock } from '../src/apps/rslock/index.js';
import { TcpLink } from '../src/transport/index.js';

/** What a benchmark client is: the structural interface both systems' clients have. */
export interface BlockStore {
  write(block: number, data: Uint8Array): Promise<void>;
  read(block: number): Promise<Uint8Array | null>;
  close(): Promise<void>;
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

/** dist/bench/rs-server.js, from the .ts (tsx) or the compiled .js of this module. */
export function rsServerFile(): string {
  const here = fileURLToPath(import.meta.url);
  const dir = here.endsWith('.ts') ? join(dirname(here), '..', 'dist', 'bench') : dirname(here);
  const file = join(dir, 'rs-server.js');
  if (!existsSync(file)) throw new Error(`${file} is missing: run npm run build:ts first`);
  return file;
}

/**
 * N node hosts of `app` in one child process (dist/bench/rs-server.js); resolves with their ports
 * once all listen. `stop` sends SIGTERM (SIGKILL after 5 s).
 */
export async function startReplicaProcess(app: string, nodes: number, appOptions: Record<string, unknown>, seed: number): Promise<{ ports: number[]; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [rsServerFile(), JSON.stringify({ app, nodes, appOptions, seed })], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(t);
  };
  try {
    const line = await new Promise<string>((resolve, reject) => {
      const rl = createInterface({ input: child.stdout! });
      const timer = setTimeout(() => reject(new Error('the rs bench replicas did not start within 20 s')), 20_000);
      rl.once('line', (l) => {
        clearTimeout(timer);
        rl.close();
        resolve(l);
      });
      child.once('exit', (code) => reject(new Error(`the rs bench replicas exited (${String(code)}) before listening`)));
    });
    return { ports: (JSON.parse(line) as { ports: number[] }).ports, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** The lock-based baseline (src/apps/rslock): CAS locks on a majority, out-of-place FLUSHed writes, validated speculative reads. */
export const lockBasedFactory: RsSystemFactory = {
  name: 'lock-based',
  description: 'lock-based replication (src/apps/rslock): one-sided CAS lock per block on its own cache line, majority quorum, write-combined out-of-place WRITE + FLUSH + release, speculative validated reads',
  links: ['in-process', 'tcp'],
  async start(nodes: number, o: RsStartOptions): Promise<RsDeployment> {
    const lastOpRoundTrips = (s: BlockStore): number | undefined => (s instanceof RsLockClient ? s.stats.lastOpRoundTrips : undefined);
    if (o.link === 'in-process') {
      const cl = startLocalRsLock(nodes, { app: { blocks: o.blocks, blockBytes: o.blockBytes }, nic: { drain: 'eager' }, seed: o.seed });
      return {
        client: async (i) => cl.client({ prng: createPrng(o.seed * 1009 + i) }),
        lastOpRoundTrips,
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
        const c = RsLockClient.connect(links, { prng: createPrng(o.seed * 1009 + i) });
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

/**
 * The factories to compare, PRISM-RS first when it is built. PRISM-RS joins here as one more
 * factory once src/apps/rs exports its client (RsClient).
 */
export const RS_FACTORIES: readonly RsSystemFactory[] = [lockBasedFactory];
