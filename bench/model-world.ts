/**
 * Modelled runs (issue 14): the real pmrpc code — the durable RPC app, the KV clients and servers —
 * on the explorer's World with a cost model (src/testing: virtual time). Every figure these return
 * is MODELLED time (virtual µs from the cost model of docs/references.md §7), never wall clock.
 */
import { PmemRegion, createPrng, seededEntropy } from '../pmem/index.js';
import { World, costProfile, type CostModel, type NicConfig } from '../src/testing/index.js';

/** The NIC configuration of modelled runs: eager DMA (every write placed right after its request: its cost is charged there), no faults. */
export function modelNicConfig(ddio: boolean): NicConfig {
  return { drain: 'eager', ddio, placement: 'ascending', cacheEntriesMax: 65536, eviction: 0, idleDrain: false, lineModel: 'prefix' };
}

/** A World in modelled time. */
export function modelWorld(model: Readonly<CostModel> | string, seed: number, ddio: boolean): World {
  const m = typeof model === 'string' ? costProfile(model) : model;
  return new World(modelNicConfig(ddio), seed, { model: m });
}

/** An in-memory region for a modelled node (seeded identities: the run replays). */
export function modelRegion(bytes: number, seed: number): PmemRegion {
  return PmemRegion.createInMemory(bytes, { entropy: seededEntropy(createPrng(seed)) });
}

/** Percentile of sorted values (nearest rank). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export const mean = (xs: readonly number[]): number => (xs.length === 0 ? Number.NaN : xs.reduce((a, b) => a + b, 0) / xs.length);

/** Rounds modelled µs to 3 decimals (ns resolution). */
export const r3 = (x: number): number => Math.round(x * 1000) / 1000;

/** Mean, p50 and p99 of modelled µs samples (rounded to ns). */
export function latencyStats(samples: readonly number[]): { meanUs: number; p50Us: number; p99Us: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  return { meanUs: r3(mean(sorted)), p50Us: r3(percentile(sorted, 50)), p99Us: r3(percentile(sorted, 99)) };
}

/** Operations per modelled second over a window of modelled µs. */
export const perSecond = (count: number, windowUs: number): number => Math.round(windowUs > 0 ? (count / windowUs) * 1e6 : 0);
