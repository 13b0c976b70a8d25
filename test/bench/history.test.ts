// The bench outputs: SQLite history round trip and headless SVG rendering.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readHistory, recordRun } from '../../bench/history.js';
import { renderSvg } from '../../bench/charts.js';
import type { BenchReport } from '../../bench/types.js';

const dir = mkdtempSync(join(tmpdir(), 'pmrpc-bench-test-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

const report = (ratio: number): BenchReport => ({
  suite: 'unit',
  config: { machine: { cpus: 2 } },
  rows: [{ cell: 'a', opsPerSecond: 10 }, { cell: 'b', opsPerSecond: 20 }],
  ratios: { aVsB: ratio, notFinite: Number.NaN },
  summary: [],
});

t.test('history keeps one row per run × cell and the ratios, newest first', async (t) => {
  const db = join(dir, 'h.sqlite');
  const id1 = recordRun(db, report(0.5), { startedAt: '2026-01-01T00:00:00Z', seed: 1, quick: true, command: 'x' });
  const id2 = recordRun(db, report(0.25), { startedAt: '2026-01-02T00:00:00Z', seed: 2, quick: false, command: 'y' });
  t.ok(id2 > id1);
  const runs = readHistory(db);
  t.same(runs.map((r) => r.id), [id2, id1]);
  t.equal(runs[0]!.cells, 2);
  t.same(runs[0]!.ratios, { aVsB: 0.25 }, 'non-finite ratios are not recorded');
  t.equal(runs[1]!.seed, 1);
  t.equal(runs[1]!.quick, true);
  t.same(readHistory(db, { suite: 'other' }), []);
  t.equal(readHistory(db, { limit: 1 }).length, 1);
});

t.test('a missing history file is an error, not an empty history', async (t) => {
  t.throws(() => readHistory(join(dir, 'missing.sqlite')));
});

t.test('vega-lite specs render to SVG without a browser', async (t) => {
  const svg = await renderSvg({
    data: { values: [{ x: 64, y: 1, s: 'wflush' }, { x: 4096, y: 2, s: 'wflush' }] },
    mark: 'line',
    encoding: { x: { field: 'x', type: 'quantitative' }, y: { field: 'y', type: 'quantitative' }, color: { field: 's', type: 'nominal' } },
  });
  t.match(svg, /^<svg/);
  t.match(svg, /wflush/, 'the legend names the series');
});
