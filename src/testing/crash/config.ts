/**
 * NIC configurations the hardware model allows (DESIGN §2.2): every drain policy and bound, cache
 * pressure, placement order, DDIO and CPU-cache eviction. A protocol must be correct under all of
 * them, so the explorer draws one per seed (a run over many seeds cycles through them) unless the
 * caller pins a dimension.
 */
import type { DrainPolicy, PlacementOrder } from '../../../flush/index.js';
import { createPrng } from '../../../pmem/index.js';
import { mix } from './seeds.js';

export type DrainChoice = 'eager' | 'lazy-small' | 'lazy-large' | 'onFlush';
export const DRAIN_CHOICES: readonly DrainChoice[] = ['eager', 'lazy-small', 'lazy-large', 'onFlush'];

export interface NicConfig {
  drain: DrainChoice;
  ddio: boolean;
  placement: PlacementOrder;
  /** Cache pressure: the NIC cache's capacity in entries (small: the oldest drain early). */
  cacheEntriesMax: number;
  /** Probability per store of an unasked write-back of a dirty CPU line. */
  eviction: number;
  /** The DMA engine drains everything whenever the fabric is idle (else only when nothing else can run). */
  idleDrain: boolean;
  /**
   * What a crash leaves of a dirty CPU line (the region's lineModel, DESIGN §2.1): an in-order
   * prefix of its pending words, or any subset (a real kill interrupting a write-back mid-line).
   */
  lineModel: 'prefix' | 'subset';
}

/** Dimensions a caller may pin (the CLI's --drain, --ddio, --placement). */
export type NicPins = Partial<Pick<NicConfig, 'drain' | 'ddio' | 'placement' | 'eviction' | 'lineModel'>>;

export const CACHE_PRESSURE_SMALL = 4;
export const CACHE_ENTRIES_LARGE = 65536;

/** The NIC configuration of seed `seed`: each dimension drawn from the seed unless pinned (seed ≡ 2 mod 8: DDIO on, eager drain). */
export function nicConfigFor(seed: number, pins: NicPins = {}): NicConfig {
  const p = createPrng(mix(seed, 0x71c));
  const pick = <T>(xs: readonly T[]): T => xs[p.int(0, xs.length - 1)]!;
  const drain = pick(DRAIN_CHOICES);
  const ddio = pick([true, false]);
  const placement = pick<PlacementOrder>(['any', 'ascending']);
  const cacheEntriesMax = pick([CACHE_PRESSURE_SMALL, CACHE_ENTRIES_LARGE]);
  const eviction = pick([0, 0, 0.05]);
  const idleDrain = pick([false, false, true]);
  // Drawn last, so the dimensions above stay what they were for every seed.
  const lineModel = pick<'prefix' | 'subset'>(['prefix', 'prefix', 'subset']);
  // Early in every sweep: seed 2 (and every 8th after it) runs DDIO on with an eager drain — the
  // configuration under which a missing FLUSH(persistent) shows (a NIC write lands in the CPU cache).
  const durabilityBugs = ((seed % 8) + 8) % 8 === 2;
  return {
    drain: pins.drain ?? (durabilityBugs ? 'eager' : drain),
    ddio: pins.ddio ?? (durabilityBugs ? true : ddio),
    placement: pins.placement ?? placement,
    cacheEntriesMax,
    eviction: pins.eviction ?? eviction,
    idleDrain,
    lineModel: pins.lineModel ?? lineModel,
  };
}

export function checkPins(pins: NicPins): NicPins {
  if (pins.drain !== undefined && !DRAIN_CHOICES.includes(pins.drain)) throw new TypeError(`drain must be one of ${DRAIN_CHOICES.join(', ')}, got ${String(pins.drain)}`);
  if (pins.ddio !== undefined && typeof pins.ddio !== 'boolean') throw new TypeError(`ddio must be a boolean, got ${String(pins.ddio)}`);
  if (pins.placement !== undefined && pins.placement !== 'any' && pins.placement !== 'ascending') throw new TypeError(`placement must be 'any' or 'ascending', got ${String(pins.placement)}`);
  if (pins.eviction !== undefined && !(typeof pins.eviction === 'number' && pins.eviction >= 0 && pins.eviction <= 1)) throw new RangeError(`eviction must be a probability in [0, 1], got ${String(pins.eviction)}`);
  if (pins.lineModel !== undefined && pins.lineModel !== 'prefix' && pins.lineModel !== 'subset') throw new TypeError(`lineModel must be 'prefix' or 'subset', got ${String(pins.lineModel)}`);
  return pins;
}

/** The Rnic options of a configuration. */
export function rnicOptions(c: NicConfig): { drain: DrainPolicy; lazyBound: number; cacheEntriesMax: number; placement: PlacementOrder; ddio: boolean } {
  const drain: DrainPolicy = c.drain === 'lazy-small' || c.drain === 'lazy-large' ? 'lazy' : c.drain;
  return { drain, lazyBound: c.drain === 'lazy-small' ? 2 : 64, cacheEntriesMax: c.cacheEntriesMax, placement: c.placement, ddio: c.ddio };
}

/** A short stable name, e.g. "lazy-small/ddio/any/pressure/evict/idle-drain/line-subset". */
export function configName(c: NicConfig): string {
  return [c.drain, c.ddio ? 'ddio' : 'no-ddio', c.placement, c.cacheEntriesMax === CACHE_PRESSURE_SMALL ? 'pressure' : 'roomy', c.eviction > 0 ? 'evict' : 'no-evict', c.idleDrain ? 'idle-drain' : 'no-idle-drain', c.lineModel === 'subset' ? 'line-subset' : 'line-prefix'].join('/');
}
