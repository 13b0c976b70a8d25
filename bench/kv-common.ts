/**
 * What `bench kv` and its TCP server child (bench/kv-server.ts) share: the KV area's layout, the
 * region size, and where the compiled child is.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KvLayoutOptions } from '../src/apps/kv/index.js';

export type KvSystem = 'prism' | 'pilaf';

export const KV_BENCH_LAYOUT: Partial<KvLayoutOptions> = {
  slotCount: 4096,
  probeSlots: 4,
  keyBytesMax: 16,
  classes: [
    { sizeBytes: 64, count: 2048 },
    { sizeBytes: 128, count: 1024 },
  ],
  mailboxBuffers: 16,
};

export const KV_BENCH_REGION_BYTES = 1 << 20;

/** dist/bench/kv-server.js, from the .ts (tsx) or the compiled .js of this module. */
export function kvServerFile(): string {
  const here = fileURLToPath(import.meta.url);
  const dir = here.endsWith('.ts') ? join(dirname(here), '..', 'dist', 'bench') : dirname(here);
  const file = join(dir, 'kv-server.js');
  if (!existsSync(file)) throw new Error(`${file} is missing: run npm run build:ts first`);
  return file;
}
