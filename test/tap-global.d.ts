// The type of the `t` a tap 21 callback receives (tap's Test with its built plugins), for helpers
// that take one: `function helper(t: Tap.Test)`. Type-checked by `tsc -p tsconfig.test.json`.
import type tap from 'tap';

declare global {
  namespace Tap {
    type Test = Parameters<Parameters<typeof tap.test>[0]>[0];
  }
}
export {};
