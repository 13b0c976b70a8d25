/**
 * One node of the test-only replicated register on its region (what registerApp.open returns):
 * recovery marks a cell whose record does not carry its word as lost, accept() hands a client a QP
 * and the blocks' address, cell() and audit() read the registers as they are.
 */
import { PmrpcError, type PmemRegion } from '../../../pmem/index.js';
import { Access, type MemoryRegion, type ProtectionDomain, type Rnic, type ServerQp } from '../../../flush/index.js';
import { jsonBytes, type AcceptedClient, type AppHost, type AppProblem, type AppServer } from '../index.js';
import { blockBytes, CELL_BYTES, decodeBlock, decodeRegisterHeader, isLostWord, LOST_WORD, REGISTER_HEADER_BYTES, RegisterErrorCodes, wordBytes, type Cell } from './layout.js';
import { decideRegisterCell } from './recovery.js';

/**
 * What recover() did: nothing is rebuilt (no free lists, no log); cells whose record does not
 * carry their word are marked lost (clients and audit check the others). A type, not an
 * interface, so that it is an AppServer's JSON report.
 */
export type RegisterRecoveryReport = {
  readonly app: 'register';
  /** Registers of the node. */
  readonly registers: number;
  /** Cells marked LOST_WORD by this recovery. */
  readonly lostCopies: number;
  /** How many registers each row of REGISTER_CELL_TABLE (recovery.ts) decided. */
  readonly rows: Readonly<Record<string, number>>;
};

/** The register app on one node's region. */
export class RegisterAppServer implements AppServer {
  readonly app = 'register';
  readonly registers: number;
  readonly writers: number;
  readonly base: number;
  readonly #region: PmemRegion;
  readonly #nic: Rnic;
  readonly #pd: ProtectionDomain;
  readonly mr: MemoryRegion;
  #qps: ServerQp[] = [];
  /** What recover() found (undefined: not recovered yet). */
  #report: RegisterRecoveryReport | undefined;
  #closed = false;

  constructor(host: AppHost, o: { base: number }) {
    this.#region = host.region;
    this.#nic = host.nic;
    this.base = o.base;
    if (o.base + REGISTER_HEADER_BYTES > host.region.sizeBytes) throw new PmrpcError(RegisterErrorCodes.NOT_FORMATTED, `no register header at ${o.base}: the region has ${host.region.sizeBytes} bytes`);
    const h = decodeRegisterHeader(host.region.load(o.base, REGISTER_HEADER_BYTES));
    if (h === undefined) throw new PmrpcError(RegisterErrorCodes.NOT_FORMATTED, `no valid register header at ${o.base}`);
    if (o.base + REGISTER_HEADER_BYTES + h.registers * blockBytes(h.writers) > host.region.sizeBytes) throw new PmrpcError(RegisterErrorCodes.NOT_FORMATTED, 'the register area runs past the end of the region');
    this.registers = h.registers;
    this.writers = h.writers;
    this.#pd = host.nic.allocPd();
    // Only the blocks are remote memory: the header is never a client's to touch.
    this.mr = host.nic.registerMr(this.#pd, o.base + REGISTER_HEADER_BYTES, h.registers * blockBytes(h.writers), Access.REMOTE_READ | Access.REMOTE_WRITE | Access.REMOTE_ATOMIC | Access.FLUSH_GLOBAL | Access.FLUSH_PERSISTENT);
  }

  #blockAt(i: number): number {
    return this.base + REGISTER_HEADER_BYTES + i * blockBytes(this.writers);
  }

  /**
   * Nothing to rebuild (no free lists, no log): the header was validated by open. A cell whose
   * record does not carry its word (never left by a correct install: the record is durable before
   * the CAS) becomes LOST_WORD: this node lost its copy. Idempotent (a second call returns the
   * first's report).
   */
  recover(): RegisterRecoveryReport {
    if (this.#report !== undefined) return this.#report;
    let lost = 0;
    const rows: Record<string, number> = {};
    for (let i = 0; i < this.registers; i++) {
      const at = this.#blockAt(i);
      // The input of REGISTER_CELL_TABLE (recovery.ts).
      const word = this.cell(i) !== undefined ? 'carried' : isLostWord(new DataView(this.#region.load(at, 8).buffer).getBigUint64(0, true)) ? 'lost' : 'orphan';
      const row = decideRegisterCell({ word });
      rows[row.id] = (rows[row.id] ?? 0) + 1;
      if (row.action !== 'mark-lost') continue;
      this.#region.store(at, wordBytes(LOST_WORD));
      this.#region.persist(at, CELL_BYTES);
      lost++;
    }
    this.#report = Object.freeze({ app: 'register', registers: this.registers, lostCopies: lost, rows: Object.freeze(rows) });
    return this.#report;
  }

  accept(_hello: Uint8Array): AcceptedClient {
    if (this.#report === undefined) throw new PmrpcError('PMRPC_ERR_NOT_RECOVERED', 'accept() before recover()');
    if (this.#closed) throw new PmrpcError(RegisterErrorCodes.CLOSED, 'the register app is closed');
    const qp = this.#nic.createQp(this.#pd);
    this.#qps.push(qp);
    return { qp, welcome: jsonBytes({ app: 'register', rkey: this.mr.rkey, cells: this.base + REGISTER_HEADER_BYTES, registers: this.registers, writers: this.writers }) };
  }

  /** Register `i` as it is now (visible memory); undefined when this node lost its copy (LOST_WORD, or a record that does not carry the word). */
  cell(i: number): Cell | undefined {
    if (!Number.isSafeInteger(i) || i < 0 || i >= this.registers) throw new RangeError(`register must be an integer in [0, ${this.registers}), got ${String(i)}`);
    const c = decodeBlock(this.#region.load(this.#blockAt(i), blockBytes(this.writers)), this.writers);
    return c === 'lost' ? undefined : c;
  }

  inspect(): Record<string, unknown> {
    const cells = Array.from({ length: this.registers }, (_, i) => {
      const c = this.cell(i);
      return c === undefined ? { register: i, lost: true } : { register: i, ts: c.ts.toString(), writer: c.writer.toString(), value: c.value.toString() };
    });
    return { app: 'register', registers: this.registers, writers: this.writers, cells };
  }

  audit(): AppProblem[] {
    const out: AppProblem[] = [];
    for (let i = 0; i < this.registers; i++) {
      const word = new DataView(this.#region.load(this.#blockAt(i), 8).buffer).getBigUint64(0, true);
      if (this.cell(i) === undefined && !isLostWord(word)) out.push({ kind: 'cell', detail: `register ${i}: the cell word points at a record that does not carry it` });
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

