/**
 * The lock-based replication baseline (src/apps/rslock) on the one explorer, through the
 * replicated-register workload and checkers of register.ts: N replicas, concurrent clients
 * writing and reading blocks, every node crashed at once at every crash point (PM survives) and
 * recovered from its images. A block holds its u64 value repeated over `blockBytes` (three cache
 * lines of record: a crash can tear it), and a read of bytes that do not repeat one value returns
 * a value no write wrote, which the checker reports. Checks: durable linearizability per block,
 * acknowledged writes not lost, every replica's audit (locks released, records valid).
 *
 * Failure model of the baseline: replicas crash and restart; a client that dies holding locks is
 * outside it (its locks stay held: see client.ts), so crash runs with client crashes are not this
 * app's to pass.
 */
import { createPrng, definedOptions, PmrpcError, type PmemRegion } from '../../../pmem/index.js';
import { findRsLockMutant, RSLOCK_MUTANTS, RsLockClient, rslockApp, RsLockErrorCodes, type RsLockAppServer } from '../../apps/rslock/index.js';
import { registerExplorerApp, type RegisterExplorerApp, type RegisterSystem, type RegisterWorkloadOptions } from './register.js';
import type { World } from './world.js';

export interface RsLockWorkloadOptions extends Omit<RegisterWorkloadOptions, 'mutant' | 'pattern'> {
  /** Bytes per block value (the u64 repeated). */
  blockBytes: number;
  mutant: string | undefined;
}

export const RSLOCK_WORKLOAD_DEFAULTS: Readonly<RsLockWorkloadOptions> = Object.freeze({ nodes: 3, clients: 2, opsPerClient: 4, registers: 1, blockBytes: 120, mutant: undefined });

/** A value no write writes: what a read of bytes that do not repeat one u64 returns. */
export const TORN_VALUE = (1n << 64n) - 1n;

function encodeValue(v: bigint, n: number): Uint8Array {
  const b = new Uint8Array(n);
  const dv = new DataView(b.buffer);
  for (let at = 0; at + 8 <= n; at += 8) dv.setBigUint64(at, v, true);
  return b;
}

function decodeValue(b: Uint8Array | null | undefined, n: number): bigint {
  if (b === null || b === undefined) return 0n;
  if (b.length !== n) return TORN_VALUE;
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const v = dv.getBigUint64(0, true);
  for (let at = 8; at + 8 <= n; at += 8) if (dv.getBigUint64(at, true) !== v) return TORN_VALUE;
  return v;
}

export function rslockExplorerApp(options: Partial<RsLockWorkloadOptions> = {}): RegisterExplorerApp {
  const o = { ...RSLOCK_WORKLOAD_DEFAULTS, ...definedOptions(options) };
  if (!Number.isSafeInteger(o.blockBytes) || o.blockBytes < 8 || o.blockBytes > 4096 || o.blockBytes % 8 !== 0) throw new RangeError(`blockBytes must be a multiple of 8 in [8, 4096], got ${String(o.blockBytes)}`);
  const mutant = o.mutant === undefined ? undefined : findRsLockMutant(o.mutant);
  if (o.mutant !== undefined && mutant === undefined) throw new TypeError(`mutant must be one of ${RSLOCK_MUTANTS.map((m) => m.name).join(', ')}, got ${String(o.mutant)}`);
  const appOptions = rslockApp.resolveOptions({ blocks: o.registers, blockBytes: o.blockBytes });
  let made = 0;
  const server = (w: World, n: number): RsLockAppServer => w.nodes[n]!.server as RsLockAppServer;
  const system: RegisterSystem = {
    name: 'rslock',
    regionBytes: Math.ceil(rslockApp.minRegionBytes(appOptions) / 4096) * 4096,
    format: (region: PmemRegion) => rslockApp.format(region, appOptions),
    open: (host) => rslockApp.open(host, appOptions),
    client(world, links, c) {
      // The back-off waits on the World's logical clock; the final reader (c = -1) runs the correct protocol.
      const client = RsLockClient.connect(links, { faults: c === -1 ? {} : (mutant?.faults ?? {}), prng: createPrng(1000 + made++), clock: world.clock, lockRetriesMax: 400, readRetriesMax: 400 });
      return {
        write: (r, v) => client.write(r, encodeValue(v, o.blockBytes)),
        read: async (r) => decodeValue(await client.read(r), o.blockBytes),
      };
    },
    unavailable: (e) => e instanceof PmrpcError && (e.code === RsLockErrorCodes.NO_MAJORITY || e.code === RsLockErrorCodes.CONTENDED),
    best(w, r) {
      let best: { version: bigint; value: bigint } | undefined;
      for (const node of w.nodes) {
        const b = node.crashed ? undefined : server(w, node.index).block(r);
        if (b !== undefined && (best === undefined || b.version > best.version)) best = { version: b.version, value: decodeValue(b.version === 0n ? null : b.data, o.blockBytes) };
      }
      return best?.value ?? 0n;
    },
    describe(w, n) {
      const b = server(w, n).block(0);
      return `node ${n}: ${b === undefined ? 'no valid published record' : `version ${b.version} value ${decodeValue(b.version === 0n ? null : b.data, o.blockBytes)}`}`;
    },
    replayArgs: o.mutant !== undefined ? ` --mutant ${o.mutant}` : '',
  };
  return registerExplorerApp({ nodes: o.nodes, clients: o.clients, opsPerClient: o.opsPerClient, registers: o.registers, pattern: 'mixed' }, system);
}
