/**
 * One replica of the lock-based replication baseline on one region (what rslockApp.open returns):
 * recovery re-derives the lock lines from the records, accept() hands a client a QP and the
 * area's address, block() and audit() read the published state. The server CPU formats
 * (app.ts) and recovers; reads and writes are one-sided (client.ts).
 */
import { PmrpcError, type PmemRegion } from '../../../pmem/index.js';
import { Access, type MemoryRegion, type ProtectionDomain, type Rnic, type ServerQp } from '../../../flush/index.js';
import { jsonBytes, type AcceptedClient, type AppHost, type AppProblem, type AppServer } from '../index.js';
import {
  RSLOCK_HEADER_BYTES,
  RsLockErrorCodes,
  decodeLockLine,
  decodeRecord,
  decodeRsLockHeader,
  encodeLockLine,
  encodeRecord,
  LOCK_LINE_BYTES,
  lockOffset,
  slotOffset,
  type BlockRecord,
  type RsLockGeometry,
} from './layout.js';
import { decideRsLockBlock } from './recovery.js';

/** What recover() did (the node's start line, `pmrpc inspect`); a type, not an interface, so that it is an AppServer's JSON report. */
export type RsLockRecoveryReport = {
  readonly app: 'rslock';
  /** Blocks of the replica. */
  readonly blocks: number;
  /** Lock lines rewritten (a lock held at the crash, or a release that did not persist). */
  readonly lockLinesRederived: number;
  /** Blocks whose both slots were invalid, reset to an empty version-0 record (readers repair them from a majority). */
  readonly lostCopies: number;
  /** How many blocks each row of RSLOCK_BLOCK_TABLE (recovery.ts) decided. */
  readonly rows: Readonly<Record<string, number>>;
};

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
  /** What recover() found (undefined: not recovered yet). */
  #report: RsLockRecoveryReport | undefined;
  #closed = false;

  constructor(host: AppHost, o: { base: number }) {
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
   * counted as a lost copy: readers then see it behind and repair it from a majority. Idempotent (a second call
   * returns the first's report);
   * a crash in the middle leaves records untouched and lock lines that the next run derives again.
   */
  recover(): RsLockRecoveryReport {
    if (this.#report !== undefined) return this.#report;
    const g = this.geometry;
    const region = this.#region;
    let changed = 0;
    let lost = 0;
    const rows: Record<string, number> = {};
    for (let b = 0; b < g.blocks; b++) {
      // The inputs of RSLOCK_BLOCK_TABLE (recovery.ts): the valid record of the highest version, and the lock line derived from it.
      let best: { slot: 0 | 1; version: bigint } | undefined;
      for (const slot of [0, 1] as const) {
        const r = decodeRecord(region.load(slotOffset(g, b, slot), g.slotBytes), g.blockBytes);
        if (r !== undefined && (best === undefined || r.version > best.version)) best = { slot, version: r.version };
      }
      const line = encodeLockLine({ version: best?.version ?? 0n, slot: best?.slot ?? 0, locked: false });
      const now = region.load(lockOffset(g, b), LOCK_LINE_BYTES);
      const row = decideRsLockBlock({ records: best === undefined ? 'none' : 'some', lock: now.some((x, i) => x !== line[i]) ? 'differs' : 'matches' });
      rows[row.id] = (rows[row.id] ?? 0) + 1;
      if (row.resetRecord) {
        lost++;
        const empty = encodeRecord({ version: 0n, data: new Uint8Array(0) });
        region.store(slotOffset(g, b, 0), empty);
        region.persist(slotOffset(g, b, 0), empty.length);
      }
      if (row.rewriteLock) {
        region.store(lockOffset(g, b), line);
        region.persist(lockOffset(g, b), LOCK_LINE_BYTES);
        changed++;
      }
    }
    this.#report = Object.freeze({ app: 'rslock', blocks: g.blocks, lockLinesRederived: changed, lostCopies: lost, rows: Object.freeze(rows) });
    return this.#report;
  }

  accept(_hello: Uint8Array): AcceptedClient {
    if (this.#report === undefined) throw new PmrpcError('PMRPC_ERR_NOT_RECOVERED', 'accept() before recover()');
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

