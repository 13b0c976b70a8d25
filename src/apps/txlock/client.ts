/**
 * Clients of the lock-based transaction baselines (docs/tx.md "Baselines"), with PRISM-TX's
 * TxClient interface (begin / read / write / commit → TxOutcome) so one workload drives all three.
 *
 * FaRM-style (FarmTxClient), after Dragojević et al. (SOSP'15) on one replica per shard:
 *   execution  one-sided READ of each object (192 B: lock line + item); a locked or torn object is
 *              read again (bounded), then the transaction aborts (CONFLICT).
 *   LOCK       per write participant, a SEND to the shard's CPU with the new values and the
 *              versions read: the CPU locks the write set (all or nothing), persists the redo
 *              record and replies.                                                  (1 RTT)
 *   VALIDATE   per participant with read-only keys, one chain of READs of their lock lines
 *              (doorbell batching): each must be free and at the version read.      (1 RTT)
 *   COMMIT     per write participant, WRITE of COMMITTED(T) into the client's log slot + FLUSH:
 *              durable at the FLUSH's ack (the commit point: every participant holds a durable
 *              redo record and one holds COMMITTED); the CPU applies and unlocks.  (1 RTT)
 *
 * FORD-style (FordTxClient), after Zhang et al. (FAST'22) without backups:
 *   execution  plain READ as FaRM; a read for update (or the first write of a key) is one chain
 *              CAS lock 0 → T + READ of the object (hitchhiked lock + speculative read, one RTT);
 *              a lock CAS that fails aborts at once (no-wait).
 *   R1         per participant one chain: WRITE the undo log (old values) + WRITE LOGGED(T) +
 *              FLUSH the log; READ the lock lines of the read-only keys (validation). (1 RTT)
 *   R2         per write participant one chain: WRITE the new items and versions in place;
 *              FLUSH(persistent) over the written objects (FORD's selective remote flush —
 *              here the emulator's FLUSH, the honest equivalent of its read-after-write, which
 *              persists nothing with DDIO on); WRITE COMMITTED(T); FLUSH.           (1 RTT)
 *   unlock     per write participant a chain of WRITEs lock := 0 (write unlatch of a CAS lock),
 *              posted and not waited for (asynchronous unlatch, SIGMOD'23).
 * A lock is released only once every participant's COMMITTED (or ABORTED) is durable, so no
 * reader sees a value that a crash could take back.
 */
import { Wr, type Completion, type QueuePair, type WorkRequest } from '../../../flush/index.js';
import { PmrpcError } from '../../../pmem/index.js';
import { parseJsonBytes } from '../index.js';
import { makeTxid, TxErrorCodes, type TxOutcome } from '../tx/index.js';
import { decodeObj, encodeLockItem, encodeLogBody, ENTRIES_MAX, L_ABORTED, L_COMMITTED, L_LOGGED, LOG_BODY, logAt, lWord, OBJ_BYTES, OBJ_ITEM, objAt, VALUE_BYTES_MAX, type LogEntry } from './layout.js';
import { FARM_CONFLICT, FARM_OK, FARM_OP_LOCK, FARM_REPLY_IMM } from './server.js';

/** One shard as a baseline client reaches it. */
export interface TxLockConn {
  qp: QueuePair;
  rkey: number;
  shard: number;
  shards: number;
  keys: number;
  clients: number;
  objects: number;
  logs: number;
}

export function parseTxLockWelcome(qp: QueuePair, welcome: Uint8Array): TxLockConn {
  const w = parseJsonBytes(welcome);
  const n = (k: string): number => {
    const v = w?.[k];
    if (!Number.isSafeInteger(v)) throw new PmrpcError(TxErrorCodes.NOT_FORMATTED, `the welcome is not a baseline TX shard address (no ${k})`);
    return v as number;
  };
  if (w?.app !== 'txfarm' && w?.app !== 'txford') throw new PmrpcError(TxErrorCodes.NOT_FORMATTED, 'the welcome is not a baseline TX shard address');
  return { qp, rkey: n('rkey'), shard: n('shard'), shards: n('shards'), keys: n('keys'), clients: n('clients'), objects: n('objects'), logs: n('logs') };
}

