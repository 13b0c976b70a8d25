/**
 * TEST-ONLY: the ABD client of the replicated register app (app.ts), one QueuePair per node.
 *
 * write(r, v): (1) READ + FLUSH(persistent) the cell on every node, done at a majority: the highest
 * timestamp seen, made durable where it was read; (2) on every node one chain
 * `CAS gt ⟨ts+1, me⟩ on the tag; FLUSH(persistent) the cell; READ the cell; FLUSH(persistent) the
 * cell`, done at a majority. A node counts when its CAS swapped (the first FLUSH persists it), or
 * when the READ — flushed in the same chain — shows a tag ≥ ours: a CAS that did not swap may have
 * lost to another QP's result still in the NIC cache, which no FLUSH of ours persists (DESIGN §2.2
 * (iii)), so the loss counts only once a durable tag ≥ ours is seen.
 * read(r): phase (1) on every node, done at a majority; the highest ⟨tag, value⟩; then phase (2)
 * with that cell on the nodes that showed less (write-back), done when a majority holds it durably
 * (the nodes that already showed it count); returns its value.
 * A node that does not answer (link closed, QP in error, torn cell) is skipped for that operation;
 * fewer than a majority → PMRPC_ERR_REGISTER_NO_MAJORITY.
 */
import { PmrpcError } from '../../../pmem/index.js';
import { parseJsonBytes } from '../../apps/index.js';
import { Wr, type Completion, type QueuePair, type WorkRequest } from '../../../flush/index.js';
import { CELL_BYTES, compareTags, decodeCell as decodeRaw, encodeCell, isLostCell, RegisterErrorCodes, tagCompareMask, type Cell } from './app.js';

/** A cell as an answer: undefined when torn or lost (LOST_CELL: the node lost its copy). */
function decodeCell(b: Uint8Array): Cell | undefined {
  const c = decodeRaw(b);
  return c === undefined || isLostCell(c) ? undefined : c;
}

/** One node as the client sees it. */
export interface RegisterNode {
  qp: QueuePair;
  rkey: number;
  /** Region offset of cell 0. */
  cells: number;
  registers: number;
}

/** The node address in a register app's welcome. */
export function parseRegisterWelcome(welcome: Uint8Array): { rkey: number; cells: number; registers: number } {
  const w = parseJsonBytes(welcome);
  if (w === undefined || w.app !== 'register' || !Number.isSafeInteger(w.rkey) || !Number.isSafeInteger(w.cells) || !Number.isSafeInteger(w.registers)) {
    throw new PmrpcError(RegisterErrorCodes.NOT_FORMATTED, 'the welcome is not a register address {app, rkey, cells, registers}');
  }
  return { rkey: w.rkey as number, cells: w.cells as number, registers: w.registers as number };
}

/** Resolves with the answers once `need` of them succeeded; rejects once that became impossible. */
function quorum<T>(attempts: Array<Promise<T | undefined>>, need: number, already = 0): Promise<T[]> {
  return new Promise((resolve, reject) => {
    const got: T[] = [];
    let failed = 0;
    let done = false;
    const total = attempts.length + already;
    if (already >= need) {
      done = true;
      resolve(got);
      return;
    }
    for (const p of attempts) {
      void p.then(
        (v) => {
          if (done) return;
          if (v === undefined) failed++;
          else got.push(v);
          if (got.length + already >= need) {
            done = true;
            resolve(got);
          } else if (total - failed < need) {
            done = true;
            reject(new PmrpcError(RegisterErrorCodes.NO_MAJORITY, `${got.length + already} of ${total} nodes answered; a majority is ${need}`));
          }
        },
        () => undefined,
      );
    }
  });
}

/**
 * Test-only fault switches (mutants of the protocol, for the crash explorer's teeth):
 * - countFailedCas: a node whose CAS did not swap counts at once, without the flushed READ;
 * - skipInstallFlush: the install chain has no FLUSH (CAS; READ): acknowledged before durable;
 * - skipReadFlush: the READ of phase 1 is not FLUSHed: a read may return what a crash takes back.
 */
