// Teeth (DESIGN §8): every mutant — one persistence or validation step removed through a test-only
// fault switch — makes the crash test report violations under every strategy it lists.
import t from 'tap';
import { MUTANTS, runCrashTest } from '../../src/crash/index.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
const SEEDS = [SEED, SEED + 1, SEED + 2];
t.comment(`seeds ${SEEDS.join(', ')} (replay: PMRPC_SEED=${SEED} npx tap test/crash/mutants.test.ts)`);

t.test('mutant names and lists', async (t) => {
  t.ok(MUTANTS.length >= 6, `${MUTANTS.length} mutants`);
  for (const m of MUTANTS) {
    t.match(m.name, /^[a-z][a-z0-9-]*$/);
    t.ok(m.strategies.length > 0, `${m.name} lists strategies`);
    t.ok((m.recoveryFaults === undefined) !== (m.rpcFaults === undefined), `${m.name} sets exactly one kind of fault switch`);
  }
  t.equal(new Set(MUTANTS.map((m) => m.name)).size, MUTANTS.length, 'names are unique');
});

for (const m of MUTANTS) {
  t.test(`${m.name}: caught under ${m.strategies.join(', ')}`, async (t) => {
    for (const strategy of m.strategies) {
      let caught: { seed: number; message: string } | undefined;
      // Small first; a mutant that needs the ring to wrap (early-credit) gets a longer stream.
      for (const [seed, requests] of [...SEEDS.map((s) => [s, 16]), ...SEEDS.map((s) => [s, 40])] as Array<[number, number]>) {
        const r = await runCrashTest({ strategy, seed, mutant: m.name, requests, imagesPerPoint: 2, violationsMax: 1, resumeEvery: 2 });
        if (r.violations.length > 0) {
          caught = { seed, message: `${requests} requests: ${r.violations[0]!.message}` };
          break;
        }
      }
      t.ok(caught !== undefined, `${m.name} under ${strategy}: violations${caught ? ` (seed ${caught.seed}: ${caught.message.slice(0, 120)})` : ''}`);
    }
  });
}
