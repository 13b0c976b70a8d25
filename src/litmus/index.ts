import { PmrpcError, defineErrorCodes, type ErrorCodesOf } from '../../pmem/index.js';
import { nicLitmus } from './nic.js';
import { pmemLitmus } from './pmem.js';
import type { Litmus, LitmusLayer } from './types.js';

export { runLitmus, type Litmus, type LitmusLayer, type LitmusOutcome, type LitmusResult } from './types.js';

export const LitmusErrorCodes = defineErrorCodes('litmus', {
  /** A selection (layer, name filter) that matches no litmus: a check of nothing would pass. */
  NOTHING_SELECTED: 'PMRPC_ERR_NOTHING_SELECTED',
});

declare module '../../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof LitmusErrorCodes> {}
}

/** The layers of the catalogue, in order. */
export const LITMUS_LAYERS: readonly LitmusLayer[] = Object.freeze(['pmem', 'nic']);

/** The whole catalogue, in layer order. */
export function litmusCatalogue(): Litmus[] {
  return [...pmemLitmus, ...nicLitmus];
}

/**
 * The litmus of one layer and/or whose name contains `filter`; PMRPC_ERR_NOTHING_SELECTED when
 * the layer is not one of LITMUS_LAYERS or nothing matches.
 */
export function selectLitmus(selection: { layer?: string | undefined; filter?: string | undefined } = {}): Litmus[] {
  const { layer, filter } = selection;
  if (layer !== undefined && !(LITMUS_LAYERS as readonly string[]).includes(layer)) throw new PmrpcError(LitmusErrorCodes.NOTHING_SELECTED, `layer ${layer} selects no litmus: the layers are ${LITMUS_LAYERS.join(', ')}`);
  const chosen = litmusCatalogue().filter((l) => (layer === undefined || l.layer === layer) && (filter === undefined || l.name.includes(filter)));
  if (chosen.length === 0) throw new PmrpcError(LitmusErrorCodes.NOTHING_SELECTED, `no litmus${layer !== undefined ? ` of layer ${layer}` : ''} has a name containing '${filter}'`);
  return chosen;
}
