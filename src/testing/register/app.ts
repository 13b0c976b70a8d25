/**
 * TEST-ONLY: a replicated register app, to exercise multi-node crash paths of the crash explorer
 * with less machinery than PRISM-RS. It is not PRISM-RS: no ALLOCATE, no indirection, values are one u64.
 *
 * Each node holds `registers` cells of 32 bytes after a 64-byte header, at `base`:
 *
 *   cell  +0 value u64 | +8 check u64 | +16 writer id u64 | +24 timestamp u64
 *
 * The enhanced CAS compares unsigned little-endian (flush/prism.ts casSucceeds), so the highest
 * bytes are the most significant: with the compare mask over bytes 16..31 the cell compares as the
 * tag ⟨timestamp, writer id⟩ — timestamp first — and one CAS `gt` installs a newer ⟨tag, value⟩
 * whole. `check` is a CRC-32C of the other 24 bytes: a crash image may hold a torn cell (a CAS
 * result partly drained from the NIC cache, DESIGN §2.2 placement 'any'); clients treat a torn cell
 * as a node that did not answer, and audit() reports it.
 *
 * Recovery has nothing to rebuild (no free lists, no log): it validates the header, and says so.
 */
import { crc32c, defineErrorCodes, intIn, must, PmrpcError, resolveOptions, type ErrorCodesOf, type OptionChecks, type PmemRegion } from '../../../pmem/index.js';
import { Access, type MemoryRegion, type ProtectionDomain, type Rnic, type ServerQp } from '../../../flush/index.js';
import { jsonBytes, type AcceptedClient, type App, type AppHost, type AppProblem, type AppServer } from '../../apps/index.js';

export const RegisterErrorCodes = defineErrorCodes('testing', {
  /** Fewer than a majority of nodes answered an operation. */
  NO_MAJORITY: 'PMRPC_ERR_REGISTER_NO_MAJORITY',
  /** The region holds no register area at `base` (or a damaged header). */
  NOT_FORMATTED: 'PMRPC_ERR_REGISTER_NOT_FORMATTED',
  /** format() on a region that already holds a register area. */
  ALREADY_FORMATTED: 'PMRPC_ERR_ALREADY_FORMATTED',
  /** The region is smaller than the register area. */
  SIZE_TOO_SMALL: 'PMRPC_ERR_SIZE_TOO_SMALL',
  /** The register app was used after close(). */
  CLOSED: 'PMRPC_ERR_REGISTER_CLOSED',
});

declare module '../../../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof RegisterErrorCodes> {}
}

export const REGISTER_MAGIC = 0x3130474552524d50n; // "PMRREG01"
export const REGISTER_VERSION = 1;
export const REGISTER_HEADER_BYTES = 64;
export const CELL_BYTES = 32;

export interface RegisterAppOptions {
  /** Registers per node (1..4096). */
  registers: number;
  /** Offset of the register area in the region (a multiple of 64). */
  base: number;
}

export const REGISTER_APP_DEFAULTS: Readonly<RegisterAppOptions> = Object.freeze({ registers: 1, base: 0 });

/** A cell's content. */
export interface Cell {
  ts: bigint;
  writer: bigint;
  value: bigint;
}

const MASK64 = (1n << 64n) - 1n;

function u64At(b: Uint8Array, off: number): bigint {
  return new DataView(b.buffer, b.byteOffset, b.byteLength).getBigUint64(off, true);
}

function cellCheck(b: Uint8Array): bigint {
  const body = new Uint8Array(24);
  body.set(b.subarray(0, 8), 0);
  body.set(b.subarray(16, 32), 8);
  return BigInt(crc32c(body));
}

/** The 32 bytes of a cell, with its check word. */
export function encodeCell(c: Cell): Uint8Array {
  for (const [k, v] of Object.entries(c)) if (typeof v !== 'bigint' || v < 0n || v > MASK64) throw new RangeError(`cell ${k} must be a u64 bigint, got ${String(v)}`);
  const b = new Uint8Array(CELL_BYTES);
  const dv = new DataView(b.buffer);
  dv.setBigUint64(0, c.value, true);
  dv.setBigUint64(16, c.writer, true);
  dv.setBigUint64(24, c.ts, true);
  dv.setBigUint64(8, cellCheck(b), true);
  return b;
}

