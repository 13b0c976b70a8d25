/**
 * PRISM-TX clients: the transaction client (TxClient) and the resolver (TxResolver), both pure
 * one-sided NIC chains over one QueuePair per shard (docs/tx.md has the protocol and the decision
 * table).
 *
 * Commit of T (txid with the client's slot and incarnation, timestamp ts above everything T saw),
 * two round trips for a writing transaction:
 *   execution  READ the slot and the item (bounded, indirect): the item's ts is the version seen;
 *              writes are buffered.
 *   round 1    per participant one chain, every op conditional on the previous: per write key
 *              ALLOCATE the new item (its address redirected into the QP's scratch) and FLUSH
 *              exactly that item (redirected FLUSH); per write key its read did not lock on this
 *              connection CAS L 0 → T, CAS lt [W CT] < [ts seen] (W := ts) — nothing for one it
 *              did (docs/tx.md "Locks taken at read time"); per read-only key CAS lt [W CT L] <
 *              [ts seen 0] (W := ts);
 *              WRITE the record body, WRITE the new items' addresses from the scratch after it;
 *              FLUSH the slots the chain CASed and the body; CAS H: the value this client left →
 *              PREPARED(T) (fails if a resolver fenced T); FLUSH H; READ the scratch (where the
 *              client's items are, for an abort's marks). Commit point: every participant's chain
 *              swapped its H (durable: FLUSHed), and each record names durable items.
 *   round 2    per participant: install (CAS eq L = T: W := ts, CT := ts, ptr := new); FLUSH the installed
 *              slots; CAS H PREPARED(T) → COMMITTED(T); FLUSH; CAS L T → 0 (the decision is
 *              durable before any lock is released). Abort: H → ABORTED(T) where a record exists,
 *              FLUSH, release; T's items marked dead (live reclamation).
 * By default (option recordValues) the record carries the new values instead: round 1 drops the
 * ALLOCATEs, the items' FLUSHes, the pointer WRITE and the scratch READ, and round 2 ALLOCATEs each
 * value, FLUSHes the MR once and installs from the scratch (commitValuesOn; docs/tx.md "New values
 * in the record"); a write set that does not fit the record keeps the chain above.
 * A CAS that did not swap proves nothing durable about what it lost to (DESIGN §2.2): the
 * transaction aborts. A participant that did not answer leaves T to the resolver (resolve()).
 *
 * Serializable (not strictly): the serial order is timestamp order, and timestamps come from
 * loosely synchronised clocks, so a transaction may serialise before one that finished earlier
 * in real time.
 */
import { NicErrorCodes, Wr, type Completion, type QueuePair, type WorkRequest } from '../../../flush/index.js';
import { invariant, isInvariantError, PmrpcError, systemClock, type Clock } from '../../../pmem/index.js';
import { parseJsonBytes } from '../index.js';
import { NO_TX_FAULTS, type TxFaults } from './faults.js';
import { decideTxResolution } from './resolution.js';
import {
  checkHEdge,
  decodeBody,
  decodeItem,
  describeH,
  decodeSlot,
  bodyPtrsOffset,
  bodyValuesFit,
  encodeBody,
  encodeItem,
  ENTRY_READ,
  ENTRY_WRITE,
  H_ABORTED,
  H_COMMITTED,
  H_FENCED,
  H_PREPARED,
  hState,
  hTxid,
  hWord,
  ITEM_BYTES,
  ITEM_DEAD,
  ITEM_MARK_WORD,
  makeTxid,
  ONES,
  TXID_TAG,
  RECORD_BODY,
  RECORD_BYTES,
  SLOT_BYTES,
  TxErrorCodes,
  txClient,
  txName,
  u64,
  words,
  type RecordBody,
  type RecordEntry,
  type Slot,
} from './layout.js';

/** One shard as a client reaches it. */
export interface ShardConn {
  qp: QueuePair;
  rkey: number;
  shard: number;
  shards: number;
  keys: number;
  clients: number;
  slots: number;
  records: number;
  arena: number;
  arenaBytes: number;
}

export function parseTxWelcome(qp: QueuePair, welcome: Uint8Array): ShardConn {
  const w = parseJsonBytes(welcome);
  const n = (k: string): number => {
    const v = w?.[k];
    if (!Number.isSafeInteger(v)) throw new PmrpcError(TxErrorCodes.NOT_FORMATTED, `the welcome is not a TX shard address (no ${k})`);
    return v as number;
  };
  if (w?.app !== 'tx') throw new PmrpcError(TxErrorCodes.NOT_FORMATTED, 'the welcome is not a TX shard address');
  return { qp, rkey: n('rkey'), shard: n('shard'), shards: n('shards'), keys: n('keys'), clients: n('clients'), slots: n('slots'), records: n('records'), arena: n('arena'), arenaBytes: n('arenaBytes') };
}

/** How clients and resolvers reach shard s: the current connection, reconnecting if the old one closed; undefined while the shard is down. */
export type ShardSource = (shard: number) => ShardConn | undefined;

/** Waits of one clock millisecond a client or resolver makes for a shard to come back, at most. */
export const SHARD_WAITS_MAX = 400;
/** Reads of one key before an item that never matches its slot is reported CORRUPT. */
export const READ_ATTEMPTS_MAX = 32;
/** Rounds of a resolver before it gives up on a transaction (fence CASes that keep losing, shards down). */
export const RESOLVE_ROUNDS_MAX = 64;

function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimer(ms, resolve));
}

/** Posts a chain; undefined when the shard did not answer (link closed, QP in error). */
async function post(conn: ShardConn, wrs: WorkRequest[]): Promise<Completion[] | undefined> {
  try {
    const cs = await conn.qp.postChain(wrs);
    return cs.some((c) => c.status === 'error') ? undefined : cs;
  } catch {
    return undefined;
  }
}

const slotAt = (c: ShardConn, key: number): { rkey: number; addr: number } => ({ rkey: c.rkey, addr: c.slots + Math.floor(key / c.shards) * SLOT_BYTES });
const recAt = (c: ShardConn, client: number): { rkey: number; addr: number } => ({ rkey: c.rkey, addr: c.records + client * RECORD_BYTES });
const tablesRange = (c: ShardConn): { addr: number; len: number } => ({ addr: c.slots, len: c.arena - c.slots });
/** One range over the slots of `keys` (of shard c): from the lowest to the highest, the slots between included. */
function slotSpan(c: ShardConn, keys: readonly number[]): { addr: number; len: number } {
  const idx = keys.map((k) => Math.floor(k / c.shards));
  const lo = Math.min(...idx);
  return { addr: c.slots + lo * SLOT_BYTES, len: (Math.max(...idx) - lo + 1) * SLOT_BYTES };
}

/** Slots a read without a location hint READs beside its bounded indirect READ: the aligned window holding the key's (clipped to the table). */
export const TX_SLOT_WINDOW = 64;

function slotWindow(c: ShardConn, key: number): { first: number; count: number } {
  const idx = Math.floor(key / c.shards);
  const first = idx - (idx % TX_SLOT_WINDOW);
  return { first, count: Math.min(TX_SLOT_WINDOW, c.keys - first) };
}

export type TxStatus = 'committed' | 'aborted' | 'unknown';

export interface TxOutcome {
  status: TxStatus;
  txid: bigint;
  /** Why it aborted or is unknown (a PMRPC_ERR_TX_* code). */
  code?: string;
}

interface ReadEntry {
  key: number;
  ts: bigint;
  w: bigint;
  value: Uint8Array;
}

export interface TxClientOptions {
  /** This client's record slot on every shard (0 ≤ client < clients of the shards). */
  client: number;
  /** Incarnation of the client slot: txids of a reused slot never repeat. */
  incarnation: number;
  /** Time source for txids' timestamps and bounded waits (default: the system clock; tests inject a modelled one, DESIGN §7). */
  clock?: Clock | undefined;
  /** Fault injection for the mutant suites (default: none). */
  faults?: Partial<TxFaults> | undefined;
  /**
   * Where round 2 of this client's commits runs (install, COMMITTED, release): connections of
   * their own, one per shard (default: `source`'s). Round 2 runs after commit() reported; on a QP
   * of its own, the next transaction's reads do not queue behind it (a read of a key the pending
   * round 2 installs waits for it: read your writes).
   */
  installSource?: ShardSource | undefined;
  /**
   * Carry the new values in the prepare record (default true; docs/tx.md "New values in the
   * record"): round 1 WRITEs them in the body (no ALLOCATE, no item FLUSH, no pointer WRITE, no
   * scratch READ), round 2 ALLOCATEs each into the scratch, FLUSHes exactly it and installs it by
   * PRISM CAS from the scratch. A shard's write set that does not fit (bodyValuesFit) keeps the
   * pointer path (items ALLOCATEd in round 1, their addresses in the record). false: always the
   * pointer path. The mutants of the pointer path's steps (skip-allocate-flush, skip-record-ptrs,
   * late-item-flush, recovery-trusts-record) run it.
   */
  recordValues?: boolean | undefined;
  /** Test hook: awaited once the commit point is reached, before round 2 (a real-crash run holds a client here and SIGKILLs it: T left prepared). */
  afterPrepare?: ((txid: bigint) => Promise<void>) | undefined;
}

export class TxClient {
  readonly client: number;
  readonly incarnation: number;
  readonly faults: Readonly<TxFaults>;
  readonly resolver: TxResolver;
  readonly #source: ShardSource;
  readonly #installSource: ShardSource;
  readonly #installOwn: boolean;
  readonly #clock: Clock;
  #seq = 0;
  #lastHi = 0n;
  /** Per shard: the H value this client last left in its record slot there (its next prepare's expected value). */
  #hPrev = new Map<number, bigint>();
  /**
   * Transactions of this client whose final state is not yet known everywhere (settled before the
   * next begin), with the ALLOCATEd items not yet marked dead (marked once the resolver decides abort).
   */
  #unsettled: Array<{ txid: bigint; participants: bigint; ts?: bigint; items?: Map<number, Array<{ key: number; ptr: number }>> }> = [];
  /** Items this client marked dead (docs/tx.md "Reclamation"), for reports and tests. */
  readonly reclaimStats = { marked: 0, markChainsLost: 0, guardRefused: 0 };
  #open = false;
  /** The open transaction's txid, once it has one (its first read for update takes a lock under it; else commit() draws it). */
  #txid: bigint | undefined;
  /**
   * Keys of the open transaction locked by its read for update (docs/tx.md "Locks taken at read
   * time"), with the connection the lock was taken on: round 1 trusts a lock only on that same
   * connection (a shard that restarted since released it, R3).
   */
  #execLocks = new Map<number, ShardConn>();
  /** Releases of a rolled-back transaction's read-time locks, awaited by the next begin(). */
  #releasing: Promise<void> | undefined;
  #reads = new Map<number, ReadEntry>();
  #writes = new Map<number, Uint8Array>();
  /** Reads that met an item not matching its slot (an install in between, or a reused item) and read again. */
  readRetries = 0;
  /** Round trips of the last commit (prepare + install: 2 for a writing transaction whose participants all prepared). */
  lastRoundTrips = 0;

