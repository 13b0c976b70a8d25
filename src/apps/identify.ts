/**
 * Which app a region's area belongs to, read from the area's first word: the one table from each
 * app's on-media magic to the app name. The apps' layout modules take their magic from here, every
 * app's open() and format() refuses another app's area with PMRPC_ERR_WRONG_APP naming the app it
 * holds (rather than "not formatted" or a raw magic), and `pmrpc inspect` / `pmrpc check` use it
 * to pick the app of a file.
 */
import { defineErrorCodes, PmemRegion, PmrpcError, type ErrorCodesOf } from '../../pmem/index.js';
import { RECOVERY_MAGIC } from '../../recovery/index.js';

export const AppErrorCodes = defineErrorCodes('apps', {
  /** The region holds another app's area (the message names it): opened or formatted as the wrong app, it is left untouched. */
  WRONG_APP: 'PMRPC_ERR_WRONG_APP',
});

declare module '../../pmem/index.js' {
  interface PmrpcErrorCodeRegistry extends ErrorCodesOf<typeof AppErrorCodes> {}
}

/** Each area's magic: the little-endian u64 at the area's base (written last by every format). */
export const AREA_MAGIC = Object.freeze({
  /** 'PMRPCRCV': the durable RPC app's recovery layout (recovery/layout.ts). */
  rpc: RECOVERY_MAGIC,
  /** 'RMSPVK01': PRISM-KV. */
  kv: 0x31304b5650534d52n,
  /** 'RMSPLP01': the kv app's Pilaf-style baseline (system 'pilaf'). */
  pilaf: 0x3130504c50534d52n,
  /** 'RMSPRS01': a PRISM-RS replica. */
  rs: 0x3130535250534d52n,
  /** 'RMSPLK01': a replica of the lock-based replication baseline. */
  rslock: 0x31304b4c50534d52n,
  /** 'RMSPTX01': a PRISM-TX shard. */
  tx: 0x3130585450534d52n,
  /** 'RTXLOC01': a shard of a lock-based TX baseline (FaRM or FORD: the protocol word at offset 12). */
  txlock: 0x3130434f4c585452n,
});

/** Bytes of an area's start that identifyArea() reads. */
export const AREA_IDENT_BYTES = 16;

/** The app (a NODE_APPS name) an area holds, with the kv system where it says one. */
export interface AreaHolder {
  app: string;
  system?: string;
  /** What it is, for people: "PRISM-KV", "the Pilaf-style KV baseline"… */
  label: string;
}

const TXLOCK_PROTOCOLS = ['farm', 'ford'] as const;

/** The app whose area starts with `head` (at least AREA_IDENT_BYTES), or undefined: no known magic (never formatted, an interrupted format, or not pmrpc's). */
export function identifyArea(head: Uint8Array): AreaHolder | undefined {
  if (head.length < AREA_IDENT_BYTES) return undefined;
  const dv = new DataView(head.buffer, head.byteOffset, head.byteLength);
  switch (dv.getBigUint64(0, true)) {
    case AREA_MAGIC.rpc:
      return { app: 'rpc', label: 'the durable RPC app' };
    case AREA_MAGIC.kv:
      return { app: 'kv', system: 'prism', label: 'PRISM-KV' };
    case AREA_MAGIC.pilaf:
      return { app: 'kv', system: 'pilaf', label: 'the Pilaf-style KV baseline' };
    case AREA_MAGIC.rs:
      return { app: 'rs', label: 'a PRISM-RS replica' };
    case AREA_MAGIC.rslock:
      return { app: 'rslock', label: 'a lock-based replication replica' };
    case AREA_MAGIC.tx:
      return { app: 'tx', label: 'a PRISM-TX shard' };
    case AREA_MAGIC.txlock: {
      const p = TXLOCK_PROTOCOLS[dv.getUint32(12, true)];
      return p === undefined ? { app: 'txlock', label: 'a lock-based TX shard of an unknown protocol' } : { app: `tx${p}`, label: `a ${p === 'farm' ? 'FaRM' : 'FORD'}-style TX shard` };
    }
    default:
      return undefined;
  }
}

/** "app kv (PRISM-KV)", "app kv --system pilaf (the Pilaf-style KV baseline)". */
export function describeHolder(h: AreaHolder): string {
  return `app ${h.app}${h.system !== undefined && h.system !== 'prism' ? ` --system ${h.system}` : ''} (${h.label})`;
}

/**
 * Refuses (PMRPC_ERR_WRONG_APP) to open or format `app` (with `system`, for kv) on an area at
 * `base` that holds another app's area, naming the app it holds. Returns when the area is this
 * app's, holds no known magic (the app's own checks then say what is wrong), or the region is too
 * small to tell. Reads only.
 */
export function refuseOtherApp(region: PmemRegion, base: number, app: string, system?: string): void {
  if (!(region instanceof PmemRegion) || !Number.isSafeInteger(base) || base < 0 || base + AREA_IDENT_BYTES > region.sizeBytes) return;
  const h = identifyArea(region.load(base, AREA_IDENT_BYTES));
  if (h === undefined || (h.app === app && (system === undefined || h.system === undefined || h.system === system))) return;
  const asked = `app ${app}${system !== undefined && system !== 'prism' ? ` --system ${system}` : ''}`;
  throw new PmrpcError(AppErrorCodes.WRONG_APP, `the region holds ${describeHolder(h)} at offset ${base}, not ${asked}: open it as ${h.app}${h.system !== undefined && h.system !== 'prism' ? ` with system ${h.system}` : ''} (it is left untouched; \`pmrpc inspect FILE\` shows it)`);
}
