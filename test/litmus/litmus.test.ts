// The hardware-model litmus catalogue, under npm test: every litmus must hold.
import t from 'tap';
import { litmusCatalogue, runLitmus } from '../../src/litmus/index.js';

const seed = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`litmus seed ${seed} (replay: PMRPC_SEED=${seed} npm test)`);

for (const l of litmusCatalogue()) {
  t.test(`[${l.layer}] ${l.name}`, async (t) => {
    const r = await runLitmus(l, seed);
    t.ok(r.ok, `${r.rule} — produced ${r.produced}${r.error ? ` (${r.error})` : ''}`);
    t.ok(r.examined > 0, 'examined at least one image or execution');
  });
}

t.test('the catalogue has at least 12 pmem litmus with unique names', async (t) => {
  const all = litmusCatalogue();
  t.ok(all.filter((l) => l.layer === 'pmem').length >= 12);
  t.equal(new Set(all.map((l) => l.name)).size, all.length);
});
