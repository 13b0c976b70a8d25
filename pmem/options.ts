/**
 * The one options helper (DESIGN §10): options are one interface with one defaults object; an
 * option left out or given as `undefined` takes its default; every invalid option is a TypeError
 * or RangeError whose exact message names the option and the value it got.
 *
 *   const o = resolveOptions(DEFAULTS, options, { batchMax: positiveInt, strict: bool, ... });
 *
 * Checks run in the order they are listed (so the first invalid option listed is the one
 * reported). A check may look at the other options (third argument) for conditional rules;
 * checks across options that read better by hand follow the call.
 */

/** Throws a TypeError / RangeError if `value` is not a valid `name`. */
export type OptionCheck = (name: string, value: unknown, options: Readonly<Record<string, unknown>>) => void;

export type OptionChecks<T> = { readonly [K in keyof T]?: OptionCheck };

/**
 * Merges `options` over `defaults` (undefined values do not override) and runs `checks`.
 * `options` itself must be an object (or undefined: all defaults).
 */
export function resolveOptions<T extends object>(defaults: Readonly<T>, options: Partial<T> | undefined, checks: OptionChecks<T>): T {
  if (options === undefined) options = {};
  if (options === null || typeof options !== 'object') throw new TypeError(`options must be an object, got ${String(options)}`);
  const o = { ...defaults } as T;
  for (const [k, v] of Object.entries(options)) if (v !== undefined) (o as Record<string, unknown>)[k] = v;
  const all = o as Readonly<Record<string, unknown>>;
  for (const [k, check] of Object.entries(checks) as Array<[string, OptionCheck | undefined]>) check?.(k, all[k], all);
  return o;
}

/** Options given (not undefined) only: for layers that pass some of their options on to another. */
export function definedOptions<T extends object>(options: Partial<T>): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as Partial<T>;
}

// ---------------------------------------------------------------------------- checkers

/** A check from a predicate: the message is `${name} ${text}` (text may show the value). */
export function must(test: (v: unknown) => boolean, text: string | ((v: unknown) => string), Err: typeof TypeError | typeof RangeError = TypeError): OptionCheck {
  return (name, v) => {
    if (!test(v)) throw new Err(`${name} ${typeof text === 'string' ? text : text(v)}`);
  };
}

/** `check`, but undefined is allowed (an optional callback, token, ...). */
export function optional(check: OptionCheck): OptionCheck {
  return (name, v, all) => {
    if (v !== undefined) check(name, v, all);
  };
}

/** `check` only when `applies(all options)`: a rule that holds in one mode only. */
export function onlyIf(applies: (options: Readonly<Record<string, unknown>>) => boolean, check: OptionCheck): OptionCheck {
  return (name, v, all) => {
    if (applies(all)) check(name, v, all);
  };
}

const got = (v: unknown): string => `got ${String(v)}`;
const isInt = (v: unknown): v is number => Number.isSafeInteger(v);

export const bool: OptionCheck = must((v) => typeof v === 'boolean', (v) => `must be a boolean, ${got(v)}`);

/** TypeError `must be an integer` (a seed: any safe integer). */
export const integer: OptionCheck = must(isInt, (v) => `must be an integer, ${got(v)}`);

/** RangeError `must be a positive integer` (>= 1). */
export const positiveInt: OptionCheck = must((v) => isInt(v) && v >= 1, (v) => `must be a positive integer, ${got(v)}`, RangeError);

/** RangeError `must be a non-negative integer` (>= 0). */
export const nonNegativeInt: OptionCheck = must((v) => isInt(v) && v >= 0, (v) => `must be a non-negative integer, ${got(v)}`, RangeError);

/** RangeError `must be an integer >= min`. */
export function intAtLeast(min: number): OptionCheck {
  return must((v) => isInt(v) && v >= min, (v) => `must be an integer >= ${min}, ${got(v)}`, RangeError);
}

/** RangeError `must be an integer in [min, max]`; `range` replaces the bracket text (e.g. '[0, 2^32)' with max 2^32 − 1). */
export function intIn(min: number, max: number, range = `[${min}, ${max}]`): OptionCheck {
  return must((v) => isInt(v) && v >= min && v <= max, (v) => `must be an integer in ${range}, ${got(v)}`, RangeError);
}

/** RangeError `must be a probability in [0, 1]`. */
export const probability: OptionCheck = must((v) => typeof v === 'number' && v >= 0 && v <= 1, (v) => `must be a probability in [0, 1], ${got(v)}`, RangeError);

/** RangeError `must be a positive number of milliseconds` (finite, > 0). */
export const positiveMs: OptionCheck = must((v) => typeof v === 'number' && Number.isFinite(v) && v > 0, (v) => `must be a positive number of milliseconds, ${got(v)}`, RangeError);

/** TypeError `must be 'a', 'b' or 'c'`. */
export function oneOf(values: readonly string[]): OptionCheck {
  const list = values.map((x) => `'${x}'`);
  const text = list.length === 1 ? list[0]! : `${list.slice(0, -1).join(', ')} or ${list.at(-1)!}`;
  return must((v) => values.includes(v as string), (v) => `must be ${text}, ${got(v)}`);
}

/** TypeError `must be a non-empty string`. */
export const nonEmptyString: OptionCheck = must((v) => typeof v === 'string' && v.length > 0, (v) => `must be a non-empty string, ${got(v)}`);

/** TypeError `must be a function` (`text` replaces the message after the name). */
export function callable(text = 'must be a function'): OptionCheck {
  return must((v) => typeof v === 'function', text);
}
