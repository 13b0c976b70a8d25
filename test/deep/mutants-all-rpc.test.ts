// `pmrpc crash-test --app rpc --mutants all --seeds 1..24 --jobs 2`: every mutant, under every strategy it lists, by the plain sweep (test/deep/mutants-all.ts).
import { mutantsAll } from './mutants-all.js';

mutantsAll('rpc');
