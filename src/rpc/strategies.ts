/** The strategies of the durable RPC layer: the flush strategies of DESIGN §2.3 plus the coupled baselines. */
import type { FlushStrategy } from '../../flush/index.js';

export type RpcStrategy = FlushStrategy | 'farm' | 'darpc';

export const RPC_STRATEGIES: readonly RpcStrategy[] = Object.freeze(['wflush', 'sflush', 'wrflush', 'srflush', 'raw', 'gpspm', 'farm', 'darpc', 'none']);

/** Strategies whose entries arrive by SEND into receive slots (posted at the ring slots, in sequence order). */
export const SEND_STRATEGIES: ReadonlySet<RpcStrategy> = new Set<RpcStrategy>(['sflush', 'srflush', 'darpc']);
/** Strategies where the server CPU persists the entry and ACKs (durable at the ACK). */
export const ACK_STRATEGIES: ReadonlySet<RpcStrategy> = new Set<RpcStrategy>(['wrflush', 'srflush', 'gpspm']);
/** Coupled baselines: durable at the reply, sent after processing. */
export const COUPLED_STRATEGIES: ReadonlySet<RpcStrategy> = new Set<RpcStrategy>(['farm', 'darpc']);
/** Durable when the request's own completions arrive (FLUSH or READ). */
export const COMPLETION_STRATEGIES: ReadonlySet<RpcStrategy> = new Set<RpcStrategy>(['wflush', 'sflush', 'raw']);

/** Strategies that are correct under the hardware model of DESIGN §2 whatever the DDIO setting. */
export const ALWAYS_CORRECT: readonly RpcStrategy[] = Object.freeze(['wflush', 'sflush', 'wrflush', 'srflush', 'gpspm', 'farm', 'darpc']);

export function checkStrategy(s: unknown): RpcStrategy {
  if (!(RPC_STRATEGIES as readonly unknown[]).includes(s)) throw new TypeError(`strategy must be one of ${RPC_STRATEGIES.join(', ')}, got ${String(s)}`);
  return s as RpcStrategy;
}