/** The cell in `b`, or undefined when it is torn (its check word does not match). */
export function decodeCell(b: Uint8Array): Cell | undefined {
  if (b.length !== CELL_BYTES || u64At(b, 8) !== cellCheck(b)) return undefined;
  return { value: u64At(b, 0), writer: u64At(b, 16), ts: u64At(b, 24) };
}

/**
 * The cell recovery leaves where it found a torn one: tag ⟨0, 2^64-1⟩, value 0. This node lost its
 * copy of the register: clients treat it as a node that did not answer (so it never answers with a
 * state older than one it acknowledged), and any write (timestamp >= 1) installs over it.
 */
export const LOST_CELL: Readonly<Cell> = Object.freeze({ ts: 0n, writer: MASK64, value: 0n });

export function isLostCell(c: Cell): boolean {
  return c.ts === 0n && c.writer === MASK64 && c.value === 0n;
}

/** Tag order: timestamp, then writer id. */
export function compareTags(a: Cell, b: Cell): number {
  return a.ts !== b.ts ? (a.ts < b.ts ? -1 : 1) : a.writer !== b.writer ? (a.writer < b.writer ? -1 : 1) : 0;
}

/** Compare mask of the enhanced CAS: bytes 16..31 (the tag). A fresh copy each call (typed arrays cannot be frozen). */
export function tagCompareMask(): Uint8Array {
  return Uint8Array.from({ length: CELL_BYTES }, (_, i) => (i >= 16 ? 0xff : 0));
}

function encodeHeader(registers: number): Uint8Array {
  const b = new Uint8Array(REGISTER_HEADER_BYTES);
  const dv = new DataView(b.buffer);
  dv.setBigUint64(0, REGISTER_MAGIC, true);
  dv.setUint32(8, REGISTER_VERSION, true);
  dv.setUint32(12, registers, true);
  dv.setUint32(16, crc32c(b.subarray(0, 16)), true);
  return b;
}

/** The register count of the header at `b`, or undefined when there is no valid header. */
function decodeHeader(b: Uint8Array): number | undefined {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (dv.getBigUint64(0, true) !== REGISTER_MAGIC) return undefined;
  if (dv.getUint32(16, true) !== crc32c(b.subarray(0, 16))) return undefined;
  if (dv.getUint32(8, true) !== REGISTER_VERSION) return undefined;
  const n = dv.getUint32(12, true);
  return n >= 1 && n <= 4096 ? n : undefined;
}

const REGISTER_APP_CHECKS: OptionChecks<RegisterAppOptions> = {
  registers: intIn(1, 4096),
  base: must((v) => Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) % 64 === 0, (v) => `must be a non-negative multiple of 64, got ${String(v)}`, RangeError),
};

function resolveRegisterOptions(options: Partial<RegisterAppOptions>): RegisterAppOptions {
  return resolveOptions(REGISTER_APP_DEFAULTS, options, REGISTER_APP_CHECKS);
}

/** The register app on one node's region. */
export class RegisterAppServer implements AppServer {
  readonly app = 'register';
  readonly registers: number;
  readonly base: number;
  readonly #region: PmemRegion;
  readonly #nic: Rnic;
  readonly #pd: ProtectionDomain;
  readonly mr: MemoryRegion;
  #qps: ServerQp[] = [];
  #recovered = false;
  #closed = false;

