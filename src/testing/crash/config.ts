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

/**
 * The NIC configuration of seed `seed`: each dimension drawn from the seed unless pinned; seeds
 * ≡ 2, 3 (mod 8) run DDIO on with an eager drain, seeds ≡ 6, 7 (mod 8) DDIO on with the drain on
 * FLUSH only (durabilityConfig).
 */
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
  const forced = durabilityConfig(seed);
  return {
    drain: pins.drain ?? forced?.drain ?? drain,
    ddio: pins.ddio ?? forced?.ddio ?? ddio,
    placement: pins.placement ?? placement,
    cacheEntriesMax,
    eviction: pins.eviction ?? eviction,
    idleDrain,
    lineModel: pins.lineModel ?? lineModel,
  };
}

/**
 * The configurations under which a durability bug shows, early in every sweep and paired with the
 * adversarial schedules of `--schedule mixed` (pct.ts mixedSchedule: seed ≡ 2 (mod 4) holds a
 * client right after its atomic, ≡ 3 one QP): DDIO on, so a NIC write lands in the CPU cache
 * (a missing FLUSH(persistent) loses it) — with an eager drain on seeds ≡ 2, 3 (mod 8), so a held
 * client's CAS result is visible to the others at once but not durable; with the drain on FLUSH
 * only on seeds ≡ 6, 7 (mod 8), so it stays in the NIC cache, answered to atomics but not placed.
 * Undefined: the seed draws its drain and DDIO.
 */
export function durabilityConfig(seed: number): { ddio: true; drain: DrainChoice } | undefined {
  const r = ((seed % 8) + 8) % 8;
  if (r === 2 || r === 3) return { ddio: true, drain: 'eager' };
  if (r === 6 || r === 7) return { ddio: true, drain: 'onFlush' };
  return undefined;
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
