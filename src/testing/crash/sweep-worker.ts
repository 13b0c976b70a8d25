/** The piscina worker of a sweep: explores one seed of a spec. */
import { exploreSeed, type SweepSpec } from './sweep.js';

export default function run(task: { spec: SweepSpec; seed: number }): Promise<unknown> {
  return exploreSeed(task.spec, task.seed);
}