  constructor(host: AppHost, o: RegisterAppOptions) {
    this.#region = host.region;
    this.#nic = host.nic;
    this.base = o.base;
    if (o.base + REGISTER_HEADER_BYTES > host.region.sizeBytes) throw new PmrpcError(RegisterErrorCodes.NOT_FORMATTED, `no register header at ${o.base}: the region has ${host.region.sizeBytes} bytes`);
    const n = decodeHeader(host.region.load(o.base, REGISTER_HEADER_BYTES));
    if (n === undefined) throw new PmrpcError(RegisterErrorCodes.NOT_FORMATTED, `no valid register header at ${o.base}`);
    if (o.base + REGISTER_HEADER_BYTES + n * CELL_BYTES > host.region.sizeBytes) throw new PmrpcError(RegisterErrorCodes.NOT_FORMATTED, 'the register area runs past the end of the region');
    this.registers = n;
    this.#pd = host.nic.allocPd();
    // Only the cells are remote memory: the header is never a client's to touch.
    this.mr = host.nic.registerMr(this.#pd, o.base + REGISTER_HEADER_BYTES, n * CELL_BYTES, Access.REMOTE_READ | Access.REMOTE_ATOMIC | Access.FLUSH_GLOBAL | Access.FLUSH_PERSISTENT);
  }

  /**
   * Nothing to rebuild (no free lists, no log): the header was validated by open. A torn cell (a
   * CAS result a crash left half persisted; its write was never counted here, since a node counts
   * only after the FLUSH in the same chain) becomes LOST_CELL: this node lost its copy.
   */
  recover(): Record<string, unknown> {
    if (this.#recovered) return {};
    let lost = 0;
    for (let i = 0; i < this.registers; i++) {
      if (this.cell(i) !== undefined) continue;
      const at = this.base + REGISTER_HEADER_BYTES + i * CELL_BYTES;
      this.#region.store(at, encodeCell(LOST_CELL));
      this.#region.persist(at, CELL_BYTES);
      lost++;
    }
    this.#recovered = true;
    return { app: 'register', registers: this.registers, lostCopies: lost, rebuilt: 'torn cells marked lost; cells are checked by clients and audit' };
  }

  accept(_hello: Uint8Array): AcceptedClient {
    if (!this.#recovered) throw new PmrpcError('PMRPC_ERR_NOT_RECOVERED', 'accept() before recover()');
    if (this.#closed) throw new PmrpcError(RegisterErrorCodes.CLOSED, 'the register app is closed');
    const qp = this.#nic.createQp(this.#pd);
    this.#qps.push(qp);
    return { qp, welcome: jsonBytes({ app: 'register', rkey: this.mr.rkey, cells: this.base + REGISTER_HEADER_BYTES, registers: this.registers }) };
  }

  /** The cell of register `i` as it is now (visible memory). */
  cell(i: number): Cell | undefined {
    if (!Number.isSafeInteger(i) || i < 0 || i >= this.registers) throw new RangeError(`register must be an integer in [0, ${this.registers}), got ${String(i)}`);
    return decodeCell(this.#region.load(this.base + REGISTER_HEADER_BYTES + i * CELL_BYTES, CELL_BYTES));
  }

  inspect(): Record<string, unknown> {
    const cells = Array.from({ length: this.registers }, (_, i) => {
      const c = this.cell(i);
      return c === undefined ? { register: i, torn: true } : { register: i, ts: c.ts.toString(), writer: c.writer.toString(), value: c.value.toString() };
    });
    return { app: 'register', registers: this.registers, cells };
  }

  audit(): AppProblem[] {
    const out: AppProblem[] = [];
    for (let i = 0; i < this.registers; i++) {
      const c = this.cell(i);
      if (c === undefined) out.push({ kind: 'cell', detail: `register ${i}: torn cell (check word does not match)` });
      else if (c.ts === 0n && !isLostCell(c) && (c.writer !== 0n || c.value !== 0n)) out.push({ kind: 'cell', detail: `register ${i}: timestamp 0 with writer ${c.writer} and value ${c.value}` });
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

/** TEST-ONLY replicated register app (see the file comment). */
export const registerApp: App<RegisterAppOptions> = Object.freeze({
  name: 'register',
  defaults: REGISTER_APP_DEFAULTS,
  resolveOptions: resolveRegisterOptions,
  minRegionBytes(o: RegisterAppOptions): number {
    return o.base + REGISTER_HEADER_BYTES + o.registers * CELL_BYTES;
  },
  format(region: PmemRegion, o: RegisterAppOptions): void {
    const need = o.base + REGISTER_HEADER_BYTES + o.registers * CELL_BYTES;
    if (need > region.sizeBytes) throw new PmrpcError(RegisterErrorCodes.SIZE_TOO_SMALL, `the register area needs ${need} bytes; the region has ${region.sizeBytes}`);
    if (decodeHeader(region.load(o.base, REGISTER_HEADER_BYTES)) !== undefined) throw new PmrpcError(RegisterErrorCodes.ALREADY_FORMATTED, `offset ${o.base} already holds a register area; it is never overwritten`);
    const empty = encodeCell({ ts: 0n, writer: 0n, value: 0n });
    for (let i = 0; i < o.registers; i++) region.store(o.base + REGISTER_HEADER_BYTES + i * CELL_BYTES, empty);
    region.persist(o.base + REGISTER_HEADER_BYTES, o.registers * CELL_BYTES);
    // The header last: a format cut short leaves no valid header.
    region.store(o.base, encodeHeader(o.registers));
    region.persist(o.base, REGISTER_HEADER_BYTES);
  },
  open(host: AppHost, o: RegisterAppOptions): RegisterAppServer {
    return new RegisterAppServer(host, o);
  },
});
