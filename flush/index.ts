/** flush/ — layer 2: the emulated RNIC. Other layers import only this file. */
export {
  Access,
  CAS_MODES,
  WR_OPS,
  type AllocateWr,
  type AtomicWriteWr,
  type CasMode,
  type CasWr,
  type ChainFlags,
  type ClientMessage,
  type Completion,
  type CompletionStatus,
  type FaaWr,
  type FlushPlacement,
  type FlushSelectivity,
  type FlushWr,
  type Link,
  type Loc,
  type NotifyMessage,
  type OutstandingRequest,
  type PrismCasWr,
  type ReadWr,
  type RecvCompletion,
  type RemoteLoc,
  type RequestMessage,
  type ResponseMessage,
  type ScratchLoc,
  type SendWr,
  type ServerMessage,
  type WorkRequest,
  type WriteWr,
  type WrOp,
} from './types.js';
export { NicErrorCodes, ProtectionDomain, type MemoryRegion } from './mr.js';
export { ByteSlab, Rnic, ServerQp, RNIC_DEFAULTS, type HeldResponses, type RnicOptions, type RnicStats, type DrainPolicy, type PlacementOrder, type HostWriteEvent } from './nic.js';
export { InProcessFabric, InProcessLink, FABRIC_DEFAULTS, type FabricOptions, type DeliveryMode } from './link.js';
export { checkDriverFaults, NicDriver, type NicDriverFaults } from './driver.js';
export { QueuePair, QUEUE_PAIR_DEFAULTS, Wr, ok, type ChainListener, type QueuePairOptions } from './client.js';
export {
  CpuPoller,
  CPU_POLLER_DEFAULTS,
  StrategyServer,
  FlushClient,
  FLUSH_STRATEGIES,
  FLUSH_STRATEGY_TABLE,
  flushStrategy,
  ACK_IMM,
  NACK_IMM,
  GPSPM_IMM,
  type CpuPollerOptions,
  type StrategyServerOptions,
  type FlushClientOptions,
  type FlushStrategy,
  type FlushStrategyRecord,
  type FlushDurableAt,
  type RequestVerb,
  type FollowVerb,
  type Arrival,
  type PersistResult,
} from './strategies.js';
export { casSucceeds, casResult, leToBigint, bigintToLe, u64le, readPtr } from './prism.js';
export { wrError, MAX_WR_BYTES, MAX_WRS_PER_MESSAGE, MAX_CAS_BYTES } from './validate.js';
