/**
 * The lock-based transaction baselines behind the App contract (src/apps/app.ts): `txfarm` and
 * `txford`, one shard per node — what the node host serves over TCP (`pmrpc serve --app txfarm`,
 * cluster files). The options of a shard, their defaults and checks, the format of an empty
 * area, and the two App objects; the shard itself (recovery, accept, the FaRM CPU) is server.ts.
 * The baselines are not crash-explored (the registry's `crash: false`; faults.ts).
 */
import { intIn, oneOf, PmemRegion, PmrpcError, resolveOptions, type OptionChecks } from '../../../pmem/index.js';
import { refuseOtherApp, type App, type AppHost } from '../index.js';
import { initialValue, TxErrorCodes } from '../tx/index.js';
import { computeGeometry, decodeHeader, encodeHeader, encodeLockItem, HEADER_BYTES, OBJ_BYTES, OBJ_ITEM, type TxLockAppOptions, type TxLockProtocol } from './layout.js';
import { TxLockAppServer } from './server.js';

export const TXLOCK_APP_DEFAULTS: Readonly<TxLockAppOptions> = Object.freeze({ base: 0, shard: 0, shards: 1, keysPerShard: 16, clients: 8, mailboxes: 0, value: 'list', initialBalance: 100 });

const CHECKS: OptionChecks<TxLockAppOptions> = {
  base: (name, v) => {
    if (!Number.isSafeInteger(v) || (v as number) < 0 || (v as number) % 64 !== 0) throw new RangeError(`${name} must be a non-negative multiple of 64, got ${String(v)}`);
  },
  shards: intIn(1, 32),
  shard: (name, v, all) => intIn(0, (all.shards as number) - 1)(name, v, all),
  keysPerShard: intIn(1, 1 << 20),
  clients: intIn(1, 255),
  mailboxes: intIn(0, 4096),
  value: oneOf(['list', 'balance']),
  initialBalance: intIn(-(2 ** 31), 2 ** 31),
};

export function resolveTxLockAppOptions(options: Partial<TxLockAppOptions>): TxLockAppOptions {
  const o = resolveOptions(TXLOCK_APP_DEFAULTS, options, CHECKS);
  return o.mailboxes === 0 ? { ...o, mailboxes: o.clients * 2 } : o;
}


function format(region: PmemRegion, o: TxLockAppOptions, protocol: TxLockProtocol): void {
  if (!(region instanceof PmemRegion)) throw new TypeError('region must be a PmemRegion');
  const g = computeGeometry(o.base, protocol, o.shard, o.shards, o.keysPerShard, o.clients, o.mailboxes);
  if (o.base + g.totalBytes > region.sizeBytes) throw new PmrpcError(TxErrorCodes.LAYOUT_TOO_LARGE, `the ${protocol} TX area needs ${g.totalBytes} bytes at ${o.base}; the region has ${region.sizeBytes}`);
  try {
    decodeHeader(region.load(o.base, HEADER_BYTES), o.base, protocol);
    throw new PmrpcError(TxErrorCodes.ALREADY_FORMATTED, `offset ${o.base} already holds a ${protocol} TX area; it is never overwritten`);
  } catch (e) {
    if (!(e instanceof PmrpcError) || e.code !== TxErrorCodes.NOT_FORMATTED) throw e;
  }
  const v = initialValue(o);
  region.fill(g.objects, g.mailbox - g.objects, 0);
  for (let i = 0; i < g.keys; i++) region.store(g.objects + i * OBJ_BYTES + OBJ_ITEM, encodeLockItem({ version: 0n, key: i * g.shards + g.shard, value: v }));
  region.persist(g.objects, g.mailbox - g.objects);
  region.store(o.base, encodeHeader(g));
  region.persist(o.base, HEADER_BYTES);
}

function makeApp(protocol: TxLockProtocol): App<TxLockAppOptions> {
  return Object.freeze({
    name: `tx${protocol}`,
    defaults: TXLOCK_APP_DEFAULTS,
    resolveOptions: resolveTxLockAppOptions,
    minRegionBytes(o: TxLockAppOptions): number {
      const r = resolveTxLockAppOptions(o);
      return r.base + computeGeometry(r.base, protocol, r.shard, r.shards, r.keysPerShard, r.clients, r.mailboxes).totalBytes;
    },
    format(region: PmemRegion, o: TxLockAppOptions): void {
      const r = resolveTxLockAppOptions(o);
      refuseOtherApp(region, r.base, `tx${protocol}`);
      format(region, r, protocol);
    },
    open(host: AppHost, o: TxLockAppOptions): TxLockAppServer {
      const r = resolveTxLockAppOptions(o);
      refuseOtherApp(host.region, r.base, `tx${protocol}`);
      return new TxLockAppServer(host, r, protocol);
    },
  });
}

/** FaRM-style commit baseline: LOCK via the shard's CPU, VALIDATE by one-sided READ, COMMIT record by WRITE + FLUSH, applied by the CPU. */
export const txfarmApp: App<TxLockAppOptions> = makeApp('farm');
/** FORD-style one-sided commit baseline: lock + speculative read by CAS + READ, undo log by WRITE, selective FLUSH, write-unlatch. */
export const txfordApp: App<TxLockAppOptions> = makeApp('ford');
