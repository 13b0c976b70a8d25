/**
 * The client of the lock-based replication baseline (DESIGN §5, §9): one QueuePair per replica,
 * standard verbs only (READ, WRITE, 8-byte CAS, FLUSH) — no PRISM extension — built per the
 * SIGMOD'23 guidelines for one-sided synchronisation (docs/references.md §4.6):
 *
 * Quorum. Every operation goes to a majority Q: the first ⌊N/2⌋+1 replicas this client can reach,
 * in index order (so all clients contend on the same locks and a lock never deadlocks across
 * replicas with another writer's). Majority, not all: a write completes without waiting for the
 * slowest or a dead replica, and the baseline tolerates the same f < N/2 crashed replicas as
 * PRISM-RS (a write-all / read-one scheme would read cheaper but block every write on any crash).
 *
 * write(b, data), 2 round trips:
 *  1. lock: one doorbell per member [CAS the block's lock word 0 → this client's tag; FAA 0 on
 *     the publish word beside it] — a lock word per block on its own cache line; the FAA is the
 *     speculative read issued right behind the CAS (SIGMOD'23), atomic so that it sees a release
 *     still in another QP's NIC cache (a READ would not). It returns the block's version and slot.
 *     A lock found held releases what this write took (all or none: no deadlock across replicas)
 *     and backs off, randomised and bounded.
 *  2. install, write-combined into one doorbell per member: WRITE the record ⟨version', data, crc⟩
 *     into the slot the publish word does not name (out of place); FLUSH(persistent) that slot;
 *     WRITE the line [lock 0 | version', that slot] (write unlatch: the release publishes the new
 *     slot, legal for a CAS-acquired exclusive lock); FLUSH(global) of the line (the release
 *     reaches host memory before the ack, so readers do not spin on a release parked in the NIC
 *     cache). The unlatch is asynchronous: it rides in the message whose FLUSH the write waits
 *     for anyway, costing no round trip. version' = max version over Q + 1: Q intersects every
 *     earlier write's quorum.
 *  The write is acknowledged when every member's FLUSH(persistent) completed: durable on a majority.
 *
 * read(b), 1 round trip when uncontended: on every member one doorbell [READ the record slot(s);
 * READ the lock word] — the speculative read, validated after the fact. Blocks whose two slots
 * together fit BOTH_SLOTS_BYTES_MAX read both adjacent slots in one READ (a few hundred bytes more
 * cost less than a round trip); larger ones read the slot their cached lock word names. A member's
 * answer is valid when the lock word read after the record is unlocked, names the slot read and
 * carries the record's version (and the record's checksum holds): a replica installs each version
 * once, into the slot the word did not name, and publishes it only after its FLUSH — so the record
 * is the published one, durable, and untouched while that word stands. A member whose word named
 * the other slot is read again (one more round trip); a held lock backs off. When the valid answers
 * of Q disagree (a write failed part-way: a replica crashed, or a spare replaced a dead member) the
 * read writes the highest record back under locks that expect exactly the words it read — so
 * nothing newer can be overwritten — before returning it (ABD's write-back).
 *
 * Failure model: replicas may crash and restart (recovery re-derives every lock word, releasing
 * locks the crash cut); a write that loses a member mid-way is retried on a new quorum (bounded;
 * a write that cannot reach a majority fails with PMRPC_ERR_RSLOCK_NO_MAJORITY: it may or may not
 * have happened). A client that dies holding locks leaves them held — the inherent weakness of
 * lock-based replication without leases (FORD has no recovery either): its blocks then fail with
 * PMRPC_ERR_RSLOCK_CONTENDED after the retry bound. PRISM-RS has no locks to leave.
 */
