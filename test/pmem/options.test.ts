// The one options helper (DESIGN §10): defaults, undefined meaning "the default", and the exact
// message of every checker.
import t from 'tap';
import { bool, callable, intAtLeast, integer, intIn, must, nonEmptyString, nonNegativeInt, oneOf, onlyIf, optional, positiveInt, positiveMs, probability, resolveOptions } from '../../pmem/index.js';

interface O {
  a: number;
  b: boolean;
  c: string;
  d: (() => void) | undefined;
}
const DEFAULTS: Readonly<O> = Object.freeze({ a: 1, b: false, c: 'x', d: undefined });

t.test('merges over the defaults; undefined takes the default; the defaults are not touched', async (t) => {
  t.same(resolveOptions(DEFAULTS, undefined, {}), DEFAULTS);
  t.same(resolveOptions(DEFAULTS, { a: 5, b: undefined }, {}), { a: 5, b: false, c: 'x', d: undefined });
  t.equal(DEFAULTS.a, 1);
  t.not(resolveOptions(DEFAULTS, {}, {}), DEFAULTS);
});

t.test('options must be an object', async (t) => {
  t.throws(() => resolveOptions(DEFAULTS, null as never, {}), new TypeError('options must be an object, got null'));
  t.throws(() => resolveOptions(DEFAULTS, 3 as never, {}), new TypeError('options must be an object, got 3'));
});

t.test('checks run in the order listed, on the merged value', async (t) => {
  const checks = { b: bool, a: positiveInt };
  t.throws(() => resolveOptions(DEFAULTS, { a: 0, b: 'no' as never }, checks), new TypeError('b must be a boolean, got no'));
  t.throws(() => resolveOptions(DEFAULTS, { a: 0 }, checks), new RangeError('a must be a positive integer, got 0'));
  t.same(resolveOptions(DEFAULTS, { a: 2 }, checks).a, 2);
});

t.test('every checker says exactly what was wrong', async (t) => {
  const cases: Array<[ReturnType<typeof must>, unknown, Error]> = [
    [bool, 1, new TypeError('x must be a boolean, got 1')],
    [integer, 1.5, new TypeError('x must be an integer, got 1.5')],
    [positiveInt, 0, new RangeError('x must be a positive integer, got 0')],
    [nonNegativeInt, -1, new RangeError('x must be a non-negative integer, got -1')],
    [intAtLeast(2), 1, new RangeError('x must be an integer >= 2, got 1')],
    [intIn(0, 9), 10, new RangeError('x must be an integer in [0, 9], got 10')],
    [intIn(0, 2 ** 32 - 1, '[0, 2^32)'), 2 ** 32, new RangeError('x must be an integer in [0, 2^32), got 4294967296')],
    [probability, 1.5, new RangeError('x must be a probability in [0, 1], got 1.5')],
    [probability, NaN, new RangeError('x must be a probability in [0, 1], got NaN')],
    [positiveMs, 0, new RangeError('x must be a positive number of milliseconds, got 0')],
    [positiveMs, Infinity, new RangeError('x must be a positive number of milliseconds, got Infinity')],
    [oneOf(['a', 'b', 'c']), 'd', new TypeError("x must be 'a', 'b' or 'c', got d")],
    [oneOf(['a', 'b']), 'd', new TypeError("x must be 'a' or 'b', got d")],
    [nonEmptyString, '', new TypeError('x must be a non-empty string, got ')],
    [callable(), 1, new TypeError('x must be a function')],
    [callable('must be a function (y) => z'), 1, new TypeError('x must be a function (y) => z')],
    [optional(callable()), 1, new TypeError('x must be a function')],
    [must((v) => v === 7, (v) => `must be 7, got ${String(v)}`, RangeError), 8, new RangeError('x must be 7, got 8')],
  ];
  for (const [check, value, err] of cases) t.throws(() => check('x', value, {}), err, err.message);
  optional(callable())('x', undefined, {});
  onlyIf((o) => o.mode === 'on', positiveInt)('x', 0, { mode: 'off' });
  t.throws(() => onlyIf((o) => o.mode === 'on', positiveInt)('x', 0, { mode: 'on' }), new RangeError('x must be a positive integer, got 0'));
});
