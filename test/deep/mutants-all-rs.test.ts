// `pmrpc crash-test --app rs --mutants all --seeds 1..24 --jobs 2`: every mutant by the plain sweep (test/deep/mutants-all.ts).
import { mutantsAll } from './mutants-all.js';

mutantsAll('rs');
