/**
 * The persistent connection table (DESIGN §3, §6): one 64-byte line per connection slot.
 *
 *   0  id word u64       client id (u32) ‖ its complement (u32); 0 = free slot
 *   8  applied word u64  the client's applied sequence: every sequence up to it has its effects
 *                        durably applied. This is the credit word the client reads (a slot is
 *                        free for sequence s when s <= applied + ringSlots). It is derived from the
 *                        redo log's applied flags (the single truth): set after a flag is durable,
 *                        made durable lazily (before the record slot is reused), and re-derived by
 *                        recovery.
 *  16  release word u64  0 while the client lives; the client's id word once its release is decided
 *                        (durable before the release is acknowledged: recovery finishes it)
 *  24  reserved u64      0
 *  32  secret hash       SHA-256 of the client's secret (32 bytes): reconnect and resume present the
 *                        secret, compared in constant time; the secret itself is never stored
 *
 * Client ids come from the superblock counter, which is durably advanced before an id is handed
 * out: an id is issued once per client incarnation and never reused. The ring of a slot is fixed
 * (Layout.ringOffset); entries of a former occupant carry its id and never validate for the new one.
 *
 * What a slot holds is classified by SLOT_TABLE (one row per input, like recovery's decision
 * table): free, live, release decided (recovery finishes it), or a state the protocol cannot
 * produce (refused: PMRPC_ERR_TABLE_CORRUPT, before anything is written).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { invariant, PmrpcError } from '../pmem/index.js';
import { NO_FAULTS, type RecoveryFaults } from './faults.js';
import { decodeCounterWord, encodeCounterWord, RecoveryErrorCodes, type Layout } from './layout.js';
import { decideRow, matchRows, type When } from './table.js';

export interface ConnEntry {
  clientId: number;
  connSlot: number;
  /** Applied sequence as the table holds it (visible memory). */
  appliedSeq: number;
}

const ID_WORD = 0;
const APPLIED_WORD = 8;
const RELEASE_WORD = 16;
const RESERVED_WORD = 24;
const HASH_OFFSET = 32;
export const SECRET_HASH_BYTES = 32;
/** Bytes of a client secret the table accepts (the RPC server issues 32). */
export const SECRET_BYTES_MIN = 0;
export const SECRET_BYTES_MAX = 1024;

/** SHA-256 of a client secret: what the table keeps. */
export function secretHash(secret: Uint8Array): Uint8Array {
  return new Uint8Array(createHash('sha256').update(secret).digest());
}

// ------------------------------------------------------------------ the slot decision table

export type IdInput = 'zero' | 'valid' | 'damaged';
export type ReleaseInput = 'zero' | 'same-id' | 'other';
export type SlotAction = 'free' | 'live' | 'finish-release' | 'refuse';

export interface SlotRow {
  id: string;
  when: When<{ idWord: IdInput; releaseWord: ReleaseInput }>;
  action: SlotAction;
  why: string;
}

export const ID_VALUES: readonly IdInput[] = Object.freeze(['zero', 'valid', 'damaged']);
export const RELEASE_VALUES: readonly ReleaseInput[] = Object.freeze(['zero', 'same-id', 'other']);

/**
 * How open() and recovery read a connection slot. 'valid' = a well-formed id word of an issued id
 * (below the next-id counter) that no other slot holds; the release word is compared with it.
 */
