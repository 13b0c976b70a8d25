/**
 * TEST-ONLY: the ABD client of the replicated register app (app.ts, server.ts), one QueuePair per node.
 *
 * Phase (1) on every node: READ + FLUSH(persistent) the register's block (its cell word and the
 * records), done at a majority: what it read is durable where it was read. Phase (2), install
 * ⟨tag, value⟩ on a node, out of place: one chain `WRITE ⟨value, word⟩ into one of this client's
 * two records; FLUSH(persistent) the record; CAS gt the cell word (compare mask: the tag);
 * FLUSH(persistent) the cell; READ the cell; FLUSH(persistent) the cell`, done at a majority. The
 * record is the one the cell did not point at in this operation's phase-1 READ of that node (only
 * this client points the cell at its own records, and its work on one node is serialized, so that
 * record is not reachable). A node counts when its CAS swapped (the FLUSH after it persists it), or
 * when the READ — flushed in the same chain — shows a tag ≥ ours: a CAS that did not swap may have
 * lost to another QP's result still in the NIC cache, which no FLUSH of ours persists (DESIGN §2.2
 * (iii)), so the loss counts only once a durable tag ≥ ours is seen.
 * write(r, v): phase (1); the highest timestamp seen + 1 with this writer's id; phase (2) on every
 * node that answered phase (1).
 * read(r): phase (1); the highest ⟨tag, value⟩; then phase (2) with it on the nodes that showed
 * less (write-back), done when a majority holds it durably (the nodes that showed it count);
 * returns its value.
 * A node that does not answer (link closed, QP in error, lost copy) is skipped for that operation;
 * fewer than a majority → PMRPC_ERR_REGISTER_NO_MAJORITY.
 */
import { invariant, PmrpcError } from '../../../pmem/index.js';
import { parseJsonBytes } from '../index.js';
import { Wr, type Completion, type QueuePair, type WorkRequest } from '../../../flush/index.js';
import { blockBytes, CELL_BYTES, compareTags, decodeBlock, decodeWord, encodeRecord, encodeWord, isLostWord, recordIndex, recordOffset, RECORD_BYTES, RegisterErrorCodes, tagCompareMask, wordBytes, type Cell } from './layout.js';
import type { RegisterFaults } from './faults.js';

/** The largest timestamp a cell word holds (32 bits, layout.ts). */
const TS_MAX = 0xffff_ffffn;

/** One node as the client sees it. */
export interface RegisterNode {
  qp: QueuePair;
  rkey: number;
  /** Region offset of register 0's block. */
  cells: number;
  registers: number;
  /** Installer ids the node has records for (1..writers). */
  writers: number;
}

/** The node address in a register app's welcome. */
export function parseRegisterWelcome(welcome: Uint8Array): { rkey: number; cells: number; registers: number; writers: number } {
  const w = parseJsonBytes(welcome);
  if (w === undefined || w.app !== 'register' || !Number.isSafeInteger(w.rkey) || !Number.isSafeInteger(w.cells) || !Number.isSafeInteger(w.registers) || !Number.isSafeInteger(w.writers)) {
    throw new PmrpcError(RegisterErrorCodes.NOT_FORMATTED, 'the welcome is not a register address {app, rkey, cells, registers, writers}');
  }
  return { rkey: w.rkey as number, cells: w.cells as number, registers: w.registers as number, writers: w.writers as number };
}

/**
 * The protocol's work on one QueuePair, in order: an operation touches a node only after the
 * previous operation over the same QP is done with it (its install there may run after its quorum
 * returned), so the record phase (1) picks is still not reachable when phase (2) writes it.
 */
const lanes = new WeakMap<QueuePair, Promise<unknown>>();

/** A node's phase-(1) answer: its raw cell word and the register (undefined: it lost its copy). */
interface Answer {
  word: bigint;
  cell: Cell | undefined;
}