import { callable, createPrng, intIn, invariant, oneOf, optional, PmrpcError, positiveMs, resolveOptions, systemClock, type Clock, type OptionChecks, type Prng } from '../../../pmem/index.js';
import { NicErrorCodes, QueuePair, Wr, type Completion, type WorkRequest } from '../../../flush/index.js';
import { parseJsonBytes } from '../index.js';
import type { RsLockFaults } from './faults.js';
import type { RsLockAddress } from './server.js';
import { decodeLockLine, decodePublish, decodeRecord, encodeLockLine, encodeRecord, LOCK_LINE_BYTES, LOCK_STRIDE, publishWord, RsLockErrorCodes, u64At, type BlockRecord } from './layout.js';

/**
 * 'sigmod23' (default): the SIGMOD'23-guided protocol of the file comment. 'paper': the plain lock
 * → access → unlock replication PRISM (SOSP'21) measured against — every operation, read or write,
 * takes the block's lock on a majority (1 RTT), accesses the record (a write: WRITE + FLUSH
 * persistent of the other slot; a read: READ of the published slot) (1 RTT), and releases the lock
 * (WRITE of the lock line + FLUSH global), waiting for the release (1 RTT): 3 round trips, readers
 * exclusive too. Same layout, same recovery, same durability (a record is FLUSHed before the
 * release publishes it).
 */
export type RsLockStyle = 'sigmod23' | 'paper';
export const RSLOCK_STYLES: readonly RsLockStyle[] = Object.freeze(['sigmod23', 'paper']);

export interface RsLockClientOptions {
  /** The protocol: the SIGMOD'23-guided one (default) or the paper's plain lock → access → unlock (RsLockStyle). */
  style: RsLockStyle;
  /** Lock attempts of one write (and of one read's repair) before PMRPC_ERR_RSLOCK_CONTENDED. */
  lockRetriesMax: number;
  /** Read rounds of one read before PMRPC_ERR_RSLOCK_CONTENDED (a block written without pause). */
  readRetriesMax: number;
  /** Retries of an operation on a new quorum after a replica was lost mid-way. */
  quorumRetriesMax: number;
  /** Longest randomised back-off after a held lock, ms (the first back-offs only yield). */
  backoffMsMax: number;
  /** The back-off timers' clock (the explorer passes its virtual clock). */
  clock: Clock;
  /** The back-off's randomness (seeded). */
  prng: Prng | undefined;
  /** Called when the client stops using replica `i` (its link closed or its QP broke). */
  onReplicaLost: ((i: number) => void) | undefined;
  /** Test-only fault switches (mutants of the persistence path, for the crash explorer's teeth). */
  faults: Partial<RsLockFaults>;
}

export const RSLOCK_CLIENT_DEFAULTS: Readonly<RsLockClientOptions> = Object.freeze({
  style: 'sigmod23',
  lockRetriesMax: 200,
  readRetriesMax: 200,
  quorumRetriesMax: 4,
  backoffMsMax: 2,
  clock: systemClock,
  prng: undefined,
  onReplicaLost: undefined,
  faults: Object.freeze({}),
});

const CHECKS: OptionChecks<RsLockClientOptions> = {
  style: oneOf(RSLOCK_STYLES),
  lockRetriesMax: intIn(0, 1_000_000),
  readRetriesMax: intIn(0, 1_000_000),
  quorumRetriesMax: intIn(0, 1000),
  backoffMsMax: positiveMs,
  onReplicaLost: optional(callable()),
};

export interface RsLockClientStats {
  reads: number;
  writes: number;
  /** Round trips (phases: one message to each quorum member in parallel = one). */
  roundTrips: number;
  /** Messages (doorbells) posted, one per member per phase. */
  messages: number;
  /** Round trips of the last read / write. */
  lastOpRoundTrips: number;
  /** Lock attempts that found a lock held (each followed by a back-off). */
  lockConflicts: number;
  /** Read rounds that did not validate (a changed or held lock word, a torn record). */
  readRetries: number;
  /** Reads that wrote the highest record back to members behind. */
  repairs: number;
}

/** One replica as the client sees it. */
export interface RsLockReplica {
  qp: QueuePair;
  address: RsLockAddress;
}