  constructor(source: ShardSource, options: TxClientOptions) {
    if (typeof source !== 'function') throw new TypeError('source must be a function shard → connection');
    if (!Number.isSafeInteger(options.client) || options.client < 0 || options.client > 255) throw new RangeError(`client must be an integer in [0, 255], got ${String(options.client)}`);
    if (!Number.isSafeInteger(options.incarnation) || options.incarnation < 0 || options.incarnation > 0xffff) throw new RangeError(`incarnation must be an integer in [0, 65535], got ${String(options.incarnation)}`);
    this.#source = source;
    if (options.installSource !== undefined && typeof options.installSource !== 'function') throw new TypeError('installSource must be a function shard → connection');
    this.#installSource = options.installSource ?? source;
    this.#installOwn = options.installSource !== undefined;
    this.client = options.client;
    this.incarnation = options.incarnation;
    this.#clock = options.clock ?? systemClock;
    this.faults = Object.freeze({ ...NO_TX_FAULTS, ...options.faults });
    this.resolver = new TxResolver(source, { clock: this.#clock, faults: options.faults });
    this.#afterPrepare = options.afterPrepare;
    const f = this.faults;
    this.#recordValues = (options.recordValues ?? true) && !(f.skipAllocateFlush || f.skipRecordPtrs || f.lateItemFlush || f.recoveryTrustsRecord);
  }

  readonly #recordValues: boolean;

  readonly #afterPrepare: ((txid: bigint) => Promise<void>) | undefined;

  /** The txid the next commit() will use (a client logs its intent under it before committing). */
  get nextTxid(): bigint {
    return this.#txid ?? makeTxid(this.client, this.incarnation, this.#seq + 1);
  }

  /** Waits (bounded) for shard s; PMRPC_ERR_TX_SHARD_UNAVAILABLE when it stays down. */
  async #conn(shard: number): Promise<ShardConn> {
    for (let i = 0; i < SHARD_WAITS_MAX; i++) {
      const c = this.#source(shard);
      if (c !== undefined) return c;
      await sleep(this.#clock, 1);
    }
    throw new PmrpcError(TxErrorCodes.SHARD_UNAVAILABLE, `shard ${shard} stayed down`);
  }

  /**
   * The incarnation a new client of slot `client` should use: one above every incarnation of the
   * slot that any shard's durable state names (its record's H, FLUSHed before it is read, and the
   * slots' locks), 1 on a fresh slot. One READ chain per shard; every shard must answer (bounded
   * wait). Valid while no other client uses the slot (one process per client slot).
   */
  static async nextIncarnation(source: ShardSource, client: number, clock: Clock): Promise<number> {
    if (!Number.isSafeInteger(client) || client < 0 || client > 255) throw new RangeError(`client must be an integer in [0, 255], got ${String(client)}`);
    const waitFor = async (s: number): Promise<ShardConn> => {
      for (let i = 0; i < SHARD_WAITS_MAX; i++) {
        const c = source(s);
        if (c !== undefined) return c;
        await sleep(clock, 1);
      }
      throw new PmrpcError(TxErrorCodes.SHARD_UNAVAILABLE, `shard ${s} stayed down`);
    };
    const shards = (await waitFor(0)).shards;
    let max = 0;
    for (let s = 0; s < shards; s++) {
      const conn = await waitFor(s);
      if (client >= conn.clients) throw new RangeError(`client ${client} is not a client slot of shard ${s} (it has ${conn.clients})`);
      const rec = recAt(conn, client);
      const cs = await post(conn, [Wr.flush('persistent', conn.rkey, tablesRange(conn)), Wr.read(rec, 8), Wr.read({ rkey: conn.rkey, addr: conn.slots }, conn.keys * SLOT_BYTES)]);
      if (cs === undefined) throw new PmrpcError(TxErrorCodes.SHARD_UNAVAILABLE, `shard ${s} did not answer the incarnation read of client slot ${client}`);
      const seen = (txid: bigint): void => {
        if (txid !== 0n && txClient(txid) === client) max = Math.max(max, Number((txid >> 32n) & 0xffffn));
      };
      const h = new DataView(cs[1]!.data!.buffer, cs[1]!.data!.byteOffset).getBigUint64(0, true);
      if (h !== 0n) seen(hTxid(h));
      const t = cs[2]!.data!;
      for (let i = 0; i < conn.keys; i++) seen(new DataView(t.buffer, t.byteOffset + i * SLOT_BYTES + 16).getBigUint64(0, true));
    }
    if (max >= 0xffff) throw new PmrpcError(TxErrorCodes.STALE_INCARNATION, `client slot ${client} has used every incarnation (65535): use another client slot`);
    return max + 1;
  }

  /**
   * H names a transaction of this slot that this client did not run: one past `own` (this
   * client's latest txid), or — `ownInFlight`: own is being prepared and H is not a resolver's
   * fence of it — own itself. The incarnation is stale.
   */
  #staleBy(h: bigint, own: bigint, ownInFlight: boolean): boolean {
    if (h === 0n) return false;
    const t = hTxid(h);
    return txClient(t) === this.client && (t > own || (ownInFlight && t === own && hState(h) !== H_FENCED));
  }

  #stale: string | undefined;

  /** Starts a transaction (after settling the previous ones of this client: its record slots must be final). */
  async begin(): Promise<void> {
    if (this.#open) throw new PmrpcError(TxErrorCodes.BAD_STATE, 'begin() while a transaction is open');
    if (this.#stale !== undefined) throw new PmrpcError(TxErrorCodes.STALE_INCARNATION, this.#stale);
    if (this.#broken !== undefined) throw this.#broken;
    if (this.#releasing !== undefined) {
      const r = this.#releasing;
      this.#releasing = undefined;
      await r;
    }
    await this.#settle();
    this.#open = true;
    this.#txid = undefined;
    this.#execLocks.clear();
    this.#reads.clear();
    this.#writes.clear();
  }

  /**
   * Reads `key`. `forUpdate`: the transaction will write it — the read chain also takes its lock
   * (a PRISM CAS that swaps `L` 0 → T and returns the slot's words, beside the item's READ), so round 1 only checks it
   * (docs/tx.md "Locks taken at read time"); a lock another transaction holds is left to round 1.
   */
  async read(key: number, options: { forUpdate?: boolean } = {}): Promise<Uint8Array> {
    if (!this.#open) throw new PmrpcError(TxErrorCodes.BAD_STATE, 'read() outside a transaction');
    const w = this.#writes.get(key);
    if (w !== undefined) return w.slice();
    const r = this.#reads.get(key);
    if (r !== undefined) return r.value.slice();
    // Read your writes: a key the last commit's round 2 is still installing is read after it.
    if (this.#round2 !== undefined && this.#round2Keys.has(key)) await this.settled();
    const probe = this.#source(0);
    const shards = probe?.shards ?? (await this.#conn(0)).shards;
    if (!Number.isSafeInteger(key) || key < 0) throw new PmrpcError(TxErrorCodes.BAD_KEY, `key must be a non-negative integer, got ${String(key)}`);
    const conn = await this.#conn(key % shards);
    if (Math.floor(key / shards) >= conn.keys) throw new PmrpcError(TxErrorCodes.BAD_KEY, `key ${key} is not in [0, ${shards * conn.keys}): ${shards} shards of ${conn.keys} keys`);
    const at = slotAt(conn, key);
    // The item must describe itself as the slot's (its key, and the CT the slot showed): a reader
    // that meets another item — one installed after its slot READ, or a reused item under a
    // pointer it dereferenced — reads again (live reclamation: docs/tx.md table S). Only an item
    // that stays wrong is CORRUPT. With a location hint (docs/tx.md "Execution reads"): a READ of
    // the item where this client last saw the slot point, beside a READ of the slot — two
    // independent READs, no dereference; the item counts only if it is the slot's CT version.
    // Without one: a READ of the slot's window of slots (the hints of its neighbours) beside the
    // bounded indirect READ of the item.
    const hints = this.#hintsOf(conn);
    let lockTried = options.forUpdate !== true;
    for (let attempt = 0; ; attempt++) {
      const hint = hints.get(key);
      const win = hint === undefined ? slotWindow(conn, key) : undefined;
      const wrs: WorkRequest[] = win === undefined
        ? [Wr.read({ rkey: conn.rkey, addr: hint! }, ITEM_BYTES)]
        : [Wr.read({ rkey: conn.rkey, addr: conn.slots + win.first * SLOT_BYTES }, win.count * SLOT_BYTES), Wr.read({ rkey: conn.rkey, addr: at.addr + 24 }, ITEM_BYTES, { bounded: true })];
      // A read for update takes the lock with a PRISM CAS over the slot's [W CT L ptr] that
      // compares only L's txid tag (gt, data T: swaps iff L = 0, every txid carries the tag) and
      // returns the four words as they were at the lock: the W and CT T locked, which nothing but T
      // moves while L = T — round 1's check then only compares (docs/tx.md "Locks taken at read
      // time"). It needs no READ of the slot behind it, and the item's READ beside it does not wait
      // for it: the item counts only if it is (key, that CT), one immutable item. The mutant
      // check-lock-by-order READs the slot and locks after it (a plain CAS), as this chain first did.
      const lockCas = !lockTried && !this.faults.checkLockByOrder;
      if (win === undefined && !lockCas) wrs.push(Wr.read(at, 40));
      let lockAt = -1;
      if (!lockTried) {
        this.#txid ??= makeTxid(this.client, this.incarnation, ++this.#seq);
        lockAt = wrs.length;
        wrs.push(
          lockCas
            ? Wr.prismCas('gt', at, words(0n, 0n, this.#txid, 0n), { compareMask: words(0n, 0n, TXID_TAG, 0n), swapMask: words(0n, 0n, ONES, 0n) })
            : Wr.cas({ rkey: conn.rkey, addr: at.addr + 16 }, 0n, this.#txid),
        );
        // The chain ends with a READ (of the QP's scratch: no DMA, done once the lock is placed):
        // a READ does not pass the QP's earlier writes, so the lock is visible to every READ before
        // the chain answers — an atomic result left in the NIC's cache is seen by other atomics but
        // not by a resolver's scan, which would leave the key locked for ever (swarm seed 563).
        if (lockCas) wrs.push(Wr.read({ scratch: 0 }, 8));
        lockTried = true;
        // Until the chain answers, the lock may be T's (released by rollback() or the abort).
        this.#execLocks.set(key, conn);
      }
      const cs = await post(conn, wrs);
      if (cs === undefined) throw new PmrpcError(TxErrorCodes.SHARD_UNAVAILABLE, `shard ${conn.shard} did not answer the read of key ${key}`);
      if (lockAt >= 0 && cs[lockAt]!.swapped !== true) this.#execLocks.delete(key);
      // The slot's words: from the lock CAS (its old value, swapped or not: one atomic snapshot),
      // else from the READ of the slot (hinted) or the window (hint-less).
      const fromCas = (): Slot => {
        const d = cs[lockAt]!.data!;
        const dv = new DataView(d.buffer, d.byteOffset, 32);
        return { w: dv.getBigUint64(0, true), ct: dv.getBigUint64(8, true), lock: dv.getBigUint64(16, true), ptr: Number(dv.getBigUint64(24, true)), bound: 0 };
      };
      let slot: Slot;
      let item: ReturnType<typeof decodeItem>;
      if (win === undefined) {
        this.readChains.direct++;
        item = decodeItem(cs[0]!.data!);
        slot = lockCas ? fromCas() : decodeSlot(cs[1]!.data!);
      } else {
        this.readChains.indirect++;
        const t = cs[0]!.data!;
        for (let i = 0; i < win.count; i++) {
          const p = Number(new DataView(t.buffer, t.byteOffset + i * SLOT_BYTES + 24, 8).getBigUint64(0, true));
          this.#learn(conn, hints, (win.first + i) * conn.shards + conn.shard, p);
        }
        const o = (Math.floor(key / conn.shards) - win.first) * SLOT_BYTES;
        slot = lockCas ? fromCas() : decodeSlot(t.subarray(o, o + SLOT_BYTES));
        item = decodeItem(cs[1]!.data!);
      }
      if (item === undefined || item.key !== key || item.ts !== slot.ct) {
        this.readRetries++;
        if (win === undefined) {
          this.readChains.moved++;
          if (!this.#learn(conn, hints, key, slot.ptr)) hints.delete(key);
        }
        if (attempt + 1 >= READ_ATTEMPTS_MAX) throw new PmrpcError(TxErrorCodes.CORRUPT, `key ${key}: the installed item is not valid (${READ_ATTEMPTS_MAX} reads)`);
        continue;
      }
      this.#reads.set(key, { key, ts: item.ts, w: slot.w, value: item.value });
      return item.value.slice();
    }
  }

  /**
   * Location hints of one connection (a new connection — a restarted shard — starts with none):
   * key → the item its slot last pointed to, as this client saw it (a read's slot window, its own
   * installs). Only where to READ: what a read returns is checked against the slot (see read()).
   */
  #hints = new WeakMap<ShardConn, Map<number, number>>();
  /** Reads by kind: `direct` (through a location hint), `indirect` (slot window + bounded indirect READ), `moved` (a direct read whose hint was stale: read again). */
  readonly readChains = { direct: 0, indirect: 0, moved: 0 };

  #hintsOf(conn: ShardConn): Map<number, number> {
    let h = this.#hints.get(conn);
    if (h === undefined) this.#hints.set(conn, (h = new Map()));
    return h;
  }

  /** Keeps `ptr` as key's hint when it names an item of the arena (a hint's READ never leaves the MR). */
  #learn(conn: ShardConn, hints: Map<number, number>, key: number, ptr: number): boolean {
    if (ptr < conn.arena || ptr + ITEM_BYTES > conn.arena + conn.arenaBytes || (ptr - conn.arena) % ITEM_BYTES !== 0) return false;
    hints.set(key, ptr);
    return true;
  }

  /** Buffers a write of `key` (the key is read first if this transaction has not read it: read-modify-write). */
  async write(key: number, value: Uint8Array): Promise<void> {
    if (!this.#open) throw new PmrpcError(TxErrorCodes.BAD_STATE, 'write() outside a transaction');
    if (!(value instanceof Uint8Array)) throw new TypeError('value must be a Uint8Array');
    if (!this.#reads.has(key)) await this.read(key, { forUpdate: true });
    encodeItem({ ts: 0n, key, value }); // size check now, not at commit
    this.#writes.set(key, value.slice());
  }

  /**
   * Drops the open transaction without committing (nothing of it was prepared). The locks its
   * reads for update took are released (CAS `L` T → 0), before the next begin(); a release that
   * does not answer leaves T to the resolver (its locks, no record: D6).
   */
  rollback(): void {
    this.#open = false;
    this.#reads.clear();
    this.#writes.clear();
    const txid = this.#txid;
    const locks = new Map(this.#execLocks);
    this.#execLocks.clear();
    this.#txid = undefined;
    if (txid !== undefined) this.#releaseReadLocks(txid, locks);
  }

  /** Releases read-time locks of T that no commit round will release (before the next begin()). */
  #releaseReadLocks(txid: bigint, locks: ReadonlyMap<number, ShardConn>): void {
    const byConn = new Map<ShardConn, number[]>();
    for (const [k, c] of locks) byConn.set(c, [...(byConn.get(c) ?? []), k]);
    if (byConn.size === 0) return;
    const prev = this.#releasing;
    this.#releasing = (async () => {
      await prev;
      const oks = await Promise.all([...byConn].map(([c, ks]) => abortOn(c, this.client, txid, false, ks).catch(() => false)));
      if (oks.some((x) => !x)) this.#unsettled.push({ txid, participants: [...byConn.keys()].reduce((m, c) => m | (1n << BigInt(c.shard)), 0n) });
    })();
  }

  /** Round 2 of the last committed transaction, while it runs (commit() reports at the commit point), and the keys it installs. */
  #round2: Promise<void> | undefined;
  /** The broken invariant that stopped this client (PMRPC_ERR_INVARIANT from round 2, run after commit() returned). */
  #broken: Error | undefined;

  /** The broken invariant that stopped this client, if one did (PMRPC_ERR_INVARIANT: round 2 found a committed transaction's install absent). */
  get broken(): Error | undefined {
    return this.#broken;
  }
  #round2Keys = new Set<number>();

  /**
   * Waits for the round 2 of this client's last commit (install, COMMITTED, release: posted when
   * commit() returned) and settles what it left undecided. Call it before closing the client's
   * links: a round 2 cut by a close leaves T prepared until a shard's agent rolls it forward.
   */
  async settled(): Promise<void> {
    if (this.#broken !== undefined) throw this.#broken;
    if (this.#releasing !== undefined) {
      const r = this.#releasing;
      this.#releasing = undefined;
      await r;
    }
    while (this.#round2 !== undefined) {
      const r = this.#round2;
      await r;
      if (this.#round2 === r) {
        this.#round2 = undefined;
        this.#round2Keys.clear();
      }
      if (this.#broken !== undefined) throw this.#broken;
    }
    if (this.#unsettled.length > 0) await this.#settle();
  }

  /** Ends the transaction: committed, aborted (with a code) or unknown (left to a resolver that could not finish). */
  async commit(): Promise<TxOutcome> {
    if (!this.#open) throw new PmrpcError(TxErrorCodes.BAD_STATE, 'commit() outside a transaction');
    this.#open = false;
    this.lastRoundTrips = 0;
    const txid = this.#txid ?? makeTxid(this.client, this.incarnation, ++this.#seq);
    this.#txid = undefined;
    const execLocks = new Map(this.#execLocks);
    this.#execLocks.clear();
    // A key locked at its read and not written: written with the value read (its lock is released
    // by round 2's install, as every written key's). One whose read did not complete: released now.
    const stray = new Map([...execLocks].filter(([k]) => !this.#reads.has(k)));
    for (const k of stray.keys()) execLocks.delete(k);
    this.#releaseReadLocks(txid, stray);
    for (const k of execLocks.keys()) if (!this.#writes.has(k)) this.#writes.set(k, this.#reads.get(k)!.value.slice());
    const keys = [...this.#reads.keys()];
    if (keys.length === 0) return { status: 'committed', txid };
    // The previous commit's round 2 first: the H it leaves is what this prepare's H CAS expects.
    await this.settled();
    const shards = (await this.#conn(0)).shards;
    const byShard = new Map<number, number[]>();
    for (const k of keys.sort((a, b) => a - b)) byShard.set(k % shards, [...(byShard.get(k % shards) ?? []), k]);
    const participants = [...byShard.keys()].reduce((m, s) => m | (1n << BigInt(s)), 0n);
    // A resolver that found T's read-time locks in doubt (a lease ran out) fenced T where it held
    // them and released them (D6). Where this client has re-learnt its slot's H since (settled()),
    // that fence is the H it would expect: T must not prepare over it — T is over (aborted).
    if (!this.faults.prepareOverOwnFence && [...byShard.keys()].some((s) => { const h = this.#hPrev.get(s); return h !== undefined && h !== 0n && hTxid(h) === txid; })) {
      this.#releaseReadLocks(txid, execLocks);
      return { status: 'aborted', txid, code: TxErrorCodes.CONFLICT };
    }
    // The timestamp: above every version and W seen, above this client's last, from the clock.
    let hi = BigInt(Math.floor(this.#clock.nowMs()));
    if (hi <= this.#lastHi) hi = this.#lastHi + 1n;
    for (const r of this.#reads.values()) {
      const seen = (r.w > r.ts ? r.w : r.ts) >> 8n;
      if (seen >= hi) hi = seen + 1n;
    }
    this.#lastHi = hi;
    const ts = (hi << 8n) | BigInt(this.client);
    // The connections the commit uses, one per participant.
    const conns = new Map<number, ShardConn>();
    for (const s of byShard.keys()) {
      const conn = this.#source(s);
      if (conn === undefined) {
        this.#releaseReadLocks(txid, execLocks);
        return { status: 'aborted', txid, code: TxErrorCodes.SHARD_UNAVAILABLE };
      }
      conns.set(s, conn);
    }
    /** The new items, once their ALLOCATE completed (from the scratch READ at the end of round 1). */
    const newPtr = new Map<number, number>();
    /** The new values a record carries (keys of the shards whose write set fit): round 2 ALLOCATEs them. */
    const carried = new Map<number, Uint8Array>();
    // Round 1: per participant one chain — ALLOCATE the new values and FLUSH exactly each item
    // (redirected FLUSH, from the pointer ALLOCATE left in the QP's scratch), lock + check +
    // validate by enhanced CAS, the record body and the new items' addresses (WRITE from scratch),
    // FLUSH, H → PREPARED(T), FLUSH; then a READ of the scratch tells the client where its items are.
    this.lastRoundTrips++;
    const cond = !this.faults.countFailedCas;
    type Prep = { s: number; state: 'prepared' | 'refused' | 'lost'; locked: number[]; hOld?: bigint; code?: string };
    const prep = await Promise.all(
      [...byShard].map(async ([s, ks]): Promise<Prep> => {
        const conn = conns.get(s)!;
        const wrs: WorkRequest[] = [];
        const roles: Array<{ key: number; kind: 'lock' | 'check' | 'validate' } | undefined> = [];
        const entries: RecordEntry[] = [];
        const wk = ks.filter((k) => this.#writes.has(k));
        const allocAt: number[] = [];
        const items = wk.map((k) => encodeItem({ ts, key: k, value: this.#writes.get(k)! }));
        // The new values ride in the record when they fit (else the pointer path: ALLOCATEd here).
        const carry = this.#recordValues && bodyValuesFit(ks.length, items);
        if (carry) wk.forEach((k, i) => carried.set(k, items[i]!));
        const flushItems = (): void => {
          // Exactly what each ALLOCATE wrote: the pointer it left at scratch 8·i, the item's length.
          items.forEach((item, i) => {
            wrs.push(Wr.flushFrom('persistent', conn.rkey, { scratch: i * 8 }, item.length, { conditional: true }));
            roles.push(undefined);
          });
        };
        for (const k of ks) {
          const r = this.#reads.get(k)!;
          const at = slotAt(conn, k);
          if (this.#writes.has(k) && (this.faults.readLockAnyConnection ? execLocks.has(k) : execLocks.get(k) === conn)) {
            // Locked at its read on this very connection: nothing to do in round 1 (docs/tx.md
            // "Locks taken at read time"). While L = T nothing but T moves W or CT (every other
            // check compares its own lock, every validation L = 0), and the read chain's lock CAS
            // returned them as T locked the slot: CT = seen and W seen < ts still hold. L stops
            // being T on this connection only where a resolver fenced T first (D6, row D9): T's H
            // CAS there fails. W := ts comes with the install (round 2), with CT := ts; a crash
            // in between re-raises it from the record (R1). The mutant check-lock-by-order keeps a
            // check that compares by order (gt over [W CT L] with [ts seen T]), which also swaps
            // when L < T — a lock released, or a smaller txid's — and lowers W below CT (found by
            // the swarm, seed 325).
            if (this.faults.checkLockByOrder) {
              wrs.push(Wr.prismCas('gt', at, words(ts, r.ts, txid), { conditional: cond && wrs.length > 0, swapMask: words(ONES, 0n, 0n) }));
              roles.push({ key: k, kind: 'check' });
            }
            entries.push({ key: k, kind: ENTRY_WRITE, newPtr: 0, oldCt: r.ts });
          } else if (this.#writes.has(k)) {
            wrs.push(Wr.cas({ rkey: conn.rkey, addr: at.addr + 16 }, 0n, txid, { conditional: cond && wrs.length > 0 }));
            roles.push({ key: k, kind: 'lock' });
            wrs.push(Wr.prismCas('gt', at, words(ts, r.ts), { conditional: cond, swapMask: words(ONES, 0n) }));
            roles.push({ key: k, kind: 'check' });
            entries.push({ key: k, kind: ENTRY_WRITE, newPtr: 0, oldCt: r.ts });
          } else {
            entries.push({ key: k, kind: ENTRY_READ, newPtr: 0, oldCt: r.ts });
            if (this.faults.skipValidation) continue;
            wrs.push(Wr.prismCas('gt', at, words(ts, r.ts, 0n), { conditional: cond && wrs.length > 0, swapMask: words(ONES, 0n, 0n) }));
            roles.push({ key: k, kind: 'validate' });
          }
        }
        // The new values are ALLOCATEd only once every lock, check and validation swapped (a
        // transaction that loses a conflict takes no item); each redirects its address into the
        // QP's scratch at 8·i, where the body's pointer WRITE and the items' FLUSHes find it.
        if (!carry) items.forEach((item, i) => {
          allocAt.push(wrs.length);
          wrs.push(Wr.allocate(conn.rkey, ITEM_BYTES, item, { redirect: i * 8, ...(wrs.length > 0 ? { conditional: cond || i > 0 } : {}) }));
          roles.push(undefined);
        });
        const rec = recAt(conn, this.client);
        const hPrev = this.#hPrev.get(s) ?? 0n;
        const prepared = hWord(txid, H_PREPARED);
        if (carry) for (const e of entries) if (e.kind === ENTRY_WRITE) e.item = carried.get(e.key)!;
        const body = encodeBody({ txid, ts, participants, entries, ...(carry ? { values: true } : {}) });
        const ptrsAt = bodyPtrsOffset(entries.length);
        // The crc-covered part from the client, the new items' addresses from the scratch (the NIC's);
        // a body carrying values is the client's whole (the crc covers the values).
        wrs.push(Wr.write({ rkey: conn.rkey, addr: rec.addr + RECORD_BODY }, carry ? body : body.subarray(0, ptrsAt), { conditional: cond && wrs.length > 0 }));
        roles.push(undefined);
        if (!carry && wk.length > 0 && !this.faults.skipRecordPtrs) {
          wrs.push(Wr.writeFrom({ rkey: conn.rkey, addr: rec.addr + RECORD_BODY + ptrsAt }, { scratch: 0 }, wk.length * 8, { conditional: cond }));
          roles.push(undefined);
        }
        // Exactly what each ALLOCATE wrote (redirected FLUSH: the pointer it left at scratch 8·i).
        if (!carry && !this.faults.skipAllocateFlush && !this.faults.lateItemFlush) flushItems();
        const hAt = wrs.length;
        checkHEdge(hPrev, prepared, `${txName(txid)}'s prepare on shard ${s}`);
        wrs.push(this.faults.noFenceCheck ? Wr.write(rec, u64(prepared), { conditional: cond }) : Wr.cas(rec, hPrev, prepared, { conditional: cond }));
        roles.push(undefined);
        if (!this.faults.skipPrepareFlush) {
          // One FLUSH of H and the body (its item addresses included): the record is
          // self-validating, so the body need not be durable before H. The CAS runs after the
          // body's WRITEs are placed, so a visible PREPARED(T) always stands over T's body; a crash
          // before this FLUSH completes may leave a durable H over a body that is not T's, which
          // nobody counted and recovery fences (row R2). The slots this chain CASed need not be
          // durable either: while H says PREPARED(T), recovery re-locks and re-raises them from
          // the record (R1, R1'); round 2 FLUSHes them before COMMITTED.
          // Mutant record-values-not-flushed: the values' bytes left out of it (header and entries only).
          const len = this.faults.skipBodyFlush ? 8 : RECORD_BODY + (carry && this.faults.recordValuesNotFlushed ? ptrsAt : body.length);
          wrs.push(Wr.flush('persistent', conn.rkey, { addr: rec.addr, len }));
          roles.push(undefined);
        }
        // Mutant late-item-flush: the items are FLUSHed only after H published the record.
        if (!carry && this.faults.lateItemFlush) flushItems();
        const readAt = wrs.length;
        if (!carry && wk.length > 0) wrs.push(Wr.read({ scratch: 0 }, wk.length * 8));
        const cs = await post(conn, wrs);
        if (cs === undefined) return { s, state: 'lost', locked: [] };
        let code: string | undefined;
        if (!carry && wk.length > 0) {
          const ptrs = cs[readAt]!.data!;
          wk.forEach((k, i) => {
            const c = cs[allocAt[i]!]!;
            if (c.status === 'ok') newPtr.set(k, Number(new DataView(ptrs.buffer, ptrs.byteOffset + i * 8).getBigUint64(0, true)));
            else if (c.status === 'failed') code ??= c.code === NicErrorCodes.ALLOC_EMPTY ? TxErrorCodes.ARENA_FULL : TxErrorCodes.SHARD_UNAVAILABLE;
          });
        }
        // T's locks here: those round 1 took, and those its reads took (on any connection: the
        // release CAS compares L = T, so one a restart released is left alone).
        const locked = [...new Set([...cs.flatMap((c, i) => (roles[i]?.kind === 'lock' && c.swapped === true ? [roles[i]!.key] : [])), ...ks.filter((k) => execLocks.has(k))])];
        const casOk = cs.every((c, i) => roles[i] === undefined || c.swapped === true || (this.faults.countFailedCas && roles[i]!.kind !== 'lock'));
        const h = cs[hAt]!;
        const hOk = this.faults.noFenceCheck ? h.status === 'ok' : h.swapped === true;
        if (casOk && hOk && cs.every((c) => c.status === 'ok')) return { s, state: 'prepared', locked };
        const refused: Prep = { s, state: 'refused', locked, ...(code !== undefined ? { code } : {}) };
        if (h.status === 'ok' && !hOk && h.data !== undefined) return { ...refused, hOld: new DataView(h.data.buffer, h.data.byteOffset).getBigUint64(0, true) };
        return refused;
      }),
    );
    const writesOn = (s: number): Array<{ key: number; ptr: number }> => byShard.get(s)!.filter((k) => this.#writes.has(k) && newPtr.has(k)).map((k) => ({ key: k, ptr: newPtr.get(k)! }));
    /** Round 2's installs on shard s: the ALLOCATEd items (pointer path) or the values its record carries. */
    const installsOn = (s: number): Install[] => byShard.get(s)!.filter((k) => this.#writes.has(k) && (newPtr.has(k) || carried.has(k))).map((k) => (carried.has(k) ? { key: k, item: carried.get(k)! } : { key: k, ptr: newPtr.get(k)! }));
    const notPrepared = !prep.every((p) => p.state === 'prepared');
    // Mutant return-before-decided: T's items are marked dead before T's abort is decided (a
    // participant that did not answer may hold a durable record: the resolver may commit T).
    const early = this.faults.returnBeforeDecided && !this.faults.skipReturns && notPrepared;
    if (early) await Promise.all(prep.map((p) => this.#markDead(conns.get(p.s)!, txid, ts, writesOn(p.s))));
    /** T's items on the participants where they are not marked yet (the resolver's decision marks them: #settle). */
    const unmarked = (only: (s: number) => boolean): Map<number, Array<{ key: number; ptr: number }>> => new Map(early ? [] : prep.filter((p) => only(p.s)).map((p) => [p.s, writesOn(p.s)]));
    if (prep.every((p) => p.state === 'prepared')) {
      // Commit point reached: every participant holds a durable record of T and none fenced it.
      if (this.#afterPrepare !== undefined) await this.#afterPrepare(txid);
      // T is decided and the decision is durable: the outcome is reported now. Round 2 (install,
      // COMMITTED, release) is posted and runs off the critical path, as FaRM's apply and unlock
      // run after its COMMIT is acknowledged: this client's next reads on a participant follow it
      // on the same QP (RC order), and its next prepare waits for it (settled(): the H it left).
      this.lastRoundTrips++;
      this.#round2Keys = new Set([...this.#writes.keys()]);
      const round2 = Promise.all(
        prep.map(async (p) => {
          // On the install connections when there are some, else on the prepare's own (a link
          // that dropped since fails round 2 there: T is left to the resolver, #settle).
          const conn = this.#installOwn ? this.#installSource(p.s) : conns.get(p.s);
          if (conn === undefined) return false;
          // T's installs here, taken now: writesOn reads this.#writes, which the next begin()
          // clears while this chain runs (the hints below were then learnt from an empty list).
          const installs = installsOn(p.s);
          const r = await commitOn(conn, this.client, txid, ts, byShard.get(p.s)!, installs, this.faults);
          if (r.ok) {
            this.#hPrev.set(p.s, hWord(txid, H_COMMITTED));
            // T's new items are installed: where this client reads those keys next (each a
            // hint: a read still checks the item against its slot, docs/tx.md "Execution reads").
            const rc = this.#source(p.s);
            if (rc !== undefined) for (const w of r.installed) this.#learn(rc, this.#hintsOf(rc), w.key, w.ptr);
          }
          return r.ok;
        }),
      ).then(
        (oks) => {
          if (oks.some((x) => !x)) this.#unsettled.push({ txid, participants });
        },
        (e: unknown) => {
          // A broken invariant (checkInstalls) stops this client: settled(), begin() and commit() throw it from now on.
          if (isInvariantError(e)) this.#broken ??= e;
          else this.#unsettled.push({ txid, participants });
        },
      );
      this.#round2 = round2;
      return { status: 'committed', txid };
    }
    if (prep.some((p) => p.state === 'refused')) {
      // A participant's chain finished without writing T's record: T can never commit. Roll back.
      const oks = await Promise.all(
        prep.map(async (p) => {
          if (p.state === 'lost') return false;
          const conn = conns.get(p.s)!;
          if (p.hOld !== undefined && this.#staleBy(p.hOld, txid, true)) this.#stale ??= `client slot ${this.client}, incarnation ${this.incarnation}: shard ${p.s} holds ${describeH(p.hOld)}, a transaction this client did not run (the incarnation is used by another client, or reused)`;
          if (p.hOld !== undefined && hState(p.hOld) !== H_PREPARED) this.#hPrev.set(p.s, p.hOld);
          else if (p.hOld !== undefined) this.#hPrev.delete(p.s); // an earlier incarnation's PREPARED record: settled (and re-read) before the next prepare
          const ok = await abortOn(conn, this.client, txid, p.state === 'prepared', p.locked);
          if (ok && p.state === 'prepared') this.#hPrev.set(p.s, hWord(txid, H_ABORTED));
          // Reclamation (docs/tx.md, table A): T's abort is decided — a participant refused: its H
          // CAS completed without swapping, and no prepare is ever sent again — and durable here:
          // ABORTED(T) FLUSHed where T's record was, no record where it was refused. Only now are
          // T's items here marked dead.
          if (ok && !early) await this.#markDead(conn, txid, ts, writesOn(p.s));
          return ok;
        }),
      );
      if (oks.some((x) => !x)) this.#unsettled.push({ txid, participants, ts, items: unmarked((s) => !oks[prep.findIndex((p) => p.s === s)]) });
      return { status: 'aborted', txid, code: this.#stale !== undefined ? TxErrorCodes.STALE_INCARNATION : (prep.find((p) => p.code !== undefined)?.code ?? TxErrorCodes.CONFLICT) };
    }
    // Some participant did not answer: whether its record is durable is unknown. Resolve (and mark
    // T's items dead only if the resolver decides abort).
    this.#unsettled.push({ txid, participants, ts, items: unmarked(() => true) });
    try {
      await this.#settle();
    } catch {
      return { status: 'unknown', txid, code: TxErrorCodes.UNRESOLVED };
    }
    const decided = this.#decided.get(txid);
    this.#decided.delete(txid);
    return decided === 'committed' ? { status: 'committed', txid } : decided === 'aborted' ? { status: 'aborted', txid, code: TxErrorCodes.SHARD_UNAVAILABLE } : { status: 'unknown', txid, code: TxErrorCodes.UNRESOLVED };
  }

  #decided = new Map<bigint, 'committed' | 'aborted' | 'finished'>();

  /** Resolves this client's unsettled transactions and learns the H it left on every shard. */
  async #settle(): Promise<void> {
    while (this.#unsettled.length > 0) {
      const u = this.#unsettled[0]!;
      const r = await this.resolver.resolve(u.txid, u.participants);
      if (r === 'unknown') throw new PmrpcError(TxErrorCodes.UNRESOLVED, `${txName(u.txid)} could not be resolved (a shard stayed down)`);
      this.#decided.set(u.txid, r);
      this.#unsettled.shift();
      // Reclamation: the resolver decided abort and made it durable (fences and ABORTED FLUSHed on
      // every participant): T's items that are not marked yet are marked now (a shard that is down
      // keeps them until its recovery, R4).
      if (r === 'aborted' && u.ts !== undefined && u.items !== undefined) {
        for (const [s, items] of u.items) {
          const conn = this.#source(s);
          if (conn !== undefined) await this.#markDead(conn, u.txid, u.ts, items);
        }
      }
      // What the resolver left in this client's slots: re-learn every participant's H.
      for (let s = 0; (1n << BigInt(s)) <= u.participants; s++) if ((u.participants >> BigInt(s)) & 1n) this.#hPrev.delete(s);
    }
    if (this.#knownShards < 0 && this.incarnation > 1) this.#knownShards = (await this.#conn(0)).shards;
    for (const s of this.#needH()) {
      for (let round = 0; ; round++) {
        const conn = await this.#conn(s);
        const cs = await post(conn, [Wr.read(recAt(conn, this.client), 8), Wr.flush('persistent', conn.rkey, { addr: recAt(conn, this.client).addr, len: 8 })]);
        if (cs === undefined) throw new PmrpcError(TxErrorCodes.SHARD_UNAVAILABLE, `shard ${s} did not answer`);
        const h = new DataView(cs[0]!.data!.buffer, cs[0]!.data!.byteOffset).getBigUint64(0, true);
        if (this.#staleBy(h, makeTxid(this.client, this.incarnation, this.#seq), false)) {
          this.#stale = `client slot ${this.client}, incarnation ${this.incarnation}: shard ${s} holds ${describeH(h)}, a transaction this client did not run (the incarnation is used by another client, or reused)`;
          throw new PmrpcError(TxErrorCodes.STALE_INCARNATION, this.#stale);
        }
        // A reused slot (a later incarnation): a transaction of an earlier one still PREPARED here is
        // settled before this client prepares anything over its record (a later txid in the slot
        // tells every resolver that T is final — row D1 — so it must be).
        if (h !== 0n && hState(h) === H_PREPARED && hTxid(h) !== 0n && !this.faults.reuseSlotUnsettled) {
          if (round >= RESOLVE_ROUNDS_MAX || (await this.resolver.resolve(hTxid(h))) === 'unknown') throw new PmrpcError(TxErrorCodes.UNRESOLVED, `${txName(hTxid(h))} of an earlier incarnation of client slot ${this.client} could not be resolved`);
          continue;
        }
        this.#hPrev.set(s, h);
        break;
      }
    }
  }

  /**
   * Marks T's items on one shard dead (docs/tx.md "Reclamation", table A). Called once per item,
   * only after T's abort is decided (and with the fault switch skipReturns, never). One chain:
   * - a guard: enhanced CAS `ne` on the client's H there, against PREPARED(T), swapping nothing —
   *   it succeeds iff H no longer says PREPARED(T) (as the NIC's atomics see it, another QP's
   *   undrained ABORTED(T) included) and writes that value back through this QP; then a FLUSH of
   *   H: the abort is durable on this shard before any mark (a crash can never bring back a
   *   PREPARED(T) record naming a marked item). Every later op is conditional on it;
   * - per item an enhanced CAS on its [ts, key] words — it swaps only T's own item — setting the
   *   mark, then a FLUSH so that the marks drain (the shard CPU's sweep sees only drained memory).
   * The mutant return-before-decided posts the marks without the guard, before T is decided.
   */
  async #markDead(conn: ShardConn, txid: bigint, ts: bigint, items: ReadonlyArray<{ key: number; ptr: number }>): Promise<void> {
    if (items.length === 0 || this.faults.skipReturns) return;
    const guarded = !this.faults.returnBeforeDecided;
    const wrs: WorkRequest[] = [];
    if (guarded) {
      const rec = recAt(conn, this.client);
      wrs.push(Wr.prismCas('ne', rec, u64(hWord(txid, H_PREPARED)), { swapMask: u64(0n) }));
      wrs.push(Wr.flush('persistent', conn.rkey, { addr: rec.addr, len: 8 }, { conditional: true }));
    }
    for (const it of items) {
      wrs.push(Wr.prismCas('eq', { rkey: conn.rkey, addr: it.ptr + 8 }, words(ts, BigInt(it.key) | (ITEM_DEAD << 32n)), { compareMask: words(ONES, 0xffffffffn), swapMask: words(0n, 0xffffffff00000000n), conditional: guarded }));
    }
    wrs.push(Wr.flush('persistent', conn.rkey, { addr: items[0]!.ptr + ITEM_MARK_WORD, len: 8 }));
    const cs = await post(conn, wrs);
    if (cs === undefined) this.reclaimStats.markChainsLost++;
    else if (guarded && cs[0]!.swapped !== true) this.reclaimStats.guardRefused++; // T still PREPARED here: its items wait for recovery (R4)
    else this.reclaimStats.marked += cs.slice(guarded ? 2 : 0, -1).filter((c) => c.swapped === true).length;
  }

  #knownShards = -1;
  #needH(): number[] {
    if (this.#knownShards < 0) {
      const c = this.#source(0);
      if (c === undefined) return [];
      this.#knownShards = c.shards;
    }
    const out: number[] = [];
    for (let s = 0; s < this.#knownShards; s++) if (!this.#hPrev.has(s) && (this.#seq > 0 || this.incarnation > 1)) out.push(s);
    return out;
  }
}

/** One install of round 2: the item ALLOCATEd in round 1 (pointer path), or the value the record carries (ALLOCATEd by round 2). */
export interface Install {
  key: number;
  ptr?: number;
  item?: Uint8Array;
}

/**
 * Round 2 of a commit on one participant (idempotent). `ok` when its chain completed; `installed`:
 * the items this chain installed (or found installed), for the client's location hints.
 */
async function commitOn(conn: ShardConn, client: number, txid: bigint, ts: bigint, keys: readonly number[], writes: ReadonlyArray<Install>, faults: Readonly<TxFaults>): Promise<{ ok: boolean; installed: Array<{ key: number; ptr: number }> }> {
  if (writes.some((w) => w.item !== undefined)) return commitValuesOn(conn, client, txid, ts, keys, writes, faults);
  const ptrs = writes.map((w) => ({ key: w.key, ptr: w.ptr! }));
  const rec = recAt(conn, client);
  const wrs: WorkRequest[] = [];
  for (const w of ptrs) wrs.push(Wr.prismCas('eq', slotAt(conn, w.key), words(ts, ts, txid, BigInt(w.ptr)), { compareMask: words(0n, 0n, ONES, 0n), swapMask: words(faults.installKeepsW ? 0n : ONES, ONES, 0n, ONES) }));
  // The install raises W with CT (W := ts): round 1 does not touch a key T's read locked (docs/tx.md
  // "Locks taken at read time"; mutant install-keeps-w). Every slot of T here, durable before
  // COMMITTED makes recovery drop T's record (R5): the installs, and the W that T's checks and
  // validations raised in round 1 (only the record restores those, R1').
  if (keys.length > 0 && !faults.skipInstallFlush) wrs.push(Wr.flush('persistent', conn.rkey, slotSpan(conn, keys)));
  wrs.push(Wr.cas(rec, hWord(txid, H_PREPARED), hWord(txid, H_COMMITTED)));
  wrs.push(Wr.flush('persistent', conn.rkey, { addr: rec.addr, len: 8 }));
  for (const w of ptrs) wrs.push(Wr.cas({ rkey: conn.rkey, addr: slotAt(conn, w.key).addr + 16 }, txid, 0n));
  const cs = await post(conn, wrs);
  if (cs === undefined) return { ok: false, installed: [] };
  checkInstalls(conn, txid, ts, ptrs, cs, ptrs.length + (keys.length > 0 && !faults.skipInstallFlush ? 1 : 0));
  return { ok: true, installed: ptrs };
}

/** Scratch bytes round 2 keeps per install of a carried value: [ts ts T ptr], the install CAS's operand (ALLOCATE redirects ptr into it). */
const INSTALL_SCRATCH = 32;

/**
 * Round 2 on one participant whose record carries T's new values (docs/tx.md "New values in the
 * record"). One chain, every op conditional on the one before: one WRITE of the installs' operands
 * [ts ts T ·] into the scratch (32 B each); per write key ALLOCATE the value, its address
 * redirected into the fourth word of its operand; one redirected FLUSH of exactly those items;
 * per write key install by PRISM CAS eq L = T from the scratch (W := ts, CT := ts, ptr := the
 * item); FLUSH T's slots; CAS H PREPARED(T) → COMMITTED(T); FLUSH; release; then a READ of the
 * scratch (where the items are: the client's hints, and the items to mark when an install failed).
 *
 * Two round 2s of T may run (the client's and a resolver's, or two resolvers'): each ALLOCATEs its
 * own copies. While L = T a later install replaces an earlier one (the same bytes; the sweep retires
 * the replaced item as a superseded value, table S). Once T released its locks (COMMITTED is durable
 * by then) an install no longer swaps and the rest of the chain is skipped: the items it ALLOCATEd
 * and did not install were never reachable and are marked dead (the sweep returns them: no leak), and
 * H must say COMMITTED(T) or a later transaction (read by a CAS 0 → 0, which changes nothing; anything else is
 * a committed T whose value is absent: PMRPC_ERR_INVARIANT). An ALLOCATE that finds the list empty
 * skips the rest too (its items marked likewise): T stays PREPARED for the resolver.
 */
async function commitValuesOn(conn: ShardConn, client: number, txid: bigint, ts: bigint, keys: readonly number[], writes: ReadonlyArray<Install>, faults: Readonly<TxFaults>): Promise<{ ok: boolean; installed: Array<{ key: number; ptr: number }> }> {
  invariant(writes.length * INSTALL_SCRATCH <= 256 && writes.every((w) => w.item !== undefined), () => `${txName(txid)}: ${writes.length} carried values do not fit round 2's scratch`);
  const rec = recAt(conn, client);
  const wrs: WorkRequest[] = [];
  const at: Array<{ alloc: number; cas: number }> = [];
  // The installs' operands [ts ts T ·] in one WRITE of the scratch; each ALLOCATE redirects its
  // item's address into the fourth word of its own.
  wrs.push(Wr.write({ scratch: 0 }, words(...writes.flatMap(() => [ts, ts, txid, 0n]))));
  writes.forEach((w, i) => {
    at.push({ alloc: wrs.length, cas: -1 });
    wrs.push(Wr.allocate(conn.rkey, ITEM_BYTES, w.item!, { redirect: i * INSTALL_SCRATCH + 24, conditional: true }));
  });
  // Every new item durable before any install publishes one: one redirected FLUSH of exactly the
  // items the ALLOCATEs placed (its count form reads their pointers in place, in the operands'
  // fourth words, INSTALL_SCRATCH apart; docs/verbs.md): one FLUSH's wait for the chain's next op,
  // not n, and nothing else flushed. Mutant install-without-item-flush: none.
  if (!faults.installWithoutItemFlush && writes.length > 0) {
    wrs.push(Wr.flushFrom('persistent', conn.rkey, { scratch: 24, count: writes.length, stride: INSTALL_SCRATCH }, ITEM_BYTES, { conditional: true }));
  }
  writes.forEach((w, i) => {
    at[i]!.cas = wrs.length;
    wrs.push(Wr.prismCasFrom('eq', slotAt(conn, w.key), { scratch: i * INSTALL_SCRATCH }, 32, { compareMask: words(0n, 0n, ONES, 0n), swapMask: words(faults.installKeepsW ? 0n : ONES, ONES, 0n, ONES), conditional: true }));
  });
  if (keys.length > 0 && !faults.skipInstallFlush) wrs.push(Wr.flush('persistent', conn.rkey, slotSpan(conn, keys), { conditional: wrs.length > 0 }));
  wrs.push(Wr.cas(rec, hWord(txid, H_PREPARED), hWord(txid, H_COMMITTED), { conditional: wrs.length > 0 }));
  wrs.push(Wr.flush('persistent', conn.rkey, { addr: rec.addr, len: 8 }, { conditional: true }));
  for (const w of writes) wrs.push(Wr.cas({ rkey: conn.rkey, addr: slotAt(conn, w.key).addr + 16 }, txid, 0n, { conditional: true }));
  const readAt = wrs.length;
  wrs.push(Wr.read({ scratch: 0 }, writes.length * INSTALL_SCRATCH));
  const cs = await post(conn, wrs);
  if (cs === undefined) return { ok: false, installed: [] };
  if (cs.every((c) => c.status === 'ok')) return { ok: true, installed: writes.map((w, i) => ({ key: w.key, ptr: ptrAtOf(cs[readAt]!.data!, i) })) };
  // Some op did not succeed (an install that did not swap, an ALLOCATE that found the list empty):
  // H as the NIC's atomics see it (a CAS 0 → 0: it changes nothing and returns H), for the check below.
  const hcs = await post(conn, [Wr.cas(rec, 0n, 0n)]);
  const hc = hcs?.[0];
  const hNow = hc?.data !== undefined && hc.data.length >= 8 ? new DataView(hc.data.buffer, hc.data.byteOffset).getBigUint64(0, true) : undefined;
  const over = hNow !== undefined && (hNow === hWord(txid, H_COMMITTED) || hTxid(hNow) > txid);
  const ptrAt = (i: number): number => ptrAtOf(cs[readAt]!.data!, i);
  const installed: Array<{ key: number; ptr: number }> = [];
  const orphans: number[] = [];
  let complete = true;
  writes.forEach((w, i) => {
    const a = cs[at[i]!.alloc]!;
    const c = cs[at[i]!.cas]!;
    if (c.swapped === true) {
      installed.push({ key: w.key, ptr: ptrAt(i) });
      return;
    }
    complete = false;
    if (a.status === 'ok') orphans.push(ptrAt(i));
    if (c.status !== 'ok') return; // skipped (an earlier op did not succeed: ALLOCATE found the list empty, or an earlier install did not swap)
    const old = c.data !== undefined && c.data.length >= 32 ? new DataView(c.data.buffer, c.data.byteOffset) : undefined;
    const ct = old?.getBigUint64(8, true);
    const lock = old?.getBigUint64(16, true);
    // T is committed: an install that does not swap finds T released — its value installed (CT = ts)
    // and H past PREPARED(T). Anything else is a committed transaction whose value is absent.
    if (hNow === undefined) return; // H not read (the shard did not answer): nothing to conclude; T is left to the resolver
    invariant(over || ct === ts, () => `${txName(txid)} is committed, but its install of key ${w.key} on shard ${conn.shard} found ${lock === undefined ? 'no slot' : lock === 0n ? 'no lock' : `the lock of ${txName(lock)}`} (CT ${String(ct)}), not T's lock nor T's value, while H was ${hNow === undefined ? 'unknown' : describeH(hNow)}`);
  });
  // Items ALLOCATEd but never installed (nothing ever reached them): marked dead, the sweep returns them.
  if (orphans.length > 0) await markOrphans(conn, ts, orphans);
  return { ok: hNow !== undefined && over, installed };
}

/** The item address ALLOCATE redirected into install i's scratch operand (from the chain's READ of the scratch). */
function ptrAtOf(sc: Uint8Array, i: number): number {
  return Number(new DataView(sc.buffer, sc.byteOffset + i * INSTALL_SCRATCH + 24, 8).getBigUint64(0, true));
}

/** Marks dead the items a round 2 ALLOCATEd and did not install (each T's own: the CAS compares its ts word). */
async function markOrphans(conn: ShardConn, ts: bigint, ptrs: readonly number[]): Promise<void> {
  const wrs: WorkRequest[] = [];
  for (const p of ptrs) wrs.push(Wr.prismCas('eq', { rkey: conn.rkey, addr: p + 8 }, words(ts, ITEM_DEAD << 32n), { compareMask: words(ONES, 0n), swapMask: words(0n, 0xffffffff00000000n) }));
  for (const p of ptrs) wrs.push(Wr.flush('persistent', conn.rkey, { addr: p + ITEM_MARK_WORD, len: 8 }));
  await post(conn, wrs);
}

/**
 * Invariant of round 2 (docs/tx.md "Invariants"): T is committed, so each install either swapped
 * (L = T) or finds T's value installed already (CT = ts, ptr = T's item: a resolver rolled T
 * forward on another QP), or T is over here — the H CAS behind it found COMMITTED(T) (a resolver
 * committed, released, and another transaction has the key since) or a later transaction of the
 * slot. Anything else — an install that found another lock or no lock while H still said
 * PREPARED(T) — is a committed transaction whose value is absent: PMRPC_ERR_INVARIANT.
 */
function checkInstalls(conn: ShardConn, txid: bigint, ts: bigint, writes: ReadonlyArray<{ key: number; ptr: number }>, cs: readonly Completion[], hAt: number): void {
  const hc = cs[hAt];
  const hOld = hc?.data !== undefined && hc.data.length >= 8 ? new DataView(hc.data.buffer, hc.data.byteOffset).getBigUint64(0, true) : undefined;
  const over = hc?.swapped !== true && hOld !== undefined && (hOld === hWord(txid, H_COMMITTED) || hTxid(hOld) > txid);
  for (let i = 0; i < writes.length; i++) {
    const c = cs[i]!;
    if (c.swapped === true || over) continue;
    const old = c.data !== undefined && c.data.length >= 32 ? new DataView(c.data.buffer, c.data.byteOffset) : undefined;
    const ct = old?.getBigUint64(8, true);
    const lock = old?.getBigUint64(16, true);
    const ptr = old === undefined ? undefined : Number(old.getBigUint64(24, true));
    invariant(ct === ts && ptr === writes[i]!.ptr, () => `${txName(txid)} is committed, but its install of key ${writes[i]!.key} on shard ${conn.shard} found ${lock === undefined ? 'no slot' : lock === 0n ? 'no lock' : `the lock of ${txName(lock)}`} (CT ${String(ct)}, item ${String(ptr)}), not T's lock nor T's value, while H was ${hOld === undefined ? 'unknown' : describeH(hOld)}`);
  }
}

/** Roll-back on one participant: H → ABORTED(T) where T's record is (durably first), then T's locks released. */
async function abortOn(conn: ShardConn, client: number, txid: bigint, hasRecord: boolean, locked: readonly number[]): Promise<boolean> {
  const rec = recAt(conn, client);
  const wrs: WorkRequest[] = [];
  if (hasRecord) {
    wrs.push(Wr.cas(rec, hWord(txid, H_PREPARED), hWord(txid, H_ABORTED)));
    wrs.push(Wr.flush('persistent', conn.rkey, { addr: rec.addr, len: 8 }));
  }
  for (const k of locked) wrs.push(Wr.cas({ rkey: conn.rkey, addr: slotAt(conn, k).addr + 16 }, txid, 0n));
  if (wrs.length === 0) return true;
  return (await post(conn, wrs)) !== undefined;
}

export type Resolution = 'committed' | 'aborted' | 'finished' | 'unknown';

interface ShardView {
  conn: ShardConn;
  h: bigint;
  body: RecordBody | undefined;
  slots: Slot[];
}

/**
 * The resolver (docs/tx.md, table D: TX_RESOLVER_TABLE in resolution.ts, rows D1–D7; D8 and D9 are
 * guards of its fences and releases): settles a transaction T left prepared by a crash of a
 * shard or of its client. Any party may run it (the client itself, a restarted shard's agent, a
 * shard whose client's lease ran out); two resolvers reach the same decision. Safety never
 * depends on when it runs.
 */
export class TxResolver {
  readonly faults: Readonly<TxFaults>;
  readonly #source: ShardSource;
  readonly #clock: Clock;
  /** Transactions this resolver settled, by decision (for reports). */
  readonly stats = { committed: 0, aborted: 0, finished: 0, fences: 0 };
  /** How many times each row of TX_RESOLVER_TABLE decided a round (row id → count). */
  readonly rows: Record<string, number> = {};

  constructor(source: ShardSource, options: { clock?: Clock | undefined; faults?: Partial<TxFaults> | undefined } = {}) {
    this.#source = source;
    this.#clock = options.clock ?? systemClock;
    this.faults = Object.freeze({ ...NO_TX_FAULTS, ...options.faults });
  }

  /** READ (+ FLUSH: never act on what is visible but not durable) client c's record and the slot table of shard s. */
  async #view(s: number, client: number): Promise<ShardView | undefined> {
    const conn = this.#source(s);
    if (conn === undefined) return undefined;
    const rec = recAt(conn, client);
    const wrs: WorkRequest[] = [Wr.read(rec, RECORD_BYTES), Wr.read({ rkey: conn.rkey, addr: conn.slots }, conn.keys * SLOT_BYTES)];
    if (!this.faults.resolverTrustsVisible) wrs.push(Wr.flush('persistent', conn.rkey, tablesRange(conn)));
    const cs = await post(conn, wrs);
    if (cs === undefined) return undefined;
    const r = cs[0]!.data!;
    const h = new DataView(r.buffer, r.byteOffset).getBigUint64(0, true);
    const body = decodeBody(r.subarray(RECORD_BODY));
    const t = cs[1]!.data!;
    const slots = Array.from({ length: conn.keys }, (_, i) => decodeSlot(t.subarray(i * SLOT_BYTES, (i + 1) * SLOT_BYTES)));
    return { conn, h, body: body !== undefined && body.txid === hTxid(h) ? body : undefined, slots };
  }

  /** Settles T (participants: a bit mask of shards, when the caller knows them). */
  async resolve(txid: bigint, participantsHint?: bigint): Promise<Resolution> {
    const client = txClient(txid);
    /** A commit decided while some participant's view predated T's prepare (set by the last round that read again for it). */
    let staleSeen: string | undefined;
    for (let round = 0; round < RESOLVE_ROUNDS_MAX; round++) {
      if (round > 0) await sleep(this.#clock, 1);
      staleSeen = undefined;
      const probe = this.#source(0) ?? [...Array(32).keys()].map((s) => this.#source(s)).find((c) => c !== undefined);
      const shards = probe?.shards;
      if (shards === undefined) continue;
      let mask = participantsHint ?? (1n << BigInt(shards)) - 1n;
      const views = new Map<number, ShardView>();
      let missing = false;
      const read = async (s: number): Promise<void> => {
        const v = await this.#view(s, client);
        if (v === undefined) missing = true;
        else views.set(s, v);
      };
      await Promise.all([...Array(shards).keys()].filter((s) => (mask >> BigInt(s)) & 1n).map(read));
      // A record names every participant (D0): widen to them.
      const body = [...views.values()].find((v) => v.h === hWord(txid, H_PREPARED) || v.h === hWord(txid, H_COMMITTED))?.body;
      if (body !== undefined && (body.participants & ~mask) !== 0n) {
        const extra = body.participants & ~mask;
        mask |= body.participants;
        await Promise.all([...Array(shards).keys()].filter((s) => (extra >> BigInt(s)) & 1n).map(read));
      }
      const hs = [...views.values()].map((v) => v.h);
      const mine = (h: bigint): boolean => h !== 0n && hTxid(h) === txid;
      // The decision is a row of TX_RESOLVER_TABLE (resolution.ts); D8 and D9 are guards of the fences and releases below.
      const named = body === undefined ? [] : [...Array(shards).keys()].filter((s) => (body.participants >> BigInt(s)) & 1n);
      const recorded = named.filter((s) => views.get(s)?.h === hWord(txid, H_PREPARED));
      const yes = (b: boolean): 'yes' | 'no' => (b ? 'yes' : 'no');
      const row = decideTxResolution({
        later: yes(hs.some((h) => h !== 0n && hTxid(h) > txid && txClient(hTxid(h)) === client)),
        committed: yes(hs.some((h) => h === hWord(txid, H_COMMITTED))),
        ended: yes(hs.some((h) => h === hWord(txid, H_ABORTED) || h === hWord(txid, H_FENCED))),
        record: body === undefined ? 'none' : recorded.length === named.length || (this.faults.resolverWithoutCommitPoint && recorded.length > 0) ? 'all' : 'some',
        missing: yes(missing),
      });
      this.rows[row.id] = (this.rows[row.id] ?? 0) + 1;
      let decision: 'commit' | 'abort' | undefined;
      switch (row.action) {
        case 'finish':
          // D1: a later transaction of the same client slot: T is final everywhere (the client moved on only then).
          await this.#unlockAll(views, txid);
          this.stats.finished++;
          return 'finished';
        case 'commit':
          decision = 'commit'; // D2, D4
          break;
        case 'wait':
          continue; // D7: a participant is down: its record may be durable there
        case 'abort':
          decision = 'abort'; // D3
          // D9: round 1 trusts a lock its read took on the same connection without checking it
          // (docs/tx.md "Locks taken at read time"), so a lock of T is released only where T can no
          // longer prepare: where H names T (its prepare landed there, or it is fenced there) or a
          // later transaction of the slot. D3 may find T's locks on a shard whose H is neither (T
          // aborted by another shard's fence while it may still be executing, and prepare here
          // later): T is fenced there first; a fence that does not swap proves nothing: read again.
          if (!this.faults.releaseWithoutFence) {
            const open = [...views.values()].filter((v) => v.slots.some((sl) => sl.lock === txid) && (v.h === 0n || hTxid(v.h) < txid));
            if (open.length > 0 && !(await this.#fence(open, txid))) continue;
          }
          break;
        case 'fence-unrecorded': {
          // D5: fence T where it has no record; a fence that did not swap proves nothing: read again.
          const fenced = await this.#fence(named.filter((s) => !recorded.includes(s)).map((s) => views.get(s)!), txid);
          if (!fenced) continue;
          decision = 'abort';
          break;
        }
        case 'fence-touched': {
          // D6: no record of T anywhere it was looked for: fence it on every shard it touched (its locks) or was named for.
          const touched = [...views.values()].filter((v) => v.slots.some((sl) => sl.lock === txid) || participantsHint !== undefined);
          if (touched.some((v) => mine(v.h) && hState(v.h) === H_PREPARED)) continue;
          // D8 over every shard: T exists without a record (its reads took locks) while an earlier
          // transaction U of the slot may still be PREPARED on shards T never touched (U's commit
          // was reported at its commit point; its round 2 had not landed). A fence of T anywhere
          // would then tell every resolver that U is final (D1) before U is: U is resolved first.
          if (!this.faults.fenceOverPrepared) {
            await Promise.all([...Array(shards).keys()].filter((s) => !views.has(s)).map(read));
            if (missing) continue;
            const earlier = [...views.values()].find((v) => v.h !== 0n && hState(v.h) === H_PREPARED && hTxid(v.h) < txid);
            if (earlier !== undefined) {
              await this.resolve(hTxid(earlier.h));
              continue;
            }
          }
          const fenced = await this.#fence(touched.length > 0 ? touched : [...views.values()].slice(0, 1), txid);
          if (!fenced) continue;
          decision = 'abort';
          break;
        }
      }
      if (decision === 'commit') {
        const parts = [...Array(shards).keys()].filter((s) => ((body?.participants ?? mask) >> BigInt(s)) & 1n);
        if (parts.some((s) => !views.has(s))) continue;
        // The shards were read at different moments (their QPs run at different speeds): a
        // participant whose view shows no H or an earlier one of this client slot (a smaller txid)
        // was read before T's prepare landed there. Commit was decided (D2/D4), so T's commit point
        // was reached: every participant held a durable PREPARED(T), and H only moves forward from
        // it. The view is stale, not a participant without a record: read again (a genuine
        // participant without T's record would stay so, and is reported once the rounds run out).
        const stale = this.faults.resolverWithoutCommitPoint ? undefined : parts.find((s) => {
          const h = views.get(s)!.h;
          return h === 0n || hTxid(h) < txid;
        });
        if (stale !== undefined) {
          staleSeen = `shard ${stale} holds ${views.get(stale)!.h === 0n ? 'no record' : `H of an earlier transaction (${txName(hTxid(views.get(stale)!.h))})`}`;
          continue;
        }
        let ok = true;
        for (const s of parts) {
          const v = views.get(s)!;
          const b = v.body;
          if (v.h === hWord(txid, H_COMMITTED)) {
            ok = (await this.#unlock(v, txid)) && ok;
            continue;
          }
          if ((v.h !== hWord(txid, H_PREPARED) || b === undefined) && this.faults.resolverWithoutCommitPoint) continue;
          if (v.h !== hWord(txid, H_PREPARED) || b === undefined) {
            // Decided commit while a participant holds no record of T: the commit point was not reached.
            throw new PmrpcError(TxErrorCodes.UNRESOLVED, `${txName(txid)}: commit decided but shard ${s} holds ${v.h === 0n ? 'no record' : `H ${hTxid(v.h) === txid ? hState(v.h) : 'of another transaction'}`}`);
          }
          const here = b.entries.filter((e) => e.key % shards === s);
          // A record carrying values: round 2 ALLOCATEs them from the record's bytes (mutant
          // roll-forward-ignores-record-values: installs nothing, as if they were installed).
          const writes: Install[] = here.filter((e) => e.kind === ENTRY_WRITE).flatMap((e): Install[] => (b.values === true ? (this.faults.rollForwardIgnoresValues ? [] : [{ key: e.key, item: e.item! }]) : [{ key: e.key, ptr: e.newPtr }]));
          ok = (await commitOn(v.conn, client, txid, b.ts, here.map((e) => e.key), writes, this.faults)).ok && ok;
        }
        if (!ok) continue;
        this.stats.committed++;
        return 'committed';
      }
      let ok = true;
      for (const v of views.values()) {
        const locked = v.slots.flatMap((sl, i) => (sl.lock === txid ? [i * shards + v.conn.shard] : []));
        ok = (await abortOn(v.conn, client, txid, v.h === hWord(txid, H_PREPARED), locked)) && ok;
      }
      if (!ok) continue;
      this.stats.aborted++;
      return 'aborted';
    }
    // Every round read again for a participant that still holds no record of a committed T: not a stale view.
    if (staleSeen !== undefined) throw new PmrpcError(TxErrorCodes.UNRESOLVED, `${txName(txid)}: commit decided but ${staleSeen} in every one of ${RESOLVE_ROUNDS_MAX} rounds`);
    return 'unknown';
  }

  /** Durable fences of T on `views` (CAS H: the value read → FENCED(T); FLUSH). True when every one holds. */
  async #fence(views: ShardView[], txid: bigint): Promise<boolean> {
    const client = txClient(txid);
    let all = true;
    for (const v of views) {
      if (v.h !== 0n && hTxid(v.h) === txid) continue;
      if (this.faults.resolverNoFence) continue;
      // An earlier transaction U of the slot still PREPARED here (U's commit may have been reported
      // at its commit point, its round 2 not landed yet): a fence of T would replace U's record —
      // a crash would then lose U's install, and every resolver would read the later txid as "U
      // is final" (D1). U is resolved first (rolled forward or back), then read again (row D8).
      if (v.h !== 0n && hState(v.h) === H_PREPARED && !this.faults.fenceOverPrepared) {
        await this.resolve(hTxid(v.h));
        all = false;
        continue;
      }
      const rec = recAt(v.conn, client);
      checkHEdge(v.h, hWord(txid, H_FENCED), `the resolver's fence of ${txName(txid)} on shard ${v.conn.shard}`);
      const cs = await post(v.conn, [Wr.cas(rec, v.h, hWord(txid, H_FENCED)), Wr.flush('persistent', v.conn.rkey, { addr: rec.addr, len: 8 })]);
      if (cs === undefined || cs[0]!.swapped !== true) all = false;
      else this.stats.fences++;
    }
    return all;
  }

  async #unlock(v: ShardView, txid: bigint): Promise<boolean> {
    const locked = v.slots.flatMap((sl, i) => (sl.lock === txid ? [i * v.conn.shards + v.conn.shard] : []));
    return abortOn(v.conn, txClient(txid), txid, false, locked);
  }

  async #unlockAll(views: Map<number, ShardView>, txid: bigint): Promise<void> {
    for (const v of views.values()) await this.#unlock(v, txid);
  }

  /**
   * One pass over every reachable shard: every transaction found in doubt (a lock, or a PREPARED
   * record) is resolved. `only`: resolve only these (e.g. seen in doubt twice: a lease ran out).
   * Returns the transactions found in doubt.
   */
  async scan(): Promise<{ inDoubt: bigint[]; hints: Map<bigint, bigint> }> {
    const probe = this.#source(0);
    const shards = probe?.shards ?? 0;
    const found = new Map<bigint, bigint>();
    for (let s = 0; s < shards; s++) {
      const conn = this.#source(s);
      if (conn === undefined) continue;
      const wrs: WorkRequest[] = [Wr.read({ rkey: conn.rkey, addr: conn.records }, conn.clients * RECORD_BYTES), Wr.read({ rkey: conn.rkey, addr: conn.slots }, conn.keys * SLOT_BYTES)];
      const cs = await post(conn, wrs);
      if (cs === undefined) continue;
      const recs = cs[0]!.data!;
      for (let c = 0; c < conn.clients; c++) {
        const h = new DataView(recs.buffer, recs.byteOffset + c * RECORD_BYTES).getBigUint64(0, true);
        if (h !== 0n && hState(h) === H_PREPARED) {
          const b = decodeBody(recs.subarray(c * RECORD_BYTES + RECORD_BODY, (c + 1) * RECORD_BYTES));
          found.set(hTxid(h), (found.get(hTxid(h)) ?? 0n) | (b !== undefined && b.txid === hTxid(h) ? b.participants : 1n << BigInt(s)));
        }
      }
      const t = cs[1]!.data!;
      for (let i = 0; i < conn.keys; i++) {
        const l = new DataView(t.buffer, t.byteOffset + i * SLOT_BYTES + 16).getBigUint64(0, true);
        if (l !== 0n) found.set(l, (found.get(l) ?? 0n) | (1n << BigInt(s)));
      }
    }
    return { inDoubt: [...found.keys()], hints: found };
  }

  /** Scans and resolves until nothing is in doubt (bounded). Returns how many passes found something. */
  async resolveAll(passesMax = 8, only?: (txid: bigint, participants: bigint | undefined) => boolean): Promise<{ passes: number; left: bigint[] }> {
    let left: bigint[] = [];
    for (let pass = 0; pass < passesMax; pass++) {
      // What a READ shows may lag what the NIC's atomics see (another QP's undrained result, e.g. a
      // client's own release): a pass that found something waits before looking again.
      if (pass > 0) await sleep(this.#clock, 1);
      const { inDoubt, hints } = await this.scan();
      left = inDoubt.filter((t) => only === undefined || only(t, hints.get(t)));
      if (left.length === 0) return { passes: pass, left };
      for (const t of left) await this.resolve(t, hints.get(t));
    }
    return { passes: passesMax, left };
  }
}
