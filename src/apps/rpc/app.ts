/**
 * The durable RPC app (DESIGN §3–§4) behind the App contract: a recovery layout (rings, connection
 * table, redo log; layout.ts) plus an application area that the registered handlers change through
 * the redo log. By default it serves the digest workload (digest.ts), which the crash explorer and
 * the real-crash harness verify; a library user passes handlers of their own. Its server face is
 * server.ts, its client face client.ts, its mutants faults.ts.
 */
import { bool, callable, must, optional, PmemRegion, PmrpcError, positiveInt, positiveMs, resolveOptions, type OptionChecks } from '../../../pmem/index.js';
import { RecoveryStore } from '../../../recovery/index.js';
import { checkStrategy } from '../../rpc/index.js';
import { refuseOtherApp, type App, type AppHost } from '../index.js';
import { DIGEST_HANDLERS } from './digest.js';
import { RPC_APP_LAYOUT, rpcAppBytes, RpcAppErrorCodes, rpcFixedBytes, type RpcAppLayout } from './layout.js';
import { RpcAppServer, type RpcAppServerOptions } from './server.js';

export interface RpcAppOptions extends RpcAppServerOptions {
  layout: RpcAppLayout;
  /** The smallest application area accepted (bytes, a multiple of 64). */
  appBytesMin: number;
}

export const RPC_APP_DEFAULTS: Readonly<RpcAppOptions> = Object.freeze({
  strategy: 'wflush',
  keepResults: false,
  layout: RPC_APP_LAYOUT,
  handlers: DIGEST_HANDLERS,
  methods: Object.freeze({}),
  appBytesMin: 4096,
  partialPollsMax: 1000,
  pool: undefined,
  leaseMs: 60_000,
  canRelease: undefined,
  restartGraceMs: 2_000,
  rpcFaults: undefined,
  recoveryFaults: undefined,
});

const isObject = (v: unknown): boolean => v !== null && typeof v === 'object';

// layout is checked by the recovery layout, pool by the RPC server; partialPollsMax as the store does, but before the region is touched.
const RPC_APP_CHECKS: OptionChecks<RpcAppOptions> = {
  strategy: (_name, v) => void checkStrategy(v),
  keepResults: bool,
  handlers: must(isObject, 'must be an object of method name -> handler'),
  layout: must(isObject, 'must be an object'),
  methods: (name, v, all) => {
    must(isObject, 'must be an object of method name -> registration options')(name, v, all);
    for (const m of Object.keys(v as object)) if (!Object.hasOwn(all.handlers as object, m)) throw new TypeError(`${name} names ${m}, which has no handler`);
  },
  appBytesMin: must((v) => Number.isSafeInteger(v) && (v as number) >= 64 && (v as number) % 64 === 0, (v) => `must be a positive multiple of 64, got ${String(v)}`, RangeError),
  partialPollsMax: positiveInt,
  leaseMs: (name, v, all) => (v === Number.POSITIVE_INFINITY ? undefined : positiveMs(name, v, all)),
  canRelease: optional(callable()),
  restartGraceMs: (name, v, all) => (v === 0 ? undefined : positiveMs(name, v, all)),
};

function resolveRpcAppOptions(options: Partial<RpcAppOptions>): RpcAppOptions {
  return resolveOptions(RPC_APP_DEFAULTS, options, RPC_APP_CHECKS);
}

export const rpcApp: App<RpcAppOptions> = Object.freeze({
  name: 'rpc',
  defaults: RPC_APP_DEFAULTS,
  passesAtRunEnd: true,
  resolveOptions: resolveRpcAppOptions,
  minRegionBytes(o: RpcAppOptions): number {
    return rpcFixedBytes(o.layout) + o.appBytesMin;
  },
  format(region: PmemRegion, o: RpcAppOptions): void {
    if (!(region instanceof PmemRegion)) throw new TypeError('region must be a PmemRegion');
    refuseOtherApp(region, 0, 'rpc');
    const appBytes = rpcAppBytes(o.layout, region.sizeBytes);
    if (appBytes < o.appBytesMin) {
      throw new PmrpcError(RpcAppErrorCodes.SIZE_TOO_SMALL, `the rpc app needs at least ${rpcFixedBytes(o.layout) + o.appBytesMin} bytes (rings, redo log and a ${o.appBytesMin}-byte application area), got ${region.sizeBytes}`);
    }
    RecoveryStore.format(region, { ...o.layout, appBytes, faults: o.recoveryFaults, partialPollsMax: o.partialPollsMax });
  },
  open(host: AppHost, o: RpcAppOptions): RpcAppServer {
    refuseOtherApp(host.region, 0, 'rpc');
    return new RpcAppServer(host, o);
  },
});