/** The replica address in an rslock welcome. */
export function parseRsLockWelcome(welcome: Uint8Array): RsLockAddress {
  const w = parseJsonBytes(welcome);
  const keys = ['rkey', 'locks', 'records', 'blocks', 'blockBytes', 'slotBytes'] as const;
  if (w === undefined || w.app !== 'rslock' || !keys.every((k) => Number.isSafeInteger(w[k]))) {
    throw new PmrpcError(RsLockErrorCodes.NOT_FORMATTED, 'the welcome is not an rslock address {app, rkey, locks, records, blocks, blockBytes, slotBytes}');
  }
  return Object.fromEntries(keys.map((k) => [k, w[k] as number])) as unknown as RsLockAddress;
}

type Answer = Completion[] | undefined;

/** The largest version a publish word holds (63 bits: the word is version << 1 | slot). */
const PUBLISH_VERSION_MAX = (1n << 63n) - 1n;

/**
 * A replica's block goes only to a later version (DESIGN §10.1): the version installed is above
 * the one its publish word holds under this client's lock, and fits the word (past 2^63 - 1 it
 * would wrap to a small version that readers take for an old one). Checked before the WRITE of the
 * record is posted, so a violated one writes nothing.
 */
function checkInstallVersion(n: number, block: number, held: bigint, version: bigint): void {
  invariant(version > held && version <= PUBLISH_VERSION_MAX, () => `replica ${n}, block ${block}: the install would go from version ${held} to ${version}`);
}

/** Reads of blocks whose two slots together are at most this many bytes fetch both in one READ. */
export const BOTH_SLOTS_BYTES_MAX = 2048;

export class RsLockClient {
  readonly options: Readonly<RsLockClientOptions>;
  readonly replicas: number;
  readonly majority: number;
  readonly blocks: number;
  readonly blockBytes: number;
  readonly #nodes: Array<RsLockReplica | undefined>;
  readonly #prng: Prng;
  /** Per replica, per block: the publish word last seen (a hint for readers: the lock line read after the record checks it). */
  readonly #cache: Array<Map<number, bigint>>;
  #stats: RsLockClientStats = { reads: 0, writes: 0, roundTrips: 0, messages: 0, lastOpRoundTrips: 0, lockConflicts: 0, readRetries: 0, repairs: 0 };
  #opRtts = 0;
  #closed = false;
  readonly #slotBytes: number;
  /** What this client's lock CAS writes into a lock word it takes (never 0). */
  readonly #tag: bigint;

  /**
   * A client of the replicas reached by `links` (index = replica; undefined = down). Every replica
   * must describe the same geometry.
   */
  static connect(links: ReadonlyArray<{ qp: QueuePair; welcome: Uint8Array } | undefined>, options: Partial<RsLockClientOptions> = {}): RsLockClient {
    if (!Array.isArray(links) || links.length < 1) throw new TypeError('links must be a non-empty array (one entry per replica, undefined when down)');
    const o = resolveOptions(RSLOCK_CLIENT_DEFAULTS, options, CHECKS);
    const nodes = links.map((l, i) => {
      if (l === undefined) return undefined;
      if (!(l.qp instanceof QueuePair)) throw new TypeError(`links[${i}].qp must be a QueuePair`);
      return { qp: l.qp, address: parseRsLockWelcome(l.welcome) };
    });
    const first = nodes.find((n) => n !== undefined);
    if (first === undefined) throw new PmrpcError(RsLockErrorCodes.NO_MAJORITY, 'no replica reachable');
    for (const n of nodes) {
      if (n !== undefined && (n.address.blocks !== first.address.blocks || n.address.blockBytes !== first.address.blockBytes)) {
        throw new PmrpcError(RsLockErrorCodes.NOT_FORMATTED, 'the replicas disagree on the geometry (blocks, blockBytes)');
      }
    }
    return new RsLockClient(nodes, first.address, o);
  }

