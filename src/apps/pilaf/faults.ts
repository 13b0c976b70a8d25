/**
 * Test-only fault switches of the Pilaf-style baseline (DESIGN §8 "the suite must have teeth"):
 * each removes one step of the server CPU's PUT or of its recovery. They run as the kv app's system
 * 'pilaf': `pmrpc crash-test --app kv --list-mutants` prints them with `pilaf` in the second
 * column, `--system pilaf --mutant NAME` runs one, and `--system pilaf --mutants all` is their plain
 * sweep, which catches each (test/deep/mutants-all-pilaf.test.ts).
 */

export interface PilafFaults {
  /** PUT: the new entry is stored and persisted before the item it points at is persisted (the item follows, before the reply). */
  publishBeforeItemPersist: boolean;
  /** PUT / DELETE: the reply goes out without persisting the entry (acknowledged before durable). */
  skipEntryPersist: boolean;
  /** Recovery: an entry whose checksum fails (a crash tore its update) is cleared, instead of being rebuilt from its ptr word and the item it names. */
  clearTornEntry: boolean;
}

export const NO_PILAF_FAULTS: Readonly<PilafFaults> = Object.freeze({ publishBeforeItemPersist: false, skipEntryPersist: false, clearTornEntry: false });

export type PilafFaultName = keyof PilafFaults;

/** The option check of a server's `faults`: an object of known switches (TypeError naming an unknown one). */
export function checkPilafFaults(name: string, v: unknown): void {
  if (v === null || typeof v !== 'object') throw new TypeError(`${name} must be an object of Pilaf fault switches, got ${String(v)}`);
  for (const k of Object.keys(v)) if (!Object.hasOwn(NO_PILAF_FAULTS, k)) throw new TypeError(`${name}: unknown Pilaf fault switch ${k}`);
}

export interface PilafMutant {
  /** Mutant name, kebab-case (`--mutant`, `--list-mutants`, replay commands). */
  name: string;
  /** The fault switch it sets. */
  fault: PilafFaultName;
  layer: 'put' | 'recovery';
  /** The step it removes. */
  step: string;
}

export const PILAF_MUTANTS: readonly PilafMutant[] = Object.freeze([
  { name: 'publish-before-item-persist', fault: 'publishBeforeItemPersist', layer: 'put', step: 'persisting the item before the entry that points at it is stored' },
  { name: 'skip-entry-persist', fault: 'skipEntryPersist', layer: 'put', step: 'persisting the entry before the reply (durable when acknowledged)' },
  { name: 'clear-torn-entry', fault: 'clearTornEntry', layer: 'recovery', step: "rebuilding a torn entry from its ptr word (persisted first) and the item it names, instead of clearing it" },
] satisfies PilafMutant[]);

/** The mutant called `name`, or undefined. */
export function findPilafMutant(name: string): PilafMutant | undefined {
  return PILAF_MUTANTS.find((m) => m.name === name);
}

/** The fault switches of mutant `mutant` (undefined: none on); TypeError naming the choices for an unknown one. */
export function pilafFaultsFor(mutant: string | undefined): PilafFaults {
  if (mutant === undefined) return { ...NO_PILAF_FAULTS };
  const m = findPilafMutant(mutant);
  if (m === undefined) throw new TypeError(`mutant must be one of ${PILAF_MUTANTS.map((x) => x.name).join(', ')}, got ${String(mutant)}`);
  return { ...NO_PILAF_FAULTS, [m.fault]: true };
}
