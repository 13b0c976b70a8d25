/**
 * Operating failures of pmrpc: every one is a PmrpcError with a stable string `code`, listed in
 * docs/errors.md. A broken invariant of pmrpc itself — persistent state that is about to become
 * wrong (a slot pointer, a tag, an epoch, a free list, a ring position) — is `invariant()`:
 * PMRPC_ERR_INVARIANT, which stops the node instead of letting it write bad state (as TigerBeetle
 * asserts its invariants). A caller's misuse (an invalid option) is a TypeError / RangeError.
 *
 * The codes are registered, so that a code nobody defined does not compile: each layer defines its
 * codes once with defineErrorCodes() (which also records them at run time, for the test that
 * checks docs/errors.md) and adds them to the type registry by module augmentation:
 *
 *   export const NicErrorCodes = defineErrorCodes('flush', { BAD_RKEY: 'PMRPC_ERR_BAD_RKEY', ... });
 *   declare module '../pmem/index.js' {
 *     interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof NicErrorCodes> {}
 *   }
 *
 * An application with codes of its own does the same (augmenting 'pmrpc' or 'pmrpc/pmem').
 */

/** Every registered code, as keys (the values are unused). Augmented by each layer; see above. */
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof ErrorCodes> {}

/** The registered codes: a PmrpcError's `code`. */
export type ErrorCode = keyof PmrpcErrorCodeRegistry & `PMRPC_ERR_${string}`;

/** The registry entries of a code object made by defineErrorCodes. */
export type ErrorCodesOf<T extends Readonly<Record<string, `PMRPC_ERR_${string}`>>> = { [C in T[keyof T]]: true };

const registered = new Map<string, Set<string>>();

/**
 * Freezes a layer's code object and records its codes at run time (registeredErrorCodes()). The
 * type registry is augmented separately (module augmentation), as shown above.
 */
export function defineErrorCodes<const T extends Readonly<Record<string, `PMRPC_ERR_${string}`>>>(layer: string, codes: T): Readonly<T> {
  for (const code of Object.values(codes)) {
    if (!/^PMRPC_ERR_[A-Z0-9_]+$/.test(code)) throw new TypeError(`error code ${code} of ${layer} does not match PMRPC_ERR_[A-Z0-9_]+`);
    let layers = registered.get(code);
    if (layers === undefined) registered.set(code, (layers = new Set()));
    layers.add(layer);
  }
  return Object.freeze(codes);
}

/** Every code registered so far (by the modules loaded), with the layers that define it. */
export function registeredErrorCodes(): ReadonlyMap<string, readonly string[]> {
  return new Map([...registered].map(([code, layers]) => [code, [...layers]]));
}