export interface RegisterFaults {
  countFailedCas?: boolean;
  skipInstallFlush?: boolean;
  skipReadFlush?: boolean;
}

export class RegisterClient {
  readonly nodes: readonly RegisterNode[];
  readonly writerId: bigint;
  readonly registers: number;
  readonly faults: Readonly<RegisterFaults>;

  /** `writerId`: unique among the writers of these registers, >= 1. `faults`: test-only mutants. */
  constructor(nodes: readonly RegisterNode[], writerId: number, faults: RegisterFaults = {}) {
    if (!Array.isArray(nodes) || nodes.length === 0) throw new RangeError('nodes must be a non-empty array');
    if (!Number.isSafeInteger(writerId) || writerId < 1) throw new RangeError(`writerId must be a positive integer, got ${String(writerId)}`);
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
    const seen = await quorum(this.nodes.map((n) => this.#readCell(n, register)), this.majority);
    const maxTs = seen.reduce((m, c) => (c.ts > m ? c.ts : m), 0n);
    const mine: Cell = { ts: maxTs + 1n, writer: this.writerId, value };
    await quorum(this.nodes.map((n) => this.#install(n, register, mine)), this.majority);
  }

  async read(register: number): Promise<bigint> {
    this.#check(register);
    const seen = await quorum(
      this.nodes.map(async (n) => {
        const c = await this.#readCell(n, register);
        return c === undefined ? undefined : { n, c };
      }),
      this.majority,
    );
    let max = seen[0]!.c;
    for (const s of seen) if (compareTags(s.c, max) > 0) max = s.c;
    // Write-back: the nodes that showed the max hold it durably (their READ was FLUSHed).
    const current = new Set(seen.filter((s) => compareTags(s.c, max) === 0).map((s) => s.n));
    await quorum(
      this.nodes.filter((n) => !current.has(n)).map((n) => this.#install(n, register, max)),
      this.majority,
      current.size,
    );
    return max.value;
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

  /** READ + FLUSH(persistent) the cell: what it read is durable. Undefined: no answer or torn. */
  async #readCell(n: RegisterNode, register: number): Promise<Cell | undefined> {
    const at = { rkey: n.rkey, addr: n.cells + register * CELL_BYTES };
    const cs = await this.#post(n, this.faults.skipReadFlush === true ? [Wr.read(at, CELL_BYTES)] : [Wr.read(at, CELL_BYTES), Wr.flush('persistent', n.rkey, { addr: at.addr, len: CELL_BYTES })]);
    return cs?.[0]?.data === undefined ? undefined : decodeCell(cs[0].data);
  }

  /** CAS gt; FLUSH; READ; FLUSH. True when the node durably holds a tag ≥ `cell`'s. */
  async #install(n: RegisterNode, register: number, cell: Cell): Promise<true | undefined> {
    const at = { rkey: n.rkey, addr: n.cells + register * CELL_BYTES };
    const range = { addr: at.addr, len: CELL_BYTES };
    const cas = Wr.prismCas('gt', at, encodeCell(cell), { compareMask: tagCompareMask() });
    const skip = this.faults.skipInstallFlush === true;
    const cs = await this.#post(n, skip ? [cas, Wr.read(at, CELL_BYTES)] : [cas, Wr.flush('persistent', n.rkey, range), Wr.read(at, CELL_BYTES), Wr.flush('persistent', n.rkey, range)]);
    if (cs === undefined) return undefined;
    if (cs[0]!.swapped === true) return true;
    if (this.faults.countFailedCas === true) return true;
    const read = cs[skip ? 1 : 2]!;
    const now = read.data === undefined ? undefined : decodeCell(read.data);
    return now !== undefined && compareTags(now, cell) >= 0 ? true : undefined;
  }
}
