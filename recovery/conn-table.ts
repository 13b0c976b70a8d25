/**
 * The persistent connection table (DESIGN §3): one 64-byte line per connection slot.
 *
 *   0  id word u64       client id (u32) ‖ its complement (u32); 0 = free slot
 *   8  applied word u64  the client's applied sequence: every sequence up to it has its effects
 *                        durably applied. This is the credit word the client reads (a slot is
 *                        free for sequence s when s <= applied + ringSlots). It is derived from the
 *                        redo log's applied flags (the single truth): set after a flag is durable,
 *                        made durable lazily (before the record slot is reused), and re-derived by
 *                        recovery.
 *
 * Client ids come from the superblock counter, which is durably advanced before an id is handed
 * out: an id is issued once per client incarnation and never reused. The ring of a slot is fixed
 * (Layout.ringOffset); entries of a former occupant carry its id and never validate for the new one.
 */
import assert from 'node:assert/strict';
import { PmrpcError } from '../pmem/index.js';
import { NO_FAULTS, type RecoveryFaults } from './faults.js';
import { decodeCounterWord, encodeCounterWord, RecoveryErrorCodes, type Layout } from './layout.js';

export interface ConnEntry {
  clientId: number;
  connSlot: number;
  /** Applied sequence as the table holds it (visible memory). */
  appliedSeq: number;
}

const ID_WORD = 0;
const APPLIED_WORD = 8;

export class ConnTable {
  readonly layout: Layout;
  #bySlot: (ConnEntry | undefined)[];
  #byId = new Map<number, ConnEntry>();

  readonly #faults: RecoveryFaults;

  /** Reads and validates every slot. */
  constructor(layout: Layout, faults: RecoveryFaults = NO_FAULTS) {
    this.layout = layout;
    this.#faults = faults;
    this.#bySlot = new Array(layout.geometry.maxClients).fill(undefined);
    const next = layout.nextClientId;
    for (let i = 0; i < layout.geometry.maxClients; i++) {
      const off = layout.connOffset(i);
      const w = layout.region.loadU64Atomic(off + ID_WORD);
      if (w === 0n) continue;
      const id = decodeCounterWord(w);
      if (id === undefined || id === 0 || id >= next) {
        throw new PmrpcError(RecoveryErrorCodes.TABLE_CORRUPT, `connection slot ${i}: damaged client id word 0x${w.toString(16)}`);
      }
      const applied = layout.region.loadU64Atomic(off + APPLIED_WORD);
      if (applied > BigInt(Number.MAX_SAFE_INTEGER)) {
        throw new PmrpcError(RecoveryErrorCodes.TABLE_CORRUPT, `connection slot ${i}: impossible applied sequence ${applied}`);
      }
      if (this.#byId.has(id)) throw new PmrpcError(RecoveryErrorCodes.TABLE_CORRUPT, `client id ${id} appears in two connection slots`);
      const e: ConnEntry = { clientId: id, connSlot: i, appliedSeq: Number(applied) };
      this.#bySlot[i] = e;
      this.#byId.set(id, e);
    }
  }

  /** Live connections, in slot order. */
  entries(): ConnEntry[] {
    return this.#bySlot.filter((e): e is ConnEntry => e !== undefined).map((e) => ({ ...e }));
  }

  has(clientId: number): boolean {
    return this.#byId.has(clientId);
  }

  lookup(clientId: number): ConnEntry {
    const e = this.#byId.get(clientId);
    if (e === undefined) throw new PmrpcError(RecoveryErrorCodes.UNKNOWN_CLIENT, `client ${clientId} is not in the connection table`);
    return { ...e };
  }

  /**
   * Issues a new client id in a free slot: the id counter is advanced durably first (so the id is
   * never reused whatever happens next), the slot's applied word reset durably, then the id word
   * written durably.
   */
  register(): ConnEntry {
    const slot = this.#bySlot.findIndex((e) => e === undefined);
    if (slot < 0) throw new PmrpcError(RecoveryErrorCodes.TABLE_FULL, `all ${this.layout.geometry.maxClients} connection slots are taken`);
    const id = this.layout.nextClientId;
    this.layout.setNextClientId(id + 1);
    const r = this.layout.region;
    const off = this.layout.connOffset(slot);
    r.storeU64Atomic(off + APPLIED_WORD, 0n);
    // Same line as the id word, so only the kill model (any subset of a line's words) needs it:
    // without it the id can persist over the former occupant's applied word.
    if (!this.#faults.skipPersistRegisterReset) r.persist(off + APPLIED_WORD, 8);
    r.storeU64Atomic(off + ID_WORD, encodeCounterWord(id));
    r.persist(off + ID_WORD, 8);
    const e: ConnEntry = { clientId: id, connSlot: slot, appliedSeq: 0 };
    this.#bySlot[slot] = e;
    this.#byId.set(id, e);
    return { ...e };
  }

  /**
   * Frees a client's slot. The caller must have nothing of it in flight: its applied word is made
   * durable first (its records may then be overwritten), then the id word cleared durably.
   */
  release(clientId: number): void {
    const e = this.#byId.get(clientId);
    if (e === undefined) throw new PmrpcError(RecoveryErrorCodes.UNKNOWN_CLIENT, `client ${clientId} is not in the connection table`);
    const r = this.layout.region;
    const off = this.layout.connOffset(e.connSlot);
    r.persist(off + APPLIED_WORD, 8);
    r.storeU64Atomic(off + ID_WORD, 0n);
    r.persist(off + ID_WORD, 8);
    this.#bySlot[e.connSlot] = undefined;
    this.#byId.delete(clientId);
  }

  appliedSeq(clientId: number): number {
    return this.lookup(clientId).appliedSeq;
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
    if (e === undefined) throw new PmrpcError(RecoveryErrorCodes.UNKNOWN_CLIENT, `client ${clientId} is not in the connection table`);
    assert.ok(Number.isSafeInteger(seq) && seq >= e.appliedSeq, `applied sequence of client ${clientId} goes back: ${e.appliedSeq} -> ${seq}`);
    if (seq === e.appliedSeq) return;
    this.layout.region.storeU64Atomic(this.layout.connOffset(e.connSlot) + APPLIED_WORD, BigInt(seq));
    e.appliedSeq = seq;
  }

  /** Makes the client's applied word durable. */
  persistApplied(clientId: number): void {
    const e = this.#byId.get(clientId);
    if (e === undefined) return; // released: its word was persisted at release
    this.layout.region.persist(this.layout.connOffset(e.connSlot) + APPLIED_WORD, 8);
  }
}
