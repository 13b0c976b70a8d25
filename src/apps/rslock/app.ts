/**
 * The lock-based replication baseline behind the App contract (src/apps/app.ts): one replica on
 * one region — what the node host serves (`pmrpc serve --app rslock`) and what the crash explorer
 * runs on crash images. The server CPU formats and recovers; reads and writes are one-sided
 * (client.ts). A hello is empty; the welcome is JSON {app, rkey, locks, records, blocks, blockBytes, slotBytes}.
 */
import { intIn, must, PmrpcError, resolveOptions, type OptionChecks, type PmemRegion } from '../../../pmem/index.js';
import { Access, type MemoryRegion, type ProtectionDomain, type Rnic, type ServerQp } from '../../../flush/index.js';
import { jsonBytes, refuseOtherApp, type AcceptedClient, type App, type AppHost, type AppProblem, type AppServer } from '../index.js';
import {
  BLOCK_BYTES_MAX,
  BLOCKS_MAX,
  RSLOCK_HEADER_BYTES,
  RsLockErrorCodes,
  computeRsLockGeometry,
  decodeLockLine,
  decodeRecord,
  decodeRsLockHeader,
  encodeLockLine,
  encodeRecord,
  LOCK_LINE_BYTES,
  encodeRsLockHeader,
  lockOffset,
  slotOffset,
  type BlockRecord,
  type RsLockGeometry,
} from './layout.js';

export interface RsLockAppOptions {
  /** Blocks per replica. */
  blocks: number;
  /** Largest value of a block, bytes. */
  blockBytes: number;
  /** Offset of the area in the region (a multiple of 64). */
  base: number;
}

export const RSLOCK_APP_DEFAULTS: Readonly<RsLockAppOptions> = Object.freeze({ blocks: 256, blockBytes: 4096, base: 0 });

const RSLOCK_APP_CHECKS: OptionChecks<RsLockAppOptions> = {
  blocks: intIn(1, BLOCKS_MAX),
  blockBytes: intIn(1, BLOCK_BYTES_MAX),
  base: must((v) => Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) % 64 === 0, (v) => `must be a non-negative multiple of 64, got ${String(v)}`, RangeError),
};

function resolveRsLockOptions(options: Partial<RsLockAppOptions>): RsLockAppOptions {
  return resolveOptions(RSLOCK_APP_DEFAULTS, options, RSLOCK_APP_CHECKS);
}

/** What a client needs to reach one replica's area (the welcome). */
export interface RsLockAddress {
  rkey: number;
  locks: number;
  records: number;
  blocks: number;
  blockBytes: number;
  slotBytes: number;
}

/** The published record of a block on one replica: the lock word's slot, if it holds a valid record of the lock's version. */
function published(region: PmemRegion, g: RsLockGeometry, block: number): { lock: ReturnType<typeof decodeLockLine>; record: BlockRecord | undefined } {
  const lock = decodeLockLine(region.load(lockOffset(g, block), LOCK_LINE_BYTES));
  const r = decodeRecord(region.load(slotOffset(g, block, lock.slot), g.slotBytes), g.blockBytes);
  return { lock, record: r !== undefined && r.version === lock.version ? r : undefined };
}

/** One replica of the lock-based baseline, opened on a region. */
export class RsLockAppServer implements AppServer {
  readonly app = 'rslock';
  readonly geometry: RsLockGeometry;
  readonly mr: MemoryRegion;
  readonly #region: PmemRegion;
  readonly #nic: Rnic;
  readonly #pd: ProtectionDomain;
  #qps: ServerQp[] = [];
  #recovered = false;
  #closed = false;