/** How a client reaches shard s (undefined while it is down). */
export type TxLockSource = (shard: number) => TxLockConn | undefined;

export interface TxLockClientOptions {
  /** This client's log slot on every shard. */
  client: number;
  /** Incarnation of the slot: txids never repeat. */
  incarnation: number;
  /** Test-only mutant: commit without validating the read-only keys (the checks must catch it). */
  skipValidation?: boolean;
}

/** Re-reads of an object found locked or torn before a read gives up (CONFLICT). */
export const READ_RETRIES_MAX = 32;

async function post(conn: TxLockConn, wrs: WorkRequest[]): Promise<Completion[]> {
  let cs: Completion[];
  try {
    cs = await conn.qp.postChain(wrs);
  } catch (e) {
    throw new PmrpcError(TxErrorCodes.SHARD_UNAVAILABLE, `shard ${conn.shard}: ${(e as Error).message}`);
  }
  const bad = cs.find((c) => c.status === 'error');
  if (bad !== undefined) throw new PmrpcError(TxErrorCodes.SHARD_UNAVAILABLE, `shard ${conn.shard}: ${bad.message ?? bad.code ?? 'work request failed'}`);
  return cs;
}

const u64 = (v: bigint): Uint8Array => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, v, true);
  return b;
};
const le64 = (b: Uint8Array, at = 0): bigint => new DataView(b.buffer, b.byteOffset, b.byteLength).getBigUint64(at, true);
const conflict = (what: string): PmrpcError => new PmrpcError(TxErrorCodes.CONFLICT, what);

interface Seen {
  version: bigint;
  value: Uint8Array;
}

/** What both baselines share: slots, txids, the read path, grouping by shard. */
abstract class LockTxClientBase {
  readonly client: number;
  readonly incarnation: number;
  readonly skipValidation: boolean;
  readonly #source: TxLockSource;
  #seq = 0;
  protected open = false;
  protected txid = 0n;
  protected reads = new Map<number, Seen>();
  protected writes = new Map<number, Uint8Array>();
  /** Round trips of the last commit (execution reads not counted; asynchronous unlocks not counted). */
  lastRoundTrips = 0;
  readonly stats = { readRetries: 0, commits: 0, aborts: 0 };

  constructor(source: TxLockSource, o: TxLockClientOptions) {
    if (typeof source !== 'function') throw new TypeError('source must be a function shard → connection');
    if (!Number.isSafeInteger(o.client) || o.client < 0 || o.client > 255) throw new RangeError(`client must be an integer in [0, 255], got ${String(o.client)}`);
    if (!Number.isSafeInteger(o.incarnation) || o.incarnation < 0 || o.incarnation > 0xffff) throw new RangeError(`incarnation must be an integer in [0, 65535], got ${String(o.incarnation)}`);
    this.#source = source;
    this.client = o.client;
    this.incarnation = o.incarnation;
    this.skipValidation = o.skipValidation === true;
  }

  protected conn(shard: number): TxLockConn {
    const c = this.#source(shard);
    if (c === undefined) throw new PmrpcError(TxErrorCodes.SHARD_UNAVAILABLE, `shard ${shard} is down`);
    if (this.client >= c.clients) throw new RangeError(`client ${this.client} has no log slot: the shard has ${c.clients}`);
    return c;
  }

  protected connOf(key: number): TxLockConn {
    const shards = this.conn(0).shards;
    return this.conn(key % shards);
  }

