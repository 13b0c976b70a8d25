// `pmrpc bench <suite> --model P`: the modelled half added beside a suite's measured report, every
// modelled figure labelled as modelled (issue 14). On a small synthetic flush report (fast).
import t from 'tap';
import { addModelledFlush, addModelledTx, withModel, type BenchReport } from '../../bench/index.js';

const SEED = Number(process.env.PMRPC_SEED ?? 1);
t.comment(`seed ${SEED} (replay: PMRPC_SEED=${SEED} npx tap test/model/bench-model.test.ts)`);

const cellRow = (strategy: string): Record<string, unknown> => ({
  group: 'payload', link: 'in-process', strategy, payloadBytes: 64, clients: 1, outstanding: 1, handlerUs: 0, placement: 'inline', ringSlots: 16, ddio: false,
  throughputPerSecond: 1000, durableP50Us: 10, durableP99Us: 20,
});
const report = (): BenchReport => ({ suite: 'flush', config: {}, rows: [cellRow('wflush'), cellRow('farm')], ratios: { decoupledVsCoupledThroughput_64B: 0.9 }, summary: ['measured line'], charts: [] });

t.test('flush: modelled columns, ratios, a labelled summary block and measured-vs-modelled charts', async (t) => {
  const o = { quick: true, seed: SEED, progress: () => undefined, model: 'cx4-optane' };
  const rep = await addModelledFlush(report(), o);
  for (const r of rep.rows) {
    t.equal(r.modelProfile, 'cx4-optane');
    t.type(r.modelledThroughputPerSecond, 'number');
    t.ok(Number(r.modelledDurableP50Us) > 1, `${String(r.strategy)}: modelled p50 ${String(r.modelledDurableP50Us)} µs`);
    t.equal(r.throughputPerSecond, 1000, 'the measured column is untouched');
  }
  t.type(rep.ratios.modelled_decoupledVsCoupledThroughput_64B, 'number');
  t.equal(rep.ratios.decoupledVsCoupledThroughput_64B, 0.9, 'the measured ratio is untouched');
  t.match(rep.summary.join('\n'), /MODELLED time \(profile cx4-optane, virtual µs from the cost model — not measured/);
  const charts = rep.charts ?? [];
  t.same(charts.map((c) => c.name), ['measured-vs-modelled-throughput', 'measured-vs-modelled-latency']);
  const series = new Set((charts[0]!.spec as { data: { values: Array<{ time: string }> } }).data.values.map((v) => v.time));
  t.same([...series], ['measured (wall clock)', 'modelled (cost model)'], 'every series says which time it is');
  // Modelled figures replay from the seed.
  const again = await addModelledFlush(report(), o);
  t.same(again.rows, rep.rows);
});

t.test('withModel: no model, no change; a suite without a modelled half says so', async (t) => {
  const plain = report();
  t.equal(await withModel('flush', plain, { quick: true, seed: SEED, progress: () => undefined }), plain);
  const other = await withModel('hostile', { suite: 'hostile', config: {}, rows: [], ratios: {}, summary: [] }, { quick: true, seed: SEED, progress: () => undefined, model: 'cx4-optane' });
  t.match(other.summary.join('\n'), /the hostile suite has no modelled counterpart yet \(modelled suites: flush, kv, rs, tx\)/);
});

t.test('tx: modelled commits/s and p50 beside the measured cells, modelled ratios vs FaRM-style and FORD-style', async (t) => {
  const row = (system: string): Record<string, unknown> => ({ system, cell: 'ycsb-low/2c/2s', workload: 'ycsb-low', shards: 2, clients: 2, commitsPerSecond: 500, p50Ns: 40_000, p99Ns: 90_000 });
  const rep: BenchReport = { suite: 'tx', config: { ycsbKeys: 256, smallbankAccounts: 100 }, rows: [row('prism-tx'), row('farm'), row('ford')], ratios: { throughputVsFarm: 0.9 }, summary: ['measured line'], charts: [] };
  const o = { quick: true, seed: SEED, progress: () => undefined, model: 'cx4-optane' };
  const out = await withModel('tx', rep, o);
  for (const r of out.rows) {
    t.equal(r.modelProfile, 'cx4-optane');
    t.ok(Number(r.modelledCommitsPerSecond) > 0, `${String(r.system)}: modelled ${String(r.modelledCommitsPerSecond)} tx/s`);
    t.ok(Number(r.modelledP50Us) > 1, `${String(r.system)}: modelled p50 ${String(r.modelledP50Us)} µs`);
    t.equal(r.commitsPerSecond, 500, 'the measured column is untouched');
  }
  for (const k of ['modelled_throughputVsFarm', 'modelled_latencyVsFarm', 'modelled_throughputVsFord', 'modelled_latencyVsFord', 'modelled_throughputVsFarm_ycsb-low/2c/2s']) t.type(out.ratios[k], 'number', k);
  t.equal(out.ratios.throughputVsFarm, 0.9, 'the measured ratio is untouched');
  t.match(out.summary.join('\n'), /MODELLED time \(profile cx4-optane; virtual µs — not measured\) beside MEASURED/);
  t.same((out.charts ?? []).map((c) => c.name), ['measured-vs-modelled-throughput', 'measured-vs-modelled-latency']);
  const again = await addModelledTx({ ...rep, rows: [row('prism-tx'), row('farm'), row('ford')], ratios: {}, summary: [], charts: [] }, o);
  t.same(again.rows, out.rows, 'modelled figures replay from the seed');
});