  constructor(host: AppHost, o: RsLockAppOptions) {
    this.#region = host.region;
    this.#nic = host.nic;
    if (o.base + RSLOCK_HEADER_BYTES > host.region.sizeBytes) throw new PmrpcError(RsLockErrorCodes.NOT_FORMATTED, `no rslock header at ${o.base}: the region has ${host.region.sizeBytes} bytes`);
    this.geometry = decodeRsLockHeader(host.region.load(o.base, RSLOCK_HEADER_BYTES), o.base);
    if (o.base + this.geometry.totalBytes > host.region.sizeBytes) throw new PmrpcError(RsLockErrorCodes.NOT_FORMATTED, 'the rslock area runs past the end of the region');
    this.#pd = host.nic.allocPd();
    const g = this.geometry;
    this.mr = host.nic.registerMr(this.#pd, g.locksOffset, g.base + g.totalBytes - g.locksOffset, Access.ALL);
  }

  get address(): RsLockAddress {
    const g = this.geometry;
    return { rkey: this.mr.rkey, locks: g.locksOffset, records: g.recordsOffset, blocks: g.blocks, blockBytes: g.blockBytes, slotBytes: g.slotBytes };
  }

  /**
   * Every lock line is derived again from the records: the valid slot of the highest version
   * (a slot a crash tore fails its checksum; a slot FLUSHed but not yet published by its release
   * is a complete write and may be taken), unlocked. Locks held at the crash die with it — their
   * holders' operations were cut. A block whose both slots are invalid (not reachable by the
   * protocol: only the unpublished slot is ever written) gets an empty version-0 record and is
   * counted as a lost copy: readers then see it behind and repair it from a majority. Idempotent;
   * a crash in the middle leaves records untouched and lock lines that the next run derives again.
   */
  recover(): Record<string, unknown> {
    if (this.#recovered) return {};
    const g = this.geometry;
    const region = this.#region;
    let changed = 0;
    let lost = 0;
    for (let b = 0; b < g.blocks; b++) {
      let best: { slot: 0 | 1; version: bigint } | undefined;
      for (const slot of [0, 1] as const) {
        const r = decodeRecord(region.load(slotOffset(g, b, slot), g.slotBytes), g.blockBytes);
        if (r !== undefined && (best === undefined || r.version > best.version)) best = { slot, version: r.version };
      }
      if (best === undefined) {
        lost++;
        const empty = encodeRecord({ version: 0n, data: new Uint8Array(0) });
        region.store(slotOffset(g, b, 0), empty);
        region.persist(slotOffset(g, b, 0), empty.length);
        best = { slot: 0, version: 0n };
      }
      const line = encodeLockLine({ version: best.version, slot: best.slot, locked: false });
      const now = region.load(lockOffset(g, b), LOCK_LINE_BYTES);
      if (now.some((x, i) => x !== line[i])) {
        region.store(lockOffset(g, b), line);
        region.persist(lockOffset(g, b), LOCK_LINE_BYTES);
        changed++;
      }
    }
    this.#recovered = true;
    return { app: 'rslock', blocks: g.blocks, lockLinesRederived: changed, lostCopies: lost };
  }

  accept(_hello: Uint8Array): AcceptedClient {
    if (!this.#recovered) throw new PmrpcError('PMRPC_ERR_NOT_RECOVERED', 'accept() before recover()');
    if (this.#closed) throw new PmrpcError(RsLockErrorCodes.CLOSED, 'the rslock replica is closed');
    const qp = this.#nic.createQp(this.#pd);
    this.#qps.push(qp);
    return { qp, welcome: jsonBytes({ app: 'rslock', ...this.address }) };
  }

  /** The block as this replica publishes it now (visible memory): version and value, or undefined when its lock word names no valid record of its version. */
  block(block: number): BlockRecord | undefined {
    if (!Number.isSafeInteger(block) || block < 0 || block >= this.geometry.blocks) throw new RangeError(`block must be an integer in [0, ${this.geometry.blocks}), got ${String(block)}`);
    return published(this.#region, this.geometry, block).record;
  }

  inspect(): Record<string, unknown> {
    const g = this.geometry;
    let written = 0;
    let locked = 0;
    for (let b = 0; b < g.blocks; b++) {
      const p = published(this.#region, g, b);
      if (p.lock.locked) locked++;
      if (p.lock.version > 0n) written++;
    }
    return { app: 'rslock', blocks: g.blocks, blockBytes: g.blockBytes, written, locked, problems: this.audit().length };
  }

  /** Quiescent invariants: every lock free, naming a valid record of its version. */
  audit(): AppProblem[] {
    const out: AppProblem[] = [];
    const g = this.geometry;
    for (let b = 0; b < g.blocks; b++) {
      const p = published(this.#region, g, b);
      if (p.lock.locked) out.push({ kind: 'lock', detail: `block ${b}: lock held (version ${p.lock.version})` });
      if (p.record === undefined) out.push({ kind: 'record', detail: `block ${b}: slot ${p.lock.slot} holds no valid record of version ${p.lock.version}` });
    }
    return out;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const qp of this.#qps) this.#nic.destroyQp(qp.qpn);
    this.#qps = [];
  }
}

export const rslockApp: { open(host: AppHost, o: RsLockAppOptions): RsLockAppServer } & App<RsLockAppOptions> = Object.freeze({
  name: 'rslock',
  defaults: RSLOCK_APP_DEFAULTS,
  resolveOptions: resolveRsLockOptions,
  minRegionBytes(o: RsLockAppOptions): number {
    return o.base + computeRsLockGeometry(o.base, o.blocks, o.blockBytes).totalBytes;
  },
  format(region: PmemRegion, o: RsLockAppOptions): void {
    refuseOtherApp(region, o.base, 'rslock');
    const g = computeRsLockGeometry(o.base, o.blocks, o.blockBytes);
    if (o.base + g.totalBytes > region.sizeBytes) throw new PmrpcError(RsLockErrorCodes.LAYOUT_TOO_LARGE, `the rslock area needs ${g.totalBytes} bytes at ${o.base}; the region has ${region.sizeBytes}`);
    try {
      decodeRsLockHeader(region.load(o.base, RSLOCK_HEADER_BYTES), o.base);
      throw new PmrpcError(RsLockErrorCodes.ALREADY_FORMATTED, `offset ${o.base} already holds an rslock area; it is never overwritten`);
    } catch (e) {
      if (!(e instanceof PmrpcError) || e.code !== RsLockErrorCodes.NOT_FORMATTED) throw e;
    }
    const empty = encodeRecord({ version: 0n, data: new Uint8Array(0) });
    const free = encodeLockLine({ version: 0n, slot: 0, locked: false });
    for (let b = 0; b < g.blocks; b++) {
      region.store(lockOffset(g, b), free);
      region.store(slotOffset(g, b, 0), empty);
    }
    region.persist(g.locksOffset, g.base + g.totalBytes - g.locksOffset);
    // The header last: a format cut short leaves no magic, so open() says NOT_FORMATTED.
    region.store(o.base, encodeRsLockHeader(g));
    region.persist(o.base, RSLOCK_HEADER_BYTES);
  },
  open(host: AppHost, o: RsLockAppOptions): RsLockAppServer {
    refuseOtherApp(host.region, o.base, 'rslock');
    return new RsLockAppServer(host, o);
  },
});
