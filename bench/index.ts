import { flushBench } from './flush.js';
import { kvBench } from './kv.js';
import { nicBench } from './nic.js';
import { pmemBench } from './pmem.js';
import { rsBench } from './rs.js';
import { tcpBench } from './tcp.js';
import { hostileBench } from './hostile.js';
import { sqliteBench } from './sqlite-strict.js';
import type { BenchSuite } from './types.js';

export type { BenchSuite, BenchReport, BenchOptions } from './types.js';
export { renderSvg, barChart, opsBySizeChart, type ChartSpec } from './charts.js';
export { recordRun, readHistory, gitCommit, type RunMeta, type HistoryRun } from './history.js';

/** Every benchmark suite, by name. */
export const benchSuites: BenchSuite[] = [pmemBench, nicBench, kvBench, flushBench, tcpBench, hostileBench, rsBench, sqliteBench];