/** Resolves with the answers once `need` of them succeeded; rejects once that became impossible. */
function quorum<T>(attempts: Array<Promise<T | undefined>>, need: number): Promise<T[]> {
  return new Promise((resolve, reject) => {
    const got: T[] = [];
    let failed = 0;
    let done = false;
    const total = attempts.length;
    for (const p of attempts) {
      const settle = (v: T | undefined): void => {
        if (done) return;
        if (v === undefined) failed++;
        else got.push(v);
        if (got.length >= need) {
          done = true;
          resolve(got);
        } else if (total - failed < need) {
          done = true;
          reject(new PmrpcError(RegisterErrorCodes.NO_MAJORITY, `${got.length} of ${total} nodes answered; a majority is ${need}`));
        }
      };
      void p.then(settle, () => settle(undefined));
    }
  });
}

function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Runs `fn` on `qp`'s lane: after every earlier operation's work over that QP settled. */
function onLane<T>(qp: QueuePair, fn: () => Promise<T>): Promise<T> {
  const prev = lanes.get(qp) ?? Promise.resolve();
  const run = prev.then(fn);
  lanes.set(qp, run.catch(() => undefined));
  return run;
}

export class RegisterClient {
  readonly nodes: readonly RegisterNode[];
  readonly writerId: bigint;
  readonly registers: number;
  readonly faults: Readonly<RegisterFaults>;

  /** `writerId`: unique among the clients of these registers (readers too: they write back), in 1..writers of every node. `faults`: test-only mutants. */
  constructor(nodes: readonly RegisterNode[], writerId: number, faults: RegisterFaults = {}) {
    if (!Array.isArray(nodes) || nodes.length === 0) throw new RangeError('nodes must be a non-empty array');
    const writers = Math.min(...nodes.map((n) => n.writers));
    if (!Number.isSafeInteger(writerId) || writerId < 1 || writerId > writers) throw new RangeError(`writerId must be an integer in [1, ${writers}] (the nodes' writers), got ${String(writerId)}`);
    this.nodes = Object.freeze([...nodes]);
    this.writerId = BigInt(writerId);
    this.registers = Math.min(...nodes.map((n) => n.registers));
    this.faults = Object.freeze({ ...faults });
  }

  /** A client from each node's QueuePair and welcome. */
  static connect(links: ReadonlyArray<{ qp: QueuePair; welcome: Uint8Array }>, writerId: number, faults: RegisterFaults = {}): RegisterClient {
    return new RegisterClient(
      links.map((l) => ({ qp: l.qp, ...parseRegisterWelcome(l.welcome) })),
      writerId,
      faults,
    );
  }

  get majority(): number {
    return Math.floor(this.nodes.length / 2) + 1;
  }

