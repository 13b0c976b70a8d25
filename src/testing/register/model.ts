/** TEST-ONLY: the sequential specification of the register app, for checkLinearizable. */
import type { Model, Operation } from '../../check/index.js';

export type RegisterInput = { kind: 'write'; register: number; value: bigint } | { kind: 'read'; register: number };
/** read: the value; write: null. */
export type RegisterOutput = bigint | null;

/** Registers start at 0; partitioned by register. */
export const registerModel: Model<bigint, RegisterInput, RegisterOutput> = {
  init: () => 0n,
  step(state, input, output) {
    if (input.kind === 'write') return input.value;
    if (output === undefined) return state;
    return output === state ? state : undefined;
  },
  key: (s) => s.toString(),
  partition: (input) => String(input.register),
  describe: (op: Operation<RegisterInput, RegisterOutput>) =>
    `client ${op.client} ${op.input.kind === 'write' ? `write(r${op.input.register}, ${op.input.value})` : `read(r${op.input.register}) -> ${op.ret === undefined ? '?' : String(op.output)}`} [${op.call}, ${op.ret ?? '∞'}]`,
};