  private constructor(nodes: Array<RsLockReplica | undefined>, a: RsLockAddress, o: RsLockClientOptions) {
    this.options = Object.freeze(o);
    this.#nodes = nodes;
    this.replicas = nodes.length;
    this.majority = Math.floor(nodes.length / 2) + 1;
    this.blocks = a.blocks;
    this.blockBytes = a.blockBytes;
    this.#slotBytes = a.slotBytes;
    this.#prng = o.prng ?? createPrng(0x5eed);
    this.#cache = nodes.map(() => new Map());
    this.#tag = (BigInt(this.#prng.u32()) << 1n) | 1n;
  }

  get stats(): Readonly<RsLockClientStats> {
    return { ...this.#stats };
  }

  // ---------------------------------------------------------------- write

  async write(block: number, data: Uint8Array): Promise<void> {
    this.#check(block);
    if (!(data instanceof Uint8Array)) throw new TypeError('data must be a Uint8Array');
    if (data.length > this.blockBytes) throw new PmrpcError(RsLockErrorCodes.VALUE_TOO_LARGE, `a block holds at most ${this.blockBytes} bytes, got ${data.length}`);
    this.#opRtts = 0;
    this.#stats.writes++;
    try {
      for (let q = 0; ; q++) {
        const members = this.#quorum();
        const held = await this.#lock(block, members, undefined);
        if (held === 'lost' || held === 'changed') {
          if (q >= this.options.quorumRetriesMax) throw this.#noMajority('a replica was lost while locking');
          continue;
        }
        let version = 0n;
        for (const w of held.values()) if (decodePublish(w).version > version) version = decodePublish(w).version;
        const ok = this.options.style === 'paper' ? await this.#installPaper(block, held, { version: version + 1n, data }, undefined) : await this.#install(block, held, { version: version + 1n, data }, undefined);
        if (ok) return;
        // A member was lost mid-install: the write may have happened; write again on a new quorum.
        if (q >= this.options.quorumRetriesMax) throw this.#noMajority('a replica was lost while installing (the write may or may not have happened)');
      }
    } finally {
      this.#stats.lastOpRoundTrips = this.#opRtts;
    }
  }

  /**
   * Acquires the lock of `block` on every member, all or none: one doorbell per member
   * [CAS lock 0 → tag; FAA publish + 0] — the FAA is the speculative read of the publish word,
   * atomic so that it sees a release still in another QP's NIC cache. Returns the publish words
   * held, 'lost' when a member broke, 'changed' when `exact` (a repair) expected other words.
   * A held lock releases what was taken and backs off (randomised, bounded).
   */
  async #lock(block: number, members: number[], exact: Map<number, bigint> | undefined): Promise<Map<number, bigint> | 'lost' | 'changed'> {
    for (let attempt = 0; ; attempt++) {
      const answers = await this.#round(
        members.map((n) => {
          const line = this.#lockLoc(n, block);
          return [n, [Wr.cas(line, 0n, this.#tag), Wr.faa({ rkey: line.rkey, addr: line.addr + 8 }, 0n)]];
        }),
      );
      const held = new Map<number, bigint>();
      let busy = false;
      let lost = false;
      let changed = false;
      members.forEach((n, i) => {
        const cs = answers[i];
        if (cs === undefined || cs.some((c) => c.status !== 'ok')) {
          lost = true;
          return;
        }
        if (cs[0]!.swapped !== true) {
          busy = true;
          return;
        }
        const pw = u64At(cs[1]!.data!);
        held.set(n, pw);
        if (exact !== undefined && exact.get(n) !== pw) changed = true;
      });
      if (!lost && !busy && !changed) return held;
      this.#release(block, held);
      if (lost) return 'lost';
      if (changed) return 'changed';
      this.#stats.lockConflicts++;
      if (attempt >= this.options.lockRetriesMax) throw new PmrpcError(RsLockErrorCodes.CONTENDED, `block ${block}: its lock stayed held through ${attempt + 1} attempts`);
      await this.#backoff(attempt);
      if (exact !== undefined) return 'changed'; // a repair reads again first
    }
  }

  /** Asynchronous unlatch of locks taken without writing: [lock 0 | the publish word as it was], not awaited (the QP orders it before this client's next request). */
  #release(block: number, held: Map<number, bigint>): void {
    for (const [n, pw] of held) {
      const node = this.#nodes[n];
      if (node === undefined) continue;
      this.#stats.messages++;
      try {
        void node.qp.postChain(this.#unlatch(n, block, pw)).catch(() => undefined);
      } catch {
        this.#lost(n);
      }
    }
    held.clear();
  }

  /** The release: one 16-byte WRITE [lock 0 | publish word] (write unlatch), then FLUSH(global) so it is in host memory before the ack. */
  #unlatch(n: number, block: number, pw: bigint): WorkRequest[] {
    const line = this.#lockLoc(n, block);
    return [Wr.write(line, encodeLockLine({ ...decodePublish(pw), locked: false })), Wr.flush('global', line.rkey, { addr: line.addr, len: LOCK_LINE_BYTES })];
  }

  /**
   * Installs `record` on every member of `held` (or, `onlyBehind`, those whose version is below
   * it; the others are released unchanged): out of place, FLUSHed, then published by the release.
   * One round trip; true when every member answered.
   */
  async #install(block: number, held: Map<number, bigint>, record: BlockRecord, onlyBehind: true | undefined): Promise<boolean> {
    const bytes = encodeRecord(record);
    const posts: Array<[number, WorkRequest[]]> = [];
    const words = new Map<number, bigint>();
    for (const [n, pw] of held) {
      const node = this.#nodes[n]!;
      const cur = decodePublish(pw);
      if (onlyBehind === true && cur.version >= record.version) {
        posts.push([n, this.#unlatch(n, block, pw)]);
        words.set(n, pw);
        continue;
      }
      checkInstallVersion(n, block, cur.version, record.version);
      const slot = (this.options.faults.inPlace === true ? cur.slot : 1 - cur.slot) as 0 | 1;
      const at = this.#slotAddr(n, block, slot);
      const next = publishWord(record.version, slot);
      words.set(n, next);
      posts.push([
        n,
        [
          Wr.write({ rkey: node.address.rkey, addr: at }, bytes),
          ...(this.options.faults.skipFlush === true ? [] : [Wr.flush('persistent', node.address.rkey, { addr: at, len: bytes.length })]),
          ...this.#unlatch(n, block, next),
        ],
      ]);
    }
    const answers = await this.#round(posts);
    let all = true;
    posts.forEach(([n], i) => {
      const cs = answers[i];
      if (cs === undefined || cs.some((c) => c.status !== 'ok')) {
        all = false;
        if (cs !== undefined) this.#lost(n);
        return;
      }
      this.#cache[n]!.set(block, words.get(n)!);
    });
    return all;
  }

  /**
   * The paper's install: WRITE + FLUSH(persistent) of the record into the other slot on every member
   * of `held` (or, `onlyBehind`, those below its version) — 1 round trip, awaited — then the release
   * publishing it (or, unchanged, the word as held), awaited: 1 more. True when every member answered.
   */
  async #installPaper(block: number, held: Map<number, bigint>, record: BlockRecord, onlyBehind: true | undefined): Promise<boolean> {
    const bytes = encodeRecord(record);
    const posts: Array<[number, WorkRequest[]]> = [];
    const words = new Map<number, bigint>(held);
    for (const [n, pw] of held) {
      const cur = decodePublish(pw);
      if (onlyBehind === true && cur.version >= record.version) continue;
      checkInstallVersion(n, block, cur.version, record.version);
      const slot = (this.options.faults.inPlace === true ? cur.slot : 1 - cur.slot) as 0 | 1;
      const at = this.#slotAddr(n, block, slot);
      const rkey = this.#nodes[n]!.address.rkey;
      words.set(n, publishWord(record.version, slot));
      posts.push([n, [Wr.write({ rkey, addr: at }, bytes), ...(this.options.faults.skipFlush === true ? [] : [Wr.flush('persistent', rkey, { addr: at, len: bytes.length })])]]);
    }
    let all = true;
    if (posts.length > 0) {
      const answers = await this.#round(posts);
      posts.forEach(([n], i) => {
        const cs = answers[i];
        if (cs === undefined || cs.some((c) => c.status !== 'ok')) {
          all = false;
          words.delete(n);
          if (cs !== undefined) this.#lost(n);
        }
      });
    }
    return (await this.#unlockPaper(block, words)) && all;
  }

  /** The paper's unlock: the release of every member in `words` (their publish words), awaited (1 round trip). */
  async #unlockPaper(block: number, words: Map<number, bigint>): Promise<boolean> {
    const posts: Array<[number, WorkRequest[]]> = [...words].filter(([n]) => this.#nodes[n] !== undefined).map(([n, w]) => [n, this.#unlatch(n, block, w)]);
    if (posts.length === 0) return words.size === 0;
    const answers = await this.#round(posts);
    let all = posts.length === words.size;
    posts.forEach(([n], i) => {
      const cs = answers[i];
      if (cs === undefined || cs.some((c) => c.status !== 'ok')) all = false;
      else this.#cache[n]!.set(block, words.get(n)!);
    });
    return all;
  }

  /** The paper's read: lock on the quorum, READ of each published slot, write-back where behind, unlock. */
  async #readPaper(block: number): Promise<Uint8Array | null> {
    let quorumLosses = 0;
    for (let attempt = 0; ; attempt++) {
      if (attempt > this.options.readRetriesMax) throw new PmrpcError(RsLockErrorCodes.CONTENDED, `block ${block}: no consistent read in ${attempt} rounds`);
      const members = this.#quorum();
      const held = await this.#lock(block, members, undefined);
      if (held === 'lost' || held === 'changed') {
        if (++quorumLosses > this.options.quorumRetriesMax) throw this.#noMajority('a replica was lost while locking');
        continue;
      }
      const answers = await this.#round(members.map((n) => [n, [Wr.read({ rkey: this.#nodes[n]!.address.rkey, addr: this.#slotAddr(n, block, decodePublish(held.get(n)!).slot) }, this.#slotBytes)]]));
      const records: BlockRecord[] = [];
      let lost = false;
      let torn = false;
      members.forEach((n, i) => {
        const c = answers[i]?.[0];
        if (c === undefined || c.status !== 'ok') {
          lost = true;
          return;
        }
        const pw = decodePublish(held.get(n)!);
        const rec = pw.version === 0n ? { version: 0n, data: new Uint8Array(0) } : decodeRecord(c.data!, this.blockBytes);
        if (rec === undefined || rec.version !== pw.version) torn = true;
        else records.push(rec);
      });
      if (lost || torn) {
        await this.#unlockPaper(block, held).catch(() => false);
        if (lost && ++quorumLosses > this.options.quorumRetriesMax) throw this.#noMajority('a replica was lost while reading');
        if (torn) this.#stats.readRetries++;
        continue;
      }
      let top = records[0]!;
      for (const r of records) if (r.version > top.version) top = r;
      if (records.every((r) => r.version === top.version)) {
        if (!(await this.#unlockPaper(block, held)) && ++quorumLosses > this.options.quorumRetriesMax) throw this.#noMajority('a replica was lost while unlocking');
        return top.version === 0n ? null : top.data;
      }
      // The quorum disagrees: the highest record goes to the members behind, under the locks held, then the unlock.
      if (!(await this.#installPaper(block, held, top, true))) {
        if (++quorumLosses > this.options.quorumRetriesMax) throw this.#noMajority('a replica was lost while repairing');
        continue;
      }
      this.#stats.repairs++;
      return top.version === 0n ? null : top.data;
    }
  }

  // ---------------------------------------------------------------- read

  async read(block: number): Promise<Uint8Array | null> {
    this.#check(block);
    this.#opRtts = 0;
    this.#stats.reads++;
    if (this.options.style === 'paper') {
      try {
        return await this.#readPaper(block);
      } finally {
        this.#stats.lastOpRoundTrips = this.#opRtts;
      }
    }
    try {
      let quorumLosses = 0;
      for (let attempt = 0; ; attempt++) {
        if (attempt > this.options.readRetriesMax) throw new PmrpcError(RsLockErrorCodes.CONTENDED, `block ${block}: no consistent read in ${attempt} rounds`);
        const members = this.#quorum();
        // Small blocks: both slots in one READ (they are adjacent), so a cached word that is stale
        // or absent costs no round trip. Large blocks: the slot the cached word names, and a
        // member with no cached word reads its lock word first (once per block per client).
        const both = 2 * this.#slotBytes <= BOTH_SLOTS_BYTES_MAX;
        const cold = both ? [] : members.filter((n) => !this.#cache[n]!.has(block));
        if (cold.length > 0) {
          const answers = await this.#round(cold.map((n) => [n, [Wr.read(this.#lockLoc(n, block), LOCK_LINE_BYTES)]]));
          cold.forEach((n, i) => {
            const c = answers[i]?.[0];
            if (c?.status === 'ok') {
              const w = decodeLockLine(c.data!);
              this.#cache[n]!.set(block, publishWord(w.version, w.slot));
            }
          });
          if (answers.some((a) => a === undefined)) {
            if (++quorumLosses > this.options.quorumRetriesMax) throw this.#noMajority('a replica was lost while reading');
            continue;
          }
        }
        const slotRead = members.map((n) => (both ? -1 : decodePublish(this.#cache[n]!.get(block)!).slot));
        const answers = await this.#round(
          members.map((n, i) => {
            const a = this.#nodes[n]!.address;
            const slot = slotRead[i]!;
            return [n, [Wr.read({ rkey: a.rkey, addr: this.#slotAddr(n, block, slot < 0 ? 0 : slot) }, slot < 0 ? 2 * a.slotBytes : a.slotBytes), Wr.read(this.#lockLoc(n, block), LOCK_LINE_BYTES)]];
          }),
        );
        let valid = true;
        let busy = false;
        let lost = false;
        const records: BlockRecord[] = [];
        const seen: bigint[] = [];
        members.forEach((n, i) => {
          const cs = answers[i];
          if (cs === undefined || cs.some((c) => c.status !== 'ok')) {
            lost = true;
            return;
          }
          // Valid when the lock word read AFTER the record is unlocked, names the slot read, and
          // carries the record's version: a replica installs each version once, into the slot the
          // word did not name, and publishes it only after its FLUSH — so that record is the
          // published one, durable, and no write of that slot can have begun (it would first
          // have to publish the other slot, and this word would show it).
          const w = decodeLockLine(cs[1]!.data!);
          if (w.locked) {
            valid = false;
            busy = true;
            return;
          }
          seen[i] = publishWord(w.version, w.slot);
          this.#cache[n]!.set(block, seen[i]!);
          const data = cs[0]!.data!;
          const sb = this.#slotBytes;
          const rec = slotRead[i]! < 0 ? decodeRecord(data.subarray(w.slot * sb, (w.slot + 1) * sb), this.blockBytes) : slotRead[i] === w.slot ? decodeRecord(data, this.blockBytes) : undefined;
          if (rec !== undefined && rec.version === w.version) records.push(rec);
          else valid = false;
        });
        if (lost) {
          if (++quorumLosses > this.options.quorumRetriesMax) throw this.#noMajority('a replica was lost while reading');
          continue;
        }
        if (!valid) {
          this.#stats.readRetries++;
          if (busy) await this.#backoff(attempt);
          continue;
        }
        let top = records[0]!;
        for (const r of records) if (r.version > top.version) top = r;
        if (records.every((r) => r.version === top.version)) return top.version === 0n ? null : top.data;
        // The quorum disagrees: write the highest record back under locks that expect exactly
        // the words read, then return it (a later read cannot see less: it is on a majority).
        const exact = new Map(members.map((n, i) => [n, seen[i]!]));
        const held = await this.#lock(block, members, exact);
        if (held === 'lost') {
          if (++quorumLosses > this.options.quorumRetriesMax) throw this.#noMajority('a replica was lost while repairing');
          continue;
        }
        if (held === 'changed') continue;
        if (!(await this.#install(block, held, top, true))) {
          if (++quorumLosses > this.options.quorumRetriesMax) throw this.#noMajority('a replica was lost while repairing');
          continue;
        }
        this.#stats.repairs++;
        return top.version === 0n ? null : top.data;
      }
    } finally {
      this.#stats.lastOpRoundTrips = this.#opRtts;
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const n of this.#nodes) n?.qp.close();
  }

  // ---------------------------------------------------------------- helpers

  #check(block: number): void {
    if (this.#closed) throw new PmrpcError(RsLockErrorCodes.CLOSED, 'the rslock client is closed');
    if (!Number.isSafeInteger(block) || block < 0 || block >= this.blocks) throw new RangeError(`block must be an integer in [0, ${this.blocks}), got ${String(block)}`);
  }

  /** The first majority of replicas this client can still reach, in index order. */
  #quorum(): number[] {
    const up: number[] = [];
    for (let i = 0; i < this.#nodes.length && up.length < this.majority; i++) {
      const n = this.#nodes[i];
      if (n !== undefined && !n.qp.link.closed && n.qp.state === 'ready') up.push(i);
      else if (n !== undefined) this.#lost(i);
    }
    if (up.length < this.majority) throw this.#noMajority(`${up.length} of ${this.replicas} replicas reachable`);
    return up;
  }

  #noMajority(why: string): PmrpcError {
    return new PmrpcError(RsLockErrorCodes.NO_MAJORITY, `no majority (${this.majority} of ${this.replicas}): ${why}`);
  }

  #lost(i: number): void {
    if (this.#nodes[i] === undefined) return;
    this.#nodes[i] = undefined;
    this.options.onReplicaLost?.(i);
  }

  /** One round trip: a message to each member in parallel; an answer is undefined where the member could not be reached. */
  async #round(posts: Array<[number, WorkRequest[]]>): Promise<Answer[]> {
    this.#stats.roundTrips++;
    this.#opRtts++;
    this.#stats.messages += posts.length;
    return Promise.all(
      posts.map(async ([n, wrs]) => {
        const node = this.#nodes[n];
        if (node === undefined) return undefined;
        try {
          const cs = await node.qp.postChain(wrs);
          if (cs.some((c) => c.status === 'error')) {
            this.#lost(n);
            return undefined;
          }
          return cs;
        } catch (e) {
          // A closed link, a QP the replica no longer has (it restarted), a full queue: unreachable for now.
          if (e instanceof PmrpcError) {
            this.#lost(n);
            return undefined;
          }
          throw e;
        }
      }),
    );
  }

  /** Randomised exponential back-off: the first attempts only yield the event loop turn. */
  async #backoff(attempt: number): Promise<void> {
    if (attempt < 2) {
      await new Promise<void>((resolve) => queueMicrotask(resolve));
      return;
    }
    const capMs = Math.min(this.options.backoffMsMax, 0.01 * 2 ** Math.min(attempt, 16));
    const ms = capMs * (0.5 + this.#prng.float() / 2);
    await new Promise<void>((resolve) => this.options.clock.setTimer(ms, resolve));
  }

  #lockLoc(n: number, block: number): { rkey: number; addr: number } {
    const a = this.#nodes[n]!.address;
    return { rkey: a.rkey, addr: a.locks + block * LOCK_STRIDE };
  }

  #slotAddr(n: number, block: number, slot: number): number {
    const a = this.#nodes[n]!.address;
    return a.records + (block * 2 + slot) * a.slotBytes;
  }
}

