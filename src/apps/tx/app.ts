/**
 * PRISM-TX behind the App contract (src/apps/app.ts): one shard per node — what the node host
 * serves over TCP (`pmrpc serve --app tx`, cluster files) and what the crash explorer runs on crash
 * images. The options of a shard, their defaults and checks, the format of an empty TX area, and
 * `txApp`; the shard itself (recovery, accept, live reclamation) is server.ts.
 */
import { intIn, oneOf, PmemRegion, PmrpcError, resolveOptions, type OptionChecks } from '../../../pmem/index.js';
import { refuseOtherApp, type App, type AppHost } from '../index.js';
import {
  CLIENTS_MAX,
  computeTxGeometry,
  decodeTxHeader,
  encodeItem,
  encodeSlot,
  ITEM_BYTES,
  RECORD_BYTES,
  SHARDS_MAX,
  slotOffset,
  TX_HEADER_BYTES,
  encodeTxHeader,
  TxErrorCodes,
  type TxAppOptions,
} from './layout.js';
import { TxAppServer } from './server.js';

export const TX_APP_DEFAULTS: Readonly<TxAppOptions> = Object.freeze({
  base: 0,
  shard: 0,
  shards: 1,
  keysPerShard: 16,
  clients: 8,
  items: 256,
  value: 'list',
  initialBalance: 100,
  faults: Object.freeze({}),
});

const TX_APP_CHECKS: OptionChecks<TxAppOptions> = {
  base: (name, v) => {
    if (!Number.isSafeInteger(v) || (v as number) < 0 || (v as number) % 64 !== 0) throw new RangeError(`${name} must be a non-negative multiple of 64, got ${String(v)}`);
  },
  shards: intIn(1, SHARDS_MAX),
  shard: (name, v, all) => intIn(0, (all.shards as number) - 1)(name, v, all),
  keysPerShard: intIn(1, 1 << 16),
  clients: intIn(1, CLIENTS_MAX),
  items: (name, v, all) => intIn(all.keysPerShard as number, 1 << 20, `[keysPerShard, 2^20]`)(name, v, all),
  value: oneOf(['list', 'balance']),
  initialBalance: intIn(-(2 ** 31), 2 ** 31),
};

export function resolveTxAppOptions(options: Partial<TxAppOptions>): TxAppOptions {
  return resolveOptions(TX_APP_DEFAULTS, options, TX_APP_CHECKS);
}

/** The value bytes a fresh key holds. */
export function initialValue(o: Pick<TxAppOptions, 'value' | 'initialBalance'>): Uint8Array {
  if (o.value === 'list') return new Uint8Array(0);
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigInt64(0, BigInt(o.initialBalance), true);
  return b;
}


function formatShard(region: PmemRegion, o: TxAppOptions): void {
  if (!(region instanceof PmemRegion)) throw new TypeError('region must be a PmemRegion');
  const g = computeTxGeometry(o.base, o.shard, o.shards, o.keysPerShard, o.clients, o.items);
  if (o.base + g.totalBytes > region.sizeBytes) throw new PmrpcError(TxErrorCodes.LAYOUT_TOO_LARGE, `the TX area needs ${g.totalBytes} bytes at ${o.base}; the region has ${region.sizeBytes}`);
  try {
    decodeTxHeader(region.load(o.base, TX_HEADER_BYTES), o.base);
    throw new PmrpcError(TxErrorCodes.ALREADY_FORMATTED, `offset ${o.base} already holds a TX area; it is never overwritten`);
  } catch (e) {
    if (!(e instanceof PmrpcError) || e.code !== TxErrorCodes.NOT_FORMATTED) throw e;
  }
  const v = initialValue(o);
  for (let i = 0; i < g.keys; i++) {
    const ptr = g.arenaOffset + i * ITEM_BYTES;
    region.store(ptr, encodeItem({ ts: 0n, key: i * g.shards + g.shard, value: v }));
    region.store(slotOffset(g, i), encodeSlot({ w: 0n, ct: 0n, lock: 0n, ptr, bound: ITEM_BYTES }));
  }
  region.store(g.recordsOffset, new Uint8Array(g.clients * RECORD_BYTES));
  region.persist(g.slotsOffset, g.totalBytes - TX_HEADER_BYTES);
  // The header last: a format cut short leaves no magic.
  region.store(o.base, encodeTxHeader(g));
  region.persist(o.base, TX_HEADER_BYTES);
}

/** PRISM-TX, one shard per node (see the file comment). */
export const txApp: App<TxAppOptions> = Object.freeze({
  name: 'tx',
  defaults: TX_APP_DEFAULTS,
  resolveOptions: resolveTxAppOptions,
  minRegionBytes(o: TxAppOptions): number {
    return o.base + computeTxGeometry(o.base, o.shard, o.shards, o.keysPerShard, o.clients, o.items).totalBytes;
  },
  format(region: PmemRegion, o: TxAppOptions): void {
    refuseOtherApp(region, o.base, 'tx');
    formatShard(region, o);
  },
  open(host: AppHost, o: TxAppOptions): TxAppServer {
    refuseOtherApp(host.region, o.base, 'tx');
    return new TxAppServer(host, o);
  },
});
