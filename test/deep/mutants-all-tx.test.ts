// `pmrpc crash-test --app tx --mutants all --seeds 1..24 --jobs 2`: every PRISM-TX mutant by the plain sweep (test/deep/mutants-all.ts).
import { mutantsAll } from './mutants-all.js';

mutantsAll('tx');
