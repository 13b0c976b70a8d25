/**
 * PRISM-RS behind the App contract (src/apps/app.ts): what the node host serves over TCP (`pmrpc
 * serve --app rs`, cluster files) and what the crash explorer runs on crash images. A hello is
 * empty; the welcome is JSON {app: 'rs', rkey, base, epoch}: what a client needs to reach the replica.
 */
import { must, resolveOptions, type OptionChecks, type PmemRegion } from '../../../pmem/index.js';
import { refuseOtherApp, type App, type AppHost } from '../index.js';
import type { RsFaults } from './faults.js';
import { computeRsGeometry, RS_LAYOUT_DEFAULTS, validateRsLayout, type RsLayoutOptions } from './layout.js';
import { formatRs, RsServer } from './server.js';

export interface RsAppOptions {
  layout: Partial<RsLayoutOptions>;
  /** Offset of the RS area in the region (a multiple of 64). */
  base: number;
  /** Test-only fault switches (mutants) of replica recovery and returns. */
  faults: Partial<RsFaults>;
}

export const RS_APP_DEFAULTS: Readonly<RsAppOptions> = Object.freeze({ layout: RS_LAYOUT_DEFAULTS, base: 0, faults: Object.freeze({}) });

const RS_APP_CHECKS: OptionChecks<RsAppOptions> = {
  base: must((v) => Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) % 64 === 0, (v) => `must be a non-negative multiple of 64, got ${String(v)}`, RangeError),
  layout: (_name, v) => void validateRsLayout(v as Partial<RsLayoutOptions>),
};

export const rsApp: App<RsAppOptions> = Object.freeze({
  name: 'rs',
  defaults: RS_APP_DEFAULTS,
  resolveOptions: (options: Partial<RsAppOptions>): RsAppOptions => resolveOptions(RS_APP_DEFAULTS, options, RS_APP_CHECKS),
  minRegionBytes(o: RsAppOptions): number {
    return o.base + computeRsGeometry(o.base, validateRsLayout(o.layout)).totalBytes;
  },
  format(region: PmemRegion, o: RsAppOptions): void {
    refuseOtherApp(region, o.base, 'rs');
    formatRs(region, o.layout, o.base);
  },
  open(host: AppHost, o: RsAppOptions): RsServer {
    refuseOtherApp(host.region, o.base, 'rs');
    return new RsServer(host, o.base, o.faults);
  },
});
