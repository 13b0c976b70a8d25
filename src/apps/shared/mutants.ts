/**
 * Mutant names (DESIGN §8): kebab-case everywhere (`--mutant`, `--list-mutants`, replay commands).
 * A mutant named after its fault switch (camelCase: the option key, which stays) takes the
 * switch's name in kebab-case and keeps the switch's name as an alias, its name before the rename.
 */

/** A camelCase name in kebab-case (dropIndexFlush: drop-index-flush). */
export function kebabName(camel: string): string {
  return camel.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}
