/**
 * The strategies of the durable RPC layer: the flush strategies of DESIGN §2.3, each its flush
 * record extended by name, plus the coupled baselines (farm, darpc). RPC_STRATEGY_TABLE is the one
 * place the rpc layer describes a strategy; client and server look their record up once, at
 * construction, and branch on its fields, never on the name.
 */
import { FLUSH_STRATEGY_TABLE, type FlushStrategy, type FlushStrategyRecord } from '../../flush/index.js';

export type RpcStrategy = FlushStrategy | 'farm' | 'darpc';

/** A flush record with what the rpc layer adds: a coupled baseline is durable at its reply, sent after processing. */
export interface RpcStrategyRecord extends Omit<FlushStrategyRecord, 'name' | 'durableAt'> {
  readonly name: RpcStrategy;
  /** As the flush record, plus 'reply': the RESULT, sent after processing (the coupled baselines). */
  readonly durableAt: FlushStrategyRecord['durableAt'] | 'reply';
  /** Processing is coupled to durability: the only durable signal is the RESULT (durableAt 'reply'). */
  readonly coupled: boolean;
}

const decoupled = (name: FlushStrategy): RpcStrategyRecord => Object.freeze({ ...FLUSH_STRATEGY_TABLE[name], coupled: false });

/** Every rpc strategy, one record each; RPC_STRATEGIES lists them in this order. */
export const RPC_STRATEGY_TABLE: Readonly<Record<RpcStrategy, RpcStrategyRecord>> = Object.freeze({
  wflush: decoupled('wflush'),
  sflush: decoupled('sflush'),
  wrflush: decoupled('wrflush'),
  srflush: decoupled('srflush'),
  raw: decoupled('raw'),
  gpspm: decoupled('gpspm'),
  // FaRM: the request is written into the ring; the server CPU polls it, processes it, and replies.
  farm: Object.freeze({ name: 'farm', request: 'write', follow: 'none', arrives: 'memory', durableAt: 'reply', serverAcks: false, alwaysCorrect: true, coupled: true }),
  // DaRPC: the request is SENT into a receive buffer posted at its ring slot; processed, then replied.
  darpc: Object.freeze({ name: 'darpc', request: 'send', follow: 'none', arrives: 'recv', durableAt: 'reply', serverAcks: false, alwaysCorrect: true, coupled: true }),
  none: decoupled('none'),
} satisfies Record<RpcStrategy, RpcStrategyRecord>);

export const RPC_STRATEGIES: readonly RpcStrategy[] = Object.freeze(Object.keys(RPC_STRATEGY_TABLE) as RpcStrategy[]);

/** The record of an rpc strategy by name; a TypeError for anything else. */
export function rpcStrategy(name: unknown): RpcStrategyRecord {
  if (typeof name !== 'string' || !Object.hasOwn(RPC_STRATEGY_TABLE, name)) throw new TypeError(`strategy must be one of ${RPC_STRATEGIES.join(', ')}, got ${String(name)}`);
  return RPC_STRATEGY_TABLE[name as RpcStrategy];
}

export function checkStrategy(s: unknown): RpcStrategy {
  return rpcStrategy(s).name;
}

const where = (pred: (r: RpcStrategyRecord) => boolean): RpcStrategy[] => RPC_STRATEGIES.filter((n) => pred(RPC_STRATEGY_TABLE[n]));

// Views of the table, kept for the public API (they are computed, not a second list).
/** Strategies whose entries arrive by SEND into receive slots (posted at the ring slots, in sequence order). */
export const SEND_STRATEGIES: ReadonlySet<RpcStrategy> = new Set(where((r) => r.request === 'send'));
/** Strategies where the server CPU persists the entry and ACKs (durable at the ACK). */
export const ACK_STRATEGIES: ReadonlySet<RpcStrategy> = new Set(where((r) => r.serverAcks));
/** Coupled baselines: durable at the reply, sent after processing. */
export const COUPLED_STRATEGIES: ReadonlySet<RpcStrategy> = new Set(where((r) => r.coupled));
/** Durable when the request's own completions arrive (FLUSH or READ). */
export const COMPLETION_STRATEGIES: ReadonlySet<RpcStrategy> = new Set(where((r) => r.durableAt === 'completion'));
/** Strategies that are correct under the hardware model of DESIGN §2 whatever the DDIO setting. */
export const ALWAYS_CORRECT: readonly RpcStrategy[] = Object.freeze(where((r) => r.alwaysCorrect));
