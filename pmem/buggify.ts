/**
 * BUGGIFY-style fault sites (FoundationDB's BUGGIFY, TigerBeetle's VOPR): named places in library
 * code where the emulated hardware may take a legal but rare path — the DMA engine drains early, a
 * dirty CPU line is written back unasked. Library code consults a site with `buggify(name)`; it is
 * false unless a test installed a hook (the swarm simulation does, per seed, through its seeded
 * PRNG, so a run stays replayable). Off by default, and never consulted in a way that changes what
 * the hardware model allows: a site only makes a legal behaviour more likely.
 *
 * The hook is module state because the sites sit deep in layers that take no test options; it is
 * installed around one deterministic run at a time (a worker thread has its own module instance).
 */

/** The registry: every site library code may consult, with what firing it does. */
export const FAULT_SITES = Object.freeze({
  'nic.drain-early': 'flush/: after a work request executes, the DMA engine drains every NIC cache entry into host memory now',
  'pmem.evict-store': 'pmem/: a store is followed at once by an unasked write-back of the line it dirtied (an eviction)',
} as const);

export type FaultSite = keyof typeof FAULT_SITES;

export const FAULT_SITE_NAMES: readonly FaultSite[] = Object.freeze(Object.keys(FAULT_SITES) as FaultSite[]);

/** Decides whether site `site` fires now (the swarm: enabled sites fire with a seeded probability). */
export type BuggifyHook = (site: FaultSite) => boolean;

let hook: BuggifyHook | undefined;

/** Installs (or with undefined, removes) the hook; returns the previous one. Test only. */
export function setBuggifyHook(h: BuggifyHook | undefined): BuggifyHook | undefined {
  const prev = hook;
  hook = h;
  return prev;
}

/** Whether fault site `site` fires now: always false unless a test installed a hook. */
export function buggify(site: FaultSite): boolean {
  return hook !== undefined && hook(site);
}