  async begin(): Promise<void> {
    if (this.open) throw new PmrpcError(TxErrorCodes.BAD_STATE, 'begin() while a transaction is open');
    this.open = true;
    this.txid = makeTxid(this.client, this.incarnation, ++this.#seq);
    this.reads.clear();
    this.writes.clear();
  }

  protected check(what: string): void {
    if (!this.open) throw new PmrpcError(TxErrorCodes.BAD_STATE, `${what} outside a transaction`);
  }

  /** A clean read of `key`: free (or locked by this transaction), item intact and at the header's version. */
  protected async readObj(key: number, wrsBefore: (c: TxLockConn) => WorkRequest[] = () => []): Promise<{ seen: Seen; swapped: boolean }> {
    const conn = this.connOf(key);
    if (Math.floor(key / conn.shards) >= conn.keys || key < 0 || !Number.isSafeInteger(key)) throw new RangeError(`key ${key} is not held by the shards (${conn.keys} keys each)`);
    const at = objAt(conn, key);
    let swapped = false;
    for (let i = 0; ; i++) {
      const pre = i === 0 ? wrsBefore(conn) : [];
      const cs = await post(conn, [...pre, Wr.read({ rkey: conn.rkey, addr: at }, OBJ_BYTES)]);
      if (pre.length > 0) swapped = cs[0]!.swapped === true;
      const o = decodeObj(cs[cs.length - 1]!.data!);
      if ((o.lock === 0n || o.lock === this.txid) && o.item !== undefined && o.item.version === o.version) {
        if (o.item.key !== key) throw new PmrpcError(TxErrorCodes.CORRUPT, `key ${key}: the object holds key ${o.item.key}`);
        return { seen: { version: o.version, value: o.item.value }, swapped };
      }
      if (i >= READ_RETRIES_MAX || (pre.length > 0 && !swapped)) return { seen: { version: -1n, value: new Uint8Array(0) }, swapped };
      this.stats.readRetries++;
    }
  }

  protected byShard(): Map<number, number[]> {
    const shards = this.conn(0).shards;
    const out = new Map<number, number[]>();
    for (const k of [...this.reads.keys()].sort((a, b) => a - b)) out.set(k % shards, [...(out.get(k % shards) ?? []), k]);
    return out;
  }

  protected participants(by: Map<number, number[]>): bigint {
    return [...by.keys()].reduce((m, s) => m | (1n << BigInt(s)), 0n);
  }

  /** Validation chains (one per shard, READs of the lock lines): every read-only key free and at the version read. */
  protected validateWrs(conn: TxLockConn, keys: readonly number[]): WorkRequest[] {
    if (this.skipValidation) return [];
    return keys.filter((k) => !this.writes.has(k)).map((k) => Wr.read({ rkey: conn.rkey, addr: objAt(conn, k) }, 16));
  }

  protected validated(keys: readonly number[], cs: readonly Completion[]): boolean {
    if (this.skipValidation) return true;
    const ro = keys.filter((k) => !this.writes.has(k));
    return ro.every((k, i) => {
      const d = cs[i]!.data!;
      return le64(d, 0) === 0n && le64(d, 8) === this.reads.get(k)!.version;
    });
  }

  protected checkWrite(key: number, value: Uint8Array): void {
    this.check('write()');
    if (!(value instanceof Uint8Array)) throw new TypeError('value must be a Uint8Array');
    if (value.length > VALUE_BYTES_MAX) throw new PmrpcError(TxErrorCodes.TOO_LARGE, `a value holds at most ${VALUE_BYTES_MAX} bytes, got ${value.length}`);
  }

  protected done(o: TxOutcome): TxOutcome {
    this.open = false;
    if (o.status === 'committed') this.stats.commits++;
    else this.stats.aborts++;
    return o;
  }

  /** Ends the transaction: committed, or aborted with a code. */
  async commit(): Promise<TxOutcome> {
    this.check('commit()');
    this.lastRoundTrips = 0;
    if (this.reads.size === 0) return this.done({ status: 'committed', txid: this.txid });
    const by = this.byShard();
    if ([...by.values()].some((ks) => ks.length > ENTRIES_MAX)) return this.abortWith(TxErrorCodes.TOO_LARGE);
    return this.commitOn(by, this.participants(by));
  }

  abstract read(key: number, options?: { forUpdate?: boolean }): Promise<Uint8Array>;
  abstract write(key: number, value: Uint8Array): Promise<void>;
  abstract rollback(): void;
  /** The protocol's commit of the keys grouped by shard (at most ENTRIES_MAX each). */
  protected abstract commitOn(by: Map<number, number[]>, participants: bigint): Promise<TxOutcome>;
  /** Aborts the open transaction (releasing what it holds). */
  protected abstract abortWith(code: string): TxOutcome;
}

export class FarmTxClient extends LockTxClientBase {
  #waiters = new WeakMap<QueuePair, { resolve: (s: number) => void; reject: (e: Error) => void }>();
  #hooked = new WeakSet<QueuePair>();

