// The docs tables of the baselines' and the register's recovery decision tables name every row of
// the table in code, in its order (the tables of kv, tx and txlock have the same check beside their
// PM tests): a row added, removed or reordered in code without the docs fails here.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { PILAF_SLOT_TABLE } from '../../src/apps/pilaf/index.js';
import { RSLOCK_BLOCK_TABLE } from '../../src/apps/rslock/index.js';
import { REGISTER_CELL_TABLE } from '../../src/apps/register/index.js';

/** The row ids of the markdown tables in `doc`'s section whose heading starts with `heading`. */
function docIds(doc: string, heading: string): string[] {
  const all = readFileSync(new URL(`../../docs/${doc}`, import.meta.url), 'utf8');
  const from = all.indexOf(`\n${heading}`);
  if (from < 0) return [];
  const end = all.indexOf('\n## ', from + 1);
  const section = all.slice(from, end < 0 ? undefined : end);
  return [...section.matchAll(/^\| `([a-z-]+)` \|/gm)].map((m) => m[1]!);
}

for (const [doc, heading, table] of [
  ['kv.md', '## Pilaf-style baseline', PILAF_SLOT_TABLE],
  ['rs.md', "## The lock-based baseline's recovery", RSLOCK_BLOCK_TABLE],
  ['testing-timeline-register.md', '## The test-only replicated register app', REGISTER_CELL_TABLE],
] as const) {
  t.test(`docs/${doc} "${heading.slice(3)}" lists every row in the table's order`, async (t) => {
    t.same(docIds(doc, heading), table.map((r) => r.id));
  });
}
