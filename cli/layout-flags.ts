/**
 * The layout flags of a command that formats a PM file (`pmrpc serve`; the same helper serves any
 * other command that formats one): `--kv-slots`, `--kv-probe-slots`, `--kv-classes`,
 * `--rs-blocks`, `--tx-items`. They are the cluster file's layout options (src/cluster/spec.ts
 * LayoutOptions), checked by the same code: layoutAppOptions there. They apply only when the file
 * is formatted; an existing file keeps the layout its header records.
 */
import type { Command } from 'commander';
import { PmrpcError } from '../pmem/index.js';
import { KV_LAYOUT_DEFAULTS, type SizeClass } from '../src/apps/kv/index.js';
import { RS_LAYOUT_DEFAULTS } from '../src/apps/rs/index.js';
import { TX_APP_DEFAULTS } from '../src/apps/tx/index.js';
import { LayoutErrorCodes, layoutAppOptions as layoutAppOptionsOf, type LayoutOptions } from '../src/cluster/index.js';

/** The raw flag values commander hands over (strings; checked by layoutAppOptions). */
export interface LayoutFlags {
  kvSlots?: string;
  kvProbeSlots?: string;
  kvClasses?: string;
  rsBlocks?: string;
  txItems?: string;
}

const EXISTING = 'an existing file keeps its own layout';

/** Adds the layout flags to `cmd` (values are checked when the command runs, by layoutAppOptions). */
export function addLayoutFlags(cmd: Command): Command {
  const classes = KV_LAYOUT_DEFAULTS.classes.map((c) => `${c.sizeBytes}:${c.count}`).join(',');
  return cmd
    .option('--kv-slots <n>', `kv app: index slots of a new PM file (default ${KV_LAYOUT_DEFAULTS.slotCount}, at most 2^24; ${EXISTING})`)
    .option('--kv-probe-slots <n>', `kv app: a key's probe sequence, in slots: groups of 4 contiguous slots at hashed positions (default ${KV_LAYOUT_DEFAULTS.probeSlots}: 24 groups, at most 256; ${EXISTING})`)
    .option('--kv-classes <list>', `kv app: the item arena's size classes SIZE:COUNT,… (sizes increasing powers of two in [64, 2^20]; default ${classes}; ${EXISTING})`)
    .option('--rs-blocks <n>', `rs app: blocks (registers) per replica of a new PM file (default ${RS_LAYOUT_DEFAULTS.blocks}; ${EXISTING})`)
    .option('--tx-items <n>', `tx app: items in the shard's arena of a new PM file (default ${TX_APP_DEFAULTS.items}; at least the shard's keys; with --cluster it overrides the file's txItems; ${EXISTING})`);
}

function int(flag: string, v: string): number {
  if (!/^\d+$/.test(v.trim())) throw new PmrpcError(LayoutErrorCodes.BAD_LAYOUT, `--${flag} must be a positive integer, got ${JSON.stringify(v)}`);
  return Number(v.trim());
}

/** Parses `SIZE:COUNT,…` (e.g. 64:1024,128:512). */
export function parseKvClasses(v: string): SizeClass[] {
  return v.split(',').map((part) => {
    const m = /^\s*(\d+)\s*:\s*(\d+)\s*$/.exec(part);
    if (m === null) throw new PmrpcError(LayoutErrorCodes.BAD_LAYOUT, `--kv-classes must be SIZE:COUNT pairs separated by commas (e.g. 64:1024,128:512), got ${JSON.stringify(v)}`);
    return { sizeBytes: Number(m[1]), count: Number(m[2]) };
  });
}

/** The layout options the flags set (undefined when absent). */
export function layoutOptionsOf(f: LayoutFlags): LayoutOptions {
  const o: LayoutOptions = {};
  if (f.kvSlots !== undefined) o.kvSlots = int('kv-slots', f.kvSlots);
  if (f.kvProbeSlots !== undefined) o.kvProbeSlots = int('kv-probe-slots', f.kvProbeSlots);
  if (f.kvClasses !== undefined) o.kvClasses = parseKvClasses(f.kvClasses);
  if (f.rsBlocks !== undefined) o.rsBlocks = int('rs-blocks', f.rsBlocks);
  if (f.txItems !== undefined) o.txItems = int('tx-items', f.txItems);
  return o;
}

const FLAG_OF: Record<string, string> = { kvSlots: '--kv-slots', kvProbeSlots: '--kv-probe-slots', kvClasses: '--kv-classes', rsBlocks: '--rs-blocks', txItems: '--tx-items' };

/**
 * The app options the layout flags set for `appName` (merge them over the command's other app
 * options, `base`, which the check also sees): PMRPC_ERR_LAYOUT_WRONG_APP for a flag of another
 * app, PMRPC_ERR_BAD_LAYOUT for a bad value or a layout the app refuses. Whether the layout fits
 * `--size` is the node's check (PMRPC_ERR_SIZE_TOO_SMALL, before the file is touched).
 */
export function layoutAppOptions(appName: string, flags: LayoutFlags, base: Record<string, unknown> = {}): Record<string, unknown> {
  try {
    return layoutAppOptionsOf(appName, layoutOptionsOf(flags), base);
  } catch (e) {
    if (!(e instanceof PmrpcError)) throw e;
    // The cluster-file names (kvSlots …) read as the flags here.
    const message = e.message.replace(/^PMRPC_ERR_[A-Z_]+: /, '').replace(/\b(kvSlots|kvProbeSlots|kvClasses|rsBlocks|txItems)\b/g, (m) => FLAG_OF[m]!);
    throw new PmrpcError(e.code, message);
  }
}

/** The serve flags of a cluster node's layout options (cluster `up` starts each node with them). */
export function layoutFlagArgs(o: LayoutOptions): string[] {
  const a: string[] = [];
  if (o.kvSlots !== undefined) a.push('--kv-slots', String(o.kvSlots));
  if (o.kvProbeSlots !== undefined) a.push('--kv-probe-slots', String(o.kvProbeSlots));
  if (o.kvClasses !== undefined) a.push('--kv-classes', o.kvClasses.map((c) => `${c.sizeBytes}:${c.count}`).join(','));
  if (o.rsBlocks !== undefined) a.push('--rs-blocks', String(o.rsBlocks));
  if (o.txItems !== undefined) a.push('--tx-items', String(o.txItems));
  return a;
}