  async read(key: number, _options: { forUpdate?: boolean } = {}): Promise<Uint8Array> {
    this.check('read()');
    const w = this.writes.get(key);
    if (w !== undefined) return w.slice();
    const r = this.reads.get(key);
    if (r !== undefined) return r.value.slice();
    const { seen } = await this.readObj(key);
    if (seen.version < 0n) {
      this.rollback();
      throw conflict(`key ${key} stayed locked`);
    }
    this.reads.set(key, seen);
    return seen.value.slice();
  }

  async write(key: number, value: Uint8Array): Promise<void> {
    this.checkWrite(key, value);
    if (!this.reads.has(key)) await this.read(key);
    this.writes.set(key, value.slice());
  }

  rollback(): void {
    this.open = false;
  }

  /** LOCK on one shard: SEND the request, wait for the CPU's reply. */
  async #lock(conn: TxLockConn, entries: LogEntry[], participants: bigint): Promise<number> {
    const qp = conn.qp;
    if (!this.#hooked.has(qp)) {
      this.#hooked.add(qp);
      qp.onNotify((m) => {
        if (m.imm !== FARM_REPLY_IMM) return;
        const w = this.#waiters.get(qp);
        this.#waiters.delete(qp);
        w?.resolve(m.data.length >= 4 ? new DataView(m.data.buffer, m.data.byteOffset).getUint32(0, true) : -1);
      });
      qp.onClose((err) => {
        const w = this.#waiters.get(qp);
        this.#waiters.delete(qp);
        w?.reject(err);
      });
    }
    const body = encodeLogBody({ txid: this.txid, participants, entries });
    const req = new Uint8Array(8 + body.length);
    const dv = new DataView(req.buffer);
    dv.setUint32(0, FARM_OP_LOCK, true);
    dv.setUint32(4, this.client, true);
    req.set(body, 8);
    const reply = new Promise<number>((resolve, reject) => this.#waiters.set(qp, { resolve, reject }));
    reply.catch(() => undefined);
    await post(conn, [Wr.send(req)]);
    try {
      return await reply;
    } catch (e) {
      throw new PmrpcError(TxErrorCodes.SHARD_UNAVAILABLE, `shard ${conn.shard}: ${(e as Error).message}`);
    }
  }

  protected abortWith(code: string): TxOutcome {
    return this.#abort([], code);
  }

