/**
 * Soak (`pmrpc soak`): an app's minimal deployment driven through N × its arena's capacity in
 * operations without a restart, to show that it runs for ever at the capacity its layout promises
 * (DESIGN "Live reclamation"; docs/tx.md "Soak"). In-process: every shard is an app server on an
 * in-memory region behind the emulated NIC and the in-process fabric (immediate delivery), the
 * clients are the app's own public clients — no TCP, no process boundary, no crash.
 *
 * The apps it drives are those whose crash-test record (src/testing/crash/apps.ts) has a `soak`
 * field: their deployment, workload and item bounds (src/testing/soak/apps.ts). After every
 * operation the items in use (arena items not on the NIC's free lists, summed over the shards)
 * are sampled; the report gives the high water mark, and the one at 5 × capacity (the run fails
 * when the mark at N × exceeds it by more than 1 % of the capacity: the footprint grew with the
 * run). Any operation that errors (a throw, an outcome `unknown`, an abort other than CONFLICT —
 * e.g. PMRPC_ERR_TX_ARENA_FULL) counts in `errors`; `violations` holds what the end checks find
 * (PRISM-TX: bank conservation, every shard's audit, and no leaked item once idle — every item is
 * free but the installed values).
 */
import { defineErrorCodes, PmrpcError, type ErrorCodesOf } from '../../pmem/index.js';
import { CRASH_APPS } from './crash/index.js';
import type { SoakEntry, SoakOptions, SoakReport } from './soak/index.js';

export type { SoakEntry, SoakOptions, SoakReport } from './soak/index.js';

export const SoakErrorCodes = defineErrorCodes('soak', {
  /** `pmrpc soak --app` names an app the soak does not drive (kv, rs, tx). */
  APP: 'PMRPC_ERR_SOAK_APP',
  /** A soak option out of its range (multiple, clients, items). */
  BAD_OPTION: 'PMRPC_ERR_SOAK_BAD_OPTION',
});

declare module '../../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof SoakErrorCodes> {}
}

/** The apps with a soak, in registry order. */
const SOAKS: ReadonlyArray<{ name: string; soak: SoakEntry }> = CRASH_APPS.flatMap((a) => (a.soak === undefined ? [] : [{ name: a.name, soak: a.soak }]));

/** The apps `pmrpc soak --app` drives (those whose crash-test record has a `soak`). */
export const SOAK_APPS: readonly string[] = Object.freeze(SOAKS.map((a) => a.name));
/** An app of SOAK_APPS. */
export type SoakApp = string;

export const SOAK_DEFAULTS: Readonly<SoakOptions> = Object.freeze({ app: SOAKS.find((a) => a.soak.default === true)!.name, multiple: 50, seed: 1, items: undefined, clients: 4, progress: undefined });

/** Runs the soak of `options.app` (see the file comment). */
export async function runSoak(options: Partial<SoakOptions> = {}): Promise<SoakReport> {
  const o: SoakOptions = { ...SOAK_DEFAULTS, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) };
  const entry = SOAKS.find((a) => a.name === o.app)?.soak;
  if (entry === undefined) throw new PmrpcError(SoakErrorCodes.APP, `the soak drives ${SOAK_APPS.join(', ')}, not ${String(o.app)}`);
  const int = (name: string, v: unknown, lo: number, hi: number): void => {
    if (!Number.isSafeInteger(v) || (v as number) < lo || (v as number) > hi) throw new PmrpcError(SoakErrorCodes.BAD_OPTION, `${name} must be an integer in [${lo}, ${hi}], got ${String(v)}`);
  };
  int('multiple', o.multiple, 1, 1000);
  int('clients', o.clients, 1, 8);
  int('seed', o.seed, 0, 2 ** 32 - 1);
  if (o.items !== undefined) int('items', o.items, ...entry.items(o.clients));
  return entry.run(o);
}

/** A soak passed: no operation errored and the end checks found nothing. */
export function soakPassed(r: SoakReport): boolean {
  return r.errors === 0 && r.violations.length === 0;
}
