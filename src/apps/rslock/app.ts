/**
 * The lock-based replication baseline behind the App contract (src/apps/app.ts): one replica on
 * one region — what the node host serves (`pmrpc serve --app rslock`) and what the crash explorer
 * runs on crash images. The server CPU formats (here) and recovers (server.ts); reads and
 * writes are one-sided (client.ts); the mutants are faults.ts'. A hello is empty; the welcome is JSON {app, rkey, locks, records, blocks, blockBytes, slotBytes}.
 */
import { intIn, must, PmrpcError, resolveOptions, type OptionChecks, type PmemRegion } from '../../../pmem/index.js';
import { refuseOtherApp, type App, type AppHost } from '../index.js';
import { RsLockAppServer } from './server.js';
import {
  BLOCK_BYTES_MAX,
  BLOCKS_MAX,
  RSLOCK_HEADER_BYTES,
  RsLockErrorCodes,
  computeRsLockGeometry,
  decodeRsLockHeader,
  encodeLockLine,
  encodeRecord,
  encodeRsLockHeader,
  lockOffset,
  slotOffset,
} from './layout.js';

export interface RsLockAppOptions {
  /** Blocks per replica. */
  blocks: number;
  /** Largest value of a block, bytes. */
  blockBytes: number;
  /** Offset of the area in the region (a multiple of 64). */
  base: number;
}

export const RSLOCK_APP_DEFAULTS: Readonly<RsLockAppOptions> = Object.freeze({ blocks: 256, blockBytes: 4096, base: 0 });

const RSLOCK_APP_CHECKS: OptionChecks<RsLockAppOptions> = {
  blocks: intIn(1, BLOCKS_MAX),
  blockBytes: intIn(1, BLOCK_BYTES_MAX),
  base: must((v) => Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) % 64 === 0, (v) => `must be a non-negative multiple of 64, got ${String(v)}`, RangeError),
};

function resolveRsLockOptions(options: Partial<RsLockAppOptions>): RsLockAppOptions {
  return resolveOptions(RSLOCK_APP_DEFAULTS, options, RSLOCK_APP_CHECKS);
}

export const rslockApp: { open(host: AppHost, o: RsLockAppOptions): RsLockAppServer } & App<RsLockAppOptions> = Object.freeze({
  name: 'rslock',
  defaults: RSLOCK_APP_DEFAULTS,
  resolveOptions: resolveRsLockOptions,
  minRegionBytes(o: RsLockAppOptions): number {
    return o.base + computeRsLockGeometry(o.base, o.blocks, o.blockBytes).totalBytes;
  },
  format(region: PmemRegion, o: RsLockAppOptions): void {
    refuseOtherApp(region, o.base, 'rslock');
    const g = computeRsLockGeometry(o.base, o.blocks, o.blockBytes);
    if (o.base + g.totalBytes > region.sizeBytes) throw new PmrpcError(RsLockErrorCodes.LAYOUT_TOO_LARGE, `the rslock area needs ${g.totalBytes} bytes at ${o.base}; the region has ${region.sizeBytes}`);
    try {
      decodeRsLockHeader(region.load(o.base, RSLOCK_HEADER_BYTES), o.base);
      throw new PmrpcError(RsLockErrorCodes.ALREADY_FORMATTED, `offset ${o.base} already holds an rslock area; it is never overwritten`);
    } catch (e) {
      if (!(e instanceof PmrpcError) || e.code !== RsLockErrorCodes.NOT_FORMATTED) throw e;
    }
    const empty = encodeRecord({ version: 0n, data: new Uint8Array(0) });
    const free = encodeLockLine({ version: 0n, slot: 0, locked: false });
    for (let b = 0; b < g.blocks; b++) {
      region.store(lockOffset(g, b), free);
      region.store(slotOffset(g, b, 0), empty);
    }
    region.persist(g.locksOffset, g.base + g.totalBytes - g.locksOffset);
    // The header last: a format cut short leaves no magic, so open() says NOT_FORMATTED.
    region.store(o.base, encodeRsLockHeader(g));
    region.persist(o.base, RSLOCK_HEADER_BYTES);
  },
  open(host: AppHost, o: RsLockAppOptions): RsLockAppServer {
    refuseOtherApp(host.region, o.base, 'rslock');
    return new RsLockAppServer(host, o);
  },
});
