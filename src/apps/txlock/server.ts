/**
 * One shard of the lock-based transaction baselines behind the App contract (src/apps/app.ts):
 * `txfarm` (FaRM-style commit: the shard's CPU locks the write set and writes the redo record on a
 * LOCK request, and applies + unlocks when the client's durable COMMIT record lands in its log
 * slot) and `txford` (FORD-style: every step one-sided — the CPU only formats and recovers). Same
 * layout (layout.ts), same emulator, same durability rule as PRISM-TX: a step counts only once it
 * is persistent (the CPU's persist() before it replies; the client's FLUSH(persistent) before it
 * moves on). docs/tx.md "Baselines" has both protocols and what a full recovery would need.
 */
import { Access, CpuPoller, type HostWriteEvent, type MemoryRegion, type ProtectionDomain, type RecvCompletion, type Rnic, type ServerQp } from '../../../flush/index.js';
import { PmrpcError, type PmemRegion } from '../../../pmem/index.js';
import { jsonBytes, type AcceptedClient, type AppHost, type AppProblem, type AppServer } from '../index.js';
import { TxErrorCodes, txName } from '../tx/index.js';
import {
  decodeHeader,
  decodeLockItem,
  decodeLogBody,
  encodeLockItem,
  encodeLogBody,
  HEADER_BYTES,
  ITEM_BYTES,
  L_ABORTED,
  L_COMMITTED,
  L_LOGGED,
  LOG_BODY,
  LOG_BYTES,
  logAt,
  lWord,
  MAIL_BYTES,
  OBJ_BYTES,
  OBJ_ITEM,
  objAt,
  type LogBody,
  type TxLockAppOptions,
  type TxLockGeometry,
  type TxLockProtocol,
} from './layout.js';
import { checkTxLockRedoRecords, decideTxLockRecovery, type TxLockLogHInput } from './recovery.js';

/**
 * What recover() did (the node's start line, `pmrpc inspect`); a type, not an interface, so that it
 * is an AppServer's JSON report. A second recover() returns the first one's report.
 */
export type TxLockRecoveryReport = {
  app: string;
  shard: number;
  /** FaRM: redo entries of COMMITTED records applied again. */
  redone: number;
  /** Locks no LOGGED record of their client slot backs, released. */
  locksReleased: number;
  /** The transactions whose LOGGED record stays locked (deciding them needs the other participants). */
  inDoubt: string[];
  /** How many times each row of TXLOCK_RECOVERY_TABLE (recovery.ts) decided (row id → count). */
  rows: Record<string, number>;
};

/** LOCK request (FaRM): op u32 (1) | client u32 | a log body (layout.ts) with the new values and the versions expected. */
export const FARM_OP_LOCK = 1;
export const FARM_REPLY_IMM = 0x7846;
export const FARM_OK = 0;
export const FARM_CONFLICT = 1;
export const FARM_BAD = 2;

export class TxLockAppServer implements AppServer {
  readonly app: string;
  readonly geometry: TxLockGeometry;
  readonly region: PmemRegion;
  readonly mr: MemoryRegion;
  readonly #nic: Rnic;
  readonly #pd: ProtectionDomain;
  readonly #poller: CpuPoller | undefined;
  #stops: Array<() => void> = [];
  #qps: ServerQp[] = [];
  #nextMail = 0;
  #recovered = false;
  #closed = false;
  /** Requests the CPU served (FaRM: LOCKs, applies, releases). */
  readonly cpu = { locks: 0, lockConflicts: 0, applies: 0, releases: 0 };
  #last: TxLockRecoveryReport | undefined;

