/** The piscina worker of a sweep (one seed of a spec), of a swarm (one seed, every app of it) and of a mutant sweep (one mutant's seeds). */
import { exploreSeed } from './sweep.js';
import type { SweepSpec } from './apps.js';
import { swarmSeed, type SwarmOptions } from './swarm.js';
import { mutantSweep } from './mutants.js';
import type { MutantTarget } from './apps.js';

export default function run(task: { spec: SweepSpec; seed: number } | { swarm: SwarmOptions; seed: number } | { mutantSweep: MutantTarget; seeds: number[] }): Promise<unknown> {
  if ('mutantSweep' in task) return mutantSweep(task.mutantSweep, task.seeds);
  if ('swarm' in task) return swarmSeed(task.seed, task.swarm);
  return exploreSeed(task.spec, task.seed);
}
