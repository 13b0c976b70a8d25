/**
 * Decision tables as data (DESIGN §3): a row names the inputs it covers (`when`: for each input,
 * the values it matches; an input left out matches any value), the action and a `why`. Recovery's
 * ring table (decision-table.ts), the connection-slot table (conn-table.ts) and the apps' tables
 * (e.g. PRISM-RS's slot table) match rows here; their coverage tests enumerate every input with
 * `allCombinations` and assert exactly one row for each.
 */
import { invariant } from '../pmem/index.js';

/** For each input, the values a row covers (omitted: every value). */
export type When<I> = { readonly [K in keyof I]?: readonly I[K][] };

/** Does a row's `when` cover `input`? */
export function rowMatches<I extends object>(when: When<I>, input: I): boolean {
  for (const k of Object.keys(when) as Array<keyof I>) {
    const vs = when[k];
    if (vs !== undefined && !vs.includes(input[k])) return false;
  }
  return true;
}

/** Every row of `table` covering `input` (a coverage test asserts there is exactly one). */
export function matchRows<I extends object, R extends { readonly when: When<I> }>(table: readonly R[], input: I): R[] {
  return table.filter((r) => rowMatches(r.when, input));
}

/** The one row of `table` (named `name` in the message) for `input`; broken coverage is a pmrpc bug: an assertion. */
export function decideRow<I extends object, R extends { readonly when: When<I> }>(name: string, table: readonly R[], input: I): R {
  const rows = matchRows(table, input);
  invariant(rows.length === 1, () => `${name}: ${rows.length} rows match ${JSON.stringify(input)}`);
  return rows[0]!;
}

/** Every combination of the inputs' values (the product of their lists), in order. */
export function allCombinations<I extends object>(values: { readonly [K in keyof I]: readonly I[K][] }): I[] {
  let out: Array<Partial<I>> = [{}];
  for (const k of Object.keys(values) as Array<keyof I>) out = out.flatMap((p) => values[k].map((v) => ({ ...p, [k]: v })));
  return out as I[];
}