export const SLOT_TABLE: readonly SlotRow[] = Object.freeze([
  { id: 'slot-free', when: { idWord: ['zero'] }, action: 'free', why: 'never used, or released (a stale release word is reset by the next registration before its id word)' },
  { id: 'slot-live', when: { idWord: ['valid'], releaseWord: ['zero'] }, action: 'live', why: 'a registered client: its ring is walked by the decision table' },
  {
    id: 'release-finish',
    when: { idWord: ['valid'], releaseWord: ['same-id'] },
    action: 'finish-release',
    why: 'the release was decided (every entry of the client applied first) and maybe acknowledged; the id word clear did not persist: recovery clears it durably, the ring is not walked',
  },
  {
    id: 'release-foreign',
    when: { idWord: ['valid'], releaseWord: ['other'] },
    action: 'refuse',
    why: 'a release mark that is not this client\'s: registration resets the word durably before the id word, so the protocol cannot produce it',
  },
  { id: 'slot-damaged', when: { idWord: ['damaged'] }, action: 'refuse', why: 'an id word that fails its complement, names an id never issued, or an id held by two slots' },
] satisfies SlotRow[]);

export function matchingSlotRows(idWord: IdInput, releaseWord: ReleaseInput): SlotRow[] {
  return matchRows(SLOT_TABLE, { idWord, releaseWord });
}

export function decideSlot(idWord: IdInput, releaseWord: ReleaseInput): SlotRow {
  return decideRow('slot table', SLOT_TABLE, { idWord, releaseWord });
}

export class ConnTable {
  readonly layout: Layout;
  #bySlot: (ConnEntry | undefined)[];
  #byId = new Map<number, ConnEntry>();
  /** Slots whose release was decided but whose id word is still set (row release-finish): id -> slot. */
  #releasing = new Map<number, number>();
  /** Slot-table rows taken when the table was read. */
  readonly rows: Record<string, number> = {};

  readonly #faults: RecoveryFaults;