  constructor(host: AppHost, o: TxLockAppOptions, protocol: TxLockProtocol) {
    this.app = `tx${protocol}`;
    this.region = host.region;
    this.#nic = host.nic;
    if (o.base + HEADER_BYTES > host.region.sizeBytes) throw new PmrpcError(TxErrorCodes.NOT_FORMATTED, `no ${protocol} TX header at ${o.base}: the region has ${host.region.sizeBytes} bytes`);
    this.geometry = decodeHeader(host.region.load(o.base, HEADER_BYTES), o.base, protocol);
    if (o.base + this.geometry.totalBytes > host.region.sizeBytes) throw new PmrpcError(TxErrorCodes.NOT_FORMATTED, 'the TX area runs past the end of the region');
    this.#pd = host.nic.allocPd();
    const g = this.geometry;
    // Objects and logs: READ, WRITE, CAS, FLUSH for the clients. The mailbox stays outside the MR (SENDs land there).
    this.mr = host.nic.registerMr(this.#pd, g.objects, g.mailbox - g.objects, Access.ALL);
    if (protocol === 'farm') {
      this.#poller = new CpuPoller(host.nic, { schedule: host.schedule });
      this.#stops.push(this.#poller.watchMemory({ offset: g.logs, len: g.clients * LOG_BYTES }, (e) => this.#onLogWrite(e)));
    }
  }

  get lastRecovery(): TxLockRecoveryReport | undefined {
    return this.#last;
  }

  obj(index: number): { lock: bigint; version: bigint; value: Uint8Array | undefined } {
    const at = this.geometry.objects + index * OBJ_BYTES;
    const it = decodeLockItem(this.region.load(at + OBJ_ITEM, ITEM_BYTES));
    return { lock: this.region.loadU64(at), version: this.region.loadU64(at + 8), value: it?.value };
  }

  log(c: number): { h: bigint; body: LogBody | undefined } {
    const at = logAt(this.geometry, c);
    const h = this.region.loadU64(at);
    const body = decodeLogBody(this.region.load(at + LOG_BODY, LOG_BYTES - LOG_BODY));
    return { h, body: body !== undefined && h !== 0n && body.txid === h / 4n ? body : undefined };
  }

  #storeObj(key: number, version: bigint, value: Uint8Array, lock: bigint): void {
    const at = objAt(this.geometry, key);
    // The item first, durable, then the version and the lock word (a reader trusts an item only when its version matches the header's and the lock is free).
    this.region.store(at + OBJ_ITEM, encodeLockItem({ version, key, value }));
    this.region.persist(at + OBJ_ITEM, ITEM_BYTES);
    this.region.storeU64(at + 8, version);
    this.region.storeU64(at, lock);
    this.region.persist(at, 16);
  }

