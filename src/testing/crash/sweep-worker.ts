/** The piscina worker of a sweep (one seed of a spec) and of a swarm (one seed, every app of it). */
import { exploreSeed, type SweepSpec } from './sweep.js';
import { swarmSeed, type SwarmOptions } from './swarm.js';

export default function run(task: { spec: SweepSpec; seed: number } | { swarm: SwarmOptions; seed: number }): Promise<unknown> {
  if ('swarm' in task) return swarmSeed(task.seed, task.swarm);
  return exploreSeed(task.spec, task.seed);
}