export const ErrorCodes = defineErrorCodes('pmem', {
  /** An access or range lies (partly) outside the region or memory region. */
  OUT_OF_BOUNDS: 'PMRPC_ERR_OUT_OF_BOUNDS',
  /** An access that must be aligned (8-byte atomics) is not. */
  MISALIGNED: 'PMRPC_ERR_MISALIGNED',
  /** The file is not a pmrpc region (wrong magic): a foreign file, never overwritten. */
  NOT_A_REGION: 'PMRPC_ERR_NOT_A_REGION',
  /** The region header fails its checksum or holds impossible values. */
  REGION_CORRUPT: 'PMRPC_ERR_REGION_CORRUPT',
  /** The file is shorter than its header says (or shorter than a header). */
  REGION_TRUNCATED: 'PMRPC_ERR_REGION_TRUNCATED',
  /** The region was written by an unsupported layout version. */
  LAYOUT_VERSION: 'PMRPC_ERR_LAYOUT_VERSION',
  /** create() found a non-empty file at the path: it is never overwritten. */
  REGION_EXISTS: 'PMRPC_ERR_REGION_EXISTS',
  /**
   * The PM file is held by another process (or another open of it in this one): one owner per PM
   * file, an exclusive flock held while it is open for writing. The message names the holder's pid
   * (from /proc/locks) when it can.
   */
  FILE_LOCKED: 'PMRPC_ERR_FILE_LOCKED',
  /** A region size that is not a positive multiple of 64 bytes up to MAX_REGION_BYTES (4 GiB − 4 KiB). */
  REGION_SIZE: 'PMRPC_ERR_REGION_SIZE',
  /** The file is empty (0 bytes): never formatted (create it with `pmrpc format`). */
  NOT_FORMATTED: 'PMRPC_ERR_NOT_FORMATTED',
  /** The region was closed. */
  REGION_CLOSED: 'PMRPC_ERR_REGION_CLOSED',
  /** A system call failed; `errno`, `syscall` and `cause` say which. */
  IO: 'PMRPC_ERR_IO',
  /** Crash images were requested from a region that does not trace pending pieces. */
  NOT_TRACING: 'PMRPC_ERR_NOT_TRACING',
  /** The exhaustive crash-image engine would produce more images than its bound. */
  TOO_MANY_IMAGES: 'PMRPC_ERR_TOO_MANY_IMAGES',
  /**
   * A `strict` region's msync failed (cause: the PmrpcIoError): what reached the disk is unknown, so
   * nothing waiting on that sync is acknowledged and the region refuses every later persist, sync and
   * acknowledgement (sticky, as PostgreSQL treats a failed fsync); restart to recover from the file.
   */
  SYNC_FAILED: 'PMRPC_ERR_SYNC_FAILED',
  /**
   * A strict region's journal (`<file>.journal`) is damaged where a crash cannot damage it: its
   * header fails its checksum, or a record fails its checksum (or its header) while a later record
   * of the same epoch is intact — the later one was synced after it, so the damaged one held synced
   * lines, and replaying past it (or stopping at it) would lose acknowledged writes. The open is
   * refused, nothing written; restore the PM file and its journal from a backup.
   */
  JOURNAL_CORRUPT: 'PMRPC_ERR_JOURNAL_CORRUPT',
  /**
   * An invariant of pmrpc itself does not hold (a bug, or memory corrupted under it): checked where
   * persistent state changes, before the bad state is written. Never a request's fault: the RPC
   * server does not answer it as a request error but stops (`pmrpc serve` exits 70); restart
   * recovers from the file.
   */
  INVARIANT: 'PMRPC_ERR_INVARIANT',
});

export class PmrpcError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(`${code}: ${message}`, options);
    this.name = 'PmrpcError';
    this.code = code;
  }
}

/** A failed system call, from the native addon. */
export class PmrpcIoError extends PmrpcError {
  readonly errno: string;
  readonly syscall: string;
  constructor(message: string, errno: string, syscall: string, cause?: unknown) {
    super(ErrorCodes.IO, message, { cause });
    this.name = 'PmrpcIoError';
    this.errno = errno;
    this.syscall = syscall;
  }
}

/**
 * Asserts an invariant of pmrpc's own state: `cond` false throws PMRPC_ERR_INVARIANT with
 * `what()` (a function, so that the message costs nothing while the invariant holds). Checked
 * before a change to persistent state, so that a broken invariant stops the process instead of
 * writing bad state (DESIGN §10).
 */
export function invariant(cond: boolean, what: () => string): asserts cond {
  if (!cond) throw new PmrpcError(ErrorCodes.INVARIANT, `invariant violated: ${what()}`);
}

/** A PMRPC_ERR_INVARIANT error: pmrpc's own state is wrong; the process must stop, not answer it as a request error. */
export function isInvariantError(e: unknown): e is PmrpcError {
  return e instanceof PmrpcError && e.code === ErrorCodes.INVARIANT;
}

export function isPmrpcError(e: unknown, code?: ErrorCode): e is PmrpcError {
  return e instanceof PmrpcError && (code === undefined || e.code === code);
}