  /**
   * Recovery of one shard, the local rows only, deciding by TXLOCK_RECOVERY_TABLE (recovery.ts;
   * docs/tx.md "Baselines"): one log row per client slot, one entry row per entry on this shard of
   * a record the farm-committed row redoes, one object row per object. FaRM — a COMMITTED redo
   * record whose locks are still held is applied again (idempotent: only where the object still
   * carries the version the record expects); FORD — a COMMITTED undo log's data is durable (it was
   * FLUSHed before the mark), so its locks are released. A lock no LOGGED record of this shard
   * backs is released. A LOGGED record stays locked: deciding it needs the other participants
   * (not built: the baselines are not crash-explored).
   */
  recover(): TxLockRecoveryReport {
    if (this.#last !== undefined) return this.#last;
    const g = this.geometry;
    const rows: Record<string, number> = {};
    const count = (id: string): void => {
      rows[id] = (rows[id] ?? 0) + 1;
    };
    let redone = 0;
    let released = 0;
    const inDoubt: string[] = [];
    const held = new Map<bigint, LogBody>();
    // Logs first, reading only: the records the redo rows walk are checked before anything is stored.
    const redo: LogBody[] = [];
    for (let c = 0; c < g.clients; c++) {
      const { h, body } = this.log(c);
      const state = h % 4n;
      const hIn: TxLockLogHInput = state === L_LOGGED ? 'logged' : state === L_COMMITTED ? 'committed' : state === L_ABORTED ? 'aborted' : 'none';
      const row = decideTxLockRecovery('log', { h: hIn, body: body === undefined ? 'not-whole' : 'whole', protocol: g.protocol });
      count(row.id);
      if (body === undefined) continue;
      if (row.action === 'hold') {
        held.set(body.txid, body);
        inDoubt.push(txName(body.txid));
      } else if (row.action === 'redo') redo.push(body);
    }
    checkTxLockRedoRecords(g, redo);
    for (const body of redo) {
      for (const e of body.entries) {
        if (e.key % g.shards !== g.shard) continue;
        const o = this.obj(Math.floor(e.key / g.shards));
        const entry = decideTxLockRecovery('entry', { lock: o.lock === body.txid ? 'own' : 'other', version: o.version === e.version ? 'expected' : 'other' });
        count(entry.id);
        if (entry.action !== 'apply') continue;
        this.#storeObj(e.key, e.version + 1n, e.value, 0n);
        redone++;
      }
    }
    for (let i = 0; i < g.keys; i++) {
      const at = g.objects + i * OBJ_BYTES;
      const lock = this.region.loadU64(at);
      const row = decideTxLockRecovery('object', { lock: lock === 0n ? 'free' : held.has(lock) ? 'backed' : 'unbacked' });
      count(row.id);
      if (row.action !== 'release') continue;
      this.region.storeU64(at, 0n);
      this.region.persist(at, 8);
      released++;
    }
    this.#recovered = true;
    this.#last = { app: this.app, shard: g.shard, redone, locksReleased: released, inDoubt, rows };
    return this.#last;
  }

  accept(_hello: Uint8Array): AcceptedClient {
    if (!this.#recovered) throw new PmrpcError('PMRPC_ERR_NOT_RECOVERED', 'accept() before recover()');
    if (this.#closed) throw new PmrpcError(TxErrorCodes.BAD_STATE, `the ${this.app} shard is closed`);
    const g = this.geometry;
    const qp = this.#nic.createQp(this.#pd);
    this.#qps.push(qp);
    if (this.#poller !== undefined) {
      if (this.#nextMail >= g.mailboxes) {
        this.#nic.destroyQp(qp.qpn);
        throw new RangeError(`the ${this.app} shard has ${g.mailboxes} mailbox buffers: at most ${g.mailboxes} connections`);
      }
      const buf = { id: 0, addr: g.mailbox + this.#nextMail++ * MAIL_BYTES, len: MAIL_BYTES };
      qp.postRecv(buf);
      this.#stops.push(this.#poller.watchRecv(qp, (c) => this.#onLock(qp, buf, c)));
    }
    return { qp, welcome: jsonBytes({ app: this.app, rkey: this.mr.rkey, shard: g.shard, shards: g.shards, keys: g.keys, clients: g.clients, objects: g.objects, logs: g.logs }) };
  }

  /** FaRM LOCK: every write key free and at the version the client read, or nothing; then the redo record, durable, then the reply. */
  #onLock(qp: ServerQp, buf: { id: number; addr: number; len: number }, c: RecvCompletion): void {
    const g = this.geometry;
    let status = FARM_BAD;
    if (c.op === 'send' && c.byteLen >= 8 + 32) {
      const req = this.region.load(c.addr, c.byteLen);
      const dv = new DataView(req.buffer, req.byteOffset);
      const client = dv.getUint32(4, true);
      const body = dv.getUint32(0, true) === FARM_OP_LOCK && client < g.clients ? decodeLogBody(req.subarray(8)) : undefined;
      if (body !== undefined && body.txid !== 0n && body.entries.every((e) => e.key % g.shards === g.shard && Math.floor(e.key / g.shards) < g.keys)) {
        this.cpu.locks++;
        const taken: number[] = [];
        let ok = true;
        for (const e of body.entries) {
          const at = objAt(g, e.key);
          if (this.region.loadU64(at) !== 0n || this.region.loadU64(at + 8) !== e.version) {
            ok = false;
            break;
          }
          this.region.storeU64(at, body.txid);
          taken.push(at);
        }
        if (ok) {
          const log = logAt(g, client);
          const bytes = encodeLogBody(body);
          this.region.store(log + LOG_BODY, bytes);
          this.region.persist(log + LOG_BODY, bytes.length);
          this.region.storeU64(log, lWord(body.txid, L_LOGGED));
          this.region.persist(log, 8);
          status = FARM_OK;
        } else {
          for (const at of taken) this.region.storeU64(at, 0n);
          this.cpu.lockConflicts++;
          status = FARM_CONFLICT;
        }
      }
    }
    qp.postRecv(buf);
    const reply = new Uint8Array(4);
    new DataView(reply.buffer).setUint32(0, status, true);
    qp.notify(reply, FARM_REPLY_IMM);
  }

  /** FaRM: a client's COMMIT (or ABORT) record landed in its log slot: apply the redo record and unlock (or just unlock). */
  #onLogWrite(e: HostWriteEvent): void {
    const g = this.geometry;
    const first = Math.max(0, Math.floor((e.offset - g.logs) / LOG_BYTES));
    const last = Math.min(g.clients - 1, Math.floor((e.offset + e.len - 1 - g.logs) / LOG_BYTES));
    for (let c = first; c <= last; c++) {
      if (logAt(g, c) < e.offset || logAt(g, c) >= e.offset + e.len) continue;
      const { h, body } = this.log(c);
      if (body === undefined || (h % 4n !== L_COMMITTED && h % 4n !== L_ABORTED)) continue;
      const commit = h % 4n === L_COMMITTED;
      for (const en of body.entries) {
        const at = objAt(g, en.key);
        if (this.region.loadU64(at) !== body.txid) continue; // applied already
        if (commit) this.#storeObj(en.key, en.version + 1n, en.value, 0n);
        else this.region.storeU64(at, 0n);
      }
      if (commit) this.cpu.applies++;
      else this.cpu.releases++;
    }
  }

  inspect(): Record<string, unknown> {
    const g = this.geometry;
    const logs: string[] = [];
    for (let c = 0; c < g.clients; c++) {
      const { h } = this.log(c);
      if (h !== 0n) logs.push(`client ${c}: ${['?', 'LOGGED', 'COMMITTED', 'ABORTED'][Number(h % 4n)]}(${txName(h / 4n)})`);
    }
    const locked: string[] = [];
    for (let i = 0; i < g.keys; i++) {
      const o = this.obj(i);
      if (o.lock !== 0n) locked.push(`key ${i * g.shards + g.shard}: ${txName(o.lock)}`);
    }
    return { app: this.app, shard: g.shard, shards: g.shards, keys: g.keys, clients: g.clients, logs, locked, cpu: { ...this.cpu }, lastRecovery: this.#last };
  }

  audit(): AppProblem[] {
    const g = this.geometry;
    const out: AppProblem[] = [];
    for (let i = 0; i < g.keys; i++) {
      const key = i * g.shards + g.shard;
      const at = g.objects + i * OBJ_BYTES;
      const it = decodeLockItem(this.region.load(at + OBJ_ITEM, ITEM_BYTES));
      if (it === undefined) out.push({ kind: 'object', detail: `key ${key}: the item is garbage (checksum)` });
      else if (it.key !== key || it.version !== this.region.loadU64(at + 8)) out.push({ kind: 'object', detail: `key ${key}: item (key ${it.key}, version ${it.version}) does not match the header (version ${this.region.loadU64(at + 8)})` });
    }
    return out;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const s of this.#stops.splice(0)) s();
    this.#poller?.close();
    for (const qp of this.#qps) this.#nic.destroyQp(qp.qpn);
    this.#qps = [];
  }
}