  protected async commitOn(by: Map<number, number[]>, participants: bigint): Promise<TxOutcome> {
    const txid = this.txid;
    const writeShards = [...by].filter(([, ks]) => ks.some((k) => this.writes.has(k)));
    // LOCK (server CPU), every write participant in parallel.
    const locked: TxLockConn[] = [];
    if (writeShards.length > 0) {
      this.lastRoundTrips++;
      const st = await Promise.all(
        writeShards.map(async ([s, ks]) => {
          const conn = this.conn(s);
          const entries = ks.filter((k) => this.writes.has(k)).map((k) => ({ key: k, version: this.reads.get(k)!.version, value: this.writes.get(k)! }));
          const r = await this.#lock(conn, entries, participants);
          if (r === FARM_OK) locked.push(conn);
          return r;
        }),
      );
      if (st.some((r) => r !== FARM_OK)) return this.#abort(locked, st.some((r) => r !== FARM_CONFLICT && r !== FARM_OK) ? TxErrorCodes.CORRUPT : TxErrorCodes.CONFLICT);
    }
    // VALIDATE the read-only keys by READ (a lone read needs none: it is its own snapshot).
    const needsValidation = [...by.values()].some((ks) => ks.some((k) => !this.writes.has(k))) && !(this.reads.size === 1 && this.writes.size === 0);
    if (needsValidation) {
      this.lastRoundTrips++;
      const oks = await Promise.all(
        [...by].map(async ([s, ks]) => {
          const conn = this.conn(s);
          const wrs = this.validateWrs(conn, ks);
          if (wrs.length === 0) return true;
          return this.validated(ks, await post(conn, wrs));
        }),
      );
      if (oks.some((x) => !x)) return this.#abort(locked, TxErrorCodes.CONFLICT);
    }
    if (writeShards.length === 0) return this.done({ status: 'committed', txid });
    // COMMIT: the record, durable by FLUSH; the CPU applies and unlocks.
    this.lastRoundTrips++;
    await Promise.all(
      locked.map((conn) => {
        const at = logAt(conn, this.client);
        return post(conn, [Wr.write({ rkey: conn.rkey, addr: at }, u64(lWord(txid, L_COMMITTED))), Wr.flush('persistent', conn.rkey, { addr: at, len: 8 })]);
      }),
    );
    return this.done({ status: 'committed', txid });
  }

  /** ABORT: where LOCK succeeded, the record says ABORTED (the CPU releases the locks); not waited for. */
  #abort(locked: readonly TxLockConn[], code: string): TxOutcome {
    for (const conn of locked) void conn.qp.postChain([Wr.write({ rkey: conn.rkey, addr: logAt(conn, this.client) }, u64(lWord(this.txid, L_ABORTED)))]).catch(() => undefined);
    return this.done({ status: 'aborted', txid: this.txid, code });
  }
}

export class FordTxClient extends LockTxClientBase {
  /** Keys this transaction holds the lock of. */
  #locked = new Set<number>();

  override async begin(): Promise<void> {
    await super.begin();
    this.#locked.clear();
  }