  /** Reads and validates every slot (SLOT_TABLE); a 'refuse' row throws PMRPC_ERR_TABLE_CORRUPT. Nothing is written. */
  constructor(layout: Layout, faults: RecoveryFaults = NO_FAULTS) {
    this.layout = layout;
    this.#faults = faults;
    this.#bySlot = new Array(layout.geometry.maxClients).fill(undefined);
    const next = layout.nextClientId;
    const r = layout.region;
    for (let i = 0; i < layout.geometry.maxClients; i++) {
      const off = layout.connOffset(i);
      const w = r.loadU64Atomic(off + ID_WORD);
      const id = w === 0n ? 0 : decodeCounterWord(w);
      const taken = id !== undefined && id !== 0 && (this.#byId.has(id) || this.#releasing.has(id));
      const idIn: IdInput = w === 0n ? 'zero' : id === undefined || id === 0 || id >= next || taken ? 'damaged' : 'valid';
      const rw = r.loadU64Atomic(off + RELEASE_WORD);
      const relIn: ReleaseInput = rw === 0n ? 'zero' : rw === w ? 'same-id' : 'other';
      const row = decideSlot(idIn, relIn);
      this.rows[row.id] = (this.rows[row.id] ?? 0) + 1;
      if (row.action === 'free') continue;
      if (row.action === 'refuse') {
        const what = taken ? `client id ${id} appears in two connection slots` : idIn === 'damaged' ? `damaged client id word 0x${w.toString(16)}` : `a release word 0x${rw.toString(16)} of another client`;
        throw new PmrpcError(RecoveryErrorCodes.TABLE_CORRUPT, `connection slot ${i}: ${what} (row ${row.id})`);
      }
      if (row.action === 'finish-release') {
        this.#releasing.set(id!, i);
        continue;
      }
      const applied = r.loadU64Atomic(off + APPLIED_WORD);
      if (applied > BigInt(Number.MAX_SAFE_INTEGER)) {
        throw new PmrpcError(RecoveryErrorCodes.TABLE_CORRUPT, `connection slot ${i}: impossible applied sequence ${applied}`);
      }
      const e: ConnEntry = { clientId: id!, connSlot: i, appliedSeq: Number(applied) };
      this.#bySlot[i] = e;
      this.#byId.set(id!, e);
    }
  }

  /** Live connections, in slot order. */
  entries(): ConnEntry[] {
    return this.#bySlot.filter((e): e is ConnEntry => e !== undefined).map((e) => ({ ...e }));
  }

  /** Clients whose release was decided and is to be finished by recovery (row release-finish). */
  releasing(): number[] {
    return [...this.#releasing.keys()];
  }

  /** Slots in use (live clients and releases not yet finished). */
  get used(): number {
    return this.#byId.size + this.#releasing.size;
  }

  has(clientId: number): boolean {
    return this.#byId.has(clientId);
  }

  lookup(clientId: number): ConnEntry {
    const e = this.#byId.get(clientId);
    if (e === undefined) throw this.#unknown(clientId);
    return { ...e };
  }

  /**
   * Issues a new client id in a free slot: the id counter is advanced durably first (so the id is
   * never reused whatever happens next); the slot's applied word, release word and secret hash are
   * written and persisted; then the id word is written durably.
   */
  register(hash: Uint8Array): ConnEntry {
    invariant(hash instanceof Uint8Array && hash.length === SECRET_HASH_BYTES, () => 'a 32-byte secret hash');
    const slot = this.#bySlot.findIndex((e, i) => e === undefined && ![...this.#releasing.values()].includes(i));
    if (slot < 0) throw new PmrpcError(RecoveryErrorCodes.TABLE_FULL, `all ${this.layout.geometry.maxClients} connection slots are taken`);
    const id = this.layout.nextClientId;
    this.layout.setNextClientId(id + 1);
    const r = this.layout.region;
    const off = this.layout.connOffset(slot);
    // The slot is free in PM too (its id word zero: never used, or released — SLOT_TABLE's
    // slot-free): a registration never overwrites a live client's slot.
    invariant(r.loadU64Atomic(off + ID_WORD) === 0n, () => `connection slot ${slot} still holds client id word 0x${r.loadU64Atomic(off + ID_WORD).toString(16)}`);
    // A former occupant's release ends here: its id word clear is made durable before its release
    // word is reset (same line: under the kill model the reset alone could persist, and the
    // released client would be back).
    if (r.loadU64Atomic(off + RELEASE_WORD) !== 0n && !this.#faults.skipPersistReleaseClear) r.persist(off + ID_WORD, 8);
    r.storeU64Atomic(off + APPLIED_WORD, 0n);
    r.storeU64Atomic(off + RELEASE_WORD, 0n);
    r.storeU64Atomic(off + RESERVED_WORD, 0n);
    r.store(off + HASH_OFFSET, hash);
    // Same line as the id word, so only the kill model (any subset of a line's words) needs it:
    // without it the id can persist over the former occupant's applied word, release mark or hash.
    if (!this.#faults.skipPersistRegisterReset) r.persist(off + APPLIED_WORD, 64 - APPLIED_WORD);
    r.storeU64Atomic(off + ID_WORD, encodeCounterWord(id));
    r.persist(off + ID_WORD, 8);
    const e: ConnEntry = { clientId: id, connSlot: slot, appliedSeq: 0 };
    this.#bySlot[slot] = e;
    this.#byId.set(id, e);
    return { ...e };
  }

  /**
   * Checks a client's secret against the hash in its slot (constant time). PMRPC_ERR_CLIENT_AUTH
   * when it does not match; PMRPC_ERR_UNKNOWN_CLIENT / PMRPC_ERR_CLIENT_RELEASED for no such client.
   * Reads only.
   */
  authenticate(clientId: number, secret: Uint8Array): void {
    const e = this.#byId.get(clientId);
    if (e === undefined) throw this.#unknown(clientId);
    const stored = this.layout.region.load(this.layout.connOffset(e.connSlot) + HASH_OFFSET, SECRET_HASH_BYTES);
    if (!timingSafeEqual(stored, secretHash(secret))) {
      throw new PmrpcError(RecoveryErrorCodes.CLIENT_AUTH, `client ${clientId}: the secret does not match (a client presents the secret it was issued at registration)`);
    }
  }

  /**
   * Releases a client's slot. The caller has checked that every entry of the client is applied and
   * nothing of it is in flight (RecoveryStore.release). Protocol:
   *   1. the release word := the client's id word, persisted: the release is decided (its records may
   *      be overwritten from now on; recovery finishes it, row release-finish) — only then may it be
   *      acknowledged;
   *   2. the id word := 0 (the slot is free), made durable by the next registration of the slot
   *      before it resets the release word, or by recovery (row release-finish) — so the release
   *      costs one persist.
   */
  release(clientId: number): void {
    const e = this.#byId.get(clientId);
    if (e === undefined) throw this.#unknown(clientId);
    const r = this.layout.region;
    const off = this.layout.connOffset(e.connSlot);
    // The slot in PM is this client's (its id word): a release never marks or frees another client's slot.
    invariant(r.loadU64Atomic(off + ID_WORD) === encodeCounterWord(clientId), () => `connection slot ${e.connSlot} of client ${clientId} holds id word 0x${r.loadU64Atomic(off + ID_WORD).toString(16)}`);
    r.storeU64Atomic(off + RELEASE_WORD, encodeCounterWord(clientId));
    if (!this.#faults.skipPersistReleaseMark) r.persist(off + RELEASE_WORD, 8);
    r.storeU64Atomic(off + ID_WORD, 0n);
    this.#bySlot[e.connSlot] = undefined;
    this.#byId.delete(clientId);
  }

  /** Recovery: finishes every decided release (row release-finish): the id word cleared durably. Idempotent. */
  finishReleases(): number {
    const r = this.layout.region;
    let n = 0;
    for (const [, slot] of this.#releasing) {
      const off = this.layout.connOffset(slot);
      r.storeU64Atomic(off + ID_WORD, 0n);
      r.persist(off + ID_WORD, 8);
      n++;
    }
    this.#releasing.clear();
    return n;
  }

  appliedSeq(clientId: number): number {
    // Read in place (no copy of the entry, as lookup() makes): several calls per request.
    const e = this.#byId.get(clientId);
    if (e === undefined) throw this.#unknown(clientId);
    return e.appliedSeq;
  }

  /** Offset of the client's credit (applied) word, for the client to READ. */
  creditOffset(clientId: number): number {
    return this.layout.connOffset(this.lookup(clientId).connSlot) + APPLIED_WORD;
  }

  /**
   * Sets the applied word in visible memory (call only once the record's applied flag is
   * durable). Monotonic. Durability comes from persistApplied (before a record slot is reused).
   */
  setApplied(clientId: number, seq: number): void {
    const e = this.#byId.get(clientId);
    if (e === undefined) throw this.#unknown(clientId);
    invariant(Number.isSafeInteger(seq) && seq >= e.appliedSeq, () => `applied sequence of client ${clientId} goes back: ${e.appliedSeq} -> ${seq}`);
    if (seq === e.appliedSeq) return;
    this.layout.region.storeU64Atomic(this.layout.connOffset(e.connSlot) + APPLIED_WORD, BigInt(seq));
    e.appliedSeq = seq;
  }

  /** Makes the client's applied word durable. */
  persistApplied(clientId: number): void {
    const e = this.#byId.get(clientId);
    if (e === undefined) return; // released: its records are no longer needed (the release word is durable)
    this.layout.region.persist(this.layout.connOffset(e.connSlot) + APPLIED_WORD, 8);
  }

  /** UNKNOWN_CLIENT for an id never issued; CLIENT_RELEASED for an issued id no longer in the table. */
  #unknown(clientId: number): PmrpcError {
    if (Number.isSafeInteger(clientId) && clientId >= 1 && clientId < this.layout.nextClientId) {
      return new PmrpcError(RecoveryErrorCodes.CLIENT_RELEASED, `client ${clientId} was released (goodbye or lease expiry): its slot is another client's now; register anew`);
    }
    return new PmrpcError(RecoveryErrorCodes.UNKNOWN_CLIENT, `client ${clientId} is not in the connection table`);
  }
}
