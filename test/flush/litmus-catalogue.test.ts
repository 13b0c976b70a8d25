// The nic litmus are in the catalogue (they run, all of them, in test/litmus/litmus.test.ts).
import t from 'tap';
import { litmusCatalogue, runLitmus } from '../../src/litmus/index.js';

t.test('at least 12 nic litmus, unique names, including the raw/DDIO pair', async (t) => {
  const nic = litmusCatalogue().filter((l) => l.layer === 'nic');
  t.ok(nic.length >= 12, `${nic.length} nic litmus`);
  t.equal(new Set(nic.map((l) => l.name)).size, nic.length);
  const raw = nic.filter((l) => l.name.includes('raw') && l.name.includes('ddio'));
  t.equal(raw.length, 2);
  for (const l of nic) t.ok(l.rule.length > 0 && (l.mustBePossible.length > 0 || l.mustBeImpossible.length > 0), l.name);
});

t.test('the nic litmus hold on several seeds', async (t) => {
  for (const seed of [1, 2, 3, 1234567]) {
    for (const l of litmusCatalogue().filter((x) => x.layer === 'nic')) {
      const r = await runLitmus(l, seed);
      t.ok(r.ok && r.examined > 0, `${l.name} seed ${seed}: ${r.produced}${r.error ? ` (${r.error})` : ''}`);
    }
  }
});
