// `pmrpc crash-test --app kv --mutants all --seeds 1..24 --jobs 2`: every PRISM-KV mutant by the plain sweep (test/deep/mutants-all.ts).
import { mutantsAll } from './mutants-all.js';

mutantsAll('kv');
