// The Pilaf baseline's mutants (src/apps/pilaf/faults.ts) are data, run as the kv app's system
// 'pilaf', and each is caught by the explorer at seed 1 of the plain sweep — the shape
// `pmrpc crash-test --app kv --system pilaf --mutants all` runs (test/deep/mutants-all-pilaf.test.ts
// runs seeds 1..24), and the crash that caught each is no violation without it. A mutant of one
// system is refused, with a clear message, on the other.
import t from 'tap';
import { KV_MUTANTS, KV_SYSTEM_MUTANTS, PILAF_MUTANTS, PilafServer, findPilafMutant } from '../../../src/apps/kv/index.js';
import { pilafFaultsFor } from '../../../src/apps/pilaf/index.js';
import { exploreSeed, mutantTargets, plainSpec, resolveKvWorkload } from '../../../src/testing/crash/index.js';
import { PmemRegion, createPrng, seededEntropy } from '../../../pmem/index.js';
import { Rnic } from '../../../flush/index.js';

const seed = process.env.PMRPC_SEED !== undefined ? Number(process.env.PMRPC_SEED) : 1;
t.comment(`seed ${seed} (replay: PMRPC_SEED=${seed} npx tap test/apps/kv/pilaf-mutants.test.ts)`);

t.test('Pilaf mutants are data: kebab-case names, one fault switch each, the step it removes', async (t) => {
  t.same(PILAF_MUTANTS.map((m) => m.name), ['publish-before-item-persist', 'skip-entry-persist', 'clear-torn-entry']);
  for (const m of PILAF_MUTANTS) {
    t.equal(m.name, m.fault.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`), `${m.name}: named after its switch`);
    t.same(pilafFaultsFor(m.name)[m.fault], true);
    t.equal(findPilafMutant(m.name), m);
  }
  t.same(Object.values(pilafFaultsFor(undefined)), [false, false, false], 'no mutant: every switch off');
  t.throws(() => pilafFaultsFor('drop-heap-flush'), /mutant must be one of publish-before-item-persist, skip-entry-persist, clear-torn-entry, got drop-heap-flush/);
  // No name is both systems'.
  t.same(PILAF_MUTANTS.filter((m) => KV_MUTANTS.some((k) => k.name === m.name || k.aliases.includes(m.name))), []);
  t.same(KV_SYSTEM_MUTANTS.pilaf.names, PILAF_MUTANTS.map((m) => m.name));
  t.same(KV_SYSTEM_MUTANTS.prism.names, KV_MUTANTS.map((m) => m.name));
});

t.test('a server refuses an unknown fault switch', async (t) => {
  const region = PmemRegion.createInMemory(32 * 1024, { entropy: seededEntropy(createPrng(seed)) });
  PilafServer.format(region, { slotCount: 8, probeSlots: 4, keyBytesMax: 16, classes: [{ sizeBytes: 64, count: 8 }], mailboxBuffers: 4 });
  const nic = new Rnic(region, {});
  t.throws(() => PilafServer.open(region, nic, { faults: { skipHeapFlush: true } as never }), { name: 'TypeError', message: /faults: unknown Pilaf fault switch skipHeapFlush/ });
});

t.test('a mutant belongs to one system: the workload and the sweep refuse it on the other', async (t) => {
  t.throws(() => resolveKvWorkload({ mutant: 'skip-entry-persist' }), /mutant must be one of drop-heap-flush, .* \(the mutants of system prism\), got skip-entry-persist \(a mutant of --system pilaf\)/);
  t.throws(() => resolveKvWorkload({ system: 'pilaf', mutant: 'drop-heap-flush' }), /\(the mutants of system pilaf\), got drop-heap-flush \(a mutant of --system prism\)/);
  t.same(mutantTargets('kv', 'all').map((x) => x.name), KV_MUTANTS.map((m) => m.name), "the default system's: PRISM-KV's");
  t.same(mutantTargets('kv', 'all', 'pilaf'), PILAF_MUTANTS.map((m) => ({ app: 'kv', name: m.name, strategy: null, system: 'pilaf' })), '--system pilaf: the baseline\'s');
  t.throws(() => mutantTargets('kv', 'skip-entry-persist'), /mutant 'skip-entry-persist' of --app kv is a mutant of --system pilaf, not prism/);
  t.throws(() => mutantTargets('kv', 'all', 'nope'), /system must be one of prism, pilaf, got nope/);
});

t.test('the plain sweep at seed 1 catches each Pilaf mutant; the same crash without it is no violation', async (t) => {
  for (const m of PILAF_MUTANTS) {
    const spec = plainSpec({ app: 'kv', name: m.name, strategy: null, system: 'pilaf' }, seed);
    const r = await exploreSeed(spec, seed);
    const v = r.violations[0];
    t.ok(v !== undefined, `${m.name}: caught (${v === undefined ? 'none' : `${v.kind}: ${v.detail.slice(0, 160)}`})`);
    if (v === undefined) continue;
    t.match(v.replay, new RegExp(`--app kv --system pilaf .*--mutant ${m.name}`), `${m.name}: the replay names the system and the mutant`);
    // The crash that caught it (a crash point's images, or a crash run's plan), without the mutant: no violation.
    const point = /--point (\d+)/.exec(v.replay)?.[1];
    const plan = /--crash-plan '([^']+)'/.exec(v.replay)?.[1];
    t.ok(point !== undefined || plan !== undefined, `${m.name}: the replay names its crash`);
    const at = plan !== undefined ? { crashPlan: plan } : { point: Number(point), crashRuns: 0 };
    const clean = await exploreSeed({ ...spec, workload: { ...spec.workload, mutant: undefined }, explore: { ...spec.explore, ...at } }, seed);
    t.same(clean.violations.map((x) => `${x.kind}: ${x.detail.slice(0, 200)}`), [], `${m.name}: without it, the same crash (${plan ?? `point ${point}`}) is no violation`);
    if (plan === undefined) t.ok(clean.imagesChecked > 0, `${m.name}: ${clean.imagesChecked} images of point ${point} checked without it`);
  }
});
