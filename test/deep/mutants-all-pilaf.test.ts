// `pmrpc crash-test --app kv --system pilaf --mutants all --seeds 1..24 --jobs 2`: every mutant of the Pilaf baseline by the plain sweep (test/deep/mutants-all.ts).
import { mutantsAll } from './mutants-all.js';

mutantsAll('kv', 'pilaf');
