import type { BenchSuite } from './types.js';
export const pmemBench: BenchSuite = { name: 'pmem', description: 'persist throughput vs memcpy; crash images per second', async run() { throw new Error('bench pmem: not built yet'); } };
