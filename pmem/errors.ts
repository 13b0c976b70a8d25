/**
 * Operating failures of pmrpc: every one is a PmrpcError with a stable string `code`, listed in
 * docs/errors.md. Programmer errors (a broken invariant of pmrpc itself, a store from a thread
 * that does not own a region) are node:assert assertions instead.
 */

export const ErrorCodes = {
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
  /** The region was closed. */
  REGION_CLOSED: 'PMRPC_ERR_REGION_CLOSED',
  /** A system call failed; `errno`, `syscall` and `cause` say which. */
  IO: 'PMRPC_ERR_IO',
  /** Crash images were requested from a region that does not trace pending pieces. */
  NOT_TRACING: 'PMRPC_ERR_NOT_TRACING',
  /** The exhaustive crash-image engine would produce more images than its bound. */
  TOO_MANY_IMAGES: 'PMRPC_ERR_TOO_MANY_IMAGES',
} as const;

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes] | `PMRPC_ERR_${string}`;

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

export function isPmrpcError(e: unknown, code?: ErrorCode): e is PmrpcError {
  return e instanceof PmrpcError && (code === undefined || e.code === code);
}