  async write(register: number, value: bigint): Promise<void> {
    this.#check(register);
    await this.#round(
      register,
      (seen) => {
        const mine = { ts: seen.reduce((m, c) => (c.ts > m ? c.ts : m), 0n) + 1n, writer: this.writerId, value };
        // Tags only grow (DESIGN §10.1): the tag this write installs is above every tag of its
        // majority and fits the cell word's 32-bit timestamp (past it the word cannot carry it).
        invariant(mine.ts <= TS_MAX, () => `register ${register}: a write would take timestamp ${mine.ts}, past the cell word's ${TS_MAX}`);
        return mine;
      },
      (n, a, mine) => this.#install(n, register, mine, a.word),
    );
  }

  async read(register: number): Promise<bigint> {
    this.#check(register);
    const max = await this.#round(
      register,
      (seen) => seen.reduce((m, c) => (compareTags(c, m) > 0 ? c : m)),
      // Write-back: a node whose answer showed the max holds it durably (its READ was FLUSHed).
      (n, a, max) => (a.cell !== undefined && compareTags(a.cell, max) === 0 ? Promise.resolve(true as const) : this.#install(n, register, max, a.word)),
    );
    return max.value;
  }

  /**
   * Phase (1) on every node; `decide` picks the cell from a majority's answers; then phase (2)
   * (`install`) on every node that answered phase (1), done at a majority. Each node's part runs on
   * its QP's lane (onLane), phase (2) after that node's own phase-(1) answer.
   */
  async #round(register: number, decide: (seen: Cell[]) => Cell, install: (n: RegisterNode, a: Answer, target: Cell) => Promise<true | undefined>): Promise<Cell> {
    const decided = deferred<Cell | undefined>();
    const reads: Array<Promise<Answer | undefined>> = [];
    const installs = this.nodes.map((n) => {
      const read = deferred<Answer | undefined>();
      reads.push(read.promise);
      return onLane(n.qp, async () => {
        const a = await this.#readBlock(n, register);
        read.resolve(a);
        const target = await decided.promise;
        return a === undefined || target === undefined ? undefined : install(n, a, target);
      });
    });
    let target: Cell | undefined;
    try {
      target = decide(await quorum(reads.map((p) => p.then((a) => a?.cell)), this.majority));
    } finally {
      decided.resolve(target);
    }
    await quorum(installs, this.majority);
    return target;
  }

  #check(register: number): void {
    if (!Number.isSafeInteger(register) || register < 0 || register >= this.registers) throw new RangeError(`register must be an integer in [0, ${this.registers}), got ${String(register)}`);
  }

  /** Posts a chain; undefined when the node did not answer (link closed, QP error). */
  async #post(n: RegisterNode, wrs: WorkRequest[]): Promise<Completion[] | undefined> {
    try {
      const cs = await n.qp.postChain(wrs);
      return cs.some((c) => c.status === 'error' || c.status === 'skipped') ? undefined : cs;
    } catch {
      return undefined;
    }
  }

  /** READ + FLUSH(persistent) the register's block: what it read is durable. Undefined: no answer. */
  async #readBlock(n: RegisterNode, register: number): Promise<Answer | undefined> {
    const len = blockBytes(n.writers);
    const at = { rkey: n.rkey, addr: n.cells + register * len };
    const cs = await this.#post(n, this.faults.skipReadFlush === true ? [Wr.read(at, len)] : [Wr.read(at, len), Wr.flush('persistent', n.rkey, { addr: at.addr, len })]);
    const data = cs?.[0]?.data;
    if (data === undefined || data.length < CELL_BYTES) return undefined;
    const c = decodeBlock(data, n.writers);
    return { word: new DataView(data.buffer, data.byteOffset, data.byteLength).getBigUint64(0, true), cell: c === 'lost' ? undefined : c };
  }

  /**
   * WRITE ⟨value, word⟩ into the record of ours the cell does not point at (`current`: its word in
   * this operation's phase-(1) READ); FLUSH it; CAS gt the cell word; FLUSH; READ; FLUSH. True
   * when the node durably holds a tag ≥ `cell`'s.
   */
  async #install(n: RegisterNode, register: number, cell: Cell, current: bigint): Promise<true | undefined> {
    const block = n.cells + register * blockBytes(n.writers);
    const me = Number(this.writerId);
    const index = recordIndex(me, decodeWord(current).record === recordIndex(me, 0) ? 1 : 0);
    // Out of place: the record written is never the one the cell word names now (a crash in the
    // WRITE would tear the value a durable cell points at).
    invariant(index !== decodeWord(current).record, () => `register ${register}: the install would write record ${index}, which the cell word names`);
    const word = encodeWord({ ts: cell.ts, writer: cell.writer, record: index });
    const record = { rkey: n.rkey, addr: block + recordOffset(index) };
    const at = { rkey: n.rkey, addr: block };
    const cellRange = { addr: block, len: CELL_BYTES };
    const wrs: WorkRequest[] = [Wr.write(record, encodeRecord(cell.value, word))];
    if (this.faults.skipRecordFlush !== true) wrs.push(Wr.flush('persistent', n.rkey, { addr: record.addr, len: RECORD_BYTES }));
    const casAt = wrs.length;
    wrs.push(Wr.prismCas('gt', at, wordBytes(word), { compareMask: tagCompareMask() }));
    const skip = this.faults.skipInstallFlush === true;
    if (!skip) wrs.push(Wr.flush('persistent', n.rkey, cellRange));
    const readAt = wrs.length;
    wrs.push(Wr.read(at, CELL_BYTES));
    if (!skip) wrs.push(Wr.flush('persistent', n.rkey, cellRange));
    const cs = await this.#post(n, wrs);
    if (cs === undefined) return undefined;
    if (cs[casAt]!.swapped === true) return true;
    if (this.faults.countFailedCas === true) return true;
    const data = cs[readAt]!.data;
    if (data === undefined || data.length < CELL_BYTES) return undefined;
    const now = new DataView(data.buffer, data.byteOffset, data.byteLength).getBigUint64(0, true);
    return !isLostWord(now) && compareTags(decodeWord(now), cell) >= 0 ? true : undefined;
  }
}
