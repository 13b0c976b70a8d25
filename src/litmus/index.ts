import { nicLitmus } from './nic.js';
import { pmemLitmus } from './pmem.js';
import type { Litmus } from './types.js';

export { runLitmus, type Litmus, type LitmusLayer, type LitmusOutcome, type LitmusResult } from './types.js';

/** The whole catalogue, in layer order. */
export function litmusCatalogue(): Litmus[] {
  return [...pmemLitmus, ...nicLitmus];
}
