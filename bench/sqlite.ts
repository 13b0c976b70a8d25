/**
 * better-sqlite3, loaded when a benchmark first opens a database (the SQLite baselines of
 * `bench flush` and `bench kv`, the results history), never at import. It is an optional
 * dependency: a native addon that builds from source at install here, needed by the benchmarks
 * only, never by the library; `npm install --omit=optional` skips it. Without it these benchmarks
 * fail with PMRPC_ERR_SQLITE_UNAVAILABLE (docs/errors.md).
 */
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';
import { defineErrorCodes, PmrpcError, type ErrorCodesOf } from '../pmem/index.js';

export const BenchErrorCodes = defineErrorCodes('bench', {
  /** better-sqlite3 (an optional dependency) does not load: the SQLite baselines and the results history need it. */
  SQLITE_UNAVAILABLE: 'PMRPC_ERR_SQLITE_UNAVAILABLE',
});

declare module '../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof BenchErrorCodes> {}
}

export type Database = BetterSqlite3.Database;

let ctor: typeof BetterSqlite3 | undefined;

function sqlite(): typeof BetterSqlite3 {
  if (ctor !== undefined) return ctor;
  try {
    const c = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;
    new c(':memory:').close(); // better-sqlite3 loads its addon at the first open: fail here, coded
    ctor = c;
    return c;
  } catch (e) {
    const why = e instanceof Error ? e.message.split('\n')[0] : String(e);
    throw new PmrpcError(
      BenchErrorCodes.SQLITE_UNAVAILABLE,
      `better-sqlite3 does not load (${why}): it is an optional dependency, needed by the SQLite baselines of \`bench flush\` and \`bench kv\` ` +
        'and by the results history (--no-history skips it); install it with `npm install better-sqlite3` (builds from source: needs a C++ toolchain)',
      { cause: e },
    );
  }
}

/** Opens (or creates) a SQLite database; PMRPC_ERR_SQLITE_UNAVAILABLE if better-sqlite3 does not load. */
export function openDatabase(path: string, options?: BetterSqlite3.Options): Database {
  const Sqlite = sqlite();
  return new Sqlite(path, options);
}