  async read(key: number, options: { forUpdate?: boolean } = {}): Promise<Uint8Array> {
    this.check('read()');
    const w = this.writes.get(key);
    if (w !== undefined) return w.slice();
    const r = this.reads.get(key);
    if (r !== undefined && (options.forUpdate !== true || this.#locked.has(key))) return r.value.slice();
    const seen = options.forUpdate === true ? await this.#lockAndRead(key) : (await this.readObj(key)).seen;
    if (seen.version < 0n || (r !== undefined && r.version !== seen.version)) {
      this.rollback();
      throw conflict(`key ${key}: locked by another transaction, or changed since it was read`);
    }
    this.reads.set(key, seen);
    return seen.value.slice();
  }

  /** Hitchhiked lock + speculative read: CAS lock 0 → T and READ the object, one chain. */
  async #lockAndRead(key: number): Promise<Seen> {
    const { seen, swapped } = await this.readObj(key, (conn) => [Wr.cas({ rkey: conn.rkey, addr: objAt(conn, key) }, 0n, this.txid)]);
    if (swapped) this.#locked.add(key);
    return swapped ? seen : { version: -1n, value: seen.value };
  }

  async write(key: number, value: Uint8Array): Promise<void> {
    this.checkWrite(key, value);
    if (!this.#locked.has(key)) await this.read(key, { forUpdate: true });
    this.writes.set(key, value.slice());
  }

  /** Releases the locks held (write unlatch), not waited for. */
  rollback(): void {
    this.open = false;
    this.#release([...this.#locked]);
    this.#locked.clear();
  }

  #release(keys: readonly number[], before: (conn: TxLockConn) => WorkRequest[] = () => []): void {
    const by = new Map<number, number[]>();
    for (const k of keys) {
      const s = k % this.conn(0).shards;
      by.set(s, [...(by.get(s) ?? []), k]);
    }
    for (const [s, ks] of by) {
      const conn = this.conn(s);
      void conn.qp.postChain([...before(conn), ...ks.map((k) => Wr.write({ rkey: conn.rkey, addr: objAt(conn, k) }, u64(0n)))]).catch(() => undefined);
    }
  }

  protected abortWith(code: string): TxOutcome {
    return this.#abort(code);
  }

  protected async commitOn(by: Map<number, number[]>, participants: bigint): Promise<TxOutcome> {
    const txid = this.txid;
    const wk = (ks: readonly number[]): number[] => ks.filter((k) => this.writes.has(k));
    // R1: undo logs (durable) and validation of the read-only keys, one chain per participant.
    const lone = this.reads.size === 1 && this.writes.size === 0;
    if (!lone) {
      this.lastRoundTrips++;
      const oks = await Promise.all(
        [...by].map(async ([s, ks]) => {
          const conn = this.conn(s);
          const wrs: WorkRequest[] = [];
          const w = wk(ks);
          if (w.length > 0) {
            const at = logAt(conn, this.client);
            const body = encodeLogBody({ txid, participants, entries: w.map((k) => ({ key: k, version: this.reads.get(k)!.version, value: this.reads.get(k)!.value })) });
            wrs.push(Wr.write({ rkey: conn.rkey, addr: at + LOG_BODY }, body), Wr.write({ rkey: conn.rkey, addr: at }, u64(lWord(txid, L_LOGGED))), Wr.flush('persistent', conn.rkey, { addr: at, len: LOG_BODY + body.length }));
          }
          const v = this.validateWrs(conn, ks);
          if (wrs.length + v.length === 0) return true;
          const cs = await post(conn, [...v, ...wrs]);
          return this.validated(ks, cs);
        }),
      );
      if (oks.some((x) => !x)) return this.#abort(TxErrorCodes.CONFLICT);
    }
    const writeShards = [...by].filter(([, ks]) => wk(ks).length > 0);
    if (writeShards.length === 0) return this.done({ status: 'committed', txid });
    // R2: the new values in place, FLUSHed (selectively: the written objects), then COMMITTED, FLUSHed.
    this.lastRoundTrips++;
    await Promise.all(
      writeShards.map(([s, ks]) => {
        const conn = this.conn(s);
        const w = wk(ks);
        const wrs: WorkRequest[] = [];
        for (const k of w) {
          const version = this.reads.get(k)!.version + 1n;
          wrs.push(Wr.write({ rkey: conn.rkey, addr: objAt(conn, k) + OBJ_ITEM }, encodeLockItem({ version, key: k, value: this.writes.get(k)! })));
          wrs.push(Wr.write({ rkey: conn.rkey, addr: objAt(conn, k) + 8 }, u64(version)));
        }
        const lo = Math.min(...w.map((k) => objAt(conn, k)));
        const hi = Math.max(...w.map((k) => objAt(conn, k))) + OBJ_BYTES;
        const at = logAt(conn, this.client);
        wrs.push(Wr.flush('persistent', conn.rkey, { addr: lo, len: hi - lo }), Wr.write({ rkey: conn.rkey, addr: at }, u64(lWord(txid, L_COMMITTED))), Wr.flush('persistent', conn.rkey, { addr: at, len: 8 }));
        return post(conn, wrs);
      }),
    );
    // Unlock: every participant's COMMITTED is durable; posted, not waited for.
    this.open = false;
    this.#release([...this.#locked]);
    this.#locked.clear();
    return this.done({ status: 'committed', txid });
  }

  #abort(code: string): TxOutcome {
    const txid = this.txid;
    // Where an undo log may be LOGGED: ABORTED, durable, before the locks go (a stale LOGGED record must never be undone over a later commit).
    this.#release([...this.#locked], (conn) => {
      const at = logAt(conn, this.client);
      return [Wr.write({ rkey: conn.rkey, addr: at }, u64(lWord(txid, L_ABORTED))), Wr.flush('persistent', conn.rkey, { addr: at, len: 8 })];
    });
    this.#locked.clear();
    return this.done({ status: 'aborted', txid, code });
  }
}
