import { flushBench } from './flush.js';
import { kvBench } from './kv.js';
import { nicBench } from './nic.js';
import { pmemBench } from './pmem.js';
import { rsBench } from './rs.js';
import { tcpBench } from './tcp.js';
import { hostileBench } from './hostile.js';
import { txBench } from './tx.js';
import { sqliteBench } from './sqlite-strict.js';
import { redisBench } from './redis.js';
import type { BenchSuite } from './types.js';

export type { BenchSuite, BenchReport, BenchOptions } from './types.js';
export { renderSvg, barChart, opsBySizeChart, type ChartSpec } from './charts.js';
export { recordRun, readHistory, gitCommit, type RunMeta, type HistoryRun } from './history.js';

/** Every benchmark suite, by name. */
export const benchSuites: BenchSuite[] = [pmemBench, nicBench, kvBench, flushBench, tcpBench, hostileBench, rsBench, txBench, sqliteBench, redisBench];

// Modelled time (issue 14): modelled cells of the suites on the World with a cost model, and the reproduction table.
export { reproduce, formatRepro, formatReproMarkdown, REPRO_TOLERANCE, REPRO_GROUPS, PRDMA_64K, type ReproRow, type ReproReport, type ReproOptions, type ReproGroup } from './reproduce.js';
export { modelFlushCell, type ModelFlushCell, type ModelFlushResult } from './model-flush.js';
export { modelKvCell, modelRsCell, type ModelKvCell, type ModelRsCell, type ModelOpsResult } from './model-apps.js';
export { modelChains, addMemoryNode, CALIBRATION_CHAINS } from './model-verbs.js';
export { withModel, addModelledFlush, addModelledKv, addModelledRs, addModelledTx, MODELLED_SUITES } from './model-bench.js';
export { modelTxCell, type ModelTxCell, type ModelTxResult } from './model-tx.js';
