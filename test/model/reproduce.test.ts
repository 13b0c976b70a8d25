// `pmrpc reproduce` (issue 14): the JSON shape, and that its modelled values replay from the seed.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatReproMarkdown, reproduce } from '../../bench/index.js';

const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/model/reproduce.test.ts)`);

t.test('reproduce --json: {rows: [{name, published, modelled, measured, deviation, maps, explanation}]}', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pmrpc-repro-'));
  try {
    // A measured value comes from a bench JSON in --out, named with its file.
    writeFileSync(join(dir, 'rs.json'), JSON.stringify({ startedAt: '2026-01-01T00:00:00.000Z', rows: [], ratios: { throughputVsLockBased: 1.23 } }));
    writeFileSync(join(dir, 'tx.json'), JSON.stringify({ startedAt: '2026-01-01T00:00:00.000Z', rows: [], ratios: { 'throughputVsFarm_ycsb-low/4c/2s': 0.77, 'latencyVsFarm_ycsb-low/4c/2s': 1.3 } }));
    const r = spawnSync(process.execPath, [CLI, 'reproduce', '--json', '--requests', '10', '--seed', String(SEED), '--out', dir], { encoding: 'utf8', timeout: 120_000 });
    t.equal(r.status, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as { rows: Array<Record<string, unknown>>; profile: string };
    // The same seed in this process: the same modelled values, bit for bit (another process, another run).
    // (Some row groups only, to keep the test short: each group's cells are independent runs.)
    const again = await reproduce({ profile: 'cx4-optane', seed: SEED, measuredDir: undefined, requests: 10, groups: ['sc21', 'rs', 'tx', 'calibration'] });
    t.ok(again.rows.length >= 5);
    // --markdown (docs/benchmarks.md is regenerated from it): a header, one line per row, then the count.
    const md = formatReproMarkdown(again);
    t.equal(md[0], '| row | published | modelled | measured | deviation | maps to | explanation |');
    t.equal(md.filter((l) => l.startsWith('| ') && !l.startsWith('| row |')).length, again.rows.length);
    t.match(md[md.length - 1]!, /rows within ±15% .* Modelled = virtual time/);
    for (const row of again.rows) t.equal(row.modelled, doc.rows.find((x) => x.name === row.name)?.modelled, `${row.name}: modelled value replays from the seed`);
    t.equal(doc.profile, 'cx4-optane');
    t.ok(doc.rows.length >= 17, `${doc.rows.length} rows`);
    for (const row of doc.rows) {
      for (const k of ['name', 'published', 'modelled', 'measured', 'deviation', 'maps', 'explanation']) t.ok(k in row, `${String(row.name)} has ${k}`);
      t.type(row.name, 'string');
      t.type(row.published, 'number');
      t.ok(row.modelled === null || typeof row.modelled === 'number');
      t.ok(row.measured === null || typeof row.measured === 'number');
      t.ok(typeof row.maps === 'string' && (row.maps as string).length > 0, `${String(row.name)}: maps`);
      t.ok(typeof row.explanation === 'string' && (row.explanation as string).length > 0, `${String(row.name)}: explained`);
      if (row.modelled !== null) t.equal(row.deviation, Math.round((((row.modelled as number) - (row.published as number)) / (row.published as number)) * 1000) / 1000);
      else t.equal(row.deviation, null);
    }
    const names = doc.rows.map((x) => String(x.name));
    for (const s of ['WFlush', 'WRFlush', 'DaRPC', 'SFlush', 'SRFlush']) t.ok(names.some((n) => n.startsWith(`pRDMA ${s} ÷ FaRM, mean`)), `pRDMA ${s} row`);
    t.ok(names.some((n) => n.startsWith("SC'21") && n.endsWith('throughput')));
    t.ok(names.some((n) => n.startsWith('PRISM-KV GET')));
    t.ok(names.some((n) => n.startsWith('PRISM-RS')));
    // The TX rows: modelled (PRISM-TX and FaRM-style on the World), measured from the tx bench's cell.
    const tx = doc.rows.filter((x) => String(x.name).startsWith('PRISM-TX ÷ FaRM-style'));
    t.same(tx.map((x) => x.name), ['PRISM-TX ÷ FaRM-style, throughput', 'PRISM-TX ÷ FaRM-style, latency']);
    for (const row of tx) {
      t.type(row.modelled, 'number', `${String(row.name)}: modelled`);
      t.ok((row.modelled as number) > 0);
      t.type(row.deviation, 'number');
      t.match(String(row.maps), /apps\/tx .* apps\/txlock txfarm/);
      t.match(String(row.measuredFrom), /tx\.json .*: (throughput|latency)VsFarm_ycsb-low\/4c\/2s/);
    }
    t.same(tx.map((x) => x.measured), [0.77, 1.3], 'measured from the tx bench JSON found');
    const rs = doc.rows.find((x) => String(x.name).startsWith('PRISM-RS'))!;
    t.equal(rs.measured, 1.23, 'measured from the bench JSON found');
    t.match(String(rs.measuredFrom), /rs\.json/);
    const kv = doc.rows.find((x) => String(x.name).startsWith('PRISM-KV GET'))!;
    t.equal(kv.measured, null, 'no kv.json: measured is null');
    t.match(String(kv.measuredFrom), /not measured in this run/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

t.test('the KV rows: the audited GET paths, the media of PM reads, and the what-ifs of the row outside the band', async (t) => {
  const rep = await reproduce({ profile: 'cx4-optane', seed: SEED, measuredDir: undefined, requests: 20, groups: ['kv'] });
  t.same(rep.rows.map((r) => r.name), [
    'PRISM-KV GET ÷ Pilaf GET latency (PRISM on its software NIC, Pilaf on hardware RDMA)',
    'PRISM-KV GET ÷ Pilaf GET latency (both on the software NIC)',
    'PRISM-KV GET ÷ Pilaf GET latency (both on cx4-optane)',
  ]);
  for (const r of rep.rows) {
    t.ok(r.modelled !== null && r.modelled > 0.5 && r.modelled < 1, `${r.name}: PRISM-KV's one round trip beats Pilaf's two (×${r.modelled})`);
    t.match(r.explanation, /PRISM-KV: 1 round trip of 2 work requests .* Pilaf: 2 round trips .* 3 work requests, the same 2 PM reads/);
  }
  const [, both, hw] = rep.rows;
  // A hardware NIC's DMA read of PM pays the media (pmReadNs − dramReadNs): without it this row was ×0.637.
  t.ok(hw!.modelled! > 0.65, `both on cx4-optane: ×${hw!.modelled}`);
  t.match(hw!.explanation, /pmReadNs − dramReadNs = 203 ns/);
  // Outside the band, the row names the parameters and values: modelled what-ifs of softwareNicUs, the client CPU that would close it.
  if (Math.abs(both!.deviation!) > rep.tolerance) t.match(both!.explanation, /softwareNicUs = 0\.5 µs → ×0\.\d+, 1 µs → ×0\.\d+.* ≈ 0\.\d+ µs per Pilaf round trip .* reaches 0\.48/);
});

t.test('reproduce refuses a bad profile', async (t) => {
  const r = spawnSync(process.execPath, [CLI, 'reproduce', '--model', 'nope'], { encoding: 'utf8', timeout: 240_000 });
  t.equal(r.status, 1);
  t.match(r.stderr, /model must be one of cx4-optane, cx3-optane, software-nic, got nope/);
});
