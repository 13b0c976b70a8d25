/**
 * What `bench kv` and its TCP server child (bench/kv-server.ts) share: the KV area's layout, the
 * region size, and where the compiled child is.
 */
import { benchDistFile } from './child.js';
import type { KvLayoutOptions } from '../src/apps/kv/index.js';

export type KvSystem = 'prism' | 'pilaf';

/** probeSlots: the default (24 groups of 4 slots, docs/kv.md "Collisions"). */
export const KV_BENCH_LAYOUT: Partial<KvLayoutOptions> = {
  slotCount: 4096,
  keyBytesMax: 16,
  classes: [
    { sizeBytes: 64, count: 2048 },
    { sizeBytes: 128, count: 1024 },
  ],
  mailboxBuffers: 16,
};

export const KV_BENCH_REGION_BYTES = 1 << 20;

/** dist/bench/kv-server.js. */
export function kvServerFile(): string {
  return benchDistFile('kv-server.js');
}
